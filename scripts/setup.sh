#!/usr/bin/env bash
# Set up nnaccel on a fresh machine: a virtual environment in .venv with the project and its test
# tools, plus the system packages the simulators need (Icarus Verilog; liblz4 for Verilator FST
# waveforms) and Yosys for `nnaccel synth` resource estimates. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v iverilog >/dev/null 2>&1 || missing+=(iverilog)
[ -f /usr/include/lz4.h ] || missing+=(liblz4-dev)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v perl >/dev/null 2>&1 || missing+=(perl)
command -v yosys >/dev/null 2>&1 || missing+=(yosys)
if [ ${#missing[@]} -gt 0 ]; then
    echo "nnaccel setup: installing system packages: ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "nnaccel setup: need root (or sudo) to install ${missing[*]} with apt-get; install them and re-run" >&2
        exit 1
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "nnaccel setup: Python 3.11 or newer is required, found $(python3 --version)" >&2; exit 1; }
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,atari,ebp,dse,import]"
echo "nnaccel setup: ready ($(.venv/bin/python -c 'import amaranth, cocotb; print(f"amaranth {amaranth.__version__}, cocotb {cocotb.__version__}")'))"
