"""Bit shifts: ``bitwise_left_shift`` / ``bitwise_right_shift`` (``.Tensor``, ``.Tensor_Scalar``,
``.Scalar_Tensor``, their ``name_`` and ``out=``), and the operator overloads PyTorch's ``<<`` /
``>>`` / ``<<=`` / ``>>=`` dispatch to (``__lshift__``, ``__rshift__``, ``__ilshift__``,
``__irshift__``, ``.Tensor`` and ``.Scalar``), through ``pointwise.py``'s machinery (one rule:
broadcasting, promotion, TensorIterator's layout; See Note [One rule per op]).

Values follow PyTorch's CPU kernels (``BinaryOpsKernel.cpp``), not C's undefined behaviour:
a shift count that is negative or at least the bit width of the dtype gives 0 for ``<<`` and,
for ``>>``, the sign fill (``a >> (bits - 1)``: 0 or -1) of signed dtypes and 0 of ``uint8``.
Left shifts wrap (they run on the unsigned twin of the dtype). Only integer dtypes: bool and
floating common dtypes raise NotImplementedError ``"lshift_cpu" not implemented for 'Float'``.
"""

from __future__ import annotations

import numpy as np

from ..registry import ops
from .pointwise import (_BOOL, _FLOATING, _Info, _register, _register_inplace,
                        register_autogen_out)

_UNSUPPORTED = _FLOATING | _BOOL


def _operands(out, a, b):
    d = out.dtype
    return np.asarray(a, dtype=d), np.asarray(b, dtype=d), d.itemsize * 8


def _lshift(out, a, b):
    a, b, bits = _operands(out, a, b)
    valid = (b >= 0) & (b < bits)
    unsigned = np.dtype(f"u{a.itemsize}")
    shifted = np.left_shift(a.view(unsigned), np.where(valid, b, 0).astype(unsigned))
    np.copyto(out, np.where(valid, shifted.view(a.dtype), 0), casting="unsafe")


def _rshift(out, a, b):
    a, b, bits = _operands(out, a, b)
    valid = (b >= 0) & (b < bits)
    shifted = np.right_shift(a, np.where(valid, b, bits - 1).astype(a.dtype))
    if a.dtype.kind == "u":     # unsigned: out-of-range counts shift every bit out
        shifted = np.where(valid, shifted, 0)
    np.copyto(out, shifted, casting="unsafe")


_lshift.__name__, _rshift.__name__ = "lshift", "rshift"

_LEFT = _Info("bitwise_left_shift", "promote", _lshift, "lshift_cpu", _UNSUPPORTED, fast=False)
_RIGHT = _Info("bitwise_right_shift", "promote", _rshift, "rshift_cpu", _UNSUPPORTED,
               fast=False)

for _packet, _info in ((ops.bitwise_left_shift, _LEFT), (ops.bitwise_right_shift, _RIGHT),
                       (ops.__lshift__, _LEFT), (ops.__rshift__, _RIGHT)):
    for _name in ("Tensor", "Tensor_Scalar", "Scalar_Tensor", "Scalar"):
        if _name in _packet._overloads:
            _register(_packet._overloads[_name], _info)

for _op, _functional in ((ops.__ilshift__.Tensor, ops.__lshift__.Tensor),
                         (ops.__ilshift__.Scalar, ops.__lshift__.Scalar),
                         (ops.__irshift__.Tensor, ops.__rshift__.Tensor),
                         (ops.__irshift__.Scalar, ops.__rshift__.Scalar)):
    _register_inplace(_op, _functional.info, _functional.fill, frozenset())



for _packet in (ops.__lshift__, ops.__rshift__):
    register_autogen_out(_packet.Tensor_out, _packet.Tensor)
    register_autogen_out(_packet.Scalar_out, _packet.Scalar)
for _packet in (ops.bitwise_left_shift, ops.bitwise_right_shift):   # "autogen" in PyTorch too
    register_autogen_out(_packet.Scalar_Tensor_out, _packet.Scalar_Tensor)
