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


def erf(x):
    """erf to ~1e-15 relative: an all-positive series below 2.5, erfc's continued fraction
    above (numpy has no erf; the loops run over terms, not elements)."""
    x = np.asarray(x)
    ax = np.abs(x)
    small = ax < 2.5
    xs = np.where(small, ax, 0.0).astype(x.dtype)
    x2 = xs * xs
    term = xs.copy()
    total = xs.copy()
    for n in range(1, 60 if x.dtype.itemsize == 8 else 30):
        term *= 2 * x2 / (2 * n + 1)
        total += term
    res = (2 / math.sqrt(math.pi)) * np.exp(-x2) * total
    if not small.all():
        xl = np.where(small, 3.0, ax).astype(x.dtype)
        t = xl.copy()
        for k in range(60, 0, -1):
            t = xl + (k / 2) / t
        res = np.where(small, res, 1.0 - np.exp(-xl * xl) / (math.sqrt(math.pi) * t))
    return np.copysign(res, x)


def gelu(x, approximate="none"):
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + np.tanh(k * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


def clamp(out, a, lo=None, hi=None):
    if lo is None:
        np.minimum(a, hi, out=out)
        return
    np.maximum(a, lo, out=out)
    if hi is not None:
        np.minimum(out, hi, out=out)


def check_int_zero(b):
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
    if integral:
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
    if out.dtype.kind in "iu":
        check_int_zero(b)
    np.remainder(a, b, out=out)


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
