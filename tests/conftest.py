"""Shared pytest options: ``--waves`` dumps waveforms for every simulation the selected tests run."""

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--waves", action="store_true",
                     help="dump FST waveforms (and a GTKWave .gtkw file) for every simulation; "
                          "same as NNACCEL_WAVES=1")


def pytest_configure(config):
    if config.getoption("--waves"):
        os.environ["NNACCEL_WAVES"] = "1"


@pytest.fixture(params=["verilator"])
def simulator(request):
    return request.param
