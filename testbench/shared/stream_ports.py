"""The configuration of :mod:`testbench.shared.stream_tb` for a component with an input and an output stream.

A stream's payload is one Verilog port (``operands__payload``); its fields (a float unit's ``a`` and ``b``, a
matrix module's ``scalar``, ``vector``, ``count``, ``relu``) are read from the payload's layout, so a test names
the stimulus and the outputs by field and never restates a width or an offset.
"""

from amaranth.hdl import Shape
from amaranth.lib import data

__all__ = ["payload_fields", "stream_config"]


def _lanes_and_bits(shape):
    if isinstance(shape, data.ArrayLayout):
        return shape.length, Shape.cast(shape.elem_shape).width
    return 1, Shape.cast(shape).width


def payload_fields(name, shape):
    """``{key: {"offset", "lanes", "bits"}}`` of a payload of ``shape``: a struct's fields by their names (an
    array field as lanes), any other shape as the single field ``name`` (an array as lanes)."""
    if isinstance(shape, data.StructLayout):
        fields = {}
        for key, field in shape:
            lanes, bits = _lanes_and_bits(field.shape)
            fields[key] = {"offset": field.offset, "lanes": lanes, "bits": bits}
        return fields
    lanes, bits = _lanes_and_bits(shape)
    return {name: {"offset": 0, "lanes": lanes, "bits": bits}}


def stream_config(design, *, input, output, expect, **extra):
    """The stream testbench's configuration for ``design``'s streams ``input`` and ``output`` (member names):
    stimulus keys and output keys are the payloads' field names (see :func:`payload_fields`); ``extra`` adds
    ``idle_seed``, ``hold``, ``drain_cycles``."""
    ports = {}
    for role, stream_name in (("inputs", input), ("outputs", output)):
        payload = getattr(design, stream_name).payload
        shape = payload.shape()
        ports[role] = {f"{stream_name}__payload": {"fields": payload_fields(stream_name, shape)}}
    return {"inputs": ports["inputs"], "in_valid": f"{input}__valid", "outputs": ports["outputs"],
            "out_valid": f"{output}__valid", "expect": expect, **extra}
