"""The tile handshake between a streamed convolution's port program and the convolution engine in its tiled mode."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["TileHandshakeSignature"]


class TileHandshakeSignature(wiring.Signature):
    """Seen from the port program (:class:`~hw.capsnet.conv_tile_program.ConvTileProgram`); the engine
    (:class:`~hw.capsnet.conv_engine.CapsNetConvEngine`, tiled) has it flipped.

    Members: ``tile_ready`` Out(1) (the engine may start its next step: the step's tile is loaded and, for a row
    group's first step, the staging slot of the group two before is stored); ``tile_done`` In(1) (the engine's last
    product of a step: its tile slots may be written from the next cycle on); ``group_written`` In(1) (the engine's
    last write of a row group: its staging slot is complete).
    """

    def __init__(self):
        super().__init__({"tile_ready": Out(1), "tile_done": In(1), "group_written": In(1)})

    def __eq__(self, other):
        return type(other) is TileHandshakeSignature

    def __hash__(self):
        return hash(TileHandshakeSignature)

    def __repr__(self):
        return "TileHandshakeSignature()"
