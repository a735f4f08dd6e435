import pytest

from nnaccel.dse.shared.layer import DIMS, Layer, LayerType, dqn_layers


def test_code_round_trip_and_loop_bounds():
    layer = Layer(y=20, x=18, r=4, s=3, k=32, c=16, type=LayerType.CONV, stride=2)
    assert layer.to_code() == (20, 18, 4, 3, 32, 16, 0)
    assert Layer.from_code(layer.to_code(), stride=2) == layer
    assert dict(zip(DIMS, layer.loop_bounds())) == {"N": 1, "K": 32, "C": 16, "Y": 9, "X": 8,
                                                    "R": 4, "S": 3}


def test_dqn_layers_match_the_thesis():
    conv1, conv2, fc1, fc2 = dqn_layers()
    assert (conv1.out_y, conv1.out_x, conv2.out_y) == (20, 20, 9)
    # SPEC section 1 work column: 3200, 1296, 1296, (about) 1 KFLOP at 2 FLOP per MAC.
    assert [layer.macs * 2 for layer in dqn_layers()] == [3_276_800, 1_327_104, 1_327_104, 9216]
    assert fc1.to_code() == (1, 1, 1, 1, 256, 2592, int(LayerType.DENSE))
    assert fc2.k == 18


def test_depthwise_loops_over_channels_only():
    layer = Layer(y=8, x=8, r=3, s=3, k=5, c=5, type=LayerType.DEPTHWISE)
    assert layer.loop_bounds() == (1, 1, 5, 6, 6, 3, 3)


@pytest.mark.parametrize("fields, message", [
    (dict(y=0, x=4, r=1, s=1, k=1, c=1), "layer y must be a positive integer, not 0"),
    (dict(y=4, x=4, r=5, s=1, k=1, c=1), "filter 5x1 is larger than its input 4x4"),
    (dict(y=4, x=1, r=1, s=1, k=2, c=3, type=2), "a dense layer has Y = X = R = S = stride = 1"),
    (dict(y=4, x=4, r=3, s=3, k=2, c=3, type=1), "a depthwise layer has K = C"),
    (dict(y=4, x=4, r=3, s=3, k=2, c=3, type=7), "layer type must be one of [0, 1, 2]"),
])
def test_bad_layers_are_rejected_with_the_reason(fields, message):
    with pytest.raises(ValueError) as error:
        Layer(**fields)
    assert message in str(error.value)


def test_from_code_needs_seven_entries():
    with pytest.raises(ValueError, match="a layer code has 7 entries"):
        Layer.from_code((1, 2, 3))
