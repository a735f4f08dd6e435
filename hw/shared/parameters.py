"""Checks of the integer parameters every configuration takes: one message format for all of them."""

__all__ = ["check_int", "check_power_of_two"]


def check_int(name, value, low, high=None):
    """Return ``value`` if it is an integer (not a bool) from ``low`` to ``high`` (no upper bound when ``high`` is
    None); raise ``ValueError("NAME must be an integer from LOW to HIGH, not VALUE")`` (``>= LOW`` without a
    ``high``) otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"from {low} to {high}"
        raise ValueError(f"{name} must be an integer {bounds}, not {value!r}")
    return value


def check_power_of_two(name, value, low, high):
    """Return ``value`` if it is a power of two from ``low`` to ``high``; raise
    ``ValueError("NAME must be a power of two from LOW to HIGH, not VALUE")`` otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high or value & (value - 1):
        raise ValueError(f"{name} must be a power of two from {low} to {high}, not {value!r}")
    return value
