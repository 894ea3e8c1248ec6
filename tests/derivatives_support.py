"""Shared machinery of the derivative-table oracle tests (tests/test_derivatives_*_oracle.py).

``check_formula(op, sample, torch)`` runs one op sample in float64 through subclass_kit and
through ``torch.ops.aten``, draws one random output gradient per differentiable output, and
compares ``formulas.apply_formula``'s input gradients with ``torch.autograd.grad``'s (values
with rtol 1e-7, sizes, dtypes) and the formula's node name with torch's ``grad_fn.name()``. No
autograd engine is needed: the formula runs once, outside any graph.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
from samples import T, build, entry_for, qualified

import subclass_kit as sk
from subclass_kit.modes.autograd import formulas

RTOL, ATOL = 1e-7, 1e-10
FLOATS = ("float16", "float32", "float64")


def to_float64(obj):
    """A sample argument with every floating tensor spec turned float64 (values are multiples
    of 1/8, exact in every float dtype, so the sample keeps its values)."""
    if isinstance(obj, T):
        return dataclasses.replace(obj, dtype="float64") if obj.dtype in FLOATS else obj
    if isinstance(obj, list):
        return [to_float64(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_float64(o) for o in obj)
    return obj


def float64_sample(sample):
    return dataclasses.replace(sample, args=tuple(to_float64(a) for a in sample.args),
                               kwargs={k: to_float64(v) for k, v in sample.kwargs.items()})


def _has_float(obj) -> bool:
    if isinstance(obj, T):
        return obj.dtype in FLOATS
    if isinstance(obj, (list, tuple)):
        return any(_has_float(o) for o in obj)
    return False


def native_samples(op):
    """The op's table samples that take a floating tensor, in their own dtypes (float16/32:
    the formulas compute in the saved tensors' dtype, as PyTorch's do)."""
    entry = entry_for(op)
    if entry is None or entry.random:
        return []
    return [s for s in entry.samples
            if s.values and (_has_float(s.args) or _has_float(tuple(s.kwargs.values())))
            and s != float64_sample(s)]


def samples_of(op, extra=()):
    """The op's table samples that take a floating tensor, in float64, plus ``extra``."""
    entry = entry_for(op)
    out = []
    if entry is not None and not entry.random:
        for s in entry.samples:
            if s.values and (_has_float(s.args) or _has_float(tuple(s.kwargs.values()))):
                out.append(float64_sample(s))
    return out + list(extra)


def _flat(result) -> list:
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def _leaves(torch, args, kwargs):
    """torch arguments with every floating tensor replaced by a leaf requiring grad (``detach``
    keeps sizes, strides and offset)."""
    def conv(v):
        if isinstance(v, torch.Tensor):
            return v.detach().requires_grad_(True) if v.is_floating_point() else v
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        return v
    return tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}


def _grad_values(shape, seed):
    rng = np.random.default_rng(seed)
    return np.round(rng.uniform(-2, 2, shape) * 8) / 8


def check_formula(op, sample, torch, seed=0, rtol=RTOL, atol=ATOL):
    """Compare ``op``'s formula with torch on ``sample``; returns a list of problem strings."""
    key = f"{op.name}.{op.overload}"
    formula = formulas.FORMULAS[key]
    args, kwargs, _ = build(sample, "sk", op=op)
    targs, tkwargs, _ = build(sample, "torch", op=op)
    targs, tkwargs = _leaves(torch, targs, tkwargs)
    tfn = getattr(getattr(torch.ops.aten, op.name), op.overload)
    results = _flat(op(*args, **kwargs))
    touts = _flat(tfn(*targs, **tkwargs))
    problems = []
    grads, tgrad_outs, touts_used = [], [], []
    for i, (r, t) in enumerate(zip(results, touts)):
        if r is None or t is None:      # an output the op did not compute (undefined in torch)
            if (r is None) != (t is None):
                problems.append(f"{key}{sample!r}: output {i} is {r!r}, torch's {t!r}")
            grads.append(None)
            continue
        if not (r.dtype.is_floating_point and t.requires_grad):
            grads.append(None)
            continue
        g = _grad_values(tuple(r.shape), seed + i)
        grads.append(sk.tensor(g, dtype=r.dtype))
        tgrad_outs.append(torch.tensor(g, dtype=t.dtype))
        touts_used.append(t)
    if not touts_used:
        # no outputs at all (unbind of an empty dim), or none computed (an all-False mask)
        if all(t is None for t in touts):
            return problems
        return [f"{key}{sample!r}: torch output does not require grad"]
    name = touts_used[0].grad_fn.name()
    if name != formula.node:
        problems.append(f"{key}: node {formula.node!r}, torch {name!r}")
    bound_sk = formulas.bind(op, args, kwargs)
    bound_t = formulas.bind(op, targs, tkwargs)
    pairs = []                  # (label, our tensor or None, torch leaf)
    ours = formulas.apply_formula(op, args, kwargs, tuple(results), grads, validate=False)
    for name_, g in zip(formula.inputs, ours):
        tv = bound_t[name_]
        if isinstance(tv, (list, tuple)):
            gs = g if g is not None else [None] * len(tv)
            pairs += [(f"{name_}[{j}]", gj, tj) for j, (gj, tj) in enumerate(zip(gs, tv))]
        else:
            pairs.append((name_, g, tv))
    leaves = [t for _, _, t in pairs if hasattr(t, "requires_grad") and t.requires_grad]
    try:
        tgrads = torch.autograd.grad(touts_used, leaves, tgrad_outs, allow_unused=True) \
            if leaves else ()
    except RuntimeError as e:
        # torch's own formula returns a gradient of the wrong shape (scatter with a larger
        # src): its engine's validate_outputs raises. Ours must return that same shape, so our
        # engine raises the same error.
        m = re.search(r"returned an invalid gradient at index \d+ - got \[([\d, ]*)\]", str(e))
        if m is None:
            # torch's own backward cannot run on this sample (the double backward of
            # embedding_dense_backward with no indices: an ambiguous view): nothing to compare.
            return problems
        got = tuple(int(v) for v in m.group(1).split(",") if v.strip())
        raw = formulas.FORMULAS[key].fn(formulas.make_context(
            formula, op, args, kwargs, tuple(results), (True,) * len(formula.inputs)), *grads)
        raw = raw if isinstance(raw, tuple) else (raw,)
        if not any(g is not None and tuple(g.shape) == got for g in raw):
            problems.append(f"{key}{sample!r}: torch's formula gives a {got} gradient, ours "
                            f"{[None if g is None else tuple(g.shape) for g in raw]}")
        return problems
    tmap = {id(t): g for t, g in zip(leaves, tgrads)}
    for label, g, tv in pairs:
        if not (hasattr(tv, "requires_grad") and tv.requires_grad):
            continue
        tg = tmap.get(id(tv))
        if g is None and tg is None:
            continue
        if g is None:
            if tg.detach().abs().sum().item() != 0:
                problems.append(f"{key}{sample!r}: no gradient for {label}, torch has one")
            continue
        if tuple(g.shape) != tuple(tv.shape) or g.dtype.name != str(tv.dtype).split(".")[-1]:
            problems.append(f"{key}{sample!r}: {label} grad {tuple(g.shape)} {g.dtype}, "
                            f"input {tuple(tv.shape)} {tv.dtype}")
            continue
        want = np.zeros(tuple(tv.shape)) if tg is None else tg.detach().numpy()
        got = g.numpy()
        if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            problems.append(f"{key}{sample!r}: {label} grad differs:\nours  {got}\ntorch {want}")
    return problems


def finite_difference(op, args, kwargs, name, grads, eps=1e-6):
    """Central differences of ``sum(out_i * grads_i)`` w.r.t. argument ``name`` (float64)."""
    bound = formulas.bind(op, args, kwargs)
    x = bound[name]
    base = x.numpy().copy()
    num = np.zeros_like(base)
    names = [a.name for a in op.schema.arguments]
    pos = names.index(name)

    def loss(arr):
        xt = sk.tensor(arr, dtype=x.dtype)
        a = list(args)
        kw = dict(kwargs)
        if pos < len(a):
            a[pos] = xt
        else:
            kw[name] = xt
        outs = _flat(op(*a, **kw))
        return sum(float((o.numpy() * g.numpy()).sum()) for o, g in zip(outs, grads)
                   if g is not None)
    it = np.nditer(base, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        plus, minus = base.copy(), base.copy()
        plus[idx] += eps
        minus[idx] -= eps
        num[idx] = (loss(plus) - loss(minus)) / (2 * eps)
    return num


def uncovered(bases) -> list:
    """Functional, non-composite overloads of the ops named in ``bases`` with neither a formula
    nor a non-differentiable mark (in-place overloads with no functional variant count too)."""
    missing = []
    for op in sk.ops:
        if op.name not in bases or op.decomposition is not None or op.is_out:
            continue
        if op.is_inplace and op.functional_variant is not None:
            continue
        key = f"{op.name}.{op.overload}"
        if key not in formulas.FORMULAS and key not in formulas.NON_DIFFERENTIABLE:
            missing.append(key)
    return missing


def check_meta(op, sample):
    """The formula on meta twins of ``sample``: gradients with the cpu gradients' sizes and
    dtypes and no data (what sizing training memory needs). Returns problem strings."""
    key = f"{op.name}.{op.overload}"
    grads_by_device = {}
    for device in ("cpu", "meta"):
        args, kwargs, _ = build(sample, "sk", device, op=op)
        results = _flat(op(*args, **kwargs))
        grads = [sk.ones_like(r) if r is not None and r.dtype.is_floating_point else None
                 for r in results]
        grads_by_device[device] = formulas.apply_formula(op, args, kwargs, tuple(results),
                                                         grads, validate=False)
    problems = []
    for c, m in zip(grads_by_device["cpu"], grads_by_device["meta"]):
        cs = c if isinstance(c, list) else [c]
        ms = m if isinstance(m, list) else [m]
        for ci, mi in zip(cs, ms):
            if (ci is None) != (mi is None):
                problems.append(f"{key}{sample!r}: cpu grad {ci is None}, meta {mi is None}")
            elif ci is not None and (tuple(ci.shape) != tuple(mi.shape) or ci.dtype != mi.dtype
                                     or not mi.is_meta):
                problems.append(f"{key}{sample!r}: meta grad {tuple(mi.shape)} {mi.dtype} "
                                f"{mi.device}, cpu {tuple(ci.shape)} {ci.dtype}")
    return problems


def meta_problems(op, samples, data_dependent=False):
    """``check_meta`` over the samples that run on meta. ``data_dependent``: the backward reads
    values through a boolean mask (masked_scatter's source, index_put's values), so on meta it
    may raise NotImplementedError as PyTorch's meta ``nonzero`` does."""
    problems = []
    for s in samples:
        if s.meta is not True:
            continue
        try:
            problems += check_meta(op, s)
        except NotImplementedError as e:
            if not (data_dependent and "nonzero" in str(e)):
                problems.append(f"{op}{s!r}: {e}")
    return problems


def expanded_grad_problems(op, samples):
    """The engine hands formulas gradients of any layout (``sum``'s backward gives an expanded
    one): an expanded 0-stride gradient must give what the same values laid out contiguously
    give."""
    key = f"{op.name}.{op.overload}"
    problems = []
    for s in samples:
        args, kwargs, _ = build(s, "sk", op=op)
        results = _flat(op(*args, **kwargs))
        out = []
        for expanded in (False, True):
            grads = []
            for r in results:
                if r is None or not r.dtype.is_floating_point:
                    grads.append(None)
                elif expanded:
                    grads.append(sk.scalar_tensor(0.625, dtype=r.dtype).expand(list(r.shape)))
                else:
                    grads.append(sk.full(list(r.shape), 0.625, dtype=r.dtype))
            flat = []
            for g in formulas.apply_formula(op, args, kwargs, tuple(results), grads,
                                            validate=False):
                flat += g if isinstance(g, list) else [g]
            out.append(flat)
        for a, b in zip(*out):
            if (a is None) != (b is None) or (a is not None and not np.array_equal(
                    a.numpy(), b.numpy(), equal_nan=True)):
                problems.append(f"{key}{s!r}: expanded grad gives another gradient")
    return problems


class _OpRecorder(sk.DispatchMode):
    """Records every op a formula runs (composites arrive as the primitives they lower to)."""

    def __init__(self):
        self.seen = set()

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.add(func)
        return func(*args, **(kwargs or {}))


def ops_run_by_formula(op, samples) -> set:
    """The ops ``op``'s formula runs over ``samples`` (its backward's op stream)."""
    rec = _OpRecorder()
    for s in samples:
        args, kwargs, _ = build(s, "sk", op=op)
        results = _flat(op(*args, **kwargs))
        grads = [sk.ones_like(r) if r is not None and r.dtype.is_floating_point else None
                 for r in results]
        if all(g is None for g in grads):       # an integral result: nothing to differentiate
            continue
        formula = formulas.FORMULAS[qualified(op)]
        if formula.node == "torch::autograd::NotImplemented" or getattr(
                formula.fn, "not_implemented", False):
            continue                            # its backward raises, as PyTorch's
        with rec:
            try:
                formulas.apply_formula(op, args, kwargs, tuple(results), grads, validate=False)
            except RuntimeError as e:   # PyTorch's formula raises too (test_gradients_match_torch)
                if "can't be cast to the desired output type" not in str(e):
                    raise
    return rec.seen
