"""Output layouts and allocation of elementwise ops: PyTorch's TensorIterator rules.

- equal shapes: ``fast_set_up`` keeps a layout all operands share (contiguous, channels-last,
  or the same non-overlapping dense strides);
- otherwise ``compute_strides`` + ``reorder_dimensions``: dims are sorted by the inputs'
  strides (broadcast dims ignored, ties broken by size), and the output is dense in that
  order, with plain contiguous strides when the order is the identity;
- on cpu, an input whose dtype differs from the computation dtype is first copied by
  ``.to(dtype)`` (``empty_like`` with preserve_format), which can change its layout.

``alloc`` makes the fresh dense output tensor, with its numpy view built once.
"""

from __future__ import annotations

import numpy as np

from ..layout import (Layout, broadcast_shapes, channels_last_strides, compute_storage_nbytes,
                      compute_storage_nbytes_contiguous, contiguous_strides)
from .._state import tls
from ..storage import CPU, Storage
from ..tensor import Tensor, make_tensor

__all__ = ["alloc", "contig", "layout_of", "layout_of_pairs", "iter_perm", "iter_strides"]

_CONTIG: dict = {}


def contig(sizes):
    s = _CONTIG.get(sizes)
    if s is None:
        s = contiguous_strides(sizes)
        if len(_CONTIG) < 65536:     # bounded: a program of ever-new shapes must not grow it
            _CONTIG[sizes] = s
    return s


def layout_of(tensors, common=None, targets=None, wrapped=False):
    """Output sizes and strides of a pointwise op over ``tensors`` (TensorIterator: with equal
    shapes its ``fast_set_up`` keeps a contiguous, channels-last or shared dense layout; else
    outputs follow the inputs' memory order, ``elementwise_strides``). Inputs whose dtype is
    not ``common`` are first copied by ``.to(common)`` on cpu, which changes their layout
    (``targets``: one dtype per tensor instead). ``wrapped``: a Python number is an operand
    too (a wrapped 0-d tensor, as in ``x + 1``): the shapes then differ, so there is no fast
    setup and the output follows the inputs' stride order, size-1 dims included
    (``zeros(1, 2, 1).permute(1, 0, 2) + 1`` has strides ``(1, 2, 1)``, not ``(1, 1, 1)``)."""
    if targets is not None or wrapped:
        if targets is None:
            targets = [common or t._dtype for t in tensors]
        layouts = [(t._layout.sizes, t._layout.strides if t._dtype is d
                    else _cast_strides(t._layout)) for t, d in zip(tensors, targets)]
        if wrapped:
            layouts.append(((), ()))
        return layout_of_pairs(layouts)
    sizes = tensors[0]._layout.sizes
    for t in tensors:
        if t._layout.sizes != sizes or (common is not None and t._dtype is not common):
            break
    else:
        dense = contig(sizes)
        for t in tensors:
            if t._layout.strides != dense:
                break
        else:
            return sizes, dense
    return layout_of_pairs([(t._layout.sizes, t._layout.strides if common is None
                              or t._dtype is common else _cast_strides(t._layout))
                             for t in tensors])


_PAIRS: dict = {}


def layout_of_pairs(layouts):
    """Memoised: the answer depends only on the operands' (sizes, strides), and programs repeat
    the same few layouts (PyTorch's FakeTensor op cache idea, applied to the layout rule)."""
    key = tuple(layouts)
    found = _PAIRS.get(key)
    if found is None:
        found = _compute_layout_of_pairs(key)
        if len(_PAIRS) < 4096:
            _PAIRS[key] = found
    return found


def _compute_layout_of_pairs(layouts):
    sizes = layouts[0][0]
    for lay in layouts:
        if lay[0] != sizes:
            sizes = broadcast_shapes(*(lay[0] for lay in layouts))
            return sizes, iter_strides(sizes, layouts)
    dense = contig(sizes)
    if 0 in sizes or all(Layout(*lay).is_contiguous() for lay in layouts):
        return sizes, dense
    if len(sizes) == 4 and all(Layout(*lay).is_channels_last() for lay in layouts):
        return sizes, channels_last_strides(sizes)
    strides = layouts[0][1]
    if all(lay[1] == strides for lay in layouts) and _dense(sizes, strides):
        return sizes, strides
    return sizes, iter_strides(sizes, layouts)


def iter_strides(shape, layouts) -> tuple:
    """TensorIterator's output strides when ``fast_set_up`` does not apply
    (``compute_strides`` + ``reorder_dimensions`` + ``allocate_or_resize_outputs``): dims are
    sorted by the inputs' strides (broadcast dims ignored, ties to the smaller size), and the
    output is dense in that order; the identity order gives plain contiguous strides."""
    ndim = len(shape)
    if ndim <= 1:
        return contig(shape)
    perm = iter_perm(shape, layouts)
    if perm == list(range(ndim - 1, -1, -1)):
        return contig(shape)
    strides = [0] * ndim
    acc = 1
    for d in perm:
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def iter_perm(shape, layouts) -> list:
    """TensorIterator's ``reorder_dimensions``: the dims of ``shape`` fastest first, sorted by
    the strides of ``layouts`` (``(sizes, strides)`` per operand, outputs first; broadcast dims
    ignored, equal strides to the smaller size first, an insertion sort that stops at the first
    operand deciding). It is also the order TensorIterator's loops visit elements in: the last
    dim of the result varies slowest."""
    ndim = len(shape)
    rows = []
    for sizes, strides in layouts:
        lead = ndim - len(sizes)
        row = [0] * lead
        for i, (size, stride) in enumerate(zip(sizes, strides)):
            row.append(0 if size == 1 and shape[lead + i] != 1 else stride)
        rows.append(row)

    def should_swap(d0, d1):
        for row in rows:
            s0, s1 = row[d0], row[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))  # perm[0] is the fastest dim
    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            cmp = should_swap(perm[dim0], perm[dim1])
            if cmp > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif cmp < 0:
                break
    return perm


def _cast_strides(layout):
    """Strides of ``t.to(dtype)`` (``empty_like`` with preserve_format)."""
    sizes, strides = layout.sizes, layout.strides
    if _dense(sizes, strides):
        return strides
    if len(sizes) == 4 and _channels_last_like(sizes, strides):
        return channels_last_strides(sizes)
    return contig(sizes)


def _channels_last_like(sizes, strides) -> bool:
    """PyTorch's ``is_channels_last_strides_2d_s4`` (``suggest_memory_format``)."""
    if strides[1] == 0:
        return False
    low = 0
    for d in (1, 3, 2, 0):
        if sizes[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * (max(1, sizes[d]))
    return True


def _dense(sizes, strides) -> bool:
    """PyTorch's ``is_non_overlapping_and_dense``."""
    if len(sizes) == 1:
        return sizes[0] < 2 or strides[0] == 1
    order = sorted(range(len(sizes)), key=lambda d: (sizes[d] < 2, strides[d]))
    expected = 1
    for d in order:
        if sizes[d] < 2:
            return True
        if strides[d] != expected:
            return False
        expected *= sizes[d]
    return True


_ALLOC: dict = {}
_new = object.__new__


def alloc(sizes, strides, dtype, device):
    """A fresh dense tensor. On cpu the storage owns one typed ``np.empty`` array and the
    tensor's cached numpy view is that array (contiguous) or a strided view of it.

    The cpu branch is ``make_tensor(Storage._over(buf), ...)`` written out: it runs for every
    op output, and the two calls cost a third of it.

    Raises RuntimeError "Storage size calculation overflowed with sizes=[...]" (" and
    strides=[...]" for a layout with gaps or overlap) when the bytes pass the int64 range, on
    meta too, as PyTorch's cpu allocator does (some of its meta kernels wrap around instead)."""
    key = (sizes, strides, dtype)
    entry = _ALLOC.get(key)
    if entry is None:
        entry = _alloc_entry(key)
    layout, plain, nbytes, extent, bstrides, np_dtype, numel = entry
    if device is not CPU:
        return make_tensor(Storage(extent * dtype.itemsize, device), layout, dtype)
    storage = _new(Storage)
    if plain:
        # contiguous, its numpy dtype the storage's: one array is buffer and view
        buf = arr = storage._buffer = np.empty(sizes, np_dtype)
        storage._shadow = None
    else:
        if strides == contig(sizes):
            buf = arr = np.empty(sizes, np_dtype)
        else:
            buf = np.empty(extent, np_dtype)
            arr = np.ndarray(sizes, np_dtype, buf, 0, bstrides) if numel else np.empty(sizes,
                                                                                      np_dtype)
        if np_dtype is not dtype.storage_numpy:
            # bfloat16: the kernel writes the float32 shadow of the (unwritten) 2-byte words
            # (Note [Storage dtype and compute dtype]); ``_np_buf`` is then the shadow.
            storage._buffer = np.empty(extent, dtype.storage_numpy)
            storage._shadow = buf = buf.reshape(-1)
        else:
            storage._buffer = buf
            storage._shadow = None
    storage._nbytes = nbytes
    storage.device = CPU
    storage._resizable = True
    storage._dataless = False
    t = _new(Tensor)
    t._storage = storage
    t._layout = layout
    t._dtype = dtype
    t._base = None
    if tls.inference:
        t._vc = None
        t._inference = True
    else:
        t._vc = [0]
        t._inference = False
    # Tensor._array() caches its numpy view under these two attributes. Kernels read a
    # fresh cpu output's view as ``out._np``: calling ``_array()`` on fresh plain outputs and
    # on subclass inputs alike would defeat the interpreter's attribute specialisation there.
    t._np = arr
    t._np_buf = buf
    return t


def _alloc_entry(key) -> tuple:
    """What ``alloc`` needs of a ``(sizes, strides, dtype)``: ``(layout, plain, nbytes,
    extent, numpy byte strides, numpy dtype, numel)``, ``plain`` for a contiguous layout of a
    dtype whose numpy array is its storage. Runs PyTorch's allocation check once per layout
    (cached, bounded)."""
    sizes, strides, dtype = key
    numel = 1
    for s in sizes:
        numel *= s
    item = dtype.itemsize
    layout = Layout(sizes, strides, 0)
    extent = layout.storage_extent()
    # PyTorch's allocation check (``empty``'s for dense layouts, ``empty_strided``'s
    # otherwise), off the hot path.
    if extent == numel:
        compute_storage_nbytes_contiguous(sizes, item)
    else:
        compute_storage_nbytes(sizes, strides, item)
    contiguous = strides == contig(sizes)
    # numpy strides in the compute dtype's bytes (bfloat16: float32's 4, not its 2).
    entry = (layout, contiguous and dtype.numpy is dtype.storage_numpy,
             extent * dtype.storage_numpy.itemsize, extent,
             tuple(s * dtype.numpy.itemsize for s in strides), dtype.numpy, numel)
    if len(_ALLOC) < 4096:
        _ALLOC[key] = entry
    return entry
