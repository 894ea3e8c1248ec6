"""Every op with a derivative formula, on its samples (tests/samples.py) made float64 and
requiring grad: gradients compared with torch's for the same weighted sum of the outputs, and
(for small inputs) checked by ``sk.autograd.gradcheck``. New formulas are picked up as they are
registered."""

import dataclasses

import numpy as np
import pytest
from samples import T, build, entry_for

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

sk.autograd.install()
FORMULAS = sk.autograd.formulas.FORMULAS
MAX_SAMPLES = 3


def _f64(obj):
    if isinstance(obj, T):
        if obj.dtype in ("float32", "float16"):
            return dataclasses.replace(obj, dtype="float64")
        return obj
    if isinstance(obj, list):
        return [_f64(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_f64(o) for o in obj)
    return obj


def _cases():
    out = []
    for op in sk.ops:
        key = f"{op.name}.{op.overload}"
        if key not in FORMULAS or op.is_mutable:
            continue
        entry = entry_for(op)
        if entry is None or entry.random:
            continue
        samples = [s for s in entry.samples if s.values][:MAX_SAMPLES]
        for i, s in enumerate(samples):
            out.append(pytest.param(op, s, id=f"{key}-{i}"))
    return out


def _outputs(out):
    if isinstance(out, (list, tuple)):
        return [o for o in out if hasattr(o, "dtype") and o.dtype.is_floating_point]
    return [out] if out.dtype.is_floating_point else []


def _run(lib, op, sample):
    s = dataclasses.replace(sample, args=_f64(sample.args),
                            kwargs={k: _f64(v) for k, v in sample.kwargs.items()})
    args, kwargs, built = build(s, lib)
    leaves = [t for t in built.tensors if t.dtype.is_floating_point]
    if not leaves:
        pytest.skip("no floating-point input")
    for t in leaves:
        t.requires_grad_()
    fn = op if lib == "sk" else getattr(torch.ops.aten, op.name).__getattr__(op.overload)
    try:
        outs = _outputs(fn(*args, **kwargs))
    except RuntimeError as e:
        if lib != "torch":
            raise
        pytest.skip(f"torch: {e}")      # e.g. fill.Tensor with an integer value
    if not outs or not any(o.requires_grad for o in outs):
        pytest.skip("no differentiable output")
    rng = np.random.default_rng(0)
    L = sk if lib == "sk" else torch
    total = None
    for o in outs:
        w = L.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype)
        term = (o * w).sum()
        total = term if total is None else total + term
    try:
        grads = L.autograd.grad(total, leaves, allow_unused=True)
    except RuntimeError as e:
        if lib == "torch" and "not implemented" in str(e):
            pytest.skip(f"torch: {e}")
        raise
    return [None if g is None else np.asarray(g.tolist(), dtype=float) for g in grads], \
        (args, kwargs, leaves)


@pytest.mark.parametrize("op, sample", _cases())
def test_formula_matches_torch_and_gradcheck(op, sample):
    theirs, _ = _run("torch", op, sample)
    ours, (args, kwargs, leaves) = _run("sk", op, sample)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if a is None or b is None:
            assert a is None or not a.any(), "gradient where torch has none"
            continue
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
    overlapping = any(st == 0 and n > 1 for t in leaves for n, st in zip(t.shape, t.stride()))
    if sum(t.numel() for t in leaves) <= 24 and not overlapping:
        positions = {id(t): i for i, t in enumerate(args)}
        if all(id(t) in positions for t in leaves):
            def fn(*xs):
                call = list(args)
                for t, x in zip(leaves, xs):
                    call[positions[id(t)]] = x
                outs = _outputs(op(*call, **kwargs))
                return tuple(outs)
            assert sk.autograd.gradcheck(fn, tuple(leaves))
