import pytest

from nnaccel.hw.shared.parameters import check_int, check_non_negative, check_positive, check_power_of_two


@pytest.mark.parametrize("value, low, high, message", [
    (0, 1, 8, "width must be an integer from 1 to 8, not 0"),
    (9, 1, 8, "width must be an integer from 1 to 8, not 9"),
    (4.0, 1, 8, "width must be an integer from 1 to 8, not 4.0"),
    (True, 0, 8, "width must be an integer from 0 to 8, not True"),
    ("4", 1, None, "width must be an integer >= 1, not '4'"),
    (-1, 0, None, "width must be an integer >= 0, not -1"),
])
def test_check_int_rejects_with_one_message_format(value, low, high, message):
    with pytest.raises(ValueError) as raised:
        check_int("width", value, low, high)
    assert str(raised.value) == message


@pytest.mark.parametrize("value, low, high", [(1, 1, 8), (8, 1, 8), (1 << 40, 0, None)])
def test_check_int_returns_values_in_range(value, low, high):
    assert check_int("width", value, low, high) == value


@pytest.mark.parametrize("value", [1000, 8, 32768, 16.0, True])
def test_check_power_of_two_rejects(value):
    with pytest.raises(ValueError) as raised:
        check_power_of_two("depth", value, 16, 16384)
    assert str(raised.value) == f"depth must be a power of two from 16 to 16384, not {value!r}"


def test_check_power_of_two_returns_the_value():
    assert [check_power_of_two("depth", value, 16, 16384) for value in (16, 1024, 16384)] == [16, 1024, 16384]


@pytest.mark.parametrize("check, value, message", [
    (check_positive, 0, "depth must be a positive integer, not 0"),
    (check_positive, True, "depth must be a positive integer, not True"),
    (check_positive, 2.0, "depth must be a positive integer, not 2.0"),
    (check_non_negative, -1, "depth must be a non-negative integer, not -1"),
    (check_non_negative, False, "depth must be a non-negative integer, not False"),
])
def test_positive_and_non_negative_reject(check, value, message):
    with pytest.raises(ValueError) as raised:
        check("depth", value)
    assert str(raised.value) == message


def test_positive_and_non_negative_return_the_value():
    assert (check_positive("depth", 1), check_non_negative("depth", 0), check_non_negative("depth", 7)) == (1, 0, 7)
