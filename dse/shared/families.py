"""The design-space families by name, as the searches' commands choose them (``--space``)."""


def new_space(spaces, name, what):
    """A new instance of the class called ``name`` in ``spaces`` ({name: class}); ValueError naming the known ones
    (``what``: "design space", "hardware space")."""
    if name not in spaces:
        raise ValueError(f"unknown {what} {name!r}; known: {', '.join(spaces)}")
    return spaces[name]()
