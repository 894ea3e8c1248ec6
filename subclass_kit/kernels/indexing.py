"""Advanced indexing: ``index.Tensor`` (a gather by integer / mask tensors: always a copy) and
``index_put_`` / ``index_put`` (the scatter behind ``x[idx] = v``).

Result shape (PyTorch's ``make_info`` / ``AdvancedIndex``, TensorAdvancedIndexing.cpp):

1. each bool/uint8 mask becomes ``mask.dim()`` integer indices (the columns of its nonzero);
2. the index tensors broadcast together to ``index_shape``;
3. if the indexed dims are not adjacent they move to the front (``x[i, :, j]`` has shape
   ``index_shape + (x.size(1),)``); adjacent ones are replaced in place by ``index_shape``.

Output strides follow the memory order of the (restrided) source and of the index tensors, as
TensorIterator does, so ``x.permute(2, 0, 1)[:, i]`` keeps a permuted layout. Index values are
checked on cpu only (meta tensors have no data, as in PyTorch): "index 5 is out of bounds for
dimension 0 with size 2", where the dimension counts indexed dims only. ``index_put_`` checks
everything before it writes, so a failing call leaves ``self`` unchanged.

Note [Meta mask put]: on meta, ``index`` with a mask raises as PyTorch does (its result shape
is the mask's number of True elements), but ``index_put_`` returns ``self`` whatever the data,
so it needs no ``nonzero``. It keeps the checks that do not depend on the data (index count
and dtypes, mask shapes, overlap, and the dtype match once the values can fit) and skips the
shape checks that depend on the count of True elements, as PyTorch's meta kernel skips them.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from .. import _dtype as dt
from ..layout import (
    Layout,
    broadcast_shapes,
    channels_last_strides,
    contiguous_strides,
    format_size,
    wrap_dim,
)
from ..registry import ops
from ..storage import META
from . import factories
from ._common import (Spec, both_devices, check_no_internal_overlap, check_no_overlap,
                      new_tensor, register_rule, type_name)
from ._iter_layout import iter_strides
from .shape import _NONZERO_META

_INDEX_DTYPES = (dt.int64, dt.int32, dt.uint8, dt.bool_)


class _Index(NamedTuple):
    """One integer index after mask expansion: its sizes/strides and data (None on meta)."""

    sizes: tuple
    strides: tuple
    array: object


class Plan(NamedTuple):
    """Where an advanced index reads: ``self`` permuted by ``perm``, the indexed dims are
    ``before .. before+indexed``; ``sizes``/``strides`` of the result (in permuted order)."""

    perm: tuple
    before: int
    indexed: int
    indexed_sizes: tuple
    arrays: list          # broadcast int64 arrays (None on meta)
    sizes: tuple
    strides: tuple


def _mask_error(self, mask, j, src):
    return IndexError(f"The shape of the mask {format_size(mask._layout.sizes)} at index {j} does "
                      f"not match the shape of the indexed tensor "
                      f"{format_size(self._layout.sizes)} at index {src}")


def _dense_strides(t) -> tuple:
    """Strides of ``t.to(int64)`` (an int32 index is converted, keeping its memory order)."""
    layout = t._layout
    if t._dtype is dt.int64 or layout.is_non_overlapping_and_dense():
        return layout.strides
    return iterator_strides(layout.sizes, [(layout.sizes, layout.strides)])


def _expand_masks(self, indices, unknown_ok=False) -> list:
    """PyTorch's ``expandTensors``: masks -> their nonzero columns; other indices as int64.
    A meta mask raises, or with ``unknown_ok`` gives columns of length ``-mask.numel()``: a
    negative length is unknown, at most its absolute value (Note [Meta mask put])."""
    out = []
    for t in indices:
        if t is None:
            out.append(None)
            continue
        if t._dtype is dt.uint8 or t._dtype is dt.bool_:
            if t._dtype is dt.uint8:
                warnings.warn("indexing with dtype sk.uint8 is now deprecated, please use a "
                              "dtype sk.bool instead.", UserWarning, stacklevel=5)
            sizes = self._layout.sizes
            for j, n in enumerate(t._layout.sizes):
                src = wrap_dim(len(out) + j, len(sizes))
                if n != sizes[src]:
                    raise _mask_error(self, t, j, src)
            if t._storage.device is META:
                if not unknown_ok:
                    raise NotImplementedError(_NONZERO_META)
                n = -t._layout.numel()
                out.extend(_Index((n,), (1,), None) for _ in t._layout.sizes)
                continue
            for col in np.nonzero(t._array()):
                out.append(_Index((col.shape[0],), (1,), col.astype(np.int64, copy=False)))
            continue
        arr = None if t._storage.device is META else t._array()
        out.append(_Index(t._layout.sizes, _dense_strides(t), arr))
    return out


def _broadcast(indices) -> tuple:
    shapes = [i.sizes for i in indices if i is not None]
    try:
        return broadcast_shapes(*shapes) if shapes else ()
    except RuntimeError:
        listed = ", ".join(format_size(s) for s in shapes)
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {listed}") from None


def _expanded_strides(idx: _Index, shape) -> tuple:
    lead = len(shape) - len(idx.sizes)
    strides = [0] * lead
    for size, stride, target in zip(idx.sizes, idx.strides, shape[lead:]):
        strides.append(stride if size == target else 0)
    return tuple(strides)


def _check_indices(self, indices):
    ndim = len(self._layout.sizes)
    if len(indices) > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {len(indices)})")
    for t in indices:
        if t is not None and t._dtype not in _INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def make_plan(self, indices) -> Plan:
    """Validate ``indices`` against ``self`` and compute the result layout (PyTorch's
    ``make_info``). Raises IndexError with PyTorch's texts; NotImplementedError for a meta mask."""
    indices = list(indices)
    _check_indices(self, indices)
    return _plan(self, _expand_masks(self, indices))


def _plan(self, expanded) -> Plan:
    ndim = len(self._layout.sizes)
    shape = _broadcast(expanded)
    expanded += [None] * (ndim - len(expanded))
    used = [d for d, i in enumerate(expanded) if i is not None]
    if used and used[-1] - used[0] + 1 != len(used):
        # Non-adjacent indexed dims move to the front (PyTorch's transposeToFront).
        perm = tuple(used) + tuple(d for d in range(ndim) if expanded[d] is None)
        expanded = [expanded[d] for d in perm]
    else:
        perm = tuple(range(ndim))
    layout = self._layout.permute(perm)
    firsts = [k for k, i in enumerate(expanded) if i is not None]
    before = firsts[0] if firsts else 0
    indexed = len(used)
    indexed_sizes = layout.sizes[before:before + indexed]
    if 0 in indexed_sizes and 0 not in shape:
        raise IndexError("index is out of bounds for dimension with size 0")
    after = ndim - before - indexed
    sizes = layout.sizes[:before] + shape + layout.sizes[before + indexed:]
    src_strides = layout.strides[:before] + (0,) * len(shape) + layout.strides[before + indexed:]
    operands = [(sizes, src_strides)]
    arrays = []
    full = (1,) * before + shape + (1,) * after
    for idx in expanded:
        if idx is None:
            continue
        # expand to ``shape``, then reshape to ``full`` (PyTorch's reshape_indexer): the strides
        # of the size-1 dims take part in TensorIterator's dim ordering.
        viewed = Layout(shape, _expanded_strides(idx, shape)).view(full)
        operands.append((full, viewed.strides if viewed else contiguous_strides(full)))
        arrays.append(None if idx.array is None else np.broadcast_to(idx.array, shape))
    strides = iterator_strides(sizes, operands)
    return Plan(perm, before, indexed, indexed_sizes, arrays, sizes, strides)


def iterator_strides(shape: tuple, operands) -> tuple:
    """Output strides TensorIterator allocates for inputs ``operands`` ((sizes, strides) each):
    the fast setup when every input has the output's shape and is contiguous / channels-last /
    dense with equal strides, else the dims sorted by the inputs' strides (``reorder_dimensions``)
    with sizes multiplied unclamped (``compatible_stride``: empty outputs get zero strides)."""
    layouts = [Layout(tuple(sz), tuple(st)) for sz, st in operands]
    if all(lay.sizes == shape for lay in layouts):
        if all(lay.is_contiguous() for lay in layouts):
            return contiguous_strides(shape)
        if all(lay.is_channels_last() for lay in layouts):
            return channels_last_strides(shape)
        if (all(lay.is_non_overlapping_and_dense() for lay in layouts)
                and len({lay.strides for lay in layouts}) == 1):
            return layouts[0].strides
    return iter_strides(shape, [(lay.sizes, lay.strides) for lay in layouts])


def check_index_bounds(plan: Plan, out_strides=None):
    """Raise IndexError for the first out-of-range index in iteration order (cpu only)."""
    arrays = plan.arrays
    if not arrays or any(a is None for a in arrays):
        return
    if 0 in plan.sizes:
        return
    bad = [(a < -n) | (a >= n) for a, n in zip(arrays, plan.indexed_sizes)]
    anybad = np.logical_or.reduce(bad) if len(bad) > 1 else bad[0]
    if not anybad.any():
        return
    # Visit index positions in memory order of the result (slowest dim first).
    strides = (out_strides or plan.strides)[plan.before:plan.before + anybad.ndim]
    order = sorted(range(anybad.ndim), key=lambda d: -strides[d])
    pos = np.argwhere(np.transpose(anybad, order))[0]
    where = [0] * anybad.ndim
    for k, d in enumerate(order):
        where[d] = pos[k]
    where = tuple(where)
    for j, (a, n) in enumerate(zip(arrays, plan.indexed_sizes)):
        v = int(a[where])
        if v < -n or v >= n:
            raise IndexError(f"index {v} is out of bounds for dimension {j} with size {n}")


def _key(plan: Plan) -> tuple:
    return (slice(None),) * plan.before + tuple(plan.arrays)


def _index_device(self, indices):
    if self._storage.device is not META:
        for t in indices:
            if t is not None and t._storage.device is META:
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    return self._storage.device


@both_devices(ops.index)
def index(self, indices):
    """``self[indices]`` for a list of index tensors / None (advanced indexing; a copy)."""
    device = _index_device(self, indices)
    plan = make_plan(self, indices)
    out = new_tensor(Spec(plan.sizes, plan.strides, self._dtype, device))
    if device is META or 0 in plan.sizes:
        return out
    check_index_bounds(plan)
    src = np.transpose(self._array(), plan.perm)
    np.copyto(out._array(), src[_key(plan)])
    return out


# -- index_put ---------------------------------------------------------------------------------
def _mask_fill_target(self, indices, values):
    """PyTorch's ``canDispatchToMaskedFill``: a lone mask with a one-element cpu value becomes
    ``masked_fill_`` (no dtype check). Returns the mask broadcastable to ``self`` or None."""
    if values._layout.numel() != 1 or values._storage.device is META:
        return None
    mask, seen = None, 0
    for t in indices:
        if t is None:
            seen += 1
            continue
        # (A cpu mask counts as on self's device: setitem moves indices there first.)
        if (t._dtype not in (dt.bool_, dt.uint8) or mask is not None
                or (t._storage.device is META and self._storage.device is not META)):
            return None
        mask = t
        for j, n in enumerate(t._layout.sizes):
            src = wrap_dim(seen + j, len(self._layout.sizes))
            if n != self._layout.sizes[src]:
                raise _mask_error(self, t, j, src)
        seen += len(t._layout.sizes)
    if mask is None:
        return None
    before = seen - len(mask._layout.sizes)
    trail = len(self._layout.sizes) - seen
    return before, mask, trail


@both_devices(ops.index_put_)
def index_put_(self, indices, values, accumulate=False):
    """``self[indices] = values`` (``accumulate``: ``+=``, duplicates add up). Values broadcast
    to the indexing result; dtypes must match. Raises before writing anything."""
    ndim = len(self._layout.sizes)
    if len(indices) > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {len(indices)})")
    if self._layout.has_internal_overlap():
        warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the "
                      "tensor before performing this operation. This also applies to advanced "
                      "indexing e.g. tensor[indices] = tensor", UserWarning, stacklevel=4)
    if not accumulate:
        target = _mask_fill_target(self, indices, values)
        if target is not None:
            return _masked_put(self, target, values)
    device = _index_device(self, indices)
    if values._storage.device is META and device is not META:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    check_no_overlap(self, values)
    for t in indices:
        if t is not None:
            check_no_overlap(self, t)
    _check_indices(self, indices)
    expanded = _expand_masks(self, indices, unknown_ok=device is META)
    if any(i is not None and min(i.sizes, default=0) < 0 for i in expanded):
        if _may_fit(self, expanded, values._layout.sizes):
            _check_put_dtypes(self, values)
        return self
    plan = _plan(self, expanded)
    vsizes = values._layout.sizes
    try:
        ok = broadcast_shapes(vsizes, plan.sizes) == plan.sizes
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {format_size(vsizes)} cannot "
                           f"be broadcast to indexing result of shape {format_size(plan.sizes)}")
    _check_put_dtypes(self, values)
    if device is META or values._storage.device is META or 0 in plan.sizes:
        return self
    check_index_bounds(plan)
    dst = np.transpose(self._array(), plan.perm)
    vals = np.array(np.broadcast_to(values._array(), plan.sizes))
    if accumulate:
        np.add.at(dst, _key(plan), vals)
    else:
        dst[_key(plan)] = vals
    return self


def _check_put_dtypes(self, values):
    if values._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{type_name(self._dtype)} for the destination and "
                           f"{type_name(values._dtype)} for the source.")


def _fits(sizes, target) -> bool:
    """``sizes`` broadcasts to ``target`` for some value of its unknown (negative) lengths."""
    if len(sizes) > len(target):
        return False
    target = target[len(target) - len(sizes):]
    return all(n in (1, m) or 0 <= n <= -m for n, m in zip(sizes, target))


def _may_fit(self, expanded, vsizes) -> bool:
    """Whether a meta mask put passes the cpu shape checks for some mask data. (When it cannot,
    the cpu error names the count of True elements, so meta raises nothing.)"""
    shapes = [i.sizes for i in expanded if i is not None]
    ndim = max(len(s) for s in shapes)
    shape = []
    for d in range(ndim):
        column = {s[d - ndim + len(s)] for s in shapes if d - ndim + len(s) >= 0}
        known = {n for n in column if n >= 0} - {1}
        if len(known) > 1:
            return False
        shape.append(known.pop() if known else min(column))
    sizes = self._layout.sizes
    expanded = expanded + [None] * (len(sizes) - len(expanded))
    used = [d for d, i in enumerate(expanded) if i is not None]
    if used[-1] - used[0] + 1 == len(used):
        result = sizes[:used[0]] + tuple(shape) + sizes[used[-1] + 1:]
    else:
        result = tuple(shape) + tuple(n for n, i in zip(sizes, expanded) if i is None)
    return _fits(vsizes, result)


def _masked_put(self, target, values):
    before, mask, trail = target
    if mask._dtype is dt.uint8:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    if self._storage.device is META:
        return self
    value = np.asarray(values._array()).reshape(()).astype(self._dtype.numpy)
    m = mask._array().astype(bool, copy=False)
    m = m.reshape((1,) * before + m.shape + (1,) * trail)
    np.copyto(self._array(), value, where=m)
    return self


@both_devices(ops.index_put)
def index_put(self, indices, values, accumulate=False):
    """Functional ``index_put``: a clone of ``self`` (same strides) with the values put."""
    out = ops.clone.default._kernels[self._storage.device.type](self)
    return index_put_(out, indices, values, accumulate)


# -- fill_.Tensor (what ``x[i] = number`` lowers to) --------------------------------------------
@both_devices(ops.fill_.Tensor)
def fill_tensor_(self, value):
    """``fill_`` with a 0-d tensor: PyTorch copies it (``copy_``), so unlike ``fill_(number)``
    an expanded ``self`` is rejected; a value on another device is read as a number."""
    if value._layout.sizes:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{len(value._layout.sizes)} dimensions.")
    if value._storage.device is not self._storage.device:
        if value._storage.device is META:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return factories.fill_(self, value)
    check_no_internal_overlap(self)
    if self._storage.device is not META:
        np.copyto(self._array(), value._array(), casting="unsafe")
    return self


register_rule(ops.fill.Tensor, factories._fill_rule, factories._fill_fill)

__all__ = ["Plan", "check_index_bounds", "iterator_strides", "make_plan"]
