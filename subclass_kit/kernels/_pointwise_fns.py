"""Argument checks and numpy computes of the pointwise ops, named in ``pointwise._INFOS``.

Checks raise PyTorch's exact texts. A compute is ``fn(out, *operands, **kwargs)``: ``out`` is a
numpy array of the op's natural result dtype, operands are arrays of the compute dtype or
Python numbers already wrapped to it; it writes ``out`` (which may be an operand, in place).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from ..tensor import Tensor
from ._scalars import checked_scalar, wrap_scalar


def is_bool(a) -> bool:
    return a._dtype is dt.bool_ if isinstance(a, Tensor) else isinstance(a, bool)


def check_neg(self):
    if self._dtype is dt.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead.")


def check_sub(self, other, alpha=1):
    if is_bool(self) and is_bool(other):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead.")
    if is_bool(self) or is_bool(other):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def post_alpha(common, self, other, alpha=1):
    if isinstance(alpha, bool):
        if common is not dt.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and not common.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if alpha != 1:
        checked_scalar(alpha, common)


def check_relu(self):
    if self._dtype is dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")


def check_pow(self, exponent):
    if (isinstance(self, Tensor) and type(exponent) is int and exponent < 0
            and not self._dtype.is_floating_point):
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def post_pow(common, self, exponent):
    number = isinstance(self, Tensor) and not isinstance(exponent, Tensor)
    if number:
        checked_scalar(exponent, common)
    # pow(t, 0) and pow(t, 1) fill/copy before the dtype dispatch, so bool passes there.
    if common is dt.bool_ and not (number and exponent in (0, 1)):
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


def check_clamp(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("sk.clamp: At least one of 'min' or 'max' must not be None")


def post_clamp(common, self, min=None, max=None):
    for bound in (min, max):
        if bound is not None and not isinstance(bound, Tensor):
            checked_scalar(bound, common)


def clamp_kname(self, min=None, max=None):
    if min is None:
        return "clamp_max_scalar_cpu"
    return "clamp_min_scalar_cpu" if max is None else "clamp_scalar_cpu"


def post_clamp_tensor(common, self, min=None, max=None):
    if common is dt.bool_ and min is not None and max is not None:
        raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool'")


ROUNDING = (None, "trunc", "floor")


def check_gelu(self, *, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")


def check_div_mode(self, other, *, rounding_mode=None):
    if rounding_mode not in ROUNDING:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")


def div_mode_kind(kwargs):
    return "float" if kwargs.get("rounding_mode") is None else "promote"


def div_mode_kname(self, other, *, rounding_mode=None):
    return f"div_{rounding_mode}_cpu"


# -- numpy computes: fn(out, *operands, **kwargs) --------------------------------------------
def uf(ufunc):
    def fn(out, *operands):
        ufunc(*operands, out=out)
    fn.__name__ = ufunc.__name__
    fn.ufunc = ufunc
    return fn


def expr(f):
    """A compute from an expression returning a fresh array."""
    def fn(out, *operands, **kwargs):
        np.copyto(out, f(*operands, **kwargs), casting="unsafe")
    fn.__name__ = f.__name__
    return fn


def add(out, a, b, alpha=1):
    if alpha != 1 or isinstance(alpha, bool):
        b = np.multiply(b, checked_scalar(alpha, dt.from_numpy_dtype(out.dtype)),
                        dtype=out.dtype)
    np.add(a, b, out=out)


def sub(out, a, b, alpha=1):
    if alpha != 1:
        b = np.multiply(b, checked_scalar(alpha, dt.from_numpy_dtype(out.dtype)),
                        dtype=out.dtype)
    np.subtract(a, b, out=out)


# Without keyword arguments these computes are one ufunc (the kernels' fast path calls it).
add.ufunc = np.add
sub.ufunc = np.subtract


def rsqrt(out, a):
    np.sqrt(a, out=out)
    np.divide(1, out, out=out)


def sigmoid(out, a):
    np.negative(a, out=out)
    np.exp(out, out=out)
    np.add(out, 1, out=out)
    np.divide(1, out, out=out)


def silu(out, a):
    np.divide(a, np.add(np.exp(np.negative(a)), 1), out=out)


def relu(out, a):
    np.maximum(a, 0, out=out)


def sign(out, a):
    if a.dtype.kind == "b":
        np.copyto(out, a)
        return
    # (x > 0) - (x < 0): 0 for NaN and -0.0, as PyTorch.
    pos, neg = np.greater(a, 0), np.less(a, 0)
    np.copyto(out, pos, casting="unsafe")
    np.subtract(out, neg, out=out, casting="unsafe")


def integral_identity(ufunc):
    def fn(out, a):
        if a.dtype.kind == "f":
            ufunc(a, out=out)
        else:
            np.copyto(out, a)
    fn.__name__ = ufunc.__name__
    return fn


def clamp(out, a, lo=None, hi=None):
    if lo is None:
        np.minimum(a, hi, out=out)
        return
    np.maximum(a, lo, out=out)
    if hi is not None:
        np.minimum(out, hi, out=out)


# bfloat16 clamps and relu: PyTorch's reduced-precision kernels use ``std::max(x, lo)`` /
# ``std::min(x, hi)`` (the bound only where it is strictly beyond ``x``, so a signed zero keeps
# ``x``'s sign; a NaN bound gives NaN): in every element with Scalar bounds, in the scalar tail
# with Tensor bounds (docs/differences.md).
def _at_least(a, lo):
    return np.where(np.isnan(lo), lo, np.where(a < lo, lo, a))


def _at_most(a, hi):
    return np.where(np.isnan(hi), hi, np.where(hi < a, hi, a))


def clamp_bfloat16(out, a, lo=None, hi=None):
    if lo is not None:
        a = _at_least(a, np.asarray(lo, np.float32))
    if hi is not None:
        a = _at_most(a, np.asarray(hi, np.float32))
    np.copyto(out, a)


def clamp_min_bfloat16(out, a, min):  # noqa: A002 (the schema's name)
    np.copyto(out, _at_least(a, np.asarray(min, np.float32)))


def clamp_max_bfloat16(out, a, max):  # noqa: A002
    np.copyto(out, _at_most(a, np.asarray(max, np.float32)))


def relu_bfloat16(out, a):
    np.copyto(out, np.where(a < 0, np.float32(0), a))


def check_int_zero(b):
    """PyTorch's integer-division check, made per element its kernels compute: callers skip it
    for an empty result (``torch.zeros(0, dtype=int) // 0`` is empty, no error)."""
    if (b == 0).any() if isinstance(b, np.ndarray) else b == 0:
        raise RuntimeError("ZeroDivisionError")


def int_zero_data_check(common, self, other, *, rounding_mode="floor"):
    """Integer division by zero, checked before an out= tensor is resized."""
    if rounding_mode is not None and not common.is_floating_point and common is not dt.bool_:
        if isinstance(other, Tensor):
            check_int_zero(other._array())
        else:
            check_int_zero(wrap_scalar(other, common.numpy))


def div_mode(out, a, b, rounding_mode=None):
    if rounding_mode is None:
        np.true_divide(a, b, out=out)
        return
    integral = out.dtype.kind in "iu"
    if integral and out.size:
        check_int_zero(b)
    if rounding_mode == "floor":
        np.floor_divide(a, b, out=out)
    elif integral:
        q = np.floor_divide(a, b)
        q += (np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
        np.copyto(out, q)
    else:
        np.true_divide(a, b, out=out)
        np.trunc(out, out=out)


def remainder(out, a, b):
    if out.dtype.kind in "iu" and out.size:
        check_int_zero(b)
    np.remainder(a, b, out=out)


def remainder_bfloat16(out, a, b):
    """bfloat16 ``remainder``: PyTorch's reduced-precision kernel is ``fmod``, plus ``b`` when
    the signs differ, so a zero keeps the dividend's sign (numpy's gives the divisor's)."""
    mod = np.fmod(a, b)
    np.copyto(out, np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod))


def pow(out, a, b):
    if out.dtype.kind == "b":  # only pow(bool, 0 or 1)
        np.copyto(out, True if not b else a)
        return
    if out.dtype.kind in "iu" and isinstance(b, np.ndarray) and b.dtype.kind == "i":
        neg = b < 0
        if neg.any():
            # Integer powers with negative exponents: 1 -> 1, -1 -> +-1, others -> 0 (PyTorch).
            res = np.power(a, np.where(neg, 0, b))
            odd = (b % 2) != 0
            special = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
            np.copyto(out, np.where(neg, special, res), casting="unsafe")
            return
    np.power(a, b, out=out)


# -- special functions numpy lacks (vectorised, computed in float64, rounded once) -------------
_SQRT_PI = math.sqrt(math.pi)


# W. J. Cody, "Rational Chebyshev approximations for the error function", Math. Comp. 23
# (1969): erf = x P(x^2)/Q(x^2) for |x| <= 0.46875; erfc = exp(-x^2) R(x) up to 4 and
# exp(-x^2)/x (1/sqrt(pi) + R(1/x^2)/x^2) beyond, each within a few ulp of float64 (checked
# against math.erf / math.erfc in tests/test_special_functions.py).
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)
_RSQRT_PI = 5.6418958354775628695e-1  # 1/sqrt(pi)


# Elements per block of ``erf``/``erfc``. Their float64 temporaries are written into seven
# block-sized scratch arrays (``_cody``) allocated once per call: whole-tensor temporaries
# were fresh allocations each, and a fresh mapping costs a page fault per 4 KiB (on the gelu
# of the training benchmark, a third of the step's system time).
_BLOCK = 8192
# exp(-ys^2) at ys = k/16, k = 0..480 (Cody's exactly squared leading part, up to y = 30),
# computed as the formula does: (-ys) * ys, then exp.
with np.errstate(under="ignore"):
    _EXP_GRID = np.exp(np.negative(np.arange(481) / 16.0) * (np.arange(481) / 16.0))


def _cody_ratio(v, p, q, num, den):
    """Numerator and denominator of one of Cody's rational functions of the float64 array
    ``v`` into ``num`` and ``den``: coefficient tables ``p`` (n + 2 entries, the leading one
    last) and ``q`` (n + 1, monic), evaluated in his order (Horner, the constant terms
    ``p[n]`` and ``q[n]`` added last)."""
    n = len(q) - 1
    np.multiply(v, p[n + 1], out=num)
    np.add(v, q[0], out=den)
    np.multiply(den, v, out=den)
    for i in range(n):
        np.add(num, p[i], out=num)
        np.multiply(num, v, out=num)
        if i:
            np.add(den, q[i], out=den)
            np.multiply(den, v, out=den)
    np.add(num, p[n], out=num)
    np.add(den, q[n], out=den)


def _cody(x, ax, z, num, den, t, u, c):
    """Cody's erf (module comment above) of the float64 1-d block ``x`` in scratch arrays of its
    size. Leaves erfc(|x|) in ``t`` (valid where |x| > 0.46875), erf(x) of the small range in
    ``num`` (valid where |x| <= 0.46875) and that range's mask in the returned bool array.
    Every element gets the small range's arithmetic (it overflows harmlessly, to nan, past
    its end); the outer ranges run on their own elements only, gathered into the front of
    the scratch arrays (``c`` is the eighth), so a block of mostly small values (gelu's) skips
    most of their arithmetic. Each element's operations and their order are the textbook
    formulas', wherever it sits in the block, so the values are those of the whole-block
    evaluation."""
    np.abs(x, out=ax)
    small = ax <= 0.46875
    with np.errstate(over="ignore", invalid="ignore"):
        # small range: x P(x^2) / Q(x^2)
        np.multiply(x, x, out=z)
        _cody_ratio(z, _A, _B, num, den)
        np.multiply(x, num, out=num)
        np.divide(num, den, out=num)
    outer = np.flatnonzero(~small)          # nan included: it takes the outer path to nan
    n = outer.size
    if not n:
        return small
    # The outer elements, gathered: y in u, R(y) in z, scratch in den / ax, erfc in c.
    y, zz, dd, tt = u[:n], z[:n], den[:n], c[:n]
    np.take(ax, outer, out=y)
    uu = ax[:n]     # ax is free once gathered
    np.minimum(y, 30.0, out=y)      # erfc underflows to 0 long before (inf too); nan stays
    # middle range: R(y) = P(y) / Q(y), into zz
    _cody_ratio(y, _C, _D, zz, dd)
    np.divide(zz, dd, out=zz)
    far = np.flatnonzero(y > 4.0)
    if far.size:
        yf = y[far]
        w = 1.0 / (yf * yf)
        p, q = np.empty_like(w), np.empty_like(w)
        _cody_ratio(w, _P, _Q, p, q)
        zz[far] = (_RSQRT_PI - w * p / q) / yf
    # exp(-y^2) as exp(-ys^2) exp(-(y - ys)(y + ys)), ys = y rounded down to 1/16: the
    # leading square is exact (Cody)
    ys = dd
    np.multiply(y, 16.0, out=ys)
    np.trunc(ys, out=ys)
    # exp(-ys^2) from the table (ys is one of its 481 points): an exp less per element.
    # A nan y takes an arbitrary point; the other factors are nan for it.
    with np.errstate(invalid="ignore"):
        k = ys.astype(np.intp)
    np.take(_EXP_GRID, k, out=tt, mode="clip")      # (clip: a nan's index is negative)
    np.divide(ys, 16.0, out=ys)
    with np.errstate(under="ignore"):
        np.add(y, ys, out=uu)
        np.subtract(y, ys, out=ys)
        np.negative(ys, out=ys)
        np.multiply(ys, uu, out=ys)
        np.exp(ys, out=ys)
        np.multiply(tt, ys, out=tt)
        np.multiply(tt, zz, out=tt)
    t[outer] = tt
    return small


def _blocked(x, dtype, complement: bool):
    """erf (``complement`` False) or erfc of ``x`` in float64, block by block, each result
    rounded once to ``dtype``; returns an array shaped like ``x``."""
    flat = x.reshape(-1)        # 1-d: 0-d arithmetic gives scalars
    n = flat.size
    m = min(n, _BLOCK)
    out = np.empty(n, dtype)
    if not n:
        return out.reshape(x.shape)
    # (``t``, the fifth, starts at zero: its small-range slots are never computed, only replaced)
    scratch = [np.zeros(m) if j == 4 else np.empty(m) for j in range(7)]
    for i in range(0, n, m):
        block = flat[i:i + m].astype(np.float64, copy=False)
        k = block.size
        bufs = scratch if k == m else [b[:k] for b in scratch]
        small = _cody(block, *bufs)
        near, t = bufs[2], bufs[4]
        if complement:
            np.subtract(2.0, t, out=t, where=block < 0)     # erfc(-y) = 2 - erfc(y)
            np.subtract(1.0, near, out=near)
        else:
            np.subtract(1.0, t, out=t)
            np.copysign(t, block, out=t)
        np.putmask(t, small, near)     # (faster than copyto(where=))
        out[i:i + k] = t
    return out.reshape(x.shape)


def erf(x):
    """erf of a float array, computed in float64 and rounded once to the input's float dtype
    (float64 for other inputs)."""
    x = np.asarray(x)
    return _blocked(x, x.dtype if x.dtype.kind == "f" else np.dtype(np.float64), False)


def erfc(x):
    """erfc in float64: 1 - erf near 0 (no cancellation there), Cody's erfc beyond (2 - it
    for negative x)."""
    return _blocked(np.asarray(x, dtype=np.float64), np.dtype(np.float64), True)


_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_pos(x):
    """log Gamma(x) for x >= 0.5 (Lanczos, g=7, n=9: ~1e-15 relative)."""
    z = x - 1.0
    a = np.full_like(z, _LANCZOS[0])
    for i in range(1, 9):
        a += _LANCZOS[i] / (z + i)
    t = z + _LANCZOS_G + 0.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * np.log(t) - t + np.log(a)


def lgamma(x):
    """log|Gamma(x)|: Lanczos for x >= 0.5, the reflection formula below (with sin(pi x)
    on the reduced argument); inf at the poles 0, -1, -2, ... and at +-inf."""
    x = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(x)
    xs = np.where(finite, x, 1.0)
    reflect = xs < 0.5
    pos = _lgamma_pos(np.where(reflect, 1.0 - xs, xs))
    s = np.abs(np.sin(math.pi * (xs - np.round(xs))))
    res = np.where(reflect, np.log(math.pi / s) - pos, pos)
    res = np.where((xs <= 0) & (xs == np.floor(xs)), np.inf, res)
    res = np.where((xs == 1) | (xs == 2), 0.0, res)  # exact zeros, as C's lgamma
    return np.where(finite, res, np.abs(x))


_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
              -4.16666666666666666667e-3, 3.96825396825396825397e-3,
              -8.33333333333333333333e-3, 8.33333333333333333333e-2)


def _digamma_pos(x):
    result = np.zeros_like(x)
    for _ in range(10):  # push x to >= 10 (at most 10 steps for x > 0)
        low = x < 10
        result -= np.where(low, 1.0 / np.where(low, x, 1.0), 0.0)
        x = np.where(low, x + 1.0, x)
    z = 1.0 / (x * x)
    poly = np.zeros_like(x)
    for c in _DIGAMMA_A:
        poly = poly * z + c
    y = np.where(x < 1e17, z * poly, 0.0)
    res = result + np.log(x) - 0.5 / x - y
    return np.where(x == 10, result + _PSI_10, res)


def digamma(x):
    """PyTorch's ``calc_digamma``: +-0 -> -+inf, negative integers -> NaN, reflection
    ``psi(1 - x) - pi / tan(pi * frac(x))`` below 0, recurrence + asymptotic series above."""
    x = np.asarray(x, dtype=np.float64)
    neg = x < 0
    pos = _digamma_pos(np.where(neg, 1.0 - x, x))
    frac = x - np.trunc(np.where(np.isfinite(x), x, 0.0))
    res = np.where(neg, pos - math.pi / np.tan(math.pi * frac), pos)
    res = np.where(neg & (x == np.trunc(x)), np.nan, res)
    return np.where(x == 0, np.copysign(np.inf, -x), res)


_ERFINV_A = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
_ERFINV_B = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
_ERFINV_C = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
_ERFINV_D = (3.543889200, 1.637067800)


def erfinv(y):
    """PyTorch's ``calc_erfinv``: a rational first guess (central below |y| = 0.7, tail
    above), then two Newton steps on ``erf``; +-1 -> +-inf, |y| > 1 -> NaN."""
    y = np.asarray(y, dtype=np.float64)
    ay = np.abs(y)
    inside = ay < 1
    yc = np.where(inside, y, 0.0)
    ayc = np.abs(yc)
    z = yc * yc
    a, b = _ERFINV_A, _ERFINV_B
    central = yc * (((a[3] * z + a[2]) * z + a[1]) * z + a[0]) / (
        (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0)
    c, d = _ERFINV_C, _ERFINV_D
    zt = np.sqrt(-np.log((1.0 - np.where(ayc > 0.7, ayc, 0.8)) / 2.0))
    tail = np.copysign((((c[3] * zt + c[2]) * zt + c[1]) * zt + c[0]) / (
        (d[1] * zt + d[0]) * zt + 1.0), yc)
    x = np.where(ayc <= 0.7, central, tail)
    for _ in range(2):
        x = x - (erf(x) - yc) / ((2.0 / _SQRT_PI) * np.exp(-x * x))
    x = np.where(ay == 1, np.copysign(np.inf, y), x)
    return np.where((ay > 1) | np.isnan(y), np.nan, x)
