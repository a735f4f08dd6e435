"""Golden model of ``hw.small_conv.SmallConv`` (bit for bit) and a float64 convolution to check it against."""

import numpy as np

from models.conv_feeder import feeder_scalars, feeder_schedule
from models.matrix_module import matrix_accumulate

__all__ = ["small_conv_groups", "feature_map", "convolution_float64"]


def small_conv_groups(fmt, image, weights, *, stride, positions, adder_latency, relu):
    """The ``(groups, positions, filters)`` result bits ``SmallConv`` emits, group by group.

    ``image`` is ``(channels, size, size)`` and ``weights`` ``(channels, K, K, filters)``, raw bits of ``fmt``.
    Each (group, module) output is one :func:`~models.matrix_module.matrix_accumulate` over the group's beats of
    :func:`~models.conv_feeder.feeder_schedule`, in the feeder's order: the module's scalars (0 for an idle module
    of the last group) times weight row ``weight_index`` of each beat.
    """
    image, weights = np.asarray(image), np.asarray(weights)
    channels, kernel_size, filters = weights.shape[0], weights.shape[1], weights.shape[3]
    schedule = feeder_schedule(channels, image.shape[1], kernel_size, stride, positions)
    scalars = feeder_scalars(schedule, image)                                    # (beats, positions)
    vectors = weights.reshape(-1, filters)[schedule.weight_index]                # (beats, filters)
    geometry = schedule.geometry
    results = np.zeros((geometry.groups, positions, filters), dtype=image.dtype)
    for group in range(geometry.groups):
        beats = schedule.group == group
        for module in range(positions):
            results[group, module] = matrix_accumulate(fmt, scalars[beats, module], vectors[beats],
                                                       adder_latency=adder_latency, relu=relu)
    return results


def feature_map(group_results, *, channels, image_size, kernel_size, stride):
    """Place ``(groups, positions, filters)`` group results at their outputs: ``(filters, size, size)``, using the
    schedule's output positions (idle modules dropped)."""
    group_results = np.asarray(group_results)
    positions, filters = group_results.shape[1:]
    schedule = feeder_schedule(channels, image_size, kernel_size, stride, positions)
    size = schedule.geometry.output_size
    active = schedule.output_position >= 0
    outputs = np.zeros((size * size, filters), dtype=group_results.dtype)
    outputs[schedule.output_position[active]] = group_results[active]
    return outputs.T.reshape(filters, size, size)


def convolution_float64(image, weights, *, stride, relu):
    """The direct convolution in float64: ``image`` ``(channels, size, size)``, ``weights`` ``(channels, K, K,
    filters)`` (float values), result ``(filters, output_size, output_size)``."""
    image, weights = np.asarray(image, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    kernel_size = weights.shape[1]
    windows = np.lib.stride_tricks.sliding_window_view(image, (kernel_size, kernel_size), axis=(1, 2))
    out = np.einsum("cyxij,cijf->fyx", windows[:, ::stride, ::stride], weights)
    return np.maximum(out, 0.0) if relu else out
