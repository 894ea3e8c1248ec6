"""The pointwise rows of the derivative table against torch 2.13's autograd.

For every op with a formula in ``modes/autograd/derivatives/pointwise*.py``: its samples from the
op table (``samples*.py``) with floating tensors made float64, plus broadcasting, Python-number
(PyTorch's Scalar overloads), type-promotion and edge-value cases. Each sample's input gradients
from ``formulas.apply_formula`` (no engine) must equal ``torch.autograd.grad`` of the same
forward (rtol 1e-7 in float64), with the same ``grad_fn`` name (``formulas.node_name``), and the
same error where torch has no derivative. A central finite difference checks a few formulas
independently of torch, and one test fails for any pointwise overload of ``sk.ops`` with neither
a formula nor a non-differentiable mark.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from oracle import numpy_of, values_close
from samples import S, T, build, qualified, table
from test_op_sweep import call_torch, exc_kind

import subclass_kit as sk
import subclass_kit.modes.autograd.derivatives.pointwise  # noqa: F401  (registers formulas)
import subclass_kit.modes.autograd.derivatives.pointwise_binary  # noqa: F401
from subclass_kit.modes.autograd import formulas
from subclass_kit.op_table import (POINTWISE_BACKWARD, POINTWISE_BINARY, POINTWISE_UNARY,
                                   WITH_INPLACE_AND_OUT)

# The autograd engineer's ops in these families (issue 13's split): not covered here.
OTHERS = {"add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "neg.default", "exp.default",
          "tanh.default"}


def _key(schema: str) -> str:
    name = schema.partition("(")[0]
    return name if "." in name else name + ".default"


FAMILY = ({_key(s) for s in POINTWISE_UNARY + POINTWISE_BINARY + POINTWISE_BACKWARD}
          | {_key(s) for s in WITH_INPLACE_AND_OUT
             if s.startswith(("lerp", "addcmul", "addcdiv"))}) - OTHERS
MINE = sorted(k for k in FAMILY if k in formulas.FORMULAS)


def _op(key: str):
    name, _, overload = key.partition(".")
    return getattr(sk.ops, name)._overloads[overload]


# -- extra samples: numbers in Tensor positions, promotion, edges -------------------------------
def _v(shape, values, dtype="float64"):
    return T(shape, dtype, values=values)


X = T((2, 3), "float64", lo=0.25, hi=2.0)
Y = T((3,), "float64", lo=0.25, hi=2.0)
EXTRA = {
    "pow.Tensor_Tensor": [S(X, 2), S(X, 0), S(X, -1.5), S(X, 0.5), S(2, X), S(0, Y),
                          S(-2.0, _v((3,), [-1.0, 0.0, 2.0])),
                          S(_v((4,), [0.0, 0.0, 2.0, -1.0]), _v((4,), [0.0, 2.0, 0.0, 3.0])),
                          S(T((2, 3), "float32", lo=0.5, hi=2.0), Y)],
    "div.Tensor_mode": [S(X, Y, rounding_mode=None), S(X, Y, rounding_mode="floor"),
                        S(X, 2, rounding_mode=None), S(T((3,), "float32"), Y, rounding_mode=None)],
    "remainder.Tensor": [S(X, 2), S(X, Y), S(2, Y)],
    "fmod.Tensor": [S(X, 2), S(X, -Y.hi)],
    "xlogy.Tensor": [S(X, 2), S(X, -1.0), S(2, Y), S(_v((3,), [0.0, 0.0, 1.0]),
                                                     _v((3,), [0.0, -1.0, 2.0]))],
    "maximum.default": [S(_v((4,), [1.0, 2.0, 3.0, 3.0]), _v((4,), [1.0, 3.0, 2.0, 3.0]))],
    "minimum.default": [S(_v((4,), [1.0, 2.0, 3.0, 3.0]), _v((4,), [1.0, 3.0, 2.0, 3.0]))],
    "fmax.default": [S(_v((4,), [1.0, float("nan"), 3.0, 2.0]),
                       _v((4,), [1.0, 2.0, float("nan"), 3.0]))],
    "fmin.default": [S(_v((4,), [1.0, float("nan"), 3.0, 2.0]),
                       _v((4,), [1.0, 2.0, float("nan"), 3.0]))],
    "clamp.default": [S(_v((5,), [-2.0, -1.0, 0.0, 1.0, 2.0]), -1.0, 1.0),
                      S(_v((3,), [-1.0, 0.0, 1.0]), None, 0.0)],
    "clamp.Tensor": [S(_v((4,), [-2.0, 0.0, 1.0, 3.0]), _v((4,), [-1.0, 0.0, 2.0, 2.0]),
                       _v((4,), [1.0, 0.0, 1.5, 1.0])),
                     S(_v((3,), [-2.0, 0.0, 3.0]), _v((1,), [0.0]), None),
                     S(_v((3,), [-2.0, 0.0, 3.0]), None, _v((3,), [0.0, 0.0, 0.0]))],
    "clamp_min.default": [S(_v((3,), [-1.0, 0.0, 1.0]), 0.0)],
    "clamp_min.Tensor": [S(_v((3,), [-1.0, 0.0, 1.0]), _v((3,), [0.0, 0.0, 0.0])), S(X, Y)],
    "clamp_max.default": [S(_v((3,), [-1.0, 0.0, 1.0]), 0.0)],
    "clamp_max.Tensor": [S(_v((3,), [-1.0, 0.0, 1.0]), _v((3,), [0.0, 0.0, 0.0])), S(X, Y)],
    "relu.default": [S(_v((3,), [-1.0, 0.0, 1.0]))],
    "abs.default": [S(_v((3,), [-1.0, 0.0, 1.0]))],
    "gelu.default": [S(X, approximate="tanh"), S(T((2, 3), "float64"), approximate="tanh")],
    "logit.default": [S(T((2, 3), "float64", lo=-0.5, hi=1.5)),
                      S(T((2, 3), "float64", lo=-0.5, hi=1.5), 0.25),
                      S(_v((3,), [0.0, 0.5, 1.0]), 0.0)],
    "sinc.default": [S(_v((3,), [0.0, 0.5, -1.5]))],
    "nan_to_num.default": [S(_v((4,), [float("nan"), float("inf"), -float("inf"), 1.0]))],
    "digamma.default": [S(T((3, 4), "float64", lo=-4.0, hi=8.0)),
                        S(_v((4,), [0.5, 1e-3, -0.25, 30.0]))],
    "lgamma.default": [S(T((3, 4), "float64", lo=-4.0, hi=8.0))],
    "erfinv.default": [S(T((2, 3), "float64", lo=-0.9, hi=0.9))],
    "sqrt.default": [S(X)], "rsqrt.default": [S(X)], "log.default": [S(X)],
    "log2.default": [S(X)], "log10.default": [S(X)], "log1p.default": [S(X)],
    "asin.default": [S(T((2, 3), "float64", lo=-0.9, hi=0.9))],
    "acos.default": [S(T((2, 3), "float64", lo=-0.9, hi=0.9))],
    "atan2.default": [S(X, Y), S(T((3,), "float32"), Y)],
    "hypot.default": [S(X, Y)],
    "logaddexp.default": [S(X, T((3,), "float32"))],
    "where.self": [S(T((2, 3), "bool"), X, 0.0), S(T((3,), "bool"), 1.5, X),
                   S(T((2, 3), "bool"), T((2, 3), "float32"), Y)],
    "masked_fill.Tensor": [S(X, T((3,), "bool"), T((), "float64"))],
    "lerp.Scalar": [S(X, Y, 0.25), S(X, Y, 2)],
    "lerp.Tensor": [S(X, Y, T((2, 1), "float64"))],
    "addcmul.default": [S(X, Y, X, value=0.5), S(Y, X, T((2, 1), "float64"), value=2)],
    "addcdiv.default": [S(X, Y, X, value=0.5), S(Y, X, T((2, 1), "float64", lo=1, hi=2))],
}


def _f64(obj):
    """Floating specs become float64 (the oracle's precision); others are kept."""
    if isinstance(obj, T) and obj.dtype in ("float16", "float32"):
        return dataclasses.replace(obj, dtype="float64")
    if isinstance(obj, (list, tuple)):
        return type(obj)(_f64(o) for o in obj)
    return obj


def _samples(key: str) -> list:
    entry = table().get(key)
    base = [dataclasses.replace(s, args=_f64(s.args),
                                kwargs={k: _f64(v) for k, v in s.kwargs.items()})
            for s in (entry.samples if entry is not None else [])]
    return base + EXTRA.get(key, [])


CASES = [(key, i, s) for key in MINE for i, s in enumerate(_samples(key))]


def _is_float(t) -> bool:
    return hasattr(t, "dtype") and hasattr(t, "is_floating_point") and t.is_floating_point()


def _grad_inputs(op, formula, args, kwargs) -> list:
    """Per formula input: the argument if it is a floating tensor (it requires grad), else None."""
    bound = formulas.bind(op, args, kwargs)
    return [bound.get(n) if _is_float(bound.get(n)) else None for n in formula.inputs]


def _torch_leaves(args, kwargs):
    """Detached leaves requiring grad for every floating torch tensor argument."""
    def leaf(a):
        if _is_float(a):
            return a.detach().requires_grad_(True)
        if isinstance(a, (list, tuple)):
            return type(a)(leaf(x) for x in a)
        return a
    return tuple(leaf(a) for a in args), {k: leaf(v) for k, v in kwargs.items()}


# Ops whose Python API keeps a number in a Tensor position (a wrapped number: ``x.div(2,
# rounding_mode="floor")`` is ``div.Tensor_mode``, DivBackward2), where ``call_torch`` would pick
# the aten Scalar overload.
PYTHON_API = {"div.Tensor_mode": lambda torch: torch.div}

# torch 2.13 bug: addcdiv's backward with an integral tensor2 computes ``value / tensor2`` into
# tensor2's integral dtype and raises; the forward succeeded, so sk's formula answers instead.
TORCH_CAST_BUG = "can't be cast to the desired output type"

# torch's logit_backward kernel answers differently in its vectorized loop (which sk follows)
# and its scalar tail / strided loop at NaN (eps given: 0 vs NaN) and -0.0 (no eps: grad/-0 vs
# grad*inf); those inputs are left out of the grad-mode-off comparison (docs/differences.md).
def _logit_kernel_paths(x: np.ndarray) -> np.ndarray:
    return np.isnan(x) | ((x == 0) & np.signbit(x))


IGNORE = {"logit.default": _logit_kernel_paths}


def _compare(torch, key: str, sample, create_graph: bool = False) -> list:
    op = _op(key)
    formula = formulas.FORMULAS[key]
    args, kwargs, _ = build(sample, "sk")
    targs, tkwargs, _ = build(sample, "torch")
    targs, tkwargs = _torch_leaves(targs, tkwargs)
    out = op(*args, **kwargs)
    if key in PYTHON_API:
        tout = PYTHON_API[key](torch)(*targs, **tkwargs)
    else:
        tout = call_torch(op, targs, tkwargs)
    problems = []
    ours_in = _grad_inputs(op, formula, args, kwargs)
    needs = tuple(t is not None for t in ours_in)
    if not any(needs):   # integer/bool-only sample: nothing requires grad
        return ["torch's output requires grad"] if tout.requires_grad else []
    if not tout.requires_grad:
        return ["torch's output does not require grad"]
    ours_name = formulas.node_name(op, args, kwargs)
    if tout.grad_fn.name() != ours_name:
        problems.append(f"node {ours_name} vs torch {tout.grad_fn.name()}")
    rng = np.random.default_rng(out.numel())
    g = rng.standard_normal(tuple(out.shape))
    grad = sk.tensor(g, dtype=out.dtype)
    tgrad = torch.from_numpy(g).to(tout.dtype)
    theirs_in = _grad_inputs(op, formula, targs, tkwargs)
    wanted = [t for t in theirs_in if t is not None]
    try:
        theirs = list(torch.autograd.grad(tout, wanted, tgrad, allow_unused=True,
                                          create_graph=create_graph))
        t_err = None
    except RuntimeError as e:
        theirs, t_err = None, e
    try:
        # torch.autograd.grad without create_graph runs the formulas with grad mode off
        # (logit's and silu's formulas depend on it, as PyTorch's do)
        with sk.set_grad_enabled(create_graph):
            ours = formulas.apply_formula(op, args, kwargs, (out,), (grad,), needs)
        o_err = None
    except Exception as e:  # noqa: BLE001  (compared with torch's error below)
        ours, o_err = None, e
    if t_err is not None and o_err is None and TORCH_CAST_BUG in str(t_err):
        return problems   # torch 2.13 bug: see TORCH_CAST_BUG
    if t_err is not None or o_err is not None:
        if t_err is None or o_err is None or exc_kind(o_err) != exc_kind(t_err) \
                or str(o_err) != str(t_err):
            problems.append(f"error: ours {o_err!r} vs torch {t_err!r}")
        return problems
    for name, need, mine in zip(formula.inputs, needs, ours):
        if not need:
            if mine is not None:
                problems.append(f"{name}: gradient for an input that needs none")
            continue
        want = theirs.pop(0)
        if want is None:
            # torch's formula left it undefined: ours must be None or zeros.
            if mine is not None and np.any(numpy_of(mine) != 0):
                problems.append(f"{name}: torch gives no gradient, ours is non-zero")
            continue
        if mine is None:
            problems.append(f"{name}: no gradient, torch has one")
            continue
        if want._is_zerotensor():     # torch's efficient zeros (sgn, ...) have no numpy view
            want = torch.zeros(want.shape, dtype=want.dtype)
        want = want.detach()
        if tuple(mine.shape) != tuple(want.shape) or str(mine.dtype) != str(want.dtype).replace(
                "torch.", "sk."):
            problems.append(f"{name}: {mine.dtype}{list(mine.shape)} vs torch "
                            f"{want.dtype}{list(want.shape)}")
            continue
        dtype = str(want.dtype).replace("torch.", "")
        rtol = 1e-7 if dtype == "float64" else 1e-5
        a, b = numpy_of(mine), numpy_of(want)
        if key in IGNORE and not create_graph:
            keep = ~IGNORE[key](numpy_of(formulas.bind(op, args, kwargs)[name]))
            a, b = a[keep], b[keep]
        ok, why = values_close(a, b, dtype, rtol=rtol, atol=1e-12)
        if not ok:
            problems.append(f"{name}: {why}")
    return problems


@pytest.mark.parametrize("key,i,sample", CASES,
                         ids=[f"{k}-{i}" for k, i, _ in CASES])
def test_gradients_match_torch(torch, key, i, sample):
    problems = _compare(torch, key, sample)
    assert not problems, f"{key}{sample!r}: " + "; ".join(problems)


# Formulas that differ with grad mode (PyTorch's ``GradMode::is_enabled() ? ...``), and a few
# others, checked in a create_graph backward too.
GRAPH_KEYS = ("logit.default", "silu.default", "gelu.default", "pow.Tensor_Tensor",
              "gelu_backward.default", "threshold_backward.default", "sigmoid_backward.default",
              "tanh_backward.default",
              "digamma.default", "maximum.default", "clamp.Tensor")
GRAPH_CASES = [c for c in CASES if c[0] in GRAPH_KEYS]


@pytest.mark.parametrize("key,i,sample", GRAPH_CASES,
                         ids=[f"{k}-{i}" for k, i, _ in GRAPH_CASES])
def test_gradients_match_torch_create_graph(torch, key, i, sample):
    problems = _compare(torch, key, sample, create_graph=True)
    assert not problems, f"{key}{sample!r}: " + "; ".join(problems)


# -- finite differences: the formulas against the forward itself --------------------------------
FD = [
    ("digamma.default", S(_v((5,), [0.3, 1.7, 6.5, -0.4, -2.6]))),
    ("lgamma.default", S(_v((3,), [0.3, 2.5, -1.5]))),
    ("gelu.default", S(_v((3,), [-1.2, 0.1, 2.0]), approximate="tanh")),
    ("gelu.default", S(_v((3,), [-1.2, 0.1, 2.0]))),
    ("sinc.default", S(_v((3,), [0.3, -1.7, 2.2]))),
    ("gelu_backward.default", S(_v((3,), [0.7, -0.2, 1.1]), _v((3,), [-1.2, 0.1, 2.0]),
                                approximate="tanh")),
    ("gelu_backward.default", S(_v((3,), [0.7, -0.2, 1.1]), _v((3,), [-1.2, 0.1, 2.0]))),
    ("sigmoid_backward.default", S(_v((3,), [0.7, -0.2, 1.1]), _v((3,), [0.2, 0.5, 0.9]))),
    ("tanh_backward.default", S(_v((3,), [0.7, -0.2, 1.1]), _v((3,), [0.2, -0.5, 0.9]))),
    ("logit.default", S(_v((3,), [0.2, 0.5, 0.9]))),
    ("erfinv.default", S(_v((3,), [-0.7, 0.1, 0.95]))),
    ("pow.Tensor_Tensor", S(_v((3,), [0.5, 1.5, 2.0]), _v((3,), [-1.0, 0.5, 2.5]))),
    ("atan2.default", S(_v((3,), [0.5, -1.5, 2.0]), _v((3,), [-1.0, 0.5, 2.5]))),
    ("logaddexp2.default", S(_v((3,), [0.5, -1.5, 2.0]), _v((3,), [-1.0, 0.5, 2.5]))),
    ("lerp.Tensor", S(_v((3,), [0.5, -1.5, 2.0]), _v((3,), [-1.0, 0.5, 2.5]),
                      _v((3,), [0.2, 0.7, 1.3]))),
    ("addcdiv.default", S(_v((3,), [0.5, -1.5, 2.0]), _v((3,), [-1.0, 0.5, 2.5]),
                          _v((3,), [0.2, 0.7, 1.3]), value=0.5)),
]


@pytest.mark.parametrize("key,sample", FD, ids=[k for k, _ in FD])
def test_finite_differences(key, sample):
    op = _op(key)
    formula = formulas.FORMULAS[key]
    args, kwargs, _ = build(sample, "sk")
    out = op(*args, **kwargs)
    grads = formulas.apply_formula(op, args, kwargs, (out,), (sk.ones_like(out),))
    bound = formulas.bind(op, args, kwargs)
    eps = 1e-6
    for name, g in zip(formula.inputs, grads):
        base = numpy_of(bound[name])
        numeric = np.empty_like(base)
        for j in range(base.size):
            def f(delta):
                moved = base.copy()
                moved.flat[j] += delta
                b2 = dict(bound, **{name: sk.tensor(moved)})
                call = [b2[a.name] for a in op.schema.arguments if not a.kwarg_only]
                kw = {a.name: b2[a.name] for a in op.schema.arguments if a.kwarg_only}
                return numpy_of(op(*call, **kw)).sum()
            numeric.flat[j] = (f(eps) - f(-eps)) / (2 * eps)
        np.testing.assert_allclose(numpy_of(g), numeric, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{key} d/d{name}")


# -- the table covers the family -----------------------------------------------------------------
def test_every_pointwise_overload_has_a_derivative_or_a_mark():
    """Every functional overload of the pointwise families (not composite) has a formula or a
    non-differentiable mark; every in-place overload's functional variant has one (the engine
    maps ``foo_`` to ``foo``)."""
    missing = []
    for op in sk.ops:
        key = qualified(op)
        if op.is_out or op.decomposition is not None:
            continue
        target = op.functional_variant if op.is_inplace else op
        if target is None:
            continue
        tkey = qualified(target)
        if tkey not in FAMILY:
            continue
        if tkey not in formulas.FORMULAS and tkey not in formulas.NON_DIFFERENTIABLE:
            missing.append(key)
    assert not missing, f"pointwise overloads with no derivative entry: {sorted(missing)}"
    assert len(MINE) > 60


def test_node_names_follow_number_positions():
    x = sk.tensor([1.0, 2.0])
    pow_tt = sk.ops.pow.Tensor_Tensor
    assert formulas.node_name(pow_tt, (x, x), {}) == "PowBackward1"
    assert formulas.node_name(pow_tt, (x, 2), {}) == "PowBackward0"
    assert formulas.node_name(pow_tt, (2.0, x), {}) == "PowBackward2"
    assert formulas.node_name(sk.ops.fmod.Tensor, (x, 2), {}) == "FmodBackward0"
    assert formulas.node_name(sk.ops.where.self, (x > 1, x, 0.0), {}) == "WhereBackward0"
    # in-place overloads are named by their functional variant (torch: x.pow_(2) is
    # PowBackward0, x.clamp_(0.1) ClampBackward1)
    pow_ = next(o for o in sk.ops if o.is_inplace and o.functional_variant is pow_tt)
    assert formulas.node_name(pow_, (x, 2), {}) == "PowBackward0"
    assert formulas.node_name(sk.ops.clamp_.default, (x, 0.1), {}) == "ClampBackward1"


# -- meta: formulas need no data (a backward on meta sizes gradients) ---------------------------
def _grads(key, sample, device):
    op = _op(key)
    formula = formulas.FORMULAS[key]
    args, kwargs, _ = build(sample, "sk", device)
    out = op(*args, **kwargs)
    needs = tuple(t is not None for t in _grad_inputs(op, formula, args, kwargs))
    if not any(needs):
        return None
    grad = sk.ones_like(out)
    return formulas.apply_formula(op, args, kwargs, (out,), (grad,), needs)


# (floor_divide and remainder.Scalar_Tensor have no formula in PyTorch either: their
# nodes raise on cpu and meta alike)
META_CASES = [c for c in CASES if c[2].meta is True and c[0] != "heaviside.default"
              and c[0] not in ("floor_divide.default", "remainder.Scalar_Tensor")
              and not (c[0] == "remainder.Tensor" and not isinstance(c[2].args[0], T))]


@pytest.mark.parametrize("key,i,sample", META_CASES,
                         ids=[f"{k}-{i}" for k, i, _ in META_CASES])
def test_formulas_run_on_meta(key, i, sample):
    try:
        cpu = _grads(key, sample, "cpu")
    except RuntimeError as e:   # as PyTorch's (addcdiv's ``value / tensor2`` on int64)
        with pytest.raises(RuntimeError, match=str(e)):
            _grads(key, sample, "meta")
        return
    meta = _grads(key, sample, "meta")
    if cpu is None:
        assert meta is None
        return
    for c, m in zip(cpu, meta):
        assert (c is None) == (m is None)
        if c is not None:
            assert m.device.type == "meta"
            assert (tuple(m.shape), m.dtype) == (tuple(c.shape), c.dtype)


# -- hypothesis: ties, zeros and broadcasting on the piecewise and binary formulas -------------
BINARY_KEYS = ("maximum.default", "minimum.default", "fmax.default", "fmin.default",
               "atan2.default", "hypot.default", "logaddexp.default", "logaddexp2.default",
               "xlogy.Tensor", "pow.Tensor_Tensor", "remainder.Tensor", "fmod.Tensor",
               "clamp_min.Tensor", "clamp_max.Tensor", "threshold_backward.default")
UNARY_KEYS = ("abs.default", "relu.default", "sqrt.default", "log.default", "sinc.default",
              "logit.default", "sgn.default", "frac.default", "gelu.default", "sigmoid.default")
# hand-picked values: ties, signed zeros, boundaries of logit/sqrt/log, one NaN
VALUES = (-2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, float("nan"))
SHAPES = ((), (3,), (2, 3), (2, 1))


def _spec(draw, st, shape):
    n = int(np.prod(shape)) if shape else 1
    vals = draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n))
    return T(shape, "float64", values=vals)


def test_hypothesis_edges_match_torch(torch):
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.given(st.data())
    def check(data):
        if data.draw(st.booleans()):
            key = data.draw(st.sampled_from(BINARY_KEYS))
            a = _spec(data.draw, st, data.draw(st.sampled_from(SHAPES)))
            b = _spec(data.draw, st, data.draw(st.sampled_from(SHAPES)))
            sample = S(a, b, 0.5) if key == "threshold_backward.default" else S(a, b)
        else:
            key = data.draw(st.sampled_from(UNARY_KEYS))
            sample = S(_spec(data.draw, st, data.draw(st.sampled_from(SHAPES))))
        problems = _compare(torch, key, sample)
        assert not problems, f"{key}{sample!r} {sample.args}: " + "; ".join(problems)

    check()
