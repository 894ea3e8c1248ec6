"""Python numbers inside kernels, and numpy's floating-point warnings.

Two conversions, as in PyTorch:

- ``wrap_scalar``: a wrapped number (a Python number in a Tensor position, ``x + 300``) is cast
  to the compute dtype like C's ``static_cast``: integers wrap around (``uint8 + 300`` adds 44),
  floats overflow to inf.
- ``checked_scalar``: a ``Scalar`` argument (``alpha``, ``clamp``'s bounds, ``masked_fill``'s
  value, an integer ``pow`` exponent) must fit the dtype (c10's ``checked_convert``), else
  RuntimeError "value cannot be converted to type int8_t without overflow". Negative integers
  (not floats) may wrap into unsigned types (``uint8 - b`` is ``uint8 + 255 * b``).

``quiet()``/``unquiet(token)`` silence numpy's floating-point warnings (PyTorch never warns
about inf/nan) more cheaply than ``np.errstate``, which costs ~2 us per use.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import _dtype as dt

__all__ = ["checked_scalar", "cpp_name", "quiet", "unquiet", "wrap_scalar"]

try:  # numpy >= 2: the context variable behind np.errstate
    from numpy._core.umath import _extobj_contextvar, _make_extobj

    # C-level callables: no Python frame on the kernels' hot paths.
    quiet = functools.partial(_extobj_contextvar.set, _make_extobj(all="ignore"))
    unquiet = _extobj_contextvar.reset

except ImportError:  # pragma: no cover - older numpy
    def quiet():
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def unquiet(token):
        token.__exit__(None, None, None)


_F16 = np.dtype(np.float16)
_INT_BOUNDS = {np.dtype(d.numpy): (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max))
               for d in dt.ALL_DTYPES if d.numpy.kind in "iu"}


def wrap_scalar(value, np_dtype):
    """A wrapped number as an operand of compute dtype ``np_dtype`` (C cast: ints wrap)."""
    if np_dtype.kind in "iu" and type(value) is int:
        lo, hi = _INT_BOUNDS[np_dtype]
        if not lo <= value <= hi:
            span = hi - lo + 1
            value = (value - lo) % span + lo
        return value
    if np_dtype.kind == "b":
        return bool(value)
    if np_dtype == _F16:  # rounds (or overflows to inf) before float16 math runs in float32
        token = quiet()
        try:
            return float(np.float16(value))
        finally:
            unquiet(token)
    return value


# c10's checked_convert names the C++ type; TypeMeta names (``cpp_name``) differ again.
_CHECKED_NAMES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
                  "int32": "int", "int64": "int64_t", "float16": "c10::Half", "float32": "float",
                  "bfloat16": "c10::BFloat16",
                  "float64": "double"}
_CPP_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
              "int16": "short int", "int32": "int", "int64": "long int", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16",
              "float32": "float", "float64": "double"}
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": float(np.finfo(np.float32).max),
              "float64": float(np.finfo(np.float64).max)}


def cpp_name(d) -> str:
    """The C++ type name PyTorch prints for a dtype in a few messages ("long int")."""
    return _CPP_NAMES[d.name]


def checked_scalar(value, d):
    """``value`` converted to dtype ``d`` as a Python number, or RuntimeError on overflow."""
    if hasattr(value, "_array"):  # a 0-d tensor passed as a Scalar
        value = value.item()
    if d is dt.bool_:
        return bool(value)
    if d.is_floating_point:
        v = float(value)
        if math.isfinite(v) and abs(v) > _FLOAT_MAX[d.name]:
            _overflow(d)
        return v
    lo, hi = _INT_BOUNDS[d.numpy]
    if isinstance(value, float):
        # c10's ``overflows`` for a floating-point value: only integers may wrap into an
        # unsigned type (``full((2,), -1.0, dtype=uint8)`` raises, ``-1`` gives 255)
        if not (math.isfinite(value) and lo <= value <= hi):
            _overflow(d)
        value = int(value)
    value = int(value)
    if lo == 0:
        if value > hi or (value < 0 and -value > hi):
            _overflow(d)
        return value % (hi + 1)
    if not lo <= value <= hi:
        _overflow(d)
    return value


def _overflow(d):
    raise RuntimeError(f"value cannot be converted to type {_CHECKED_NAMES[d.name]} without "
                       "overflow")
