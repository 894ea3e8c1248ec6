"""The strided ``Tensor``: a ``Storage`` plus a ``Layout``, a dtype and version/view state.

State of a tensor (``_storage``, ``_layout``, ``_dtype``, ``_vc``, ``_inference``, ``_base``
and the cached numpy view ``_np``/``_np_buf`` in ``Tensor.__slots__``, set by every
constructor; rarely-set ones in the instance ``__dict__``, defaulting on the class):

- ``_storage``: the shared ``Storage`` (Note [Views share Storage]);
- ``_layout``: ``Layout(sizes, strides, offset)``, immutable; in-place metadata ops swap it;
- ``_dtype``: an ``sk.dtype``;
- ``_vc``: the version counter, a one-element list shared by an alias family (PyTorch's
  ``VariableVersion``), or ``None`` for inference tensors (Note [Version counters]);
- ``_base``: the root base of a view, ``_creation_meta``: how the view was made (§3.2).

Math and view methods are attached by the op-family modules under ``subclass_kit/api``; this
module holds metadata, data access and the subclass hooks.
"""

from __future__ import annotations

import enum

import numpy as np

from . import _dtype as dt
from ._state import flags, tls
from .function import DEFAULT_FUNCTION_TYPES, public_api, result_as
from .hooks import TensorType, file_new_class
from .layout import Layout, Size
from .dispatch import DISPATCH_TYPES
from .registry import ops
from .storage import CPU, META, Storage

__all__ = ["Tensor", "CreationMeta", "make_tensor", "make_view", "from_numpy",
           "disabled_tensor_function"]


class CreationMeta(enum.IntEnum):
    """How a view was created (PyTorch's ``CreationMeta``); drives autograd's in-place errors."""

    DEFAULT = 0
    IN_CUSTOM_FUNCTION = 1
    MULTI_OUTPUT_NODE = 2
    NO_GRAD_MODE = 3
    INFERENCE_MODE = 4


_DEFAULT = CreationMeta.DEFAULT
_MULTI = CreationMeta.MULTI_OUTPUT_NODE
_NO_GRAD = CreationMeta.NO_GRAD_MODE
_INFERENCE = CreationMeta.INFERENCE_MODE


def _propagate_creation_meta(parent: CreationMeta, new: CreationMeta) -> CreationMeta:
    if new is _DEFAULT or parent is _INFERENCE:
        return parent
    return new


_new = object.__new__
_ONE_ELEMENT = "only one element tensors can be converted to Python scalars"


def make_tensor(storage: Storage, layout: Layout, dtype, cls=None) -> "Tensor":
    """A fresh tensor (not a view) over ``storage``: own version counter, or none inside
    inference mode (then it is an inference tensor). Does not bounds-check: callers do."""
    t = _new(cls or Tensor)
    t._storage = storage
    t._layout = layout
    t._dtype = dtype
    t._base = t._np_buf = None
    if tls.inference:
        t._vc = None
        t._inference = True
    else:
        t._vc = [0]
        t._inference = False
    return t


def make_view(src: "Tensor", layout: Layout, dtype=None, multi_output: bool = False) -> "Tensor":
    """A view of ``src`` with ``layout`` over the same Storage (Note [Views share Storage]).

    Tracked views share ``src``'s version counter and get ``_base`` = the root base; views of
    inference tensors, and views made below autograd (inside a subclass handler), are not
    tracked (PyTorch: no ``_base``, inference views have no counter).
    """
    v = _new(Tensor)
    v._storage = src._storage
    v._layout = layout
    v._dtype = dtype or src._dtype
    v._np_buf = None
    if src._inference:
        v._vc = None
        v._inference = True
        v._base = None
    else:
        v._inference = False
        st = tls.__dict__       # one thread-local lookup for the flags read here and below
        if st["below"]:
            v._vc = [0]
            v._base = None
        else:
            v._vc = src._vc
            v._set_view_meta(src, multi_output, st)
    return v


_BYTE_STRIDES: dict = {}     # (strides in elements, numpy dtype) -> strides in bytes


def _byte_strides(key) -> tuple:
    strides, np_dtype = key
    item = np_dtype.itemsize
    out = tuple([s * item for s in strides])
    if len(_BYTE_STRIDES) < 4096:
        _BYTE_STRIDES[key] = out
    return out


class Tensor(metaclass=TensorType):
    """A strided tensor (PyTorch's ``torch.Tensor``); see the module docstring for its state.

    Build tensors with factories (``sk.tensor``, ``sk.zeros``, ``sk.from_numpy``, ...);
    subclasses with ``sk.make_subclass`` / ``sk.make_wrapper_subclass``.
    """

    # The state every tensor has lives in slots: reads and writes skip the instance dict, and a
    # direct subclass result's ``__class__`` swap (function.result_as) leaves it in place
    # (with a managed dict CPython would first copy every attribute into a new dict). Rarer
    # state keeps class-level defaults in ``__dict__``.
    __slots__ = ("_storage", "_layout", "_dtype", "_vc", "_inference", "_base", "_np",
                 "_np_buf", "__dict__", "__weakref__")

    _creation_meta = None
    _view_op = None         # (forward op name, output index) of a tracked view
    _view_grad = False      # the view was made with grad on from a base requiring grad
    _view_version = 0       # version when the view was made (lazy grad_fn checks, §3.6)
    _requires_grad = False
    _grad = None            # ``grad`` (api/autograd.py)
    _grad_fn = None
    _output_nr = 0          # which output of ``_grad_fn`` this tensor is

    # numpy: let ``ndarray op Tensor`` reach our reflected operators (NEP 13/18 opt-out).
    __array_ufunc__ = None
    __array_function__ = None
    __array_priority__ = 1000

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        file_new_class(cls)

    # -- subclass hooks ---------------------------------------------------------------------
    @classmethod
    def __tensor_function__(cls, func, types, args=(), kwargs=None):
        """Default: run ``func`` and return Tensor results as ``cls`` (PyTorch's default
        ``__torch_function__``). Declines unless ``cls`` is a subclass of every type in
        ``types``."""
        for t in types:
            if not issubclass(cls, t):
                return NotImplemented
        prev = tls.function_subclass_disabled
        tls.function_subclass_disabled = True
        # With no function mode left to consult, the public wrapper would only find the
        # subclass arguments again and call its implementation: call that directly.
        run = func
        if not tls.function_modes:
            run = getattr(func, "__wrapped_impl__", func)
        try:
            ret = run(*args, **(kwargs or {}))
        finally:
            tls.function_subclass_disabled = prev
        # An input returned as the result (``out=``, ``contiguous()``) keeps its own class: the
        # result is a ``cls`` alias of it.
        return _convert(ret, cls, args if not kwargs else (*args, *kwargs.values()))

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        """Default: run the kernel directly on the arguments (no modes, no re-wrapping)."""
        return func._resolve_kernel(args, kwargs or {})

    # -- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._layout.sizes)

    def size(self, dim=None):
        if dim is None:
            return Size(self._layout.sizes)
        return self._layout.sizes[_wrap(dim, len(self._layout.sizes))]

    def stride(self, dim=None):
        if dim is None:
            return self._layout.strides
        return self._layout.strides[_wrap(dim, len(self._layout.sizes))]

    def storage_offset(self) -> int:
        return self._layout.offset

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        """The ``sk.device`` of the storage (cpu or meta)."""
        return self._storage.device

    @property
    def is_meta(self) -> bool:
        return self._storage.device is META

    @property
    def is_cpu(self) -> bool:
        return self._storage.device is CPU

    @property
    def ndim(self) -> int:
        return len(self._layout.sizes)

    def dim(self) -> int:
        return len(self._layout.sizes)

    ndimension = dim

    def numel(self) -> int:
        return self._layout.numel()

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._layout.numel() * self._dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is None or memory_format is contiguous_format:
            return self._layout.is_contiguous()
        if memory_format is channels_last:
            return self._layout.is_channels_last()
        raise RuntimeError(f"is_contiguous: unsupported memory format {memory_format}")

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def untyped_storage(self) -> Storage:
        return self._storage

    def data_ptr(self) -> int:
        """Address of the first element, PyTorch's ``TensorImpl::data()``: 0 for a tensor
        without elements, else the storage's address plus ``storage_offset() *
        element_size()`` -- so a meta view reports its byte offset (its storage's address is
        0), as PyTorch's does. Data-less wrapper subclasses report 0."""
        if self._storage._dataless or not self._layout.numel():
            return 0
        return self._storage.data_ptr() + self._layout.offset * self._dtype.itemsize

    # -- version counter and view tracking --------------------------------------------------
    @property
    def _version(self) -> int:
        if self._vc is None:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc[0]

    @_version.setter
    def _version(self, value):
        raise AttributeError(
            "attribute '_version' of 'subclass_kit.Tensor' objects is not writable")

    def _is_view(self) -> bool:
        return self._base is not None

    def is_inference(self) -> bool:
        return self._inference

    def _set_view_meta(self, src, multi_output: bool, st=None):
        """Record that this tensor is a view of ``src``: ``_base`` (the root), how it was made
        (``_creation_meta``), the version it was made at. ``st``: the thread's state dict."""
        st = st or tls.__dict__
        root = src._base
        if st["inference"]:
            new = _INFERENCE
        elif st["grad_enabled"]:
            new = _MULTI if multi_output else _DEFAULT
            if src._requires_grad or (root is not None and root._requires_grad):
                self._view_grad = True
                if root is not None:  # reading grad_fn raises for a stale view (§3.4)
                    src.grad_fn  # noqa: B018
        else:
            new = _NO_GRAD
        self._view_version = src._vc[0]
        if root is None:
            self._base = src
            self._creation_meta = new
        else:
            self._base = root
            self._creation_meta = _propagate_creation_meta(src._creation_meta, new)

    def _set_view_of(self, src, multi_output: bool = False):
        """Make this (already built) tensor a tracked view of ``src``: shared version counter
        and ``_base``. Used for outputs of view ops resolved by subclass handlers."""
        if src._inference:
            return
        self._vc = src._vc
        if src._base is not None and self._base is src._base:
            return
        self._set_view_meta(src, multi_output)

    # -- data access ------------------------------------------------------------------------
    def _array(self) -> np.ndarray:
        """The numpy view of this tensor's elements (shares memory; cached per buffer)."""
        buf = self._storage._buffer
        if self._np_buf is buf and buf is not None:
            return self._np
        if buf is None:
            if self._storage.device is not META:    # a wrapper's (PyTorch crashes here)
                raise RuntimeError(f"Cannot access the data of a {type(self).__name__} without "
                                   "storage: a wrapper subclass keeps its data in inner tensors, "
                                   "so its ops must go through its __tensor_dispatch__ (not "
                                   "under sk.no_dispatch())")
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        np_dtype = self._dtype.numpy
        if np_dtype is not self._dtype.storage_numpy or self._storage._shadow is not None:
            # Note [Storage dtype and compute dtype]; a cached view of a shadow stays valid.
            buf = self._storage._data(np_dtype is not self._dtype.storage_numpy)
            if buf is self._np_buf:
                return self._np
        layout = self._layout
        sizes = layout.sizes
        if 0 in sizes:
            arr = np.empty(sizes, np_dtype)
        else:
            # Fresh views reach here once each, so the byte strides are memoised.
            key = (layout.strides, np_dtype)
            byte_strides = _BYTE_STRIDES.get(key)
            if byte_strides is None:
                byte_strides = _byte_strides(key)
            arr = np.ndarray(sizes, np_dtype, buf, layout.offset * np_dtype.itemsize,
                             byte_strides)
        self._np = arr
        self._np_buf = buf
        return arr

    def _set_layout(self, layout: Layout):
        """Swap the layout (in-place metadata ops); drops the cached numpy view."""
        self._layout = layout
        self._np_buf = None

    def _check_data(self, what: str):
        if type(self) is not Tensor and type(self) in DISPATCH_TYPES:
            if what == "numpy":
                raise RuntimeError(".numpy() is not supported for tensor subclasses.")
            if what == "tolist":
                raise RuntimeError(".tolist() is not supported for tensor subclasses, got "
                                   f"{type(self).__name__}")
        if self._storage._buffer is None:
            if what == "numpy":
                raise TypeError("can't convert meta device type tensor to numpy. Use "
                                "Tensor.cpu() to copy the tensor to host memory first.")
            if what == "item":
                raise RuntimeError("Tensor.item() cannot be called on meta tensors")
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    @public_api
    def numpy(self, *, force=False) -> np.ndarray:
        """A numpy array sharing this tensor's memory (PyTorch's ``Tensor.numpy``).

        Raises TypeError on meta and bfloat16 tensors, RuntimeError if it requires grad."""
        self._check_data("numpy")
        if self.requires_grad and not force and tls.__dict__["grad_enabled"]:  # as PyTorch
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._dtype.numpy is not self._dtype.storage_numpy:
            raise TypeError(f"Got unsupported ScalarType {self._dtype.legacy_name[:-6]}")
        return self._array()

    @public_api
    def tolist(self):
        self._check_data("tolist")
        return self._array().tolist()

    @public_api
    def item(self):
        # The element count first, then the op modes and subclasses see (PyTorch's order).
        if self._layout.numel() != 1:
            raise RuntimeError(f"a Tensor with {self._layout.numel()} elements cannot be "
                               "converted to Scalar")
        return ops._local_scalar_dense.default(self)

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __bool__(self):
        """The element count first (for meta and wrapper tensors too), then ``item()`` (which
        dispatches, so wrappers answer it; meta raises there), as PyTorch. Raises
        RuntimeError for zero or several elements."""
        n = self._layout.numel()
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        """Raises ValueError unless the tensor has one element (PyTorch's text)."""
        if self._layout.numel() != 1:
            raise ValueError(_ONE_ELEMENT)
        return float(self.item())

    def __int__(self):
        """Raises ValueError unless the tensor has one element (PyTorch's text)."""
        if self._layout.numel() != 1:
            raise ValueError(_ONE_ELEMENT)
        return int(self.item())

    def __index__(self):
        if self._dtype.is_floating_point or self._layout.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __len__(self):
        if not self._layout.sizes:
            raise TypeError("len() of a 0-d tensor")
        return self._layout.sizes[0]

    def __iter__(self):
        if not self._layout.sizes:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    __hash__ = object.__hash__

    def __repr__(self):
        from ._repr import tensor_repr
        return tensor_repr(self)

    # -- grad flags (autograd proper lives in modes/) ---------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Own flag, or the base's for a tracked view (PyTorch's DifferentiableViewMeta)."""
        if self._requires_grad:
            return True
        base = self._base
        return base is not None and base._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(dt.requires_grad_setter_value(self._dtype, value))

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad.__class__ is not bool:
            # PyTorch's argument parser: a truthy str or number must not switch autograd on.
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {type(requires_grad).__name__}")
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference and not tls.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        if self._grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        self._requires_grad = requires_grad
        if requires_grad:
            flags.requires_grad_seen = True
            if flags.autograd is None:      # Note [Autograd layer]: installed on first use
                from .modes.autograd import install
                install()
        return self

    @property
    def grad_fn(self):
        """The node that produced this tensor (None for leaves and without autograd). A view
        whose base requires grad and was mutated since its grad_fn was set gets it regenerated
        (SEMANTICS.md §3.6); for a non-DEFAULT view that raises PyTorch's indirect
        view+in-place error instead (§3.4)."""
        base = self._base
        if base is not None and base._requires_grad and self._vc[0] != self._view_version:
            if self._creation_meta != CreationMeta.DEFAULT:
                from .inplace_checks import view_rebase_message
                raise RuntimeError(view_rebase_message(self, direct=False))
            if flags.autograd is not None:
                return flags.autograd.view_grad_fn(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def data(self) -> "Tensor":
        """An alias with a fresh version counter that is not a view (PyTorch's ``.data``).

        Under a dispatch mode, or for a subclass overriding ``__tensor_dispatch__``, the alias
        is made by ``sk.ops.detach`` through the dispatcher, as PyTorch's
        ``shallow_copy_and_detach`` calls ``detach`` through Python dispatch; a direct subclass
        with the default ``__tensor_function__`` gets a result of its class."""
        cls = type(self)
        if cls is Tensor and not flags.interceptors:
            t = make_tensor(self._storage, self._layout, self._dtype)
        else:
            t = ops.detach.default(self)
            if cls in DEFAULT_FUNCTION_TYPES:
                t = result_as(t, cls, (self,))
        t._inference = self._inference
        t._vc = [0]
        return t

    @data.setter
    def data(self, new: "Tensor"):
        """``x.data = y``: ``x`` takes ``y``'s storage, layout and dtype and keeps its own
        version counter (PyTorch's ``set_data``; its checks: ``inplace_checks.check_set_data``)."""
        from .inplace_checks import check_set_data
        check_set_data(self, new)
        self._storage = new._storage
        self._dtype = new._dtype
        self._set_layout(new._layout)


def _wrap(dim, ndim):
    from .layout import wrap_dim
    return wrap_dim(dim, ndim)


def _convert(ret, cls, args):
    if isinstance(ret, Tensor):
        if isinstance(ret, cls):
            return ret
        if any(ret is a for a in args):
            return ret._alias_as(cls)
        try:
            ret.__class__ = cls
        except TypeError:
            return ret._alias_as(cls)
        return ret
    if isinstance(ret, (list, tuple)) and not isinstance(ret, Size):
        items = [_convert(r, cls, args) for r in ret]
        if hasattr(ret, "_fields"):
            return type(ret)(*items)
        return type(ret)(items)
    return ret


@classmethod
def disabled_tensor_function(cls, func, types, args=(), kwargs=None):
    """Set ``__tensor_function__ = sk.disabled_tensor_function`` on a subclass to skip the
    function level entirely (PyTorch's ``_disabled_torch_function_impl``): results then come
    from ``__tensor_dispatch__`` alone. A subclass that overrides ``__tensor_dispatch__`` and
    not ``__tensor_function__`` gets it when the class is made, as in PyTorch 2.x."""
    return func(*args, **(kwargs or {}))


class _MemoryFormat:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"sk.{self.name}"


contiguous_format = _MemoryFormat("contiguous_format")
channels_last = _MemoryFormat("channels_last")
preserve_format = _MemoryFormat("preserve_format")


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with the numpy array ``a`` (PyTorch's ``torch.from_numpy``).

    Keeps ``a``'s strides. Raises TypeError for unsupported dtypes or non-arrays and
    ValueError for negative strides, as PyTorch does.
    """
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    dtype = dt.from_numpy_dtype(a.dtype)
    item = a.itemsize
    if any(s < 0 for s in a.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making "
            "a copy of your array  with array.copy().) ")
    if any(s % item for s in a.strides):
        raise RuntimeError("given numpy array strides not a multiple of the element byte size. "
                           "Copy the numpy array to reallocate the memory.")
    strides = tuple(s // item for s in a.strides)
    layout = Layout(tuple(a.shape), strides, 0)
    span = layout.storage_extent() * item
    storage = Storage._from_array(a, span)
    return make_tensor(storage, layout, dtype)
