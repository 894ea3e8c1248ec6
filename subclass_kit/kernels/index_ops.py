"""Index accumulation and copy ops: ``index_add``, ``scatter_add``, ``index_copy``,
``masked_scatter``, each with its ``name_`` and ``out=`` overloads.

One rule per op (Note [One rule per op]) with PyTorch's checks and texts, in PyTorch's order
(``index_func_meta_impl``, ``scatter_meta_impl``, ``index_copy_meta``, ``masked_scatter_``).
Results are fresh contiguous tensors of ``self``'s shape and dtype; ``masked_scatter`` first
broadcasts ``self`` against ``mask``. Checks that need data (index ranges, the number of
``source`` elements) run in the fills before anything is written, so a failing call leaves
its inputs unchanged (PyTorch may have written part of ``self`` already) and meta tensors skip
them as in PyTorch. Duplicate indices accumulate (``np.add.at``) for the add ops; for
``index_copy`` the last one wins, as PyTorch's serial CPU loop.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as dt
from ..layout import broadcast_shapes, contiguous_strides, format_size, wrap_dim
from ..registry import ops, register_kernel, overload_of
from ..storage import META
from ._common import (Spec, check_no_internal_overlap, check_no_overlap, check_out_device_first,
                      common_device, register_inplace, register_rule, resize_out, type_name)
from ._scalars import checked_scalar, cpp_name, wrap_scalar
from .shape import _as_1d, _scatter_rule
from .views import expand_sizes


def _fresh(sizes, dtype, device) -> Spec:
    sizes = tuple(sizes)
    return Spec(sizes, contiguous_strides(sizes), dtype, device)


def _dim_size(t, d) -> int:
    sizes = t._layout.sizes
    return sizes[d] if sizes else 1


def _owned(src, out):
    """``src``'s array, copied when it may share memory with the array being written."""
    arr = src._array()
    return arr.copy() if np.shares_memory(arr, out) else arr


def _index_values(index, size, d, prefix="", exc=RuntimeError) -> np.ndarray:
    """``index`` as int64 after checking every value against ``size`` (no negatives)."""
    idx = _as_1d(index._array()).astype(np.int64, copy=False)
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        raise exc(f"{prefix}index {idx[bad][0]} is out of bounds for dimension {d} with size "
                  f"{size}")
    return idx


# -- index_add -----------------------------------------------------------------------------------
def _index_add_rule(self, dim, index, source, *, alpha=1):
    d = wrap_dim(dim, self.ndim)
    n = index._layout.numel()
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {type_name(index._dtype)} and size: "
                         f"{format_size(index._layout.sizes)}")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{type_name(index._dtype)}")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"index_add_(): self ({type_name(self._dtype)}) and source "
                           f"({type_name(source._dtype)}) must have the same scalar type")
    if not (d == 0 or d < source.ndim):
        raise IndexError(f"index_add_(): Indexing dim {d} is out of bounds of the source "
                         f"tensor with dim {source.ndim}")
    if n != _dim_size(source, d):
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({_dim_size(source, d)}), for dim: {d}")
    ss, cs = list(self._layout.sizes), list(source._layout.sizes)
    if ss and cs:
        del ss[d], cs[d]
    if ss != cs:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = "
                           f"{format_size(self._layout.sizes)} source.shape = "
                           f"{format_size(source._layout.sizes)}")
    if alpha != 1:
        checked_scalar(alpha, self._dtype)
    return _fresh(self._layout.sizes, self._dtype, common_device([self, index, source]))


def _index_add_fill(outs, spec, self, dim, index, source, *, alpha=1):
    out = outs[0]
    target = _as_1d(out)
    d = wrap_dim(dim, target.ndim)
    idx = _index_values(index, target.shape[d], d)
    values = _as_1d(_owned(source, out))
    if alpha != 1:
        if values.dtype.kind in "iu" and isinstance(alpha, float):
            alpha = int(alpha)   # C++'s Scalar.to<int64_t>() truncates
        values = values * wrap_scalar(alpha, values.dtype)
    base = self._array()
    if base is not out:
        np.copyto(out, base)
    where = (slice(None),) * d + (idx,)
    if out.dtype == np.bool_:
        np.logical_or.at(target, where, values)
    else:
        np.add.at(target, where, values.astype(out.dtype, copy=False))


# -- scatter_add ---------------------------------------------------------------------------------
def _scatter_add_rule(self, dim, index, src):
    return _scatter_rule(self, dim, index, src)


def _scatter_add_fill(outs, spec, self, dim, index, src):
    out = outs[0]
    target = _as_1d(out)
    d = wrap_dim(dim, target.ndim)
    idx = _as_1d(index._array()).astype(np.int64, copy=False)
    idx = _index_values(index, target.shape[d], d).reshape(idx.shape)
    values = _as_1d(_owned(src, out))
    base = self._array()
    if base is not out:
        np.copyto(out, base)
    if idx.size == 0:
        return
    grids = np.indices(idx.shape, sparse=True)
    where = tuple(idx if i == d else g for i, g in enumerate(grids))
    values = values[tuple(slice(0, n) for n in idx.shape)]
    if out.dtype == np.bool_:
        np.logical_or.at(target, where, values)
    else:
        np.add.at(target, where, values)


# -- index_copy ----------------------------------------------------------------------------------
def _slice_shape(sizes, d) -> str:
    return " ".join(str(s) for i, s in enumerate(sizes) if i != d)


def _index_copy_rule(self, dim, index, source):
    d = wrap_dim(dim, self.ndim)
    if index.ndim >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    n = index._layout.numel()
    if source.ndim == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {n})")
    if source.ndim != self.ndim and source.ndim != 0 and self.ndim != 0:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({self.ndim})")
    if index._dtype is not dt.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{type_name(index._dtype)}")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {type_name(self._dtype)} and (source) "
                           f"{type_name(source._dtype)}")
    device = common_device([self, index, source])
    ss, cs = self._layout.sizes, source._layout.sizes
    if [s for i, s in enumerate(ss) if i != d] != [s for i, s in enumerate(cs) if i != d]:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {_slice_shape(ss, d)} at "
                           f"dimension {d} and source slice shape: {_slice_shape(cs, d)} at "
                           f"dimension 0.")
    if source.ndim != 0 and n != cs[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({cs[d]})")
    return _fresh(ss, self._dtype, device)


def _index_copy_fill(outs, spec, self, dim, index, source):
    out = outs[0]
    target = _as_1d(out)
    d = wrap_dim(dim, target.ndim)
    idx = _index_values(index, target.shape[d], d, "index_copy_(): ", IndexError)
    values = _as_1d(_owned(source, out))
    base = self._array()
    if base is not out:
        np.copyto(out, base)
    where = (slice(None),) * d + (idx,)
    target[where] = values.reshape(target[where].shape)   # duplicates: the last one wins


# -- masked_scatter ------------------------------------------------------------------------------
def _masked_scatter_check(self, mask, source):
    if self._dtype is not source._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{type_name(self._dtype)} and {type_name(source._dtype)}")
    if mask._dtype is dt.uint8:
        warnings.warn("masked_scatter_ received a mask with dtype torch.uint8, this behavior is "
                      "now deprecated,please use a mask with dtype torch.bool instead.",
                      UserWarning, stacklevel=5)
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {type_name(mask._dtype)}")


def _masked_scatter_rule(self, mask, source):
    sizes = broadcast_shapes(mask._layout.sizes, self._layout.sizes)
    device = common_device([self, mask, source])
    _masked_scatter_check(self, mask, source)
    return _fresh(sizes, self._dtype, device)


def _masked_scatter_fill(outs, spec, self, mask, source):
    out = outs[0]
    where = np.broadcast_to(mask._array(), out.shape)
    n = int(np.count_nonzero(where))
    values = source._array().reshape(-1)
    if values.size < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    values = values[:n].copy()
    base = self._array()
    if base is not out:
        np.copyto(out, np.broadcast_to(base, out.shape))
    out[where] = values


def _masked_scatter_inplace(self, mask, source):
    _masked_scatter_check(self, mask, source)
    common_device([self, mask, source])
    sizes, target = mask._layout.sizes, self._layout.sizes
    if len(sizes) > len(target):
        raise RuntimeError(f"expand(CPU{type_name(mask._dtype)}Type{{{format_size(sizes)}}}, "
                           f"size={format_size(target)}): the number of sizes provided "
                           f"({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(sizes)})")
    expand_sizes(mask, target)
    check_no_internal_overlap(self)
    if self._storage.device is not META:
        _masked_scatter_fill([self._array()], None, self, mask, source)
    return self


def _masked_scatter_out(self, mask, source, *, out):
    check_out_device_first(self, out)
    spec = _masked_scatter_rule(self, mask, source)
    if out._dtype is not spec.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(spec.dtype)}, but got "
                           f"{cpp_name(out._dtype)} instead")
    result = None
    if spec.device is not META:   # the source-size check runs before ``out`` changes
        result = np.empty(spec.sizes, spec.dtype.numpy)
        _masked_scatter_fill([result], spec, self, mask, source)
    resize_out(out, spec, "masked_scatter")
    if result is not None:
        np.copyto(out._array(), result)
    return out


# -- out= of the structured ops ------------------------------------------------------------------
def _check_out_dtype(want, out):
    if out._dtype is not want:
        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(want)}, but got "
                           f"{cpp_name(out._dtype)} instead")


def _register_structured_out(op_out, functional_op, operands, output_first=False):
    """PyTorch's structured out= kernels: ``out`` must have the result dtype exactly, is resized
    to the result shape (keeping its strides when the shape already matches), and must not
    overlap the operands named in ``operands`` (positions in the call). ``output_first``: the
    meta function sets the output (so checks its dtype) before its own checks
    (``index_copy``); the resize still waits until every check passed."""
    # packets: the overloads their calls run
    op_out, functional_op = overload_of(op_out), overload_of(functional_op)
    def kernel(*args, out, **kwargs):
        check_out_device_first(args[0], out)
        if output_first:
            wrap_dim(args[1], args[0].ndim)
            _check_out_dtype(args[0]._dtype, out)
        spec = functional_op.rule(*args, **kwargs)
        _check_out_dtype(spec.dtype, out)
        result = None
        if spec.device is not META:   # data checks (index ranges) run before ``out`` changes
            result = np.empty(spec.sizes, spec.dtype.numpy)
            functional_op.fill([result], spec, *args, **kwargs)
        resize_out(out, spec, functional_op.name)
        check_no_internal_overlap(out)
        for i in operands:
            check_no_overlap(out, args[i])
        if result is not None:
            np.copyto(out._array(), result)
        return out

    register_kernel(op_out, "cpu")(kernel)
    register_kernel(op_out, "meta")(kernel)


register_rule(ops.index_add, _index_add_rule, _index_add_fill)
register_inplace(ops.index_add_, ops.index_add)
_register_structured_out(ops.index_add.out, ops.index_add, (2, 3))
register_rule(ops.scatter_add, _scatter_add_rule, _scatter_add_fill)
register_inplace(ops.scatter_add_, ops.scatter_add)
_register_structured_out(ops.scatter_add.out, ops.scatter_add, ())
register_rule(ops.index_copy, _index_copy_rule, _index_copy_fill)
register_inplace(ops.index_copy_, ops.index_copy)
_register_structured_out(ops.index_copy.out, ops.index_copy, (), output_first=True)
register_rule(ops.masked_scatter, _masked_scatter_rule, _masked_scatter_fill)
for _device in ("cpu", "meta"):
    register_kernel(ops.masked_scatter_, _device)(_masked_scatter_inplace)
    register_kernel(ops.masked_scatter.out, _device)(_masked_scatter_out)
