"""``RandomDelaySdram``: the SDRAM model's answers, later and with stalls, the same for the same seed."""

import numpy as np

from nnaccel.models.shared.random_delay_sdram import RandomDelaySdram
from nnaccel.models.shared.sdram import SdramModel


def _reads(model, bursts=20):
    valid, cycle = [], 0
    for burst in range(bursts):
        while model.waitrequest(cycle):
            cycle += 1
        valid.append(model.accept_read(cycle, burst * 512, 16))
        cycle += 3
    return valid


def test_reads_come_in_order_no_earlier_and_at_most_max_delay_later_than_the_sdrams():
    plain = _reads(SdramModel(keep_read_data=False))
    late = RandomDelaySdram(keep_read_data=False, seed=5, stall_percent=0, max_delay=40)
    delayed = _reads(late)
    flat_plain, flat_late = np.concatenate(plain), np.concatenate(delayed)
    assert np.all(np.diff(flat_late) >= 1)
    assert np.all(flat_late >= flat_plain) and np.any(flat_late > flat_plain)
    first_delays = [burst_late[0] - burst_plain[0] for burst_plain, burst_late in zip(plain, delayed)]
    assert max(first_delays) <= 40 and len(set(first_delays)) > 5


def test_the_same_seed_gives_the_same_stalls_and_delays():
    first = RandomDelaySdram(keep_read_data=False, seed=3, stall_percent=30)
    second = RandomDelaySdram(keep_read_data=False, seed=3, stall_percent=30)
    other = RandomDelaySdram(keep_read_data=False, seed=4, stall_percent=30)
    assert _reads(first) == _reads(second) != _reads(other)
    stalls = [RandomDelaySdram(keep_read_data=False, seed=3, stall_percent=30).waitrequest(cycle)
              for cycle in range(2000)]
    assert 0.25 < np.mean(stalls) < 0.35


def test_read_words_keep_their_data_at_their_late_cycles():
    model = RandomDelaySdram(seed=1, max_delay=40)
    model.memory[:64] = np.arange(64, dtype=np.uint8)
    valid = model.accept_read(0, 0, 16)
    words = {}
    for cycle in range(valid[-1] + 1):
        word = model.read_response(cycle)
        if word is not None:
            words[cycle] = word
    assert list(words) == valid
    assert list(words.values()) == [int.from_bytes(bytes(range(4 * i, 4 * i + 4)), "little") for i in range(16)]
