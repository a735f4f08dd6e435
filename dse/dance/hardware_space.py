"""What DANCE needs of a hardware design space, whatever the family: the protocol ``HardwareSpace``.

The families implement it (``dse.template.hardware_space.TemplateHardwareSpace``,
``dse.rtl.hardware_space.RtlHardwareSpace``, ``dse.rtl.stream_hardware_space.RtlStreamHardwareSpace``, all on
``dse.shared.hardware_grid.HardwareGrid``); DANCE's labels, evaluator training, co-search and baselines use nothing else of them.  ``SPACES`` names them for the commands.

- the grid: ``parameters`` (every hardware parameter with its choices, each a one-hot block of the evaluator's
  input and the generator's output), ``names``, ``sizes``, ``encoding_width``, ``len()``, ``all_points``,
  ``point_index``, ``point_values``, ``describe``, ``encode``, ``decode``, and ``compute_parameters`` (the
  parameters whose values multiply to the multipliers: EDD's resources);
- the ground truth: ``network_costs(networks)`` (latency ms, energy mJ, area in ``area_unit`` of each network on
  every point, ``inf`` where it does not fit), ``area()``, and ``best_hardware`` (the exhaustive search: the
  patent's hardware generation tool);
- ``accelerator_build(point)``: the DQN accelerator configuration (None: its default) and the compiler's split
  mode an answer found on the space is built and simulated with;
- for the labelling sweep (``dse.dance.labels``): ``cost_units`` (what a network's cost adds up over),
  ``combine`` (a network's costs from its units' rows), ``adopt_unit_costs``, and ``label_cases`` /
  ``label_task`` / ``label_columns`` (the sweep's cases, the module-level task a Dask worker runs, and the unit
  columns from the tasks' results).
"""

from typing import Callable, Protocol

import numpy as np

from nnaccel.dse.rtl.hardware_space import RtlHardwareSpace
from nnaccel.dse.rtl.stream_hardware_space import RtlStreamHardwareSpace, RtlStreamSmallBoardSpace
from nnaccel.dse.shared.families import new_space
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

METRICS = ("latency_ms", "energy_mj", "area_mm2")


class HardwareSpace(Protocol):
    """What DANCE uses of a hardware space (see the module docstring)."""

    name: str
    area_unit: str
    compute_parameters: tuple
    parameters: tuple
    names: tuple
    sizes: tuple
    encoding_width: int
    label_task: Callable[[dict], dict]

    def __len__(self) -> int: ...

    def all_points(self) -> np.ndarray: ...

    def point_index(self, points) -> np.ndarray: ...

    def point_values(self, point) -> dict: ...

    def describe(self, point) -> str: ...

    def encode(self, points) -> np.ndarray: ...

    def decode(self, encoding) -> np.ndarray: ...

    def area(self) -> np.ndarray: ...

    def network_costs(self, networks) -> np.ndarray: ...

    def best_hardware(self, networks, cost_function, *, fixed=None) -> tuple: ...

    def accelerator_build(self, point) -> tuple: ...

    def cost_units(self, layers) -> tuple: ...

    def combine(self, rows, points) -> np.ndarray: ...

    def adopt_unit_costs(self, units, columns) -> None: ...

    def label_cases(self, units) -> list: ...

    def label_columns(self, units, cases, results) -> dict: ...


SPACES = {space.name: space for space in (TemplateHardwareSpace, RtlHardwareSpace, RtlStreamHardwareSpace,
                                                RtlStreamSmallBoardSpace)}


def make_hardware_space(name):
    """A new hardware space of the family called ``name`` (``SPACES``)."""
    return new_space(SPACES, name, "hardware space")
