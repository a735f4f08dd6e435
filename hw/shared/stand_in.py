"""Platform-specific elaboration of a component that may be generated once and instantiated many times.

Amaranth's idiom for hardware a platform may provide (``lib.cdc.FFSynchronizer`` asks ``platform.get_ff_sync``):
a component's ``elaborate(platform)`` asks the platform, if it offers it, to stand in for it.  The DQN matrix
module and the dual-port RAM ask :func:`platform_stand_in`; a platform with ``get_separate_module(component, *,
hierarchical_block)`` (``sim.separate_modules``: the simulator build, which generates each distinct module once and
instantiates it) answers with an elaboratable in its place; any other platform, or none (Amaranth's simulator,
``verilog.convert(top)``, Yosys synthesis), gets the component's own logic.  The component names the module it is
generated as in ``module_name``: every parameter that changes its logic; it must use the ``sync`` domain (the
instance takes the clock and the reset).
"""

__all__ = ["platform_stand_in"]


def platform_stand_in(platform, component, *, hierarchical_block):
    """What ``platform`` puts in place of ``component`` (an elaboratable), or None: elaborate it here.

    ``hierarchical_block``: the component is worth compiling once and calling per instance in Verilator (a large
    module with many instances: the DQN matrix module); a module of little logic and wide ports (a RAM) simulates
    faster inlined, because every call copies its ports.
    """
    get_separate_module = getattr(platform, "get_separate_module", None)
    if get_separate_module is None:
        return None
    return get_separate_module(component, hierarchical_block=hierarchical_block)
