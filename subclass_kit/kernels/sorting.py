"""Sorting ops: ``sort`` (``.stable``, ``out=`` as ``.values`` / ``.values_stable``) and
``topk`` (``out=`` as ``.values``), each returning ``(values, indices)`` (int64 indices).

One rule per op (Note [One rule per op]). ``sort``'s outputs keep ``self``'s strides when it is
non-overlapping and dense, else dense strides in ``self``'s dim order (PyTorch's
``sort_stable_meta``); ``topk``'s are contiguous with ``dim`` of size ``k``.

Order: always numpy's stable sort (``np.argsort(kind="stable")``), NaN greater than every
number (first when descending), ``-0.0`` equal to ``0.0``; descending keeps equal elements in
index order (sort of the reversed slice, reversed). This is PyTorch's ``stable=True`` order.
PyTorch's CPU sort with ``stable=False`` gives the same order for slices of up to 16 elements
and may order ties differently beyond; ``topk`` orders tied values and ``sorted=False``
results as its partial sort happens to (docs/differences.md).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import wrap_dim
from ..registry import ops, register_kernel
from ..storage import META
from ._common import Spec, check_out_device_first, resize_out
from ._iter_layout import alloc, contig, iter_strides
from ._scalars import cpp_name


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
    if arr.ndim == 0:
        np.copyto(outs[0], arr)
        np.copyto(outs[1], 0)
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
    if arr.ndim == 0:
        np.copyto(outs[0], arr)
        np.copyto(outs[1], 0)
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


def _register(op, out_op, rule, fill):
    def kernel(*args, **kwargs):
        specs = rule(*args, **kwargs)
        outs = tuple(alloc(s.sizes, s.strides, s.dtype, s.device) for s in specs)
        if specs[0].device is not META:
            fill([o._array() for o in outs], specs, *args, **kwargs)
        return outs

    def out_kernel(self, *args, values, indices, **kwargs):
        check_out_device_first(self, values)
        specs = rule(self, *args, **kwargs)
        _expect_dtype(specs[0].dtype, values)
        _expect_dtype(dt.int64, indices)
        check_out_device_first(self, indices)
        for o, s in zip((values, indices), specs):
            resize_out(o, s, op.name)
        if self._storage.device is not META:
            fill([values._array(), indices._array()], specs, self, *args, **kwargs)
        return values, indices

    for device in ("cpu", "meta"):
        register_kernel(op, device)(kernel)
        register_kernel(out_op, device)(out_kernel)
    op.rule, op.fill = rule, fill


_register(ops.sort.default, ops.sort.values, _sort_rule, _sort_fill)
_register(ops.sort.stable, ops.sort.values_stable, _sort_stable_rule, _sort_stable_fill)
_register(ops.topk.default, ops.topk.values, _topk_rule, _topk_fill)
