"""The co-search's methods and settings, apart from the search itself (which needs PyTorch): the command line
builds its options from them without importing PyTorch, so every other command runs where the [dse] extra is not
installed."""

from dataclasses import dataclass

__all__ = ["GENERATORS", "METHODS", "SearchSettings"]

METHODS = ("baseline", "flops", "edd", "dance")
#: DANCE's hardware generation: the trained generator network, or the search over the cost network
GENERATORS = ("mlp", "argmin")


@dataclass
class SearchSettings:
    search_epochs: int = 4
    warmup_epochs: int = 1
    retrain_epochs: int = 6
    batch: int = 128
    lr: float = 0.1
    arch_lr: float = 0.01
    arch_every: int = 2          # one architecture step after this many weight steps
    arch_fraction: float = 0.2   # of the training digits, held out for the architecture steps
    tau_start: float = 2.0
    tau_end: float = 0.3
    train_images: int = 0        # 0: all 8,000
    test_images: int = 0         # 0: all 2,000
    seed: int = 0
