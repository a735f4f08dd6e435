"""Packaging: the repository's floors (top-level folders) installed as subpackages of one import package, nnaccel.

The metadata is in pyproject.toml; only the package mapping is here, because it is computed: every package
under a floor folder becomes ``nnaccel.<floor>.<...>``, so a new room needs no edit here.
"""

from setuptools import find_packages, setup

FLOORS = ("hw", "models", "train", "sim", "testbench", "dse", "cli")

setup(
    packages=["nnaccel"] + [f"nnaccel.{floor}" for floor in FLOORS]
    + [f"nnaccel.{floor}.{package}" for floor in FLOORS for package in find_packages(floor)],
    package_dir={"nnaccel": "nnaccel", **{f"nnaccel.{floor}": floor for floor in FLOORS}},
)
