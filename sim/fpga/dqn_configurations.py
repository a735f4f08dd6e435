"""DQN accelerator configurations other than the thesis one, for ``nnaccel synth dqn``: the configuration an MLPerf
Tiny model runs on (:func:`mlperf_config`, as ``nnaccel run mlperf-tiny`` sizes it) and one read from a JSON file
(:func:`read_config_file`), each named in words (:func:`describe`); and what ``nnaccel run mlperf-tiny`` shows of
them: the cached estimate (:func:`cached_estimate`) in one line (:func:`resources_summary`).
"""

import json
from dataclasses import fields, replace
from pathlib import Path

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import float_format
from nnaccel.models.dqn.lowering import lower_graph
from nnaccel.models.dqn.mlperf_tiny import model_path
from nnaccel.models.dqn.model_files import read_model
from nnaccel.models.dqn.sizing import fitting_config
from nnaccel.models.shared.input_files import InputError

from .devices import DEVICES, fit_summary
from .synth import cached_design_estimate

__all__ = ["mlperf_config", "read_config_file", "describe", "config_fields", "cached_estimate", "resources_summary"]


def mlperf_config(task, folder=None, base=DqnConfig()):
    """The configuration MLPerf Tiny model ``task`` runs on: ``base`` (16 x 16 binary32 by default) grown to the
    smallest RAMs and descriptor table that hold it (:func:`models.dqn.sizing.fitting_config`)."""
    path = model_path(task, folder)
    lowered = lower_graph(read_model(path))
    try:
        config, _ = fitting_config(base, lowered.layers, lowered.weights)
    except ValueError as error:
        raise InputError(f"{path}: does not fit {base.modules} modules x {base.lanes} lanes: {error}") from None
    return config


def config_fields(config):
    """``config`` as a JSON object (:func:`read_config_file` reads it back): its fields, the format by name."""
    return {field.name: getattr(config, field.name) if field.name != "fmt" else config.fmt.name
            for field in fields(config)}


def read_config_file(path):
    """The :class:`DqnConfig` of a JSON file holding an object of :class:`DqnConfig` fields (``fmt`` by name:
    binary32, bfloat16, binary16; fields left out keep the thesis' values); InputError naming the file and the
    fault."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: not a JSON file: {error}") from None
    if not isinstance(document, dict):
        raise InputError(f"{path}: must hold a JSON object of configuration fields, not {type(document).__name__}")
    known = {field.name for field in fields(DqnConfig)}
    unknown = sorted(set(document) - known)
    if unknown:
        raise InputError(f"{path}: unknown field {unknown[0]!r} (fields: {', '.join(sorted(known))})")
    values = dict(document)
    try:
        if "fmt" in values:
            values["fmt"] = float_format(values["fmt"])
        return replace(DqnConfig(), **values)
    except (TypeError, ValueError) as error:
        raise InputError(f"{path}: {error}") from None


def describe(config):
    """``config`` in words: MACs, format and the RAMs' sizes."""
    return (f"{config.modules} x {config.lanes} {config.fmt.name} MACs, {config.row_elements}-element rows, "
            f"2 activation RAMs of {config.activation_depth:,} x {config.activation_word_bits:,} bits, weight RAM of "
            f"{config.weight_depth:,} x {config.weight_word_bits:,} bits, {config.max_layers} descriptors")


def cached_estimate(config, *, generate=False):
    """``nnaccel synth``'s :class:`sim.fpga.synth.SynthReport` of the accelerator of ``config`` if the synthesis cache
    holds every module of it, else ``None``: never runs Yosys.  Its Verilog from the Verilog cache, or with
    ``generate`` generated again where the configuration was synthesized before and the hardware sources changed
    since (:func:`sim.fpga.synth.cached_design_estimate`: what is kept is what the edit left unchanged)."""
    accelerator = DqnAccelerator(config=config)
    return cached_design_estimate(accelerator, accelerator.module_name, generate=generate)


def resources_summary(report):
    """One line of a :class:`sim.fpga.synth.SynthReport`'s totals and whether it fits each of :data:`DEVICES`."""
    total = report.total
    fits = "; ".join(f"{device['name']}: {fit_summary(report, device).split(': ', 1)[1]}" for device in DEVICES)
    return (f"{total.alms:,} ALMs (est.), {total.dsp_blocks:g} DSP blocks, {total.m10k:,} M10K ({report.m20k:,} M20K), "
            f"{total.memory_bits:,} memory bits; {fits}")
