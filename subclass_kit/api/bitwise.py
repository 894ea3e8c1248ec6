"""Bit shifts: ``sk.bitwise_left_shift`` / ``sk.bitwise_right_shift`` (and ``out=``), their
methods and in-place methods, and the operators ``<<``, ``>>``, ``<<=``, ``>>=`` with their
reflected forms. Each call reaches the overload PyTorch's reaches (what a dispatch mode sees):

- ``x << y`` -> ``__lshift__.Tensor`` (``y`` a tensor) or ``__lshift__.Scalar`` (a number);
  ``2 << x`` -> ``bitwise_left_shift.Scalar_Tensor``; ``x <<= y`` -> ``__ilshift__.*``;
- ``sk.bitwise_left_shift(x, y)`` -> ``.Tensor`` / ``.Tensor_Scalar`` / ``.Scalar_Tensor``
  (their ``_out`` with ``out=``); ``x.bitwise_left_shift_(y)`` -> ``bitwise_left_shift_.*``.

Values: ``kernels/bitwise.py`` (counts out of range give 0 or the sign fill, as PyTorch).
"""

from __future__ import annotations

from .._argcheck import type_error
from ..function import public_api
from ..registry import ops
from ..tensor import Tensor
from .operators import _binary_operator

__all__ = ["bitwise_left_shift", "bitwise_right_shift"]

_NUMBER = (bool, int, float)


def _functional(name, packet):
    def fn(input, other, *, out=None):
        if isinstance(input, Tensor):
            overload = "Tensor" if isinstance(other, Tensor) else "Tensor_Scalar"
            if not isinstance(other, (Tensor,) + _NUMBER):
                raise type_error(name, "other", "Tensor", other, 2)
        elif isinstance(input, _NUMBER) and isinstance(other, Tensor):
            overload = "Scalar_Tensor"
            if out is not None:     # PyTorch's Python signature (Number self, ...) has no out=
                raise TypeError(
                    f"{name}() received an invalid combination of arguments - got "
                    f"({type(input).__name__}, Tensor, out=Tensor), but expected one of:\n"
                    " * (Tensor input, Tensor other, *, Tensor out = None)\n"
                    " * (Number self, Tensor other)\n"
                    " * (Tensor input, Number other, *, Tensor out = None)\n")
        else:
            raise type_error(name, "input", "Tensor", input, 1)
        if out is None:
            return getattr(packet, overload)(input, other)
        return getattr(packet, overload + "_out")(input, other, out=out)

    fn.__doc__ = (f"``torch.{name}``: elementwise shift of integer ``input`` by ``other`` "
                  "(broadcast, promoted); a count that is negative or at least the bit width "
                  "gives 0 (left) or the sign fill (right). Raises NotImplementedError for "
                  "bool or floating common dtypes.")
    fn.__name__ = fn.__qualname__ = name
    public = public_api(fn)
    setattr(Tensor, name, public)
    return public


bitwise_left_shift = _functional("bitwise_left_shift", ops.bitwise_left_shift)
bitwise_right_shift = _functional("bitwise_right_shift", ops.bitwise_right_shift)


def _inplace_method(name, packet):
    def fn(self, other):
        if not isinstance(other, (Tensor,) + _NUMBER):
            raise type_error(name, "other", "Tensor", other, 1)
        return (packet.Tensor if isinstance(other, Tensor) else packet.Tensor_Scalar)(self, other)

    fn.__doc__ = f"In-place ``{name[:-1]}``: the result is cast to ``self``'s dtype if allowed."
    fn.__name__ = fn.__qualname__ = name
    setattr(Tensor, name, public_api(fn))


_inplace_method("bitwise_left_shift_", ops.bitwise_left_shift_)
_inplace_method("bitwise_right_shift_", ops.bitwise_right_shift_)


# (the Python operators' shared builder: ``api/operators.py``)
_binary_operator("__lshift__", ops.__lshift__.Tensor, scalar_op=ops.__lshift__.Scalar)
_binary_operator("__rshift__", ops.__rshift__.Tensor, scalar_op=ops.__rshift__.Scalar)
_binary_operator("__rlshift__", ops.__lshift__.Tensor, reflected=True,
                 scalar_op=ops.bitwise_left_shift.Scalar_Tensor)
_binary_operator("__rrshift__", ops.__rshift__.Tensor, reflected=True,
                 scalar_op=ops.bitwise_right_shift.Scalar_Tensor)
_binary_operator("__ilshift__", ops.__ilshift__.Tensor, scalar_op=ops.__ilshift__.Scalar)
_binary_operator("__irshift__", ops.__irshift__.Tensor, scalar_op=ops.__irshift__.Scalar)
