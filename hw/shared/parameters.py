"""Checks of the integer parameters every configuration takes: one message format for all of them."""

__all__ = ["check_int"]


def check_int(name, value, low, high=None):
    """Return ``value`` if it is an integer (not a bool) from ``low`` to ``high`` (no upper bound when ``high`` is
    None); raise ``ValueError("NAME must be an integer from LOW to HIGH, not VALUE")`` (``>= LOW`` without a
    ``high``) otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"from {low} to {high}"
        raise ValueError(f"{name} must be an integer {bounds}, not {value!r}")
    return value
