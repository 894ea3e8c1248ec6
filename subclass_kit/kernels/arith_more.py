"""``floor_divide`` and ``rsub``: the ops PyTorch's ``x // y`` and ``2 - x`` call, computed as
the ops they equal.

- ``floor_divide(self, other)`` (``//``; ``//=`` is ``floor_divide_.Tensor``) is
  ``div(self, other, rounding_mode="floor")`` through ``pointwise.py``'s machinery (one rule:
  broadcasting, promotion, TensorIterator's layout; See Note [One rule per op]), errors
  included (ATen's ``floor_divide`` runs ``div_floor_stub``): "div_floor_cpu" not implemented
  for 'Bool', "ZeroDivisionError" for an integer division by zero. Its ``out=`` with a number
  ``other`` is PyTorch's generated ``floor_divide.Scalar_out`` (``register_autogen_out``).
- ``rsub.Tensor(self, other, alpha=1)`` and ``rsub.Scalar`` are ``sub``'s kernel called as
  ``sub(other, self, alpha)``, as ATen's ``rsub`` is: ``other``'s layout leads the result's,
  and the bool, ``alpha`` and broadcasting errors are ``sub``'s. Their ``out=`` overloads are
  generated in PyTorch (``register_autogen_out``).
"""

from __future__ import annotations

import numpy as np

from ..registry import ops, register_kernel
from ..storage import META, round_to_bfloat16
from ._iter_layout import alloc, contig
from . import _pointwise_fns as fns
from .pointwise import (_NOT_BOOL, _Info, _fast_dtypes, _register, _register_inplace,
                        register_autogen_out)


def _floor(out, a, b):
    fns.div_mode(out, a, b, "floor")


def _floor_zero_check(common, self, other):
    fns.int_zero_data_check(common, self, other, rounding_mode="floor")


_floor.__name__ = "floor_divide"
_FLOOR_DIVIDE = _Info("floor_divide", "promote", _floor, "div_floor_cpu", _NOT_BOOL,
                      opmath=True, exact_numbers=True, data_check=_floor_zero_check)
_register(ops.floor_divide.default, _FLOOR_DIVIDE)
_register_inplace(ops.floor_divide_.Tensor, _FLOOR_DIVIDE, ops.floor_divide.default.fill,
                  frozenset())


def _swapped(sub_kernel):
    """``rsub.Tensor``'s kernel from ``sub.Tensor``'s: ``sub(other, self, alpha)``, operands in
    that order (the result's layout and the broadcasting error follow ``other`` first)."""
    def kernel(self, other, **kwargs):
        return sub_kernel(other, self, **kwargs)
    return kernel


def _floor_divide_out(tensor_out, scalar_out):
    """``floor_divide.out``: TensorIterator's out= for a tensor ``other``; for a number, as
    PyTorch's ``floor_divide.Scalar_out`` (generated: ``register_autogen_out``)."""
    def kernel(self, other, *, out):
        if isinstance(other, (bool, int, float)):
            return scalar_out(self, other, out=out)
        return tensor_out(self, other, out=out)
    return kernel


def _scalar_overload(tensor_kernel):
    """``rsub.Scalar``'s kernel from ``rsub.Tensor``'s: ``alpha`` is positional in the Scalar
    overload and keyword-only in the Tensor one."""
    def kernel(self, other, alpha=1):
        if alpha.__class__ is int and alpha == 1:
            return tensor_kernel(self, other)
        return tensor_kernel(self, other, alpha=alpha)
    return kernel


# ``rsub``'s rule and fill are ``sub``'s with the operands swapped (the Scalar overload's
# ``alpha`` is positional), for its generated out= overloads.
def _rsub_rule(self, other, alpha=1):
    return ops.sub.Tensor.rule(other, self, alpha=alpha)


def _rsub_fill(outs, spec, self, other, alpha=1):
    ops.sub.Tensor.fill(outs, spec, other, self, alpha=alpha)


for _op in (ops.rsub.Tensor, ops.rsub.Scalar):
    _op.rule, _op.fill = _rsub_rule, _rsub_fill
for _device in ("cpu", "meta"):
    _tensor = _swapped(ops.sub.Tensor._kernels[_device])
    register_kernel(ops.rsub.Tensor, _device)(_tensor)
    register_kernel(ops.rsub.Scalar, _device)(_scalar_overload(_tensor))
register_autogen_out(ops.rsub.Tensor_out, ops.rsub.Tensor)
register_autogen_out(ops.rsub.Scalar_out, ops.rsub.Scalar)
_floor_divide_out_kernels = dict(ops.floor_divide.out._kernels)
register_autogen_out(ops.floor_divide.out, ops.floor_divide.default)
for _device in ("cpu", "meta"):
    register_kernel(ops.floor_divide.out, _device)(_floor_divide_out(
        _floor_divide_out_kernels[_device], ops.floor_divide.out._kernels[_device]))


# The Scalar overloads (``pow.Tensor_Scalar``, ``eq.Scalar``, ``remainder.Scalar_Tensor``...)
# compute as their Tensor overload does with a Python number in that position: the kernels
# already take numbers there (a wrapped number; ``pow``'s exponent a parameter).
_SCALAR_OVERLOADS = {
    ops.pow.Tensor_Tensor: ("Tensor_Scalar", "Scalar"),
    ops.remainder.Tensor: ("Scalar", "Scalar_Tensor"),
    ops.fmod.Tensor: ("Scalar",),
    **{getattr(ops, n).Tensor: ("Scalar",) for n in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{getattr(ops, n).Tensor: ("Scalar", "Scalar_Tensor")
       for n in ("bitwise_and", "bitwise_or", "bitwise_xor")},
}


def _pow_scalar(out, a, b):
    """``pow.Tensor_Scalar``'s compute: PyTorch's ``pow_tensor_scalar_optimized_kernel`` takes
    a floating tensor to the power 3 as ``x * x * x`` and to -2 as ``1 / (x * x)``, each
    product rounded in the dtype (not ``powf``'s one rounding)."""
    if not isinstance(b, np.ndarray) and b.__class__ is not bool and out.dtype.kind == "f":
        if b == 3:      # (``out`` may be ``a``: the in-place ``pow_``)
            np.multiply(np.multiply(a, a), a, out=out)
            return
        if b == -2:
            np.divide(1, np.multiply(a, a), out=out)
            return
    fns.pow(out, a, b)


def _pow_scalar_bfloat16(out, a, b):
    """bfloat16 ``pow.Tensor_Scalar`` (``a``: float32 values): the products of 3 and -2 are
    rounded to bfloat16 in between, and another exponent is first rounded to bfloat16, as the
    kernel's ``exp_scalar.to<BFloat16>()`` (0.5, -0.5 and -1 take the sqrt, rsqrt and
    reciprocal kernels, which round once)."""
    if not isinstance(b, np.ndarray) and b.__class__ is not bool:
        if b == 3:
            np.multiply(round_to_bfloat16(np.multiply(a, a)), a, out=out)
            return
        if b == -2:
            np.divide(1, round_to_bfloat16(np.multiply(a, a)), out=out)
            return
        if b not in (0.5, -0.5, -1):
            b = float(round_to_bfloat16(np.float32(b)))
    fns.pow(out, a, b)


def _pow_scalar_float16(out, a, b):
    """float16 ``pow.Tensor_Scalar``: ``std::pow`` of the exponent rounded to float16."""
    if not isinstance(b, np.ndarray) and b.__class__ is not bool:
        b = float(np.float16(b))
    fns.pow(out, a, b)


_POW_SCALAR = _Info("pow", "promote", _pow_scalar, check=fns.check_pow, post=fns.post_pow,
                    opmath=True, wrapped=False, bfloat16_fn=_pow_scalar_bfloat16,
                    float16_fn=_pow_scalar_float16)
for _tensor_op, _names in _SCALAR_OVERLOADS.items():
    for _name in _names:
        _overload = _tensor_op.overloadpacket._overloads[_name]
        _register(_overload, _POW_SCALAR if _name == "Tensor_Scalar" else _tensor_op.info)
_register_inplace(ops.pow_.Scalar, _POW_SCALAR, ops.pow.Tensor_Scalar.fill,
                  _fast_dtypes(_POW_SCALAR))
# PyTorch generates the out= of the Scalar-self overloads ("autogen").
for _packet in (ops.remainder, ops.bitwise_and, ops.bitwise_or, ops.bitwise_xor):
    register_autogen_out(_packet.Scalar_Tensor_out, _packet.Scalar_Tensor)


def _contiguous(t):
    """A contiguous copy of tensor ``t`` (``t`` itself when it already is), made below
    dispatch as a kernel makes its operands."""
    sizes = t._layout.sizes
    if t._layout.strides == contig(sizes):
        return t
    c = alloc(sizes, contig(sizes), t._dtype, t._storage.device)
    if t._storage.device is not META:
        np.copyto(c._array(), t._array())
    return c


def _contiguous_result(kernel):
    """``pow.Scalar`` (and its out=): PyTorch's structured meta function gives the result the
    exponent's sizes with contiguous strides (not TensorIterator's layout of the exponent):
    the kernel runs on a contiguous exponent."""
    def wrapped(self, exponent, **kwargs):
        return kernel(self, _contiguous(exponent), **kwargs)
    return wrapped


for _device in ("cpu", "meta"):
    for _op in (ops.pow.Scalar, ops.pow.Scalar_out):
        register_kernel(_op, _device)(_contiguous_result(_op._kernels[_device]))
