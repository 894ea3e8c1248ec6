"""Sorting ops: ``sort`` (``.stable``, ``out=`` as ``.values`` / ``.values_stable``) and
``topk`` (``out=`` as ``.values``), each returning ``(values, indices)`` (int64 indices); the
selections ``median`` / ``nanmedian`` (all elements: the value; ``.dim``: ``(values, indices)``)
and ``kthvalue``, read off the same stable order.

One rule per op (Note [One rule per op]). ``sort``'s outputs keep ``self``'s strides when it is
non-overlapping and dense, else dense strides in ``self``'s dim order (PyTorch's
``sort_stable_meta``); ``topk``'s are contiguous with ``dim`` of size ``k``.

Order: always numpy's stable sort (``np.argsort(kind="stable")``), NaN greater than every
number (first when descending), ``-0.0`` equal to ``0.0``; descending keeps equal elements in
index order (sort of the reversed slice, reversed). This is PyTorch's ``stable=True`` order.
PyTorch's CPU sort with ``stable=False`` gives the same order for slices of up to 16 elements
and may order ties differently beyond; ``topk`` orders tied values and ``sorted=False``
results as its partial sort happens to (docs/differences.md).

Selections: ``median`` is the lower median (element ``(n - 1) // 2`` of the order); a slice
holding NaN gives NaN and the index of its first NaN. ``nanmedian`` is the lower median of the
non-NaN elements (NaN, first NaN index, when there are none). ``kthvalue`` is element ``k - 1``
(NaN after every number). Among tied values PyTorch returns whichever index its
``nth_element`` leaves there; we return the stable order's (docs/differences.md). Reduced
outputs are contiguous; an empty slice raises, ``median()`` of no elements is NaN.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import wrap_dim
from ..registry import ops, register_kernel, overload_of
from ..storage import META
from ._common import (Spec, check_out_device_first, fill_scalar_pair,
                      register_pair_kernels, resize_out, type_string)
from ._iter_layout import alloc, contig, iter_strides
from ._scalars import cpp_name
from .reductions import reduced_sizes


def _sort_rule(self, dim=-1, descending=False):
    wrap_dim(dim, self.ndim)
    layout = self._layout
    sizes = layout.sizes
    if layout.is_non_overlapping_and_dense():
        strides = layout.strides
    else:
        strides = iter_strides(sizes, [(sizes, layout.strides)])
    device = self._storage.device
    return (Spec(sizes, strides, self._dtype, device),
            Spec(sizes, strides, dt.int64, device))


def _sort_stable_rule(self, *, stable, dim=-1, descending=False):
    return _sort_rule(self, dim, descending)


def order(arr, axis, descending) -> np.ndarray:
    """Stable sorting permutation of ``arr`` along ``axis`` (NaN last ascending, first
    descending; ties in index order either way)."""
    if not descending:
        return np.argsort(arr, axis=axis, kind="stable")
    flipped = np.flip(arr, axis)
    idx = np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis)
    return arr.shape[axis] - 1 - idx


def _sort_fill(outs, specs, self, dim=-1, descending=False):
    arr = self._array()
    if fill_scalar_pair(outs, arr):
        return
    axis = wrap_dim(dim, arr.ndim)
    idx = order(arr, axis, descending)
    np.copyto(outs[0], np.take_along_axis(arr, idx, axis=axis))
    np.copyto(outs[1], idx)


def _sort_stable_fill(outs, specs, self, *, stable, dim=-1, descending=False):
    _sort_fill(outs, specs, self, dim, descending)


# -- topk ----------------------------------------------------------------------------------------
def _topk_rule(self, k, dim=-1, largest=True, sorted=True):
    d = wrap_dim(dim, self.ndim)
    sizes = self._layout.sizes
    slice_size = sizes[d] if sizes else 1
    if not 0 <= k <= slice_size:
        raise RuntimeError("selected index k out of range")
    if self._dtype is dt.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    out = sizes[:d] + (k,) + sizes[d + 1:] if sizes else ()
    device = self._storage.device
    return (Spec(out, contig(out), self._dtype, device),
            Spec(out, contig(out), dt.int64, device))


def _topk_fill(outs, specs, self, k, dim=-1, largest=True, sorted=True):
    arr = self._array()
    if fill_scalar_pair(outs, arr):
        return
    axis = wrap_dim(dim, arr.ndim)
    idx = np.take(order(arr, axis, largest), np.arange(k), axis=axis)
    np.copyto(outs[0], np.take_along_axis(arr, idx, axis=axis))
    np.copyto(outs[1], idx)


# -- registration --------------------------------------------------------------------------------
def _expect_dtype(want, out):
    if out._dtype is not want:
        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(want)}, but got "
                           f"{cpp_name(out._dtype)} instead")


def _sort_out_specs(rule):
    """sort/topk's out= order: values' device, the rule, both dtypes, then indices' device."""
    def out_specs(self, args, kwargs, values, indices):
        check_out_device_first(self, values)
        specs = rule(self, *args, **kwargs)
        _expect_dtype(specs[0].dtype, values)
        _expect_dtype(dt.int64, indices)
        check_out_device_first(self, indices)
        return specs
    return out_specs


def _register_sort(op, out_op, rule, fill):
    # packets: the overloads their calls run
    op, out_op = overload_of(op), overload_of(out_op)
    register_pair_kernels(op, out_op, rule, fill, _sort_out_specs(rule))


_register_sort(ops.sort.default, ops.sort.values, _sort_rule, _sort_fill)
_register_sort(ops.sort.stable, ops.sort.values_stable, _sort_stable_rule, _sort_stable_fill)
_register_sort(ops.topk.default, ops.topk.values, _topk_rule, _topk_fill)



# -- median, nanmedian, kthvalue -----------------------------------------------------------------
def _no_bool(self, kernel_name):
    if self._dtype is dt.bool_:
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for 'Bool'")


def _select_spec(self, d, keepdim):
    sizes = reduced_sizes(self._layout.sizes, (d,), keepdim) if self._layout.sizes else ()
    device = self._storage.device
    return (Spec(sizes, contig(sizes), self._dtype, device),
            Spec(sizes, contig(sizes), dt.int64, device))


def _select_dim(self, name, dim):
    d = wrap_dim(dim, self.ndim)
    sizes = self._layout.sizes
    if sizes and sizes[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return d


def _positions(arr, axis, kind, k=None):
    """Stable order of ``arr`` along ``axis`` and, per slice, the position to read (keepdims)."""
    idx = order(arr, axis, False)
    n = arr.shape[axis]
    if arr.dtype.kind == "f":
        count = np.sum(~np.isnan(arr), axis=axis, keepdims=True)
    else:
        count = np.full([1 if i == axis else s for i, s in enumerate(arr.shape)], n)
    if kind == "median":  # first NaN (position ``count``) when there is one
        pos = np.where(count < n, count, (n - 1) // 2)
    elif kind == "nanmedian":
        pos = np.maximum(count - 1, 0) // 2
    else:
        pos = np.full(count.shape, k - 1)
    return idx, pos


def _select(outs, self, kind, k, dim, keepdim):
    arr = self._array()
    if fill_scalar_pair(outs, arr):
        return
    axis = wrap_dim(dim, arr.ndim)
    if arr.size == 0:
        return
    idx, pos = _positions(arr, axis, kind, k)
    chosen = np.take_along_axis(idx, pos.astype(np.int64), axis=axis)
    values = np.take_along_axis(arr, chosen, axis=axis)
    if not keepdim:
        chosen, values = np.squeeze(chosen, axis), np.squeeze(values, axis)
    np.copyto(outs[0], values)
    np.copyto(outs[1], chosen)


def _median_dim_fill_for(kind):
    def fill(outs, specs, self, dim, keepdim=False):
        _select(outs, self, kind, None, dim, keepdim)
    return fill


def _kthvalue_fill(outs, specs, self, k, dim=-1, keepdim=False):
    _select(outs, self, "kthvalue", k, dim, keepdim)


def _median_dim_rule(self, dim, keepdim=False):
    return _select_spec(self, _select_dim(self, "median", dim), keepdim)


def _kthvalue_rule(self, k, dim=-1, keepdim=False):
    d = _select_dim(self, "kthvalue", dim)
    slice_size = self._layout.sizes[d] if self._layout.sizes else 1
    if not 1 <= k <= slice_size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select_spec(self, d, keepdim)


def _legacy(dtype):
    """The tensor type's name in PyTorch's ``toString`` (bool has no legacy class)."""
    return type_string(dtype)


def _median_out_check(specs, values, indices):
    """PyTorch's ``checkScalarType`` / ``checkSameType`` texts (``nanmedian`` says median too)."""
    if indices._dtype is not dt.int64:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have scalar type Long; "
                           f"but got {_legacy(indices._dtype)} instead (while checking arguments "
                           "for median)")
    if values._dtype is not specs[0].dtype:
        raise RuntimeError("Expected tensor for 'values' to have the same type as tensor for "
                           f"argument #2 'self'; but type {_legacy(values._dtype)} does not equal "
                           f"{_legacy(specs[0].dtype)} (while checking arguments for median)")


def _kthvalue_out_check(specs, values, indices):
    if values._dtype is not specs[0].dtype:
        raise RuntimeError("output values must be of same type as input")
    if indices._dtype is not dt.int64:
        raise RuntimeError("output indices must be of scalar type Long")


def _register_select(op, out_op, rule, fill, out_check, kernel_name):
    """median/kthvalue's kernels: the out= order is both devices, the rule, ``out_check``'s
    dtype checks, then the bool check (``kernel_name``'s NotImplementedError), as in PyTorch."""
    # packets: the overloads their calls run
    op, out_op = overload_of(op), overload_of(out_op)

    def out_specs(self, args, kwargs, values, indices):
        check_out_device_first(self, values)
        check_out_device_first(self, indices)
        specs = rule(self, *args, **kwargs)
        out_check(specs, values, indices)
        _no_bool(self, kernel_name)
        return specs

    register_pair_kernels(op, out_op, rule, fill, out_specs,
                          lambda self: _no_bool(self, kernel_name))


for _kind in ("median", "nanmedian"):
    _packet = getattr(ops, _kind)
    _register_select(_packet.dim, _packet.dim_values, _median_dim_rule,
                     _median_dim_fill_for(_kind), _median_out_check, "median_out")
_register_select(ops.kthvalue.default, ops.kthvalue.values, _kthvalue_rule,
                 _kthvalue_fill, _kthvalue_out_check, "kthvalue_cpu")


def _median_all_rule(self):
    _no_bool(self, "median_cpu")
    return Spec((), (), self._dtype, self._storage.device)


def _median_all_fill_for(kind):
    def fill(outs, spec, self):
        flat = self._array().reshape(-1)
        if flat.size == 0:
            with np.errstate(invalid="ignore"):
                np.copyto(outs[0], np.array(np.nan).astype(flat.dtype))
            return
        idx, pos = _positions(flat, 0, kind)
        np.copyto(outs[0], flat[idx[pos[0]]])
    return fill


def _register_median_all(op, out_op, kind):
    # packets: the overloads their calls run
    op, out_op = overload_of(op), overload_of(out_op)
    fill = _median_all_fill_for(kind)

    def kernel(self):
        spec = _median_all_rule(self)
        out = alloc(spec.sizes, spec.strides, spec.dtype, spec.device)
        if spec.device is not META:
            fill([out._array()], spec, self)
        return out

    def out_kernel(self, *, out):
        spec = _median_all_rule(self)
        _expect_dtype(spec.dtype, out)
        if out._storage.device is not spec.device:
            raise RuntimeError(f"Expected out tensor to have device {spec.device.type}, but got "
                               f"{out._storage.device.type} instead")
        resize_out(out, spec, kind)
        if out._storage.device is not META:
            fill([out._array()], spec, self)
        return out

    for device in ("cpu", "meta"):
        register_kernel(op, device)(kernel)
        register_kernel(out_op, device)(out_kernel)
    op.rule, op.fill = _median_all_rule, fill


_register_median_all(ops.median.default, ops.median.out, "median")
_register_median_all(ops.nanmedian.default, ops.nanmedian.out, "nanmedian")
