"""The SDRAM behind a DUT's Avalon-MM master port in a cocotb test module, from either back end through one
interface: the Python slave (:class:`testbench.shared.avalon_sdram.AvalonSdramSlave`: ``SdramModel`` served from
cocotb on every cycle, with its protocol checks) or the model inside the simulator (the top is a
:class:`testbench.shared.sdram_model.WithSdramModel`; its memory is reached through
:class:`testbench.shared.sdram_backdoor.SdramBackdoor`).

:func:`start_sdram` loads the memory, resets the DUT and, for the Python slave, starts it on cycle 0.  The memory
it returns reads and writes byte ranges between runs (``await memory.read(address, size)``, ``await
memory.write(address, data)``; whole words of the port for the model inside), with the same result for both back
ends: the two models are cycle-identical at the Avalon port, so the DUT sees the same run.
"""

from nnaccel.models.shared.random_delay_sdram import RandomDelaySdram
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, SdramModel
from nnaccel.testbench.shared.avalon_sdram import AvalonSdramSlave
from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.sdram_backdoor import attach_sdram_model

__all__ = ["SlaveMemory", "start_sdram"]


class SlaveMemory:
    """The memory of the Python slave's :class:`SdramModel` (``slave``: the :class:`AvalonSdramSlave`, with its
    record of requests and the model's statistics)."""

    def __init__(self, slave):
        self.slave = slave

    async def write(self, byte_address, data):
        """Store ``data`` (a uint8 array) from ``byte_address``."""
        self.slave.model.memory[byte_address:byte_address + len(data)] = data

    async def read(self, byte_address, size):
        """The ``size`` bytes (uint8 array) from ``byte_address``."""
        return self.slave.model.memory[byte_address:byte_address + size].copy()


async def start_sdram(dut, regions, *, inside, word_bytes, hold, timing=DE1_SOC_SDRAM, max_burst=128, delays=None):
    """Reset ``dut`` (holding ``hold``, as :func:`start_clock_and_reset`) with the SDRAM holding ``regions`` ({byte
    address: uint8 array}); returns ``(next_cycle, memory)``.

    ``inside``: ``dut`` is a :class:`WithSdramModel` (its timing is the build's) and ``memory`` its backdoor; else
    the Python slave with ``timing`` and bursts up to ``max_burst`` serves ``dut.avalon`` and ``memory`` is a
    :class:`SlaveMemory`; ``delays`` (the Python slave only): the fields ``seed``, ``stall_percent``, ``max_delay``
    of a :class:`~models.shared.random_delay_sdram.RandomDelaySdram` to serve it instead.  ``word_bytes``: the Avalon
    port's width in bytes.
    """
    if inside:
        backdoor = await attach_sdram_model(dut, regions, word_bytes=word_bytes)
        return await start_clock_and_reset(dut, hold=hold), backdoor
    model = SdramModel(timing=timing, port_bits=8 * word_bytes) if delays is None else \
        RandomDelaySdram(timing=timing, port_bits=8 * word_bytes, **delays)
    for byte_address, data in regions.items():
        model.memory[byte_address:byte_address + len(data)] = data
    next_cycle = await start_clock_and_reset(dut, hold=hold)
    slave = AvalonSdramSlave(dut, model, max_burst=max_burst)
    slave.start(next_cycle)
    return next_cycle, SlaveMemory(slave)
