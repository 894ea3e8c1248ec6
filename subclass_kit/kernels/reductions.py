"""Reductions: ``sum mean prod var std amax amin argmax argmin all any logsumexp
linalg_vector_norm cumsum max min``, one rule per op (Note [One rule per op]) and a numpy
compute; the ``out=`` overloads reuse the rule.

PyTorch's rules reproduced here:

- ``dim``: an int, a list (``[]``/``None`` = every dim; ``all``/``any`` with ``[]`` reduce
  nothing), negative dims wrap, a repeated dim raises "dim 0 appears multiple times in the list
  of dims"; ``keepdim`` keeps reduced dims as size 1. Outputs are contiguous, whatever the input
  layout.
- dtypes: integral and bool inputs sum/prod/cumsum into int64; ``dtype=`` casts the input
  first; ``mean`` and ``var`` need floating inputs; ``all``/``any`` return bool (uint8 for
  uint8); ``argmax`` returns int64; ``logsumexp`` of integers gives the default float.
- empty reductions: ``sum`` 0, ``prod`` 1, ``mean``/``var`` nan, ``all`` True, ``any`` False,
  ``logsumexp`` -inf, norms 0; ``amax``/``max``/``argmax`` raise (IndexError when a named dim is
  empty).
- NaN propagates through ``max``/``amax``/``min``; ``argmax`` and ``max(dim)`` return the first
  index of the extreme (or of the first NaN).
- float16 accumulates in float32, float32 variance in float64 (PyTorch's CPU ``acc_type``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from ..layout import contiguous_strides, wrap_dim, wrap_dims
from ..registry import ops, register_kernel, overload_of
from ..storage import CPU, META
from ._common import (Spec, check_out_device_first, fill_scalar_pair,
                      register_pair_kernels, resize_out, type_name)
from ._iter_layout import alloc
from ._scalars import cpp_name, quiet, unquiet

__all__ = ["reduce_dims", "reduced_sizes"]

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


# -- dims and shapes -------------------------------------------------------------------------
def reduce_dims(self, dim, empty_is_all=True) -> tuple:
    """Sorted wrapped dims a reduction runs over (PyTorch's ``make_dim_mask``)."""
    ndim = len(self._layout.sizes)
    if dim is None:
        return _ALL_DIMS[ndim] if ndim < 8 else tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    key = (ndim, dims, empty_is_all)
    found = _DIMS_MEMO.get(key)
    if found is None:
        found = _reduce_dims(ndim, dims, empty_is_all)
        if len(_DIMS_MEMO) < 4096:
            _DIMS_MEMO[key] = found
    return found


_DIMS_MEMO: dict = {}


def _reduce_dims(ndim, dims, empty_is_all) -> tuple:
    if not dims:
        return tuple(range(ndim)) if empty_is_all else ()
    return tuple(sorted(wrap_dims(dims, ndim)))


_ALL_DIMS = [tuple(range(n)) for n in range(8)]


def reduced_sizes(sizes, dims, keepdim) -> tuple:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(sizes))
    return tuple(s for i, s in enumerate(sizes) if i not in dims)


_SHAPES: dict = {}


def _spec(self, dims, keepdim, dtype, compute=None) -> Spec:
    key = (self._layout.sizes, dims, keepdim)
    shape = _SHAPES.get(key)
    if shape is None:
        sizes = reduced_sizes(self._layout.sizes, dims, keepdim)
        shape = (sizes, contiguous_strides(sizes))
        if len(_SHAPES) < 4096:
            _SHAPES[key] = shape
    return Spec(shape[0], shape[1], dtype, self._storage.device, compute)


def _contiguous(sizes):
    return contiguous_strides(sizes)


def _count(self, dims) -> int:
    n = 1
    for d in dims:
        if d < len(self._layout.sizes):
            n *= self._layout.sizes[d]
    return n


def _axis(self, dims):
    """numpy's ``axis`` for wrapped ``dims``: a 0-d tensor reduces over dim 0 / -1, numpy
    over nothing."""
    return dims if self._layout.sizes else ()


def _check_nonempty(self, dims, name, all_reduce, idx_error=False):
    """max/amax/argmax have no identity: empty reductions raise PyTorch's errors. ``dims``:
    the dims as the user wrote them (the message repeats them unwrapped)."""
    if all_reduce:
        if self._layout.numel() == 0:
            if idx_error:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return
    sizes = self._layout.sizes
    for d in dims:
        if sizes and sizes[wrap_dim(d, len(sizes))] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _int_to_long(d, dtype):
    if dtype is not None:
        return dt.to_dtype(dtype)
    return dt.int64 if not d.is_floating_point else d


def _acc(np_dtype):
    return _F32 if np_dtype == np.float16 else np_dtype


def _reduce_into(ufunc, dest, arr, axis, keepdim, acc=None):
    """``ufunc.reduce`` straight into ``dest`` when the accumulation dtype is dest's (numpy's
    ``np.sum`` wrapper costs twice as much as the ufunc method)."""
    acc = dest.dtype if acc is None else acc
    if dest.dtype == acc:
        ufunc.reduce(arr, axis=axis, dtype=acc, out=dest, keepdims=keepdim)
        return None
    return ufunc.reduce(arr, axis=axis, dtype=acc, keepdims=keepdim)


# -- registration ----------------------------------------------------------------------------
def _register(op, rule, compute, out_op=None, out_policy=None, policy_first=False,
              out_wrapper=True, out_rule=None):
    """Functional cpu/meta kernels from ``rule`` + ``compute(dest, arr, spec, self, *args,
    **kw)``, which writes ``dest`` (returning None) or returns an array to cast into it;
    ``out_policy(spec, out, *args, **kw) -> Spec`` decides the out= dtype. ``out_wrapper``:
    PyTorch's meta kernel of the out= op is its Python out= wrapper, which checks ``out``'s
    device first ("Attempting to copy from device ..."); False for its C++ structured meta
    kernels (``argmax``/``argmin``), which check it last ("Expected out tensor to have device
    ..."). ``out_rule``: the out= kernel's rule, when ``out``'s dtype must be checked before
    some checks of the functional rule (``cumsum``: a bool compute dtype)."""
    # packets: the overloads their calls run
    op, out_op = overload_of(op), overload_of(out_op)

    def fill(outs, spec, self, *args, **kwargs):
        arr = self._array()
        if arr.dtype.kind == "f" or spec.dtype.is_floating_point:
            token = quiet()
            try:
                res = compute(outs[0], arr, spec, self, *args, **kwargs)
            finally:
                unquiet(token)
        else:
            res = compute(outs[0], arr, spec, self, *args, **kwargs)
        if res is not None:
            np.copyto(outs[0], res, casting="unsafe")

    def cpu_kernel(self, *args, **kwargs):
        spec = rule(self, *args, **kwargs)
        out = alloc(spec.sizes, spec.strides, spec.dtype, spec.device)
        if spec.device is not META:
            fill([out._np], spec, self, *args, **kwargs)
        return out

    def meta_kernel(self, *args, **kwargs):
        spec = rule(self, *args, **kwargs)
        return alloc(spec.sizes, spec.strides, spec.dtype, spec.device)

    register_kernel(op, "cpu")(cpu_kernel)
    register_kernel(op, "meta")(meta_kernel)
    op.rule, op.fill = rule, fill
    if out_op is None:
        return

    def out_kernel(self, *args, out, **kwargs):
        if out_wrapper:
            check_out_device_first(self, out)
        if policy_first:  # PyTorch checks out's dtype before the arguments
            out_policy(None, out, *args, **kwargs)
        spec = out_policy((out_rule or rule)(self, *args, **kwargs), out, *args, **kwargs)
        if not out_wrapper:
            _check_out_device(out, spec)
        resize_out(out, spec._replace(dtype=out._dtype), out_op.name)
        if out._storage.device is not META:
            fill([out._array()], spec, self, *args, **kwargs)
        return out

    register_kernel(out_op, "cpu")(out_kernel)
    register_kernel(out_op, "meta")(out_kernel)


def _check_out_device(out, spec):
    if out._storage.device is not spec.device:
        raise RuntimeError(f"Expected out tensor to have device {spec.device.type}, but got "
                           f"{out._storage.device.type} instead")


def _expect_dtype(want, out):
    if out._dtype is not want:
        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(want)}, but got "
                           f"{cpp_name(out._dtype)} instead")


def _out_as_dtype(spec, out, *args, dtype=None, **kwargs):
    """sum/prod/cumsum: ``out``'s dtype is the result dtype unless ``dtype=`` says otherwise."""
    if dtype is not None:
        _expect_dtype(dt.to_dtype(dtype), out)
    return spec._replace(dtype=out._dtype)


def _out_cast(spec, out, *args, **kwargs):
    if not dt.can_cast(spec.dtype, out._dtype):
        raise RuntimeError(f"result type {type_name(spec.dtype)} can't be cast to the desired "
                           f"output type {type_name(out._dtype)}")
    return spec._replace(dtype=out._dtype)


def _mean_out_cast(spec, out, *args, dtype=None, **kwargs):
    """``mean.out``: with ``dtype=``, ``out`` must have that dtype (as ``sum``); else the
    result must cast to ``out``'s, PyTorch's check naming float32, its accumulation type, for
    float16 and bfloat16 results ("result type Float can't be cast ... Long")."""
    if dtype is not None:
        _expect_dtype(dt.to_dtype(dtype), out)
    if spec.dtype in (dt.float16, dt.bfloat16) and not dt.can_cast(spec.dtype, out._dtype):
        return _out_cast(spec._replace(dtype=dt.float32), out)
    return _out_cast(spec, out)


def _out_exact(spec, out, *args, **kwargs):
    _expect_dtype(spec.dtype, out)
    return spec


# -- sum, mean, prod -------------------------------------------------------------------------
def _sum_rule(self, dim=None, keepdim=False, *, dtype=None):
    dims = reduce_dims(self, dim)
    return _spec(self, dims, keepdim, _int_to_long(self._dtype, dtype))


def _sum_compute(dest, arr, spec, self, dim=None, keepdim=False, *, dtype=None):
    out = spec.dtype.numpy
    arr = arr.astype(out, copy=False)
    return _reduce_into(np.add, dest, arr, _axis(self, reduce_dims(self, dim)), keepdim,
                        _acc(out))


_register(ops.sum.dim_IntList, _sum_rule, _sum_compute, ops.sum.IntList_out, _out_as_dtype)
_FAST_SUM = frozenset((dt.float32, dt.float64))


def _fast_reduction(op, rule, mean: bool):
    """``op``'s cpu kernel for the common call (float32/float64 cpu input, no ``dtype=``):
    the same rule, spec and numpy reduction as the general kernel (``_register``'s), then for
    ``mean`` the same in-place division by the count, without the generic fill's
    indirections. Other calls go to the general kernel."""
    general = op._kernels["cpu"]

    def kernel(self, dim=None, keepdim=False, **kwargs):
        d = self._dtype
        if kwargs or d not in _FAST_SUM or self._storage.device is not CPU:
            return general(self, dim, keepdim, **kwargs)
        sizes = self._layout.sizes
        dims = reduce_dims(self, dim)
        key = (sizes, dims, keepdim)
        shape = _SHAPES.get(key)
        if shape is None:
            shape = _spec(self, dims, keepdim, d)[:2]
        out = alloc(shape[0], shape[1], d, CPU)
        o = out._np
        token = quiet()
        try:
            np.add.reduce(self._array(), axis=_axis(self, dims), dtype=d.numpy, out=o,
                          keepdims=keepdim)
            if mean:
                np.divide(o, _count(self, dims), out=o)
        finally:
            unquiet(token)
        return out

    kernel.rule = rule
    register_kernel(op, "cpu")(kernel)
    return kernel


_fast_reduction(ops.sum.dim_IntList, _sum_rule, mean=False)


def _mean_rule(self, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        dtype = dt.to_dtype(dtype)
        if not dtype.is_floating_point:
            raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{type_name(dtype)}")
    elif not self._dtype.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {type_name(self._dtype)}")
    dims = reduce_dims(self, dim)
    return _spec(self, dims, keepdim, dtype or self._dtype)


def _mean_compute(dest, arr, spec, self, dim=None, keepdim=False, *, dtype=None):
    acc = _acc(spec.dtype.numpy)
    dims = reduce_dims(self, dim)
    total = _reduce_into(np.add, dest, arr.astype(acc, copy=False), _axis(self, dims), keepdim,
                         acc)
    if total is None:
        np.divide(dest, _count(self, dims), out=dest)
        return None
    return np.divide(total, _count(self, dims), dtype=acc)


_register(ops.mean.dim, _mean_rule, _mean_compute, ops.mean.out, _mean_out_cast)
_fast_reduction(ops.mean.dim, _mean_rule, mean=True)
# ``x.sum()`` / ``x.mean()`` (PyTorch's ``sum.default`` / ``mean.default``): the kernels of
# the dims overloads, whose ``dim`` defaults to None (all dims), called as ``(self, *, dtype)``.
for _op, _dims in ((ops.sum.default, ops.sum.dim_IntList), (ops.mean.default, ops.mean.dim)):
    for _device in ("cpu", "meta"):
        register_kernel(_op, _device)(_dims._kernels[_device])


def _prod_rule(self, dim, keepdim=False, *, dtype=None):
    if dim is not None:
        dim = wrap_dim(dim, len(self._layout.sizes))
    dims = reduce_dims(self, dim)
    return _spec(self, dims, keepdim, _int_to_long(self._dtype, dtype))


def _prod_compute(dest, arr, spec, self, dim, keepdim=False, *, dtype=None):
    out = spec.dtype.numpy
    arr = arr.astype(out, copy=False)
    return _reduce_into(np.multiply, dest, arr, _axis(self, reduce_dims(self, dim)), keepdim,
                        _acc(out))


def _prod_all_rule(self, *, dtype=None):
    return _prod_rule(self, None, False, dtype=dtype)


def _prod_all_compute(dest, arr, spec, self, *, dtype=None):
    return _prod_compute(dest, arr, spec, self, None, False)


_register(ops.prod.dim_int, _prod_rule, _prod_compute, ops.prod.int_out, _out_as_dtype)
_register(ops.prod.default, _prod_all_rule, _prod_all_compute)


# -- var, std --------------------------------------------------------------------------------
def _var_rule_for(name):
    def rule(self, dim=None, *, correction=None, keepdim=False):
        if not self._dtype.is_floating_point:
            raise RuntimeError("std and var only support floating point and complex dtypes")
        dims = reduce_dims(self, dim)
        c = 1 if correction is None else correction
        spec = _spec(self, dims, keepdim, self._dtype)
        out_numel = math.prod(spec.sizes)
        # PyTorch's factor: input numel / output numel (0 for empty outputs).
        if (self._layout.numel() // out_numel if out_numel else 0) - c <= 0:
            warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the reduction factor (input numel divided by output "
                          "numel).", UserWarning, stacklevel=5)
        return spec
    return rule


def _var_compute_for(take_sqrt):
    def compute(dest, arr, spec, self, dim=None, *, correction=None, keepdim=False):
        dims = reduce_dims(self, dim)
        axis = _axis(self, dims)
        a = arr.astype(_F64)
        n = _count(self, dims)
        mean = np.sum(a, axis=axis, keepdims=True) / n
        sq = np.sum(np.square(a - mean), axis=axis, keepdims=keepdim)
        c = 1 if correction is None else correction
        res = sq / max(0, n - c)
        return np.sqrt(res) if take_sqrt else res
    return compute


_register(ops.var, _var_rule_for("var"), _var_compute_for(False), ops.var.correction_out,
          _out_cast)
_register(ops.std, _var_rule_for("std"), _var_compute_for(True), ops.std.correction_out,
          _out_cast)


# -- amax, amin, argmax, argmin --------------------------------------------------------------
def _extreme_rule_for(name):
    def rule(self, dim=(), keepdim=False):
        dims = reduce_dims(self, dim)
        _check_nonempty(self, _as_tuple(dim or ()), name, dim is None or not _as_tuple(dim))
        return _spec(self, dims, keepdim, self._dtype)
    return rule


def _as_tuple(dim):
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _extreme_compute_for(ufunc):
    def compute(dest, arr, spec, self, dim=(), keepdim=False):
        return _reduce_into(ufunc, dest, arr, _axis(self, reduce_dims(self, dim)), keepdim,
                            arr.dtype)
    return compute


def _out_match(spec, out, *args, **kwargs):
    if out._dtype is not spec.dtype:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got "
                           f"{type_name(spec.dtype)} for input's dtype and "
                           f"{type_name(out._dtype)} for out's dtype.")
    return spec


_register(ops.amax, _extreme_rule_for("amax"), _extreme_compute_for(np.maximum), ops.amax.out,
          _out_match)
_register(ops.amin, _extreme_rule_for("amin"), _extreme_compute_for(np.minimum), ops.amin.out,
          _out_match)


def _arg_rule_for(name):
    def rule(self, dim=None, keepdim=False):
        if self._dtype is dt.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        dims = reduce_dims(self, dim)
        _check_nonempty(self, dims, name, dim is None, idx_error=True)
        return _spec(self, dims, keepdim, dt.int64)
    return rule


def _arg_compute_for(fn):
    def compute(dest, arr, spec, self, dim=None, keepdim=False):
        if dim is None or not arr.ndim:
            res = fn(arr.reshape(-1)) if arr.size else np.zeros((), np.int64)
            return np.reshape(res, spec.sizes)
        return fn(arr, axis=wrap_dim(dim, arr.ndim), keepdims=keepdim)
    return compute


_register(ops.argmax, _arg_rule_for("argmax"), _arg_compute_for(np.argmax), ops.argmax.out,
          _out_exact, out_wrapper=False)
_register(ops.argmin, _arg_rule_for("argmin"), _arg_compute_for(np.argmin), ops.argmin.out,
          _out_exact, out_wrapper=False)


# -- max, min (all-reduce and with dim) ------------------------------------------------------
def _max_all_rule_for(name):
    def rule(self):
        _check_nonempty(self, (), name, True)
        return _spec(self, tuple(range(len(self._layout.sizes))), False, self._dtype)
    return rule


def _max_all_compute_for(ufunc):
    def compute(dest, arr, spec, self):
        return _reduce_into(ufunc, dest, arr, None, False, arr.dtype)
    return compute


_register(ops.max.default, _max_all_rule_for("max"), _max_all_compute_for(np.maximum))
_register(ops.min.default, _max_all_rule_for("min"), _max_all_compute_for(np.minimum))


def _max_dim_rule_for(name):
    def rule(self, dim, keepdim=False):
        d = wrap_dim(dim, len(self._layout.sizes))
        _check_nonempty(self, (d,), name, False)
        values = _spec(self, (d,), keepdim, self._dtype)
        return values, values._replace(dtype=dt.int64)
    return rule


def _max_dim_fill_for(argfn):
    def fill(outs, specs, self, dim, keepdim=False):
        arr = self._array()
        if fill_scalar_pair(outs, arr):
            return
        axis = wrap_dim(dim, arr.ndim)
        idx = argfn(arr, axis=axis, keepdims=True)
        values = np.take_along_axis(arr, idx, axis=axis)
        if not keepdim:
            idx, values = np.squeeze(idx, axis), np.squeeze(values, axis)
        np.copyto(outs[0], values)
        np.copyto(outs[1], idx)
    return fill


def _register_max_dim(op, out_op, name, argfn):
    # packets: the overloads their calls run
    op, out_op = overload_of(op), overload_of(out_op)
    rule = _max_dim_rule_for(name)

    def out_specs(self, args, kwargs, values, indices):
        specs = rule(self, *args, **kwargs)
        _expect_dtype(specs[0].dtype, values)
        _expect_dtype(dt.int64, indices)
        for o, s in zip((values, indices), specs):
            _check_out_device(o, s)
        return specs

    register_pair_kernels(op, out_op, rule, _max_dim_fill_for(argfn), out_specs)


_register_max_dim(ops.max.dim, ops.max.dim_max, "max", np.argmax)
_register_max_dim(ops.min.dim, ops.min.dim_min, "min", np.argmin)


# -- all, any --------------------------------------------------------------------------------
def _logical_dtype(self):
    return dt.uint8 if self._dtype is dt.uint8 else dt.bool_


def _logical_rule(self, dim=None, keepdim=False):
    dims = reduce_dims(self, dim, empty_is_all=False)
    return _spec(self, dims, keepdim, _logical_dtype(self))


def _logical_compute_for(fn):
    def compute(dest, arr, spec, self, dim=None, keepdim=False):
        dims = reduce_dims(self, dim, empty_is_all=False)
        return fn(arr, axis=_axis(self, dims), keepdims=keepdim)
    return compute


def _logical_all_rule(self):
    return _logical_rule(self)


def _logical_all_compute_for(fn):
    def compute(dest, arr, spec, self):
        return fn(arr)
    return compute


def _out_logical_for(name):
    def policy(spec, out, *args, **kwargs):
        if out._dtype is not dt.bool_ and out._dtype is not dt.uint8:
            raise RuntimeError(f"{name} only supports bool tensor for result, got: "
                               f"{type_name(out._dtype)}")
        return spec._replace(dtype=out._dtype) if spec is not None else None
    return policy


for _op, _fn in ((ops.all, np.all), (ops.any, np.any)):
    _name = _op.name
    _register(_op.dims, _logical_rule, _logical_compute_for(_fn), _op.dims_out,
              _out_logical_for(_name), policy_first=True)
    _register(_op.dim, _logical_rule, _logical_compute_for(_fn))
    _register(_op.default, _logical_all_rule, _logical_all_compute_for(_fn))


# logsumexp, norms and cumsum register on import (they reuse this module's helpers).
from . import reductions_norms as _norms  # noqa: F401

# count_nonzero, nansum, aminmax, allclose, equal.
from . import reductions_more as _more  # noqa: F401,E402
