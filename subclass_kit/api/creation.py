"""Factories: ``sk.tensor``, ``sk.zeros``, ``sk.ones``, ``sk.full``, ``sk.empty``, ``sk.arange``,
``sk.eye``, ``sk.rand``, ``sk.randn``, ``sk.randint``, ``sk.empty_strided`` and ``*_like``.

Factory ops reach modes with ``types == ()`` (SEMANTICS.md §5.1). ``device`` is "cpu" or "meta";
``dtype`` defaults to ``sk.get_default_dtype()`` (float32) for float factories and is inferred
from the data for ``sk.tensor``.

Every factory but ``sk.tensor`` / ``sk.as_tensor`` takes PyTorch's ``layout=`` and
``pin_memory=`` (as do their ops' schemas: ``Layout? layout=None``, ``bool? pin_memory=None``),
so wrapper code such as ``sk.empty(t.shape, dtype=t.dtype, layout=t.layout, device=t.device)``
ports: ``layout`` must be ``sk.strided`` (the only layout) and ``pin_memory`` a bool, else
TypeError with PyTorch's parser text; ``pin_memory=True`` for a cpu result raises the
RuntimeError PyTorch 2.13 raises on a machine without an accelerator ("pin_memory=True requires
a CUDA or other accelerator backend; ..."), and is accepted on meta. Given, they reach the op
(and modes) as keywords; not given, the op sees neither.
"""

from __future__ import annotations

import functools
import operator
import warnings

import numpy as np

from .. import _dtype as dt
from ..function import public_api
from ..mode import no_dispatch
from ..storage import device as _device
from ..kernels.factories import check_requires_grad_dtype, manual_seed
from ..registry import ops
from ..tensor import Tensor, from_numpy
from .._argcheck import type_error
from ._register import size_args

__all__ = ["tensor", "as_tensor", "empty", "zeros", "ones", "full", "arange", "linspace",
           "logspace", "eye", "rand", "randn", "randint", "empty_strided", "empty_like",
           "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "manual_seed",
           "from_numpy", "scalar_tensor"]


def _is_seq(x) -> bool:
    return isinstance(x, (list, tuple))


def _sequence_sizes(data) -> list:
    sizes = []
    while _is_seq(data):
        sizes.append(len(data))
        if not data:
            break
        data = data[0]
    return sizes


def _ragged_error(data, sizes, dim=0):
    """PyTorch's text for the first sequence whose length differs from the first one's."""
    if dim >= len(sizes):
        if _is_seq(data):
            return ValueError(f"expected sequence of length {len(data)} at dim {dim} (got "
                              f"{len(data)})")
        return None
    if not _is_seq(data):
        return ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got "
                          f"{type(data).__name__})")
    if len(data) != sizes[dim]:
        return ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got "
                          f"{len(data)})")
    for item in data:
        err = _ragged_error(item, sizes, dim + 1)
        if err is not None:
            return err
    return None


def _as_array(data) -> tuple:
    """numpy array of Python ``data`` and its inferred sk dtype (bool < int64 < default float,
    PyTorch's inference). Raises ValueError/TypeError with PyTorch's texts."""
    try:
        arr = np.asarray(data)
    except ValueError:
        arr = None
    if arr is None or arr.dtype == object:
        err = _ragged_error(data, _sequence_sizes(data))
        if err is not None:
            raise err
        raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")
    kind = arr.dtype.kind
    if kind in "US":
        if isinstance(data, str):
            raise TypeError("new(): invalid data type 'str'")
        raise ValueError("too many dimensions 'str'")
    if kind == "b":
        return arr, dt.bool_
    if kind in "iu":
        return arr, dt.int64
    if kind == "f":
        return arr, dt.get_default_dtype()
    raise TypeError(f"Could not infer dtype of {arr.dtype}")


@public_api
def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor copying ``data`` (nested lists, numbers, numpy arrays or a Tensor).

    dtype: inferred as PyTorch does (bool, int64, or the default float; numpy arrays keep
    theirs). device: "cpu" by default, or ``data``'s device when ``data`` is a Tensor (PyTorch
    copies a meta tensor to a meta tensor). A numpy array's copy keeps its strides when they
    are dense (a transposed array, a zero-size one with numpy 2's zero strides), as
    ``torch.tensor(ndarray)``. Raises TypeError for data of unsupported types; ValueError for
    ragged lists and for numpy arrays with negative strides (PyTorch's ``from_numpy`` text).
    """
    if isinstance(data, Tensor):
        src = data.detach()
        out = src.to(dtype=dtype or src.dtype, device=device, copy=True)
    elif isinstance(data, np.ndarray):
        # PyTorch: ``from_numpy`` (its checks: negative strides, byte order, dtypes), then a
        # preserve_format copy, so dense layouts keep numpy's strides: a transposed or
        # Fortran-order array, and numpy 2's all-zero strides of a zero-size array.
        # Hidden from modes as below.
        src = from_numpy(data)
        with no_dispatch():
            out = ops._to_copy.default(
                src, dtype=src.dtype if dtype is None else dt.to_dtype(dtype),
                device=device or "cpu")
        out = ops.lift_fresh.default(out)
    else:
        if isinstance(data, (list, tuple)) and data and any(
                isinstance(x, Tensor) for x in _flat(data)):
            arr, inferred = _as_array([_to_py(x) for x in data])
        else:
            arr, inferred = _as_array(data)
        dtype = inferred if dtype is None else dt.to_dtype(dtype)
        # The data is written outside the op layer, so the allocation is hidden from modes too
        # (PyTorch builds it below the Python key): modes see only lift_fresh of a constant.
        with no_dispatch():
            out = ops.empty.memory_format(list(arr.shape), dtype=dtype, device=device or "cpu")
        if out._storage.device.type != "meta":
            np.copyto(out._array(), arr, casting="unsafe")
        out = ops.lift_fresh.default(out)
    if requires_grad:
        check_requires_grad_dtype(out.dtype)
        out.requires_grad_(True)
    return out


def _flat(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _to_py(x):
    if isinstance(x, Tensor):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return [_to_py(v) for v in x]
    return x


@public_api
def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but returns ``data`` itself when it is already a matching Tensor."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if isinstance(data, np.ndarray) and dtype is None and device in (None, "cpu"):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device or "cpu")


def _kw(dtype, device, layout=None, pin_memory=None):
    # ``requires_grad`` is applied by ``@factory`` after the op (PyTorch's public factories
    # check the dtype with their own text before the op sees the flag). ``layout`` /
    # ``pin_memory`` reach the op only when given (the kernels check them). A device string
    # reaches handlers as a ``sk.device``, as PyTorch's parser makes a ``torch.device`` of it
    # (other strings go on as given: the kernels raise for them).
    if device.__class__ is str and device.partition(":")[0] in _DEVICE_TYPES:
        device = _device(device)
    if layout is None and pin_memory is None:
        return {"dtype": dtype, "device": device}
    return {"dtype": dtype, "layout": layout, "device": device, "pin_memory": pin_memory}


_DEVICE_TYPES = ("cpu", "meta")


def factory(fn):
    """``public_api`` for a factory taking ``requires_grad=``: run ``fn``, then set the flag,
    refusing non-float dtypes with PyTorch's factory text."""
    @functools.wraps(fn)
    def with_requires_grad(*args, requires_grad=False, **kwargs):
        out = fn(*args, **kwargs)
        if requires_grad:
            check_requires_grad_dtype(out.dtype)
            out.requires_grad_(True)
        return out
    return public_api(with_requires_grad)


@factory
def empty(*size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """Uninitialised tensor of ``size`` (meta: no data at all)."""
    return ops.empty.memory_format(size_args(size), **_kw(dtype, device, layout, pin_memory),
                                   memory_format=memory_format)


@factory
def zeros(*size, dtype=None, layout=None, device=None, pin_memory=None):
    """Tensor of ``size`` filled with 0 (default float dtype; op ``zeros.default``). Raises
    RuntimeError "zeros: Dimension size must be non-negative." for a negative size, as
    ``torch.zeros``."""
    return ops.zeros.default(size_args(size), **_kw(dtype, device, layout, pin_memory))


@factory
def ones(*size, dtype=None, layout=None, device=None, pin_memory=None):
    """Tensor of ``size`` filled with 1 (default float dtype; op ``ones.default``), as
    ``torch.ones``."""
    return ops.ones.default(size_args(size), **_kw(dtype, device, layout, pin_memory))


@factory
def full(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    """Tensor of ``size`` filled with ``fill_value``; dtype inferred from the value (bool,
    int64, default float) as ``torch.full``. Raises RuntimeError when the value overflows dtype."""
    return ops.full.default(tuple(size), fill_value, **_kw(dtype, device, layout, pin_memory))


@public_api
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    """A 0-d tensor holding the number ``s`` (``torch.scalar_tensor``)."""
    return ops.scalar_tensor.default(s, **_kw(dtype, device, layout, pin_memory))


@factory
def arange(start, end=None, step=1, *, dtype=None, layout=None, device=None, pin_memory=None):
    """``arange(end)`` or ``arange(start, end, step)``; int64 for integer arguments. Handlers
    see PyTorch's overloads: ``arange.default(end)``, ``arange.start(start, end)``,
    ``arange.start_step(start, end, step)``."""
    if end is None:
        return ops.arange.default(start, **_kw(dtype, device, layout, pin_memory))
    if step == 1 and type(step) is int:
        return ops.arange.start(start, end, **_kw(dtype, device, layout, pin_memory))
    return ops.arange.start_step(start, end, step, **_kw(dtype, device, layout, pin_memory))


@factory
def linspace(start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None):
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (``(steps,)``,
    the default float dtype unless ``dtype``), as ``torch.linspace`` computes them: the first
    half counted up from ``start``, the rest down from ``end``, in ``dtype``'s arithmetic
    (integer dtypes: in double, truncated). ``start`` / ``end`` may be numbers or 0-d tensors.
    Raises RuntimeError for a negative ``steps`` or a tensor end with dimensions,
    NotImplementedError for bool with more than one step, TypeError for a non-integer
    ``steps``."""
    if isinstance(steps, bool) or not hasattr(steps, "__index__"):
        raise type_error("linspace", "steps", "int", steps, 3)
    kw = _kw(dtype, device, layout, pin_memory)
    return ops.linspace.default(start, end, operator.index(steps), **kw)


@factory
def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None,
             pin_memory=None):
    """``steps`` values ``base ** e`` for ``e`` evenly spaced from ``start`` to ``end``
    (``(steps,)``, the default float dtype unless ``dtype``), as ``torch.logspace``: the
    exponents as ``linspace`` counts them, in double; ``base ** e`` by numpy's ``power``
    (float64 results may differ from PyTorch's in the last bit, docs/differences.md). Raises
    as ``linspace``; TypeError for a non-number ``base``."""
    if isinstance(steps, bool) or not hasattr(steps, "__index__"):
        raise type_error("logspace", "steps", "int", steps, 3)
    if isinstance(base, (bool, complex)) or not isinstance(base, (int, float, np.number)):
        raise type_error("logspace", "base", "float", base, 4)
    return ops.logspace.default(start, end, operator.index(steps), float(base),
                                **_kw(dtype, device, layout, pin_memory))


@factory
def eye(n, m=None, *, dtype=None, layout=None, device=None, pin_memory=None):
    """An ``(n, m)`` identity matrix (``m`` defaults to ``n``); RuntimeError for negative
    sizes, as ``torch.eye``."""
    if m is None:
        return ops.eye.default(n, **_kw(dtype, device, layout, pin_memory))
    return ops.eye.m(n, m, **_kw(dtype, device, layout, pin_memory))


@factory
def rand(*size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """Uniform [0, 1) samples of ``size`` from ``generator`` (an ``sk.Generator``; the default
    one, seeded by ``sk.manual_seed``, when None: values differ from torch's stream).
    NotImplementedError for integer dtypes, as torch. With ``generator=`` the op is
    ``rand.generator``, as PyTorch's."""
    if generator is not None:
        kw = _kw(dtype, device, layout, pin_memory)
        return ops.rand.generator(size_args(size), generator=generator, **kw)
    return ops.rand.default(size_args(size), **_kw(dtype, device, layout, pin_memory))


@factory
def randn(*size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """Standard normal samples of ``size`` (``torch.randn``; numpy stream, not torch's) from
    ``generator`` (``randn.generator``) or the default one. NotImplementedError for integer
    dtypes."""
    if generator is not None:
        kw = _kw(dtype, device, layout, pin_memory)
        return ops.randn.generator(size_args(size), generator=generator, **kw)
    return ops.randn.default(size_args(size), **_kw(dtype, device, layout, pin_memory))


@factory
def randint(low, high=None, size=None, *, generator=None, dtype=None, layout=None, device=None,
            pin_memory=None):
    """``randint(high, size)`` or ``randint(low, high, size)``; int64 by default; from
    ``generator`` (``randint.low_generator``) or the default generator."""
    if size is None:
        return ops.randint.default(low, tuple(high), **_kw(dtype, device, layout, pin_memory))
    if high is None:
        raise type_error("randint", "high", "int", high, 2)
    if generator is not None:
        return ops.randint.low_generator(low, high, tuple(size), generator=generator,
                                         **_kw(dtype, device, layout, pin_memory))
    return ops.randint.low(low, high, tuple(size), **_kw(dtype, device, layout, pin_memory))


@factory
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    """Uninitialised tensor with the given sizes and strides (elements), as
    ``torch.empty_strided``. RuntimeError when their lengths differ or a size is negative."""
    kw = _kw(dtype, device, layout, pin_memory)
    return ops.empty_strided.default(tuple(size), tuple(stride), **kw)


def _like_kwargs(dtype, device, memory_format, layout=None, pin_memory=None):
    kw = _kw(dtype, device, layout, pin_memory)
    kw["memory_format"] = memory_format
    return kw


@factory
def empty_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
    """Uninitialised tensor like ``input`` (strides preserved for dense inputs, as PyTorch)."""
    kw = _like_kwargs(dtype, device, memory_format, layout, pin_memory)
    return ops.empty_like.default(input, **kw)


@factory
def zeros_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
    """Zeros with ``input``'s shape, dtype, device and (dense) strides (``torch.zeros_like``)."""
    kw = _like_kwargs(dtype, device, memory_format, layout, pin_memory)
    return ops.zeros_like.default(input, **kw)


@factory
def ones_like(input, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """Ones with ``input``'s shape, dtype, device and (dense) strides (``torch.ones_like``)."""
    kw = _like_kwargs(dtype, device, memory_format, layout, pin_memory)
    return ops.ones_like.default(input, **kw)


@factory
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
              memory_format=None):
    """``fill_value`` with ``input``'s shape, dtype, device and strides (``torch.full_like``)."""
    return ops.full_like.default(input, fill_value,
                                 **_like_kwargs(dtype, device, memory_format, layout, pin_memory))


@factory
def rand_like(input, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """Uniform [0, 1) samples shaped like ``input`` (``torch.rand_like``)."""
    kw = _like_kwargs(dtype, device, memory_format, layout, pin_memory)
    return ops.rand_like.default(input, **kw)


@factory
def randn_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
    """Standard normal samples shaped like ``input`` (``torch.randn_like``)."""
    kw = _like_kwargs(dtype, device, memory_format, layout, pin_memory)
    return ops.randn_like.default(input, **kw)


# -- Tensor.new_*: dtype and device default to self's ---------------------------------------------
def _size_arg(fname, size) -> tuple:
    """``new_full``/``new_empty_strided``'s ``size``: a sequence of ints, as PyTorch's parser."""
    if not _is_seq(size):
        raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    return size_args(tuple(size)) if size else ()


def _new_sizes(fname, size) -> tuple:
    if not size:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "size"')
    if len(size) == 1 and not _is_seq(size[0]) and not isinstance(size[0], int):
        raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size[0]).__name__}")
    return size_args(size)


def _method(name):
    def install(fn):
        fn.__name__ = fn.__qualname__ = name
        public = factory(fn)
        setattr(Tensor, name, public)
        return public
    return install


@_method("new_empty")
def new_empty(self, *size, dtype=None, layout=None, device=None, pin_memory=None):
    """Uninitialised tensor of ``size``; dtype and device default to ``self``'s (op
    ``new_empty``, which modes see, as PyTorch's ``TorchDispatchMode``)."""
    kw = _kw(dtype, device, layout, pin_memory)
    return ops.new_empty.default(self, _new_sizes("new_empty", size), **kw)


@_method("new_empty_strided")
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      pin_memory=None):
    """Uninitialised tensor with the given sizes and strides; dtype/device from ``self``."""
    return ops.new_empty_strided.default(self, _size_arg("new_empty_strided", size),
                                         tuple(stride), **_kw(dtype, device, layout, pin_memory))


@_method("new_full")
def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    """``fill_value`` in a tensor of ``size`` with ``self``'s dtype (not the value's, unlike
    ``sk.full``) and device. RuntimeError when the value overflows the dtype."""
    kw = _kw(dtype, device, layout, pin_memory)
    return ops.new_full.default(self, _size_arg("new_full", size), fill_value, **kw)


@_method("new_zeros")
def new_zeros(self, *size, dtype=None, layout=None, device=None, pin_memory=None):
    """Zeros of ``size`` with ``self``'s dtype and device (op ``new_zeros``)."""
    kw = _kw(dtype, device, layout, pin_memory)
    return ops.new_zeros.default(self, _new_sizes("new_zeros", size), **kw)


@_method("new_ones")
def new_ones(self, *size, dtype=None, layout=None, device=None, pin_memory=None):
    """Ones of ``size`` with ``self``'s dtype and device (op ``new_ones``)."""
    kw = _kw(dtype, device, layout, pin_memory)
    return ops.new_ones.default(self, _new_sizes("new_ones", size), **kw)


_NEW_TENSOR_COPY = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than "
    "tensor.new_tensor(sourceTensor).")


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """``sk.tensor(data)`` with ``self``'s dtype and device unless given (not inferred from
    ``data``). A Tensor ``data`` warns as PyTorch and is copied (``detach`` + ``_to_copy``); other
    data arrives as ``lift_fresh`` of a constant, as under PyTorch's dispatch modes."""
    dtype = self.dtype if dtype is None else dtype
    device = self.device if device is None else device
    if isinstance(data, Tensor):
        warnings.warn(_NEW_TENSOR_COPY, UserWarning, stacklevel=3)
        out = ops._to_copy.default(ops.detach.default(data), dtype=dt.to_dtype(dtype),
                                   device=device)
        if requires_grad:
            check_requires_grad_dtype(out.dtype)
            out.requires_grad_(True)
        return out
    return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


_new_tensor.__name__ = _new_tensor.__qualname__ = "new_tensor"
Tensor.new_tensor = public_api(_new_tensor)


def _get_device(self) -> int:
    """The device index: -1 on cpu and meta, as PyTorch (a metadata query: no op)."""
    return -1


Tensor.get_device = _get_device


# -- in-place random fills ------------------------------------------------------------------------
def _uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill ``self`` with uniform samples in ``[from, to)`` from ``sk.manual_seed``'s generator
    (values differ from torch's stream); bumps ``_version``. Floating dtypes only
    (NotImplementedError "check_uniform_bounds" not implemented for 'Long'); RuntimeError for
    ``from > to`` or bounds outside the dtype, and for an expanded ``self``. ``from`` may be given
    by keyword (``uniform_(**{"from": 0, "to": 2})``)."""
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if generator is None:   # PyTorch passes generator= only when given
        return ops.uniform_.default(self, from_, to)
    return ops.uniform_.default(self, from_, to, generator=generator)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill ``self`` with normal samples (``mean``, ``std``); bumps ``_version``. RuntimeError
    "normal expects std >= 0.0, but found std -1"; floating dtypes only."""
    if generator is None:
        return ops.normal_.default(self, mean, std)
    return ops.normal_.default(self, mean, std, generator=generator)


_uniform_.__name__ = _uniform_.__qualname__ = "uniform_"
_normal_.__name__ = _normal_.__qualname__ = "normal_"
Tensor.uniform_ = public_api(_uniform_)
Tensor.normal_ = public_api(_normal_)
