"""Shape-combining and index ops: ``cat``, ``stack``, ``gather``, ``scatter``, ``index_select``,
``tril``, ``triu``, ``nonzero``.

One rule per op (Note [One rule per op]) with PyTorch's CPU checks and texts, in PyTorch's order.
Output layouts follow PyTorch's CPU kernels: ``cat`` keeps a memory format shared by all inputs
(channels-last in, channels-last out), ``stack`` is ``cat`` followed by a view, ``nonzero``
returns a column-major ``(n, ndim)`` tensor, everything else is fresh and contiguous. Checks
that need data (index ranges) run in the fills, so meta tensors skip them as in PyTorch;
``nonzero`` cannot know its size without data and raises on meta (SEMANTICS.md §7).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import Layout, channels_last_strides, contiguous_strides, format_size, wrap_dim
from ..registry import ops, register_kernel
from ..storage import Storage
from ..tensor import make_tensor
from ._scalars import checked_scalar
from ._common import (Spec, check_no_overlap, common_device, cross_device_error,
                      register_inplace, register_rule, resize_out, type_name)


def _fresh(sizes, dtype, device) -> Spec:
    sizes = tuple(sizes)
    return Spec(sizes, contiguous_strides(sizes), dtype, device)


def _promote_all(tensors):
    # cat/stack have no 0-d inputs, so PyTorch's result_type is plain pairwise promotion.
    out = tensors[0]._dtype
    for t in tensors[1:]:
        out = dt.promote_types(out, t._dtype)
    return out


# -- cat / stack ---------------------------------------------------------------------------------
def _channels_last_like(sizes, strides, order) -> bool:
    """PyTorch's ``is_channels_last_strides_{2,3}d``: strides increase along ``order``."""
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * max(sizes[d], 1)
    return True


def suggest_memory_format(sizes, strides) -> str:
    """"channels_last", "channels_last_3d" or "contiguous" (``Tensor.suggest_memory_format``)."""
    if len(sizes) == 4 and _channels_last_like(sizes, strides, (1, 3, 2, 0)):
        return "channels_last"
    if len(sizes) == 5 and _channels_last_like(sizes, strides, (1, 4, 3, 2, 0)):
        return "channels_last_3d"
    return "contiguous"


def _format_strides(sizes, fmt) -> tuple:
    if fmt == "channels_last":
        return channels_last_strides(sizes)
    if fmt == "channels_last_3d":
        _, c, d, h, w = (max(s, 1) for s in sizes)
        return (c * d * h * w, 1, h * w * c, w * c, c)
    return contiguous_strides(sizes)


def _skipped(sizes) -> bool:
    # Legacy: 1-d empty tensors are ignored by cat whatever the other shapes are.
    return len(sizes) == 1 and sizes[0] == 0


def _cat_layout(layouts, dim):
    """Output (sizes, strides) of ``cat`` over the ``(sizes, strides)`` of its inputs, with
    PyTorch's shape checks. ``dim`` is wrapped here (against the first non-skipped input)."""
    for i, (sizes, _) in enumerate(layouts):
        if not sizes:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    valid = next((i for i, (sizes, _) in enumerate(layouts) if not _skipped(sizes)), None)
    if valid is not None:
        dim = wrap_dim(dim, len(layouts[valid][0]))
    formats = set()
    for sizes, strides in layouts:
        formats.add(suggest_memory_format(sizes, strides))
    fmt = formats.pop() if len(formats) == 1 else "contiguous"
    if valid is None:
        return (0,), (1,)
    first = layouts[valid][0]
    total = 0
    for i, (sizes, _) in enumerate(layouts):
        if _skipped(sizes):
            continue
        if len(sizes) != len(first):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(first)} "
                               f"and {len(sizes)}")
        for d, (a, b) in enumerate(zip(first, sizes)):
            if d != dim and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. "
                                   f"Expected size {a} but got size {b} for tensor number {i} "
                                   "in the list.")
        total += sizes[dim]
    out = first[:dim] + (total,) + first[dim + 1:]
    return out, _format_strides(out, fmt)


def _cat_rule(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("sk.cat(): expected a non-empty list of Tensors")
    sizes, strides = _cat_layout([(t._layout.sizes, t._layout.strides) for t in tensors], dim)
    return Spec(sizes, strides, _promote_all(tensors), common_device(tensors))


def _cat_fill(outs, spec, tensors, dim=0):
    arrays = [t._array() for t in tensors if not _skipped(t._layout.sizes)]
    if not arrays:
        return
    d = wrap_dim(dim, arrays[0].ndim)
    np.concatenate(arrays, axis=d, out=outs[0], casting="unsafe")


def _cat_out(tensors, dim=0, *, out):
    spec = _cat_rule(tensors, dim)
    from .._dtype import can_cast
    if out._storage.device is not spec.device:   # PyTorch checks it before the dtype
        raise cross_device_error(spec.device, out._storage.device)
    if not can_cast(spec.dtype, out._dtype):
        raise TypeError(f"sk.cat(): input types can't be cast to the desired output type "
                        f"{type_name(out._dtype)}")
    for t in tensors:
        check_no_overlap(out, t)
    resize_out(out, spec._replace(dtype=out._dtype), "cat")
    if out._storage.device.type != "meta":
        _cat_fill([out._array()], spec, tensors, dim)
    return out


def _stack_rule(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ndim = tensors[0].ndim
    d = wrap_dim(dim, ndim + 1)
    first = tensors[0]._layout.sizes
    for i, t in enumerate(tensors[1:], 1):
        if t._layout.sizes != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{format_size(first)} at entry 0 and "
                               f"{format_size(t._layout.sizes)} at entry {i}")
    dtype, device = _promote_all(tensors), common_device(tensors)
    result = first[:d] + (len(tensors),) + first[d:]
    if d < ndim:
        # PyTorch: cat(tensors, d).view(result); splitting a dim is always a view.
        sizes, strides = _cat_layout([(t._layout.sizes, t._layout.strides) for t in tensors], d)
        return Spec(result, Layout(sizes, strides).view(result).strides, dtype, device)
    unsqueezed = [t._layout.unsqueeze(d) for t in tensors]
    sizes, strides = _cat_layout([(u.sizes, u.strides) for u in unsqueezed], d)
    return Spec(sizes, strides, dtype, device)


def _stack_fill(outs, spec, tensors, dim=0):
    d = wrap_dim(dim, len(spec.sizes))
    np.copyto(outs[0], np.stack([t._array() for t in tensors], axis=d), casting="unsafe")


# -- gather / scatter ----------------------------------------------------------------------------
def _size_or_1(t, d) -> int:
    """PyTorch's ``ensure_nonempty_size``: 0-d tensors have size 1 (IndexError past the end)."""
    sizes = t._layout.sizes
    if not sizes:
        return 1
    return sizes[wrap_dim(d, len(sizes))]


def _check_index_dtype(name, index):
    if index._layout.numel() and index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def _gather_rule(self, dim, index, *, sparse_grad=False):
    d = wrap_dim(dim, self.ndim)
    _check_index_dtype("gather", index)
    if index._layout.numel():
        ndim = max(self.ndim, 1)
        if ndim != max(index.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as input "
                               "tensor")
        for i in range(ndim):
            if i != d and _size_or_1(index, i) > _size_or_1(self, i):
                raise RuntimeError(
                    f"Size does not match at dimension {i} expected index "
                    f"{format_size(index._layout.sizes)} to be no larger than self "
                    f"{format_size(self._layout.sizes)} apart from dimension {d}")
    return _fresh(index._layout.sizes, self._dtype, common_device([self, index]))


def _as_1d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


def _checked_index(index, dim_size, d) -> np.ndarray:
    idx = _as_1d(index._array()).astype(np.int64, copy=False)
    bad = (idx < 0) | (idx >= dim_size)
    if bad.any():
        value = idx[bad][0]
        raise RuntimeError(f"index {value} is out of bounds for dimension {d} with size "
                           f"{dim_size}")
    return idx


def _gather_fill(outs, spec, self, dim, index, *, sparse_grad=False):
    if outs[0].size == 0:
        return
    src = _as_1d(self._array())
    d = wrap_dim(dim, src.ndim)
    idx = _checked_index(index, src.shape[d], d)
    # index may be smaller than self in the other dims: gather from the leading block only.
    src = src[tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(idx.shape))]
    np.copyto(outs[0], np.take_along_axis(src, idx, axis=d).reshape(outs[0].shape))


def _scatter_rule(self, dim, index, src=None):
    d = wrap_dim(dim, self.ndim)
    _check_index_dtype("scatter", index)
    if src is not None and self._dtype is not src._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index._layout.numel():
        ndim = max(self.ndim, 1)
        if ndim != max(index.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as self "
                               "tensor")
        wrong = any(_size_or_1(index, i) > _size_or_1(self, i) for i in range(ndim) if i != d)
        if not wrong and src is not None:
            wrong = any(_size_or_1(index, i) > _size_or_1(src, i) for i in range(ndim))
        where = (f"Expected index {format_size(index._layout.sizes)} to be no larger than self "
                 f"{format_size(self._layout.sizes)} apart from dimension {d}")
        if src is not None:
            if max(src.ndim, 1) != max(index.ndim, 1):
                raise RuntimeError("Index tensor must have the same number of dimensions as src "
                                   "tensor")
            if wrong:
                raise RuntimeError(f"{where} and to be no larger size than src "
                                   f"{format_size(src._layout.sizes)}")
        elif wrong:
            raise RuntimeError(where)
    tensors = [self, index] if src is None else [self, index, src]
    return _fresh(self._layout.sizes, self._dtype, common_device(tensors))


def _scatter_value_rule(self, dim, index, value):
    return _scatter_rule(self, dim, index)


def _scatter_into(out, dim, index, values):
    """out[..., index[i], ...] = values[i] along ``dim`` (index no larger than out elsewhere)."""
    target = _as_1d(out)
    d = wrap_dim(dim, target.ndim)
    idx = _checked_index(index, target.shape[d], d)
    if idx.size == 0:
        return
    grids = np.indices(idx.shape, sparse=True)
    where = tuple(idx if i == d else g for i, g in enumerate(grids))
    if np.ndim(values):
        values = values[tuple(slice(0, n) for n in idx.shape)]
    target[where] = values


def _scatter_src_fill(outs, spec, self, dim, index, src):
    np.copyto(outs[0], self._array())
    _scatter_into(outs[0], dim, index, _as_1d(src._array()))


def _scatter_value_fill(outs, spec, self, dim, index, value):
    if index._layout.numel():   # converted per written element: -1.0 into uint8 raises
        value = checked_scalar(value, self._dtype)
    np.copyto(outs[0], self._array())
    _scatter_into(outs[0], dim, index, np.asarray(value).astype(outs[0].dtype).reshape(()))


# -- index_select --------------------------------------------------------------------------------
def _index_select_rule(self, dim, index):
    d = wrap_dim(dim, self.ndim)
    n = index._layout.numel()
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if self.ndim == 0 and n != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} "
                           "value(s)")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    sizes = self._layout.sizes
    if sizes:
        sizes = sizes[:d] + (n,) + sizes[d + 1:]
    return _fresh(sizes, self._dtype, common_device([self, index]))


def _index_select_fill(outs, spec, self, dim, index):
    src = _as_1d(self._array())
    d = wrap_dim(dim, src.ndim)
    idx = _as_1d(index._array())
    if idx.size == 0:
        return
    size = src.shape[d]
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        # PyTorch's dim-1 fast path (and its empty-self path) uses caffe2's wording.
        if src.ndim > 1 and (d == 1 or src.size == 0):
            if size <= 0:
                raise RuntimeError("index_select(): self indexing axis dim should be positive")
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={idx[bad][0]} "
                               f"axis_dim={size}")
        raise IndexError("index out of range in self")
    np.copyto(outs[0], np.take(src, idx, axis=d).reshape(outs[0].shape))


# -- tril / triu ---------------------------------------------------------------------------------
def _triangle_rule_for(name):
    def rule(self, diagonal=0):
        if self.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return _fresh(self._layout.sizes, self._dtype, self._storage.device)
    return rule


def _tril_fill(outs, spec, self, diagonal=0):
    np.copyto(outs[0], np.tril(self._array(), diagonal))


def _triu_fill(outs, spec, self, diagonal=0):
    np.copyto(outs[0], np.triu(self._array(), diagonal))


# -- nonzero -------------------------------------------------------------------------------------
_NONZERO_META = (
    "The register_meta function for torch.nonzero() raises unimplemented by default, as a "
    "correct data-independent implementation does not exist. This implementation returns a fake "
    "value, assuming all elements of the tensor are non-zero. To enable this registration, "
    "please set 'torch.fx.experimental._config.meta_nonzero_assume_all_nonzero' to True.")


@register_kernel(ops.nonzero, "meta")
def _nonzero_meta(self):
    raise NotImplementedError(_NONZERO_META)


@register_kernel(ops.nonzero, "cpu")
def _nonzero_cpu(self):
    found = np.argwhere(self._array())
    n, ndim = found.shape[0], self.ndim
    # Column-major (strides (1, n)), as PyTorch's CPU kernel allocates it.
    layout = Layout((n, ndim), (1, n), 0)
    out = make_tensor(Storage(n * ndim * 8, self._storage.device), layout, dt.int64)
    if n and ndim:
        out._array()[...] = found
    return out


register_rule(ops.cat, _cat_rule, _cat_fill)
register_kernel(ops.cat.out, "cpu")(_cat_out)
register_kernel(ops.cat.out, "meta")(_cat_out)
register_rule(ops.stack, _stack_rule, _stack_fill)
register_rule(ops.gather, _gather_rule, _gather_fill)
register_rule(ops.scatter.src, _scatter_rule, _scatter_src_fill)
register_rule(ops.scatter.value, _scatter_value_rule, _scatter_value_fill)
register_rule(ops.index_select, _index_select_rule, _index_select_fill)
register_rule(ops.tril, _triangle_rule_for("tril"), _tril_fill)
register_rule(ops.triu, _triangle_rule_for("triu"), _triu_fill)
register_inplace(ops.scatter_.src, ops.scatter.src)
register_inplace(ops.scatter_.value, ops.scatter.value)
