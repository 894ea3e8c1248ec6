"""Element-rearranging copies and grids: ``flip``, ``roll``, ``Tensor.repeat``, ``tile``,
``diag``, ``diag_embed``, ``outer``/``ger``, ``kron``, ``meshgrid``.

Each function is the PyTorch function of the same name (same argument forms, same errors) and,
where PyTorch has one, the ``Tensor`` method too. ``flip``, ``roll``, ``repeat`` and
``diag_embed`` are primitives (``kernels/shape_copies.py``); ``tile`` (-> ``repeat``), ``diag``
(-> ``diag_embed`` or ``diagonal_copy``), ``outer`` (-> ``view`` + ``mul``), ``kron``
(-> ``_unsafe_view`` + ``mul``) and ``meshgrid`` (-> ``view`` + ``expand``) are composites
(``decompositions.py``), so modes see what PyTorch's ``TorchDispatchMode`` sees.
"""

from __future__ import annotations

import warnings

from ..function import public_api
from ..registry import ops
from ..tensor import Tensor
from ._register import method, size_args

__all__ = ["diag", "diag_embed", "flip", "ger", "kron", "meshgrid", "outer", "roll", "tile"]


def _export(fn, *method_names):
    """``public_api``-wrap ``fn``; install it as ``Tensor.<name>`` for each method name."""
    public = public_api(fn)
    for name in method_names:
        setattr(Tensor, name, public)
    return public


def _int_list(fname, name, value, pos) -> list:
    """An ``int[]`` argument: a tuple or list of ints. TypeError otherwise, as PyTorch's parser
    ("flip(): argument 'dims' (position 2) must be tuple of ints, not int")."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be tuple of ints, "
                        f"not {type(value).__name__}")
    return list(size_args(tuple(value))) if value else []


def _int_or_list(value) -> list:
    """An ``int[1]`` argument: one int or a sequence of ints."""
    if isinstance(value, (list, tuple)):
        return list(size_args(tuple(value))) if value else []
    return list(size_args((value,)))


def flip(input, dims):
    """A copy of ``input`` with the order of elements reversed along each of ``dims`` (strides
    of a dense input kept, as ``empty_like``). RuntimeError "dim 0 appears multiple times in the
    list of dims"; IndexError for a dim out of range."""
    return ops.flip.default(input, _int_list("flip", "dims", dims, 2))


def _flip_method(self, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return ops.flip.default(self, list(size_args(tuple(dims))) if dims else [])


def roll(input, shifts, dims=None):
    """Elements shifted by ``shifts`` along ``dims`` (ints or sequences of equal length), wrapping
    around; with no ``dims`` the flattened tensor rolls. Contiguous output (``cat``'s layout).
    RuntimeError "shifts and dimensions must align. shifts: 2, dims:1"."""
    return ops.roll.default(input, _int_or_list(shifts), [] if dims is None else _int_or_list(dims))


def _repeat(self, *repeats):
    """``self`` tiled ``repeats[i]`` times along dim ``i`` (leading dims added when ``repeats``
    is longer than ``self.dim()``). Contiguous output. RuntimeError for fewer repeats than dims
    and for negative repeats ("Trying to create tensor with negative dimension -2: [-2, 6]")."""
    if not repeats:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    return ops.repeat.default(self, list(size_args(repeats)))


def tile(input, dims):
    """``repeat`` with ``dims`` padded by leading 1s to ``input.dim()`` (numpy's ``tile``)."""
    return ops.tile.default(input, _int_list("tile", "dims", dims, 2))


def _tile_method(self, *dims):
    if not dims:
        raise TypeError('tile() missing 1 required positional arguments: "dims"')
    return ops.tile.default(self, list(size_args(dims)))


def diag(input, diagonal=0):
    """1-D input: a square matrix with ``input`` on its ``diagonal``-th diagonal; 2-D input: a
    copy of that diagonal. RuntimeError "diag(): Supports 1D or 2D tensors. Got 3D"."""
    return ops.diag.default(input, diagonal)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Zeros with the last dim of ``input`` on the ``offset`` diagonal of dims ``dim1``,
    ``dim2`` of the (one dim larger) output. RuntimeError for ``dim1 == dim2``."""
    return ops.diag_embed.default(input, offset, dim1, dim2)


def outer(input, vec2):
    """Outer product of two 1-D tensors (``mul``'s type promotion): shape ``(n, m)``.
    RuntimeError "outer: Expected 1-D argument self, but got 2-D"."""
    return ops.outer.default(input, vec2)


def kron(input, other):
    """Kronecker product; the operand with fewer dims gets leading 1s. As in PyTorch, operands
    whose product cannot be viewed (a transposed operand) raise view's RuntimeError."""
    return ops.kron.default(input, other)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 0-D/1-D tensors (or one list of them): views of the inputs
    expanded to ``(len(t0), len(t1), ...)`` ("ij") or with the first two swapped ("xy").
    ``indexing=None`` means "ij" and warns, as ``torch.meshgrid``. RuntimeError for mixed
    dtypes or devices, tensors of more than one dim, an unknown ``indexing``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    if indexing is None:
        warnings.warn("sk.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=3)
        return tuple(ops.meshgrid.default(list(tensors)))
    return tuple(ops.meshgrid.indexing(list(tensors), indexing=indexing))


flip = _export(flip)
method("flip")(_flip_method)
roll = _export(roll, "roll")
method("repeat")(_repeat)
tile = _export(tile)
method("tile")(_tile_method)
diag = _export(diag, "diag")
diag_embed = _export(diag_embed, "diag_embed")
outer = _export(outer, "outer", "ger")
ger = outer
kron = _export(kron, "kron")
meshgrid = _export(meshgrid)
