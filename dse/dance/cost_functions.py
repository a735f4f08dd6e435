"""DANCE's hardware cost functions Cost_HW (patent equations 3 and 4).

- ``edap``: energy x latency x area (mJ x ms x mm^2), no hyperparameter.
- linear: ``lE * E / E_ref + lL * L / L_ref + lA * A / A_ref``. The patent picks units (mJ, ms,
  um^2) so that the three terms have comparable scales; here each metric is divided by a
  reference instead (the median over the space's cost cases, ``reference``), so the weights
  alone say what matters: ``latency`` (lL 1, lE 0.1, lA 0.1), ``energy`` (lE 1, lL 0.1,
  lA 0.1), ``balanced`` (1, 1, 1).

A cost function takes latency, energy and area as NumPy arrays or torch tensors (elementwise
arithmetic only) and returns the cost in the same kind.
"""

from dataclasses import dataclass

COST_FUNCTIONS = ("edap", "latency", "energy", "balanced")
LINEAR_WEIGHTS = {"latency": (0.1, 1.0, 0.1), "energy": (1.0, 0.1, 0.1), "balanced": (1.0, 1.0, 1.0)}


@dataclass(frozen=True)
class CostFunction:
    """``name`` in ``COST_FUNCTIONS``; ``reference`` (latency ms, energy mJ, area mm^2) scales the
    linear ones."""

    name: str
    reference: tuple = (1.0, 1.0, 1.0)

    def __post_init__(self):
        if self.name not in COST_FUNCTIONS:
            raise ValueError(f"cost function must be one of {', '.join(COST_FUNCTIONS)}, not {self.name!r}")

    def __call__(self, latency, energy, area):
        if self.name == "edap":
            return energy * latency * area
        weight_energy, weight_latency, weight_area = LINEAR_WEIGHTS[self.name]
        latency_ref, energy_ref, area_ref = self.reference
        return (weight_energy * energy / energy_ref + weight_latency * latency / latency_ref
                + weight_area * area / area_ref)
