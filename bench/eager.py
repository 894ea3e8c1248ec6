"""Eager overhead: a chain of ~1000 small ops on 64-float tensors.

Per-op dispatch cost dominates at this size, so this measures the Python dispatch path
(OpOverload.__call__, rules, version bumps) against torch eager's C++ path and raw numpy.
One step is 10 ops: add, mul, view, transpose, sum(dim, keepdim), broadcasting mul, reshape
(a copy: the input is transposed), add_, mul_, sum. Target: sk <= 3x torch.

To add a variant (under a mode, a wrapper subclass, inference_mode, the debug-assert mode):
append a Case whose function calls ``chain_case`` with a context factory for sk and for torch.
"""

from __future__ import annotations

import contextlib

import numpy as np
from harness import NUMPY, SK, TORCH, Case, Result, Skip, import_torch, measure, median_seconds

STEPS = 100
OPS_PER_STEP = 10
N_OPS = STEPS * OPS_PER_STEP
DEFAULT_REPEATS = 21


def chain(x, w):
    """The op chain for sk and torch tensors (same method names)."""
    for _ in range(STEPS):
        a = x + w                         # add
        b = a * w                         # mul
        c = b.view(4, 16)                 # view
        d = c.transpose(0, 1)             # transpose -> (16, 4), non-contiguous
        e = d.sum(1, keepdim=True)        # sum(dim, keepdim) -> (16, 1)
        f = d * e                         # broadcasting mul -> (16, 4)
        g = f.reshape(8, 8)               # reshape (copy)
        g.add_(x)                         # add_
        g.mul_(0.5)                       # mul_
        s = g.sum()                       # sum
    return s


def chain_numpy(x, w):
    """The same chain on numpy arrays (numpy spells a few ops differently)."""
    for _ in range(STEPS):
        a = x + w
        b = a * w
        c = b.reshape(4, 16)
        d = c.transpose(1, 0)
        e = d.sum(1, keepdims=True)
        f = d * e
        g = f.reshape(8, 8)
        g += x
        g *= 0.5
        s = g.sum()
    return s


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((8, 8)).astype(np.float32),
            rng.uniform(0.5, 1.0, (8, 8)).astype(np.float32))


def _check(s, xn, wn):
    """The chain must compute the same value as numpy (a benchmark of wrong code is moot)."""
    expected = float(chain_numpy(xn.copy(), wn.copy()))
    np.testing.assert_allclose(float(s.item()), expected, rtol=1e-4)


def _us_per_op(fn, repeats):
    return median_seconds(fn, repeats) / N_OPS * 1e6


def chain_case(name: str, repeats, sk_context=contextlib.nullcontext,
               torch_context=contextlib.nullcontext, with_numpy=True, target=3.0) -> list:
    """Time the chain for sk and torch (each inside its context factory) and numpy."""
    repeats = repeats or DEFAULT_REPEATS
    xn, wn = _inputs()
    result = Result(name, "us/op", target=target)

    def run_sk():
        try:
            import subclass_kit as sk
        except ImportError as e:
            raise Skip(f"subclass_kit not importable ({e})") from None
        x, w = sk.tensor(xn), sk.tensor(wn)
        with sk_context():
            try:
                _check(chain(x, w), xn, wn)
            except (AttributeError, NotImplementedError) as e:
                raise Skip(f"missing piece: {type(e).__name__}: {e}") from None
            return _us_per_op(lambda: chain(x, w), repeats)

    def run_torch():
        torch = import_torch()
        x, w = torch.from_numpy(xn.copy()), torch.from_numpy(wn.copy())
        with torch_context():
            _check(chain(x, w), xn, wn)
            return _us_per_op(lambda: chain(x, w), repeats)

    measure(result, SK, run_sk)
    measure(result, TORCH, run_torch)
    if with_numpy:
        measure(result, NUMPY, lambda: _us_per_op(lambda: chain_numpy(xn, wn), repeats))
    return [result]


def eager_chain(repeats=None) -> list:
    return chain_case("eager_chain", repeats)


def _sk_noop_mode():
    import subclass_kit as sk

    class NoOpMode(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return NoOpMode()


def _torch_noop_mode():
    import_torch()
    from torch.utils._python_dispatch import TorchDispatchMode

    class NoOpMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return NoOpMode()


def eager_chain_noop_mode(repeats=None) -> list:
    """The chain under a DispatchMode that forwards every op (mode overhead)."""
    return chain_case("eager_chain_noop_mode", repeats, _sk_noop_mode, _torch_noop_mode,
                      with_numpy=False, target=None)


CASES = [
    Case("eager_chain", eager_chain, "~1000 small ops on 64 floats: us/op, sk vs torch vs numpy"),
    Case("eager_chain_noop_mode", eager_chain_noop_mode,
         "the same chain under a no-op DispatchMode / TorchDispatchMode"),
]
