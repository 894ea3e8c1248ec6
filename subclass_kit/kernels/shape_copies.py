"""Copies that rearrange elements: ``flip``, ``roll``, ``repeat``, ``diag_embed``.

One rule per op (Note [One rule per op]) with PyTorch's CPU checks and texts, in its order,
and its output layouts:

- ``flip`` allocates like ``empty_like(self)`` (strides of a dense input kept);
- ``roll`` is ``cat`` of two ``narrow`` pieces per rolled dim (PyTorch's ``roll_cpu``), so its
  output has ``cat``'s layout (a channels-last input stays channels-last); an empty input is a
  clone; with no ``dims`` the flattened tensor rolls and is viewed back (contiguous);
- ``repeat`` and ``diag_embed`` are fresh and contiguous.
"""

from __future__ import annotations

import numpy as np

from ..layout import contiguous_strides, wrap_dim, wrap_dims
from ..registry import ops
from ._common import Spec, register_rule
from .factories import _preserved_strides, check_size
from .shape import _cat_layout


def _spec(self, sizes, strides) -> Spec:
    return Spec(tuple(sizes), tuple(strides), self._dtype, self._storage.device)


# -- flip ----------------------------------------------------------------------------------------
def _flip_dims(self, dims) -> tuple:
    return wrap_dims(dims, len(self._layout.sizes))


def _flip_rule(self, dims):
    _flip_dims(self, dims)
    return _spec(self, self._layout.sizes, _preserved_strides(self, None))


def _flip_fill(outs, spec, self, dims):
    axes = _flip_dims(self, dims) if self._layout.sizes else ()
    np.copyto(outs[0], np.flip(self._array(), axes) if axes else self._array())


# -- roll ----------------------------------------------------------------------------------------
def _roll_plan(self, shifts, dims):
    """[(dim, shift)] in PyTorch's order, or None for the flattened roll; raises its errors."""
    shifts, dims = list(shifts), list(dims)
    if len(dims) == 1 and len(shifts) == 1:
        return [(dims[0], shifts[0])]
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return None
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    return list(zip(dims, shifts))


def _roll_rule(self, shifts, dims=()):
    plan = _roll_plan(self, shifts, dims)
    sizes = self._layout.sizes
    if plan is None:
        return _spec(self, sizes, contiguous_strides(sizes))
    if self._layout.numel() == 0:     # roll_cpu: a clone, before any dim is read
        return _spec(self, sizes, _preserved_strides(self, None))
    strides = self._layout.strides
    for dim, shift in plan:
        if not sizes:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = wrap_dim(dim, len(sizes))
        start = (sizes[d] - shift) % sizes[d]
        pieces = [(sizes[:d] + (n,) + sizes[d + 1:], strides) for n in (sizes[d] - start, start)]
        sizes, strides = _cat_layout(pieces, d)
    return _spec(self, sizes, strides)


def _roll_fill(outs, spec, self, shifts, dims=()):
    arr = self._array()
    plan = _roll_plan(self, shifts, dims)
    if plan is None:
        outs[0][...] = np.roll(arr.reshape(-1), shifts[0]).reshape(arr.shape)
    elif arr.size:
        outs[0][...] = np.roll(arr, [s for _, s in plan], [d for d, _ in plan])
    else:
        np.copyto(outs[0], arr)


# -- repeat --------------------------------------------------------------------------------------
def _repeat_padded(self, repeats) -> tuple:
    sizes = self._layout.sizes
    if len(repeats) < len(sizes):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    return (1,) * (len(repeats) - len(sizes)) + tuple(sizes)


def _repeat_rule(self, repeats):
    padded = _repeat_padded(self, repeats)
    target = check_size([p * r for p, r in zip(padded, repeats)])
    return _spec(self, target, contiguous_strides(target))


def _repeat_fill(outs, spec, self, repeats):
    padded = _repeat_padded(self, repeats)
    outs[0][...] = np.tile(self._array().reshape(padded), tuple(repeats))


# -- diag_embed ----------------------------------------------------------------------------------
def _diag_embed_dims(self, offset, dim1, dim2):
    n = len(self._layout.sizes) + 1
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diag_embed_rule(self, offset=0, dim1=-2, dim2=-1):
    d1, d2 = _diag_embed_dims(self, offset, dim1, dim2)
    sizes = list(self._layout.sizes)
    length = abs(offset) + sizes.pop()
    sizes.insert(min(d1, d2), length)
    sizes.insert(max(d1, d2), length)
    return _spec(self, sizes, contiguous_strides(sizes))


def _diag_embed_fill(outs, spec, self, offset=0, dim1=-2, dim2=-1):
    d1, d2 = _diag_embed_dims(self, offset, dim1, dim2)
    out = outs[0]
    out[...] = 0
    i = np.arange(self._layout.sizes[-1])
    rows, cols = i + max(-offset, 0), i + max(offset, 0)
    np.moveaxis(out, (d1, d2), (-2, -1))[..., rows, cols] = self._array()


register_rule(ops.flip, _flip_rule, _flip_fill)
register_rule(ops.roll, _roll_rule, _roll_fill)
register_rule(ops.repeat, _repeat_rule, _repeat_fill)
register_rule(ops.diag_embed, _diag_embed_rule, _diag_embed_fill)
