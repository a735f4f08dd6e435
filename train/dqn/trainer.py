"""The Breakout training's four phases with checkpoints, and the export of a run's best network.

    nnaccel train dqn --out DIR --init-weights START.npz   # the imitation recipe (docs/dqn_training.md)
    nnaccel train dqn --out DIR --recipe dqfd              # DQfD, DAgger, DQN fine-tuning (2 to 3 hours)
    nnaccel train dqn --out DIR --smoke    # a few minutes: every phase of the recipe, tiny budgets
    nnaccel train dqn --out DIR --export models/dqn/data/dqn_breakout.npz   # ship the best network so far

A recipe (:data:`RECIPES`) names the settings.  ``imitation`` is behaviour cloning with DAgger: a classifier of
the scripted player's actions (cross-entropy, no TD term), trained on its demonstrations and then on every state
the network itself visits, relabelled by the scripted player; no fine-tuning.  ``dqfd`` made the weights shipped
before issue 28: the DQfD loss, DAgger, DQN fine-tuning; it trained with 1e-4 for its first 16,772 updates (the
imitation crept: validation mean 5 to 7), then with 5e-4, its default since.  ``--init-weights`` starts either from
an exported network (the shipped imitation weights started from the ``dqfd`` run's).

Rerunning the same command continues from the last checkpoint in ``DIR``; the finished run prints and
writes its results again.  Only the learning rate may differ on a resume (``--learning-rate``): the
change is logged and listed in ``results.json``.
Training is optional: only the ``train`` floor uses PyTorch (the ``[train]`` extra; the command imports it and
passes it in).  ``--export`` reads the latest checkpoint, so it works while the run is going (and after it has
finished: the checkpoint holds the same best network as the run's own ``dqn_breakout.npz``).

Network and inputs.  The network is :func:`models.dqn.network.dqn_layers` exactly (CONV_1 16 8x8/4, CONV_2
32 4x4/2, FC_1 2592->256, ReLU after each, FC_2 256->actions).  Its input is what the accelerator gets:
:class:`models.dqn.atari.AtariGame` frames (frame skip 4, maximum of the last two emulator frames, the ALE's
grayscale, 84x84 bilinear, 4 stacked frames) scaled by :func:`models.dqn.atari.frames_to_states` (value / 255,
float32), so the exported float32 weights run unchanged in the golden model and the RTL.

Action set.  Training uses Breakout's minimal action set, NOOP FIRE RIGHT LEFT (ALE actions 0 1 3 4).  The
exported FC_2 has the full 18 outputs, output j = ALE action j as :class:`models.dqn.atari.AtariGame` and
``nnaccel play`` index them: column j is a copy of the column of the minimal action that ALE action j
does in Breakout (:data:`.breakout.FULL_TO_MINIMAL`; checked in the emulator: UP and DOWN do NOOP, UPRIGHT RIGHT,
RIGHTFIRE moves like RIGHT and also serves the ball, and so on).  Copies have identical Q-values, and the
argmax takes the first of equal values, so the greedy action is always one of 0 1 3 4.

Method: imitation of a scripted player, then DQN fine-tuning.  Plain DQN needs about 10M frames, more than
one shared core gives in a few hours, so:

1. Demonstrations.  :class:`.scripted_player.ScriptedPlayer` reads the ball and the paddle from the emulator's RAM
   (:mod:`.breakout`'s ``RAM_BALL_X``, ``RAM_BALL_Y``, ``RAM_PADDLE_X``), predicts where the ball crosses the
   paddle's row (walls reflect it) and moves the paddle there; it plays ``demo_steps`` agent steps.
2. Pre-training on them with the DQfD loss (Hester et al., 2018): 1-step and n-step double-DQN targets
   from a target network with the Huber loss, plus a large-margin loss that puts the scripted player's
   action at least ``margin`` above every other action, plus L2 weight decay.  The TD terms give the
   outputs real Q-value semantics (clipped rewards, discount ``gamma``; losing a life ends the TD chain).
3. DAgger: the network plays (epsilon-greedy), the scripted player labels every state the network visits
   with the action it would take there, and training goes on with the same loss on all the data.
4. DQN fine-tuning: the margin loss's weight falls linearly to zero over the first half of the phase,
   leaving double DQN with n-step returns on the network's own games.

The ``imitation`` recipe (``loss="cross_entropy"``) replaces the DQfD loss of phases 2 and 3 by the cross-entropy of
the outputs against the scripted player's action and has no phase 4.

Every ``eval_every`` agent steps the network plays the validation games (seeds 1000, 1001, ...,
epsilon 0.05; the scripted player labels their states too: the network's agreement with it there); the network with the best validation mean is exported (``dqn_breakout.npz``, the layout of
:func:`models.dqn.network.save_weights`), then evaluated on the test games (seeds 0..9, epsilon 0.05)
next to the random policy and the scripted player on the same seeds.  A game is one full Breakout game
(5 lives) of at most ``max_episode_steps`` agent steps; the epsilon-random actions come from the minimal
set, drawn by ``numpy.random.default_rng(seed)``.  The ALE itself is deterministic (no sticky actions).

Outputs in ``--out``: ``curve.csv`` (one row per evaluation), ``episodes.csv`` (every training game),
``curve.png`` (:mod:`.run_record`), ``dqn_breakout.npz``, ``results.json`` (scores per game, means, wall time,
method), and ``checkpoint/`` (network, target, optimiser, random states, replay buffer).  The wall time counts the
time spent training, summed over restarts.
"""

import copy
import json
import shutil
import time
from dataclasses import asdict, dataclass, fields

import numpy as np

from nnaccel.models.dqn.atari import AtariGame, recorded_states
from nnaccel.models.dqn.episodes import EVAL_EPSILON, MAX_EPISODE_STEPS, evaluate
from nnaccel.models.dqn.network import load_weights, reference_q_values, save_weights
from nnaccel.models.shared.input_files import InputError

from nnaccel.train.dqn.breakout import FULL_TO_MINIMAL, GAME, MINIMAL_ACTIONS, RAM_BALL_X, RAM_BALL_Y, RAM_PADDLE_X
from nnaccel.train.dqn.network import GreedyPolicy, build_network, export_weights, network_from_weights, q_values
from nnaccel.train.dqn.replay_buffer import ReplayBuffer
from nnaccel.train.dqn.run_record import write_run_record
from nnaccel.train.dqn.scripted_player import ScriptedPlayer

__all__ = ["Settings", "RECIPES", "SMOKE", "recipe_settings", "RESUMABLE_CHANGES", "METHODS", "Trainer", "export_checkpoint"]

VALIDATION_SEEDS_FROM = 1000
# What a run did, by its Settings.loss (results.json and the weights' provenance file say it).
METHODS = {
    "dqfd": ("imitation of a scripted Breakout player that reads the ball and paddle from the emulator's RAM (DQfD "
             "loss: 1-step and n-step double-DQN TD with a target network and Huber loss, large-margin supervised "
             "loss), DAgger relabelling of the states the network visits, then DQN fine-tuning (margin weight "
             "annealed to zero)"),
    "cross_entropy": ("behaviour cloning of a scripted Breakout player that reads the ball and paddle from the "
                      "emulator's RAM (cross-entropy on its actions), then DAgger: the network plays, the scripted "
                      "player labels every state it visits, training goes on with all the data"),
}
TEST_SEEDS = tuple(range(10))


@dataclass(frozen=True)
class Settings:
    """Hyperparameters and budgets (agent steps: 4 emulator frames each)."""
    seed: int = 0
    demo_steps: int = 50_000          # scripted-player steps (phase 1)
    demo_epsilon: float = 0.01        # random actions during the demonstrations (labels stay the player's)
    pretrain_updates: int = 10_000    # phase 2
    dagger_steps: int = 100_000       # phase 3
    dagger_epsilon: tuple = (0.1, 0.01)   # linear over phase 3
    finetune_steps: int = 60_000      # phase 4
    finetune_epsilon: float = 0.01
    train_every: int = 8              # one update per this many agent steps (phases 3 and 4)
    batch: int = 32
    learning_rate: float = 5e-4       # may change on a resume (RESUMABLE_CHANGES)
    weight_decay: float = 1e-5
    gamma: float = 0.99
    n_step: int = 10
    n_step_weight: float = 1.0
    margin: float = 0.8
    margin_weight: float = 1.0
    target_every: int = 2_000         # updates between target-network copies
    replay_capacity: int = 200_000
    gradient_clip: float = 10.0
    eval_every: int = 20_000          # agent steps between validation evaluations (phases 3, 4)
    eval_episodes: int = 5
    max_episode_steps: int = MAX_EPISODE_STEPS
    checkpoint_seconds: float = 600.0
    loss: str = "dqfd"                # "dqfd" (TD + margin, METHODS) or "cross_entropy" (the labels alone)
    initial_weights: str = ""         # a weights .npz (project layout, 18 outputs) to start from; "": He-uniform


# Named settings for --recipe.  "dqfd" made the weights shipped before issue 28 (imitation crept, validation mean
# 16.2); "imitation" is plain behaviour cloning with DAgger at scale, no TD and no fine-tuning (docs/dqn_training.md).
RECIPES = {
    "dqfd": {},
    "imitation": dict(loss="cross_entropy", learning_rate=5e-4, demo_steps=20_000, pretrain_updates=3_000,
                      dagger_steps=300_000, dagger_epsilon=(0.05, 0.01), finetune_steps=0, train_every=2,
                      replay_capacity=320_000, eval_every=10_000, eval_episodes=10),
}
# Settings a resume may change (results.json lists each change): the optimiser takes the new learning rate; a phase
# budget moves the phase's end (a budget below the steps or updates already done ends the phase at once).
RESUMABLE_CHANGES = ("learning_rate", "demo_steps", "pretrain_updates", "dagger_steps", "finetune_steps")
SMOKE = dict(demo_steps=3_000, pretrain_updates=300, dagger_steps=3_000, finetune_steps=3_000,
             replay_capacity=20_000, eval_every=2_000, eval_episodes=2, max_episode_steps=2_000,
             target_every=200, checkpoint_seconds=60.0)


def recipe_settings(recipe, *, smoke=False, **changes):
    """The :class:`Settings` of ``RECIPES[recipe]``, with the :data:`SMOKE` budgets if ``smoke`` (a phase the recipe
    skips stays skipped), then ``changes``."""
    chosen = dict(RECIPES[recipe])
    if smoke:
        chosen.update({key: value for key, value in SMOKE.items() if chosen.get(key) != 0})
    return Settings(**{**chosen, **changes})


class Trainer:
    """The four phases, with checkpoints; :meth:`run` continues wherever the checkpoint left off."""

    def __init__(self, torch, settings, out):
        self.torch, self.settings, self.out = torch, settings, out
        torch.manual_seed(settings.seed)
        self.rng = np.random.default_rng(settings.seed)
        self.network = build_network(torch, len(MINIMAL_ACTIONS))
        if settings.initial_weights:
            start = load_weights(settings.initial_weights)
            start.update(fc2_w=start["fc2_w"][:, list(MINIMAL_ACTIONS)], fc2_b=start["fc2_b"][list(MINIMAL_ACTIONS)])
            self.network.load_state_dict(network_from_weights(torch, start).state_dict())
        self.target = copy.deepcopy(self.network)
        self.optimiser = torch.optim.Adam(self.network.parameters(), lr=settings.learning_rate,
                                          weight_decay=settings.weight_decay)
        self.replay = ReplayBuffer(settings.replay_capacity)
        self.player = ScriptedPlayer()
        self.steps = self.updates = self.games = 0
        self.wall_seconds = 0.0
        self.curve, self.episodes, self.baselines = [], [], {}
        self.changes = []             # settings changed by a resume: [{"steps", "updates", name: [old, new]}]
        self.best = None              # {"mean", "steps", "updates", "phase", "state"}
        self.metrics = self._fresh_metrics()
        self.last_evaluated_at = 0
        self._session_start = time.perf_counter()
        self._last_checkpoint = time.perf_counter()
        self._game = None

    # -- bookkeeping --

    def _fresh_metrics(self):
        terms = ("cross_entropy",) if self.settings.loss == "cross_entropy" else ("td", "td_n", "margin")
        return {term: [] for term in terms + ("agreement",)}

    def phase(self):
        s = self.settings
        if self.steps < s.demo_steps:
            return "demo"
        if self.updates < s.pretrain_updates:
            return "pretrain"
        if self.steps < s.demo_steps + s.dagger_steps:
            return "dagger"
        if self.steps < s.demo_steps + s.dagger_steps + s.finetune_steps:
            return "finetune"
        return "done"

    def elapsed(self):
        return self.wall_seconds + time.perf_counter() - self._session_start

    def log(self, message):
        hours = self.elapsed() / 3600
        print(f"[{time.strftime('%H:%M:%S')} {hours:5.2f} h] {message}", flush=True)

    # -- acting --

    def _new_game(self):
        self._game = AtariGame(GAME, seed=self.settings.seed + 10_000 + self.games)
        self.player.reset()
        self._game_score, self._game_steps = 0.0, 0

    def _epsilon(self, phase):
        s = self.settings
        if phase == "demo":
            return s.demo_epsilon
        if phase == "dagger":
            start, end = s.dagger_epsilon
            progress = (self.steps - s.demo_steps) / s.dagger_steps
            return start + (end - start) * progress
        return s.finetune_epsilon

    def act(self, phase):
        """One agent step in the training game, stored in the replay buffer."""
        if self._game is None:
            self._new_game()
        game, frame = self._game, self._game.state()[-1]
        label = self.player.action(game.ram())
        if self.rng.random() < self._epsilon(phase):
            action = int(self.rng.integers(len(MINIMAL_ACTIONS)))
        elif phase == "demo":
            action = label
        else:
            with self.torch.no_grad():
                action = int(q_values(self.torch, self.network, game.state()[None])[0].argmax())
        self.player.observe(MINIMAL_ACTIONS[action])
        lives = game.lives()
        reward = game.step(MINIMAL_ACTIONS[action])
        self._game_score += reward
        self._game_steps += 1
        over = game.episode_over
        cut = not over and self._game_steps >= self.settings.max_episode_steps
        self.replay.add(frame, action, label, reward, terminal=over or game.lives() < lives, last=over or cut)
        self.steps += 1
        if over or cut:
            self.episodes.append({"steps": self.steps, "phase": phase, "score": self._game_score,
                                  "length": self._game_steps, "wall_seconds": round(self.elapsed(), 1)})
            self.games += 1
            if self.games % 20 == 0:
                recent = [episode["score"] for episode in self.episodes[-20:]]
                self.log(f"{phase}: {self.steps} steps, {self.updates} updates, {self.games} games, "
                         f"last 20 games' mean score {np.mean(recent):.1f}")
            self._new_game()

    # -- learning --

    def update(self, margin_weight):
        """One optimiser step on a replay batch with the run's loss."""
        torch, s = self.torch, self.settings
        outputs, loss, terms, labels = (self._cross_entropy_loss() if s.loss == "cross_entropy"
                                        else self._dqfd_loss(margin_weight))
        self.optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.network.parameters(), s.gradient_clip)
        self.optimiser.step()
        self.updates += 1
        if self.updates % s.target_every == 0:
            self.target.load_state_dict(self.network.state_dict())
        terms["agreement"] = (outputs.argmax(1) == labels).float().mean()
        for key, value in terms.items():
            self.metrics[key].append(value.detach().item())

    def _cross_entropy_loss(self):
        """Behaviour cloning: the scripted player's action as the class of each state."""
        torch, s = self.torch, self.settings
        batch = self.replay.sample_labelled(self.rng, s.batch)
        labels = torch.from_numpy(batch["labels"].astype(np.int64))
        outputs = q_values(torch, self.network, batch["states"])
        loss = torch.nn.functional.cross_entropy(outputs, labels)
        return outputs, loss, {"cross_entropy": loss}, labels

    def _dqfd_loss(self, margin_weight):
        """DQfD: 1-step and n-step double-DQN TD terms and the large-margin term on the scripted player's action."""
        torch, s = self.torch, self.settings
        batch = self.replay.sample(self.rng, s.batch, s.n_step, s.gamma)
        actions = torch.from_numpy(batch["actions"].astype(np.int64))
        labels = torch.from_numpy(batch["labels"].astype(np.int64))
        with torch.no_grad():
            following = np.concatenate([batch["next1"], batch["nextn"]])
            chosen = q_values(torch, self.network, following).argmax(1, keepdim=True)     # double DQN
            bootstrap = q_values(torch, self.target, following).gather(1, chosen).squeeze(1)
            one, many = bootstrap[:s.batch], bootstrap[s.batch:]
            target_1 = torch.from_numpy(batch["return1"]) + torch.from_numpy(batch["discount1"]) * one
            target_n = torch.from_numpy(batch["returnn"]) + torch.from_numpy(batch["discountn"]) * many
        outputs = q_values(torch, self.network, batch["states"])
        taken = outputs.gather(1, actions[:, None]).squeeze(1)
        huber = torch.nn.functional.smooth_l1_loss
        valid_1, valid_n = torch.from_numpy(batch["valid1"]), torch.from_numpy(batch["validn"])
        td = huber(taken[valid_1], target_1[valid_1]) if valid_1.any() else taken.sum() * 0
        td_n = huber(taken[valid_n], target_n[valid_n]) if valid_n.any() else taken.sum() * 0
        margins = s.margin * (1 - torch.nn.functional.one_hot(labels, len(MINIMAL_ACTIONS)).float())
        margin = ((outputs + margins).max(1).values - outputs.gather(1, labels[:, None]).squeeze(1)).mean()
        loss = td + s.n_step_weight * td_n + margin_weight * margin
        return outputs, loss, {"td": td, "td_n": td_n, "margin": margin}, labels

    def _margin_weight(self, phase):
        s = self.settings
        if phase != "finetune":
            return s.margin_weight
        progress = (self.steps - s.demo_steps - s.dagger_steps) / (s.finetune_steps / 2)
        return s.margin_weight * max(0.0, 1.0 - progress)

    # -- evaluation, curve, checkpoints --

    def validate(self, phase):
        s = self.settings
        seeds = range(VALIDATION_SEEDS_FROM, VALIDATION_SEEDS_FROM + s.eval_episodes)
        policy = GreedyPolicy(self.torch, self.network, MINIMAL_ACTIONS, teacher=ScriptedPlayer())
        result = evaluate(policy, seeds, game=GAME, max_steps=s.max_episode_steps)
        recent = [episode["score"] for episode in self.episodes[-20:]]
        row = {"wall_seconds": round(self.elapsed(), 1), "steps": self.steps, "updates": self.updates,
               "phase": phase, "validation_mean": result["mean"],
               "validation_scores": " ".join(f"{score:g}" for score in result["scores"]),
               "validation_agreement": policy.agreed / policy.labelled,
               "training_mean_last_20": float(np.mean(recent)) if recent else float("nan"),
               **{key: float(np.mean(values)) if values else float("nan") for key, values in self.metrics.items()}}
        self.curve.append(row)
        self.metrics = self._fresh_metrics()
        self.last_evaluated_at = self.steps
        if self.best is None or result["mean"] >= self.best["mean"]:
            self.best = {"mean": result["mean"], "steps": self.steps, "updates": self.updates, "phase": phase,
                         "state": copy.deepcopy(self.network.state_dict())}
        terms = ", ".join(f"{key} {row[key]:.4f}" for key in self.metrics)
        self.log(f"validation after {self.steps} steps / {self.updates} updates ({phase}): mean score "
                 f"{result['mean']:.1f} {result['scores']}, agreement with the scripted player on them "
                 f"{row['validation_agreement']:.3f}; training batches: {terms}")
        self.write_curve()

    def write_curve(self):
        write_run_record(self.out, self.curve, self.episodes, self.baselines, self.settings, self.elapsed())

    def checkpoint(self):
        torch = self.torch
        partial, final, old = (self.out / name for name in ("checkpoint.partial", "checkpoint", "checkpoint.old"))
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        self.replay.save(partial)
        torch.save({"settings": asdict(self.settings), "network": self.network.state_dict(),
                    "target": self.target.state_dict(), "optimiser": self.optimiser.state_dict(),
                    "rng": self.rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                    "steps": self.steps, "updates": self.updates, "games": self.games,
                    "replay_count": self.replay.count, "wall_seconds": self.elapsed(), "curve": self.curve,
                    "episodes": self.episodes, "baselines": self.baselines, "best": self.best,
                    "last_evaluated_at": self.last_evaluated_at, "changes": self.changes}, partial / "state.pt")
        if final.exists():
            final.rename(old)
        partial.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        self._last_checkpoint = time.perf_counter()
        self.log(f"checkpoint: {self.steps} steps, {self.updates} updates ({self.phase()})")

    def restore(self):
        """Load the checkpoint in ``out`` if there is one; returns whether there was."""
        directory = next((path for path in (self.out / "checkpoint", self.out / "checkpoint.old")
                          if (path / "state.pt").exists()), None)
        if directory is None:
            return False
        state = self.torch.load(directory / "state.pt", weights_only=False)
        stored = Settings(**{key: tuple(value) if isinstance(value, list) else value
                             for key, value in state["settings"].items()})
        changed = [field.name for field in fields(Settings)
                   if getattr(stored, field.name) != getattr(self.settings, field.name)]
        if set(changed) - set(RESUMABLE_CHANGES):
            raise InputError(f"{directory}: the checkpoint was made with other settings ({', '.join(changed)}); "
                             f"rerun the same command or use another --out")
        self.network.load_state_dict(state["network"])
        self.target.load_state_dict(state["target"])
        self.optimiser.load_state_dict(state["optimiser"])
        for group in self.optimiser.param_groups:
            group["lr"] = self.settings.learning_rate
        self.rng.bit_generator.state = state["rng"]
        self.torch.set_rng_state(state["torch_rng"])
        for key in ("steps", "updates", "games", "wall_seconds", "curve", "episodes", "baselines", "best",
                    "last_evaluated_at"):
            setattr(self, key, state[key])
        self.changes = state.get("changes", [])     # checkpoints before changes were recorded had none
        for name in changed:
            old, new = getattr(stored, name), getattr(self.settings, name)
            self.changes.append({"steps": self.steps, "updates": self.updates, name: [old, new]})
            self.log(f"{name} changes from {old:g} to {new:g} after {self.updates} updates")
        self.replay.load(directory, state["replay_count"])
        self.replay.cut()            # the game in progress is not in the checkpoint: a new one starts
        self._session_start = time.perf_counter()
        self.log(f"resumed from {directory}: {self.steps} steps, {self.updates} updates, phase {self.phase()}")
        return True

    # -- the run --

    def run(self):
        s = self.settings
        if not self.restore():
            self.log(f"new run in {self.out}: {asdict(s)}")
        if "random" not in self.baselines:
            self.baselines["random"] = evaluate(None, TEST_SEEDS, game=GAME, epsilon=1.0,
                                                max_steps=s.max_episode_steps)
            self.log(f"random policy on the test games: mean {self.baselines['random']['mean']:.2f} "
                     f"{self.baselines['random']['scores']}")
            self.checkpoint()
        while (phase := self.phase()) != "done":
            if phase == "demo":
                self.act(phase)
            elif phase == "pretrain":
                self.update(s.margin_weight)
                if self.updates % 1000 == 0:
                    self.log(f"pretrain: {self.updates} updates, expert agreement "
                             f"{np.mean(self.metrics['agreement'][-1000:]):.3f}")
                if self.updates == s.pretrain_updates:
                    self.validate(phase)
            else:
                self.act(phase)
                if self.steps % s.train_every == 0:
                    self.update(self._margin_weight(phase))
                if self.steps - self.last_evaluated_at >= s.eval_every:
                    self.validate(phase)
            if self.phase() != phase or time.perf_counter() - self._last_checkpoint >= s.checkpoint_seconds:
                self.checkpoint()
        if self.last_evaluated_at != self.steps:
            self.validate("finetune")
            self.checkpoint()
        return self.finish()

    def finish(self):
        """Export the best validated network, check the export, evaluate it on the test games, write results."""
        torch, s = self.torch, self.settings
        if "scripted" not in self.baselines:      # long games: played once training is over
            self.baselines["scripted"] = evaluate(ScriptedPlayer(), TEST_SEEDS, game=GAME,
                                                  max_steps=s.max_episode_steps)
            self.log(f"scripted player (eps {EVAL_EPSILON}) on the test games: mean "
                     f"{self.baselines['scripted']['mean']:.1f} {self.baselines['scripted']['scores']}")
        network = build_network(torch, len(MINIMAL_ACTIONS))
        network.load_state_dict(self.best["state"])
        path = self.out / "dqn_breakout.npz"
        save_weights(path, export_weights(network))
        weights = load_weights(path)
        exported = network_from_weights(torch, weights)
        states = recorded_states()
        with torch.no_grad():
            torch_q = exported(torch.from_numpy(states)).double().numpy()
            minimal_q = network(torch.from_numpy(states)).double().numpy()
        reference = np.stack([reference_q_values(weights, state) for state in states])
        export_error = float(np.abs(torch_q - reference).max())
        mapping_error = float(np.abs(torch_q - minimal_q[:, list(FULL_TO_MINIMAL)]).max())
        test = evaluate(GreedyPolicy(torch, exported, tuple(range(len(FULL_TO_MINIMAL)))), TEST_SEEDS, game=GAME,
                        max_steps=s.max_episode_steps)
        random_mean = self.baselines["random"]["mean"]
        results = {
            "method": METHODS[s.loss], "game": GAME, "settings": asdict(s), "settings_changed_on_resume": self.changes,
            "wall_seconds": round(self.elapsed(), 1),
            "wall_hours": round(self.elapsed() / 3600, 3), "agent_steps": self.steps, "updates": self.updates,
            "training_games": self.games, "weights": str(path), "curve_png": str(self.out / "curve.png"),
            "selected": {key: value for key, value in self.best.items() if key != "state"},
            "action_set": {"trained_on_ale_actions": list(MINIMAL_ACTIONS),
                           "exported_output_j_is_ale_action_j_copying_minimal_index": list(FULL_TO_MINIMAL)},
            "ram_addresses": {"ball_x": RAM_BALL_X, "ball_y": RAM_BALL_Y, "paddle_x": RAM_PADDLE_X},
            "export_check": {"max_abs_q_torch_vs_float64_reference": export_error,
                             "max_abs_q_full_vs_minimal_outputs": mapping_error},
            "test": {"trained": test, "random": self.baselines["random"], "scripted": self.baselines["scripted"],
                     "trained_over_random": test["mean"] / random_mean if random_mean else float("inf")},
        }
        (self.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        self.write_curve()
        self.log(f"exported {path} (best validation mean {self.best['mean']:.1f} after {self.best['steps']} steps, "
                 f"{self.best['phase']}); torch vs float64 reference max |dQ| {export_error:.2e}")
        self.log(f"test games (seeds {TEST_SEEDS[0]}..{TEST_SEEDS[-1]}, eps {EVAL_EPSILON}): trained mean "
                 f"{test['mean']:.1f} {test['scores']}; random mean {random_mean:.2f}; scripted mean "
                 f"{self.baselines['scripted']['mean']:.1f}; wall time {self.elapsed() / 3600:.2f} h")
        return results


def export_checkpoint(torch, out, path):
    """Write the best validated network of the run in ``out`` (from its checkpoint: the run may still be going) to
    the weights file ``path``, and next to it ``path`` with ``.json``: where the weights came from.  Returns that."""
    directory = next((candidate for candidate in (out / "checkpoint", out / "checkpoint.old")
                      if (candidate / "state.pt").exists()), None)
    if directory is None:
        raise InputError(f"{out}: no checkpoint to export (expected {out / 'checkpoint' / 'state.pt'})")
    state = torch.load(directory / "state.pt", weights_only=False)
    if state["best"] is None:
        raise InputError(f"{directory}: the run has not validated a network yet")
    network = build_network(torch, len(MINIMAL_ACTIONS))
    network.load_state_dict(state["best"]["state"])
    save_weights(path, export_weights(network))
    results = out / "results.json"
    provenance = {
        "method": METHODS[state["settings"].get("loss", "dqfd")], "game": GAME, "run": str(out), "finished": results.exists(),
        "selected": {key: value for key, value in state["best"].items() if key != "state"},
        "validation": {"seeds_from": VALIDATION_SEEDS_FROM, "games": state["settings"]["eval_episodes"],
                       "epsilon": EVAL_EPSILON},
        "run_at_export": {"agent_steps": state["steps"], "updates": state["updates"], "games": state["games"],
                          "wall_hours": round(state["wall_seconds"] / 3600, 3)},
        "settings": state["settings"], "settings_changed_on_resume": state.get("changes", []),
        "curve": state["curve"], "baselines": {name: result["mean"] for name, result in state["baselines"].items()},
        "test": json.loads(results.read_text())["test"] if results.exists() else None,
    }
    path.with_suffix(".json").write_text(json.dumps(provenance, indent=2) + "\n")
    print(f"exported {path}: best validation mean {state['best']['mean']:g} after {state['best']['steps']} steps "
          f"({state['best']['phase']}); the run was at {state['steps']} steps, {state['wall_seconds'] / 3600:.2f} h")
    return provenance
