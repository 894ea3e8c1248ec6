"""``count_nonzero``, ``nansum``, ``aminmax``, ``allclose``, ``equal``, ``cummax``, ``cummin``,
``logcumsumexp``: more reductions, one rule per op (Note [One rule per op]) with
``reductions._register`` where they return one tensor.

- ``count_nonzero``: int64, no keepdim; ``dim=[]`` (``.dim_IntList``) counts every element;
- ``nansum``: NaN counts as 0; integral/bool inputs sum into int64 (as ``sum``); a floating
  input with an integral ``out=`` raises NotImplementedError;
- ``aminmax``: ``(min, max)`` over one dim or everything, NaN propagating; empty raises;
- ``allclose``: ``isclose(...).all().item()`` (``decompositions_reductions.isclose``); on meta
  the ``item()`` raises as PyTorch's does;
- ``equal``: False for different sizes, else every element ``==``; no meta kernel in PyTorch
  (NotImplementedError);
- ``cummax`` / ``cummin``: running extreme and the index of its LAST occurrence so far (ties
  move the index forward; NaN, once seen, stays and each later NaN takes the index);
- ``logcumsumexp``: running ``logaddexp`` (float16 in float32); integral and bool inputs raise
  the cpu NotImplementedError on meta too (PyTorch's meta kernel accepts them;
  docs/differences.md).

Outputs of the cumulative ops are contiguous with ``self``'s shape; their ``out=`` kernels check
``out``'s device, then its dtype (PyTorch's "expected scalar_type ..."), then ``dim``.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import wrap_dim
from ..registry import ops, register_kernel, overload_of
from ..storage import META
from ._common import (Spec, check_out_device_first, fill_scalar_pair,
                      register_pair_kernels, resize_out, type_name)
from ._iter_layout import alloc, contig
from .reductions import (
    _acc,
    _axis,
    _expect_dtype,
    _int_to_long,
    _out_as_dtype,
    _register,
    _spec,
    reduce_dims,
)


# -- count_nonzero -------------------------------------------------------------------------------
def _count_nonzero_rule(self, dim):
    return _spec(self, reduce_dims(self, dim), False, dt.int64)


def _count_nonzero_compute(dest, arr, spec, self, dim):
    return np.count_nonzero(arr, axis=_axis(self, reduce_dims(self, dim)))


def _count_nonzero_opt_rule(self, dim=None):
    return _count_nonzero_rule(self, None if dim is None else [dim])


def _count_nonzero_opt_compute(dest, arr, spec, self, dim=None):
    return _count_nonzero_compute(dest, arr, spec, self, None if dim is None else [dim])


def _out_copy(spec, out, *args, **kwargs):
    """PyTorch's generated out= wrapper of a CompositeExplicitAutograd op: resize, then
    ``copy_`` (any dtype)."""
    return spec._replace(dtype=out._dtype)


_register(ops.count_nonzero.dim_IntList, _count_nonzero_rule, _count_nonzero_compute,
          ops.count_nonzero.dim_IntList_out, _out_copy)
_register(ops.count_nonzero.default, _count_nonzero_opt_rule, _count_nonzero_opt_compute,
          ops.count_nonzero.out, _out_copy)


# -- nansum --------------------------------------------------------------------------------------
def _nansum_rule(self, dim=None, keepdim=False, *, dtype=None):
    return _spec(self, reduce_dims(self, dim), keepdim, _int_to_long(self._dtype, dtype))


def _nansum_out_policy(spec, out, *args, dtype=None, **kwargs):
    if dtype is not None and dt.to_dtype(dtype) is not out._dtype:
        raise RuntimeError(f"nansum: provided dtype must match dtype of result. Got "
                           f"{type_name(out._dtype)} and {type_name(dt.to_dtype(dtype))}.")
    spec = _out_as_dtype(spec, out, *args, **kwargs)
    if spec.compute.is_floating_point and not out._dtype.is_floating_point:
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{type_name(out._dtype)}'")
    return spec


def _nansum_out_rule(self, dim=None, keepdim=False, *, dtype=None):
    # ``compute``: the input dtype, for the policy's check of ``out``'s dtype.
    return _spec(self, reduce_dims(self, dim), keepdim, _int_to_long(self._dtype, dtype),
                 self._dtype)


def _nansum_compute(dest, arr, spec, self, dim=None, keepdim=False, *, dtype=None):
    out = spec.dtype.numpy
    if arr.dtype.kind == "f":
        arr = np.where(np.isnan(arr), 0, arr)
    a = arr.astype(out, copy=False)
    axis = _axis(self, reduce_dims(self, dim))
    return np.add.reduce(a, axis=axis, dtype=_acc(out), keepdims=keepdim)


_register(ops.nansum, _nansum_rule, _nansum_compute, ops.nansum.out, _nansum_out_policy,
          out_rule=_nansum_out_rule)


# -- aminmax -------------------------------------------------------------------------------------
def _aminmax_rule(self, *, dim=None, keepdim=False):
    sizes = self._layout.sizes
    if dim is None:
        if self._layout.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        out = (1,) * len(sizes) if keepdim else ()
    else:
        d = wrap_dim(dim, len(sizes))
        if sizes and sizes[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        out = _spec(self, (d,), keepdim, self._dtype).sizes
    spec = Spec(out, contig(out), self._dtype, self._storage.device)
    return spec, spec


def _aminmax_fill(outs, specs, self, *, dim=None, keepdim=False):
    arr = self._array()
    axis = None if dim is None or arr.ndim == 0 else wrap_dim(dim, arr.ndim)
    for dest, fn in zip(outs, (np.min, np.max)):
        res = fn(arr, axis=axis, keepdims=keepdim and axis is not None)
        np.copyto(dest, np.reshape(res, dest.shape))


def _aminmax_kernel(self, *, dim=None, keepdim=False):
    specs = _aminmax_rule(self, dim=dim, keepdim=keepdim)
    outs = tuple(alloc(s.sizes, s.strides, s.dtype, s.device) for s in specs)
    if specs[0].device is not META:
        _aminmax_fill([o._array() for o in outs], specs, self, dim=dim, keepdim=keepdim)
    return outs


def _aminmax_out_kernel(self, *, dim=None, keepdim=False, min, max):
    specs = _aminmax_rule(self, dim=dim, keepdim=keepdim)
    for o, s in zip((min, max), specs):
        _expect_dtype(s.dtype, o)
        check_out_device_first(self, o)
        resize_out(o, s, "aminmax")
    if self._storage.device is not META:
        _aminmax_fill([min._array(), max._array()], specs, self, dim=dim, keepdim=keepdim)
    return min, max


for _device in ("cpu", "meta"):
    register_kernel(ops.aminmax.default, _device)(_aminmax_kernel)
    register_kernel(ops.aminmax.out, _device)(_aminmax_out_kernel)
ops.aminmax.default.rule, ops.aminmax.default.fill = _aminmax_rule, _aminmax_fill


# -- allclose, equal -----------------------------------------------------------------------------
def _allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = ops.isclose.default(self, other, rtol, atol, equal_nan)
    return bool(ops._local_scalar_dense.default(ops.all.default(close)))


_EQUAL_META = (
    "aten::equal: attempted to run this operator with Meta tensors, but there was no fake impl "
    "or Meta kernel registered. You may have run into this message while using an operator "
    "with PT2 compilation APIs (torch.compile/torch.export); in order to use this operator "
    "with those APIs you'll need to add a fake impl. Please see the following for next steps:  "
    "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html")


def _equal_cpu(self, other):
    if self._layout.sizes != other._layout.sizes:
        return False
    res = dt.promote_types(self._dtype, other._dtype).numpy
    a, b = self._array().astype(res, copy=False), other._array().astype(res, copy=False)
    return bool(np.all(a == b))


def _equal_meta(self, other):
    raise NotImplementedError(_EQUAL_META)


for _device in ("cpu", "meta"):
    register_kernel(ops.allclose.default, _device)(_allclose)
register_kernel(ops.equal.default, "cpu")(_equal_cpu)
register_kernel(ops.equal.default, "meta")(_equal_meta)


def _is_set_to(self, tensor):
    """PyTorch's ``is_set_to``: the same storage, storage offset, sizes and strides (dtypes
    are not compared; two empty tensors have two storages)."""
    if tensor.device.type == "meta":    # PyTorch picks the meta kernel for any meta argument
        _is_set_to_meta(self, tensor)
    a, b = self._layout, tensor._layout
    return (self._storage is tensor._storage and a.offset == b.offset and a.sizes == b.sizes
            and a.strides == b.strides)


def _is_set_to_meta(self, tensor):
    raise NotImplementedError(_EQUAL_META.replace("aten::equal", "aten::is_set_to"))


register_kernel(ops.is_set_to.default, "cpu")(_is_set_to)
register_kernel(ops.is_set_to.default, "meta")(_is_set_to_meta)


# -- cummax, cummin, logcumsumexp ----------------------------------------------------------------
def _check_scalar_type(want, out):
    if out._dtype is not want:
        raise RuntimeError(f"expected scalar_type {type_name(want)} but found "
                           f"{type_name(out._dtype)}")


def _cumulative_spec(self, dtype):
    sizes = self._layout.sizes
    return Spec(sizes, contig(sizes), dtype, self._storage.device)


def _cum_extreme_rule_for(name):
    def rule(self, dim):
        if not self._layout.sizes:
            if dim not in (-1, 0):
                raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got "
                                 f"{dim}")
        else:
            wrap_dim(dim, len(self._layout.sizes))
        return _cumulative_spec(self, self._dtype), _cumulative_spec(self, dt.int64)
    return rule


def _cum_extreme_fill_for(ufunc):
    def fill(outs, specs, self, dim):
        arr = self._array()
        if fill_scalar_pair(outs, arr):
            return
        axis = wrap_dim(dim, arr.ndim)
        running = ufunc.accumulate(arr, axis=axis)
        hit = arr == running
        if arr.dtype.kind == "f":
            hit |= np.isnan(arr) & np.isnan(running)
        shape = [1] * arr.ndim
        shape[axis] = arr.shape[axis]
        pos = np.where(hit, np.arange(arr.shape[axis]).reshape(shape), 0)
        idx = np.maximum.accumulate(pos, axis=axis) if arr.size else pos
        np.copyto(outs[1], idx)
        np.copyto(outs[0], np.take_along_axis(arr, idx, axis=axis))
    return fill


def _register_cum_extreme(op, out_op, name, ufunc):
    # packets: the overloads their calls run
    op, out_op = overload_of(op), overload_of(out_op)
    rule = _cum_extreme_rule_for(name)

    def out_specs(self, args, kwargs, values, indices):
        check_out_device_first(self, values)
        check_out_device_first(self, indices)
        _check_scalar_type(self._dtype, values)
        _check_scalar_type(dt.int64, indices)
        return rule(self, *args, **kwargs)

    register_pair_kernels(op, out_op, rule, _cum_extreme_fill_for(ufunc), out_specs)


_register_cum_extreme(ops.cummax.default, ops.cummax.out, "cummax", np.maximum)
_register_cum_extreme(ops.cummin.default, ops.cummin.out, "cummin", np.minimum)


def _logcumsumexp_rule(self, dim):
    wrap_dim(dim, len(self._layout.sizes))
    _logcumsumexp_dtype_check(self)
    return _cumulative_spec(self, self._dtype)


def _logcumsumexp_dtype_check(self):
    if not self._dtype.is_floating_point:
        raise NotImplementedError("\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{type_name(self._dtype)}'")


def _logcumsumexp_compute(dest, arr, spec, self, dim):
    a = arr.astype(_acc(arr.dtype), copy=False)
    if a.ndim == 0:
        return a
    # + 0.0: PyTorch's running log-sum-exp of a -0.0 is 0.0 (max + log1p(exp(min - max)))
    return np.logaddexp.accumulate(a, axis=wrap_dim(dim, a.ndim)) + 0.0


_register(ops.logcumsumexp.default, _logcumsumexp_rule, _logcumsumexp_compute)


def _logcumsumexp_out(self, dim, *, out):
    check_out_device_first(self, out)
    _check_scalar_type(self._dtype, out)
    spec = _logcumsumexp_rule(self, dim)
    resize_out(out, spec, "logcumsumexp")
    if out._storage.device is not META:
        ops.logcumsumexp.default.fill([out._array()], spec, self, dim)
    return out


for _device in ("cpu", "meta"):
    register_kernel(ops.logcumsumexp.out, _device)(_logcumsumexp_out)
