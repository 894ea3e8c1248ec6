"""``where`` and ``masked_fill``: selection ops with their own rules (a bool condition or mask,
scalar values checked against the output dtype), sharing pointwise.py's operand handling.
See Note [One rule per op]."""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as dt
from ..layout import broadcast_shapes, format_size
from ..registry import ops, register_kernel, overload_of
from ..storage import META
from ..tensor import Tensor
from ._common import (
    Spec,
    check_no_internal_overlap,
    check_out_device_first,
    common_device,
    resize_out,
    type_name,
)
from ._iter_layout import alloc, contig, layout_of
from ._scalars import checked_scalar, cpp_name, wrap_scalar
from .pointwise import _common_dtype, _device, _split


def _where_rule(condition, self, other):
    if condition._dtype is dt.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=4)
    elif condition._dtype is not dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {type_name(condition._dtype)}")
    tensors, scalars = _split((self, other))
    everything = [condition] + tensors
    device = _device(everything)
    out = _common_dtype(tensors, scalars) if tensors else dt.result_type((), (), scalars)
    # PyTorch casts the operands first (``self.to(result_type)``, ``condition.to(bool)``).
    # A number operand is a 0-d tensor (PyTorch makes it with ``scalar_tensor``).
    sizes, strides = layout_of(everything, targets=[dt.bool_] + [out] * len(tensors),
                               wrapped=bool(scalars))
    return Spec(sizes, strides, out, device, out)


def _where_fill(outs, spec, condition, self, other):
    cn = spec.dtype.numpy
    a, b = (x._array() if isinstance(x, Tensor) else wrap_scalar(x, cn) for x in (self, other))
    cond = condition._array()
    np.copyto(outs[0], np.where(cond if cond.dtype.kind == "b" else cond != 0, a, b),
              casting="unsafe")


def _where_kernel(*args, **kwargs):
    spec = _where_rule(*args, **kwargs)
    out = alloc(spec.sizes, spec.strides, spec.dtype, spec.device)
    if spec.device is not META:
        _where_fill([out._array()], spec, *args, **kwargs)
    return out


_WHERE_OUT = ("aten::where() Expected a value of type 'Tensor' for argument '{}' but instead "
              "found type '{}'.\nPosition: {}\nValue: {!r}\nDeclaration: aten::where.self_out("
              "Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n"
              "Cast error details: Unable to cast {!r} to Tensor")


def _where_out(condition, self, other, *, out):
    for pos, name, value in ((1, "self", self), (2, "other", other)):
        if not isinstance(value, Tensor):
            raise RuntimeError(  # noqa: TRY004  (PyTorch raises RuntimeError here)
                _WHERE_OUT.format(name, type(value).__name__, pos, value, value))
    check_out_device_first(condition, out)
    spec = _where_rule(condition, self, other)
    if spec.dtype is not out._dtype:
        raise RuntimeError(f"Expected out type to be {type_name(spec.dtype)} but got "
                           f"{type_name(out._dtype)}")
    resize_out(out, spec, "where")
    if out._storage.device is not META:
        _where_fill([out._array()], spec, condition, self, other)
    return out


def _masked_fill_check(self, mask, value):
    if isinstance(value, Tensor) and value._layout.sizes:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {len(value._layout.sizes)} dimension(s).")


def _masked_fill_value(self, mask, value):
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{cpp_name(mask._dtype)}")
    if isinstance(value, Tensor) and value._storage.device is META:
        return 0
    return checked_scalar(value, self._dtype)


def _masked_fill_rule(self, mask, value):
    _masked_fill_check(self, mask, value)
    sizes = broadcast_shapes(mask._layout.sizes, self._layout.sizes)
    device = common_device([self, mask])
    _masked_fill_value(self, mask, value)
    return Spec(sizes, contig(sizes), self._dtype, device)


def _masked_fill_fill(outs, spec, self, mask, value):
    out = outs[0]
    value = _masked_fill_value(self, mask, value)
    if out is not self._array():
        np.copyto(out, self._array())
    np.copyto(out, value, where=np.broadcast_to(mask._array(), out.shape), casting="unsafe")


def _masked_fill_kernel(self, mask, value):
    spec = _masked_fill_rule(self, mask, value)
    out = alloc(spec.sizes, spec.strides, spec.dtype, spec.device)
    if spec.device is not META:
        _masked_fill_fill([out._array()], spec, self, mask, value)
    return out


def _masked_fill_inplace(self, mask, value):
    _masked_fill_check(self, mask, value)
    check_no_internal_overlap(self)
    sizes = broadcast_shapes(self._layout.sizes, mask._layout.sizes)
    if sizes != self._layout.sizes:
        raise RuntimeError(f"output with shape {format_size(self._layout.sizes)} doesn't match "
                           f"the broadcast shape {format_size(sizes)}")
    common_device([self, mask])
    _masked_fill_value(self, mask, value)
    if self._storage.device is not META:
        _masked_fill_fill([self._array()], None, self, mask, value)
    return self


def _masked_fill_out(self, mask, value, *, out):
    check_out_device_first(self, out)
    spec = _masked_fill_rule(self, mask, value)
    if out._dtype is not spec.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(spec.dtype)}, but got "
                           f"{cpp_name(out._dtype)} instead")
    resize_out(out, spec, "masked_fill")
    if out._storage.device is not META:
        _masked_fill_fill([out._array()], spec, self, mask, value)
    return out


def _both(op, kernel):
    op = overload_of(op)  # packet: the overload it calls
    register_kernel(op, "cpu")(kernel)
    register_kernel(op, "meta")(kernel)


_both(ops.where, _where_kernel)
_both(ops.where.self_out, _where_out)
ops.where.self.rule, ops.where.self.fill = _where_rule, _where_fill
for _overload in ("Scalar", "Tensor"):     # same kernels: the value is a number or 0-d tensor
    _both(ops.masked_fill._overloads[_overload], _masked_fill_kernel)
    _both(ops.masked_fill._overloads[f"{_overload}_out"], _masked_fill_out)
    _both(ops.masked_fill_._overloads[_overload], _masked_fill_inplace)
    ops.masked_fill._overloads[_overload].rule = _masked_fill_rule
    ops.masked_fill._overloads[_overload].fill = _masked_fill_fill
