"""Golden model of ``hw.conv_feeder.ConvFeeder``: what it emits, beat by beat, and on which cycle."""

from dataclasses import dataclass

import numpy as np

from hw.conv_feeder import FEEDER_LATENCY, ConvGeometry

__all__ = ["FeederSchedule", "feeder_schedule", "feeder_scalars"]

IDLE = -1


@dataclass(frozen=True)
class FeederSchedule:
    """The feeder's output for one layer: ``T = groups * products`` beats, ``P = positions`` modules.

    Per beat ``t``: ``cycle[t]`` (cycles after the cycle ``start`` was high), ``group[t]``, ``weight_index[t]``,
    ``first[t]``, ``last[t]``, and ``coordinates[t, m]`` = ``(channel, row, column)`` of the image value module
    ``m`` receives (``-1, -1, -1`` for an idle module, which receives 0).
    Per group ``g``: ``output_row[g]``, ``head_count[g]`` and ``active[g]`` as the RTL's ports show them, and
    ``output_position[g, m]`` = the raster index ``row * output_size + column`` of the output module ``m``
    computes (``-1`` when idle).
    """

    geometry: ConvGeometry
    cycle: np.ndarray
    group: np.ndarray
    weight_index: np.ndarray
    first: np.ndarray
    last: np.ndarray
    coordinates: np.ndarray
    output_row: np.ndarray
    head_count: np.ndarray
    active: np.ndarray
    output_position: np.ndarray


def feeder_schedule(channels, image_size, kernel_size, stride, positions):
    """The exact beats ``ConvFeeder`` with these parameters emits (see :class:`FeederSchedule`).

    Group ``g`` covers the ``positions`` raster positions ending at ``(g + 1) * positions``; module ``m`` works on
    column ``m`` of the head row ``(g + 1) * positions // output_size`` if ``m`` is below the head count
    ``(g + 1) * positions % output_size``, else on column ``m + output_size - positions`` of the row above (see
    ``hw.conv_feeder.ConvGeometry``).  Each group runs its products in weight-buffer order (channel, kernel row,
    kernel column; ``weight_index`` 0, 1, ...), one per cycle, the groups back to back; beat ``t`` leaves on cycle
    ``FEEDER_LATENCY + t`` after the start cycle.
    """
    geometry = ConvGeometry(channels=channels, image_size=image_size, kernel_size=kernel_size, stride=stride,
                            positions=positions)
    size, groups, products = geometry.output_size, geometry.groups, geometry.products

    group_ids = np.arange(groups)
    output_row = geometry.head_row(group_ids)
    head_count = geometry.head_count(group_ids)
    module = np.arange(positions)
    in_head = module[None, :] < head_count[:, None]
    position_row = np.where(in_head, output_row[:, None], output_row[:, None] - 1)
    position_column = np.where(in_head, module[None, :], module[None, :] + size - positions)
    active = ~in_head | (output_row[:, None] < size)
    output_position = np.where(active, position_row * size + position_column, IDLE)

    channel, kernel_row, kernel_column = np.unravel_index(np.arange(products), (channels, kernel_size, kernel_size))
    beat_group = np.repeat(group_ids, products)
    beat_product = np.tile(np.arange(products), groups)
    rows = position_row[beat_group] * stride + kernel_row[beat_product][:, None]
    columns = position_column[beat_group] * stride + kernel_column[beat_product][:, None]
    channels_of_beat = np.broadcast_to(channel[beat_product][:, None], rows.shape)
    coordinates = np.stack([channels_of_beat, rows, columns], axis=-1)
    coordinates[~active[beat_group]] = IDLE

    return FeederSchedule(
        geometry=geometry,
        cycle=FEEDER_LATENCY + np.arange(groups * products),
        group=beat_group,
        weight_index=beat_product,
        first=beat_product == 0,
        last=beat_product == products - 1,
        coordinates=coordinates,
        output_row=output_row,
        head_count=head_count,
        active=active,
        output_position=output_position,
    )


def feeder_scalars(schedule, image):
    """The ``(T, positions)`` scalars the RTL emits for ``image`` (``(channels, image_size, image_size)``, any
    dtype: raw bits give raw bits), 0 for idle modules."""
    image = np.asarray(image)
    geometry = schedule.geometry
    expected_shape = (geometry.channels, geometry.image_size, geometry.image_size)
    if image.shape != expected_shape:
        raise ValueError(f"image must have shape {expected_shape}, not {image.shape!r}")
    channel, row, column = np.moveaxis(schedule.coordinates, -1, 0)
    idle = channel == IDLE
    values = image[np.where(idle, 0, channel), np.where(idle, 0, row), np.where(idle, 0, column)]
    return np.where(idle, 0, values).astype(image.dtype)
