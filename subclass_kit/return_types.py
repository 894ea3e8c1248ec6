"""Named-tuple results of ops returning several tensors (PyTorch's ``torch.return_types``):
``sk.max(x, 0)`` returns ``sk.return_types.max(values, indices)``, which unpacks like a tuple
and has ``.values`` / ``.indices``."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["aminmax", "aminmax_out", "cummax", "cummax_out", "cummin", "cummin_out",
           "kthvalue", "kthvalue_out", "max", "max_out", "median", "median_out", "min", "min_out", "nanmedian",
           "nanmedian_out", "sort", "sort_out", "topk",
           "topk_out"]


def _repr(self) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"sk.return_types.{type(self).__name__}(\n{fields})"


class max(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class min(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class max_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class min_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


# -- sorting -----------------------------------------------------------------------------------
class sort(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class sort_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class topk(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class topk_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


# -- more reductions ---------------------------------------------------------------------------
class aminmax(NamedTuple):
    min: Any
    max: Any

    __repr__ = _repr


class aminmax_out(NamedTuple):
    min: Any
    max: Any

    __repr__ = _repr


class cummax(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class cummax_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class cummin(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class cummin_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class kthvalue(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class kthvalue_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class median(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class median_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class nanmedian(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr


class nanmedian_out(NamedTuple):
    values: Any
    indices: Any

    __repr__ = _repr
