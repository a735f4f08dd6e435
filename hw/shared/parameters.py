"""Checks of the integer parameters every configuration takes: one message format for all of them."""

__all__ = ["check_int", "check_positive", "check_non_negative", "check_power_of_two"]


def _in_range(value, low, high=None):
    return isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)


def check_int(name, value, low, high=None):
    """Return ``value`` if it is an integer (not a bool) from ``low`` to ``high`` (no upper bound when ``high`` is
    None); raise ``ValueError("NAME must be an integer from LOW to HIGH, not VALUE")`` (``>= LOW`` without a
    ``high``) otherwise."""
    if not _in_range(value, low, high):
        bounds = f">= {low}" if high is None else f"from {low} to {high}"
        raise ValueError(f"{name} must be an integer {bounds}, not {value!r}")
    return value


def check_positive(name, value):
    """Return ``value`` if it is an integer (not a bool) of at least 1 (a width, a depth, a count); raise
    ``ValueError("NAME must be a positive integer, not VALUE")`` otherwise."""
    if not _in_range(value, 1):
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def check_non_negative(name, value):
    """Return ``value`` if it is an integer (not a bool) of at least 0 (a latency); raise
    ``ValueError("NAME must be a non-negative integer, not VALUE")`` otherwise."""
    if not _in_range(value, 0):
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def check_power_of_two(name, value, low, high):
    """Return ``value`` if it is a power of two from ``low`` to ``high``; raise
    ``ValueError("NAME must be a power of two from LOW to HIGH, not VALUE")`` otherwise."""
    if not _in_range(value, low, high) or value & (value - 1):
        raise ValueError(f"{name} must be a power of two from {low} to {high}, not {value!r}")
    return value
