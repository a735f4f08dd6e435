"""Every bad input the ``nnaccel`` command knows about: exit status 2 and one line naming the file (or option), the
fault and what was expected, never a traceback.  Each case fails before any simulation starts."""

import zipfile

import numpy as np
import pytest

from nnaccel.cli.main import main
from nnaccel.models.capsnet.golden import weights_path
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.network import WEIGHT_KEYS, seeded_weights
from tests.shared.test_mnist import write_mnist_dir

DQN_WEIGHTS = "expected a weights .npz with the float32 arrays " + ", ".join(WEIGHT_KEYS)
DQN_STATES = "expected a .npy, or a .npz holding one array, of N x 4 x 84 x 84 float32 states"
CAPSNET_WEIGHTS = "expected a CapsNet weights .npz as models.capsnet.golden.save_capsnet writes it"
DATA_SET = ("expected a .npz with features (N x F) and labels (N, 0 or 1), or a .csv with one sample per line, "
            "the 0/1 label last")


def _weights(**changes):
    weights = seeded_weights()
    weights.update(changes)
    return {key: value for key, value in weights.items() if value is not None}


def _capsnet(**changes):
    with np.load(weights_path("reduced")) as shipped:
        arrays = {key: shipped[key] for key in shipped.files}
    arrays.update(changes)
    return {key: value for key, value in arrays.items() if value is not None}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The bad files, written once; returns their directory."""
    directory = tmp_path_factory.mktemp("bad_inputs")
    states = recorded_states(2)
    (directory / "notnpy.txt").write_text("hello\n")
    np.save(directory / "objects.npy", np.array([{"a": 1}], dtype=object))
    np.savez(directory / "two.npz", a=states, b=states)
    np.save(directory / "shape.npy", states[:, :3])
    np.save(directory / "float64.npy", states.astype(np.float64))
    nan_states = states.copy()
    nan_states[1, 2, 3, 4] = np.nan
    np.save(directory / "nan.npy", nan_states)
    with zipfile.ZipFile(directory / "strings.npz", "w") as archive:
        for key in WEIGHT_KEYS:
            archive.writestr(key, "not an array")
    np.save(directory / "weights.npy", np.zeros(3, np.float32))
    np.savez(directory / "no_fc1_b.npz", **_weights(fc1_b=None))
    np.savez(directory / "extra.npz", **_weights(bias3=np.zeros(3, np.float32)))
    np.savez(directory / "conv2_shape.npz", **_weights(conv2_w=seeded_weights()["conv2_w"][:8]))
    np.savez(directory / "float64_weights.npz", **_weights(conv1_w=seeded_weights()["conv1_w"].astype(np.float64)))
    infinite = seeded_weights()["fc1_w"].copy()
    infinite[5, 7] = np.inf
    np.savez(directory / "inf_weights.npz", **_weights(fc1_w=infinite))
    np.savez(directory / "wrongkeys.npz", a=np.zeros(3))
    np.save(directory / "capsnet.npy", np.zeros(3))
    np.savez(directory / "int16.npz", **_capsnet(conv1_weights=_capsnet()["conv1_weights"].astype(np.int16)))
    np.savez(directory / "bias_shape.npz", **_capsnet(primary_bias=_capsnet()["primary_bias"][:10]))
    np.savez(directory / "object_metadata.npz", **_capsnet(metadata=np.array({"data": 1}, dtype=object)))
    np.savez(directory / "shift.npz", **_capsnet(squash_shift=np.int64(40)))
    np.savez(directory / "shift_array.npz", **_capsnet(conv1_shift=np.zeros(3)))
    np.savez(directory / "metadata.npz", **_capsnet(metadata=np.str_("{not json")))
    (directory / "mnist4").mkdir()
    write_mnist_dir(directory / "mnist4", count=4)
    csv = {"ragged.csv": "a,b,label\n0.1,0.2,1\n0.3,0\n", "text.csv": "1,2,0\n3,abc,1\n",
           "nan.csv": "# a comment\n1,2,0\nnan,2,1\n", "label2.csv": "1,2,0\n3,4,2\n", "onecolumn.csv": "1\n0\n",
           "onesample.csv": "x,y,label\n1,2,1\n", "empty.csv": "# nothing\n"}
    for name, text in csv.items():
        (directory / name).write_text(text)
    (directory / "binary.csv").write_bytes(b"\xff\xfe\x00\x01")
    np.savez(directory / "wide.npz", features=np.zeros((10, 300)), labels=np.zeros(10))
    np.savez(directory / "flat.npz", features=np.zeros(10), labels=np.zeros(10))
    np.savez(directory / "labels9.npz", features=np.zeros((10, 3)), labels=np.zeros(9))
    np.savez(directory / "y.npz", features=np.zeros((10, 3)), y=np.zeros(10))
    infinite_features = np.zeros((10, 3))
    infinite_features[2, 2] = np.inf
    np.savez(directory / "inf.npz", features=infinite_features, labels=np.zeros(10))
    np.savez(directory / "strings_data.npz", features=np.array([["a", "b"], ["c", "d"]]), labels=np.zeros(2))
    (directory / "dqn_rows.json").write_text('{"rows": 96}')
    (directory / "dqn_lanes.json").write_text('{"lanes": 0, "fmt": "binary32"}')
    (directory / "dqn_list.json").write_text('[16, 16]')
    return directory


# (arguments with {d} for the files' directory, the last line on standard error with {d} likewise).
# Usage errors are argparse's: "nnaccel ...: error: argument ...", after the usage lines.
CASES = {
    # ---- nnaccel run dqn
    "dqn states 0": ("run dqn --states 0",
                     "nnaccel run dqn: error: argument --states: must be a positive integer, not '0'"),
    "dqn states 9": ("run dqn --states 9",
                     "nnaccel: error: --states 9: 8 recorded states ship with nnaccel; asked for 9"),
    "dqn states and file": ("run dqn --states 2 --states-file {d}/nan.npy",
                            "nnaccel run dqn: error: argument --states-file: not allowed with argument --states"),
    "dqn states not npy": ("run dqn --states-file {d}/notnpy.txt",
                           f"nnaccel: error: {{d}}/notnpy.txt: not a NumPy .npy or .npz file ({DQN_STATES})"),
    "dqn states pickled": ("run dqn --states-file {d}/objects.npy",
                           f"nnaccel: error: {{d}}/objects.npy: holds Python objects (pickled data), which nnaccel "
                           f"never loads ({DQN_STATES})"),
    "dqn states missing": ("run dqn --states-file {d}/none.npy",
                           f"nnaccel: error: {{d}}/none.npy: no such file ({DQN_STATES})"),
    "dqn states two arrays": ("run dqn --states-file {d}/two.npz",
                              f"nnaccel: error: {{d}}/two.npz: holds 2 arrays (a, b) ({DQN_STATES})"),
    "dqn states shape": ("run dqn --states-file {d}/shape.npy",
                         "nnaccel: error: {d}/shape.npy: states must have shape (N, 4, 84, 84), not (2, 3, 84, 84)"),
    "dqn states float64": ("run dqn --states-file {d}/float64.npy",
                           "nnaccel: error: {d}/float64.npy: states must be float32, not float64"),
    "dqn states nan": ("run dqn --states-file {d}/nan.npy",
                       "nnaccel: error: {d}/nan.npy: states hold NaN or infinite values"),
    "dqn weights missing": ("run dqn --weights {d}/missing.npz",
                            f"nnaccel: error: {{d}}/missing.npz: no such file ({DQN_WEIGHTS})"),
    "dqn weights not arrays": ("run dqn --weights {d}/strings.npz",
                               f"nnaccel: error: {{d}}/strings.npz: the archive member 'conv1_w' is not a NumPy "
                               f"array ({DQN_WEIGHTS})"),
    "dqn weights npy": ("run dqn --weights {d}/weights.npy",
                        f"nnaccel: error: {{d}}/weights.npy: a single array (.npy), not an archive ({DQN_WEIGHTS})"),
    "dqn weights key missing": ("run dqn --weights {d}/no_fc1_b.npz",
                                f"nnaccel: error: {{d}}/no_fc1_b.npz: missing fc1_b ({DQN_WEIGHTS})"),
    "dqn weights extra key": ("run dqn --weights {d}/extra.npz",
                              f"nnaccel: error: {{d}}/extra.npz: unexpected bias3 ({DQN_WEIGHTS})"),
    "dqn weights shape": ("run dqn --weights {d}/conv2_shape.npz",
                          "nnaccel: error: {d}/conv2_shape.npz: conv2_w must have shape (16, 4, 4, 32), "
                          "not (8, 4, 4, 32)"),
    "dqn weights float64": ("run dqn --weights {d}/float64_weights.npz",
                            "nnaccel: error: {d}/float64_weights.npz: conv1_w must be float32, not float64"),
    "dqn weights infinite": ("run dqn --weights {d}/inf_weights.npz",
                             "nnaccel: error: {d}/inf_weights.npz: fc1_w holds NaN or infinite values"),
    "dqn modules": ("run dqn --modules 3",
                    "nnaccel: error: --modules 3 --lanes 16: modules must be a power of two, not 3"),
    "mlperf flat window": ("run mlperf-tiny --model ad --no-rtl --flat-window 3",
                           "nnaccel: error: --modules 16 --lanes 16 --flat-window 3: the flat map needs windows of "
                           "at least 256 elements, an even number of window words over the slots, on-chip weights and "
                           "elements of 12 bits or more (the lanes' coordinates), not 1 x 3 words of 84 binary32 "
                           "elements"),
    "mlperf flat slots": ("run mlperf-tiny --model ad --no-rtl --flat-window 6 --flat-slots 3",
                          "nnaccel: error: --modules 16 --lanes 16 --flat-window 6 --flat-slots 3: flat_slots must "
                          "divide the 16 modules, not 3"),
    "dqn too small": ("run dqn --modules 2 --lanes 4",
                      "nnaccel: error: --modules 2 --lanes 4: the network does not map onto this accelerator: "
                      "the network needs 41 passes (CONV_1: 2, CONV_2: 4, FC_1: 32, FC_2: 3); the descriptor "
                      "table holds 8"),
    "dqn json directory": ("run dqn --json {d}/nowhere/report.json",
                           "nnaccel run dqn: error: argument --json: cannot write {d}/nowhere/report.json: the "
                           "directory {d}/nowhere does not exist"),
    "dqn split": ("run dqn --split sometimes",
                  "nnaccel run dqn: error: argument --split: invalid choice: 'sometimes' (choose from 'auto', "
                  "'always', 'never')"),
    "play rtl steps": ("play --rtl-steps -1",
                       "nnaccel play: error: argument --rtl-steps: must be a non-negative integer or 'all', not '-1'"),
    "play episodes": ("play --episodes 0", "nnaccel play: error: argument --episodes: must be a positive integer, "
                                           "not '0'"),
    "play epsilon": ("play --epsilon 1.5", "nnaccel play: error: argument --epsilon: must be a number from 0 to 1, "
                                           "not '1.5'"),
    "play gif directory": ("play --gif {d}/nowhere/episode.gif",
                           "nnaccel play: error: argument --gif: cannot write {d}/nowhere/episode.gif: the directory "
                           "{d}/nowhere does not exist"),
    "play two weights": ("play --seeded-weights --weights {d}/extra.npz",
                         "nnaccel play: error: argument --weights: not allowed with argument --seeded-weights"),
    "play game": ("play --game pacmanx",
                  "nnaccel: error: --game pacmanx: unknown Atari game 'pacmanx'; ale-py ships e.g. 'breakout', "
                  "'pong', 'space_invaders'"),
    # ---- nnaccel run capsnet
    "capsnet weights keys": ("run capsnet --weights {d}/wrongkeys.npz",
                             f"nnaccel: error: {{d}}/wrongkeys.npz: missing conv1_weights, conv1_bias, "
                             f"primary_weights, primary_bias and 12 more; unexpected a ({CAPSNET_WEIGHTS})"),
    "capsnet weights npy": ("run capsnet --weights {d}/capsnet.npy",
                            f"nnaccel: error: {{d}}/capsnet.npy: a single array (.npy), not an archive "
                            f"({CAPSNET_WEIGHTS})"),
    "capsnet weights missing": ("run capsnet --weights {d}/none.npz",
                                f"nnaccel: error: {{d}}/none.npz: no such file ({CAPSNET_WEIGHTS})"),
    "capsnet weights dtype": ("run capsnet --weights {d}/int16.npz",
                              f"nnaccel: error: {{d}}/int16.npz: conv1_weights is int16, not int8 "
                              f"({CAPSNET_WEIGHTS})"),
    "capsnet weights shape": ("run capsnet --weights {d}/bias_shape.npz",
                              "nnaccel: error: {d}/bias_shape.npz: primary_bias has shape (10,), expected (64,) for "
                              "CapsNetShape(conv_channels=32, primary_types=8)"),
    "capsnet weights pickled": ("run capsnet --weights {d}/object_metadata.npz",
                                f"nnaccel: error: {{d}}/object_metadata.npz: holds Python objects (pickled data), "
                                f"which nnaccel never loads ({CAPSNET_WEIGHTS})"),
    "capsnet weights shift": ("run capsnet --weights {d}/shift.npz",
                              "nnaccel: error: {d}/shift.npz: squash_shift is 40, expected a shift from 0 to 31"),
    "capsnet weights scalar": ("run capsnet --weights {d}/shift_array.npz",
                               f"nnaccel: error: {{d}}/shift_array.npz: conv1_shift is a float64 array of shape (3,), "
                               f"not one integer ({CAPSNET_WEIGHTS})"),
    "capsnet weights metadata": ("run capsnet --weights {d}/metadata.npz",
                                 f"nnaccel: error: {{d}}/metadata.npz: metadata is not JSON: Expecting property name "
                                 f"enclosed in double quotes: line 1 column 2 (char 1) ({CAPSNET_WEIGHTS})"),
    "capsnet images 0": ("run capsnet --images 0",
                         "nnaccel run capsnet: error: argument --images: must be a positive integer, not '0'"),
    "capsnet mnist dir": ("run capsnet --mnist-dir {d}/nowhere",
                          "nnaccel: error: --mnist-dir: MNIST directory {d}/nowhere does not exist"),
    "capsnet too many images": ("run capsnet --images 5 --mnist-dir {d}/mnist4",
                                "nnaccel: error: --images 5: the test split has 4 digits"),
    # ---- nnaccel run ebp
    "ebp epochs 0": ("run ebp --epochs 0",
                     "nnaccel run ebp: error: argument --epochs: must be a positive integer, not '0'"),
    "ebp hidden without data": ("run ebp --hidden 3",
                                "nnaccel: error: --hidden applies to the network trained on --data only"),
    "ebp out a file": ("run ebp --only pwl --out {d}/ragged.csv",
                       "nnaccel: error: --out {d}/ragged.csv: a file, expected a directory for the plot"),
    "ebp out without plot": ("run ebp --only cycles --out {d}",
                             "nnaccel: error: --out applies to the PWL plot only (the default run or --only pwl)"),
    "ebp only and data": ("run ebp --only pwl --data {d}/ragged.csv",
                          "nnaccel run ebp: error: argument --data: not allowed with argument --only"),
    "ebp data kind": ("run ebp --data {d}/notnpy.txt",
                      f"nnaccel: error: {{d}}/notnpy.txt: unknown kind of file '.txt' ({DATA_SET})"),
    "ebp data missing": ("run ebp --data {d}/none.csv", f"nnaccel: error: {{d}}/none.csv: no such file ({DATA_SET})"),
    "ebp data binary": ("run ebp --data {d}/binary.csv",
                        f"nnaccel: error: {{d}}/binary.csv: cannot be read as text: 'utf-8' codec can't decode byte "
                        f"0xff in position 0: invalid start byte ({DATA_SET})"),
    "ebp data ragged": ("run ebp --data {d}/ragged.csv",
                        "nnaccel: error: {d}/ragged.csv line 3: 2 columns, the first sample has 3 (expected the same "
                        "features on every line, the label last)"),
    "ebp data text": ("run ebp --data {d}/text.csv",
                      f"nnaccel: error: {{d}}/text.csv line 2: 'abc' is not a number ({DATA_SET})"),
    "ebp data nan": ("run ebp --data {d}/nan.csv",
                     "nnaccel: error: {d}/nan.csv line 3: feature 1 is nan, expected a finite number"),
    "ebp data label": ("run ebp --data {d}/label2.csv",
                       "nnaccel: error: {d}/label2.csv line 2: label 2.0, expected 0 or 1"),
    "ebp data one column": ("run ebp --data {d}/onecolumn.csv",
                            "nnaccel: error: {d}/onecolumn.csv: one column per line; expected at least one feature "
                            "and the label"),
    "ebp data one sample": ("run ebp --data {d}/onesample.csv",
                            "nnaccel: error: {d}/onesample.csv: 1 sample; expected at least two (one to train on, "
                            "one held out)"),
    "ebp data empty": ("run ebp --data {d}/empty.csv", f"nnaccel: error: {{d}}/empty.csv: no samples ({DATA_SET})"),
    "ebp data too wide": ("run ebp --data {d}/wide.npz",
                          "nnaccel: error: {d}/wide.npz: 300 features do not fit the ring: a 300-5-1 network on 4 PEs "
                          "leaves no room for a sample in the 1024-word local memory (expected at most 184 features "
                          "with --hidden 5)"),
    "ebp data flat": ("run ebp --data {d}/flat.npz",
                      "nnaccel: error: {d}/flat.npz: features have shape (10,), expected (N samples, F features)"),
    "ebp data labels": ("run ebp --data {d}/labels9.npz",
                        "nnaccel: error: {d}/labels9.npz: labels have shape (9,), expected (10,): one per sample"),
    "ebp data keys": ("run ebp --data {d}/y.npz",
                      f"nnaccel: error: {{d}}/y.npz: missing labels; unexpected y ({DATA_SET})"),
    "ebp data infinite": ("run ebp --data {d}/inf.npz",
                          "nnaccel: error: {d}/inf.npz row 2 of the arrays: feature 3 is inf, expected a finite "
                          "number"),
    "ebp data strings": ("run ebp --data {d}/strings_data.npz",
                         "nnaccel: error: {d}/strings_data.npz: features are <U1, expected numbers"),
    # ---- nnaccel run float, verilog, synth, and the command itself
    "float suite": ("run float --suite f99_mul",
                    "nnaccel run float: error: argument --suite: invalid choice: 'f99_mul' (choose from 'f32_mul_1', "
                    "'f32_add_1', 'f16_mul_1', 'f16_add_1', 'f32_mul_2', 'f32_add_2')"),
    "synth system": ("synth bogus",
                     "nnaccel synth: error: argument SYSTEM: unknown system 'bogus'; choose from fmul, fadd, "
                     "matrix_module, pe_ring, dqn, capsnet_conv, capsnet_matvec, capsnet"),
    "synth dqn config missing": ("synth dqn --dqn-config {d}/none.json",
                                 "nnaccel: error: {d}/none.json: cannot read: No such file or directory"),
    "synth dqn config not json": ("synth dqn --dqn-config {d}/notnpy.txt",
                                  "nnaccel: error: {d}/notnpy.txt: not a JSON file: Expecting value: line 1 column 1 "
                                  "(char 0)"),
    "synth dqn config not an object": ("synth dqn --dqn-config {d}/dqn_list.json",
                                       "nnaccel: error: {d}/dqn_list.json: must hold a JSON object of configuration "
                                       "fields, not list"),
    "synth dqn config field": ("synth dqn --dqn-config {d}/dqn_rows.json",
                               "nnaccel: error: {d}/dqn_rows.json: unknown field 'rows' (fields: activation_depth, "
                               "adder_latency, argmax_tiles, counter_ram, descriptor_ram, external_bus_bits, external_weights, "
                               "flat_slots, flat_window_words, fmt, lanes, max_layers, max_pooling, modules, "
                               "multiplier_latency, pad_columns, row_elements, weight_depth, weight_loads)"),
    "synth dqn config value": ("synth dqn --dqn-config {d}/dqn_lanes.json",
                               "nnaccel: error: {d}/dqn_lanes.json: lanes must be an integer from 1 to 64, not 0"),
    "synth model of another system": ("synth fmul --model ad",
                                      "nnaccel: error: --model / --dqn-config: configurations of the dqn system, not "
                                      "of fmul"),
    "synth dir without model": ("synth dqn --dir {d}",
                                "nnaccel: error: --dir: names the MLPerf Tiny folder of --model, which is not given"),
    "synth flat without model": ("synth dqn --flat-window 6",
                                 "nnaccel: error: --flat-window 6: sizes the configurations of --model, which is not "
                                 "given (a --dqn-config file names flat_slots and flat_window_words itself)"),
    "synth flat slots": ("synth dqn --model kws --flat-window 6 --flat-slots 3",
                         "nnaccel: error: --flat-window 6 --flat-slots 3: flat_slots must divide the 16 modules, "
                         "not 3"),
    "synth model unknown": ("synth dqn --model resnet",
                            "nnaccel synth: error: argument --model: invalid choice: 'resnet' (choose from 'ic', "
                            "'kws', 'vww', 'ad', 'all')"),
    "verilog clock": ("verilog dqn --board de1soc --clock-mhz 0",
                      "nnaccel verilog: error: argument --clock-mhz: must be a number of MHz from 1 to 1000, not '0'"),
    "verilog board": ("verilog dqn", "nnaccel verilog: error: the following arguments are required: --board"),
    # ---- files and directories to write: said before the job's work, nothing written
    "verilog out impossible": ("verilog dqn --board de1soc --out /proc/x",
                               "nnaccel: error: --out /proc/x: cannot make the directory: No such file or directory"),
    "verilog out under a file": ("verilog dqn --board de1soc --out {d}/notnpy.txt/project",
                                 "nnaccel: error: --out {d}/notnpy.txt/project: cannot make the directory: Not a "
                                 "directory"),
    "verilog out a file": ("verilog dqn --board de1soc --out {d}/notnpy.txt",
                           "nnaccel verilog: error: argument --out: {d}/notnpy.txt exists and is not a directory"),
    "dqn save-weights impossible": ("run dqn --save-weights /proc/x.npz",
                                    "nnaccel run dqn: error: argument --save-weights: cannot write /proc/x.npz: No "
                                    "such file or directory"),
    "dqn save-onnx a directory": ("run dqn --save-onnx {d}",
                                  "nnaccel run dqn: error: argument --save-onnx: cannot write {d}: it is a directory"),
    "play gif impossible": ("play --gif /proc/x.gif",
                            "nnaccel play: error: argument --gif: cannot write /proc/x.gif: No such file or "
                            "directory"),
    "float json impossible": ("run float --json /proc/x.json",
                              "nnaccel run float: error: argument --json: cannot write /proc/x.json: No such file or "
                              "directory"),
    "net json no directory": ("run net {d}/model.onnx --json {d}/nowhere/report.json",
                              "nnaccel run net: error: argument --json: cannot write {d}/nowhere/report.json: the "
                              "directory {d}/nowhere does not exist"),
    "ebp out impossible": ("run ebp --only pwl --out /proc/x",
                           "nnaccel: error: --out /proc/x: cannot make the directory: No such file or directory"),
    "ebp out a file": ("run ebp --only pwl --out {d}/notnpy.txt",
                       "nnaccel run ebp: error: argument --out: {d}/notnpy.txt exists and is not a directory"),
    "train dqn out a file": ("train dqn --out {d}/notnpy.txt",
                             "nnaccel train dqn: error: argument --out: {d}/notnpy.txt exists and is not a directory"),
    "train dqn recipe": ("train dqn --out {d}/run --recipe dqn",
                         "nnaccel train dqn: error: argument --recipe: invalid choice: 'dqn' (choose from 'dqfd', "
                         "'imitation')"),
    "train dqn init weights": ("train dqn --out {d}/run --init-weights {d}/nowhere.npz",
                               "nnaccel: error: {d}/nowhere.npz: no such file (expected a weights .npz with the "
                               "float32 arrays conv1_w, conv1_b, conv2_w, conv2_b, fc1_w, fc1_b, fc2_w, fc2_b)"),
    "train dqn dagger steps": ("train dqn --out {d}/run --dagger-steps x",
                               "nnaccel train dqn: error: argument --dagger-steps: must be a non-negative integer, "
                               "not 'x'"),
    "train dqn learning rate": ("train dqn --out {d}/run --learning-rate 0",
                                "nnaccel train dqn: error: argument --learning-rate: must be a positive number, not "
                                "'0'"),
    "train capsnet out impossible": ("train capsnet --out /proc/x.npz",
                                     "nnaccel train capsnet: error: argument --out: cannot write /proc/x.npz: No such "
                                     "file or directory"),
    "train capsnet idx dir": ("train capsnet --idx-dir {d}/nowhere --out {d}/w.npz",
                              "nnaccel train capsnet: error: argument --idx-dir: {d}/nowhere is not a directory"),
    "train capsnet epochs": ("train capsnet --epochs 0 --out {d}/w.npz",
                             "nnaccel train capsnet: error: argument --epochs: must be a positive integer, not '0'"),
    "no command": ("", "nnaccel: error: the following arguments are required: COMMAND"),
    "no job": ("run", "nnaccel run: error: the following arguments are required: JOB"),
}


USAGE_ERRORS_OF_THE_COMMAND = ("", "run")


@pytest.mark.parametrize("arguments, message", CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_and_exit_2(files, capsys, arguments, message):
    status = main([word.format(d=files) for word in arguments.split()])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2
    assert lines[-1] == message.format(d=files)
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    usage = message.split(":")[0] != "nnaccel" or arguments in USAGE_ERRORS_OF_THE_COMMAND
    assert len(lines) == 1 or usage and lines[0].startswith("usage: nnaccel")    # argparse's: usage, then the error
