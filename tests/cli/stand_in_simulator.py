"""A stand-in for the simulated DQN accelerator in the jobs' tests: it returns the golden model's outputs and the
compiler's predicted counters (what a bit-exact accelerator that counts as predicted gives), optionally with one
output bit or one counter wrong, and records what it was asked to run."""

import numpy as np

from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.plan import COUNTERS
from nnaccel.testbench.dqn import host as dqn_host
from nnaccel.testbench.dqn.host import AcceleratorRun


def predicted_run(plan, states, *, wrong_output=False, wrong_counter=False):
    """The :class:`AcceleratorRun` of ``plan`` on ``states``; ``wrong_output`` flips the lowest bit of input 1's
    output 0 (input 0's with one input), ``wrong_counter`` adds one to input 0's last pass's drain counter."""
    goldens = [golden_forward(plan, state) for state in states]
    q_values = np.stack([golden.q_values for golden in goldens])
    if wrong_output:
        q_values[min(1, len(states) - 1), 0] ^= 1
    counters = np.array([[[layer.predicted[name] for name in COUNTERS] for layer in plan.layers]] * len(states))
    if wrong_counter:
        counters[0, -1, COUNTERS.index("drain_cycles")] += 1
    count = len(states)
    return AcceleratorRun(q_values=q_values, output_words=None, actions=np.array([g.action for g in goldens]),
                          action_values=np.array([g.action_value for g in goldens], np.uint32),
                          total_cycles=np.full(count, plan.estimated_cycles), layer_counters=counters,
                          load_cycles=np.full(count, 40), run_wall_seconds=np.full(count, 0.5),
                          run_cpu_seconds=np.full(count, 0.4), layer_words=[], frames=None, build_seconds=1.0,
                          run_seconds=2.0)


def install(monkeypatch, **faults):
    """Replace the simulation by :func:`predicted_run` (with ``faults``); returns the list of ``(plan, states)``
    it is given."""
    runs = []

    def stand_in(accelerator, plan, states, **keywords):
        accelerator._MustUse__used = True       # never elaborated here: tell Amaranth (as sim.verilog's cache does)
        runs.append((plan, states))
        return predicted_run(plan, states, **faults)

    monkeypatch.setattr(dqn_host, "run_on_accelerator", stand_in)
    return runs
