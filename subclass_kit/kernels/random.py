"""Random sampling ops: ``randperm`` (and ``.generator``), ``multinomial``, ``bernoulli``
(``.default``, ``.p``, ``bernoulli_.float`` / ``.Tensor``, ``out=``) and ``normal`` (the four
overloads ``Tensor_Tensor``, ``Tensor_float``, ``float_Tensor``, ``float_float`` and their
``out=``). ``rand`` / ``randn`` / ``randint`` / ``uniform_`` / ``normal_`` live in
``factories.py``; all of them draw from an ``sk.Generator`` (``generator.py``).

Each op has one rule (sizes, dtype, every check that needs no data) shared by the cpu and meta
kernels (Note [One rule per op]); checks on the *values* (negative probabilities, ``std < 0``
elements) run on cpu only, as PyTorch's meta kernels skip them too. Outputs are contiguous, as
PyTorch allocates them. Values come from numpy's stream, not PyTorch's.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..generator import numpy_generator
from ..layout import Layout, broadcast_shapes, contiguous_strides
from ..registry import ops, overload_of
from ..storage import META
from ..tensor import Tensor
from ._common import (Spec, both_devices, check_no_internal_overlap, common_device, device_of,
                      new_tensor)
from ._common import cross_device_error, resize_out, resize_storage_for, type_name
from .factories import _factory, _finish, check_options, check_size
from .views import expand_sizes

_P_RANGE = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)")


def _not_implemented(kernel, d):
    return NotImplementedError(f'"{kernel}" not implemented for \'{type_name(d)}\'')


def _contig(sizes, dtype, device) -> Spec:
    return Spec(tuple(sizes), contiguous_strides(tuple(sizes)), dtype, device)


def _run(op, rule, fill):
    """cpu + meta kernels of a functional random op: ``rule`` -> Spec, then ``fill(out_array,
    rng, *args)`` on cpu; and of its ``out=`` overload when ``op`` has one."""
    op = overload_of(op)  # packet: the overload it calls
    def kernel(*args, generator=None, **kwargs):
        rng = numpy_generator(generator)
        spec = rule(*args, **kwargs)
        out = new_tensor(spec)
        if spec.device is not META:
            fill(out._array(), rng, *args, **kwargs)
        return out

    both_devices(op)(kernel)
    op.rule, op.fill = rule, fill
    return kernel


# -- randperm ------------------------------------------------------------------------------------
_PERM_LIMITS = {"uint8": ("uint8_t", 255), "int8": ("int8_t", 127), "int16": ("int16_t", 32767),
                "int32": ("int", 2 ** 31 - 1)}


@both_devices(ops.randperm.generator)
@both_devices(ops.randperm)
def randperm(n, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
             requires_grad=None):
    """A random permutation of ``0..n-1`` (int64 by default). PyTorch's checks: negative ``n``,
    bool ("randperm" not implemented), ``n - 1`` beyond the dtype ("value cannot be converted
    to type uint8_t without overflow"), float16 beyond 2049."""
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    rng = numpy_generator(generator)
    dtype = dt.int64 if dtype is None else dt.to_dtype(dtype)
    check_size((n,))
    if dtype is dt.bool_:
        raise _not_implemented("randperm", dtype)
    if dtype is dt.float16 and n > 2049:
        raise RuntimeError("n cannot be greater than 2049 for Half type.")
    limit = _PERM_LIMITS.get(dtype.name)
    if limit is not None and n - 1 > limit[1]:
        raise RuntimeError(f"value cannot be converted to type {limit[0]} without overflow")
    t = _factory((n,), dtype, device)
    if t._storage.device is not META:
        t._array()[...] = rng.permutation(n)
    return _finish(t, requires_grad)


# -- multinomial ---------------------------------------------------------------------------------
def _multinomial_rule(self, num_samples, replacement=False, out_dtype=None):
    if self.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{type_name(self._dtype)}")
    if out_dtype is not None and out_dtype is not dt.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {type_name(out_dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = self._layout.sizes[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if n_cat > 2 ** 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    sizes = (num_samples,) if self.ndim == 1 else (self._layout.sizes[0], num_samples)
    return _contig(sizes, dt.int64, self._storage.device)


def _multinomial_fill(out, rng, self, num_samples, replacement=False):
    p = self._array().astype(np.float64).reshape(-1, self._layout.sizes[-1])
    rows, cats = p.shape
    if not p.size:
        return
    res = out.reshape(rows, num_samples)
    if not replacement or num_samples == 1:
        # PyTorch's path: validate, then the exponential trick (top-k of p / Exp(1)) -- zero
        # probabilities come last, never before a positive one.
        if not (np.all(p < np.inf) and np.all(p >= 0)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(p.sum(-1) == 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        scores = p / rng.exponential(size=p.shape)
        res[...] = np.argsort(-scores, axis=-1, kind="stable")[:, :num_samples]
        return
    if np.any(p < 0) or np.any(np.isnan(p)):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                           "< 0)")
    if np.any(np.isinf(p)):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                           "= infinity or NaN)")
    total = p.sum(-1, keepdims=True)
    if np.any(total <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    cdf = np.cumsum(p / total, axis=-1)
    cdf[:, -1] = 1.0
    # One searchsorted over all rows: row i's cdf shifted into [2i, 2i + 1].
    offsets = 2.0 * np.arange(rows)[:, None]
    flat = (cdf + offsets).ravel()
    draws = rng.random((rows, num_samples)) + offsets
    idx = np.searchsorted(flat, draws.ravel(), side="right").reshape(rows, num_samples)
    res[...] = np.minimum(idx - cats * np.arange(rows)[:, None], cats - 1)


def _multinomial_kernel(self, num_samples, replacement=False, *, generator=None):
    rng = numpy_generator(generator)
    spec = _multinomial_rule(self, num_samples, replacement)
    out = new_tensor(spec)
    if spec.device is not META:
        _multinomial_fill(out._array(), rng, self, num_samples, replacement)
    return out


def _multinomial_out(self, num_samples, replacement=False, *, generator=None, out):
    rng = numpy_generator(generator)
    if out._storage.device is not self._storage.device:
        raise RuntimeError("multinomial arguments must have the same device")
    spec = _multinomial_rule(self, num_samples, replacement, out._dtype)
    resize_out(out, spec, "multinomial")
    if out._storage.device is not META:
        _multinomial_fill(out._array(), rng, self, num_samples, replacement)
    return out


both_devices(ops.multinomial)(_multinomial_kernel)
both_devices(ops.multinomial.out)(_multinomial_out)
ops.multinomial.default.rule = _multinomial_rule


# -- bernoulli -----------------------------------------------------------------------------------
def _like_rule(self, *args, **kwargs) -> Spec:
    return _contig(self._layout.sizes, self._dtype, self._storage.device)


def _check_p(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")


def _bernoulli_rule(self):
    if not self._dtype.is_floating_point:
        raise _not_implemented("bernoulli_tensor_cpu_p_", self._dtype)
    return _like_rule(self)


def _bernoulli_fill(out, rng, self):
    p = self._array()
    if not np.all((p >= 0) & (p <= 1)):
        raise RuntimeError(_P_RANGE)
    out[...] = rng.random(p.shape) < p


def _bernoulli_p_rule(self, p):
    _check_p(p)
    return _like_rule(self)


def _bernoulli_p_fill(out, rng, self, p):
    out[...] = rng.random(out.shape) < p


_run(ops.bernoulli, _bernoulli_rule, _bernoulli_fill)


@both_devices(ops.bernoulli.out)
def _bernoulli_out(self, *, generator=None, out):
    """PyTorch: ``out.resize_(self.shape).bernoulli_(self)`` -- ``out`` of any dtype, a plain
    resize (no warning), done here after the checks on ``self`` (dtype, values in [0, 1])."""
    rng = numpy_generator(generator)
    _bernoulli_rule(self)
    if out._storage.device is not self._storage.device:
        raise cross_device_error(self._storage.device, out._storage.device)
    if self._storage.device is not META:
        p = self._array()
        if not np.all((p >= 0) & (p <= 1)):
            raise RuntimeError(_P_RANGE)
    sizes = self._layout.sizes
    if out._layout.sizes != sizes:
        resize_storage_for(out, Layout(sizes, contiguous_strides(sizes), out._layout.offset))
    if out._storage.device is not META:
        out._array()[...] = rng.random(sizes) < self._array()
    return out
_run(ops.bernoulli.p, _bernoulli_p_rule, _bernoulli_p_fill)


@both_devices(ops.bernoulli_.float)
def bernoulli_float_(self, p=0.5, *, generator=None):
    """Fill ``self`` (any dtype) with 0/1 draws of probability ``p``; p outside [0, 1] raises
    RuntimeError before anything is written."""
    rng = numpy_generator(generator)
    _check_p(p)
    check_no_internal_overlap(self)
    if self._storage.device is not META:
        self._array()[...] = rng.random(self._layout.sizes) < p
    return self


@both_devices(ops.bernoulli_.Tensor)
def bernoulli_tensor_(self, p, *, generator=None):
    """Fill ``self`` with draws of the probabilities ``p`` (expanded to ``self``'s shape: the
    expand error otherwise); a non-floating ``p`` raises NotImplementedError, a value outside
    [0, 1] RuntimeError, both before anything is written."""
    rng = numpy_generator(generator)
    common_device([self, p])
    expand_sizes(p, self._layout.sizes)
    if not p._dtype.is_floating_point:
        raise _not_implemented("bernoulli_tensor_cpu_p_", p._dtype)
    check_no_internal_overlap(self)
    if self._storage.device is not META:
        probs = np.broadcast_to(p._array(), self._layout.sizes)
        if not np.all((probs >= 0) & (probs <= 1)):
            raise RuntimeError(_P_RANGE)
        self._array()[...] = rng.random(self._layout.sizes) < probs
    return self


# -- normal ---------------------------------------------------------------------------------------
# PyTorch's order (DistributionTemplates.h ``normal_out_impl``): a tensor ``std`` is checked for
# negative elements first (cpu only: its meta kernels skip data checks), then the shape
# (for out=: ``mean`` broadcast with ``out``'s current size, as PyTorch's), then the output
# dtype ("normal_kernel_cpu" not implemented for 'Long'). ``out`` is resized only after every
# check (PyTorch resizes before the dtype check).
def _check_std(std):
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def _check_std_tensor(std):
    if std._storage.device is not META and std._layout.numel() and np.any(std._array() < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _normal_dtype(d):
    if not d.is_floating_point:
        raise _not_implemented("normal_kernel_cpu", d)
    return d


def _value(x):
    return x._array() if isinstance(x, Tensor) else x


def _normal_rule(mean, std, target_sizes=None, target_dtype=None):
    """Spec of ``normal`` with a tensor ``mean`` and/or ``std``; ``target_*``: an out= tensor's
    current sizes and dtype."""
    if isinstance(std, Tensor):
        _check_std_tensor(std)
    else:
        _check_std(std)
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    device = common_device(tensors)
    shapes = [t._layout.sizes for t in tensors]
    if target_sizes is not None and not isinstance(std, Tensor):
        shapes.append(target_sizes)     # mean + std * out-shaped noise
    elif target_sizes is not None and not isinstance(mean, Tensor):
        shapes.insert(0, ())            # a 0-d mean tensor
    sizes = broadcast_shapes(*shapes)
    dtype = target_dtype or (mean if isinstance(mean, Tensor) else std)._dtype
    _normal_dtype(dtype)
    return _contig(sizes, dtype, device)


def _normal_fill(out, rng, mean, std):
    mean, std = _value(mean), _value(std)
    out[...] = np.asarray(mean, np.float64) + np.asarray(std, np.float64) * rng.standard_normal(
        out.shape)


def _normal_kernel(mean, std=1.0, *, generator=None):
    rng = numpy_generator(generator)
    spec = _normal_rule(mean, std)
    out = new_tensor(spec)
    if spec.device is not META:
        _normal_fill(out._array(), rng, mean, std)
    return out


def _normal_out(mean, std=1.0, *, generator=None, out):
    rng = numpy_generator(generator)
    spec = _normal_rule(mean, std, out._layout.sizes, out._dtype)
    if out._storage.device is not spec.device:
        raise cross_device_error(spec.device, out._storage.device)
    resize_out(out, spec, "normal")
    if out._storage.device is not META:
        _normal_fill(out._array(), rng, mean, std)
    return out


for _name in ("Tensor_float", "float_Tensor", "Tensor_Tensor"):
    both_devices(getattr(ops.normal, _name))(_normal_kernel)
    both_devices(getattr(ops.normal, _name + "_out"))(_normal_out)
    getattr(ops.normal, _name).rule = _normal_rule


def _float_float_rule(mean, std, size, *, dtype=None, layout=None, device=None, pin_memory=None,
                      requires_grad=None):
    size = check_size(size)
    _check_std(std)
    d = dt.get_default_dtype() if dtype is None else dt.to_dtype(dtype)
    _normal_dtype(d)
    return _contig(size, d, device_of(device))


@both_devices(ops.normal.float_float)
def _float_float_kernel(mean, std, size, *, generator=None, dtype=None, layout=None,
                        device=None, pin_memory=None, requires_grad=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    rng = numpy_generator(generator)
    spec = _float_float_rule(mean, std, size, dtype=dtype, device=device)
    out = new_tensor(spec)
    if spec.device is not META:
        _normal_fill(out._array(), rng, mean, std)
    return _finish(out, requires_grad)


@both_devices(ops.normal.float_float_out)
def _float_float_out(mean, std, size, *, generator=None, out):
    """PyTorch: ``out.resize_(size).normal_(mean, std)`` -- a plain resize (no warning)."""
    rng = numpy_generator(generator)
    size = check_size(size)
    _check_std(std)
    _normal_dtype(out._dtype)
    resize_storage_for(out, Layout(size, contiguous_strides(size), out._layout.offset))
    if out._storage.device is not META:
        _normal_fill(out._array(), rng, mean, std)
    return out


ops.normal.float_float.rule = _float_float_rule
