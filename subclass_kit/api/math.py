"""Pointwise math: ``sk.add``/``Tensor.add`` and friends, their in-place (``add_``) and
``out=`` forms, and the Python operators (``+ - * / // % ** @`` and comparisons).

Python numbers take part as PyTorch's "wrapped numbers" (lowest promotion priority): the kernels
accept them in tensor positions, so ``1.5 - int_tensor`` is float32 like ``int_tensor - 1.5``.
"""

from __future__ import annotations

from ..function import public_api
from ..registry import _lookup, ops
from ..tensor import Tensor
from ._register import method

__all__ = []


def _out_overload(op):
    for ov in op._overloads.values():
        if ov.is_out and ov.schema.functional_variant == op.name:
            args = [a.name for a in ov.schema.arguments if not a.kwarg_only]
            if args == [a.name for a in op.schema.arguments if not a.kwarg_only]:
                return ov
    return None


def _export(name, fn):
    public = public_api(fn)
    public.__name__ = public.__qualname__ = name
    setattr(Tensor, name, public)
    globals()[name] = public
    __all__.append(name)
    return public


def _unary(name, op_name=None):
    op = _lookup(op_name or name)
    out_op = _out_overload(op)
    inplace = _lookup((op_name or name) + "_")

    def fn(input, *, out=None):
        if out is None:
            return op(input)
        return out_op(input, out=out)

    fn.__doc__ = f"Elementwise ``{name}`` (PyTorch's ``torch.{name}``); ``out=`` writes into out."
    _export(name, fn)
    if inplace is not None:
        def fn_(self):
            return inplace(self)
        _export(name + "_", fn_)


for _name in ("abs", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
              "sigmoid", "relu", "reciprocal", "sign", "floor", "ceil", "round", "logical_not",
              "bitwise_not", "erf", "silu"):
    _unary(_name)
Tensor.negative = Tensor.neg
Tensor.absolute = Tensor.abs


def _binary(name, op_name=None):
    op = _lookup(op_name or name)
    out_op = _out_overload(op)
    inplace = _lookup((op_name or name) + "_")

    def fn(input, other, *, out=None):
        if out is None:
            return op(input, other)
        return out_op(input, other, out=out)

    fn.__doc__ = (f"Elementwise ``{name}`` with broadcasting and type promotion (PyTorch's "
                  f"``torch.{name}``).")
    _export(name, fn)
    if inplace is not None:
        def fn_(self, other):
            return inplace(self, other)
        _export(name + "_", fn_)


for _name in ("mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
              "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor", "remainder"):
    _binary(_name)
Tensor.multiply = Tensor.mul
Tensor.greater = Tensor.gt
Tensor.less = Tensor.lt


def _add_like(name):
    op = _lookup(name)
    out_op = _out_overload(op)
    inplace = _lookup(name + "_")

    def fn(input, other, *, alpha=1, out=None):
        if out is not None:
            return out_op(input, other, alpha=alpha, out=out)
        if alpha == 1:
            return op(input, other)
        return op(input, other, alpha=alpha)

    def fn_(self, other, *, alpha=1):
        if alpha == 1:
            return inplace(self, other)
        return inplace(self, other, alpha=alpha)

    fn.__doc__ = (f"``input {'+' if name == 'add' else '-'} alpha * other`` with broadcasting and "
                  "PyTorch's type promotion.")
    _export(name, fn)
    _export(name + "_", fn_)


_add_like("add")
_add_like("sub")
Tensor.subtract = Tensor.sub


def div(input, other, *, rounding_mode=None, out=None):
    """True division (int inputs give the default float), or ``rounding_mode`` "trunc" /
    "floor" (int inputs stay int; integer division by zero raises RuntimeError)."""
    if rounding_mode is None:
        if out is not None:
            return ops.div.out(input, other, out=out)
        return ops.div(input, other)
    if out is not None:
        return ops.div.Tensor_mode_out(input, other, rounding_mode=rounding_mode, out=out)
    return ops.div.Tensor_mode(input, other, rounding_mode=rounding_mode)


def div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return ops.div_(self, other)
    return ops.div_.Tensor_mode(self, other, rounding_mode=rounding_mode)


_export("div", div)
_export("div_", div_)
Tensor.divide = Tensor.true_divide = Tensor.div


def floor_divide(input, other, *, out=None):
    return div(input, other, rounding_mode="floor", out=out)


_export("floor_divide", floor_divide)


def pow(input, exponent, *, out=None):
    if out is not None:
        return ops.pow.Tensor_Tensor_out(input, exponent, out=out)
    return ops.pow(input, exponent)


def pow_(self, exponent):
    return ops.pow_(self, exponent)


_export("pow", pow)
_export("pow_", pow_)


def clamp(input, min=None, max=None, *, out=None):
    """Clamp into ``[min, max]`` (either may be None; PyTorch raises when both are)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if out is not None:
        return ops.clamp.out(input, min, max, out=out)
    return ops.clamp(input, min, max)


def clamp_(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return ops.clamp_(self, min, max)


_export("clamp", clamp)
_export("clamp_", clamp_)
Tensor.clip = Tensor.clamp
Tensor.clip_ = Tensor.clamp_


def gelu(input, approximate="none"):
    """Gaussian error linear unit; ``approximate`` is "none" (erf) or "tanh"."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh.")
    if approximate == "none":
        return ops.gelu(input)
    return ops.gelu(input, approximate=approximate)


_export("gelu", gelu)


def where(condition, input=None, other=None):
    """``condition ? input : other`` elementwise, broadcasting all three."""
    if input is None and other is None:
        return ops.nonzero(condition)
    return ops.where(condition, input, other)


_export("where", where)


def masked_fill(input, mask, value):
    return ops.masked_fill(input, mask, value)


def masked_fill_(self, mask, value):
    return ops.masked_fill_(self, mask, value)


_export("masked_fill", masked_fill)
_export("masked_fill_", masked_fill_)


def zero_(self):
    return ops.zero_(self)


def fill_(self, value):
    return ops.fill_(self, value)


def copy_(self, src, non_blocking=False):
    return ops.copy_(self, src)


_export("zero_", zero_)
_export("fill_", fill_)
_export("copy_", copy_)


# -- operators ------------------------------------------------------------------------------------
def _reflected(op):
    def fn(self, other):
        return op(other, self)
    return fn


def _operator(name, impl):
    public = public_api(impl)
    public.__name__ = public.__qualname__ = name
    setattr(Tensor, name, public)


_operator("__add__", lambda self, other: ops.add(self, other))
_operator("__radd__", lambda self, other: ops.add(other, self))
_operator("__iadd__", lambda self, other: ops.add_(self, other))
_operator("__sub__", lambda self, other: ops.sub(self, other))
_operator("__rsub__", _reflected(ops.sub))
_operator("__isub__", lambda self, other: ops.sub_(self, other))
_operator("__mul__", lambda self, other: ops.mul(self, other))
_operator("__rmul__", lambda self, other: ops.mul(other, self))
_operator("__imul__", lambda self, other: ops.mul_(self, other))
_operator("__truediv__", lambda self, other: ops.div(self, other))
_operator("__rtruediv__", _reflected(ops.div))
_operator("__itruediv__", lambda self, other: ops.div_(self, other))
_operator("__floordiv__", lambda self, other: ops.div.Tensor_mode(self, other,
                                                                   rounding_mode="floor"))
_operator("__rfloordiv__", lambda self, other: ops.div.Tensor_mode(other, self,
                                                                    rounding_mode="floor"))
_operator("__mod__", lambda self, other: ops.remainder(self, other))
_operator("__rmod__", _reflected(ops.remainder))
_operator("__pow__", lambda self, other: ops.pow(self, other))
_operator("__rpow__", _reflected(ops.pow))
_operator("__ipow__", lambda self, other: ops.pow_(self, other))
_operator("__neg__", lambda self: ops.neg(self))
_operator("__pos__", lambda self: self)
_operator("__abs__", lambda self: ops.abs(self))
_operator("__invert__", lambda self: ops.logical_not(self) if self.dtype.name == "bool"
          else ops.bitwise_not(self))
_operator("__and__", lambda self, other: ops.bitwise_and(self, other))
_operator("__rand__", lambda self, other: ops.bitwise_and(other, self))
_operator("__or__", lambda self, other: ops.bitwise_or(self, other))
_operator("__ror__", lambda self, other: ops.bitwise_or(other, self))
_operator("__xor__", lambda self, other: ops.bitwise_xor(self, other))
_operator("__rxor__", lambda self, other: ops.bitwise_xor(other, self))
_operator("__eq__", lambda self, other: ops.eq(self, other))
_operator("__ne__", lambda self, other: ops.ne(self, other))
_operator("__lt__", lambda self, other: ops.lt(self, other))
_operator("__le__", lambda self, other: ops.le(self, other))
_operator("__gt__", lambda self, other: ops.gt(self, other))
_operator("__ge__", lambda self, other: ops.ge(self, other))
Tensor.__hash__ = object.__hash__
