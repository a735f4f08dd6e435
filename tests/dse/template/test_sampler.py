import numpy as np
import pytest

from nnaccel.dse.shared.layer import Layer, LayerType, dqn_layers
from nnaccel.dse.template.hardware import TEMPLATE_SPACE, TemplateHardware
from nnaccel.dse.template.sampler import prime_factors, sample_hardware, sample_mappings

LAYERS = (*dqn_layers(), Layer(y=14, x=14, r=3, s=3, k=32, c=32, type=LayerType.DEPTHWISE))


@pytest.mark.parametrize("dataflow", ["WS", "OS", "RS"])
def test_sampled_mappings_are_legal_and_varied(dataflow):
    hardware = TemplateHardware(pe_x=16, pe_y=12, rf_words=16, dataflow=dataflow)
    for layer in LAYERS:
        mappings = sample_mappings(layer, hardware, 15, seed=3)
        for mapping in mappings:
            assert mapping.violations(layer, hardware) == []
        assert len(set(mappings)) > 5


def test_sampling_is_reproducible_from_the_seed():
    hardware = TemplateHardware(pe_x=9, pe_y=20, rf_words=8, dataflow="RS")
    layer = dqn_layers()[1]
    assert sample_mappings(layer, hardware, 5, seed=7) == sample_mappings(layer, hardware, 5, seed=7)
    assert sample_mappings(layer, hardware, 5, seed=7) != sample_mappings(layer, hardware, 5, seed=8)


def test_hardware_sampler_stays_in_the_space():
    rng = np.random.default_rng(0)
    points = [sample_hardware(rng) for _ in range(200)]
    assert {p.dataflow for p in points} == set(TEMPLATE_SPACE.dataflows)
    assert {p.rf_words for p in points} == set(TEMPLATE_SPACE.rf_words_choices)
    assert min(p.pe_x for p in points) == 8 and max(p.pe_y for p in points) == 24
    assert sample_hardware(rng, number_format="int8").number_format == "int8"


def test_prime_factors():
    assert prime_factors(2592) == [2] * 5 + [3] * 4
    assert prime_factors(1) == []
    assert prime_factors(97) == [97]


@pytest.mark.parametrize("fields, message", [
    (dict(pe_x=7, pe_y=8, rf_words=8, dataflow="WS"), "pe_x must be an integer in 8..24, not 7"),
    (dict(pe_x=8, pe_y=8, rf_words=65, dataflow="WS"), "rf_words must be an integer in 4..64, not 65"),
    (dict(pe_x=8, pe_y=8, rf_words=8, dataflow="XS"), "dataflow must be one of WS, OS, RS, not 'XS'"),
    (dict(pe_x=8, pe_y=8, rf_words=8, dataflow="WS", number_format="fp8"),
     "number_format must be one of ['bf16', 'fp16', 'fp32', 'int8'], not 'fp8'"),
])
def test_bad_hardware_is_rejected_with_the_value(fields, message):
    with pytest.raises(ValueError) as error:
        TemplateHardware(**fields)
    assert message in str(error.value)


def test_fixed_parallel_entries_are_kept():
    hardware = TemplateHardware(pe_x=16, pe_y=16, rf_words=32, dataflow="WS")
    layer = dqn_layers()[1]  # K 32, C 16
    parallel = (("K", 1), ("K", 16), ("C", 16))
    for mapping in sample_mappings(layer, hardware, 10, seed=1, parallel=parallel):
        assert tuple(mapping.parallel(level) for level in range(3)) == parallel
        assert mapping.violations(layer, hardware) == []
