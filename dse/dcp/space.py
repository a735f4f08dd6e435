"""What DCP needs of a design space, whatever the hardware family: the protocol ``DataflowSpace``.

The families implement it (``dse.template.dataflow_space.TemplateDataflowSpace``,
``dse.rtl.dataflow_space.RtlDataflowSpace``); DCP's data set, predictor, search and baselines use nothing
else of them.  ``SPACES`` names them for the commands.

- ``sample_codes``: legal dataflows of a layer on a hardware point, as (M, N, 2) codes (the
  patent's encoding, ``dse.shared.dataflow_code``), reproducible from a seed;
- ``evaluate``: the cost model on a batch of codes: ``latency`` (cycles) and ``energy`` (pJ);
- ``nearest``: the legal dataflow nearest a relaxed code (the search's decoder);
- ``violations``: what a code breaks, in words (empty when legal);
- ``hardware_features``: a fixed-length vector describing a hardware point, so one predictor
  covers several (and can be tried on one it never saw);
- ``enumerate_codes``: every cost-distinct legal code in chunks when there are at most
  ``limit`` of them (exhaustive search), else None;
- ``log2_limits`` and ``penalty``: the range of each relaxed log2 size and the space's soft
  constraints on relaxed codes, for the gradient search and the black-box searchers;
- ``network_violations``: what one code per layer breaks together (budgets the layers share), and
  ``fit_network``: the codes simplified until they fit those budgets;
- and ``describe`` (a code in words), ``hardware_to_dict`` / ``hardware_from_dict`` (JSON for
  sweep cases), ``predictor_defaults`` (hyper-parameters its predictor needs);
- for ``nnaccel dse dataflow``: ``number_formats``, ``default_hardware``, ``hardware_from_options`` (a hardware
  point from the command's ``--pe``, ``--rf``, ``--style``, ``--format``; ValueError naming the fault) and
  ``describe_hardware``.

Optional, where a family has them (the RTL family): ``default_codes`` (the compiler's mapping as a starting
point), ``best_over_every_mapping`` (the best mapping outside the code's shape) and ``simulation_case`` (the case
that runs an answer on the simulated hardware).
"""

from typing import Iterator, Protocol

import numpy as np

from nnaccel.dse.rtl.dataflow_space import RtlDataflowSpace
from nnaccel.dse.shared.families import new_space
from nnaccel.dse.template.dataflow_space import TemplateDataflowSpace

METRICS = ("latency", "energy")


class DataflowSpace(Protocol):
    """What DCP, its data set and its baselines use of a design space (see the module doc)."""

    name: str
    levels: tuple
    dims: tuple
    hardware_feature_count: int
    predictor_defaults: dict

    def hardware_features(self, hardware) -> np.ndarray: ...

    def hardware_to_dict(self, hardware) -> dict: ...

    def hardware_from_dict(self, data): ...

    def sample_codes(self, layer, hardware, count, *, seed) -> np.ndarray: ...

    def evaluate(self, layer, hardware, codes) -> dict: ...

    def nearest(self, relaxed, layer, hardware) -> np.ndarray: ...

    def violations(self, code, layer, hardware) -> list: ...

    def describe(self, code) -> str: ...

    def enumerate_codes(self, layer, hardware, *, limit) -> Iterator[np.ndarray] | None: ...

    def log2_limits(self, layer, hardware) -> np.ndarray: ...

    def penalty(self, code, layers, hardware, temperature): ...

    def network_violations(self, codes, layers, hardware) -> list: ...

    def fit_network(self, codes, layers, hardware) -> list: ...

    number_formats: tuple
    default_hardware: object

    def hardware_from_options(self, *, array, rf_words, style, number_format): ...

    def describe_hardware(self, hardware) -> str: ...


SPACES = {space.name: space for space in (TemplateDataflowSpace, RtlDataflowSpace)}


def space_named(name):
    """A new dataflow space of the family called ``name`` (``SPACES``)."""
    return new_space(SPACES, name, "design space")
