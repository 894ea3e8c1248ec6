"""What inference mode saves: each library against itself, in and out of inference mode.

- ``inference_chain``: the eager chain of ``eager.py`` (~1000 small ops on 64-float tensors).
- ``inference_mlp``: a 3-layer MLP forward on cpu float32, batch 8, 64 wide
  (``relu(x @ W1 + b1)``, ``relu(. @ W2 + b2)``, ``. @ W3 + b3``), 100 forwards per sample.

Normal mode is plain tensors (no ``requires_grad``) outside any context; inference mode is
``sk.inference_mode()`` / ``torch.inference_mode()`` with every input (x and the weights) made
inside it, so every tensor involved is an inference tensor. The two are timed interleaved
(normal, inference, inference, normal, ...) in the same process: each gives a median, and the
ratio is the median of the per-round ratios.

Each case prints two rows: ``<case>`` (us per op / per forward in inference mode, sk vs torch)
and ``<case>_ratio``, whose subclass_kit and torch columns are each library's
inference/normal ratio and whose ratio column is subclass_kit's own ratio, the target (sk
inference/normal <= 0.80; torch's ratio is there for reference).
"""

from __future__ import annotations

import statistics

import numpy as np
from eager import N_OPS, _check, _inputs, chain
from harness import (SK, TORCH, Case, OwnRatio, Result, Skip, import_torch, interleaved_samples,
                     round_ratio)

TARGET = 0.80
DEFAULT_REPEATS = 25

WIDTH, BATCH, LAYERS = 64, 8, 3
MLP_CALLS = 100          # forwards per timed sample


def _sk():
    try:
        import subclass_kit as sk
    except ImportError as e:
        raise Skip(f"subclass_kit not importable ({e})") from None
    if not hasattr(sk, "inference_mode"):
        raise Skip("sk.inference_mode does not exist yet")
    return sk


def _time_library(lib, inference_mode, make_inputs, run, check, repeats, scale):
    """(normal, inference) medians times ``scale`` and the inference/normal ratio, for one
    library. ``make_inputs(lib)`` builds
    the inputs (called inside inference mode for the inference run), ``run(*inputs)`` is one
    sample, ``check(out, inference)`` validates one result against numpy."""
    normal_in = make_inputs(lib)
    with inference_mode():
        inf_in = make_inputs(lib)
    if not all(t.is_inference() for t in inf_in):
        raise AssertionError("inputs made inside inference mode are not inference tensors")
    try:
        check(run(*normal_in), False)
        with inference_mode():
            check(run(*inf_in), True)
    except (AttributeError, NotImplementedError) as e:
        raise Skip(f"missing piece: {type(e).__name__}: {e}") from None

    def inference():
        with inference_mode():
            run(*inf_in)

    samples = interleaved_samples({"normal": lambda: run(*normal_in), "inference": inference},
                                  repeats)
    normal, inf = samples["normal"], samples["inference"]
    return (statistics.median(normal) * scale, statistics.median(inf) * scale,
            round_ratio(inf, normal))


def _rows(name, unit, per_lib: dict, what: str) -> list:
    """The ``name`` row (inference-mode figures) and the ``name_ratio`` row from
    ``per_lib[impl] = thunk -> (normal, inference)``."""
    timed = Result(name, unit)
    ratio = OwnRatio(f"{name}_ratio", "inf/normal", target=TARGET)
    normal = {}
    for impl, thunk in per_lib.items():
        try:
            n, i, r = thunk()
        except (Skip, ImportError) as e:
            timed.notes.append(f"{impl}: skipped: {e}")
            ratio.notes.append(f"{impl}: skipped: {e}")
            continue
        normal[impl] = n
        timed.values[impl] = i
        ratio.values[impl] = r
    timed.notes.append(f"{what} in inference mode, all inputs inference tensors; normal mode: "
                       + ", ".join(f"{impl} {v:.3g}" for impl, v in normal.items()) + f" {unit}")
    ratio.notes.append("columns = each library's inference/normal time (median of per-round "
                       "ratios); ratio column = subclass_kit's (the target), torch's is for "
                       "reference")
    return [timed, ratio]


def inference_chain(repeats=None) -> list:
    repeats = repeats or DEFAULT_REPEATS
    xn, wn = _inputs()

    def check(s, inference):
        _check(s, xn, wn)
        if s.is_inference() != inference:
            raise AssertionError(f"chain result is_inference() = {s.is_inference()}")

    def sk_pair():
        sk = _sk()
        return _time_library(sk, sk.inference_mode, lambda sk: (sk.tensor(xn), sk.tensor(wn)),
                             chain, check, repeats, 1e6 / N_OPS)

    def torch_pair():
        torch = import_torch()
        return _time_library(torch, torch.inference_mode,
                             lambda torch: (torch.tensor(xn), torch.tensor(wn)),
                             chain, check, repeats, 1e6 / N_OPS)

    return _rows("inference_chain", "us/op", {SK: sk_pair, TORCH: torch_pair},
                 f"the eager chain ({N_OPS} ops)")


def _mlp_params():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    params = []
    for _ in range(LAYERS):
        params.append((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32))
        params.append((rng.standard_normal(WIDTH) * 0.1).astype(np.float32))
    return [x, *params]


def mlp(x, w1, b1, w2, b2, w3, b3):
    """The forward for sk and torch tensors (and numpy arrays, with ``relu`` spelled apart)."""
    h = (x @ w1 + b1).relu()
    h = (h @ w2 + b2).relu()
    return h @ w3 + b3


def mlp_numpy(x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    return h @ w3 + b3


def _mlp_loop(*inputs):
    for _ in range(MLP_CALLS):
        out = mlp(*inputs)
    return out


def inference_mlp(repeats=None) -> list:
    repeats = repeats or DEFAULT_REPEATS
    arrays = _mlp_params()
    expected = mlp_numpy(*arrays)

    def check(out, inference):
        got = np.array(out.tolist(), dtype=np.float32)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        if out.is_inference() != inference:
            raise AssertionError(f"MLP output is_inference() = {out.is_inference()}")

    def sk_pair():
        sk = _sk()
        return _time_library(sk, sk.inference_mode, lambda sk: [sk.tensor(a) for a in arrays],
                             _mlp_loop, check, repeats, 1e6 / MLP_CALLS)

    def torch_pair():
        torch = import_torch()
        return _time_library(torch, torch.inference_mode,
                             lambda torch: [torch.tensor(a) for a in arrays],
                             _mlp_loop, check, repeats, 1e6 / MLP_CALLS)

    return _rows("inference_mlp", "us/fwd", {SK: sk_pair, TORCH: torch_pair},
                 f"{LAYERS}-layer MLP forward (batch {BATCH}, width {WIDTH}, float32)")


CASES = [
    Case("inference_chain", inference_chain,
         "the eager chain in inference mode vs normal: each library's inference/normal ratio"),
    Case("inference_mlp", inference_mlp,
         f"{LAYERS}-layer MLP forward ({BATCH}x{WIDTH}) in inference mode vs normal: ratios"),
]
