"""Writes whose output overlaps an input in a way PyTorch cannot classify: its loop order.

PyTorch refuses an in-place, ``out=`` or ``copy_`` write whose input shares part of the
output's memory only when both are non-overlapping and dense (``assert_no_partial_overlap``;
``overlap_status`` in ``_common.py``). Otherwise the overlap is "too hard" to tell and the write
runs: TensorIterator visits the elements one by one in its loop order (``iter_perm``), and an
element read after an earlier iteration wrote it reads the new value. So with ``x`` of 8
elements and ``w = x.as_strided((2, 2), (4, 1), 1)``, ``w[:, 1].sub_(w[0])`` writes ``x[2]``
first and then reads that new ``x[2]`` for ``x[6]``.

numpy computes from a snapshot of the inputs. :func:`write_in_loop_order` runs the compute in
**waves** of iterations instead: a wave ends before the first iteration reading an element an
earlier iteration of the same wave writes, so each wave is one vectorised compute and the
result equals PyTorch's element-by-element loop. The number of waves is the length of the
longest chain of such reads (a loop over waves, not elements; 1 when nothing depends).

Where PyTorch's loop differs from element order (docs/differences.md): an innermost loop
that is contiguous in every operand and at least two SIMD vectors long (16 float32 elements
with AVX2) loads a block of two vectors before storing it, and loops over 32768 elements run in
parallel threads: we keep the element order there.
"""

from __future__ import annotations

import numpy as np

from ..storage import CPU, round_to_bfloat16
from .. import _dtype as dt
from ..tensor import Tensor
from ._iter_layout import alloc, iter_perm

__all__ = ["write_in_loop_order"]


def _span(t: Tensor):
    """``[first, last]`` element of ``t`` in its storage (no negative strides exist)."""
    lay = t._layout
    return lay.offset, lay.offset + sum((n - 1) * s for n, s in zip(lay.sizes, lay.strides))


def _aliasing_inputs(out: Tensor, operands) -> list:
    """Tensor operands whose elements ``out`` may write at another iteration than the one
    reading them: same storage and dtype, intersecting spans, and another layout, or the same
    one when ``out`` may overlap itself (then an element is written more than once)."""
    storage, layout = out._storage, out._layout
    lo, hi = _span(out)
    found = []
    for a in operands:
        if (isinstance(a, Tensor) and a._storage is storage and a._dtype is out._dtype
                and a._layout.numel()
                and (a._layout != layout or _may_overlap_itself(layout))):
            a_lo, a_hi = _span(a)
            if a_lo <= hi and lo <= a_hi:
                found.append(a)
    return found


def _may_overlap_itself(layout) -> bool:
    """False when each stride (sorted, size-1 dims left out) passes the extent of the
    smaller ones: then no two elements share memory. Memoised per sizes and strides."""
    key = (layout.sizes, layout.strides)
    found = _SELF_OVERLAP.get(key)
    if found is None:
        found, extent = False, 1
        for s, n in sorted((s, n) for n, s in zip(*key) if n > 1):
            if s < extent:
                found = True
                break
            extent += (n - 1) * s
        if len(_SELF_OVERLAP) > 4096:
            _SELF_OVERLAP.clear()
        _SELF_OVERLAP[key] = found
    return found


_SELF_OVERLAP: dict = {}


def _broadcast_strides(t: Tensor, shape) -> list:
    lay = t._layout
    lead = len(shape) - len(lay.sizes)
    return [0] * lead + [0 if n == 1 and shape[lead + i] != 1 else s
                         for i, (n, s) in enumerate(zip(lay.sizes, lay.strides))]


def write_in_loop_order(out: Tensor, operands, compute) -> bool:
    """Write ``out`` as PyTorch's element-by-element loop would when an operand shares its
    memory (module docstring); return False, doing nothing, when no iteration reads an element
    written by an earlier one and none is written twice (the caller then computes from a
    snapshot, which is the same).

    ``operands``: the op's arguments in order (tensors and anything else), ``out`` among them
    for an in-place op. ``compute(result, args)``: fills the 1-D numpy array ``result`` (``out``'s
    compute dtype) from ``args``, ``operands`` with each tensor replaced by a fresh 1-D tensor of
    its elements for the iterations of one wave. Nothing is written into ``out`` until every
    wave has run, so an error leaves it unchanged. An element ``out`` holds more than once
    (strides PyTorch's ``assert_no_internal_overlap`` cannot judge) keeps its last write."""
    storage = out._storage
    for a in operands:
        if a is not out and isinstance(a, Tensor) and a._storage is storage:
            break
    else:
        if not _may_overlap_itself(out._layout):
            return False        # the common case: nothing else on ``out``'s memory
    shape = out._layout.sizes
    if storage.device is not CPU or len(shape) == 0 or out._layout.numel() < 2:
        return False
    aliasing = _aliasing_inputs(out, operands)
    if not aliasing and not _may_overlap_itself(out._layout):
        return False
    tensors = [a for a in operands if isinstance(a, Tensor)]
    perm = iter_perm(shape, [(out._layout.sizes, out._layout.strides)]
                     + [(t._layout.sizes, t._layout.strides) for t in tensors])
    order = perm[::-1]                   # slowest dim first: the loop's element order
    grid = np.indices([shape[d] for d in order]).reshape(len(shape), -1)
    index = [None] * len(shape)          # per dim of ``out``: its index at each iteration
    for k, d in enumerate(order):
        index[d] = grid[k]
    index = tuple(index)

    def addresses(t):
        strides = _broadcast_strides(t, shape)
        addr = np.full(grid.shape[1], t._layout.offset, dtype=np.int64)
        for d, s in enumerate(strides):
            if s:
                addr += index[d] * s
        return addr

    out_addr = addresses(out)
    n = out_addr.size
    step = np.arange(n)
    # the writes sorted by (element, iteration): the last write before iteration i of the
    # element it reads is found by one binary search
    keys = out_addr * n + step
    by_key = np.argsort(keys, kind="stable")
    sorted_keys = keys[by_key]
    # writer[a][i]: the last earlier iteration that wrote what iteration i reads through
    # ``a``, else -1
    writer = {}
    for a in aliasing:
        read = addresses(a)
        pos = np.searchsorted(sorted_keys, read * n + step) - 1
        prev = by_key[np.maximum(pos, 0)]
        hit = (pos >= 0) & (out_addr[prev] == read)
        writer[id(a)] = np.where(hit, prev, -1)
    depends = np.max(np.stack([np.full(n, -1)] + list(writer.values())), axis=0)
    # an element written more than once keeps its last write
    last = np.ones(n, dtype=bool)
    last[:-1] = out_addr[by_key[:-1]] != out_addr[by_key[1:]]
    if not (depends >= 0).any() and last.all():
        return False

    def values(t):
        """``t``'s elements in loop order (a snapshot, before any write)."""
        return np.broadcast_to(t._array(), shape)[index]

    snapshots = {id(t): values(t) for t in tensors}
    result = np.empty(n, out._dtype.numpy)
    bfloat16 = out._dtype is dt.bfloat16
    start = 0
    while start < n:
        later = np.flatnonzero(depends[start + 1:] >= start)
        stop = start + 1 + int(later[0]) if later.size else n
        args = []
        for a in operands:
            if not isinstance(a, Tensor):
                args.append(a)
                continue
            vals = snapshots[id(a)][start:stop]
            w = writer.get(id(a))
            if w is not None:
                w = w[start:stop]
                vals = np.where(w >= 0, result[np.maximum(w, 0)], vals)
            chunk = alloc((stop - start,), (1,), a._dtype, CPU)
            chunk._array()[...] = vals
            args.append(chunk)
        part = result[start:stop]
        compute(part, args)
        if bfloat16:         # the value later iterations read is the stored bfloat16 one
            part[...] = round_to_bfloat16(part)
        start = stop
    keep = by_key[last]
    out._array()[tuple(ix[keep] for ix in index)] = result[keep]
    return True
