"""DCP's search: gradient descent on relaxed dataflow codes through the frozen predictor, decoded
to legal dataflows and re-evaluated with the cost model (through ``dse.dcp.evaluator``, as the
baselines are). One layer is a single-layer search; the DQN's four layers a whole-network one.

``dcp_search``:

1. Start: ``restarts`` legal codes per layer drawn by the design space's sampler (random
   starts), or, given ``start`` (one code per layer, e.g. the compiler's default mapping), that
   code as the first restart and random ones for the rest; relaxed
   (``dse.shared.dataflow_code.relax``) and evaluated with the cost model.
2. Descend: Adam on the relaxed codes of all restarts at once. The loss per restart is the
   predicted objective in log (log of the summed latency / energy over the layers, their sum
   for EDP) plus the design space's penalty (``DataflowSpace.penalty``; on the template: the
   squared gap between each dimension's summed log2 sizes and its log2 loop bound, and the
   squared excess of the soft PEs used over the array). After each step sizes are clipped to
   [0, ``DataflowSpace.log2_limits``] and slots to [-0.5, N - 0.5].
3. Every ``decode_every`` steps and at the end, each restart's codes are decoded to the nearest
   legal dataflow (``DataflowSpace.nearest``) and evaluated with the cost model (a code already
   evaluated is not counted again).
4. The answer is the best decoded dataflow by the cost model.
"""

import numpy as np
import torch

from nnaccel.dse.dcp.encoding import layer_features
from nnaccel.dse.dcp.evaluator import Evaluator, objective_value
from nnaccel.dse.shared.dataflow_code import relax
from nnaccel.sim.progress import counting


def _log_limits(space, layers, hardware):
    return torch.tensor(np.stack([space.log2_limits(layer, hardware) for layer in layers]),
                        dtype=torch.float32)


def predicted_objective(predictor, space, layers, hardware, codes, objective):
    """The predictor's objective for one code per layer (linear units)."""
    with torch.no_grad():
        output = predictor(*_inputs(space, layers, hardware, 1),
                           torch.as_tensor(relax(np.stack(codes)), dtype=torch.float32))
    latency, energy = torch.exp(output.double()).sum(dim=0).tolist()
    return objective_value(latency, energy, objective)


def _inputs(space, layers, hardware, restarts):
    layer_rows = torch.as_tensor(layer_features(layers)).repeat(restarts, 1)
    hardware_rows = torch.as_tensor(space.hardware_features(hardware))[None].expand(
        restarts * len(layers), -1)
    return layer_rows, hardware_rows


def dcp_search(space, predictor, layers, hardware, objective, *, restarts=8, steps=150,
               learning_rate=0.05, decode_every=10, penalty=1.0, temperature=0.5, seed=0,
               start=None, progress=True):
    """DCP on ``layers`` (see the module docstring); returns a ``SearchResult``."""
    # The first optimiser of a process imports torch's compiler stack (seconds): not search time.
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    evaluator = Evaluator(space, layers, hardware, objective)
    starts = np.stack([space.sample_codes(layer, hardware, restarts, seed=seed * 7919 + index)
                       for index, layer in enumerate(layers)], axis=1)    # (R, L, M, N, 2)
    if start is not None:
        starts[0] = np.stack(start)
    for restart in range(restarts):
        evaluator(list(starts[restart]))
    levels, dims = starts.shape[2:4]
    code = torch.tensor(relax(starts.reshape(-1, levels, dims, 2)), dtype=torch.float32)
    code = code.reshape(restarts, len(layers), levels, dims, 2).requires_grad_(True)
    layer_rows, hardware_rows = _inputs(space, layers, hardware, restarts)
    log_limits = _log_limits(space, layers, hardware)
    optimiser = torch.optim.Adam([code], lr=learning_rate)
    step_trace = []
    with counting("DCP descent: gradient steps", total=steps, enabled=progress) as shown:
        for step in range(1, steps + 1):
            output = predictor(layer_rows, hardware_rows, code.reshape(-1, levels, dims, 2))
            output = output.reshape(restarts, len(layers), 2)
            latency = torch.logsumexp(output[..., 0], dim=1)
            energy = torch.logsumexp(output[..., 1], dim=1)
            predicted = {"latency": latency, "energy": energy, "edp": latency + energy}[objective]
            loss = (predicted + penalty * space.penalty(code, layers, hardware, temperature)).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            with torch.no_grad():
                code[..., 1].clamp_(min=0.0)
                code[..., 1].copy_(torch.minimum(code[..., 1], log_limits[None]))
                code[..., 0].clamp_(-0.5, dims - 0.5)
            step_trace.append((step, float(torch.exp(predicted.detach().min()))))
            if step % decode_every == 0 or step == steps:
                relaxed = code.detach().numpy()
                for restart in range(restarts):
                    evaluator([space.nearest(relaxed[restart, index], layer, hardware)
                               for index, layer in enumerate(layers)])
            shown.update()
    result = evaluator.result("DCP", step_trace=step_trace)
    result.predicted = predicted_objective(predictor, space, layers, hardware, result.codes,
                                           objective)
    return result
