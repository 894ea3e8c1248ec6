"""More pointwise ops (``kernels/pointwise_more.py``, composites ``square``/``fix``/``isfinite``/
``float_power``) against torch through the public API: special values (NaN, +-inf, -0.0 with
its sign), integer and bool inputs (int -> float for transcendental ops, "not implemented for
'Long'" errors), C integer semantics of ``gcd``/``lcm``/``fmod``, in-place ``_version`` and
error texts, and the op streams a dispatch mode sees (torch's TorchDispatchMode).

The op sweep (``test_op_sweep.py``) covers layouts, broadcasting and meta; this file covers what
its random samples would not hit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle of these tests")
from oracle import SkOpLog, assert_same, normalize_message, to_torch, torch_op_log

import subclass_kit as sk

NAN, INF = math.nan, math.inf
SPECIAL = [NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, -7.25, 100.0, -100.0]
FLOATS = ("float16", "float32", "float64")


def _pair(values, dtype="float32"):
    x = sk.tensor(values, dtype=getattr(sk, dtype))
    return x, to_torch(x)


# Where torch's zero sign depends on its vector path (``clamp_min(-0.0, 0.0)`` is -0.0 in a
# 1-element tensor, 0.0 in a 16-element one) or on rounding (``logaddexp2`` in float16).
_ANY_ZERO_SIGN = ("clamp_min", "clamp_max", "logaddexp2")


def _same_with_sign(ours, theirs, msg="", **kw):
    """``assert_same`` plus: zeros carry the same sign."""
    assert_same(ours, theirs, msg=msg, **kw)
    a, b = ours.numpy(), theirs.numpy()
    if a.dtype.kind == "f" and not msg.startswith(_ANY_ZERO_SIGN):
        zero = b == 0
        assert (np.signbit(a[zero]) == np.signbit(b[zero])).all(), (a, b)


def _raises_same(fn_sk, fn_torch):
    with pytest.raises(Exception) as theirs:
        fn_torch()
    with pytest.raises(type(theirs.value)) as ours:
        fn_sk()
    assert str(ours.value) == normalize_message(str(theirs.value))


# -- special values --------------------------------------------------------------------------
UNARY = ("isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit", "trunc", "fix", "frac",
         "sgn", "square", "nan_to_num", "tan", "asin", "acos", "atan", "sinh", "cosh", "exp2",
         "expm1", "log2", "log10", "erfc", "sinc", "rad2deg", "deg2rad", "logit", "lgamma",
         "digamma", "erfinv")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values(name, dtype):
    x, tx = _pair(SPECIAL, dtype)
    _same_with_sign(getattr(sk, name)(x), getattr(torch, name)(tx), msg=name)


BINARY = ("logical_xor", "atan2", "hypot", "logaddexp", "logaddexp2", "xlogy", "fmod", "fmax",
          "fmin", "heaviside", "clamp_min", "clamp_max", "float_power")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_special_values(name, dtype):
    """Every pair of special values (a 14 x 14 grid)."""
    a, ta = _pair([[v] for v in SPECIAL], dtype)
    b, tb = _pair(SPECIAL, dtype)
    _same_with_sign(getattr(sk, name)(a, b), getattr(torch, name)(ta, tb), msg=name)


@pytest.mark.parametrize("kwargs", [{}, {"nan": 1.5}, {"posinf": 7.0, "neginf": -7.0},
                                    {"nan": -0.0, "posinf": 1e10}])
@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_to_num_replacements(dtype, kwargs):
    x, tx = _pair(SPECIAL, dtype)
    _same_with_sign(sk.nan_to_num(x, **kwargs), torch.nan_to_num(tx, **kwargs))
    y, ty = x.clone(), tx.clone()
    _same_with_sign(y.nan_to_num_(**kwargs), ty.nan_to_num_(**kwargs))
    assert y._version == ty._version


@pytest.mark.parametrize("eps", [None, 0.0, 0.125, 0.5, -1.0])
def test_logit_eps(eps):
    x, tx = _pair([0.0, 0.0625, 0.5, 0.9375, 1.0, -0.5, 2.0, NAN])
    assert_same(sk.logit(x, eps), torch.logit(tx, eps))


def test_scalar_operands():
    x, tx = _pair(SPECIAL)
    for v in (0.0, -0.0, 2, NAN, INF):
        _same_with_sign(sk.fmod(x, v), torch.fmod(tx, v), msg=f"fmod {v}")
        _same_with_sign(sk.xlogy(x, v), torch.xlogy(tx, v), msg=f"xlogy {v}")
        _same_with_sign(sk.xlogy(v, x), torch.xlogy(v, tx), msg=f"xlogy {v} first")
        _same_with_sign(sk.clamp_min(x, v), torch.clamp_min(tx, v), msg=f"clamp_min {v}")
        _same_with_sign(sk.clamp_max(x, v), torch.clamp_max(tx, v), msg=f"clamp_max {v}")
        _same_with_sign(sk.float_power(x, v), torch.float_power(tx, v), msg=f"float_power {v}")


# -- integer and bool inputs -----------------------------------------------------------------
INT_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64")
INT_VALUES = [0, 1, 2, 3, 5, 7, 100]


def _int_pair(dtype, values=INT_VALUES, negate=True):
    vals = list(values)
    if negate and dtype not in ("bool", "uint8"):
        vals += [-v for v in values]
    x = sk.tensor(vals, dtype=getattr(sk, dtype)) if dtype != "bool" else sk.tensor(
        [bool(v % 2) for v in vals])
    return x, to_torch(x)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_integer_inputs(name, dtype):
    x, tx = _int_pair(dtype)
    try:
        expected = getattr(torch, name)(tx)
    except Exception:
        _raises_same(lambda: getattr(sk, name)(x), lambda: getattr(torch, name)(tx))
        return
    assert_same(getattr(sk, name)(x), expected, msg=name)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", [n for n in UNARY if hasattr(torch.Tensor, n + "_")])
def test_unary_inplace_integer_inputs(name, dtype):
    """In place on integers: "result type Float can't be cast ...", or kernel errors; data and
    ``_version`` untouched on error, bumped once on success."""
    x, tx = _int_pair(dtype)
    try:
        getattr(tx, name + "_")()
    except Exception:
        before = x.tolist()
        _raises_same(lambda: getattr(x, name + "_")(), lambda: getattr(tx, name + "_")())
        assert x.tolist() == before and x._version == 0
        return
    assert_same(getattr(x, name + "_")(), tx)
    assert x._version == tx._version == 1


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", BINARY + ("gcd", "lcm"))
def test_binary_integer_inputs(name, dtype):
    a, ta = _int_pair(dtype)
    b, tb = _int_pair(dtype, [3, 1, 2, 7, 5, 4, 9])
    try:
        expected = getattr(torch, name)(ta, tb)
    except Exception:
        _raises_same(lambda: getattr(sk, name)(a, b), lambda: getattr(torch, name)(ta, tb))
        return
    assert_same(getattr(sk, name)(a, b), expected, msg=name)


def test_mixed_int_float_promotion():
    i = sk.tensor([1, -2, 3])
    f = sk.tensor([0.5, 2.0, -1.5], dtype=sk.float64)
    for name in ("atan2", "hypot", "logaddexp", "xlogy", "fmod", "fmax", "clamp_min"):
        assert_same(getattr(sk, name)(i, f), getattr(torch, name)(to_torch(i), to_torch(f)),
                    msg=name)


# -- C integer semantics ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ("uint8", "int8", "int16", "int32", "int64"))
def test_gcd_lcm_overflow(dtype):
    info = np.iinfo(dtype)
    a_vals = [0, 0, 12, -12, info.max, info.min, info.max // 2 + 1, info.min, 64, -64, 100, 7]
    b_vals = [0, 5, -18, -18, 3, 0, 3, 1, 6, 6, 3, info.max]
    a = sk.from_numpy(np.array(a_vals).astype(dtype))
    b = sk.from_numpy(np.array(b_vals).astype(dtype))
    for name in ("gcd", "lcm"):
        assert_same(getattr(sk, name)(a, b), getattr(torch, name)(to_torch(a), to_torch(b)),
                    msg=name)


@pytest.mark.parametrize("dtype", ("int8", "int32", "int64", "float32", "float64"))
def test_fmod_sign_rules(dtype):
    """The result has the dividend's sign (C's fmod), unlike ``remainder``."""
    a, ta = _pair([7, -7, 7, -7, 0, 9, -9, 6, -6], dtype)
    b, tb = _pair([3, 3, -3, -3, 5, 4, -4, 3, 3], dtype)
    _same_with_sign(sk.fmod(a, b), torch.fmod(ta, tb))
    _same_with_sign(sk.fmod(a, -2), torch.fmod(ta, -2))


def test_integer_division_by_zero():
    a, ta = _pair([1, 2, 3], "int64")
    b, tb = _pair([1, 0, 1], "int64")
    _raises_same(lambda: sk.fmod(a, b), lambda: torch.fmod(ta, tb))
    _raises_same(lambda: sk.fmod(a, 0), lambda: torch.fmod(ta, 0))
    out = sk.empty(0, dtype=sk.int64)
    _raises_same(lambda: sk.fmod(a, b, out=out), lambda: torch.fmod(ta, tb, out=torch.empty(
        0, dtype=torch.int64)))
    assert out.shape == (0,) and out._version == 0


# -- errors ----------------------------------------------------------------------------------
ERRORS = [
    ("square_ bool", lambda m: m.tensor([True]).square_()),
    ("clamp_min bool bound", lambda m: m.clamp_min(m.tensor([True]), True)),
    ("clamp_max overflow", lambda m: m.clamp_max(m.tensor([1], dtype=m.uint8), 300)),
    ("clamp_min_ int self float bound", lambda m: m.tensor([1]).clamp_min_(0.5)),
    ("isposinf float out", lambda m: m.isposinf(m.tensor([1.0]), out=m.empty(1))),
    ("signbit float out", lambda m: m.signbit(m.tensor([1.0]), out=m.empty(1))),
    ("nan_to_num out dtype", lambda m: m.nan_to_num(m.tensor([1.0]),
                                                    out=m.empty(1, dtype=m.float64))),
    ("heaviside dtypes", lambda m: m.heaviside(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64))),
    ("heaviside out dtype", lambda m: m.heaviside(m.tensor([1.0]), m.tensor([1.0]),
                                                  out=m.empty(1, dtype=m.float64))),
    ("float_power_ float32", lambda m: m.tensor([1.0]).float_power_(2)),
    ("float_power out", lambda m: m.float_power(m.tensor([1.0]), 2,
                                                out=m.empty(1, dtype=m.int64))),
    ("gcd float", lambda m: m.gcd(m.tensor([1.0]), m.tensor([2.0]))),
    ("frac long", lambda m: m.frac(m.tensor([1]))),
    ("trunc bool", lambda m: m.trunc(m.tensor([True]))),
    ("hypot long", lambda m: m.hypot(m.tensor([1]), m.tensor([2]))),
    ("tan_ long", lambda m: m.tensor([1]).tan_()),
    ("atan2 number", lambda m: m.atan2(m.tensor([1.0]), 2)),
    ("logical_xor number", lambda m: m.logical_xor(m.tensor([1.0]), 2)),
]


@pytest.mark.parametrize("program", [p for _, p in ERRORS], ids=[n for n, _ in ERRORS])
def test_errors(program):
    _raises_same(lambda: program(sk), lambda: program(torch))


# -- op streams ------------------------------------------------------------------------------
_STREAM_DIFFERENCES = {"xlogy.Scalar_Other": "xlogy.Tensor", "xlogy.Scalar_Self": "xlogy.Tensor",
                       "clamp_min.Scalar": "clamp_min.default"}

STREAMS = [
    ("square", lambda m, x, i: m.square(x)),
    ("square_", lambda m, x, i: x.square_()),
    ("square_out", lambda m, x, i: m.square(x, out=m.empty(0))),
    ("fix", lambda m, x, i: m.fix(x)),
    ("fix_", lambda m, x, i: x.fix_()),
    ("fix_out", lambda m, x, i: m.fix(x, out=m.empty(0))),
    ("isfinite_float", lambda m, x, i: m.isfinite(x)),
    ("isfinite_int", lambda m, x, i: m.isfinite(i)),
    ("isnan_isinf", lambda m, x, i: (m.isnan(x), m.isinf(x), m.isposinf(x), m.isneginf(x),
                                     m.signbit(x))),
    ("clamp_min_max", lambda m, x, i: (m.clamp_min(x, 0.5), m.clamp_max(x, x), x.clamp_min_(0),
                                       x.clamp_max_(i))),
    ("nan_to_num", lambda m, x, i: (m.nan_to_num(x), x.nan_to_num_(posinf=1.0))),
    ("trig", lambda m, x, i: (m.tan(x), m.asin(x), m.acos(x), m.atan(x), m.atan2(x, x),
                              m.sinh(x), m.cosh(x))),
    ("exp_log", lambda m, x, i: (m.exp2(i), m.expm1(x), m.log2(x), m.log10(i), x.erfc(),
                                 m.logaddexp(x, x), m.logaddexp2(x, x), m.hypot(x, x))),
    ("angles_sinc", lambda m, x, i: (m.rad2deg(x), m.deg2rad(i), m.sinc(x), x.rad2deg_())),
    ("logit_xlogy", lambda m, x, i: (m.logit(x), m.logit(x, 0.25), m.xlogy(x, x),
                                     m.xlogy(x, 2.0), m.xlogy(2.0, x))),
    ("fmod_family", lambda m, x, i: (m.fmod(x, 1.5), m.fmod(i, i), m.fmax(x, x), m.fmin(x, x),
                                     m.gcd(i, i), m.lcm(i, i), m.heaviside(x, x))),
    ("special", lambda m, x, i: (m.lgamma(x), m.digamma(x), m.erfinv(x), x.lgamma_())),
    ("float_power", lambda m, x, i: (m.float_power(x, 2), m.float_power(i, x),
                                     m.float_power(2, x))),
    ("float_power_double", lambda m, x, i: m.float_power(x.double(), 2.0)),
    ("trunc_frac_sgn", lambda m, x, i: (m.trunc(x), m.frac(x), m.sgn(i), x.trunc_())),
]


@pytest.mark.parametrize("program", [p for _, p in STREAMS], ids=[n for n, _ in STREAMS])
def test_op_stream(program):
    x = sk.tensor([[0.25, -1.5, 2.0], [NAN, INF, -0.5]])
    i = sk.tensor([[1, 2, 3], [4, -5, 6]])
    tx, ti = to_torch(x), to_torch(i)
    with SkOpLog(overloads=True, skip=("empty",)) as ours:
        program(sk, x, i)
    with torch_op_log(overloads=True, skip=("empty",)) as theirs:
        program(torch, tx, ti)
    assert ours.ops == [_STREAM_DIFFERENCES.get(o, o) for o in theirs.ops]


# -- public API ------------------------------------------------------------------------------
def test_methods_and_aliases():
    x = sk.tensor([0.25, -0.5])
    for name in ("isnan", "isinf", "isfinite", "signbit", "trunc", "fix", "frac", "sgn",
                 "square", "nan_to_num", "tan", "asin", "arcsin", "arccos", "arctan", "erfc",
                 "lgamma", "digamma", "erfinv", "logit", "sinc"):
        assert_same(getattr(x, name)(), getattr(to_torch(x), name)(), msg=name)
    assert_same(x.arctan2(x), to_torch(x).arctan2(to_torch(x)))
    assert_same(sk.clamp_min(x, min=0.0), torch.clamp_min(to_torch(x), min=0.0))
    assert_same(x.clamp_max(max=x), to_torch(x).clamp_max(max=to_torch(x)))


def test_isnan_has_no_out():
    with pytest.raises(TypeError):
        torch.isnan(torch.ones(1), out=torch.empty(1, dtype=torch.bool))
    with pytest.raises(TypeError):
        sk.isnan(sk.ones(1), out=sk.empty(1, dtype=sk.bool))


def test_meta_matches_cpu():
    for fn in (lambda m, d: m.isfinite(m.ones(2, 3, device=d).t()),
               lambda m, d: m.square(m.ones(2, 3, dtype=m.bool, device=d)),
               lambda m, d: m.float_power(m.ones(2, 3, device=d), 2),
               lambda m, d: m.clamp_min(m.ones(2, 3, dtype=m.int32, device=d), 0.5)):
        ours, theirs = fn(sk, "meta"), fn(torch, "meta")
        assert (ours.shape, ours.stride(), str(ours.dtype).split(".")[1]) == (
            tuple(theirs.shape), theirs.stride(), str(theirs.dtype).split(".")[1])
