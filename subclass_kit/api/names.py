"""Small names ports reach for: ``sk.is_tensor``, ``sk.numel``, ``sk.finfo`` / ``sk.iinfo``,
``sk.strided`` and ``Tensor.layout``, ``Tensor.type()``, and the function forms of the view
methods (``sk.reshape``, ``sk.transpose``, ``sk.permute``, ``sk.squeeze``, ``sk.unsqueeze``,
``sk.flatten``, ``sk.split``, ``sk.chunk``, ``sk.narrow``, ``sk.select``).

Each follows the PyTorch 2.13 function of the same name; the function forms run exactly the
method's implementation, so a handler sees the same op stream as for the method (PyTorch's
``torch.reshape(x, s)`` and ``x.reshape(s)`` dispatch alike too).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._argcheck import type_error
from ..function import public_api
from ..registry import ops
from ..storage import device as _device
from ..layout import layout as _layout_kind, strided as _strided
from ..tensor import Tensor
from . import views as _views
from ._register import method, prop

__all__ = ["is_tensor", "numel", "finfo", "iinfo", "layout", "strided", "reshape", "transpose",
           "permute", "squeeze", "unsqueeze", "flatten", "split", "chunk", "narrow", "select"]


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a ``Tensor`` (subclasses included), as ``torch.is_tensor``."""
    return isinstance(obj, Tensor)


@public_api
def numel(input) -> int:
    """The number of elements of ``input`` (``torch.numel``). Raises TypeError for a
    non-tensor, with PyTorch's parser message."""
    if not isinstance(input, Tensor):
        raise type_error("numel", "input", "Tensor", input, 1)
    return input._layout.numel()


# -- finfo / iinfo -------------------------------------------------------------------------------
def _short(x) -> str:
    """PyTorch's ``%g``-style six significant digits in ``finfo`` / ``iinfo`` reprs."""
    return f"{float(x):g}"


class finfo:
    """Machine limits of a floating dtype (``torch.finfo``): ``bits``, ``eps``, ``max``,
    ``min``, ``tiny`` (= ``smallest_normal``), ``resolution`` (10**-precision) and ``dtype``
    (its name, a str, as PyTorch's). ``finfo()`` describes the default dtype.

    Raises TypeError for a non-floating dtype, with PyTorch's message."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type=None):
        d = dt.get_default_dtype() if type is None else type
        if not isinstance(d, dt.dtype):
            raise TypeError(f"finfo(): argument 'type' (position 1) must be sk.dtype, not "
                            f"{d.__class__.__name__}")
        if not d.is_floating_point:
            raise TypeError("sk.finfo() requires a floating point input type. Use sk.iinfo to "
                            "handle 'sk.finfo'")
        if d is dt.bfloat16:
            # numpy has no bfloat16: float32's exponent range with 8 significant bits.
            self.bits, self.eps, self.resolution = 16, 2.0 ** -7, 0.01
            self.max = float.fromhex("0x1.fep127")
            self.min = -self.max
            self.tiny = self.smallest_normal = 2.0 ** -126
        else:
            info = np.finfo(d.numpy)
            self.bits = int(info.bits)
            self.eps = float(info.eps)
            self.max = float(info.max)
            self.min = float(info.min)
            self.tiny = self.smallest_normal = float(info.smallest_normal)
            self.resolution = 10.0 ** -int(info.precision)   # PyTorch: 10**-digits10
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={_short(self.resolution)}, min={_short(self.min)}, "
                f"max={_short(self.max)}, eps={_short(self.eps)}, "
                f"smallest_normal={_short(self.smallest_normal)}, tiny={_short(self.tiny)}, "
                f"dtype={self.dtype})")

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))


class iinfo:
    """Limits of an integer dtype (``torch.iinfo``): ``bits``, ``max``, ``min`` (ints) and
    ``dtype`` (its name). Raises TypeError for a floating or bool dtype (PyTorch's text)."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type):
        if not isinstance(type, dt.dtype):
            raise TypeError(f"iinfo(): argument 'type' (position 1) must be sk.dtype, not "
                            f"{type.__class__.__name__}")
        if type is dt.bool_:
            raise TypeError("sk.bool is not supported by sk.iinfo")
        if type.is_floating_point:
            raise TypeError("sk.iinfo() requires an integer input type. Use sk.finfo to handle "
                            "'sk.iinfo'")
        info = np.iinfo(type.numpy)
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)
        self.dtype = type.name

    def __repr__(self):
        return f"iinfo(min={_short(self.min)}, max={_short(self.max)}, dtype={self.dtype})"

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))


# -- layouts -------------------------------------------------------------------------------------
# ``sk.layout`` / ``sk.strided`` live in layout.py (factory kernels check ``layout=`` with them).
layout, strided = _layout_kind, _strided


@prop("layout")
def _layout(self):
    """``sk.strided`` for every tensor (PyTorch's ``Tensor.layout`` of a dense tensor)."""
    return strided


# -- Tensor.type -----------------------------------------------------------------------------
_BY_LEGACY = {d.legacy_name: d for d in dt.ALL_DTYPES}
_PREFIXES = ("sk.", "subclass_kit.", "torch.")


def type_name(t: Tensor) -> str:
    """``sk.FloatTensor`` for a float32 cpu tensor, ``sk.meta.FloatTensor`` on meta: PyTorch's
    ``torch.FloatTensor`` names with our ``sk.`` prefix (docs/differences.md)."""
    dev = t._storage.device.type
    return f"sk.{t._dtype.legacy_name}" if dev == "cpu" else f"sk.{dev}.{t._dtype.legacy_name}"


def _parse_type_name(name: str):
    """(dtype, device) of ``'sk.FloatTensor'`` / ``'torch.meta.LongTensor'``... Raises
    ValueError "invalid type: 'foo'" as PyTorch."""
    for p in _PREFIXES:
        if name.startswith(p):
            rest = name[len(p):]
            dev, _, legacy = rest.rpartition(".")
            if legacy in _BY_LEGACY and dev in ("", "cpu", "meta"):
                return _BY_LEGACY[legacy], _device(dev or "cpu")
    raise ValueError(f"invalid type: {name!r}")


@method("type")
def type_(self, dtype=None, non_blocking=False, **kwargs):
    """``x.type()``: the type name (:func:`type_name`). ``x.type(dtype)`` or
    ``x.type('sk.DoubleTensor')`` (``torch.``-prefixed names accepted): ``self`` when nothing
    changes, else a copy through ``_to_copy`` (``dtype=`` only for a dtype; ``dtype=`` and
    ``device=`` for a name, as PyTorch).

    Raises ValueError for an unknown name."""
    if dtype is None:
        if kwargs:
            raise TypeError(f"type() got unexpected keyword arguments {sorted(kwargs)}")
        return type_name(self)
    if isinstance(dtype, str):
        d, dev = _parse_type_name(dtype)
        if d is self._dtype and dev is self._storage.device:
            return self
        return ops._to_copy.default(self, dtype=d, device=dev)
    d = dt.to_dtype(dtype)
    if d is self._dtype:
        return self
    return ops._to_copy.default(self, dtype=d)


# -- function forms of the view methods -----------------------------------------------------------
def _impl(public):
    return getattr(public, "__wrapped_impl__", public)


@public_api
def reshape(input, shape):
    """``torch.reshape``: ``input.reshape(shape)``; ``shape`` a tuple or list."""
    return _impl(_views.reshape)(input, shape)


@public_api
def transpose(input, dim0, dim1):
    """``torch.transpose``: the view ``transpose.int``."""
    return ops.transpose.int(input, dim0, dim1)


@public_api
def permute(input, dims):
    """``torch.permute``: the view ``permute`` with ``dims`` a tuple or list."""
    return _impl(_views.permute)(input, dims)


_ALL = object()


@public_api
def squeeze(input, dim=_ALL):
    """``torch.squeeze``: every size-1 dim, one dim, or a tuple of dims (a view)."""
    if dim is _ALL:
        return _impl(_views.squeeze)(input)
    return _impl(_views.squeeze)(input, dim)


@public_api
def unsqueeze(input, dim):
    """``torch.unsqueeze``: a size-1 dim inserted at ``dim`` (a view)."""
    return ops.unsqueeze.default(input, dim)


@public_api
def flatten(input, start_dim=0, end_dim=-1):
    """``torch.flatten``: dims ``start_dim..end_dim`` merged (a view when strides allow)."""
    return ops.flatten.using_ints(input, start_dim, end_dim)


@public_api
def split(tensor, split_size_or_sections, dim=0):
    """``torch.split``: a tuple of views of ``split_size`` (int) or the listed sizes."""
    return _impl(_views.split)(tensor, split_size_or_sections, dim)


@public_api
def chunk(input, chunks, dim=0):
    """``torch.chunk``: at most ``chunks`` views along ``dim`` (``split.Tensor``)."""
    return _impl(_views.chunk)(input, chunks, dim)


@public_api
def narrow(input, dim, start, length):
    """``torch.narrow``: ``length`` elements from ``start`` along ``dim`` (``slice.Tensor``)."""
    return _impl(_views.narrow)(input, dim, start, length)


@public_api
def select(input, dim, index):
    """``torch.select``: the view at ``index`` along ``dim``, that dim removed."""
    return _impl(_views.select)(input, dim, index)
