"""The Python operators of ``Tensor`` (``+ - * / // % ** & | ^``, their reflected and in-place
forms, comparisons, unary ``- + abs ~``) and ``sk.rsub``: each calls the op PyTorch's operator
calls (``torch/_tensor.py`` and the C++ bindings), with the tensor where PyTorch puts it and
PyTorch's Scalar overload for a Python number (``x > 0`` is ``gt.Scalar``, ``x ** 2`` is
``pow.Tensor_Scalar``), so a handler sees the op stream PyTorch's handlers see.

Example::

    >>> x = sk.tensor([1.0, 2.0])
    >>> (2 - x).tolist(), (x // 2).tolist(), (x ** 2 > 1).tolist()
    ([1.0, 0.0], [0.0, 1.0], [False, True])
"""

from __future__ import annotations

from .. import _dtype as dt
from ..function import op_method, public_api
from ..registry import ops, overload_of
from ..tensor import Tensor
from .math import _COMPARISONS, _NUMBER, _need_tensor

__all__ = ["rsub"]


# -- operators -------------------------------------------------------------------------------
def _operator(name, impl, op=None, reflected=False, scalar_op=None):
    op = overload_of(op)            # a packet: the overload its call runs
    if op is not None and not op.decomposition:
        public = op_method(op, impl, name, reflected, scalar_op)
    else:
        public = public_api(impl)
        public.__name__ = public.__qualname__ = name
    setattr(Tensor, name, public)


def _binary_operator(name, op, reflected=False, scalar_op=None):
    """``Tensor.__add__`` and friends: NotImplemented for operands that are neither tensors nor
    numbers, and for a TypeError raised while dispatching (every subclass handler or mode
    declined, or one raised it), so Python raises its usual "unsupported operand" TypeError
    (``==``/``!=`` compare identity), as PyTorch's ``TypeError_to_NotImplemented_`` does.
    ``scalar_op``: the overload called when ``other`` is a Python number (PyTorch's Scalar
    overload: ``x > 0`` is ``gt.Scalar``, ``2 ** x`` is ``pow.Scalar``)."""
    op = overload_of(op)            # a packet: the overload its call runs
    number_op = scalar_op if scalar_op is not None else op

    def impl(self, other):
        if other.__class__ in _NUMBER:
            o = number_op
        elif isinstance(other, Tensor):
            o = op
        else:
            return NotImplemented
        try:
            return o(other, self) if reflected else o(self, other)
        except TypeError:
            return NotImplemented
    _operator(name, impl, op, reflected, scalar_op)


# The operators call what PyTorch's ``Tensor`` operators call (``torch/_tensor.py`` and the
# C++ bindings), so a handler sees the same op with the tensor where PyTorch puts it:
# ``2 + x`` / ``2 * x`` / ``2 & x`` are ``op(x, 2)``; ``2 // x``, ``2 % x`` and ``2 ** x`` keep
# the number first (``floor_divide(2, x)``; PyTorch's ``remainder.Scalar_Tensor`` and
# ``pow.Scalar`` there); ``2 - x`` is ``rsub(x, 2)`` and ``2 / x`` is ``reciprocal(x) * 2``
# (its values are that product's, not a division's).
_OPERATORS = (
    ("add", ops.add, None), ("sub", ops.sub, None), ("mul", ops.mul, None),
    ("truediv", ops.div, None), ("floordiv", ops.floor_divide, None),
    ("mod", ops.remainder, ops.remainder.Scalar), ("pow", ops.pow, ops.pow.Tensor_Scalar),
    ("and", ops.bitwise_and, ops.bitwise_and.Scalar),
    ("or", ops.bitwise_or, ops.bitwise_or.Scalar),
    ("xor", ops.bitwise_xor, ops.bitwise_xor.Scalar))
for _name, _op, _scalar in _OPERATORS:
    _binary_operator(f"__{_name}__", _op, scalar_op=_scalar)
for _name, _op, _scalar in _OPERATORS:
    if _name in ("add", "mul", "and", "or", "xor"):
        _binary_operator(f"__r{_name}__", _op, scalar_op=_scalar)
for _name, _op, _scalar in (("floordiv", ops.floor_divide, None),
                            ("mod", ops.remainder, ops.remainder.Scalar_Tensor),
                            ("pow", ops.pow, ops.pow.Scalar)):
    _binary_operator(f"__r{_name}__", _op, reflected=True, scalar_op=_scalar)
for _name, _op, _scalar in (
        ("add", ops.add_, None), ("sub", ops.sub_, None), ("mul", ops.mul_, None),
        ("truediv", ops.div_, None), ("floordiv", ops.floor_divide_.Tensor, None),
        ("mod", ops.remainder_, ops.remainder_.Scalar), ("pow", ops.pow_, ops.pow_.Scalar),
        ("and", ops.bitwise_and_, ops.bitwise_and_.Scalar),
        ("or", ops.bitwise_or_, ops.bitwise_or_.Scalar),
        ("xor", ops.bitwise_xor_, ops.bitwise_xor_.Scalar)):
    _binary_operator(f"__i{_name}__", _op, scalar_op=_scalar)


def _rsub_operator(self, other):
    """``other - self`` for a Python number (or tensor) ``other``: ``rsub``, as PyTorch's
    ``Tensor.__rsub__``."""
    if other.__class__ in _NUMBER:
        op = ops.rsub.Scalar
    elif isinstance(other, Tensor):
        op = ops.rsub.Tensor
    else:
        return NotImplemented
    try:
        return op(self, other)
    except TypeError:
        return NotImplemented


def _rtruediv_operator(self, other):
    """``other / self``: ``self.reciprocal() * other``, as PyTorch's ``Tensor.__rtruediv__``
    (so ``7 / x`` rounds twice, as there)."""
    if other.__class__ not in _NUMBER and not isinstance(other, Tensor):
        return NotImplemented
    try:
        return ops.mul.Tensor(ops.reciprocal.default(self), other)
    except TypeError:
        return NotImplemented


_operator("__rsub__", _rsub_operator)
_operator("__rtruediv__", _rtruediv_operator)


def _rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (``torch.rsub``): ``rsub.Tensor`` for a tensor ``other``,
    ``rsub.Scalar`` for a number. Raises what ``sub`` raises (bool operands, a float
    ``alpha`` with integral inputs)."""
    _need_tensor("rsub", "input", 1, input)
    if isinstance(other, Tensor):
        if alpha.__class__ is int and alpha == 1:
            return ops.rsub.Tensor(input, other)
        return ops.rsub.Tensor(input, other, alpha=alpha)
    if alpha.__class__ is int and alpha == 1:
        return ops.rsub.Scalar(input, other)
    return ops.rsub.Scalar(input, other, alpha)


rsub = public_api(_rsub)
rsub.__name__ = rsub.__qualname__ = "rsub"


for _name in _COMPARISONS:
    _binary_operator(f"__{_name}__", getattr(ops, _name), scalar_op=getattr(ops, _name).Scalar)


def _neg(self):
    return ops.neg.default(self)


def _pos(self):
    if self._dtype is dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def _invert(self):
    if self._dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return ops.bitwise_not.default(self)


_operator("__neg__", _neg)
_operator("__pos__", _pos)
_operator("__abs__", lambda self: ops.abs.default(self))
_operator("__invert__", _invert)
Tensor.__hash__ = object.__hash__
