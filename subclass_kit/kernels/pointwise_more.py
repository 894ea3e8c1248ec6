"""More pointwise ops through ``pointwise.py``'s machinery (one ``_Info`` per op: result kind,
numpy compute, unsupported dtypes, checks; Note [One rule per op]).

PyTorch's dtype rules: ``isnan``/``isinf``/``isposinf``/``isneginf``/``signbit`` and
``logical_xor`` give bool for every dtype (integers are never nan/inf; ``signbit`` of unsigned
and bool is False), and the out= of ``isposinf``/``isneginf``/``signbit`` must be bool;
``trunc`` keeps integers (bool: NotImplementedError "trunc_vml_cpu"), ``frac`` is floating
only ("frac_cpu"), ``sgn`` is ``sign`` for real dtypes; ``clamp_min``/``clamp_max`` promote
like ``clamp`` (a bool result of the Scalar overload is "clamp_min_scalar_cpu" not
implemented; the Scalar bound must fit the result type); ``nan_to_num`` keeps the dtype
(integers and bool are copied; its out= must have self's dtype: "nan_to_num: dtype of out:
Double should be same as input: Float"). Transcendental ops (``kind="float"``: ``tan`` ...
``erfinv``, ``atan2``, ``xlogy``) compute integers and bool in the default float dtype and round
like numpy; ``erfc``/``lgamma``/``digamma``/``erfinv`` are vectorised float64 formulations
(docs/differences.md). ``hypot``/``logaddexp``/``logaddexp2`` promote and refuse integral
results; ``fmod`` promotes (C's sign rule, integer division by zero raises
"ZeroDivisionError"); ``gcd``/``lcm`` are integral only, with C's wrap-around; ``heaviside``
needs one dtype for ``self``, ``values`` and ``out``.
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import get_kernel, ops, register_kernel
from ..storage import round_to_bfloat16
from ..tensor import Tensor
from . import _pointwise_fns as fns
from ._common import Spec, resize_out, type_name
from ._iter_layout import contig
from ._scalars import checked_scalar, cpp_name
from .pointwise import _BOOL, _FLOATING, _INTEGRAL, _Info, _register

_NOT_INTEGRAL = _FLOATING | _BOOL


# -- checks ----------------------------------------------------------------------------------
def _bool_out(name):
    def check(res, out_dtype, *args):
        raise RuntimeError(f"{name} does not support non-boolean outputs.")
    return check


def _nan_to_num_out(res, out_dtype, *args):
    raise RuntimeError(f"nan_to_num: dtype of out: {type_name(out_dtype)} should be same as "
                       f"input: {type_name(res)}")


def _post_bound(common, self, *bounds, **kw):
    """A Scalar bound of ``clamp_min``/``clamp_max`` must fit the result type."""
    for b in bounds + tuple(kw.values()):
        checked_scalar(b, common)


# -- numpy computes: fn(out, *operands, **kwargs) --------------------------------------------
def isposinf(out, a):
    np.equal(a, np.inf, out=out)


def isneginf(out, a):
    np.equal(a, -np.inf, out=out)


def signbit(out, a):
    if a.dtype.kind == "f":
        np.signbit(a, out=out)
    elif a.dtype.kind == "i":
        np.less(a, 0, out=out)
    else:
        out[...] = False


def frac(out, a):
    np.subtract(a, np.trunc(a), out=out)


def clamp_min(out, a, min):  # noqa: A002 (the schema's name)
    np.maximum(a, min, out=out)


def clamp_max(out, a, max):  # noqa: A002
    np.minimum(a, max, out=out)


def nan_to_num(out, a, nan=None, posinf=None, neginf=None):
    if out.dtype.kind != "f":
        np.copyto(out, a)
        return
    fi = np.finfo(out.dtype)
    pos = fi.max if posinf is None else np.asarray(posinf).astype(out.dtype)
    neg = fi.min if neginf is None else np.asarray(neginf).astype(out.dtype)
    res = np.where(np.isnan(a), np.asarray(0.0 if nan is None else nan).astype(out.dtype),
                   np.where(a == np.inf, pos, np.where(a == -np.inf, neg, a)))
    np.copyto(out, res, casting="unsafe")


_BFLOAT16_MAX = float.fromhex("0x1.fep127")


def nan_to_num_bfloat16(out, a, nan=None, posinf=None, neginf=None):
    """bfloat16 ``nan_to_num``: infinities default to bfloat16's largest values."""
    nan_to_num(out, a, nan, _BFLOAT16_MAX if posinf is None else posinf,
               -_BFLOAT16_MAX if neginf is None else neginf)


def sinc(out, a):
    """``sin(pi x) / (pi x)``, 1 at 0 (PyTorch's formula, in the compute dtype)."""
    y = np.multiply(np.where(a == 0, 1, a), a.dtype.type(math.pi))
    np.copyto(out, np.where(a == 0, 1, np.sin(y) / y), casting="unsafe")


def rad2deg(out, a):
    np.multiply(a, a.dtype.type(180.0 / math.pi), out=out)


def deg2rad(out, a):
    np.multiply(a, a.dtype.type(math.pi / 180.0), out=out)


def logit(out, a, eps=None):
    """``log(x / (1 - x))``; ``eps`` >= 0 clamps x into ``[eps, 1 - eps]`` first (NaN stays)."""
    if eps is not None and not eps < 0:
        lo = np.asarray(eps).astype(a.dtype)
        hi = np.asarray(1, a.dtype) - lo
        a = np.where(a < lo, lo, np.where(a > hi, hi, a))
    np.log(np.divide(a, np.subtract(1, a, dtype=a.dtype)), out=out)


def logit_bfloat16(out, a, eps=None):
    """bfloat16 ``logit``: PyTorch's ``(x / (1 - x)).log()`` on ``Vectorized<BFloat16>``
    rounds the difference, the ratio and the log to bfloat16 (``a``: float32 values)."""
    if eps is not None and not eps < 0:
        lo = round_to_bfloat16(eps)
        hi = round_to_bfloat16(1 - lo)
        a = np.where(a < lo, lo, np.where(a > hi, hi, a))
    ratio = round_to_bfloat16(np.divide(a, round_to_bfloat16(np.subtract(1, a))))
    np.log(ratio, out=out)


def xlogy_bfloat16(out, a, b):
    """bfloat16 ``xlogy``: PyTorch's scalar kernel takes ``std::log`` of a ``BFloat16``,
    which rounds the log to bfloat16 before the product."""
    log = round_to_bfloat16(np.log(b))
    res = np.where(np.isnan(b), np.nan, np.where(a == 0, 0, np.multiply(a, log)))
    np.copyto(out, res, casting="unsafe")


def xlogy(out, a, b):
    """``x * log(y)``: NaN where y is NaN, else 0 where x == 0."""
    res = np.where(np.isnan(b), np.nan, np.where(a == 0, 0, np.multiply(a, np.log(b))))
    np.copyto(out, res, casting="unsafe")


def fmod(out, a, b):
    """C's ``fmod`` (the result has the dividend's sign); integer division by zero raises."""
    if out.dtype.kind in "iu" and out.size:
        fns.check_int_zero(b)
    np.fmod(a, b, out=out)


def lcm(out, a, b):
    """PyTorch's ``abs(a / gcd * b)``, 0 when gcd is 0: C's int arithmetic (8/16-bit operands
    promote to int, then narrow; int32/int64 wrap before ``abs``)."""
    a, b = np.asarray(a), np.asarray(b)
    if out.dtype.itemsize < 4:
        a, b = a.astype(np.int64), b.astype(np.int64)
    g = np.gcd(a, b)
    res = np.abs(np.floor_divide(a, np.where(g == 0, 1, g)) * b)
    np.copyto(out, np.where(g == 0, 0, res), casting="unsafe")


def fmax(out, a, b):
    """The larger, ignoring a NaN operand; ``a`` on ties (so ``fmax(-0.0, 0.0)`` is -0.0)."""
    np.copyto(out, np.where((a < b) | (a != a), b, a), casting="unsafe")


def fmin(out, a, b):
    np.copyto(out, np.where((a > b) | (a != a), b, a), casting="unsafe")


def heaviside(out, a, values):
    np.copyto(out, np.where(a == 0, values, a > 0), casting="unsafe")


_HEAVISIDE_DTYPES = "heaviside is not yet implemented for tensors with different dtypes."


def _check_heaviside(self, values):
    if isinstance(values, Tensor) and values._dtype is not self._dtype:
        raise RuntimeError(_HEAVISIDE_DTYPES)


def _heaviside_out(res, out_dtype, *args):
    raise RuntimeError(_HEAVISIDE_DTYPES)


# -- the table -------------------------------------------------------------------------------
_INFOS = {
    ops.isnan: _Info("isnan", "bool", fns.uf(np.isnan), out_check="autogen"),
    ops.isinf: _Info("isinf", "bool", fns.uf(np.isinf), out_check="autogen"),
    ops.isposinf: _Info("isposinf", "bool", isposinf, out_check=_bool_out("isposinf")),
    ops.isneginf: _Info("isneginf", "bool", isneginf, out_check=_bool_out("isneginf")),
    ops.signbit: _Info("signbit", "bool", signbit, out_check=_bool_out("signbit")),
    ops.logical_xor: _Info("logical_xor", "bool", fns.uf(np.logical_xor)),
    ops.trunc: _Info("trunc", "same", fns.integral_identity(np.trunc), "trunc_vml_cpu", _BOOL),
    ops.frac: _Info("frac", "same", frac, "frac_cpu", _INTEGRAL),
    ops.sgn: _Info("sgn", "same", fns.sign),
    ops.clamp_min: _Info("clamp_min", "promote", clamp_min, "clamp_min_scalar_cpu", _BOOL,
                         post=_post_bound, cast_name=cpp_name, out_check="found",
                         fast=False, bfloat16_fn=fns.clamp_min_bfloat16),
    ops.clamp_min.Tensor: _Info("clamp_min", "promote", clamp_min, fast=False,
                                bfloat16_fn=fns.clamp_min_bfloat16),
    ops.clamp_max: _Info("clamp_max", "promote", clamp_max, "clamp_max_scalar_cpu", _BOOL,
                         post=_post_bound, cast_name=cpp_name, out_check="found",
                         fast=False, bfloat16_fn=fns.clamp_max_bfloat16),
    ops.clamp_max.Tensor: _Info("clamp_max", "promote", clamp_max, fast=False,
                                bfloat16_fn=fns.clamp_max_bfloat16),
    ops.nan_to_num: _Info("nan_to_num", "same", nan_to_num, out_check=_nan_to_num_out,
                          bfloat16_fn=nan_to_num_bfloat16),
    # transcendental and angle ops: integers and bool compute in the default float dtype
    ops.tan: _Info("tan", "float", fns.uf(np.tan)),
    ops.asin: _Info("asin", "float", fns.uf(np.arcsin)),
    ops.acos: _Info("acos", "float", fns.uf(np.arccos)),
    ops.atan: _Info("atan", "float", fns.uf(np.arctan)),
    ops.sinh: _Info("sinh", "float", fns.uf(np.sinh)),
    ops.cosh: _Info("cosh", "float", fns.uf(np.cosh)),
    ops.exp2: _Info("exp2", "float", fns.uf(np.exp2)),
    ops.expm1: _Info("expm1", "float", fns.uf(np.expm1)),
    ops.log2: _Info("log2", "float", fns.uf(np.log2)),
    ops.log10: _Info("log10", "float", fns.uf(np.log10)),
    ops.erfc: _Info("erfc", "float", fns.expr(fns.erfc)),
    ops.lgamma: _Info("lgamma", "float", fns.expr(fns.lgamma)),
    ops.digamma: _Info("digamma", "float", fns.expr(fns.digamma)),
    ops.erfinv: _Info("erfinv", "float", fns.expr(fns.erfinv)),
    ops.sinc: _Info("sinc", "float", sinc, opmath=True),
    ops.rad2deg: _Info("rad2deg", "float", rad2deg),
    ops.deg2rad: _Info("deg2rad", "float", deg2rad),
    ops.logit: _Info("logit", "float", logit, bfloat16_fn=logit_bfloat16),
    ops.atan2: _Info("atan2", "float", fns.uf(np.arctan2)),
    ops.hypot: _Info("hypot", "promote", fns.uf(np.hypot), unsupported=_INTEGRAL),
    ops.logaddexp: _Info("logaddexp", "promote", fns.uf(np.logaddexp), unsupported=_INTEGRAL),
    ops.logaddexp2: _Info("logaddexp2", "promote", fns.uf(np.logaddexp2),
                          unsupported=_INTEGRAL),
    ops.xlogy: _Info("xlogy", "float", xlogy, bfloat16_fn=xlogy_bfloat16),
    ops.fmod: _Info("fmod", "promote", fmod, unsupported=_BOOL,
                    data_check=fns.int_zero_data_check),
    # bfloat16: PyTorch's reduced-precision fmax/fmin are C's (numpy's) fmax/fmin
    ops.fmax: _Info("fmax", "promote", fmax, bfloat16_fn=fns.uf(np.fmax)),
    ops.fmin: _Info("fmin", "promote", fmin, bfloat16_fn=fns.uf(np.fmin)),
    ops.gcd: _Info("gcd", "promote", fns.uf(np.gcd), unsupported=_NOT_INTEGRAL),
    ops.lcm: _Info("lcm", "promote", lcm, unsupported=_NOT_INTEGRAL),
    ops.heaviside: _Info("heaviside", "promote", heaviside, check=_check_heaviside,
                         out_check=_heaviside_out),
}

for _op, _info in _INFOS.items():
    _register(_op, _info)


def _integral_nan_to_num_out(kernel):
    """PyTorch's ``nan_to_num.out`` copies integral and bool inputs (``resize_output`` then
    ``copy_``): a resized ``out`` is contiguous, not TensorIterator's layout."""
    def out_kernel(self, *args, out, **kwargs):
        if (isinstance(self, Tensor) and not self._dtype.is_floating_point
                and out._dtype is self._dtype and out._storage.device is self._storage.device):
            sizes = self._layout.sizes
            resize_out(out, Spec(sizes, contig(sizes), self._dtype, out._storage.device),
                       "nan_to_num.out")
        return kernel(self, *args, out=out, **kwargs)
    return out_kernel


def _integral_nan_to_num_(kernel):
    """PyTorch's ``nan_to_num_`` returns an integral or bool ``self`` untouched (no overlap
    check: an expanded integer tensor is fine); the version still moves."""
    def inplace_kernel(self, *args, **kwargs):
        if not self._dtype.is_floating_point:
            return self
        return kernel(self, *args, **kwargs)
    return inplace_kernel


for _device in ("cpu", "meta"):
    register_kernel(ops.nan_to_num.out, _device)(
        _integral_nan_to_num_out(get_kernel(ops.nan_to_num.out, _device)))
    register_kernel(ops.nan_to_num_, _device)(
        _integral_nan_to_num_(get_kernel(ops.nan_to_num_, _device)))
