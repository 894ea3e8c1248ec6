"""Composite reductions and comparisons (PyTorch's CompositeImplicitAutograd bodies), written
with ``sk.ops`` so modes see what they lower to:

- ``nanmean`` -> ``detach``, ``ne`` (``isnan``), ``logical_not_``, ``sum``, ``nansum``, ``div``;
  ``nanmean.out`` -> the same without ``detach``, then ``nansum.out`` and ``div_``;
- ``isclose`` -> ``eq`` (+ ``isnan`` / ``bitwise_and`` / ``bitwise_or_`` with ``equal_nan``),
  then, unless both tolerances are 0, ``_to_copy`` of bool / integral operands to the default
  dtype, ``mul``, ``abs``, ``add``, ``sub``, ``abs``, ``isfinite`` (``abs ne eq mul``), ``le``,
  ``bitwise_and_``, ``bitwise_or_``.
"""

from __future__ import annotations

from . import _dtype as dt
from .kernels._common import type_name
from .registry import ops, register_decomposition


def _nanmean_check(self):
    if not self._dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {type_name(self._dtype)}")


def _kw(keepdim, dtype):
    kw = {"keepdim": True} if keepdim else {}
    if dtype is not None:
        kw["dtype"] = dtype
    return kw


@register_decomposition(ops.nanmean)
def nanmean(self, dim=None, keepdim=False, *, dtype=None):
    _nanmean_check(self)
    d = ops.detach.default(self)
    factor = ops.sum.dim_IntList(ops.logical_not_.default(ops.ne.Tensor(d, d)), dim, keepdim)
    return ops.div.Tensor(ops.nansum.default(self, dim, **_kw(keepdim, dtype)), factor)


@register_decomposition(ops.nanmean.out)
def nanmean_out(self, dim=None, keepdim=False, *, dtype=None, out):
    if not self._dtype.is_floating_point:
        raise RuntimeError("nanmean(): integral types and 'Bool' are not supported for nanmean, "
                           "even for empty tensors.")
    factor = ops.sum.dim_IntList(ops.logical_not_.default(ops.ne.Tensor(self, self)), dim, keepdim)
    return ops.div_.Tensor(ops.nansum.out(self, dim, out=out, **_kw(keepdim, dtype)), factor)


@register_decomposition(ops.isclose)
def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if self._dtype is not other._dtype:
        raise RuntimeError(f"{type_name(self._dtype)} did not match {type_name(other._dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    close = ops.eq.Tensor(self, other)
    if equal_nan and self._dtype.is_floating_point:
        ops.bitwise_or_.Tensor(close, ops.bitwise_and.Tensor(ops.isnan.default(self),
                                                             ops.isnan.default(other)))
    if rtol == 0 and atol == 0:
        return close
    default = dt.get_default_dtype()
    cast_self = ops._to_copy.default(self, dtype=default) if self._dtype is dt.bool_ else self
    cast_other = (other if other._dtype.is_floating_point
                  else ops._to_copy.default(other, dtype=default))
    allowed = ops.add.Tensor(ops.abs.default(ops.mul.Tensor(cast_other, rtol)), atol)
    actual = ops.abs.default(ops.sub.Tensor(cast_self, cast_other))
    finite = ops.isfinite.default(actual)
    ops.bitwise_or_.Tensor(close, ops.bitwise_and_.Tensor(finite, ops.le.Tensor(actual, allowed)))
    return close
