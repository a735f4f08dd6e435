"""The handshake between the layer sequencer and the weight-tile loader of a DQN accelerator with external weights."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import check_config

__all__ = ["WeightTileSignature"]


class WeightTileSignature(wiring.Signature):
    """Seen from the sequencer (:class:`~hw.dqn.sequencer.LayerSequencer`); the loader
    (:class:`~hw.dqn.streamed_weights.StreamedWeights`) has it flipped.  Pass ``j`` of a run uses tile ``j``.

    Members: ``start`` Out(1) with ``passes`` Out(range(max_layers + 1)) (a run of ``passes`` passes starts: the
    loader loads tiles ``0 .. passes - 1`` in order); ``ready`` In(1) (the running pass's next product may issue: its
    tile is loaded, or, for a tile streamed through its half, the bias row and the product's weight word are: the
    sequencer issues a product only then); ``release`` Out(1) (the running pass's last product issues: its half of
    the weight RAM may be loaded from the next cycle on).
    """

    def __init__(self, config):
        self._config = check_config(config)
        super().__init__({"start": Out(1), "passes": Out(range(config.max_layers + 1)), "ready": In(1),
                          "release": Out(1)})

    def __eq__(self, other):
        return type(other) is WeightTileSignature and other._config == self._config

    def __hash__(self):
        return hash((WeightTileSignature, self._config))

    def __repr__(self):
        return f"WeightTileSignature({self._config!r})"
