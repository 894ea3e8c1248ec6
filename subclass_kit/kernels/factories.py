"""Factory ops (no tensor inputs) and copies: ``empty``, ``full``, ``eye``, random
fills, ``clone``, ``_to_copy``, ``copy_``, ``fill_``, ``zero_``.

Random values come from an ``sk.Generator`` (``generator.py``: the default one, seeded by
``sk.manual_seed``, or the ``generator=`` argument); values differ from PyTorch's (a documented
difference), distributions and dtypes do not.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import (channels_last_strides, compute_storage_nbytes, contiguous_strides,
                      format_size, resolve_negative_strides, strided)
from ..registry import ops, register_kernel
from ..storage import META
from ..tensor import Tensor, channels_last, preserve_format
from ._common import (
    Spec,
    check_no_internal_overlap,
    check_no_partial_overlap,
    device_of,
    both_devices,
    new_tensor,
    register_rule,
    type_name,
)
from ._iter_layout import alloc, iter_strides
from ._loop_order import write_in_loop_order
from ._scalars import checked_scalar

from ..generator import checked_generator, default_generator


def manual_seed(seed: int):
    """Seed the default generator (behind every random op called without ``generator=``) and
    return it (PyTorch's ``torch.manual_seed``)."""
    return default_generator.manual_seed(seed)


def check_size(size, name="size") -> tuple:
    size = tuple(size)
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{name} must be a sequence of ints, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{format_size(size)}")
    return tuple(int(s) for s in size)


_NO_PINNED_MEMORY = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned "
                     "memory allocator is available on this system.")


def check_option_types(layout, pin_memory) -> None:
    """A factory's ``layout=`` (None or ``sk.strided``, the only layout) and ``pin_memory=``
    (None or a bool). Raises TypeError; the public functions turn it into PyTorch's parser text
    ("zeros(): argument 'layout' must be sk.layout, not str")."""
    if layout is not None and layout is not strided:
        raise TypeError(f"argument 'layout' must be sk.layout, not {type(layout).__name__}")
    if pin_memory is not None and pin_memory.__class__ is not bool:
        raise TypeError(f"argument 'pin_memory' must be bool, not {type(pin_memory).__name__}")


def check_pin_memory(pin_memory, device, prims_on_meta=False) -> None:
    """``pin_memory=True`` for a cpu result raises PyTorch 2.13's RuntimeError of a machine
    without an accelerator (pinned memory is for copies to one); on meta it is accepted and
    changes nothing, as PyTorch's, except for the factories whose meta version is a PrimTorch
    reference (``prims_on_meta``: ``arange``, ``randn``), which raise its NotImplementedError
    "PrimTorch does not support pinned memory"."""
    if pin_memory:
        if device_of(device) is not META:
            raise RuntimeError(_NO_PINNED_MEMORY)
        if prims_on_meta:
            raise NotImplementedError("PrimTorch does not support pinned memory")


def check_options(layout, pin_memory, device, prims_on_meta=False) -> None:
    """:func:`check_option_types`, then :func:`check_pin_memory`: what a factory checks before
    it allocates (PyTorch allocates before its other checks, so it reports these first)."""
    check_option_types(layout, pin_memory)
    check_pin_memory(pin_memory, device, prims_on_meta)


def _factory(size, dtype, device, strides=None) -> Tensor:
    size = check_size(size)
    dtype = dt.get_default_dtype() if dtype is None else dt.to_dtype(dtype)
    strides = contiguous_strides(size) if strides is None else strides
    t = new_tensor(Spec(size, strides, dtype, device_of(device)))
    return t


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def check_requires_grad_dtype(dtype):
    """Factories refuse ``requires_grad=True`` for non-float dtypes with PyTorch's text."""
    if not dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")


@both_devices(ops.empty)
def empty(size, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=None,
          memory_format=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    strides = None
    if memory_format is channels_last:
        strides = channels_last_strides(tuple(size))
    return _finish(_factory(size, dtype, device, strides), requires_grad)


@both_devices(ops.empty_strided)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    size, stride = check_size(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    # PyTorch's computeStorageNbytes: a negative stride wraps around and overflows (unless
    # its dim has size 1): "Storage size calculation overflowed with sizes=... and strides=...".
    compute_storage_nbytes(size, stride, 1)
    stride = resolve_negative_strides(size, stride)
    return _finish(_factory(size, dtype, device, stride), requires_grad)


def _fill_value_dtype(value):
    if isinstance(value, bool):
        return dt.bool_
    if isinstance(value, int):
        return dt.int64
    return dt.get_default_dtype()


@both_devices(ops.full)
def full(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
         requires_grad=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtype = _fill_value_dtype(fill_value) if dtype is None else dtype
    t = _factory(size, dtype, device)
    value = checked_scalar(fill_value, t._dtype)
    if t._storage.device is not META:
        t._array().fill(value)
    return _finish(t, requires_grad)


@both_devices(ops.scalar_tensor)
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    t = _factory((), dtype, device)
    if t._storage.device is not META:
        t._array()[()] = s
    return t


@both_devices(ops.eye.m)
def eye(n, m, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    t = _factory((n, m), dtype, device)
    if t._storage.device is not META:
        t._array()[...] = np.eye(n, m)
    return _finish(t, requires_grad)


def _random(kind):
    def kernel(size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=None):
        if layout is not None or pin_memory is not None:
            check_options(layout, pin_memory, device, kind == "randn")
        rng = checked_generator(generator)
        t = _factory(size, dtype, device)
        if not t._dtype.is_floating_point:
            kernel_name = "check_uniform_bounds" if kind == "rand" else "normal_kernel_cpu"
            raise NotImplementedError(f'"{kernel_name}" not implemented for '
                                      f"'{type_name(t._dtype)}'")
        if t._storage.device is not META:
            shape = t._layout.sizes
            vals = rng._np.random(shape) if kind == "rand" else rng._np.standard_normal(shape)
            t._array()[...] = vals
        return _finish(t, requires_grad)
    return kernel


register_kernel(ops.rand, "cpu")(_random("rand"))
register_kernel(ops.rand, "meta")(_random("rand"))
register_kernel(ops.randn, "cpu")(_random("randn"))
register_kernel(ops.randn, "meta")(_random("randn"))
for _op, _kind in ((ops.rand.generator, "rand"), (ops.randn.generator, "randn")):
    register_kernel(_op, "cpu")(_random(_kind))
    register_kernel(_op, "meta")(_random(_kind))


@both_devices(ops.randint.low_generator)
@both_devices(ops.randint.low)
def randint(low, high, size, *, generator=None, dtype=None, layout=None, device=None,
            pin_memory=None, requires_grad=None):
    if layout is not None or pin_memory is not None:
        check_options(layout, pin_memory, device)
    rng = checked_generator(generator)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    t = _factory(size, dt.int64 if dtype is None else dtype, device)
    if t._storage.device is not META:
        t._array()[...] = rng._np.integers(low, high, t._layout.sizes)
    return t


# -- the short forms: the overloads PyTorch's bindings pick for ``ones(2)``, ``arange(5)``... ------
@both_devices(ops.ones.default)
def ones(size, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=None):
    """``full(size, 1)`` in the default float dtype unless ``dtype`` is given."""
    return full(size, 1, dtype=dt.get_default_dtype() if dtype is None else dtype,
                layout=layout, device=device, pin_memory=pin_memory, requires_grad=requires_grad)


@both_devices(ops.zeros.default)
def zeros(size, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=None):
    """``full(size, 0)``; a negative size raises PyTorch's zeros-specific text (before
    ``pin_memory``'s, as PyTorch's)."""
    if layout is not None or pin_memory is not None:
        check_option_types(layout, pin_memory)
    if any(isinstance(s, int) and s < 0 for s in size):
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    return full(size, 0, dtype=dt.get_default_dtype() if dtype is None else dtype,
                layout=layout, device=device, pin_memory=pin_memory, requires_grad=requires_grad)


@both_devices(ops.eye.default)
def eye_n(n, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=None):
    return eye(n, n, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
               requires_grad=requires_grad)


@both_devices(ops.randint.default)
def randint_high(high, size, *, dtype=None, layout=None, device=None, pin_memory=None,
                 requires_grad=None):
    return randint(0, high, size, dtype=dtype, layout=layout, device=device,
                   pin_memory=pin_memory, requires_grad=requires_grad)


# -- copies ---------------------------------------------------------------------------------------
_PRESERVED: dict = {}


def _preserved_strides(self, memory_format):
    """Output strides of a copy of ``self`` in ``memory_format`` (memoised per layout)."""
    layout = self._layout
    key = (layout.sizes, layout.strides, memory_format)
    found = _PRESERVED.get(key)
    if found is None:
        found = _compute_preserved_strides(layout, memory_format)
        if len(_PRESERVED) < 4096:
            _PRESERVED[key] = found
    return found


def _compute_preserved_strides(layout, memory_format):
    if memory_format is None or memory_format is preserve_format:
        if layout.is_non_overlapping_and_dense():
            return layout.strides
        return iter_strides(layout.sizes, [(layout.sizes, layout.strides)])
    if memory_format is channels_last:
        return channels_last_strides(layout.sizes)
    return contiguous_strides(layout.sizes)


def _clone_rule(self, *, memory_format=None):
    return Spec(self._layout.sizes, _preserved_strides(self, memory_format), self._dtype,
                self._storage.device)


def _clone_fill(outs, spec, self, *, memory_format=None):
    np.copyto(outs[0], self._array())


def _clone(self, *, memory_format=None):
    """clone's cpu and meta kernel: the rule, one allocation and one ``np.copyto`` (the
    reshape-of-a-view hot path). The version of a copy of an inference tensor: Note [Versions
    of outputs computed from inference tensors]."""
    device = self._storage.device
    out = alloc(self._layout.sizes, _preserved_strides(self, memory_format), self._dtype,
                device)
    if device is not META:
        np.copyto(out._np, self._array())
    return out


# One kernel for both devices (not register_rule's pair): the rule and fill stay on the op
# for tools that read them, like every rule-registered op.
_clone.rule = ops.clone.default.rule = _clone_rule
ops.clone.default.fill = _clone_fill
both_devices(ops.clone)(_clone)


def _to_copy_rule(self, *, dtype=None, device=None, non_blocking=False, memory_format=None):
    dtype = self._dtype if dtype is None else dt.to_dtype(dtype)
    dev = self._storage.device if device is None else device_of(device)
    if self._storage.device is META and dev is not META:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    return Spec(self._layout.sizes, _preserved_strides(self, memory_format), dtype, dev)


def cast_copy(dst, src):
    """``np.copyto`` with C++'s casts, as PyTorch's copy kernels: a float out of a narrower
    type's range becomes inf, or an unspecified integer, silently (numpy warns)."""
    if dst.dtype == src.dtype:
        np.copyto(dst, src)
        return
    with np.errstate(over="ignore", invalid="ignore"):
        np.copyto(dst, src, casting="unsafe")


def _to_copy_fill(outs, spec, self, **kwargs):
    cast_copy(outs[0], self._array())


register_rule(ops._to_copy, _to_copy_rule, _to_copy_fill)


def _copy_check(self, src):
    """``src`` must broadcast to ``self``'s shape (PyTorch's texts for both failure kinds)."""
    from ..layout import broadcast_shapes
    shape = broadcast_shapes(self._layout.sizes, src._layout.sizes)
    if shape != self._layout.sizes:
        raise RuntimeError(f"output with shape {format_size(self._layout.sizes)} doesn't match "
                           f"the broadcast shape {format_size(shape)}")
    if src._storage.device is META and self._storage.device is not META:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")


@both_devices(ops.copy_)
def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src is self or (src._storage is self._storage and src._layout == self._layout
                       and src._dtype is self._dtype):
        return self     # PyTorch's copy_impl returns before any check: nothing to write
    _copy_check(self, src)
    check_no_internal_overlap(self)
    check_no_partial_overlap(self, (src,))
    if self._storage.device is not META and not write_in_loop_order(self, (src,), _copy_wave):
        cast_copy(self._array(), src._array())
    return self


def _copy_wave(result, args):
    cast_copy(result, args[0]._array())


def _copy_rule(self, src, non_blocking=False):
    _copy_check(self, src)
    return Spec(self._layout.sizes, _preserved_strides(self, None), self._dtype,
                self._storage.device)


def _copy_fill(outs, spec, self, src, non_blocking=False):
    cast_copy(outs[0], src._array())


register_rule(ops.copy, _copy_rule, _copy_fill)


def _check_fill_value(value):
    if isinstance(value, Tensor) and value._layout.sizes:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                           f"with {len(value._layout.sizes)} dimensions.")


def _fill_value(value):
    _check_fill_value(value)
    if isinstance(value, Tensor):
        return value.item() if value._storage.device is not META else 0
    return value


@both_devices(ops.fill_)
def fill_(self, value):
    # PyTorch allows fill_/zero_ on expanded tensors (every alias gets the same value).
    _check_fill_value(value)
    if self._storage.device is not META:
        value = checked_scalar(_fill_value(value), self._dtype)
        self._array()[...] = value
    return self


def _fill_rule(self, value):
    _check_fill_value(value)
    return Spec(self._layout.sizes, _preserved_strides(self, None), self._dtype,
                self._storage.device)


def _fill_fill(outs, spec, self, value):
    outs[0][...] = checked_scalar(_fill_value(value), spec.dtype)


register_rule(ops.fill, _fill_rule, _fill_fill)


@both_devices(ops.zero_)
def zero_(self):
    if self._storage.device is not META:
        self._array()[...] = 0
    return self


@both_devices(ops._local_scalar_dense)
def _local_scalar_dense(self):
    # The op reads the first element whatever the numel (``item()`` checks numel first).
    self._check_data("item")
    arr = self._array()
    if arr.size == 0:
        raise RuntimeError("a Tensor with 0 elements cannot be converted to Scalar")
    return arr.reshape(-1)[0].item()


# -- *_like factories: one rule (the input's layout per memory_format), then a fill -------------
def _like_rule(self, *args, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=None, memory_format=None):
    dtype = self._dtype if dtype is None else dt.to_dtype(dtype)
    dev = self._storage.device if device is None else device_of(device)
    return Spec(self._layout.sizes, _preserved_strides(self, memory_format), dtype, dev)


def _like_kernel(fill_value):
    """A *_like kernel; ``fill_value(self, args, out_shape) -> array | scalar | None``."""
    def kernel(self, *args, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=None, memory_format=None):
        spec = _like_rule(self, *args, dtype=dtype, device=device, memory_format=memory_format)
        if layout is not None or pin_memory is not None:
            check_options(layout, pin_memory, spec.device)
        if fill_value in (_rand_like_value, _randn_like_value) and \
                not spec.dtype.is_floating_point:
            kernel_name = ("check_uniform_bounds" if fill_value is _rand_like_value
                           else "normal_kernel_cpu")
            raise NotImplementedError(f'"{kernel_name}" not implemented for '
                                      f"'{type_name(spec.dtype)}'")
        out = new_tensor(spec)
        if spec.device is not META:
            value = fill_value(self, args, spec.sizes)
            if value is not None:
                out._array()[...] = value
        return _finish(out, requires_grad)
    return kernel


def _random_like(kind):
    def value(self, args, shape):
        rng = default_generator._np
        return rng.random(shape) if kind == "rand" else rng.standard_normal(shape)
    return value


_rand_like_value = _random_like("rand")
_randn_like_value = _random_like("randn")


for _op, _value in ((ops.empty_like.default, lambda self, args, shape: None),
                    (ops.zeros_like.default, lambda self, args, shape: 0),
                    (ops.ones_like.default, lambda self, args, shape: 1),
                    (ops.full_like.default, lambda self, args, shape: _fill_value(args[0])),
                    (ops.rand_like.default, _rand_like_value),
                    (ops.randn_like.default, _randn_like_value)):
    _kernel = _like_kernel(_value)
    register_kernel(_op, "cpu")(_kernel)
    register_kernel(_op, "meta")(_kernel)
    _op.rule = _like_rule


# -- Tensor.new_*: factories whose dtype and device default to ``self``'s ------------------------
def _new_options(self, dtype, device):
    return (self._dtype if dtype is None else dtype,
            self._storage.device if device is None else device)


@both_devices(ops.new_empty)
def new_empty(self, size, *, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=None):
    dtype, device = _new_options(self, dtype, device)
    return empty(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                 requires_grad=requires_grad)


@both_devices(ops.new_empty_strided)
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None,
                      requires_grad=None):
    dtype, device = _new_options(self, dtype, device)
    return empty_strided(size, stride, dtype=dtype, layout=layout, device=device,
                         pin_memory=pin_memory, requires_grad=requires_grad)


@both_devices(ops.new_full)
def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
             requires_grad=None):
    dtype, device = _new_options(self, dtype, device)
    return full(size, fill_value, dtype=dtype, layout=layout, device=device,
                pin_memory=pin_memory, requires_grad=requires_grad)


@both_devices(ops.new_zeros)
def new_zeros(self, size, *, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=None):
    return new_full(self, size, 0, dtype=dtype, layout=layout, device=device,
                    pin_memory=pin_memory, requires_grad=requires_grad)


@both_devices(ops.new_ones)
def new_ones(self, size, *, dtype=None, layout=None, device=None, pin_memory=None,
             requires_grad=None):
    return new_full(self, size, 1, dtype=dtype, layout=layout, device=device,
                    pin_memory=pin_memory, requires_grad=requires_grad)


# -- in-place random fills: PyTorch's checks in its order, then numpy's generator --------------
def _random_generator(generator):
    return checked_generator(generator)


def _random_fill_target(self, kernel_name):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel_name}" not implemented for '
                                  f"'{type_name(self._dtype)}'")


_FINFO_MAX: dict = {}


def _finfo_max(dtype) -> float:
    """The largest finite value of a floating ``dtype`` as a float (cached: ``np.finfo`` costs
    more than the rest of a meta ``uniform_``, which every ``nn.Linear`` init runs)."""
    hi = _FINFO_MAX.get(dtype)
    if hi is None:
        hi = _FINFO_MAX[dtype] = float(np.finfo(dtype.numpy).max)
    return hi


@both_devices(ops.uniform_)
def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """PyTorch's ``uniform_impl_`` checks: the dtype ("check_uniform_bounds" not implemented
    for 'Long'), ``from``/``to`` within the dtype's range, ``from <= to``, ``to - from`` finite
    in the dtype, then the internal-overlap check of the fill."""
    rng = _random_generator(generator)
    _random_fill_target(self, "check_uniform_bounds")
    hi = _finfo_max(self._dtype)
    for name, v in (("from", from_), ("to", to)):
        if not -hi <= v <= hi:
            raise RuntimeError(f"{name} is out of bounds for {_CHECKED_NAME[self._dtype.name]}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_:g} > to={to:g}")
    if to - from_ > hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{type_name(self._dtype)}>::max(), but found to={to:g} and "
                           f"from={from_:g} which result in to-from to exceed the limit")
    check_no_internal_overlap(self)
    if self._storage.device is not META:
        shape = self._layout.sizes
        self._array()[...] = from_ + (to - from_) * rng._np.random(shape)
    return self


@both_devices(ops.normal_)
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """PyTorch's ``normal_impl_`` checks: ``std >= 0`` first, then the dtype
    ("normal_kernel_cpu" not implemented for 'Long'), then the fill's internal overlap."""
    rng = _random_generator(generator)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    _random_fill_target(self, "normal_kernel_cpu")
    check_no_internal_overlap(self)
    if self._storage.device is not META:
        shape = self._layout.sizes
        self._array()[...] = mean + std * rng._np.standard_normal(shape)
    return self


_CHECKED_NAME = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                 "float64": "double"}
