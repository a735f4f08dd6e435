"""cocotb test of :class:`hw.capsnet.conv_engine.CapsNetConvEngine` in its tiled mode, alone: this module plays its
RAMs and its port program, with random delays on the tile loads and the staging stores.

The RAMs (input rows, kernel slabs, biases, output staging) are Python arrays served on the engine's ports: a read
on cycle ``t`` gives its word on ``t + 1`` (held until the next read), a write lands with its element enables.  The
port program follows :class:`hw.capsnet.conv_tile_program.ConvTileProgram`'s rules without its timing: tile ``t``
(``image``: the kernel slab of block ``b``, the input map loaded once with tile 0; else step ``t``'s input map
``c`` and slab ``(b, c)``) goes into slot ``t mod 2`` once tile ``t - 2`` is released (the ``tile_done`` of its
last step) and tile ``t - 1`` is loaded, ``load_delays[t]`` cycles later; row group ``j``'s staging slot is copied
out (stored) once the engine has written it (``group_written``) and group ``j - 1`` is stored,
``store_delays[j]`` cycles later; ``tile_ready`` is high while the next step's tile is loaded and, for a row
group's first step, group ``j - 2`` is stored.

Configuration: ``descriptor`` (the engine's descriptor as an int), ``image`` (one input channel), ``channels``,
``in_height``, ``out_shape`` ([K, Ho, Wo]), ``blocks``, ``row_groups``, ``column_blocks``, ``modules``, ``rows``
(accumulators per lane), ``row_bytes`` (elements of a RAM row), ``load_delays``, ``store_delays`` (cycles, one per
tile / row group), ``max_cycles``.  Stimulus: ``inputs`` ((C, H, W) uint8, int8 bits), ``slabs`` ((blocks, C,
kernel words, modules) uint8), ``biases`` ((blocks, modules) int64).  Outputs: ``outputs`` ((K, Ho, Wo) uint8, as
stored), ``ready_cycles`` (per step, the first cycle ``tile_ready`` was high for it), ``release_cycles`` (per tile),
``group_written_cycles`` (per row group), ``counters`` (issue, stall and draining cycles), ``done_cycle``; cycles
count from the ``start`` pulse's cycle (0).
"""

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly

from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs

_HOLD = {"control__run__start": 0, "tiles__tile_ready": 0}
_EVENT_BITS = {"issue": 0, "stall": 1, "draining": 2}     # hw.shared.run_control.COUNTER_EVENTS


def _words(rows, element_bits):
    """Python ints of the last axis of ``rows`` (unsigned), element 0 in the least significant bits."""
    flat = rows.reshape(-1, rows.shape[-1]).astype(object)
    words = [sum(int(value) << (element_bits * index) for index, value in enumerate(row)) for row in flat]
    return np.array(words, dtype=object).reshape(rows.shape[:-1])


class _Ram:
    """A RAM the engine reads through ``port`` (``{port}__address``, ``read_enable``, ``read_data``), as deep as the
    port's addresses reach."""

    def __init__(self, dut, port):
        self._address, self._enable = getattr(dut, f"{port}__address"), getattr(dut, f"{port}__read_enable")
        self.words = [0] * (1 << len(self._address))      # a last row group's unwritten rows read past the map
        self._data = getattr(dut, f"{port}__read_data")
        self._pending = None
        self._data.value = 0

    def drive(self):
        if self._pending is not None:
            self._data.value = self._pending
            self._pending = None

    def sample(self):
        if int(self._enable.value):
            self._pending = self.words[int(self._address.value)]


@cocotb.test()
async def tiled_layer(dut):
    config, stimulus = load_config(), load_stimulus()
    channels, blocks, groups = config["channels"], config["blocks"], config["row_groups"]
    column_blocks, modules, rows = config["column_blocks"], config["modules"], config["rows"]
    kernels, out_height, out_width = config["out_shape"]
    in_height, image, row_bytes = config["in_height"], config["image"], config["row_bytes"]
    passes = groups * column_blocks
    steps = blocks * passes * channels
    tiles = blocks if image else steps
    slot_words = modules * rows

    inputs = np.zeros((channels, in_height, row_bytes), np.uint8)
    inputs[..., :stimulus["inputs"].shape[-1]] = stimulus["inputs"]
    map_words = _words(inputs, 8)                                        # (C, H)
    slab_words = _words(stimulus["slabs"], 8)                            # (blocks, C, kernel words)
    bias_words = _words(stimulus["biases"] & 0xFFFFFFFF, 32)             # (blocks,)
    kernel_words = slab_words.shape[-1]
    ram = {name: _Ram(dut, name) for name in ("inputs", "weights", "biases")}
    ram["biases"].words[:blocks] = list(bias_words)
    staging = np.zeros((1 << len(dut.outputs__address), row_bytes), np.uint8)
    outputs = np.zeros((kernels, out_height, out_width), np.uint8)

    def step_position(step):
        """(block, group, column block, channel) of a step."""
        rest, channel = divmod(step, channels)
        rest, column_block = divmod(rest, column_blocks)
        block, group = divmod(rest, groups)
        return block, group, column_block, channel

    def tile_of(step):
        return step_position(step)[0] if image else step

    def last_use(step):
        _, group, column_block, _ = step_position(step)
        return not image or (group == groups - 1 and column_block == column_blocks - 1)

    def load(tile):
        slot = tile % 2
        if image:
            block, channel = tile, 0
            if tile == 0:
                ram["inputs"].words[:in_height] = list(map_words[0])
        else:
            block, _, _, channel = step_position(tile)
            ram["inputs"].words[slot * in_height:(slot + 1) * in_height] = list(map_words[channel])
        ram["weights"].words[slot * kernel_words:(slot + 1) * kernel_words] = list(slab_words[block, channel])

    def store(group_index):
        block, group = divmod(group_index, groups)
        slot = staging[(group_index % 2) * slot_words:(group_index % 2 + 1) * slot_words]
        for module in range(min(modules, kernels - block * modules)):
            for row in range(rows):
                out_row = group * rows + row
                if out_row < out_height:
                    outputs[block * modules + module, out_row] = slot[module * rows + row, :out_width]

    next_cycle = await start_clock_and_reset(dut, hold=_HOLD)
    dut.control__layer.value = config["descriptor"]
    dut.control__run__start.value = 1
    events = dut.control__events
    done_signal = dut.control__run__done
    out_address, out_enable, out_data = dut.outputs__address, dut.outputs__write_enable, dut.outputs__write_data
    tile_done, group_written = dut.tiles__tile_done, dut.tiles__group_written

    load_delays, store_delays = config["load_delays"], config["store_delays"]
    loaded = stored = step = loaded_cycle = stored_cycle = 0
    load_eligible, store_eligible = {0: 1, 1: 1}, {}       # tile / group -> first cycle it may be loaded / stored
    ready_cycles, release_cycles, group_written_cycles = [], [], []
    counters = dict.fromkeys(_EVENT_BITS, 0)
    done_cycle = None
    cycle = 0
    while cycle < config["max_cycles"]:
        for memory in ram.values():
            memory.drive()
        opens_group = step < steps and step_position(step)[2:] == (0, 0)
        group_index = step // (channels * column_blocks)
        ready = step < steps and loaded > tile_of(step) and (not opens_group or stored >= group_index - 1)
        dut.tiles__tile_ready.value = int(ready)
        if ready and len(ready_cycles) == step:
            ready_cycles.append(cycle)
        await ReadOnly()
        for memory in ram.values():
            memory.sample()
        enables = int(out_enable.value)
        if enables:
            word = int(out_data.value).to_bytes(row_bytes, "little")
            address = int(out_address.value)
            for element in range(row_bytes):
                if enables >> element & 1:
                    staging[address, element] = word[element]
        flags = int(events.value)
        for name, bit in _EVENT_BITS.items():
            counters[name] += flags >> bit & 1
        if int(tile_done.value):
            if last_use(step):
                release_cycles.append(cycle)
                load_eligible[len(release_cycles) + 1] = cycle + 1
            step += 1
        if int(group_written.value):
            group_written_cycles.append(cycle)
            store_eligible[len(group_written_cycles) - 1] = cycle + 1
        if int(done_signal.value):
            done_cycle = cycle
            break
        # what the port program has finished by the next cycle: the next tile, the next store (in order)
        if loaded < tiles and loaded in load_eligible and \
                cycle + 1 >= max(load_eligible[loaded], loaded_cycle) + load_delays[loaded]:
            load(loaded)
            loaded += 1
            loaded_cycle = cycle + 1
        if stored in store_eligible and \
                cycle + 1 >= max(store_eligible[stored], stored_cycle) + store_delays[stored]:
            store(stored)
            stored += 1
            stored_cycle = cycle + 1
        await next_cycle()
        cycle += 1
        dut.control__run__start.value = 0

    for group_index in range(stored, len(group_written_cycles)):
        store(group_index)
    save_outputs(outputs=outputs, ready_cycles=np.array(ready_cycles, np.int64),
                 release_cycles=np.array(release_cycles, np.int64),
                 group_written_cycles=np.array(group_written_cycles, np.int64),
                 counters=np.array([counters[name] for name in _EVENT_BITS], np.int64),
                 done_cycle=np.int64(-1 if done_cycle is None else done_cycle))
    assert done_cycle is not None, f"no done by cycle {cycle}: step {step} of {steps}, {loaded} tiles loaded"
