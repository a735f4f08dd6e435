import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nnaccel.dse.dcp import predictor  # noqa: E402
from nnaccel.dse.shared.dataflow_code import relax  # noqa: E402

from .conftest import TINY_PLAN  # noqa: E402


def test_training_lowers_the_loss_and_accuracy_is_reported_per_metric(space, tiny_data):
    torch.set_num_threads(1)
    parts = tiny_data.split(TINY_PLAN)
    model = predictor.new_predictor(space, "mlp", width=32, depth=1)
    report = predictor.train(model, parts["train"], space, epochs=12,
                             validation=parts["held_out_dataflows"])
    losses = [loss for _, loss, _ in report.history]
    assert losses[-1] < losses[0] * 0.6
    assert report.history[-1][2] is not None and report.samples == len(parts["train"])
    accuracy = predictor.accuracy(model.freeze(), parts["held_out_dataflows"], space)
    assert accuracy["metrics"] == ("latency", "energy", "edp")
    assert len(accuracy["mean_relative_error"]) == len(accuracy["within_5_percent"]) == 3
    assert all(0 <= share <= 1 for share in accuracy["within_5_percent"])


def test_relative_error_is_measured_against_the_labels(space, tiny_data, tiny_predictor):
    held = tiny_data.split(TINY_PLAN)["held_out_dataflows"]
    predicted = predictor.predict(tiny_predictor, held, space)
    accuracy = predictor.accuracy(tiny_predictor, held, space)
    expected = np.abs(predicted[:, 0] / held.latency - 1).mean()
    assert accuracy["mean_relative_error"][0] == pytest.approx(expected)
    # a constant guess (the training mean) scores about 1 on the standardised log error
    assert max(accuracy["log_mse"]) < 0.5


def test_the_transformer_maps_codes_to_two_outputs_and_passes_gradients(space):
    model = predictor.new_predictor(space, "transformer", width=16, depth=1, heads=2)
    code = torch.zeros(5, 3, 7, 2, requires_grad=True)
    output = model(torch.zeros(5, 10), torch.zeros(5, space.hardware_feature_count), code)
    assert output.shape == (5, 2)
    output.sum().backward()
    assert code.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="predictor kind must be one of mlp, transformer, not 'vit'"):
        predictor.new_predictor(space, "vit")


def test_checkpoint_round_trip_is_exact_and_frozen(tmp_path, space, tiny_data, tiny_predictor):
    path = tmp_path / "p.pt"
    predictor.save(tiny_predictor, path, extra={"note": 1})
    loaded = predictor.load(path)
    inputs = tiny_data.subset(np.arange(20)).inputs(space)
    tensors = [torch.as_tensor(a) for a in inputs]
    assert torch.equal(loaded(*tensors), tiny_predictor(*tensors))
    assert loaded.extra == {"note": 1}
    assert not any(p.requires_grad for p in loaded.parameters())
    with pytest.raises(ValueError, match="no predictor checkpoint there"):
        predictor.load(tmp_path / "missing.pt")


def test_the_shipped_predictor_predicts_fresh_samples_of_a_trained_layer(space):
    from nnaccel.dse.dcp.dataset import DataSet
    from nnaccel.dse.dcp.workloads import DEFAULT_HARDWARE
    from nnaccel.dse.shared.layer import dqn_layers

    shipped = predictor.load()
    layer = dqn_layers()[1]
    codes = space.sample_codes(layer, DEFAULT_HARDWARE, 200, seed=987_654)
    costs = space.evaluate(layer, DEFAULT_HARDWARE, codes)
    fresh = DataSet([layer], [DEFAULT_HARDWARE], np.zeros(200, int), np.zeros(200, int), codes,
                    costs["latency"], costs["energy"])
    accuracy = predictor.accuracy(shipped, fresh, space)
    assert accuracy["mean_relative_error"][0] < 0.10 and accuracy["mean_relative_error"][1] < 0.10
    assert relax(codes).shape == (200, 3, 7, 2)
