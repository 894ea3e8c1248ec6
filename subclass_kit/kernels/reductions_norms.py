"""``logsumexp``, ``linalg_vector_norm`` / ``norm``, ``cumsum`` and ``cumprod``: the reductions
with extra numerics, registered with ``reductions._register`` (Note [One rule per op]).

- ``logsumexp`` subtracts the max first (infinite maxima count as 0), integer inputs give the
  default float, an empty reduction gives -inf;
- norms: ``ord`` 2 (default), 1, inf, -inf, 0 (count of nonzeros), negative and fractional
  orders; floating inputs only; inf/negative orders of empty dims raise;
- ``cumsum`` / ``cumprod`` keep the input's shape (contiguous output), int/bool accumulate in
  int64, float16 in float32.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from ..layout import contiguous_strides, wrap_dim
from ..registry import ops
from ..storage import round_to_bfloat16
from ._common import Spec, type_name
from .reductions import (
    _acc,
    _as_tuple,
    _axis,
    _count,
    _int_to_long,
    _out_as_dtype,
    _out_exact,
    _register,
    _spec,
    reduce_dims,
)


def _logsumexp_rule(self, dim, keepdim=False):
    ndim = len(self._layout.sizes)
    if ndim and not _as_tuple(dim) and not keepdim and self._layout.numel():
        # PyTorch reduces everything but then fails writing the keepdim-shaped result.
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape "
                           f"[{', '.join(['1'] * ndim)}]")
    dims = reduce_dims(self, dim)
    out = self._dtype if self._dtype.is_floating_point else dt.get_default_dtype()
    return _spec(self, dims, keepdim, out)


def _same(a):
    return a


def _logsumexp_compute(dest, arr, spec, self, dim, keepdim=False):
    acc = _acc(spec.dtype.numpy)
    a = arr.astype(acc, copy=False)
    dims = reduce_dims(self, dim)
    axis = _axis(self, dims)
    if a.size == 0 or _count(self, dims) == 0:
        return np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdim))
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0, m).astype(acc)
    if dt.bfloat16 in (self._dtype, spec.dtype):
        # PyTorch composes it of ops: sub and exp in the input's dtype, then sum, log and add
        # into the result tensor; each one in bfloat16 rounds.
        r_in = round_to_bfloat16 if self._dtype is dt.bfloat16 else _same
        r_out = round_to_bfloat16 if spec.dtype is dt.bfloat16 else _same
        total = r_out(np.sum(r_in(np.exp(r_in(a - m))), axis=axis, keepdims=True))
        res = r_out(r_out(np.log(total)) + m)
    else:
        res = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return res if keepdim else np.squeeze(res, axis) if axis else res


def _out_float_for(name):
    def policy(spec, out, *args, **kwargs):
        if not out._dtype.is_floating_point:
            raise RuntimeError(f"{name}(): Expected floating point type for result tensor, but "
                               f"got: {type_name(out._dtype)}")
        return spec._replace(dtype=out._dtype)
    return policy


_register(ops.logsumexp, _logsumexp_rule, _logsumexp_compute, ops.logsumexp.out,
          _out_float_for("logsumexp"))


def _norm_rule(self, ord=2, dim=None, keepdim=False, *, dtype=None, _legacy=False):
    if not self._dtype.is_floating_point:
        if _legacy:
            raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                               f"Got {type_name(self._dtype)} instead.")
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {type_name(self._dtype)}")
    out = self._dtype
    if dtype is not None:
        dtype = dt.to_dtype(dtype)
        if not dtype.is_floating_point:
            raise RuntimeError("linalg.vector_norm: dtype should be floating point or complex, "
                               f"but got {type_name(dtype)}")
        if dt.promote_types(self._dtype, dtype) is not dtype:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input "
                               f"({type_name(self._dtype)}) should be convertible without "
                               f"narrowing to the specified dtype ({type_name(dtype)})")
        out = dtype
    dims = reduce_dims(self, dim)
    ndim = len(self._layout.sizes)
    ord = float(ord)
    if ord < 0 or math.isinf(ord):
        if dim is None or not _as_tuple(dim):
            if self._layout.numel() == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an "
                                   "empty tensor because the operation does not have an "
                                   "identity")
        else:
            for d in _as_tuple(dim):
                if self._layout.sizes and self._layout.sizes[wrap_dim(d, ndim)] == 0:
                    raise RuntimeError(
                        f"linalg.vector_norm cannot compute the {ord:g} norm on the dimension "
                        f"{d}because this dimension is empty and the operation does not have "
                        "an identity")
    return _spec(self, dims, keepdim, out)


def _norm_compute(dest, arr, spec, self, ord=2, dim=None, keepdim=False, *, dtype=None):
    acc = _acc(spec.dtype.numpy)
    a = np.abs(arr.astype(acc, copy=False))
    axis = _axis(self, reduce_dims(self, dim))
    ord = float(ord)
    if ord == math.inf:
        return np.max(a, axis=axis, keepdims=keepdim, initial=0)
    if ord == -math.inf:
        return np.min(a, axis=axis, keepdims=keepdim)
    if ord == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim, dtype=acc)
    if ord == 1:
        return np.sum(a, axis=axis, keepdims=keepdim, dtype=acc)
    if ord == 2:
        return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim, dtype=acc))
    return np.power(np.sum(np.power(a, ord), axis=axis, keepdims=keepdim, dtype=acc), 1.0 / ord)


_register(ops.linalg_vector_norm, _norm_rule, _norm_compute, ops.linalg_vector_norm.out,
          _out_exact)


def _norm_dim_rule(self, p, dim, keepdim=False):
    return _norm_rule(self, 2 if p is None else p, dim, keepdim, _legacy=True)


def _norm_dim_compute(dest, arr, spec, self, p, dim, keepdim=False):
    return _norm_compute(dest, arr, spec, self, 2 if p is None else p, dim, keepdim)


_register(ops.norm.ScalarOpt_dim, _norm_dim_rule, _norm_dim_compute, ops.norm.out, _out_exact)


def _cumulative_out_rule(self, dim, *, dtype=None):
    wrap_dim(dim, len(self._layout.sizes))
    sizes = self._layout.sizes
    return Spec(sizes, contiguous_strides(sizes), _int_to_long(self._dtype, dtype),
                self._storage.device)


def _no_bool(name, spec):
    """The compute dtype (the result's, or ``out``'s) cannot be bool."""
    if spec.dtype is dt.bool_:
        raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'")
    return spec


def _cumulative_rule(name):
    def rule(self, dim, *, dtype=None):
        return _no_bool(name, _cumulative_out_rule(self, dim, dtype=dtype))
    return rule


def _cumulative_out_policy(name):
    def policy(spec, out, *args, **kwargs):
        return _no_bool(name, _out_as_dtype(spec, out, *args, **kwargs))
    return policy


def _cumulative_compute(np_fn):
    def compute(dest, arr, spec, self, dim, *, dtype=None):
        out = spec.dtype.numpy
        arr = arr.astype(out, copy=False)
        if arr.ndim == 0:
            return arr
        res = np_fn(arr, axis=wrap_dim(dim, arr.ndim), dtype=_acc(out))
        if np_fn is np.cumsum and res.dtype.kind == "f":
            # PyTorch's running sum starts from +0.0, so no partial sum is -0.0
            res += 0.0
        return res
    return compute


for _name, _np_fn in (("cumsum", np.cumsum), ("cumprod", np.cumprod)):
    _op = getattr(ops, _name)
    _register(_op, _cumulative_rule(_name), _cumulative_compute(_np_fn), _op.out,
              _cumulative_out_policy(_name), out_rule=_cumulative_out_rule)
