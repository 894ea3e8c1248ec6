"""More shape, search and product primitives: ``rot90``, ``trace``, ``take``, ``vdot``, each
with its ``out=`` overload.

One rule per op (Note [One rule per op]) with PyTorch's CPU checks and texts, in its order, and
its output layouts:

- ``rot90`` is ``flip`` then ``transpose`` (k = 1, 3), ``flip`` (k = 2) or a contiguous clone
  (k = 0), so k = 1, 3 give a transposed layout (PyTorch's ``rot90`` body);
- ``trace``: a 0-d sum of the diagonal, integers (and bool: not implemented) to int64, float
  sums accumulated in double as PyTorch's ``trace_cpu``;
- ``take``: ``self`` read as flat in logical order at ``index`` (int64, negative indices
  wrap), contiguous with ``index``'s shape;
- ``vdot``: ``dot`` (real dtypes only: no conjugation to do).

Their ``out=`` overloads require ``out`` to have the result dtype exactly, each with PyTorch's
text for it.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import contiguous_strides, wrap_dim
from ..registry import ops, register_kernel, overload_of
from ..storage import META
from ._common import Spec, check_out_device_first, register_rule, resize_out, type_name
from ._iter_layout import iter_strides
from .factories import _preserved_strides
from .linalg import _dot_fill, _dot_rule, cpp_name


def _spec(self, sizes, strides, dtype=None) -> Spec:
    return Spec(tuple(sizes), tuple(strides), dtype or self._dtype, self._storage.device)


# -- rot90 ---------------------------------------------------------------------------------------
def _rot90_plan(self, k, dims):
    """(k mod 4, dim0, dim1) after PyTorch's checks."""
    dims = list(dims)
    ndim = self.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {ndim}")
    d0, d1 = wrap_dim(dims[0], ndim), wrap_dim(dims[1], ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    return k % 4, d0, d1


def _rot90_rule(self, k=1, dims=(0, 1)):
    k, d0, d1 = _rot90_plan(self, k, dims)
    sizes = self._layout.sizes
    if k == 0:
        return _spec(self, sizes, contiguous_strides(sizes))
    strides = _preserved_strides(self, None)
    if k == 2:
        return _spec(self, sizes, strides)
    sizes, strides = list(sizes), list(strides)
    sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
    strides[d0], strides[d1] = strides[d1], strides[d0]
    return _spec(self, sizes, strides)


def _rot90_fill(outs, spec, self, k=1, dims=(0, 1)):
    k, d0, d1 = _rot90_plan(self, k, dims)
    np.copyto(outs[0], np.rot90(self._array(), k, (d0, d1)))


# -- trace ---------------------------------------------------------------------------------------
def _trace_rule(self):
    if self.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    if self._dtype is dt.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    dtype = dt.int64 if not self._dtype.is_floating_point else self._dtype
    return _spec(self, (), (), dtype)


def _trace_fill(outs, spec, self):
    arr = self._array()
    acc = np.int64 if arr.dtype.kind in "iub" else (
        np.float32 if arr.dtype == np.float16 else np.float64)
    np.copyto(outs[0], np.trace(arr, dtype=acc), casting="unsafe")


# -- take ----------------------------------------------------------------------------------------
def _take_checks(self, index):
    if index._dtype is not dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{type_name(index._dtype)}")
    if self._layout.numel() == 0 and index._layout.numel() != 0:
        raise IndexError("take(): tried to take from an empty tensor")


def _take_rule(self, index):
    _take_checks(self, index)
    if self._storage.device is not index._storage.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {index._storage.device.type} and "
                           f"{self._storage.device.type}!")
    sizes = index._layout.sizes
    return _spec(self, sizes, contiguous_strides(sizes))


def _take_fill(outs, spec, self, index):
    _take_bounds(self, index)
    flat = self._array().reshape(-1)
    idx = index._array()
    np.copyto(outs[0], flat[np.where(idx < 0, idx + flat.size, idx)])


def _take_bounds(self, index):
    """``take``'s index bounds (data: cpu only), checked before anything is written."""
    n = self._layout.numel()
    idx = index._array()
    bad = (idx >= n) | (idx < -n)
    if bad.any():
        i = int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])
        raise IndexError(f"out of range: tried to access index {i} on a tensor of {n} "
                         "elements.")


# -- out= overloads: ``out`` must have the result dtype exactly ----------------------------------
def _exact_out(op_out, functional, message, dtype_first=False):
    """``out=`` of ``functional``: resized to contiguous (PyTorch's ``resize_output``) and of the
    result dtype exactly (``dtype_first``: checked against ``self``'s before the op's checks)."""
    # packets: the overloads their calls run
    op_out, functional = overload_of(op_out), overload_of(functional)

    def kernel(*args, out):
        check_out_device_first(args[0], out)
        if dtype_first and out._dtype is not args[0]._dtype:
            raise RuntimeError(message(args[0]._dtype, out._dtype))
        spec = functional.rule(*args)
        if functional is ops.take.default:   # its out= is a TensorIterator output over ``index``
            index = args[1]._layout
            spec = spec._replace(strides=iter_strides(index.sizes, [(index.sizes,
                                                                     index.strides)]))
        else:
            spec = spec._replace(strides=contiguous_strides(spec.sizes))
        if out._dtype is not spec.dtype:
            raise RuntimeError(message(spec.dtype, out._dtype))
        if functional is ops.take.default and out._storage.device is not META:
            _take_bounds(*args)
        resize_out(out, spec, functional.name)
        if out._storage.device is not META:
            functional.fill([out._array()], spec, *args)
        return out

    register_kernel(op_out, "cpu")(kernel)
    register_kernel(op_out, "meta")(kernel)


def _expected_dtype(result, out) -> str:
    return f"Expected out tensor to have dtype {cpp_name(result)}, but got {cpp_name(out)} instead"


def _take_dtype(result, out) -> str:
    return (f"take(): self and out expected to have the same dtype, but got self.dtype = "
            f"{type_name(result)} and out.dtype = {type_name(out)}")


def _vdot_dtype(result, out) -> str:
    return f"result dtype {type_name(out)} does not match input dtype {type_name(result)}"


def _vdot_rule(self, other):
    return _dot_rule(self, other)


register_rule(ops.rot90, _rot90_rule, _rot90_fill)
register_rule(ops.trace, _trace_rule, _trace_fill)
register_rule(ops.take, _take_rule, _take_fill)
register_rule(ops.vdot, _vdot_rule, _dot_fill)
_exact_out(ops.rot90.out, ops.rot90, _expected_dtype)
_exact_out(ops.trace.out, ops.trace, _expected_dtype)
_exact_out(ops.take.out, ops.take, _take_dtype)
_exact_out(ops.vdot.out, ops.vdot, _vdot_dtype, dtype_first=True)
