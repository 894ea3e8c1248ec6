"""Tensor element types and PyTorch's type-promotion rules.

Follows ``c10/core/ScalarType.h`` (``promoteTypes``) and ``ATen/native/TypeProperties.cpp``
(``result_type``: dimensioned tensors, then zero-dim tensors, then Python scalars ("wrapped
numbers"), combined by category).
"""

from __future__ import annotations

import numpy as np

__all__ = ["dtype", "promote_types", "result_type", "get_default_dtype", "set_default_dtype"]

# Category order used by result_type: bool < integral < floating.
_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:
    """An element type: ``sk.float32`` and friends (PyTorch's ``torch.dtype``).

    Attributes: ``itemsize`` (bytes of one element in storage), ``is_floating_point``,
    ``is_signed``, ``is_complex`` (False: there are no complex dtypes), ``numpy`` (the numpy dtype kernels compute in and ``Tensor._array()``
    gives), ``storage_numpy`` (the numpy dtype of the elements in a cpu storage). The two
    differ only for ``bfloat16``: stored as 2-byte words, computed in float32 (Note
    [Storage dtype and compute dtype] in ``storage.py``). Instances are singletons; compare
    with ``is`` or ``==``.
    """

    __slots__ = ("name", "itemsize", "is_floating_point", "is_signed", "numpy", "_category",
                 "_rank", "legacy_name", "storage_numpy")

    def __init__(self, name, np_dtype, category, rank, legacy_name, storage=None):
        self.name = name
        self.numpy = np.dtype(np_dtype)
        self.storage_numpy = self.numpy if storage is None else np.dtype(storage)
        self.itemsize = self.storage_numpy.itemsize
        self._category = category
        self._rank = rank
        self.is_floating_point = category == _FLOAT
        self.is_signed = category == _FLOAT or (category == _INT and self.numpy.kind == "i")
        self.legacy_name = legacy_name

    is_complex = False   # PyTorch's ``dtype.is_complex``: no sk dtype is complex

    def __repr__(self):
        return f"sk.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> "dtype":
        """The real counterpart of this dtype: the dtype itself, since none is complex
        (PyTorch's ``dtype.to_real()`` of a real dtype)."""
        return self

    def to_complex(self):
        """Always raises RuntimeError. For bool and integer dtypes PyTorch's text ("Unknown
        Complex ScalarType for Long"); for floating dtypes, where PyTorch answers complex64 /
        complex128 / complex32, subclass_kit's: it has no complex dtypes
        (docs/differences.md)."""
        scalar_type = self.legacy_name[:-len("Tensor")]
        if not self.is_floating_point:
            raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type}")
        raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type}: subclass_kit has "
                           "no complex dtypes")


bool_ = dtype("bool", np.bool_, _BOOL, 0, "BoolTensor")
uint8 = dtype("uint8", np.uint8, _INT, 1, "ByteTensor")
int8 = dtype("int8", np.int8, _INT, 1, "CharTensor")
int16 = dtype("int16", np.int16, _INT, 2, "ShortTensor")
int32 = dtype("int32", np.int32, _INT, 3, "IntTensor")
int64 = dtype("int64", np.int64, _INT, 4, "LongTensor")
float16 = dtype("float16", np.float16, _FLOAT, 1, "HalfTensor")
# Brain floating point: float32's sign, 8 exponent bits and the top 7 mantissa bits, stored as
# the upper 16 bits of a float32 and computed in float32 (PyTorch's ``c10::BFloat16``).
bfloat16 = dtype("bfloat16", np.float32, _FLOAT, 1, "BFloat16Tensor", storage=np.uint16)
float32 = dtype("float32", np.float32, _FLOAT, 2, "FloatTensor")
float64 = dtype("float64", np.float64, _FLOAT, 3, "DoubleTensor")

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_by_name = {d.name: d for d in ALL_DTYPES}
_by_name.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16})
# numpy has no bfloat16: a float32 array is float32 (``from_numpy`` never makes bfloat16).
_by_numpy = {d.numpy: d for d in ALL_DTYPES if d.numpy is d.storage_numpy}

_default_dtype = [float32]


def get_default_dtype() -> dtype:
    """The dtype of float factories and of Python floats in promotion (``float32`` at start)."""
    return _default_dtype[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype. Raises TypeError for a non-floating dtype."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype[0] = d


def requires_grad_setter_value(d: dtype, value) -> bool:
    """``value`` checked as ``Tensor.requires_grad = value`` checks it for a tensor of dtype
    ``d``, with PyTorch's texts (its setter has its own, not ``requires_grad_()``'s): a bool,
    True only for floating dtypes. Raises RuntimeError."""
    if value.__class__ is not bool:
        raise RuntimeError("requires_grad must be a bool")
    if value and not d.is_floating_point:
        raise RuntimeError("only Tensors of floating point and complex dtype can require "
                           "gradients")
    return value


def from_numpy_dtype(np_dtype) -> dtype:
    """The sk dtype of a numpy dtype. Raises TypeError for types we do not support."""
    try:
        return _by_numpy[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
            "are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


def to_dtype(d) -> dtype:
    """Accept an ``sk.dtype`` or a Python type (``float`` -> float64, ``int`` -> int64,
    ``bool`` -> bool), as PyTorch's argument parser does. Raises TypeError otherwise."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    raise TypeError(f"argument 'dtype' must be sk.dtype, not {type(d).__name__}")


def _dtype_by_name(name: str) -> dtype:
    return _by_name[name]


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a._category != b._category:
        hi, lo = (a, b) if a._category > b._category else (b, a)
        return hi
    if a._category == _INT:
        # uint8 with a signed type needs the next signed type wide enough for both.
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            return int16 if other is int8 else other
    if a._rank == b._rank:
        # float16 with bfloat16: neither holds the other (range vs precision), so float32.
        return float32
    return a if a._rank >= b._rank else b


_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's ``torch.promote_types``: the smallest dtype both ``a`` and ``b`` cast to."""
    return _PROMOTE[a, b]


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes part in promotion with ("wrapped number")."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return _default_dtype[0]
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None or higher._category == _FLOAT:
        return higher
    if higher is bool_ or lower._category == _FLOAT:
        return _PROMOTE[higher, lower]
    return higher


def result_type(dim_dtypes=(), zero_dim_dtypes=(), scalars=()) -> dtype:
    """PyTorch's ``result_type`` over three priority groups.

    ``dim_dtypes``: dtypes of tensors with ``ndim > 0``; ``zero_dim_dtypes``: of 0-d tensors;
    ``scalars``: Python numbers. A lower-priority group only matters when its category (bool <
    integral < floating) is higher, e.g. ``int32 tensor + 1.5 -> float32`` but
    ``uint8 tensor + 1000 -> uint8``.
    """
    dim = zero = wrapped = None
    for d in dim_dtypes:
        dim = d if dim is None else _PROMOTE[dim, d]
    for d in zero_dim_dtypes:
        zero = d if zero is None else _PROMOTE[zero, d]
    for s in scalars:
        d = scalar_dtype(s)
        if d is float64:
            d = _default_dtype[0]
        wrapped = d if wrapped is None else _PROMOTE[wrapped, d]
    out = _combine(_combine(dim, zero), wrapped)
    if out is None:
        raise ValueError("result_type needs at least one operand")
    return out


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's ``torch.can_cast`` (same-kind casting: no float -> int, no non-bool -> bool)."""
    if from_._category > to._category:
        return False
    return True
