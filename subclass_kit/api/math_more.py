"""More pointwise math (``sk.isnan``, ``sk.trunc``, ``sk.clamp_min``, ...): public functions,
``Tensor`` methods and their in-place (``name_``) and ``out=`` forms, built like ``api/math.py``'s.
Kernels: ``kernels/pointwise_more.py``; composites (``square`` -> ``pow``, ``fix`` -> ``trunc``,
``isfinite`` -> ``abs``/``ne``/``eq``/``mul``): ``decompositions.py``.

Example::

    >>> x = sk.tensor([1.5, float("nan"), -float("inf")])
    >>> sk.isnan(x).tolist(), sk.nan_to_num(x, neginf=-1.0).tolist()
    ([False, True, False], [1.5, 0.0, -1.0])
"""

from __future__ import annotations

from ..function import public_api
from ..registry import ops
from ..tensor import Tensor
from . import math as _math

__all__ = []

_NUMBER = (bool, int, float)


def _export(name, fn):
    public = public_api(fn)
    public.__name__ = public.__qualname__ = name
    setattr(Tensor, name, public)
    globals()[name] = public
    __all__.append(name)
    return public


def _adopt(name):
    """A function ``api/math.py``'s builders installed: re-exported from here."""
    globals()[name] = getattr(_math, name)
    __all__.append(name)


for _name in ("trunc", "frac", "sgn", "square", "fix", "isposinf", "isneginf", "signbit", "tan",
              "asin", "acos", "atan", "sinh", "cosh", "exp2", "expm1", "log2", "log10", "erfc",
              "sinc", "rad2deg", "deg2rad", "lgamma", "digamma", "erfinv"):
    _math._unary(_name)
    _adopt(_name)
    if hasattr(_math, _name + "_"):
        _adopt(_name + "_")
for _name in ("logical_xor", "atan2", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin", "gcd",
              "lcm"):
    _math._binary(_name, numbers_second=False)
    _adopt(_name)
    if hasattr(_math, _name + "_"):
        _adopt(_name + "_")
_math._binary("fmod")
_adopt("fmod")
_adopt("fmod_")
_math._binary("xlogy", numbers_first=True)
_adopt("xlogy")
_adopt("xlogy_")
Tensor.arctan2, Tensor.arctan2_ = Tensor.atan2, Tensor.atan2_
Tensor.arcsin, Tensor.arccos, Tensor.arctan = Tensor.asin, Tensor.acos, Tensor.atan
Tensor.arcsin_, Tensor.arccos_, Tensor.arctan_ = Tensor.asin_, Tensor.acos_, Tensor.atan_
arctan2, arcsin, arccos, arctan = atan2, asin, acos, atan  # noqa: F821 (set by _adopt)
__all__ += ["arctan2", "arcsin", "arccos", "arctan"]


def _no_out(name, op):
    def fn(input):
        _math._need_tensor(name, "input", 1, input)
        return op(input)
    fn.__doc__ = (f"Elementwise ``{name}`` (``torch.{name}``): a bool tensor, False for "
                  "integers and bool; no ``out=`` (as PyTorch's Python API).")
    _export(name, fn)


_no_out("isnan", ops.isnan)
_no_out("isinf", ops.isinf)
_no_out("isfinite", ops.isfinite)


def heaviside(input, values, *, out=None):
    """0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0`` (NaN: 0);
    ``input``, ``values`` (and ``out``) must have one dtype."""
    _math._need_tensor("heaviside", "input", 1, input)
    _math._need_tensor("heaviside", "values", 2, values)
    if out is not None:
        return ops.heaviside.out(input, values, out=out)
    return ops.heaviside.default(input, values)


def heaviside_(self, values):
    """In-place ``heaviside``."""
    _math._need_tensor("heaviside_", "values", 1, values)
    return ops.heaviside_.default(self, values)


_export("heaviside", heaviside)
_export("heaviside_", heaviside_)


def float_power(input, exponent, *, out=None):
    """``pow`` in float64: both operands (tensors or numbers, not both numbers) are converted to
    float64 first; ``out`` must be float64."""
    if not isinstance(input, Tensor):
        _math._need_tensor("float_power", "exponent", 2, exponent)
    if out is not None:
        return ops.float_power.Tensor_Tensor_out(input, exponent, out=out)
    return ops.float_power.Tensor_Tensor(input, exponent)


def float_power_(self, exponent):
    """In-place ``float_power``: ``self`` must be float64."""
    return ops.float_power_.Tensor(self, exponent)


_export("float_power", float_power)
_export("float_power_", float_power_)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's largest finite value), -inf ->
    ``neginf`` (default: its lowest). Integer and bool tensors are copied unchanged."""
    _math._need_tensor("nan_to_num", "input", 1, input)
    if out is not None:
        return ops.nan_to_num.out(input, nan, posinf, neginf, out=out)
    return ops.nan_to_num.default(input, nan, posinf, neginf)


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    """In-place ``nan_to_num``."""
    return ops.nan_to_num_.default(self, nan, posinf, neginf)


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``; ``eps`` (if not None) clamps ``p`` into ``[eps, 1 - eps]``.
    Integers and bool compute in the default float dtype."""
    _math._need_tensor("logit", "input", 1, input)
    if out is not None:
        return ops.logit.out(input, eps, out=out)
    return ops.logit.default(input) if eps is None else ops.logit.default(input, eps)


def logit_(self, eps=None):
    """In-place ``logit``."""
    return ops.logit_.default(self) if eps is None else ops.logit_.default(self, eps)


_export("logit", logit)
_export("logit_", logit_)
_export("nan_to_num", nan_to_num)
_export("nan_to_num_", nan_to_num_)


def _bound(name, argname):
    def pick(bound):
        if isinstance(bound, Tensor):
            return getattr(ops, name).Tensor
        if not isinstance(bound, _NUMBER):
            raise TypeError(f"{name}(): argument '{argname}' (position 2) must be Tensor, not "
                            f"{type(bound).__name__}")
        return getattr(ops, name).default

    def take(args, kwargs, fname):
        if len(args) + len(kwargs) != 1 or (kwargs and argname not in kwargs):
            raise TypeError(f"{fname}() takes exactly one argument '{argname}'")
        return args[0] if args else kwargs[argname]

    def fn(input, *args, out=None, **kwargs):
        _math._need_tensor(name, "input", 1, input)
        bound = take(args, kwargs, name)
        op = pick(bound)
        if out is not None:
            return op._overloads[op.overload + "_out" if op.overload != "default"
                                 else "out"](input, bound, out=out)
        return op(input, bound)

    def fn_(self, *args, **kwargs):
        bound = take(args, kwargs, name + "_")
        return getattr(ops, name + "_")._overloads[pick(bound).overload](self, bound)

    fn.__doc__ = (f"``torch.{name}(input, {argname})``: ``{argname}`` is a number or a tensor "
                  "(broadcast); the result type promotes like ``clamp``; NaN propagates.")
    fn_.__doc__ = f"In-place ``{name}``."
    _export(name, fn)
    _export(name + "_", fn_)


_bound("clamp_min", "min")
_bound("clamp_max", "max")
