"""Autograd benchmarks (issue 13's acceptance list), subclass_kit next to torch and numpy:

- ``autograd_mlp_train``: one SGD step of an MLP 784-256-256-10 (tanh, batch 64, cross-entropy);
  skipped while the derivative table lacks the loss's formulas;
- ``autograd_tiny_mlp``: the same step for 16-16-16-1, batch 4, mean-squared error. A sample is
  one step (timed after an untimed one); the three libraries' samples are taken in rounds (one
  of each per round), each column is a median of its samples and the sk/torch column the
  median of the per-round ratios;
- ``autograd_paper_views``: the paper's program (clone, ``mul_`` on each of N ``select`` views,
  ``sum().backward()``) at N = 1000 and 4000, and the growth exponent between them (target
  <= 1.1: linear, no O(N^2) rebase of views);
- ``autograd_forward_modes``: a 3-layer MLP forward whose weights require grad, in normal
  mode, ``no_grad`` and ``inference_mode``: ``inference_mlp``'s MLP (batch 8, 64 wide), the
  model of issue 4's inference/normal target, ten forwards per sample, the context entered once
  around them (targets: inference <= 0.8x normal, and <= no_grad in the ``_vs_no_grad`` row;
  torch's ratios are beside ours for reference, and the numpy forward's time over normal
  mode's and no_grad's, the floor no inference path on numpy can go below);
- ``autograd_forward_modes_256`` (an MLP 256-256-256-10, batch 64, whose matmuls are most of
  the forward) and ``autograd_forward_modes_tiny`` (16-16-16-1, batch 4, the context entered
  around each forward as a serving loop does): the same ratios, reported.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
from harness import (NUMPY, SK, TORCH, Case, OwnRatio, Result, Skip, import_torch,
                     interleaved_samples, round_ratio)


def _libs(notes=None):
    """subclass_kit and, when installed, torch (single-threaded); torch's absence is appended
    to ``notes`` when given."""
    import subclass_kit as sk
    libs = {SK: sk}
    try:
        libs[TORCH] = import_torch()
    except Skip as e:
        if notes is not None:
            notes.append(f"{TORCH}: skipped: {e}")
    return libs


def _params(L, sizes, rng):
    out = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        w = rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)
        out.append(L.tensor(w.astype(np.float32), requires_grad=True))
        out.append(L.tensor(np.zeros(fan_out, np.float32), requires_grad=True))
    return out


def _forward(L, params, x):
    h = x
    for i in range(0, len(params), 2):
        h = L.addmm(params[i + 1], h, params[i])
        if i + 2 < len(params):
            h = h.tanh()
    return h


def _step(L, params, x, loss_fn, lr=0.01):
    loss = loss_fn(L, _forward(L, params, x))
    loss.backward()
    with L.no_grad():
        for p in params:
            p.sub_(p.grad * lr)
            p.grad = None
    return loss


def _train_case(name, sizes, batch, loss_fn, np_step, target, repeats):
    """One row: each library's median us per SGD step, the step of each library timed once per
    round (``interleaved_samples``, each timed step right after an untimed one of the same
    library: a step of a training loop, not one just after another library's), and sk/torch
    as the median of the per-round ratios, so a drift of the machine between libraries does not
    land in the ratio. A library whose step fails (a missing formula or op) becomes a note."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    r = Result(name, "us/step", target=target)
    steps = {}
    for impl, L in _libs(r.notes).items():
        params = _params(L, sizes, np.random.default_rng(1))
        x = L.tensor(data)

        def run(L=L, params=params, x=x):
            _step(L, params, x, loss_fn)
        try:
            run()
        except (RuntimeError, AttributeError) as e:
            r.notes.append(f"{impl}: skipped: {e}")
            continue
        steps[impl] = run
    steps[NUMPY] = np_step(sizes, data)
    samples = interleaved_samples(steps, repeats, rewarm=1)
    for impl, s in samples.items():
        r.values[impl] = statistics.median(s) * 1e6
    if SK in samples and TORCH in samples:
        r.paired_ratio = round_ratio(samples[SK], samples[TORCH])
        r.notes.append(f"sk/torch = median of per-round ratios ({repeats} rounds); ratio of the "
                       f"medians {r.values[SK] / r.values[TORCH]:.2f}")
    return [r]


def _mse(L, out):
    return (out * out).mean()


def _cross_entropy(L, out):
    # cross-entropy against class 0: -log_softmax(out)[:, 0].mean() (sk.nn.functional has no
    # cross_entropy yet; the same program runs on torch)
    return -(out.log_softmax(1).select(1, 0).mean())


def _np_activations(h, weights, biases) -> list:
    """The MLP on numpy arrays: the input, then each layer's output (matmul, the bias added in
    place, tanh between layers)."""
    hs = [h]
    for i, (w, b) in enumerate(zip(weights, biases)):
        z = np.matmul(hs[-1], w)
        z += b
        hs.append(np.tanh(z) if i + 1 < len(weights) else z)
    return hs


def _np_step(sizes, data, ce=False):
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal((a, b)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]
    bs = [np.zeros(b, np.float32) for b in sizes[1:]]

    def step():
        hs = _np_activations(data, ws, bs)
        out = hs[-1]
        if ce:
            e = np.exp(out - out.max(1, keepdims=True))
            g = e / e.sum(1, keepdims=True)
            g[:, 0] -= 1
            g /= len(out)
        else:
            g = 2 * out / out.size
        for i in range(len(ws) - 1, -1, -1):
            gw, gb = hs[i].T @ g, g.sum(0)
            if i:
                g = (g @ ws[i].T) * (1 - hs[i] * hs[i])
            ws[i] -= 0.01 * gw
            bs[i] -= 0.01 * gb
    return step


def autograd_mlp_train(repeats=None) -> list:
    return _train_case("autograd_mlp_train", [784, 256, 256, 10], 64, _cross_entropy,
                       lambda s, d: _np_step(s, d, ce=True), 1.5, repeats or 30)


def autograd_tiny_mlp(repeats=None) -> list:
    return _train_case("autograd_tiny_mlp", [16, 16, 16, 1], 4, _mse, _np_step, 2.5,
                       repeats or 100)


def _paper(L, n):
    a = L.ones(n, 3, requires_grad=True)

    def run():
        b = a.clone()
        for i in range(n):
            b[i].mul_(2.0)
        b.sum().backward()
        a.grad = None
    return run


def autograd_paper_views(repeats=None) -> list:
    """Each library's time at N = 1000 and 4000, and the growth exponent log4(t4000 / t1000).
    The two sizes are sampled in alternating rounds and the exponent comes from the median of
    the per-round ratios, so a drift of the machine between the sizes does not bend it."""
    repeats = repeats or 7
    sizes = (1000, 4000)
    rows = {n: Result(f"autograd_paper_views_{n}", "ms") for n in sizes}
    growth = OwnRatio("autograd_paper_views_growth", "exponent", target=1.1)
    for impl, L in _libs().items():
        samples = interleaved_samples({n: _paper(L, n) for n in sizes}, repeats, warmup=1)
        for n in sizes:
            rows[n].values[impl] = statistics.median(samples[n]) * 1e3
        growth.values[impl] = math.log(round_ratio(samples[4000], samples[1000])) / math.log(4)
    growth.notes.append("ratio column = subclass_kit's growth exponent from N=1000 to 4000 "
                        "(median of per-round ratios)")
    return list(rows.values()) + [growth]


# As inference_mlp: a sample is a short run of forwards, not one cold call.
FORWARDS_PER_SAMPLE = 10
# The tiny forward takes tens of us: fifty make a sample of about a millisecond.
TINY_FORWARDS_PER_SAMPLE = 50


def _addmm_mlp(sizes, batch):
    """The training rows' MLP (``_forward``: addmm, tanh between layers) as a forward model:
    ``(make, numpy_forward)``, ``make(L)`` giving one forward of library ``L`` (weights require
    grad) and ``numpy_forward()`` the same forward on numpy arrays (``_np_activations``)."""
    def make(L):
        params = _params(L, sizes, np.random.default_rng(2))
        x = L.tensor(np.random.default_rng(3).standard_normal((batch, sizes[0]))
                     .astype(np.float32))
        return lambda: _forward(L, params, x)

    rng = np.random.default_rng(2)
    weights = [(rng.standard_normal((a, b)) / math.sqrt(a)).astype(np.float32)
               for a, b in zip(sizes, sizes[1:])]
    biases = [np.zeros(b, np.float32) for b in sizes[1:]]
    h0 = np.random.default_rng(3).standard_normal((batch, sizes[0])).astype(np.float32)
    return make, lambda: _np_activations(h0, weights, biases)


def _inference_mlp():
    """``inference_mlp``'s 3-layer MLP (batch 8, 64 wide, ``x @ w + b`` and relu: issue 4's
    model for the same inference/normal target) as a forward model (see ``_addmm_mlp``), its
    weights and biases requiring grad."""
    from inference import _mlp_params, mlp, mlp_numpy
    arrays = _mlp_params()

    def make(L):
        x = L.tensor(arrays[0])
        params = [L.tensor(a, requires_grad=True) for a in arrays[1:]]
        return lambda: mlp(x, *params)
    return make, lambda: mlp_numpy(*arrays)


def _forward_mode_samples(L, forward, forwards, per_forward, repeats, numpy_forward=None):
    """``interleaved_samples`` of ``forwards`` calls of ``forward`` (an MLP forward whose
    weights require grad) in normal mode, under ``L.no_grad()`` and under
    ``L.inference_mode()``. The context is entered once around the run of forwards, or, with
    ``per_forward``, once around each forward (a serving loop's ``with L.inference_mode():
    model(x)``: the entry cost is then part of every forward). ``numpy_forward``: also that
    forward on numpy, as "numpy"."""
    def normal():
        for _ in range(forwards):
            forward()

    def under(context):
        if per_forward:
            def run():
                for _ in range(forwards):
                    with context():
                        forward()
        else:
            def run():
                with context():
                    for _ in range(forwards):
                        forward()
        return run

    fns = {"normal": normal, "no_grad": under(L.no_grad), "inference": under(L.inference_mode)}
    if numpy_forward is not None:
        def numpy():
            for _ in range(forwards):
                numpy_forward()
        fns["numpy"] = numpy
    return interleaved_samples(fns, repeats)


def _forward_modes_rows(name, model, forwards, per_forward, repeats, targets):
    """Two ``OwnRatio`` rows, ``name`` (each library's inference/normal time) and
    ``name_vs_no_grad`` (inference/no_grad), each the median of the per-round ratios, so a
    drift of the machine between rounds moves both sides of a ratio alike; ``targets`` is
    their pair of targets (None: a row that only reports). A sample is ``forwards`` forwards,
    so that what the first forward of a sample pays alone (refilling the caches after the
    collection that starts every sample) is spread as in a real run of forwards. The us per
    forward and the numpy forward's time over normal and no_grad (same rounds) go to the
    notes: the floor of the ratios, since inference mode cannot skip numpy's work."""
    make, numpy_forward = model
    rows = [OwnRatio(name, "inf/normal", target=targets[0]),
            OwnRatio(f"{name}_vs_no_grad", "inf/no_grad", target=targets[1])]
    for impl, L in _libs().items():
        s = _forward_mode_samples(L, make(L), forwards, per_forward, repeats,
                                  numpy_forward if impl == SK else None)
        med = {k: statistics.median(v) * 1e6 / forwards for k, v in s.items()}
        for row, vs in zip(rows, ("normal", "no_grad")):
            row.values[impl] = round_ratio(s["inference"], s[vs])
        rows[0].notes.append(f"{impl} us/forward: "
                             + ", ".join(f"{k} {v:.0f}" for k, v in med.items()))
        if "numpy" in s:
            rows[0].notes.append(
                f"numpy/normal {round_ratio(s['numpy'], s['normal']):.2f}, numpy/no_grad "
                f"{round_ratio(s['numpy'], s['no_grad']):.2f}: the least a forward computed "
                f"by numpy can reach")
    return rows


def autograd_forward_modes(repeats=None) -> list:
    """Issue 13's targets (inference <= 0.8x normal, never slower than no_grad) on
    ``inference_mlp``'s MLP (batch 8, 64 wide), the context entered once around
    ``FORWARDS_PER_SAMPLE`` forwards."""
    return _forward_modes_rows("autograd_forward_modes", _inference_mlp(), FORWARDS_PER_SAMPLE,
                               False, repeats or 300, (0.8, 1.0))


def autograd_forward_modes_256(repeats=None) -> list:
    """The same ratios, reported, on an MLP 256-256-256-10, batch 64: its matmuls are most of
    a forward, so numpy's own forward bounds inference/normal from below (the notes)."""
    return _forward_modes_rows("autograd_forward_modes_256", _addmm_mlp([256, 256, 256, 10], 64),
                               FORWARDS_PER_SAMPLE, False, repeats or 30, (None, None))


def autograd_forward_modes_tiny(repeats=None) -> list:
    """The same ratios, reported, on the MLP 16-16-16-1, batch 4, of ``autograd_tiny_mlp``, the
    context entered around each forward as a serving loop does: entering the mode is then a
    visible share of a forward."""
    return _forward_modes_rows("autograd_forward_modes_tiny", _addmm_mlp([16, 16, 16, 1], 4),
                               TINY_FORWARDS_PER_SAMPLE, True, repeats or 60, (None, None))


CASES = [
    Case("autograd_mlp_train", autograd_mlp_train, "SGD step, MLP 784-256-256-10, batch 64"),
    Case("autograd_tiny_mlp", autograd_tiny_mlp, "SGD step, MLP 16-16-16-1, batch 4"),
    Case("autograd_paper_views", autograd_paper_views,
         "the paper's in-place-on-views program at N=1000, 4000 (growth exponent)"),
    Case("autograd_forward_modes", autograd_forward_modes,
         "MLP 8x64 forward, weights require grad: inference_mode vs normal and no_grad"),
    Case("autograd_forward_modes_256", autograd_forward_modes_256,
         "the same on an MLP 256-256-256-10, batch 64 (reported)"),
    Case("autograd_forward_modes_tiny", autograd_forward_modes_tiny,
         "the same on an MLP 16-16-16-1, the mode entered per forward (reported)"),
]
