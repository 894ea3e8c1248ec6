"""``Tensor.__getitem__`` / ``__setitem__``: Python index sugar lowered to ops exactly as PyTorch's
``python_variable_indexing.cpp`` and ``TensorIndexing.h`` do, so a dispatch mode sees the same op
stream (SEMANTICS.md §1.2 "Index sugar", §5.1).

Lowering of ``x[index]``:

- an int (or numpy int, or a 0-d integer tensor via ``.item()``) -> ``select``; out of range:
  IndexError "index 5 is out of bounds for dimension 0 with size 2", where the dimension is the
  position inside the index tuple;
- a slice -> ``slice`` (step must be > 0); ``start == 0, step == 1, stop >= size`` is elided
  inside a tuple, but a lone ``x[:]`` still emits ``slice``;
- ``None`` -> ``unsqueeze``; ``...`` skips dims; ``True``/``False`` -> ``unsqueeze`` plus an
  index tensor ``[0]`` / ``[]``;
- integer tensors, lists and bool masks -> ``index.Tensor`` (a copy: no ``_base``);
- nothing left to do (``x[...]``, ``x[:, :]``) -> ``alias``, a new view.

``x[index] = value``: a number becomes a 0-d tensor of ``x``'s dtype (``lift_fresh``); basic
indexing then writes with ``copy_`` (same shape), ``fill_`` (0-d cpu value) or ``view`` +
``expand`` + ``copy_``; advanced indexing with ``index_put_``. Exactly one mutating op runs, so
``x._version`` moves by one (none for ``x[False] = v``).
"""

from __future__ import annotations

import operator
import sys
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _dtype as dt
from ..kernels._common import Spec, new_tensor, type_name
from ..layout import contiguous_strides
from ..registry import ops
from ..storage import CPU, META
from ..tensor import Tensor
from ._register import method

_MAX = sys.maxsize
_SEQ_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in a future release; use x[tuple(seq)] instead of x[seq]. It will then be interpreted as a "
    "tensor index, x[sk.tensor(seq)], which will result either in an error or a different result")


def _is_long(obj) -> bool:
    """PyTorch's ``THPUtils_checkLong``: Python ints (not bools) and numpy integers."""
    return (isinstance(obj, int) and not isinstance(obj, bool)) or isinstance(obj, np.integer)


def _is_sequence(obj) -> bool:
    return isinstance(obj, (Sequence, np.ndarray)) and not isinstance(obj, Tensor)


def _tp_name(obj) -> str:
    cls = type(obj)
    mod = cls.__module__
    return cls.__qualname__ if mod == "builtins" else f"{mod}.{cls.__qualname__}"


def _wrap_tuple(index) -> tuple:
    """NumPy's heuristic: a short non-tuple sequence holding slices, sequences, tensors, ``...``
    or ``None`` is read as a tuple of indices (with a deprecation warning)."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, Tensor) or type(index) is np.ndarray or not _is_sequence(index):
        return (index,)
    if len(index) >= 32:
        return (index,)
    for item in index:
        if (isinstance(item, (Tensor, slice)) or _is_sequence(item) or item is None
                or item is Ellipsis):
            warnings.warn(_SEQ_WARNING, UserWarning, stacklevel=4)
            return tuple(index)
    return (index,)


def _count_specified(index: tuple) -> int:
    count = 0
    for obj in index:
        if isinstance(obj, Tensor):
            count += obj.ndim if obj.dtype in (dt.bool_, dt.uint8) else 1
        elif obj is not None and obj is not Ellipsis and obj is not True and obj is not False:
            count += 1
    return count


def _unpack_slice(s: slice) -> tuple:
    """``PySlice_Unpack``: (start, stop, step) with None filled in."""
    def idx(v, default):
        if v is None:
            return default
        try:
            return operator.index(v)
        except TypeError:
            raise TypeError("slice indices must be integers or None or have an __index__ "
                            "method") from None
    step = idx(s.step, 1)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start = idx(s.start, _MAX if step < 0 else 0)
    stop = idx(s.stop, -_MAX - 1 if step < 0 else _MAX)
    return start, stop, step


def _sequence_to_tensor(seq, device) -> Tensor:
    """A list/array index as a tensor on ``device``: bool (and uint8 arrays) stay masks,
    anything else is int64 (floats truncate), like PyTorch's ``indexing_tensor_from_data``."""
    if isinstance(seq, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(seq).__name__}'")
    arr = np.asarray(seq)
    if arr.dtype.kind in "USO":
        bad = next((x for x in np.ravel(arr) if isinstance(x, (str, bytes))), None)
        if bad is not None or arr.dtype.kind in "US":
            raise TypeError("new(): invalid data type 'str'")
        raise ValueError("expected a rectangular (non-ragged) sequence of indices")
    if arr.dtype == np.bool_:
        dtype = dt.bool_
    elif arr.dtype == np.uint8 and isinstance(seq, np.ndarray):
        dtype = dt.uint8
    else:
        dtype = dt.int64
    return ops.lift_fresh.default(_from_array(arr, dtype, device))


def _from_array(arr, dtype, device) -> Tensor:
    """A fresh tensor holding ``arr`` cast to ``dtype``, made below dispatch (modes only see the
    ``lift_fresh`` the caller applies, as in PyTorch)."""
    shape = tuple(arr.shape)
    t = new_tensor(Spec(shape, contiguous_strides(shape), dtype, device))
    if device is not META:
        np.copyto(t._array(), np.asarray(arr).astype(dtype.numpy), casting="unsafe")
    return t


def _convert(obj, device):
    """One tuple element as (kind, value); PyTorch's order of checks."""
    if _is_long(obj):
        return "int", int(obj)
    if isinstance(obj, slice):
        return "slice", _unpack_slice(obj)
    if obj is Ellipsis:
        return "ellipsis", None
    if obj is None:
        return "none", None
    if obj is True or obj is False:
        return "bool", obj
    if isinstance(obj, Tensor):
        return "tensor", obj
    if _is_sequence(obj):
        return "tensor", _sequence_to_tensor(obj, device)
    try:
        return "int", operator.index(obj)
    except TypeError:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {_tp_name(obj)})") from None


# -- the primitive steps ----------------------------------------------------------------------
def _select(t, dim, index, real_dim):
    sizes = t._layout.sizes
    if index == 0 and dim == 0 and not sizes:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    # Past the last dim (``scalar[1]``, or several ``...``) PyTorch reads an unset size: 0.
    size = sizes[dim] if dim < len(sizes) else 0
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {real_dim} with size "
                         f"{size}")
    return ops.select.int(t, dim, index)


def _slice(t, dim, start, stop, step, keep_full):
    if step <= 0:
        raise ValueError("step must be greater than zero")
    sizes = t._layout.sizes
    # A 0-d tensor never elides; past the last dim PyTorch reads an unset size (0).
    length = sizes[dim] if dim < len(sizes) else 0
    if not keep_full and sizes and start == 0 and step == 1 and stop >= length:
        return t
    return ops.slice.Tensor(t, dim, start, stop, step)


def _bool_index(t, value: bool) -> Tensor:
    """PyTorch's ``boolToIndexingTensor``: ``[0]`` for True, ``[]`` for False (int64)."""
    if value:
        return ops.fill_.Scalar(ops.empty.memory_format([1], dtype=dt.int64, device=t.device), 0)
    return ops.empty.memory_format([0], dtype=dt.int64, device=t.device)


class _Slots:
    """The list of index tensors handed to ``index``: one slot per tensor (a mask covers
    ``mask.dim()`` dims with one slot), padded with None for the dims in between."""

    def __init__(self):
        self.items = []
        self.covered = 0

    def record(self, t, dim) -> int:
        while self.covered < dim:
            self.items.append(None)
            self.covered += 1
        self.items.append(t)
        width = t.ndim if t.dtype in (dt.bool_, dt.uint8) else 1
        self.covered += width
        return dim + width


def _apply_slicing(self, index: tuple):
    """Basic indexing over a tuple; returns (view or self, advanced index slots)."""
    ndim = self.ndim
    specified = _count_specified(index)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    result, dim, slots = self, 0, _Slots()
    for i, obj in enumerate(index):
        kind, val = _convert(obj, self._storage.device)
        if kind == "int":
            result = _select(result, dim, val, i)
        elif kind == "slice":
            result = _slice(result, dim, *val, keep_full=False)
            dim += 1
        elif kind == "ellipsis":
            dim += ndim - specified
        elif kind == "none":
            result = ops.unsqueeze.default(result, dim)
            dim += 1
        elif kind == "bool":
            result = ops.unsqueeze.default(result, dim)
            dim = slots.record(_bool_index(result, val), dim)
        elif val.ndim == 0 and not val.dtype.is_floating_point:
            if val.dtype in (dt.bool_, dt.uint8):
                result = ops.unsqueeze.default(result, dim)
                flag = bool(ops._local_scalar_dense.default(val))
                dim = slots.record(_bool_index(result, flag), dim)
            else:
                result = _select(result, dim, int(ops._local_scalar_dense.default(val)), i)
        else:
            dim = slots.record(val, dim)
    return result, slots.items


@method("__getitem__")
def getitem(self, index):
    """``x[index]``: views for ints, slices, None, ``...``; a copy (``index``) for integer
    tensors, lists and bool masks. Errors: IndexError / ValueError / TypeError as PyTorch."""
    if index is None:
        return ops.unsqueeze.default(self, 0)
    if index is Ellipsis:
        return ops.alias.default(self)
    if _is_long(index):
        return _select(self, 0, int(index), 0)
    if isinstance(index, slice):
        return _slice(self, 0, *_unpack_slice(index), keep_full=True)
    if index is True or index is False:
        result = ops.unsqueeze.default(self, 0)
        return ops.index.Tensor(result, [_bool_index(result, index)])
    sliced, indices = _apply_slicing(self, _wrap_tuple(index))
    if not indices:
        return ops.alias.default(sliced) if sliced is self else sliced
    return ops.index.Tensor(sliced, indices)


# -- __setitem__ ------------------------------------------------------------------------------
def _value_to_tensor(self, value) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if _is_long(value) or isinstance(value, (bool, float)):
        if not isinstance(value, (bool, float)) and not -2 ** 63 <= int(value) < 2 ** 63:
            raise ValueError("Overflow when unpacking long long")   # PyTorch's unpacking
        device = self._storage.device
        if device is not CPU:
            # PyTorch's scalarToTensor: off cpu a dispatched scalar_tensor (a bool as 0 / 1),
            # on cpu a tensor made outside dispatch, then lift_fresh
            number = float(value) if isinstance(value, float) else int(value)
            return ops.scalar_tensor.default(number, dtype=self._dtype, device=device)
        t = _from_array(np.array(value), self._dtype, device)
        return ops.lift_fresh.default(t)
    raise TypeError(f"can't assign a {_tp_name(value)} to a sk.{type_name(self._dtype)}Tensor")


def _strip_leading_ones(sizes) -> list:
    sizes = list(sizes)
    while sizes and sizes[0] == 1:
        sizes.pop(0)
    return sizes


def _copy_to(dst, src):
    """PyTorch's ``copy_to``: the one mutating op of a basic-index ``__setitem__``."""
    if dst._layout.sizes == src._layout.sizes:
        ops.copy_.default(dst, src)
        return
    if not src._layout.sizes and src._storage.device is CPU:
        ops.fill_.Tensor(dst, src)
        return
    src = ops.view.default(src, _strip_leading_ones(src._layout.sizes))
    if src._layout.sizes != dst._layout.sizes:
        src = ops.expand.default(src, list(dst._layout.sizes))
    ops.copy_.default(dst, src)


@method("__setitem__")
def setitem(self, index, value):
    """``x[index] = value`` (a Tensor, bool, int or float). Bumps ``x._version`` once."""
    value = _value_to_tensor(self, value)
    if index is False:
        return
    if index is Ellipsis:
        _copy_to(self, value)
    elif index is None or index is True:
        _copy_to(ops.unsqueeze.default(self, 0), value)
    elif _is_long(index):
        _copy_to(_select(self, 0, int(index), 0), value)
    elif isinstance(index, slice):
        _copy_to(_slice(self, 0, *_unpack_slice(index), keep_full=False), value)
    else:
        sliced, indices = _apply_slicing(self, _wrap_tuple(index))
        if not indices:
            _copy_to(sliced, value)
            return
        stripped = _strip_leading_ones(value._layout.sizes)
        if len(stripped) != len(value._layout.sizes):
            value = ops.view.default(value, stripped)
        ops.index_put_.default(sliced, indices, value)


def __delitem__(self, index):
    raise TypeError("Tensor does not support deleting items")


Tensor.__delitem__ = __delitem__


# -- index_put ---------------------------------------------------------------------------------
def _check_args(indices, values, name):
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position 2) must be Tensor, not "
                        f"{type(values).__name__}")


@method("index_put_")
def index_put_(self, indices, values, accumulate=False):
    """``self[indices] = values`` with a tuple of index tensors (one per leading dim); with
    ``accumulate=True`` values add up, duplicates included. Returns ``self``."""
    _check_args(indices, values, "index_put_")
    return ops.index_put_.default(self, list(indices), values, accumulate)


@method("index_put")
def index_put(self, indices, values, accumulate=False):
    """Functional ``index_put_``: a new tensor (``self``'s strides), ``self`` unchanged."""
    _check_args(indices, values, "index_put")
    return ops.index_put.default(self, list(indices), values, accumulate)


__all__ = ["index_put"]
