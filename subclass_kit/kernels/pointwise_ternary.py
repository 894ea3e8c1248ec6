"""Three-operand pointwise ops: ``lerp`` (Scalar and Tensor weight), ``addcmul``, ``addcdiv``,
with their ``name_`` and ``out=`` overloads, registered through ``pointwise.py``'s machinery
(broadcasting, TensorIterator's output layout, promotion, in-place and out= checks).

PyTorch's dtype rules: ``lerp`` keeps ``self``'s dtype and requires ``end`` (and a weight
tensor with dims) to have it ("expected dtype float for `end` but got dtype double"), floating
types only; ``addcmul``/``addcdiv`` promote their three tensors, ``value`` is converted to the
result type (C's cast: ``value=0.5`` on integers is 0), ``addcdiv`` refuses two integral
divisor operands. Computes follow PyTorch's CPU kernels term by term (float16 in float32):
``lerp``: ``|w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w)``;
``addcmul``: ``self + value * t1 * t2``; ``addcdiv``: ``self + value * t1 / t2``.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..registry import ops
from ..tensor import Tensor
from ._scalars import cpp_name, wrap_scalar
from ..registry import overload_of
from ..storage import CPU
from ._iter_layout import contig
from ._scalars import quiet, unquiet
from .pointwise import _BOOL, _INTEGRAL, _Info, _fast_operands, _register

_ADDCDIV_INTEGER = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
    "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * sk.trunc(tensor1 / tensor2)).to(input.dtype) for "
    "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
    "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
    "for all dtypes.")


def _check_lerp(self, end, weight):
    if end._dtype is not self._dtype:
        raise RuntimeError(f"expected dtype {cpp_name(self._dtype)} for `end` but got dtype "
                           f"{cpp_name(end._dtype)}")
    if isinstance(weight, Tensor):
        if weight._layout.sizes and weight._dtype is not self._dtype:
            raise RuntimeError(f"expected dtype {cpp_name(self._dtype)} for `weight` but got "
                               f"dtype {cpp_name(weight._dtype)}")


def _lerp(out, self, end, weight):
    if out.dtype == self.dtype and (
            weight.__class__ in (float, int) if not isinstance(weight, np.ndarray | np.generic)
            else (weight.ndim == 0 and weight.dtype == out.dtype)):
        # One weight: one branch for every element, computed in place (no np.where over two
        # full-size candidates). Same operations in the same order as below.
        diff = np.asarray(np.subtract(end, self))   # 0-d operands give a numpy scalar
        if abs(weight) < 0.5:
            np.add(self, np.multiply(diff, weight, out=diff), out=out)
        else:
            np.subtract(end, np.multiply(diff, 1 - weight, out=diff), out=out)
        return
    diff = end - self
    small = np.abs(weight) < 0.5
    low = self + weight * diff
    high = end - diff * (1 - weight)
    np.copyto(out, np.where(small, low, high), casting="unsafe")


def scalar_operand(value, np_dtype):
    """A Scalar argument converted to the compute dtype as C++'s ``Scalar.to<T>()``: floats
    truncate toward zero for integral types."""
    if np_dtype.kind in "iu" and isinstance(value, float):
        value = int(value)
    return wrap_scalar(value, np_dtype)


def _combine(out, self, v, t1, t2, ufunc):
    """``out = self + v * t1 <ufunc> t2`` evaluated left to right as PyTorch's kernels do,
    reusing one temporary (written into ``out`` directly when it has the result's dtype)."""
    r = np.asarray(np.multiply(v, t1))
    shape = np.shape(t2)
    r = ufunc(r, t2, out=r if r.shape == shape or r.shape == np.broadcast_shapes(r.shape, shape)
              else None)
    if out.dtype == r.dtype == self.dtype or out.dtype == np.result_type(self, r):
        np.add(self, r, out=out)
    else:
        np.copyto(out, self + r, casting="unsafe")


def _addcmul(out, self, t1, t2, value=1):
    _combine(out, self, scalar_operand(value, np.result_type(self)), t1, t2, np.multiply)


def _check_addcdiv(self, tensor1, tensor2, value=1):
    if not tensor1._dtype.is_floating_point and not tensor2._dtype.is_floating_point:
        raise RuntimeError(_ADDCDIV_INTEGER)


def _addcdiv(out, self, t1, t2, value=1):
    _combine(out, self, scalar_operand(value, np.result_type(self)), t1, t2, np.divide)


_NOT_FLOAT = _INTEGRAL | _BOOL

_INFOS = {
    ops.lerp.Scalar: _Info("lerp", "same", _lerp, "lerp_kernel_scalar", _NOT_FLOAT, _check_lerp,
                           opmath=True, out_check="cast", fast=False),
    ops.lerp.Tensor: _Info("lerp", "same", _lerp, "lerp_kernel_tensor", _NOT_FLOAT, _check_lerp,
                           opmath=True, fast=False),
    ops.addcmul: _Info("addcmul", "promote", _addcmul, "addcmul_cpu_out", frozenset([dt.bool_]),
                       opmath=True, fast=False),
    ops.addcdiv: _Info("addcdiv", "promote", _addcdiv, "addcdiv_cpu_out", frozenset([dt.bool_]),
                       _check_addcdiv, opmath=True, fast=False),
}

for _op, _info in _INFOS.items():
    _register(_op, _info)


# In-place fast path (the optimizer's lerp_ / addcmul_ / addcdiv_ on every parameter, every step):
# a contiguous float32/float64 cpu ``self``, tensor operands of its dtype and shape on cpu that
# do not share its storage (``_fast_operands``), and a Python number for the scalar pass every
# check of the full kernel, so they go straight to the compute: the same arithmetic.
_FAST = frozenset([dt.float32, dt.float64])


def _fast_inplace(op_, compute, n_tensors, scalar_name):
    op_ = overload_of(op_)
    full = op_._kernels["cpu"]

    def kernel(self, *args, **kwargs):
        d = self._dtype
        sizes = self._layout.sizes
        if (d in _FAST and self._storage.device is CPU and self._layout.strides == contig(sizes)
                and len(args) <= n_tensors + 1 and kwargs.keys() <= {scalar_name}):
            scalar = args[n_tensors] if len(args) > n_tensors else kwargs.get(scalar_name, 1)
            arrays = _fast_operands(args[:n_tensors], d, sizes, self)
            if arrays is not None and len(arrays) == n_tensors and (
                    scalar.__class__ is float or scalar.__class__ is int):
                target = self._array()
                token = quiet()
                try:
                    compute(target, target, *arrays, scalar)
                finally:
                    unquiet(token)
                return self
        return full(self, *args, **kwargs)

    op_._kernels["cpu"] = kernel


_fast_inplace(ops.lerp_.Scalar, _lerp, 1, "weight")
_fast_inplace(ops.addcmul_.default, _addcmul, 2, "value")
_fast_inplace(ops.addcdiv_.default, _addcdiv, 2, "value")
