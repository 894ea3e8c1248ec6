"""Selection ops whose output size depends on the data: ``repeat_interleave.Tensor`` (and its
``out=``), ``masked_select`` (and ``out=``), ``_unique2`` and ``unique_dim`` (what
``sk.unique`` calls, as ``torch.unique`` does).

Each op has one rule for what needs no data (dtypes, dims, broadcasting, every error PyTorch
raises before reading values), shared by the cpu and meta kernels (Note [One rule per op]).
Without data the meta kernels cannot size the output: ``repeat_interleave.Tensor`` raises
PyTorch's RuntimeError "cannot repeat_interleave a meta tensor without output_size" unless
``output_size=`` is given; ``masked_select``, ``_unique2`` and ``unique_dim`` raise
NotImplementedError as PyTorch's meta device does (no meta kernel), like ``nonzero``
(``subclass_kit.modes.MetaMode`` turns these into its ``DynamicOutputShapeError``). Outputs are
fresh and contiguous.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import Layout, broadcast_shapes, contiguous_strides, wrap_dim
from ..registry import ops, register_kernel
from ..storage import META
from ._common import Spec, common_device, new_tensor, resize_out, resize_storage_for, type_name

_INDEX_TYPES = (dt.int64, dt.int32)


def _contig(sizes, dtype, device) -> Spec:
    return Spec(tuple(sizes), contiguous_strides(tuple(sizes)), dtype, device)


def _no_meta(name):
    return NotImplementedError(
        f"{name}: attempted to run this operator with Meta tensors, but there was no fake impl "
        "or Meta kernel registered (its output size depends on the data).")


def _resize_plain(out, sizes):
    """``out.resize_(sizes)`` as PyTorch's kernels call it: no warning, contiguous if resized."""
    if out._layout.sizes != tuple(sizes):
        resize_storage_for(out, Layout(tuple(sizes), contiguous_strides(tuple(sizes)),
                                       out._layout.offset))


# -- repeat_interleave.Tensor --------------------------------------------------------------------
def _repeats_rule(repeats, *, output_size=None):
    """PyTorch's order: the index-type dispatch ("repeat_interleave_cpu" not implemented for
    'Float'), then 1-d repeats."""
    if repeats._dtype not in _INDEX_TYPES:
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for '
                                  f"'{type_name(repeats._dtype)}'")
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")


def _repeats_values(repeats, output_size):
    """(the counts as int64, the output length); RuntimeError for negative counts (without
    ``output_size``) or an ``output_size`` that is not their sum."""
    counts = repeats._array().astype(np.int64)
    total = int(counts.sum())
    if output_size is None:
        if np.any(counts < 0):
            raise RuntimeError("repeats can not be negative")
        return counts, total
    if output_size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {output_size}: "
                           f"[{output_size}]")
    if output_size != total:
        raise RuntimeError("allocated size does not match required size")
    return np.maximum(counts, 0), total


def _repeat_interleave(repeats, *, output_size=None, out=None):
    _repeats_rule(repeats)
    device = repeats._storage.device
    empty = repeats._layout.sizes[0] == 0
    if device is META:
        if output_size is None and not empty:
            raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
        n = 0 if empty else output_size
        counts = None
    elif empty:     # PyTorch returns empty_like(repeats) whatever output_size says
        n, counts = 0, None
    else:
        counts, n = _repeats_values(repeats, output_size)
    spec = _contig((n,), repeats._dtype, device)
    if out is None:
        out = new_tensor(spec)
    else:
        resize_out(out, spec, "repeat_interleave")
    if counts is not None:
        out._array()[...] = np.repeat(np.arange(len(counts)), counts)
    return out


def _repeat_interleave_out(repeats, *, output_size=None, out):
    return _repeat_interleave(repeats, output_size=output_size, out=out)


for _device in ("cpu", "meta"):
    register_kernel(ops.repeat_interleave.Tensor, _device)(_repeat_interleave)
    register_kernel(ops.repeat_interleave.Tensor_out, _device)(_repeat_interleave_out)
ops.repeat_interleave.Tensor.rule = _repeats_rule


# -- masked_select -------------------------------------------------------------------------------
def _masked_select_rule(self, mask):
    """Mask dtype, then broadcasting; the Spec of a (not yet sized) 1-d result."""
    if mask._dtype is not dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    device = common_device([self, mask])
    shape = broadcast_shapes(mask._layout.sizes, self._layout.sizes)
    return shape, device


def _masked_select_values(self, mask, shape):
    return np.broadcast_to(self._array(), shape)[np.broadcast_to(mask._array(), shape)]


@register_kernel(ops.masked_select, "cpu")
def _masked_select(self, mask):
    shape, device = _masked_select_rule(self, mask)
    values = _masked_select_values(self, mask, shape)
    out = new_tensor(_contig(values.shape, self._dtype, device))
    out._array()[...] = values
    return out


@register_kernel(ops.masked_select.out, "cpu")
def _masked_select_out(self, mask, *, out):
    if mask._dtype is not dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    if out._dtype is not self._dtype:
        raise RuntimeError("masked_select(): self and result must have the same scalar type")
    shape, device = _masked_select_rule(self, mask)
    values = _masked_select_values(self, mask, shape)
    _resize_plain(out, values.shape)
    out._array()[...] = values
    return out


@register_kernel(ops.masked_select, "meta")
def _masked_select_meta(self, mask):
    _masked_select_rule(self, mask)     # the errors that need no data, as on cpu
    raise _no_meta("masked_select")


@register_kernel(ops.masked_select.out, "meta")
def _masked_select_out_meta(self, mask, *, out):
    _masked_select_rule(self, mask)
    raise _no_meta("masked_select")


ops.masked_select.default.rule = _masked_select_rule


# -- unique --------------------------------------------------------------------------------------
def _fill3(self, values, inverse, counts, inverse_shape, dim=0):
    """The three fresh outputs of ``_unique2`` / ``unique_dim``. ``values`` is laid out with
    ``dim`` outermost (contiguous for ``dim`` 0), as PyTorch's ``unique_dim`` allocates it."""
    device = self._storage.device
    outs = []
    for arr, dtype, shape in ((values, self._dtype, values.shape),
                              (inverse, dt.int64, inverse_shape if inverse is not None else (0,)),
                              (counts, dt.int64, counts.shape if counts is not None else (0,))):
        spec = _contig(shape, dtype, device)
        if dim and not outs:
            order = (dim,) + tuple(i for i in range(len(shape)) if i != dim)
            base = contiguous_strides(tuple(shape[i] for i in order))
            strides = [0] * len(shape)
            for i, st in zip(order, base):
                strides[i] = st
            spec = Spec(tuple(shape), tuple(strides), dtype, device)
        t = new_tensor(spec)
        if arr is not None and t._layout.numel():
            t._array()[...] = arr.reshape(shape)
        outs.append(t)
    return tuple(outs)


@register_kernel(ops._unique2, "cpu")
def _unique2(self, sorted=True, return_inverse=False, return_counts=False):
    """Sorted unique elements (PyTorch's CPU kernel sorts even for ``sorted=False``), each NaN
    its own value; the inverse has ``self``'s shape, the counts one per value; an output not
    asked for is an empty int64 tensor."""
    arr = self._array().reshape(-1)
    values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True,
                                        equal_nan=False)
    return _fill3(self, values, inverse if return_inverse else None,
                  counts if return_counts else None, self._layout.sizes)


@register_kernel(ops.unique_dim, "cpu")
def _unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False):
    """Unique slices along ``dim``, in lexicographic order; the inverse (one index per slice)
    and counts are always returned, as PyTorch's kernel does. A zero-size ``self`` must have
    exactly one size-0 dim, ``dim`` itself (PyTorch's RuntimeErrors)."""
    _unique_dim_rule(self, dim)
    d = wrap_dim(dim, self.ndim)
    sizes = self._layout.sizes
    if not self._layout.numel():
        return _fill3(self, np.empty(sizes, self._dtype.numpy), None, None, (0,))
    moved = np.moveaxis(self._array(), d, 0)
    rows = moved.reshape(sizes[d], -1)
    values, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    values = np.moveaxis(values.reshape((values.shape[0],) + moved.shape[1:]), 0, d)
    return _fill3(self, values, inverse.reshape(-1), counts, (sizes[d],), d)


def _unique_dim_rule(self, dim):
    if self.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, self.ndim)
    if not self._layout.numel():
        if list(self._layout.sizes).count(0) != 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique "
                               "cannot be applied ")
        if self._layout.sizes[d] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")


@register_kernel(ops._unique2, "meta")
def _unique2_meta(self, *args, **kwargs):
    raise _no_meta("_unique2")


@register_kernel(ops.unique_dim, "meta")
def _unique_dim_meta(self, dim, *args, **kwargs):
    _unique_dim_rule(self, dim)         # the errors that need no data, as on cpu
    raise _no_meta("unique_dim")


ops.unique_dim.default.rule = _unique_dim_rule
