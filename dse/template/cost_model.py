"""Analytical latency, energy and area of (template hardware, mapping, layer), vectorized over
batches with NumPy (Timeloop / MAESTRO style).

From the nest's data reuse (``dse.template.loopnest``) the model counts, per level and tensor, the
words moved (reads and writes):

- RF: per MAC one weight read, one input read, one partial-sum read and one write; plus the
  tiles loaded into the RFs from the GB and the partial sums drained from them.
- GB: tiles sent to the array (multicast counted once), partial sums coming back (reduced across
  PEs that share an output) and fetched again, tiles loaded from and written back to DRAM.
- DRAM: tiles loaded into the GB, outputs written back and partial sums fetched again.

Latency (cycles) = max(compute, GB-bound, DRAM-bound): compute is the number of temporal steps
(each used PE does one MAC per cycle), the memory-bound cycles are a level's words over its
bandwidth (GB: ``gb_words_per_cycle``; DRAM: ``dram_gbps`` at the clock); the RF feeds one MAC
per cycle and never binds. Energy (pJ) = MACs x MAC energy + words at each level x that level's
energy per word (``dse.shared.energy_table``). Area (um^2) = PEs x (MAC + RF words) + GB.

Mappings are assumed legal (``Mapping.validate`` or the sampler); ``evaluate`` validates one.
"""

from dataclasses import dataclass, fields

import numpy as np

from nnaccel.dse.shared import energy_table
from nnaccel.dse.template.loopnest import analyse

_W, _I, _O = 0, 1, 2


@dataclass(frozen=True)
class CaseBatch:
    """A batch of (hardware, mapping, layer) cases as arrays; build it with ``pack``."""

    codes: np.ndarray
    layer_type: np.ndarray
    stride: np.ndarray
    pes: np.ndarray
    rf_words: np.ndarray
    gb_words: np.ndarray
    gb_kib: np.ndarray
    gb_words_per_cycle: np.ndarray
    dram_words_per_cycle: np.ndarray
    word_bits: np.ndarray
    mac_pj: np.ndarray
    mac_um2: np.ndarray

    def __len__(self):
        return len(self.codes)

    def take(self, index):
        """The sub-batch at ``index`` (an index array or slice)."""
        return CaseBatch(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


def pack(cases):
    """``cases``: iterable of (TemplateHardware, Mapping, Layer)."""
    cases = list(cases)
    hardware = [case[0] for case in cases]

    def column(values, dtype=np.float64):
        return np.array(values, dtype=dtype)

    return CaseBatch(
        codes=np.stack([mapping.to_code() for _, mapping, _ in cases]),
        layer_type=column([int(layer.type) for _, _, layer in cases], np.intp),
        stride=column([layer.stride for _, _, layer in cases]),
        pes=column([hw.pes for hw in hardware]),
        rf_words=column([hw.rf_words for hw in hardware]),
        gb_words=column([hw.gb_words for hw in hardware]),
        gb_kib=column([hw.gb_kib for hw in hardware]),
        gb_words_per_cycle=column([hw.gb_words_per_cycle for hw in hardware]),
        dram_words_per_cycle=column([hw.dram_words_per_cycle for hw in hardware]),
        word_bits=column([hw.word_bits for hw in hardware]),
        mac_pj=column([energy_table.mac_pj(hw.number_format) for hw in hardware]),
        mac_um2=column([energy_table.mac_um2(hw.number_format) for hw in hardware]),
    )


def evaluate_batch(batch):
    """Costs of every case of a ``CaseBatch``: a dict of float64 arrays of shape (batch,).

    Keys: latency_cycles, compute_cycles, gb_cycles, dram_cycles, energy_pj, area_um2, macs,
    pes_used, utilization, and the word counts rf_reads, rf_writes, gb_reads, gb_writes,
    dram_reads, dram_writes.
    """
    nest = analyse(batch.codes, batch.layer_type, batch.stride)
    pes_used = nest["pes_used"]
    steps = nest["steps"]
    macs = steps * pes_used
    rf_tile, array_tile, gb_tile = nest["rf_tile"], nest["array_tile"], nest["gb_tile"]
    rf_loads, rf_distinct = nest["rf_loads"], nest["rf_distinct"]
    gb_loads, gb_distinct = nest["gb_loads"], nest["gb_distinct"]

    operands = [_W, _I]
    # GB -> array: operand tiles (multicast once), outputs out and partial sums back in.
    array_in = (rf_loads[:, operands] * array_tile[:, operands]).sum(axis=1)
    outputs_up = rf_loads[:, _O] * array_tile[:, _O]
    psums_down = (rf_loads[:, _O] - rf_distinct[:, _O]) * array_tile[:, _O]
    # DRAM <-> GB.
    dram_in = (gb_loads[:, operands] * gb_tile[:, operands]).sum(axis=1)
    dram_out = gb_loads[:, _O] * gb_tile[:, _O]
    dram_psums = (gb_loads[:, _O] - gb_distinct[:, _O]) * gb_tile[:, _O]

    rf_reads = 3 * macs + rf_loads[:, _O] * rf_tile[:, _O] * pes_used
    rf_writes = (macs + (rf_loads[:, operands] * rf_tile[:, operands]).sum(axis=1) * pes_used
                 + psums_down)
    gb_reads = array_in + psums_down + dram_out
    gb_writes = outputs_up + dram_in + dram_psums
    dram_reads = dram_in + dram_psums
    dram_writes = dram_out

    gb_cycles = (gb_reads + gb_writes) / batch.gb_words_per_cycle
    dram_cycles = (dram_reads + dram_writes) / batch.dram_words_per_cycle
    latency = np.maximum(steps, np.maximum(gb_cycles, dram_cycles))

    bits = batch.word_bits
    energy = (macs * batch.mac_pj
              + (rf_reads + rf_writes) * energy_table.storage_pj_per_word(batch.rf_words, bits)
              + (gb_reads + gb_writes) * energy_table.storage_pj_per_word(batch.gb_words, bits)
              + (dram_reads + dram_writes) * energy_table.dram_pj_per_word(bits))
    area = (batch.pes * (batch.mac_um2
                         + batch.rf_words * energy_table.register_file_um2_per_word(bits))
            + batch.gb_kib * energy_table.sram_um2_per_kib())
    return {
        "latency_cycles": latency,
        "compute_cycles": steps,
        "gb_cycles": gb_cycles,
        "dram_cycles": dram_cycles,
        "energy_pj": energy,
        "area_um2": area,
        "macs": macs,
        "pes_used": pes_used,
        "utilization": pes_used / batch.pes,
        "rf_reads": rf_reads,
        "rf_writes": rf_writes,
        "gb_reads": gb_reads,
        "gb_writes": gb_writes,
        "dram_reads": dram_reads,
        "dram_writes": dram_writes,
    }


def evaluate(hardware, mapping, layer):
    """Costs of one case as a dict of floats; the mapping is validated first."""
    mapping.validate(layer, hardware)
    costs = evaluate_batch(pack([(hardware, mapping, layer)]))
    return {name: float(values[0]) for name, values in costs.items()}


def evaluate_network(hardware, mappings, layers):
    """Per-layer costs and the network's totals (latency and energy add up; area is the
    hardware's)."""
    per_layer = [evaluate(hardware, mapping, layer) for mapping, layer in zip(mappings, layers,
                                                                              strict=True)]
    total = {"latency_cycles": sum(c["latency_cycles"] for c in per_layer),
             "energy_pj": sum(c["energy_pj"] for c in per_layer),
             "area_um2": per_layer[0]["area_um2"]}
    return per_layer, total
