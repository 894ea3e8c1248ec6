"""The range factories: ``arange`` (its three overloads), ``linspace`` and ``logspace``, with
PyTorch's cpu kernels' arithmetic (``RangeFactories.cpp`` / ``RangeFactoriesKernel.cpp``):
``arange`` in double then cast; ``linspace`` counted up from ``start`` for the first half and
down from ``end`` for the rest, in the dtype's arithmetic with the multiply-adds fused as
PyTorch's build fuses them (``_fma``); ``logspace`` such exponents in double, raised to
``base`` by numpy's ``power`` (PyTorch's ``std::pow`` can differ in the last bit of a float64:
docs/differences.md, "Transcendental functions")."""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from ..registry import ops
from ..storage import META, round_to_bfloat16
from ..tensor import Tensor
from ._common import both_devices
from ._fma import fma32, fma64
from ._scalars import checked_scalar
from .factories import _factory, _finish, check_option_types, check_options, check_pin_memory


@both_devices(ops.arange.start_step)
def arange(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None,
           requires_grad=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device, prims_on_meta=True)
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = (dt.int64 if all(isinstance(v, int) for v in vals)
                 else dt.get_default_dtype())
    dtype = dt.to_dtype(dtype)
    n = max(math.ceil((end - start) / step), 0)
    t = _factory((n,), dtype, device)
    if t._storage.device is not META:
        # Computed in double then cast, as PyTorch's cpu arange does.
        t._array()[...] = (start + step * np.arange(n, dtype=np.float64)
                           if dtype.is_floating_point else
                           np.arange(start, start + n * step, step)[:n])
    return _finish(t, requires_grad)


def _space_end(value, name: str, which: str):
    """A ``linspace`` / ``logspace`` end point as a Python number: a 0-d tensor gives its item
    (the ``Tensor_Tensor`` overloads' rule), any other tensor raises PyTorch's RuntimeError."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but "
                               f"got {which} with {value.dim()} dimension(s).")
        return value.item()
    return value


def _space_layout(start, end, steps, dtype, device, name, layout=None, pin_memory=None):
    """The output of a ``linspace``-like factory (``(steps,)``, the default float dtype unless
    ``dtype``) and its end points; RuntimeError for a negative ``steps`` (before
    ``pin_memory``'s, as PyTorch's)."""
    if layout is not None or pin_memory is not None:
        check_option_types(layout, pin_memory)
    start, end = _space_end(start, name, "start"), _space_end(end, name, "end")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if pin_memory:
        check_pin_memory(pin_memory, device)
    return _factory((steps,), dtype, device), start, end


def _counts(n: int):
    """PyTorch's range kernels count the first ``n // 2`` points up from ``start`` and the
    rest down from ``end``, so both ends are exact: the counts ``i`` (``0 .. n//2 - 1``) and
    ``n - 1 - i`` (for ``i`` from ``n // 2``), as int64."""
    half = n // 2
    return np.arange(half), np.arange(n - 1 - half, -1, -1)


def _linspace_values(start, end, n: int, d):
    """PyTorch's cpu ``linspace_kernel`` for ``n >= 2`` points in dtype ``d``: the step and
    every value computed in ``d``, or in double and truncated for integer dtypes; ``start +
    step * i`` for the first half, ``end - step * (n - 1 - i)`` for the rest. In float32,
    float64 and double those are fused multiply-adds (``_fma``: the compiler contracts them);
    float16 and bfloat16 round after each operation (c10's ``Half`` / ``BFloat16``
    arithmetic), which leaves nothing to fuse."""
    up, down = _counts(n)
    if not d.is_floating_point:
        step = (float(end) - float(start)) / (n - 1)
        return np.trunc(np.concatenate([fma64(step, up, start), fma64(-step, down, end)]))
    if d is dt.float64:
        step = (float(end) - float(start)) / (n - 1)
        return np.concatenate([fma64(step, up, start), fma64(-step, down, end)])
    if d is dt.float32:
        a, b = np.float32(start), np.float32(end)
        step = (b - a) / np.float32(n - 1)
        return np.concatenate([fma32(step, up, a), fma32(-step, down, b)])
    rnd = round_to_bfloat16 if d is dt.bfloat16 else np.float16
    a, b = rnd(np.float32(start)), rnd(np.float32(end))
    step = rnd(rnd(b - a) / rnd(np.float32(n - 1)))
    return np.concatenate([rnd(a + rnd(step * rnd(up.astype(np.float32)))),
                           rnd(b - rnd(step * rnd(down.astype(np.float32))))])


@both_devices(ops.linspace)
def linspace(start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None,
             requires_grad=None):
    t, start, end = _space_layout(start, end, steps, dtype, device, "linspace", layout,
                                  pin_memory)
    if t._storage.device is not META and steps:
        d = t._dtype
        if steps == 1:                      # PyTorch fills with ``start`` (bool too)
            t._array().fill(checked_scalar(start, d))
        elif d is dt.bool_:
            raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
        else:
            with np.errstate(all="ignore"):    # infinite ends: nan and inf, as PyTorch's
                t._array()[...] = _linspace_values(checked_scalar(start, d),
                                                   checked_scalar(end, d), steps, d)
    return _finish(t, requires_grad)


@both_devices(ops.arange.default)
def arange_end(end, *, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=None):
    return arange(0, end, 1, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                  requires_grad=requires_grad)


@both_devices(ops.arange.start)
def arange_start(start, end, *, dtype=None, layout=None, device=None, pin_memory=None,
                 requires_grad=None):
    return arange(start, end, 1, dtype=dtype, layout=layout, device=device,
                  pin_memory=pin_memory, requires_grad=requires_grad)


def _logspace_values(start, end, n: int, base: float, d):
    """PyTorch's cpu ``logspace_out`` for ``n >= 2`` points: the ends in dtype ``d`` and their
    difference in its arithmetic (integers: exactly), every exponent in double (``start + step
    * i`` up to the middle, ``end - step * (n - 1 - i)`` after), then ``base **`` it in double,
    stored as C++ stores a double (through float32 for float16)."""
    up, down = _counts(n)
    if d is dt.float64 or not d.is_floating_point:
        a, b = start, end
        diff = float(b - a)
    elif d is dt.float32:
        a, b = np.float32(start), np.float32(end)
        diff = float(b - a)
    else:
        rnd = round_to_bfloat16 if d is dt.bfloat16 else np.float16
        a, b = rnd(np.float32(start)), rnd(np.float32(end))
        diff = float(rnd(b - a))
    step = diff / (n - 1)
    # not fused: RangeFactories.cpp is built without FMA (linspace's kernel file with it)
    exponents = np.concatenate([float(a) + step * up, float(b) - step * down])
    values = np.power(float(base), exponents)
    if d is dt.bfloat16:        # c10's BFloat16 makes every NaN the positive quiet one
        return np.where(np.isnan(values), np.nan, values)
    return values.astype(np.float32) if d is dt.float16 else values


@both_devices(ops.logspace)
def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None,
             pin_memory=None, requires_grad=None):
    t, start, end = _space_layout(start, end, steps, dtype, device, "logspace", layout,
                                  pin_memory)
    if t._storage.device is not META and steps:
        d = t._dtype
        with np.errstate(all="ignore"):     # overflow to inf, a negative base's nan: PyTorch's
            if steps == 1:                  # PyTorch fills with ``base ** start`` (bool too)
                t._array().fill(checked_scalar(float(np.power(float(base), float(start))), d))
            elif d is dt.bool_:
                raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
            else:
                t._array()[...] = _logspace_values(checked_scalar(start, d),
                                                   checked_scalar(end, d), steps, base, d)
    return _finish(t, requires_grad)
