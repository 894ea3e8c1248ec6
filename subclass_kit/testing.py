"""``sk.testing.assert_close`` (PyTorch's ``torch.testing.assert_close``), so that test code
ports by renaming ``torch``.

Inputs may be tensors, Python numbers (and numpy scalars), bools, None, or sequences and
mappings of them, nested; the rules and messages are PyTorch's:

- tensors: the same shape, then (each switchable) stride (``check_stride``, off by default),
  device, dtype; a meta tensor compares its metadata only. Values are close when
  ``|actual - expected| <= atol + rtol * |expected|`` (infinities equal to themselves, NaN
  only with ``equal_nan``), with per-dtype default tolerances (the loosest of the two dtypes):
  float16 (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32 (1.3e-6, 1e-5), float64 (1e-7,
  1e-7), exact otherwise. A mismatch reports the count of mismatched elements and the
  greatest absolute and relative differences with their indices, computed in the dtype as
  PyTorch computes them;
- numbers: the same type (int, float), then close by float64's tolerances;
- sequences must match in length, mappings in keys; a failure inside names the item.

Raises AssertionError for a mismatch, ValueError when only one of ``rtol`` / ``atol`` is
given, TypeError for inputs no rule compares (a string, a tensor against a number, a numpy
array). ``msg``: a string replacing the message, or a callable given the message.
"""

from __future__ import annotations

import collections.abc
import math

import numpy as np

from . import _dtype as dt
from .storage import round_to_bfloat16
from .tensor import Tensor

__all__ = ["assert_close"]

# (rtol, atol) per dtype, PyTorch's ``_DTYPE_PRECISIONS``; other dtypes compare exactly
_TOLERANCES = {dt.float16: (0.001, 1e-05), dt.bfloat16: (0.016, 1e-05),
               dt.float32: (1.3e-06, 1e-05), dt.float64: (1e-07, 1e-07)}
_NUMBER_DTYPES = {int: dt.int64, float: dt.float64}


class _Mismatch(Exception):
    """A comparison's failure: the exception class to raise, its message, the item's path."""

    def __init__(self, kind, message: str, path: tuple = ()):
        super().__init__(message)
        self.kind, self.message, self.path = kind, message, path

    def error(self, msg):
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.message
        if self.path:
            text += f"\n\nThe failure occurred for item {''.join(str([p]) for p in self.path)}"
        return self.kind(msg(text) if callable(msg) else text)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``:
    tensors of any shape and dtype (same shape; dtype, device and, with ``check_stride``,
    strides checked unless switched off; ``check_layout`` is accepted, every tensor here being
    strided), Python or numpy numbers, bools, None, and sequences or mappings of them.
    ``rtol`` / ``atol``: both or neither (per-dtype defaults, module docstring).

    Raises AssertionError with PyTorch's report for a mismatch (``msg``: a string replacing it,
    or a callable given it), ValueError when only one tolerance is given, TypeError for inputs
    no rule compares (a string, a tensor against a number, a numpy array, a subclass with
    ``allow_subclasses=False``)."""
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        pairs = _pairs(actual, expected, (), options)
    except _Mismatch as m:
        raise m.error(msg) from None
    for compare, a, e, path in pairs:
        try:
            compare(a, e, path, options)
        except _Mismatch as m:
            raise m.error(msg) from None


def _pairs(actual, expected, path, options) -> list:
    """``(compare, actual, expected, path)`` for every leaf pair, sequences and mappings
    walked first (their length and key errors come before any value is compared)."""
    seq = collections.abc.Sequence
    if (isinstance(actual, seq) and not isinstance(actual, str)
            and isinstance(expected, seq) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}", path)
        return [p for i in range(len(actual))
                for p in _pairs(actual[i], expected[i], (*path, i), options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected,
                                                                  collections.abc.Mapping):
        keys, other = set(actual.keys()), set(expected.keys())
        if keys != other:
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(other - keys)}\n"
                            f"Additional keys in the actual mapping: {sorted(keys - other)}",
                            path)
        try:
            keys = sorted(keys)
        except TypeError:
            keys = list(keys)
        return [p for k in keys for p in _pairs(actual[k], expected[k], (*path, k), options)]
    if actual is None or expected is None:
        return [(_compare_none, actual, expected, path)]
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        return [(_compare_bools, actual, expected, path)]
    numbers = (int, float, np.number)
    if (isinstance(actual, numbers) and isinstance(expected, numbers)
            and not isinstance(actual, (bool, np.bool_))
            and not isinstance(expected, (bool, np.bool_))):
        _tolerances(options, path, *(_NUMBER_DTYPES.get(type(_number(x)), dt.float64)
                                     for x in (actual, expected)))
        return [(_compare_numbers, _number(actual), _number(expected), path)]
    if (isinstance(actual, Tensor) and isinstance(expected, Tensor)
            and (options["allow_subclasses"] or type(actual) is type(expected))):
        _tolerances(options, path, actual.dtype, expected.dtype)
        return [(_compare_tensors, actual, expected, path)]
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                               f"{type(actual)} and {type(expected)}.", path)


def _number(x):
    return x.item() if isinstance(x, np.number) else x


def _tolerances(options, path, *dtypes) -> tuple:
    """``(rtol, atol)``: the given pair, or the loosest defaults of ``dtypes``; ValueError
    when only one is given."""
    rtol, atol = options["rtol"], options["atol"]
    if (rtol is None) != (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                                    f"omitted, but got no {'rtol' if rtol is None else 'atol'}.",
                        path)
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(r for r, _ in pairs), max(a for _, a in pairs)


def _compare_none(actual, expected, path, options):
    if not (actual is None and expected is None):
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)


def _compare_bools(actual, expected, path, options):
    if bool(actual) != bool(expected):
        raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)


def _compare_numbers(actual, expected, path, options):
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                        f"{type(expected)}.", path)
    if actual == expected:
        return
    if options["equal_nan"] and math.isnan(actual) and math.isnan(expected):
        return
    rtol, atol = _tolerances(options, path, _NUMBER_DTYPES.get(type(actual), dt.float64),
                             _NUMBER_DTYPES.get(type(expected), dt.float64))
    diff = abs(actual - expected)
    if math.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol), path)


def _message(what: str, extra: str, abs_diff, abs_at, rel_diff, rel_at, rtol, atol) -> str:
    exact = rtol == 0 and atol == 0

    def line(kind, diff, at, tol):
        text = (f"{kind.title()} difference: {diff}" if at is None
                else f"Greatest {kind} difference: {diff} at index {at}")
        return text + ("" if exact else f" (up to {tol} allowed)") + "\n"
    text = f"{what} are not {'equal' if exact else 'close'}!\n\n{extra}\n"
    return (text + line("absolute", abs_diff, abs_at, atol)
            + line("relative", rel_diff, rel_at, rtol)).strip()


def _scalar_message(actual, expected, rtol, atol) -> str:
    diff = abs(actual - expected)
    rel = float("inf") if expected == 0 else diff / abs(expected)
    return _message("Scalars", f"Expected {expected} but got {actual}.", diff, None, rel, None,
                    rtol, atol)


def _compare_tensors(actual, expected, path, options):
    def differ(name, a, b):
        raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: "
                                        f"{a} != {b}.", path)
    if actual.shape != expected.shape:
        differ("shape", actual.shape, expected.shape)
    if options["check_stride"] and actual.stride() != expected.stride():
        differ("stride()", actual.stride(), expected.stride())
    if options["check_device"] and actual.device != expected.device:
        differ("device", actual.device, expected.device)
    if options["check_dtype"] and actual.dtype != expected.dtype:
        differ("dtype", actual.dtype, expected.dtype)
    if "meta" in (actual.device.type, expected.device.type):
        return                          # metadata only, as PyTorch
    rtol, atol = _tolerances(options, path, actual.dtype, expected.dtype)
    d = dt.promote_types(actual.dtype, expected.dtype)
    a, e = (_values(t, d) for t in (actual, expected))
    with np.errstate(all="ignore"):
        if d is dt.bool_:
            close = a == e
        elif d.is_floating_point:
            close = _isclose(a, e, rtol, atol, options["equal_nan"], d)
        else:       # no wrap-around in the difference
            close = np.isclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol,
                               atol=atol)
        if close.all():
            return
        if actual.dim() == 0:
            message = _scalar_message(a.item(), e.item(), rtol, atol)
        else:
            message = _tensor_message(a, e, close, d, rtol, atol, tuple(actual.shape))
    raise _Mismatch(AssertionError, message, path)


def _isclose(a, e, rtol, atol, equal_nan, d) -> np.ndarray:
    """PyTorch's ``isclose`` on float arrays of dtype ``d``: ``|a - e| <= atol + |rtol * e|``
    where that error is finite, or ``a == e`` (or both NaN, with ``equal_nan``). Each
    operation rounds to ``d``, with the tolerances as float32 numbers for float16 and bfloat16
    (PyTorch's opmath; numpy would round them to the narrow dtype first)."""
    if d in (dt.float16, dt.bfloat16):
        narrow = np.float16 if d is dt.float16 else round_to_bfloat16
        a32, e32 = a.astype(np.float32), e.astype(np.float32)
        scaled = np.abs(narrow(np.float32(rtol) * e32)).astype(np.float32)
        allowed = narrow(np.float32(atol) + scaled)
        error = np.abs(narrow(a32 - e32))
    else:
        allowed = atol + np.abs(rtol * e)
        error = np.abs(a - e)
    close = (a == e) | (np.isfinite(error) & (error <= allowed))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(e)
    return close


def _values(t, d) -> np.ndarray:
    """``t``'s values as a numpy array of dtype ``d`` (bfloat16: the float32 holding them),
    read from its storage (a subclass too, as PyTorch's comparison ops see it)."""
    t = t.detach().to("cpu").to(d)
    return np.array(Tensor._array(t))


def _tensor_message(a, e, close, d, rtol, atol, shape) -> str:
    """PyTorch's ``make_tensor_mismatch_msg``: the greatest differences among the mismatched
    elements, computed in the dtype (integers and bools in int64, their relative difference
    in float32; bfloat16 rounded after each operation), with their indices."""
    a, e, close = a.reshape(-1), e.reshape(-1), close.reshape(-1)
    if not d.is_floating_point:
        a, e = a.astype(np.int64), e.astype(np.int64)
    diff = np.abs(a - e)
    if d is dt.bfloat16:
        diff = round_to_bfloat16(diff)
        rel = round_to_bfloat16(diff / round_to_bfloat16(np.abs(e)))
    elif d.is_floating_point:
        rel = diff / np.abs(e)
    else:
        rel = diff.astype(np.float32) / np.abs(e).astype(np.float32)
    diff[close] = 0
    rel[close] = 0
    i, j = int(np.argmax(diff)), int(np.argmax(rel))
    n, bad = close.size, int(close.size - close.sum())

    def index(flat):
        return tuple(int(k) for k in np.unravel_index(flat, shape))
    return _message("Tensor-likes", f"Mismatched elements: {bad} / {n} ({bad / n:.1%})",
                    diff[i].item(), index(i), rel[j].item(), index(j), rtol, atol)
