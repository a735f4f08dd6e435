"""What the flat map's units share (hw/dqn/flat_lane_window.py, hw/dqn/flat_word_packer.py): their channel slots and
a barrel shifter over the elements of a wide value, pruned to the elements its output needs."""

from amaranth.hdl import Mux, Signal

from nnaccel.hw.shared.parameters import check_int

__all__ = ["slot_lanes", "shift_elements_down"]


def slot_lanes(config, slots):
    """The lanes of one of ``slots`` channel slots (``modules / slots`` modules each); a ValueError unless ``slots``
    divides the modules."""
    check_int("slots", slots, 1, config.modules)
    if config.modules % slots:
        raise ValueError(f"slots must divide the {config.modules} modules, not {slots!r}")
    return config.modules // slots * config.lanes


def shift_elements_down(m, value, shift, *, width, kept, name):
    """Elements ``shift .. shift + kept - 1`` of ``value`` (elements of ``width`` bits, element 0 in the low bits;
    zeros past its end), as a Signal of ``kept`` elements: one level of 2:1 muxes per bit of ``shift``, the most
    significant first (level ``i`` moves ``2**i`` elements), each keeping only the elements the output can still
    reach through the levels after it (shifts of up to ``2**i - 1`` more: ``kept + 2**i - 1`` elements), so the last
    level is exactly the output.  Largest moves first keeps the levels narrow: a 576 -> 128 element shifter of 9
    levels is 1,654 elements of muxes, where smallest moves first (every level but the last few as wide as the
    input) made 4,480 and Yosys' passes took hours over them.  Adds the levels' combinational statements to ``m``
    (signals ``{name}_{i}``).  Each level is a mux of slices, not a shift operator: Amaranth's check for
    combinational loops takes every input bit of a shift as an edge to every output bit (minutes for a 256-lane
    window), and a mux bit only its two inputs and select."""
    shifted = value
    for level in reversed(range(len(shift))):
        stage = Signal(min(len(value), (kept + (1 << level) - 1) * width), name=f"{name}_{level}")
        m.d.comb += stage.eq(Mux(shift[level], shifted[width << level:], shifted))
        shifted = stage
    if not len(shift):
        stage = Signal(kept * width, name=name)
        m.d.comb += stage.eq(value)
        shifted = stage
    return shifted
