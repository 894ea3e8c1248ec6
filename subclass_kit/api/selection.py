"""``sk.repeat_interleave``, ``sk.masked_select``, ``sk.unique`` and their methods, with
PyTorch's Python signatures; the ops they reach are PyTorch's (``repeat_interleave.self_int``
/ ``.self_Tensor`` / ``.Tensor``, ``masked_select``, ``_unique2``, ``unique_dim``)."""

from __future__ import annotations

from .._argcheck import type_error
from ..registry import ops
from ..tensor import Tensor
from ._register import method

__all__ = ["repeat_interleave", "masked_select", "unique"]


@method("repeat_interleave")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """``torch.repeat_interleave``: ``repeat_interleave(x, 2, dim)`` /
    ``repeat_interleave(x, counts, dim)`` repeat each slice along ``dim`` (each element of the
    flattened ``x`` when ``dim`` is None); ``repeat_interleave(counts)`` gives
    ``[0]*counts[0] + [1]*counts[1] + ...``. ``output_size=`` states the result's size along
    ``dim`` (needed on meta, where the counts have no data). Errors as PyTorch."""
    kw = {} if output_size is None else {"output_size": output_size}
    if repeats is None:
        if dim is not None:
            raise type_error("repeat_interleave", "repeats", "Tensor", repeats, 2)
        return ops.repeat_interleave.Tensor(input, **kw)
    if isinstance(repeats, Tensor):
        return ops.repeat_interleave.self_Tensor(input, repeats, dim, **kw)
    if repeats.__class__ is not int and (isinstance(repeats, bool)
                                         or not hasattr(repeats, "__index__")):
        raise type_error("repeat_interleave", "repeats", "Tensor", repeats, 2)
    return ops.repeat_interleave.self_int(input, repeats.__index__(), dim, **kw)


@method("masked_select")
def masked_select(input, mask, *, out=None):
    """``torch.masked_select``: the elements of ``input`` where the bool ``mask`` (broadcast
    together with ``input``) is True, as a 1-d tensor in row-major order. RuntimeError for a
    non-bool mask, shapes that do not broadcast, an ``out`` of another dtype; on meta
    NotImplementedError (the size needs the data)."""
    if out is not None:
        return ops.masked_select.out(input, mask, out=out)
    return ops.masked_select.default(input, mask)


@method("unique")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique``: the sorted unique values (``dim`` None, ``_unique2``) or unique slices
    along ``dim`` (``unique_dim``); with ``return_inverse`` / ``return_counts`` a tuple adding
    the index of each input element (slice) in the result and each value's count. On meta
    NotImplementedError (the size needs the data)."""
    if dim is None:
        values, inverse, counts = ops._unique2.default(input, sorted, return_inverse, return_counts)
    else:
        values, inverse, counts = ops.unique_dim.default(input, dim, sorted, return_inverse,
                                                         return_counts)
    if return_inverse and return_counts:
        return values, inverse, counts
    if return_inverse:
        return values, inverse
    if return_counts:
        return values, counts
    return values
