"""Error back-propagation (EBP) with momentum on the PE ring: LM layout, ring program, fixed-point golden
model and float64 reference, for an ``inputs - hidden - outputs`` sigmoid network.

Mapping (``N`` PEs; node ``j`` of a layer runs on PE ``j mod N`` in pass ``j // N``):

* feed-forward, SRA mode: each PE loads one input into its ring register ``x``; ``N`` steps of
  ``mac r1, x, m[w], r1`` (net += w * x while the ring moves ``x`` one PE on), so PE ``p`` sees, at
  step ``t``, the input of PE ``(p - t) mod N`` -- the recursion net(t) = net(t-1) + w(t) O(t).
  Inputs beyond ``N`` come in further laps. The weight of step ``t`` sits at the step's LM address,
  so one broadcast address serves every PE (the skew is in the layout). Then ``act`` (PWL sigmoid)
  and a 0/1 mask that keeps padding nodes at exactly 0.
* output deltas, SIMD: ``e = T - O``, ``delta = (1 - O) * O * e``, loss ``+= e * e``.
* hidden deltas, SRA: partial sums circulate, ``mac x, r4, m[w2], in`` adds ``delta_k * w_kj`` as the
  sum for node ``j`` passes PE ``k``: after ``N`` steps each sum is home. The same LM words as the
  forward pass (no transposed copy).
* weight update, SIMD: the inputs of the layer are first spread to every PE (``N`` SRA steps of
  ``mov m[copy], x``), then for every weight
  ``w' = (w + (eta * delta) * O) + alpha * (w - w_prev)``, ``w_prev' = w``, biases with ``O = 1``.

Arithmetic order of the golden model (each operation rounds half up and saturates, :mod:`models.shared.fixed_point`):
``net = mac(... mac(bias, w_0, x_0) ...)`` in ring order; ``O = pwl(net) * mask``;
``delta_k = mul(mul(sub(1, O), O), e)``; ``s_j = mac(... mac(0, delta_0, w_0j) ...)`` in ring order;
``delta_j = mul(mul(sub(1, O_j), O_j), s_j)``; ``ed = mul(delta, eta)``;
``w' = add(mac(w, ed, O), mul(sub(w, w_prev), alpha))``.
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.models.shared import fixed_point as fx
from nnaccel.models.pe_ring import pwl

__all__ = ["EBPLayout", "ring_program", "forward_program", "initial_lm", "read_weights",
           "FixedPointEBP", "FloatEBP", "table1_cycles", "table1_layer_cycles"]

# The programs use 8 registers: r0 alpha, r1 net, r2 O, r3/r5/r6 temporaries, r4 delta or eta*delta, r7 loss.


def _ceil(a, b):
    return -(-a // b)


@dataclass(frozen=True)
class EBPLayout:
    """LM addresses of one network on ``pes`` PEs, for ``samples`` training samples."""

    inputs: int
    hidden: int
    outputs: int
    pes: int
    samples: int

    @property
    def input_laps(self):
        return _ceil(self.inputs, self.pes)

    @property
    def hidden_passes(self):
        return _ceil(self.hidden, self.pes)

    @property
    def output_passes(self):
        return _ceil(self.outputs, self.pes)

    # Constants and per-sample values
    ONE, ETA, ALPHA, LOSS = 0, 1, 2, 3

    @property
    def hidden_mask(self):
        return 4

    @property
    def output_mask(self):
        return self.hidden_mask + self.hidden_passes

    @property
    def hidden_bias(self):
        return self.output_mask + self.output_passes

    @property
    def hidden_bias_prev(self):
        return self.hidden_bias + self.hidden_passes

    @property
    def output_bias(self):
        return self.hidden_bias_prev + self.hidden_passes

    @property
    def output_bias_prev(self):
        return self.output_bias + self.output_passes

    @property
    def hidden_out(self):
        return self.output_bias_prev + self.output_passes

    @property
    def output_out(self):
        return self.hidden_out + self.hidden_passes

    @property
    def hidden_delta(self):
        return self.output_out + self.output_passes

    @property
    def output_delta(self):
        return self.hidden_delta + self.hidden_passes

    @property
    def input_copy(self):
        return self.output_delta + self.output_passes

    @property
    def hidden_copy(self):
        return self.input_copy + self.input_laps * self.pes

    @property
    def w1(self):
        return self.hidden_copy + self.hidden_passes * self.pes

    @property
    def w1_prev(self):
        return self.w1 + self.hidden_passes * self.input_laps * self.pes

    @property
    def w2(self):
        return self.w1_prev + self.hidden_passes * self.input_laps * self.pes

    @property
    def w2_prev(self):
        return self.w2 + self.output_passes * self.hidden_passes * self.pes

    @property
    def sample_stride(self):
        return self.input_laps + self.output_passes

    @property
    def data(self):
        return self.w2_prev + self.output_passes * self.hidden_passes * self.pes

    @property
    def size(self):
        return self.data + self.samples * self.sample_stride

    def weight_address(self, base, node_pass, lap, step):
        laps = self.input_laps if base in (self.w1, self.w1_prev) else self.hidden_passes
        return base + (node_pass * laps + lap) * self.pes + step


# ---- Program ---------------------------------------------------------------------------------

def _forward_layer(lines, layout, *, nodes, passes, laps, weights, bias, mask, outputs, source):
    """Feed-forward of one layer; ``source(lap)`` is the operand holding this PE's input of the lap.
    The mask (padding nodes to 0) is only applied when the layer does not fill its last pass."""
    padded = nodes % layout.pes != 0
    for q in range(passes):
        lines.append(f"mov r1, m[{bias + q}]")
        for lap in range(laps):
            lines.append(f"mov x, {source(lap)}")
            lines += [f"mac r1, x, m[{layout.weight_address(weights, q, lap, t)}], r1" for t in range(layout.pes)]
        if padded:
            lines += ["act r2, r1", f"mov r3, m[{mask + q}]", "mul r2, r2, r3", f"mov m[{outputs + q}], r2"]
        else:
            lines += ["act r2, r1", "nop", f"mov m[{outputs + q}], r2"]


def _forward(lines, layout):
    lines.append("mode sra")
    _forward_layer(lines, layout, nodes=layout.hidden, passes=layout.hidden_passes, laps=layout.input_laps, weights=layout.w1,
                   bias=layout.hidden_bias, mask=layout.hidden_mask, outputs=layout.hidden_out,
                   source=lambda lap: f"m[{layout.data + lap}+b0]")
    _forward_layer(lines, layout, nodes=layout.outputs, passes=layout.output_passes, laps=layout.hidden_passes, weights=layout.w2,
                   bias=layout.output_bias, mask=layout.output_mask, outputs=layout.output_out,
                   source=lambda lap: f"m[{layout.hidden_out + lap}]")


def _spread(lines, layout, *, laps, source, copy):
    """Every PE gets every input of the layer: copy[lap * N + t] = input of PE (p - t) mod N."""
    for lap in range(laps):
        lines.append(f"mov x, {source(lap)}")
        lines += [f"mov m[{copy + lap * layout.pes + t}], x" for t in range(layout.pes)]


def _update(lines, weight, previous, operand, eta_delta="r4"):
    lines += [f"mov r5, m[{previous}]", f"mov r6, m[{weight}]", f"mov m[{previous}], r6", "sub r5, r6, r5",
              "mul r5, r5, r0", f"mac r6, {eta_delta}, {operand}, r6", f"add m[{weight}], r6, r5"]


def _train_step(lines, layout):
    n = layout.pes
    _forward(lines, layout)
    # ---- output deltas (SIMD) ----
    lines.append("mode simd")
    for r in range(layout.output_passes):
        lines += [f"mov r2, m[{layout.output_out + r}]", f"sub r3, m[{layout.data + layout.input_laps + r}+b0], r2",
                  "mac r7, r3, r3, r7", f"sub r4, m[{layout.ONE}], r2", "mul r4, r4, r2", "mul r4, r4, r3",
                  f"mov m[{layout.output_delta + r}], r4"]
    # ---- hidden deltas (SRA: circulating partial sums; loads in SIMD so that the sums stay put) ----
    for q in range(layout.hidden_passes):
        for r in range(layout.output_passes):
            lines += ["mode simd", f"mov r4, m[{layout.output_delta + r}]"]
            if r == 0:
                lines.append("mov x, 0")
            lines.append("mode sra")
            lines += [f"mac x, r4, m[{layout.weight_address(layout.w2, r, q, (t + 1) % n)}], in" for t in range(n)]
        lines += ["mode simd", f"mov r2, m[{layout.hidden_out + q}]", f"sub r3, m[{layout.ONE}], r2",
                  "mul r3, r3, r2", "mul r3, r3, x", f"mov m[{layout.hidden_delta + q}], r3"]
    lines.append("mode sra")
    # ---- spread the layer inputs (SRA), then update (SIMD) ----
    _spread(lines, layout, laps=layout.input_laps, source=lambda lap: f"m[{layout.data + lap}+b0]",
            copy=layout.input_copy)
    _spread(lines, layout, laps=layout.hidden_passes, source=lambda lap: f"m[{layout.hidden_out + lap}]",
            copy=layout.hidden_copy)
    lines.append("mode simd")
    for r in range(layout.output_passes):
        lines += [f"mov r4, m[{layout.output_delta + r}]", f"mul r4, r4, m[{layout.ETA}]"]
        _update(lines, layout.output_bias + r, layout.output_bias_prev + r, f"m[{layout.ONE}]")
        for lap in range(layout.hidden_passes):
            for t in range(n):
                _update(lines, layout.weight_address(layout.w2, r, lap, t),
                        layout.weight_address(layout.w2_prev, r, lap, t), f"m[{layout.hidden_copy + lap * n + t}]")
    for q in range(layout.hidden_passes):
        lines += [f"mov r4, m[{layout.hidden_delta + q}]", f"mul r4, r4, m[{layout.ETA}]"]
        _update(lines, layout.hidden_bias + q, layout.hidden_bias_prev + q, f"m[{layout.ONE}]")
        for lap in range(layout.input_laps):
            for t in range(n):
                _update(lines, layout.weight_address(layout.w1, q, lap, t),
                        layout.weight_address(layout.w1_prev, q, lap, t), f"m[{layout.input_copy + lap * n + t}]")


def ring_program(layout):
    """Assembly text: one epoch of training over the ``samples`` samples, loss sum in LM[LOSS] of each PE."""
    lines = [f"mov r0, m[{layout.ALPHA}]", "mov r7, 0", "setb 0, 0", f"setl 0, {layout.samples}"]
    body = []
    _train_step(body, layout)
    lines += [f"sample: {body[0]}", *body[1:], f"addb 0, {layout.sample_stride}", "bnz 0, sample",
              "mode simd", f"mov m[{layout.LOSS}], r7", "halt"]
    return "\n".join(lines)


def forward_program(layout):
    """Assembly text: inference (feed-forward) of sample 0, for cycle counts. Unlike the training
    step it needs no masks (padding nodes meet zero weights) and, when the hidden layer fits one pass,
    hands the hidden outputs to the output layer in registers: the output bias load fills the ``act``
    latency slot and ``mov x, r2`` starts the second ring."""
    n = layout.pes
    lines = ["mode sra"]
    single = layout.hidden_passes == 1
    for q in range(layout.hidden_passes):
        lines.append(f"mov r1, m[{layout.hidden_bias + q}]")
        for lap in range(layout.input_laps):
            lines.append(f"mov x, m[{layout.data + lap}]")
            lines += [f"mac r1, x, m[{layout.weight_address(layout.w1, q, lap, t)}], r1" for t in range(n)]
        lines += ["act r2, r1", "nop" if not single else f"mov r1, m[{layout.output_bias}]",
                  f"mov m[{layout.hidden_out + q}], r2" if not single else "mov x, r2"]
    for r in range(layout.output_passes):
        if not single or r:
            lines.append(f"mov r1, m[{layout.output_bias + r}]")
        for lap in range(layout.hidden_passes):
            if not single or r:
                lines.append(f"mov x, m[{layout.hidden_out + lap}]")
            lines += [f"mac r1, x, m[{layout.weight_address(layout.w2, r, lap, t)}], r1" for t in range(n)]
        lines += ["act r2, r1", "nop", f"mov m[{layout.output_out + r}], r2"]
    return "\n".join([*lines, "halt"])


# ---- LM images -------------------------------------------------------------------------------

def _skew(matrix, pes, passes, laps):
    """(pes, passes * laps * pes) image of a (nodes, inputs) matrix in the forward layout."""
    nodes, inputs = matrix.shape
    image = np.zeros((pes, passes * laps * pes), dtype=np.int64)
    for p in range(pes):
        for q in range(passes):
            j = q * pes + p
            if j >= nodes:
                continue
            for lap in range(laps):
                for t in range(pes):
                    i = lap * pes + (p - t) % pes
                    if i < inputs:
                        image[p, (q * laps + lap) * pes + t] = matrix[j, i]
    return image


def _by_pe(vector, pes, passes):
    image = np.zeros((pes, passes), dtype=np.int64)
    for j, value in enumerate(vector):
        image[j % pes, j // pes] = value
    return image


def initial_lm(layout, params, data, targets, *, fmt, eta, alpha, lm_depth):
    """(pes, lm_depth) raw LM image: constants, weights (``w_prev = w``), masks and the samples."""
    if layout.size > lm_depth:
        raise ValueError(f"the network and {layout.samples} samples need {layout.size} LM words, "
                         f"more than lm_depth = {lm_depth}")
    n = layout.pes
    lm = np.zeros((n, lm_depth), dtype=np.int64)
    lm[:, layout.ONE] = fx.to_raw(1.0, fmt)
    lm[:, layout.ETA] = fx.to_raw(eta, fmt)
    lm[:, layout.ALPHA] = fx.to_raw(alpha, fmt)
    one = int(fx.to_raw(1.0, fmt))
    for start, count, passes in ((layout.hidden_mask, layout.hidden, layout.hidden_passes),
                                 (layout.output_mask, layout.outputs, layout.output_passes)):
        lm[:, start:start + passes] = _by_pe(np.full(count, one), n, passes)
    w1, b1, w2, b2 = params
    for base in (layout.hidden_bias, layout.hidden_bias_prev):
        lm[:, base:base + layout.hidden_passes] = _by_pe(b1, n, layout.hidden_passes)
    for base in (layout.output_bias, layout.output_bias_prev):
        lm[:, base:base + layout.output_passes] = _by_pe(b2, n, layout.output_passes)
    size1 = layout.hidden_passes * layout.input_laps * n
    size2 = layout.output_passes * layout.hidden_passes * n
    for base in (layout.w1, layout.w1_prev):
        lm[:, base:base + size1] = _skew(w1, n, layout.hidden_passes, layout.input_laps)
    for base in (layout.w2, layout.w2_prev):
        lm[:, base:base + size2] = _skew(w2, n, layout.output_passes, layout.hidden_passes)
    for s in range(layout.samples):
        start = layout.data + s * layout.sample_stride
        lm[:, start:start + layout.input_laps] = _by_pe(data[s], n, layout.input_laps)
        lm[:, start + layout.input_laps:start + layout.sample_stride] = _by_pe(targets[s], n, layout.output_passes)
    return lm


def read_weights(layout, lm):
    """(w1, b1, w2, b2) raw arrays read from an LM image."""
    n = layout.pes

    def unskew(base, nodes, inputs, passes, laps):
        matrix = np.zeros((nodes, inputs), dtype=np.int64)
        for j in range(nodes):
            p, q = j % n, j // n
            for i in range(inputs):
                lap, t = i // n, (p - i % n) % n
                matrix[j, i] = lm[p, base + (q * laps + lap) * n + t]
        return matrix

    def vector(base, count):
        return np.array([lm[j % n, base + j // n] for j in range(count)], dtype=np.int64)

    return (unskew(layout.w1, layout.hidden, layout.inputs, layout.hidden_passes, layout.input_laps),
            vector(layout.hidden_bias, layout.hidden),
            unskew(layout.w2, layout.outputs, layout.hidden, layout.output_passes, layout.hidden_passes),
            vector(layout.output_bias, layout.outputs))


# ---- Golden models ---------------------------------------------------------------------------

def _ring_order(nodes, inputs, pes):
    """order[j] = the inputs node j accumulates, in the ring's order (lap by lap, step by step)."""
    order = []
    for j in range(nodes):
        p = j % pes
        order.append([lap * pes + (p - t) % pes for lap in range(_ceil(inputs, pes)) for t in range(pes)
                      if lap * pes + (p - t) % pes < inputs])
    return np.array(order, dtype=np.int64)


class FixedPointEBP:
    """Bit-exact model of the ring program's training (raw integers in ``table.fmt``)."""

    def __init__(self, *, inputs, hidden, outputs, pes, table, eta, alpha):
        self.fmt, self.table, self.pes = table.fmt, table, pes
        self.eta, self.alpha = fx.to_raw(eta, self.fmt), fx.to_raw(alpha, self.fmt)
        self.one = fx.to_raw(1.0, self.fmt)
        self.order1 = _ring_order(hidden, inputs, pes)
        self.order2 = _ring_order(outputs, hidden, pes)
        # hidden-delta sums: node j collects output k's term when the sum passes PE k mod N
        self.order_back = np.array([[r * pes + (j + 1 + t) % pes for r in range(_ceil(outputs, pes)) for t in range(pes)
                                     if r * pes + (j + 1 + t) % pes < outputs] for j in range(hidden)], dtype=np.int64)

    def _layer(self, weights, bias, x, order):
        net = bias.copy()
        rows = np.arange(len(bias))
        for step in range(order.shape[1]):
            i = order[:, step]
            net = fx.mac(net, weights[rows, i], x[i], self.fmt)
        return pwl.evaluate(self.table, net)

    def forward(self, params, x):
        w1, b1, w2, b2 = params
        hidden = self._layer(w1, b1, x, self.order1)
        return hidden, self._layer(w2, b2, hidden, self.order2)

    def _update(self, weights, previous, eta_delta, inputs):
        grown = fx.mac(weights, eta_delta[:, None], inputs[None, :], self.fmt)
        return fx.add(grown, fx.mul(fx.sub(weights, previous, self.fmt), self.alpha, self.fmt), self.fmt), weights

    def train_epoch(self, params, previous, data, targets):
        """One epoch, sample by sample; returns (params, previous params, per-PE loss sums (raw))."""
        fmt = self.fmt
        losses = np.zeros(self.pes, dtype=np.int64)
        w1, b1, w2, b2 = params
        p1, pb1, p2, pb2 = previous
        for x, target in zip(data, targets):
            hidden, output = self.forward((w1, b1, w2, b2), x)
            error = fx.sub(target, output, fmt)
            for k, e in enumerate(error):
                losses[k % self.pes] = fx.mac(losses[k % self.pes:k % self.pes + 1], [e], [e], fmt)[0]
            delta_out = fx.mul(fx.mul(fx.sub(self.one, output, fmt), output, fmt), error, fmt)
            sums = np.zeros(len(hidden), dtype=np.int64)
            rows = np.arange(len(hidden))
            for step in range(self.order_back.shape[1]):
                k = self.order_back[:, step]
                sums = fx.mac(sums, delta_out[k], w2[k, rows], fmt)
            delta_hidden = fx.mul(fx.mul(fx.sub(self.one, hidden, fmt), hidden, fmt), sums, fmt)
            eta_out = fx.mul(delta_out, self.eta, fmt)
            eta_hidden = fx.mul(delta_hidden, self.eta, fmt)
            (w2, p2), (b2, pb2) = (self._update(w2, p2, eta_out, hidden),
                                   self._update(b2[:, None], pb2[:, None], eta_out, np.array([self.one])))
            (w1, p1), (b1, pb1) = (self._update(w1, p1, eta_hidden, x),
                                   self._update(b1[:, None], pb1[:, None], eta_hidden, np.array([self.one])))
            b2, pb2, b1, pb1 = b2[:, 0], pb2[:, 0], b1[:, 0], pb1[:, 0]
        return (w1, b1, w2, b2), (p1, pb1, p2, pb2), losses


class FloatEBP:
    """float64 reference of the same training (exact sigmoid, same sample order, same update rule)."""

    def __init__(self, *, eta, alpha):
        self.eta, self.alpha = eta, alpha

    @staticmethod
    def forward(params, x):
        w1, b1, w2, b2 = params
        hidden = 1.0 / (1.0 + np.exp(-(w1 @ x + b1)))
        return hidden, 1.0 / (1.0 + np.exp(-(w2 @ hidden + b2)))

    def train_epoch(self, params, previous, data, targets):
        params, previous = [p.copy() for p in params], [p.copy() for p in previous]
        loss = 0.0
        for x, target in zip(data, targets):
            hidden, output = self.forward(params, x)
            error = target - output
            loss += float(error @ error)
            delta_out = (1 - output) * output * error
            delta_hidden = (1 - hidden) * hidden * (params[2].T @ delta_out)
            gradients = (np.outer(delta_hidden, x), delta_hidden, np.outer(delta_out, hidden), delta_out)
            for index, gradient in enumerate(gradients):
                current = params[index]
                params[index] = current + self.eta * gradient + self.alpha * (current - previous[index])
                previous[index] = current
        return params, previous, loss


def table1_cycles(n_sra, n_simd, nodes, pes):
    """The paper's Table 1: (SRA, SIMD, SRA+SIMD) computation time of one layer in cycles."""
    passes = _ceil(nodes, pes)
    return (n_sra + (n_sra - 1)) * passes, n_simd * passes, (n_simd + n_sra + (n_sra - 1)) * passes


def table1_layer_cycles(layout, column):
    """Table 1's ``column`` (0 SRA, 1 SIMD, 2 SRA+SIMD) summed over both layers of ``layout``'s network, with
    n_sra = the MAC instructions per node (laps x N) and, for the SIMD rows, n_simd = the update instructions per
    node (7 per weight and bias, 2 for eta * delta) as :func:`ring_program` issues them."""
    total = 0
    for inputs, nodes in ((layout.inputs, layout.hidden), (layout.hidden, layout.outputs)):
        n_sra = _ceil(inputs, layout.pes) * layout.pes
        n_simd = 7 * (n_sra + 1) + 2 if column else 0
        total += table1_cycles(n_sra, n_simd, nodes, layout.pes)[column]
    return total
