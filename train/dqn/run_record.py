"""The training run's record in its output directory: ``curve.csv`` (one row per validation), ``episodes.csv``
(every training game) and ``curve.png`` (both, with the baselines' test means)."""

import csv

import numpy as np

__all__ = ["write_run_record"]


def write_run_record(out, curve, episodes, baselines, settings, wall_seconds):
    """Rewrite the CSV files and the plot in ``out`` from the run so far."""
    for name, rows in (("curve.csv", curve), ("episodes.csv", episodes)):
        if rows:
            _write_csv(out / name, rows)
    plot_curve(out / "curve.png", curve, episodes, baselines, settings, wall_seconds)


def _write_csv(path, rows):
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot_curve(path, curve, episodes, baselines, settings, wall_seconds):
    """Training games' scores (the scripted player's and the network's, with running means), the validation means
    and the baselines over agent steps, the phases' boundaries as lines."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axis = pyplot.subplots(figsize=(8, 4.5))
    for players, colour, name in ((("demo",), "C2", "scripted player's"),
                                   (("dagger", "finetune"), "0.4", "network's")):
        games = [episode for episode in episodes if episode["phase"] in players]
        if games:
            steps = np.array([episode["steps"] for episode in games]) / 1e3
            scores = np.array([episode["score"] for episode in games])
            window = min(20, len(scores))
            axis.plot(steps, scores, ".", color=colour, alpha=0.4, markersize=3)
            axis.plot(steps[window - 1:], np.convolve(scores, np.ones(window) / window, mode="valid"),
                      color=colour, label=f"training games, {name} (mean of {window})")
    if curve:
        axis.plot([row["steps"] / 1e3 for row in curve], [row["validation_mean"] for row in curve],
                  "o-", color="C0", label=f"validation mean ({settings.eval_episodes} games, eps 0.05)")
    for name, colour in (("random", "C3"), ("scripted", "C2")):
        if name in baselines:
            axis.axhline(baselines[name]["mean"], color=colour, linestyle="--",
                         label=f"{name} policy, test games ({baselines[name]['mean']:.1f})")
    s = settings
    reached = max([episode["steps"] for episode in episodes] + [row["steps"] for row in curve] + [0])
    for boundary in (s.demo_steps, s.demo_steps + s.dagger_steps):
        if boundary <= reached:               # a phase the run has not finished draws no boundary
            axis.axvline(boundary / 1e3, color="0.85", linewidth=0.8)
    axis.set_xlabel("agent steps (thousands; 4 frames each)")
    axis.set_yscale("symlog", linthresh=10)
    top = max([episode["score"] for episode in episodes] + [row["validation_mean"] for row in curve]
              + [baseline["mean"] for baseline in baselines.values()] + [10])
    axis.set_ylim(0, top * 1.5)
    axis.set_ylabel("Breakout score (linear to 10, then log)")
    phases = "demonstrations, DAgger" + (", fine-tuning" if s.finetune_steps else "")
    axis.set_title(f"Thesis DQN on Breakout: {phases} ({wall_seconds / 3600:.2f} h wall)")
    axis.legend(fontsize=7, loc="upper right", framealpha=0.9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)
