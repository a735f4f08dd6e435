"""Template mappings written as words in the tests: levels separated by ``/``, entries as dimension and size,
parallel entry first (``"N1 C2 K1 Y1 X1 R1 S1 / K2 N1 C1 Y1 X1 R1 S1 / Y1 N1 K1 X1 R1 S1 C2"``)."""

from nnaccel.dse.template.mapping import Mapping


def mapping_from_text(text):
    return Mapping(tuple(tuple((word[0], int(word[1:])) for word in level.split()) for level in text.split("/")))
