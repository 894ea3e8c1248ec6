"""PyTorch's pointwise backward ops: ``threshold_backward`` (relu's backward),
``gelu_backward``, ``sigmoid_backward`` and ``tanh_backward``, so that the autograd mode's
backward pass calls the same ops as PyTorch's (a mode sees one op where a composition would
show five).

Each is a binary TensorIterator op over ``(grad_output, self|output)``: broadcasting, type
promotion and TensorIterator's output layout as ``pointwise.py``; the Scalar ``threshold`` takes
no part in promotion (it is cast to the computation type, as ATen's ``threshold_kernel`` does).
dtype errors are PyTorch's: ``"threshold_cpu" not implemented for 'Bool'``,
``"GeluBackwardKernelImpl"``, ``"sigmoid_backward_cpu"`` and ``"tanh_backward_cpu"`` for
integral and bool types; ``gelu_backward`` checks ``approximate`` as ``gelu`` does. float16
computes in float32 (ATen's opmath). Note [One rule per op].
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..registry import ops
from ..storage import CPU
from ..tensor import Tensor
from . import _pointwise_fns as fns
from ._gelu import gelu_backward
from ._common import Spec, register_rule, type_name
from ._fma import SPLIT
from ._iter_layout import alloc, contig
from ._scalars import quiet, unquiet
from .pointwise import _BOOL, _INTEGRAL, _Info, pointwise_spec

_F32 = np.dtype(np.float32)
_REDUCED = (dt.float16, dt.bfloat16)


def _make_rule(info: _Info, kname: str, unsupported, check=None, self_first=False):
    """``self_first``: the iterator's first operand is ``self`` (threshold_backward is ATen's
    ``threshold`` kernel over ``(self, grad)``), which decides the output layout and the
    size-mismatch message."""
    def rule(grad_output, other, *args, **kwargs):
        if check is not None:
            check(*args, **kwargs)
        operands = (other, grad_output) if self_first else (grad_output, other)
        sizes, strides, common, out, device = pointwise_spec(info, operands, {})
        if common in unsupported:
            raise NotImplementedError(f'"{kname}" not implemented for \'{type_name(common)}\'')
        return Spec(sizes, strides, out, device, common)
    return rule


def _make_fill(compute, reduced=False, into=False):
    """``compute(dy, x, *args, **kwargs) -> array`` on the operands in the computation dtype
    (float32 for float16); ``reduced``: ``compute`` takes ``reduced=True`` for float16 and
    bfloat16 (PyTorch's kernel takes another path for them); ``into``: it takes ``out=``, the
    output array, and may return it written."""
    def fill(outs, spec, grad_output, other, *args, **kwargs):
        cn = spec.compute.numpy
        if spec.compute is dt.float16:
            cn = _F32
        if reduced and spec.compute in _REDUCED:
            kwargs = {**kwargs, "reduced": True}
        dy = grad_output._array().astype(cn, copy=False)
        x = other._array().astype(cn, copy=False)
        token = quiet() if cn.kind == "f" else None
        try:
            if into:
                kwargs = {**kwargs, "out": outs[0]}
            res = compute(dy, x, *args, **kwargs)
        finally:
            if token is not None:
                unquiet(token)
        if res is not outs[0]:
            np.copyto(outs[0], res, casting="unsafe")
    return fill


def _make_fast(compute):
    """The cpu kernel of the common backward call: ``(grad_output, other)`` float32 or float64
    tensors of one dtype, same sizes, both contiguous. Such a call passes every check of the
    rule and its output is contiguous of that dtype (TensorIterator's layout), so this returns
    what ``rule`` + ``fill`` give without them; None for any other call."""
    def fast(grad_output, other=None, *rest):
        if rest or grad_output.__class__ is not Tensor or other.__class__ is not Tensor:
            return None
        d = grad_output._dtype
        la, lb = grad_output._layout, other._layout
        if (d not in _FAST or other._dtype is not d or grad_output._storage.device is not CPU
                or other._storage.device is not CPU or la.sizes != lb.sizes):
            return None
        sizes = la.sizes
        strides = contig(sizes)
        if la.strides != strides or lb.strides != strides:
            return None
        out = alloc(sizes, strides, d, CPU)
        token = quiet()
        try:
            compute(grad_output._array(), other._array(), out=out._np)
        finally:
            unquiet(token)
        return out
    return fast


_FAST = (dt.float32, dt.float64)


def _threshold(dy, x, threshold):
    thr = np.array(threshold).astype(x.dtype)   # C++'s Scalar::to<scalar_t>()
    return np.where(x <= thr, np.zeros((), x.dtype), dy)


def _sigmoid(dy, y, out=None):
    return np.multiply(dy * (1 - y), y, out=out)


def _tanh(dy, y, out=None):
    """``dy * (1 - y*y)`` with ``1 - y*y`` rounded once, as ATen's kernel computes it (the
    compiler fuses it into one fused multiply-add, in the vectorised loop and its scalar tail
    alike: bit for bit on float32 and float64, tested against torch)."""
    if y.dtype == np.float64:
        return np.multiply(dy, _one_minus_square(y), out=out)
    # float32 (float16 and bfloat16 compute in it): y*y is exact in float64
    return np.multiply(dy, (1.0 - np.square(y, dtype=np.float64)).astype(y.dtype), out=out)


def _one_minus_square(y):
    """``fma(-y, y, 1)`` in float64: Dekker's exact square ``y*y == p + e`` (Veltkamp split),
    then ``1 - p`` with its rounding error (Knuth's TwoSum) and one final rounding. Where the
    split overflows (``|y|`` past 1e154, infinities, NaN) ``1 - p`` is already the answer."""
    p = y * y
    c = y * SPLIT
    hi = c - (c - y)
    lo = y - hi
    e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo
    s = 1.0 - p
    v = s - 1.0
    t = (1.0 - (s - v)) + (-p - v)
    return np.where(np.isfinite(e), s + (t - e), s)


def _check_gelu(*, approximate="none"):
    fns.check_gelu(None, approximate=approximate)


_NOT_FLOAT = _INTEGRAL | _BOOL
_PROMOTE = _Info("backward", "promote", None)

register_rule(ops.threshold_backward,
              _make_rule(_PROMOTE, "threshold_cpu", _BOOL, self_first=True), _make_fill(_threshold))
register_rule(ops.gelu_backward,
              _make_rule(_PROMOTE, "GeluBackwardKernelImpl", _NOT_FLOAT, _check_gelu),
              _make_fill(gelu_backward, reduced=True, into=True))
register_rule(ops.sigmoid_backward,
              _make_rule(_PROMOTE, "sigmoid_backward_cpu", _NOT_FLOAT), _make_fill(_sigmoid),
              fast=_make_fast(_sigmoid))
register_rule(ops.tanh_backward,
              _make_rule(_PROMOTE, "tanh_backward_cpu", _NOT_FLOAT), _make_fill(_tanh),
              fast=_make_fast(_tanh))
