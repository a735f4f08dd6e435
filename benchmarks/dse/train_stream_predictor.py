"""Train the transfer predictor of the external-weight space (``dse.dcp.stream_transfer``) for searching one network
(``--leave-out``) on the others of the thesis network and MLPerf Tiny KWS, AD and VWW (each on the DE1-SoC
configuration ``nnaccel dse stream --model`` sizes for it), and write it with its training evaluations to
``dse/dcp/data/predictor_stream_<leave-out>.pt`` (``stream_transfer.transfer_path``), the file ``nnaccel dse
stream --model <leave-out>`` uses.  The network searched is never among the training networks; IC does not fit the
DE1-SoC configuration (its adds need 8 modules).

The costs go through each space's cost cache (``~/.cache/nnaccel/dse/stream_<digest>.json``, saved every 20
mappings), so an interrupted run resumes.  Run it at ``nice -n 19`` (the latencies run the SDRAM model: about 0.5
to 1.2 s per mapping on an idle core)::

    NNACCEL_MLPERF_TINY_DIR=../shared/mlperf_tiny python benchmarks/dse/train_stream_predictor.py --leave-out kws
"""

import argparse
import time

import torch

from nnaccel.dse.dcp import stream_transfer
from nnaccel.dse.dcp.stream_command import MODELS, cache_path, load_known, save_known, stream_network

SAMPLES = {"thesis": 240, "kws": 240, "ad": 240, "vww": 100}      # training mappings per network


def costed_rows(model, samples):
    """``samples`` training mappings of ``model`` costed (latency and energy), the cache saved as it goes."""
    space = stream_network(model)[0]
    path = cache_path(space)
    known = load_known(path)
    rows = stream_transfer.transfer_rows(space, known, samples, save=lambda: save_known(path, known))
    print(f"{model}: {len(rows)} training mappings costed", flush=True)
    return space, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leave-out", choices=MODELS, required=True, help="the network the predictor is for")
    parser.add_argument("--cost-only", action="store_true", help="cost the training mappings, train nothing")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    networks = {model: costed_rows(model, samples) for model, samples in SAMPLES.items()
                if model != arguments.leave_out}
    print(f"costed in {time.perf_counter() - started:.0f} s", flush=True)
    if arguments.cost_only:
        return
    predictor = stream_transfer.train_transfer(list(networks.values()))
    path = stream_transfer.transfer_path(arguments.leave_out)
    stream_transfer.save_transfer(path, predictor, {model: len(rows) for model, (_, rows) in networks.items()})
    for model, (space, rows) in networks.items():
        print(f"{model} (trained on): {stream_transfer.held_out_error(predictor, space, rows)}")
    print(f"wrote {path} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
