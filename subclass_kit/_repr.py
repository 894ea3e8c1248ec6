"""``repr`` of tensors in PyTorch's format: ``tensor([1., 2.])``, ``dtype=`` for non-default
dtypes, ``tensor(..., device='meta', size=(2, 3))`` for meta tensors (SEMANTICS.md §7).
Printing runs with modes disabled (PyTorch's ``_tensor_str``)."""

from __future__ import annotations

import numpy as np

from . import _dtype as dt


def _suffix(t, with_size: bool) -> str:
    parts = []
    if with_size:
        parts.append(f"size={tuple(t._layout.sizes)}")
    default_float = dt.get_default_dtype()
    implied = t._dtype is default_float or t._dtype is dt.int64 or t._dtype is dt.bool_
    if with_size:
        implied = t._dtype is default_float
    if not implied:
        parts.append(f"dtype=sk.{t._dtype.name}")
    if t.requires_grad:
        parts.append("requires_grad=True")
    elif t._grad_fn is not None:
        parts.append(f"grad_fn=<{type(t._grad_fn).__name__}>")
    return "".join(", " + p for p in parts)


def tensor_repr(t) -> str:
    if t._storage._buffer is None:
        return f"tensor(..., device='meta'{_suffix(t, True)})"
    arr = t._array()
    if arr.size == 0:
        body = "[]"
        extra = f", size={tuple(t._layout.sizes)}" if arr.ndim > 1 else ""
        return f"tensor({body}{extra}{_suffix(t, False)})"
    kwargs = {"separator": ", ", "prefix": "tensor("}
    if t._dtype.is_floating_point:
        kwargs["precision"] = 4
        kwargs["floatmode"] = "maxprec_equal"
    body = np.array2string(arr, **kwargs)
    return f"tensor({body}{_suffix(t, False)})"
