"""The two subclass mechanisms and the aliasing fix-up for wrapper subclasses.

- **Direct ("is-a")**: :func:`make_subclass` makes an instance of ``cls`` that *is* the data:
  same Storage, same version counter, own metadata; kernels run on it directly and the default
  ``__tensor_function__`` keeps the class through ops (PyTorch's ``_make_subclass``).
- **Wrapper ("has-a")**: :func:`make_wrapper_subclass` makes a metadata-only tensor over a
  data-less Storage; the real tensors live in attributes and ``__tensor_dispatch__`` unwraps,
  computes and rewraps (PyTorch's ``_make_wrapper_subclass``). A wrapper must fix storage
  aliasing of view outputs and return ``self`` from in-place ops: :func:`return_and_correct_aliasing`
  does both from the op's schema (SEMANTICS.md §5.3-5.5).

``Tensor.as_subclass`` (an aliasing view of another class) is defined here too.
"""

from __future__ import annotations

from .layout import Layout, checked_numel, contiguous_strides, resolve_negative_strides
from . import _dtype as dt
from .registry import get_kernel
from .storage import Storage, device as _device
from ._state import flags, tls
from .dispatch import DISPATCH_TYPES
from .layout import Size
from .tensor import Tensor, make_view

__all__ = ["make_subclass", "make_wrapper_subclass", "return_and_correct_aliasing",
           "is_traceable_wrapper_subclass", "transform_subclass"]

_new = object.__new__


def _check_cls(cls):
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")


def make_subclass(cls, data: Tensor, requires_grad: bool = False) -> Tensor:
    """A direct ("is-a") subclass instance aliasing ``data``: same Storage and version counter,
    its own sizes/strides (later metadata changes of ``data`` do not reach it), a leaf with
    ``requires_grad`` set from the flag (PyTorch's ``_make_subclass``, a detached alias).

    Like ``data.detach()``, an inference ``data`` made outside inference mode gets a fresh,
    enabled version counter there (PyTorch's loophole, SEMANTICS.md §4.2).

    Raises TypeError when ``cls`` is not a Tensor subclass or ``data`` is not a Tensor;
    RuntimeError when ``data`` is a wrapper subclass of a class ``cls`` does not derive from
    (PyTorch: its TensorImpl already belongs to that Python object), and for ``requires_grad``
    on a non-floating dtype.
    """
    _check_cls(cls)
    if not isinstance(data, Tensor):
        raise TypeError(f"make_subclass(): argument 'data' (position 2) must be Tensor, not "
                        f"{type(data).__name__}")
    _check_not_wrapper(cls, data)
    if requires_grad:
        _check_requires_grad(data._dtype)
    t = _new(cls)
    t._storage = data._storage
    t._layout = data._layout
    t._dtype = data._dtype
    t._vc = data._vc
    t._base = t._np_buf = None
    t._inference = data._inference
    if data._inference and not tls.inference:
        t._vc = [0]
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_subclass(self, cls) -> Tensor:
    """``Tensor.as_subclass``: a ``cls`` alias of this tensor (PyTorch's ``as_subclass``, which
    wraps ``self.alias()``): it shares storage and version counter and is a tracked view
    (``_base`` is this tensor's root base), made without dispatching an op. Attributes set on
    this object are not carried over.

    A tensor whose class has a ``__tensor_dispatch__`` handler gets its alias from that handler
    (``_alias_by_handler``), as PyTorch's ``self.alias()`` reaches the Python key.

    Raises TypeError when ``cls`` is not a Tensor subclass; RuntimeError for a wrapper subclass
    instance and a ``cls`` not derived from its class (as PyTorch)."""
    _check_cls(cls)
    if type(self) in DISPATCH_TYPES:
        return _alias_by_handler(self, cls)
    _check_not_wrapper(cls, self)
    view = make_view(self, self._layout)
    t = _new(cls)
    _copy_slots(view, t)
    t.__dict__.update(view.__dict__)
    if (flags.autograd is not None and tls.grad_enabled and not tls.inference
            and self.requires_grad and t._base is not None):
        flags.autograd.alias_grad_fn(self, t)     # AliasBackward0, as PyTorch's self.alias()
    return t


def _alias_by_handler(self, cls) -> Tensor:
    """``as_subclass`` of a tensor whose class handles dispatch: ``alias.default(self)`` goes to
    the subclass handlers with the dispatch modes stashed (PyTorch's as_subclass turns them
    off; they see nothing), and what the handler returns is the result. PyTorch wraps the
    returned TensorImpl in a ``cls`` object, which is the Python object the handler returned
    (a TensorImpl has one): its class must derive from ``cls``, else RuntimeError."""
    st = tls.__dict__
    modes = st["dispatch_modes"]
    st["dispatch_modes"] = []
    try:
        res = _alias(self)
    finally:
        st["dispatch_modes"] = modes
    if not isinstance(res, cls):
        raise RuntimeError(
            f"Creating a new Tensor subclass {cls.__name__} but the raw Tensor object is already "
            f"associated to a python object of type {type(res).__name__} which is not a "
            "subclass of the requested type")
    return res


def _alias(t):
    from .registry import ops
    return ops.alias.default(t)


def _alias_as(self, cls) -> Tensor:
    """A ``cls`` object for this tensor's state (storage, layout, version counter, view and
    grad state) without its user attributes: how the default ``__tensor_function__`` turns a
    returned input or an object whose class cannot be swapped into the subclass
    (docs/differences.md, "Results of a direct subclass")."""
    t = _new(cls)
    _copy_slots(self, t)
    d = t.__dict__
    for k, v in self.__dict__.items():
        if k in _TENSOR_STATE:
            d[k] = v
    t._np_buf = None
    return t


def _copy_slots(src, dst):
    """The state Tensor keeps in slots (``Tensor.__slots__``), from ``src`` to ``dst``."""
    dst._storage = src._storage
    dst._layout = src._layout
    dst._dtype = src._dtype
    dst._vc = src._vc
    dst._inference = src._inference
    dst._base = src._base
    dst._np_buf = src._np_buf
    if src._np_buf is not None:
        dst._np = src._np


# Instance attributes that are tensor state (set by constructors, views, in-place metadata
# ops); anything else in an instance's __dict__ is a user attribute.
_TENSOR_STATE = frozenset({"_storage", "_layout", "_dtype", "_vc", "grad"}) | frozenset(
    k for k, v in vars(Tensor).items() if k.startswith("_") and not k.startswith("__")
    and not callable(v) and not isinstance(v, property))


def _tensor_new(cls, *args, device=None):
    """``Tensor(...)``/``MySubclass(...)``, PyTorch's legacy constructor ``torch.Tensor(...)``:

    - ``Tensor(other)``: a ``cls`` alias of the tensor ``other`` (``other.as_subclass(cls)``:
      same Storage and version counter, ``_base`` set, dtype kept);
    - ``Tensor(data)`` with a list or tuple of numbers: a copy in the default float dtype;
    - ``Tensor(*sizes)``: an uninitialised tensor of the default float dtype; ``Tensor()`` is
      empty (size 0).

    ``device`` applies to the last two. Prefer ``sk.tensor``/``sk.empty`` and, for a direct
    subclass, ``sk.make_subclass``. Raises TypeError for other argument combinations."""
    from .api.creation import empty, tensor
    if len(args) == 1 and isinstance(args[0], Tensor) and device is None:
        return as_subclass(args[0], cls)
    if len(args) == 1 and isinstance(args[0], (list, tuple)) and not isinstance(args[0], Size):
        out = tensor(args[0], dtype=dt.get_default_dtype(), device=device or "cpu")
    elif all(isinstance(a, int) and not isinstance(a, bool) for a in args) or (
            len(args) == 1 and isinstance(args[0], Size)):
        out = empty(*(args or (0,)), device=device)
    else:
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(
            f"{cls.__name__}() received an invalid combination of arguments - got ({got}); "
            f"expected (), (Tensor other), (int... sizes) or (sequence data). Build tensors "
            f"with sk.tensor(data) or sk.empty(*sizes), direct subclasses with "
            f"sk.make_subclass(cls, data), wrapper subclasses with sk.make_wrapper_subclass")
    return out if cls is Tensor else make_subclass(cls, out)


Tensor.__new__ = staticmethod(_tensor_new)
Tensor.as_subclass = as_subclass
Tensor._alias_as = _alias_as


def _check_not_wrapper(cls, data):
    # A wrapper's data-less TensorImpl is owned by its Python object: PyTorch refuses to give
    # it a second one of an unrelated class (an instance of it would hold no data at all).
    if data._storage._dataless and not issubclass(cls, type(data)):
        raise RuntimeError(
            f"Creating a new Tensor subclass {cls.__name__} but the raw Tensor object is already "
            f"associated to a python object of type {type(data).__name__} which is not a "
            "subclass of the requested type")


def _check_requires_grad(dtype):
    if not dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")


def make_wrapper_subclass(cls, size, strides=None, storage_offset=0, dtype=None, device=None,
                          requires_grad=False, *, memory_format=None, layout=None,
                          pin_memory=False, dispatch_sizes_strides_policy=None) -> Tensor:
    """A wrapper ("has-a") subclass instance: metadata only, over a data-less Storage of the
    geometry's ``nbytes``; ``data_ptr()`` is 0 and data access raises. Inside inference mode the
    wrapper is an inference tensor.

    Geometry as PyTorch's ``_make_wrapper_subclass`` stores it: a negative stride is kept only
    where it cannot matter and otherwise becomes the row-major stride of its position, and the
    storage ``nbytes`` is computed from the strides as given.

    Raises TypeError when ``cls`` does not define ``__tensor_dispatch__`` or ``size``/``strides``
    are not sequences of ints; RuntimeError for a negative size ("numel: integer multiplication
    overflow", PyTorch's text), strides of another length than ``size``, a non-zero
    ``storage_offset`` without ``strides``, and ``requires_grad`` on a non-floating dtype.

    The other keywords of PyTorch's ``_make_wrapper_subclass`` mean what they mean there:
    ``memory_format`` and ``pin_memory`` are accepted and change nothing (PyTorch's wrapper
    strides are row-major unless ``strides`` is given, and it pins no memory); ``layout`` must
    be ``sk.strided`` (the only layout; TypeError otherwise); ``dispatch_sizes_strides_policy``
    ("strides" or "sizes"; ValueError otherwise) makes ``stride()`` / ``is_contiguous()``, and
    for "sizes" also ``size()``, ``dim()``, ``numel()``, ``storage_offset()``, ask the class's
    ``__tensor_dispatch__`` (``subclass_kit/sizes_policy.py``).
    """
    if cls not in DISPATCH_TYPES:
        _check_cls(cls)
        raise TypeError(f"{cls.__name__} must define __tensor_dispatch__")
    # Handlers build a wrapper per op, mostly with a handful of geometries: memoise them.
    try:
        geometry, extent = _GEOMETRY[size, strides, storage_offset]
    except (KeyError, TypeError):
        geometry, extent = _geometry(size, strides, storage_offset)
    if dtype is None:
        dtype = dt.get_default_dtype()
    elif dtype.__class__ is not dt.dtype:
        dtype = dt.to_dtype(dtype)
    if requires_grad:
        _check_requires_grad(dtype)
    if device.__class__ is not _device:
        device = _device(device or "cpu")
    # Storage(nbytes, device, dataless=True) and make_tensor(storage, layout, dtype, cls),
    # written out: this runs for every output of a wrapper's handler.
    storage = _new(Storage)
    storage._buffer = storage._shadow = None
    storage._nbytes = extent * dtype.itemsize
    storage.device = device
    storage._resizable = True
    storage._dataless = True
    t = _new(cls)
    t._storage = storage
    t._layout = geometry
    t._dtype = dtype
    t._base = t._np_buf = None
    if tls.inference:
        t._vc = None
        t._inference = True
    else:
        t._vc = [0]
        t._inference = False
    if requires_grad:
        t.requires_grad_(True)
    if dispatch_sizes_strides_policy is not None or layout is not None:
        _wrapper_options(t, layout, dispatch_sizes_strides_policy)
    return t


def _wrapper_options(t, layout, policy):
    from .api.names import strided
    from .sizes_policy import apply_policy, check_policy
    if layout is not None and layout is not strided:
        raise TypeError(f"make_wrapper_subclass(): argument 'layout' must be sk.layout "
                        f"(sk.strided), not {type(layout).__name__}")
    check_policy(policy)
    apply_policy(t, policy)


_GEOMETRY: dict = {}


def _geometry(size, strides, storage_offset):
    """``(Layout, storage extent in elements)`` of a wrapper, checked as PyTorch's
    ``_make_wrapper_subclass`` checks it; memoised when every number is a Python int."""
    key = (size, strides, storage_offset)
    size = _int_tuple(size, "size", " (position 2)")
    if storage_offset is None:
        storage_offset = 0
    elif isinstance(storage_offset, bool) or not hasattr(storage_offset, "__index__"):
        raise TypeError(f"make_wrapper_subclass(): argument 'storage_offset' must be int, not "
                        f"{type(storage_offset).__name__}")
    if strides is None:
        # PyTorch sets contiguous sizes and refuses any offset then; 0 is our default.
        if storage_offset:
            raise RuntimeError("setting storage offset without stride not supported")
        checked_numel(size)
        strides = contiguous_strides(size)
    else:
        strides = _int_tuple(strides, "strides", "")
        if len(strides) != len(size):
            raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match "
                               f"dimensionality of strides ({len(strides)})")
        checked_numel(size)
    # The storage is sized from the strides as given (signed, as PyTorch's wrapper does), then
    # the strides are stored as TensorImpl::set_sizes_and_strides stores them.
    extent = Layout(size, strides, int(storage_offset)).storage_extent()
    layout = Layout(size, resolve_negative_strides(size, strides), int(storage_offset))
    if (len(_GEOMETRY) < 4096 and type(key[0]) in (tuple, Size)
            and type(key[1]) in (tuple, type(None)) and type(key[2]) in (int, type(None))
            and all(type(s) is int for s in layout.sizes + layout.strides)):
        _GEOMETRY[key] = (layout, extent)
    return layout, extent


def _int_tuple(value, name, position) -> tuple:
    """``value`` as a tuple of ints, or PyTorch's argument-parser TypeError."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"make_wrapper_subclass(): argument '{name}'{position} must be tuple of "
                        f"ints, not {type(value).__name__}")
    for i, s in enumerate(value):
        if s.__class__ is not int and (isinstance(s, bool) or not hasattr(s, "__index__")):
            raise TypeError(f"make_wrapper_subclass(): argument '{name}'{position} must be tuple "
                            f"of ints, but found element of type {type(s).__name__} at pos {i}")
    return tuple(s.__index__() for s in value)


def is_traceable_wrapper_subclass(t) -> bool:
    """A Tensor subclass instance (not Tensor itself) with ``__tensor_flatten__`` and
    ``__tensor_unflatten__``."""
    return (isinstance(t, Tensor) and type(t) is not Tensor
            and hasattr(t, "__tensor_flatten__") and hasattr(type(t), "__tensor_unflatten__"))


def transform_subclass(t, callback):
    """Flatten ``t``, map ``callback(attr_name, inner)`` over its inner tensors and unflatten
    with the same outer size and stride. Raises AssertionError when the rebuilt tensor's
    shape or stride differ (PyTorch's check)."""
    names, ctx = t.__tensor_flatten__()
    inner = {name: callback(name, getattr(t, name)) for name in names}
    size, stride = t.shape, t.stride()
    out = type(t).__tensor_unflatten__(inner, ctx, size, stride)
    if tuple(out.shape) != tuple(size):
        raise AssertionError(f"Expected return value from {type(t)}__tensor_unflatten__() to have "
                             f"shape equal to {tuple(size)}, but got: {tuple(out.shape)}")
    if tuple(out.stride()) != tuple(stride):
        raise AssertionError(f"Expected return value from {type(t)}__tensor_unflatten__() to have "
                             f"stride equal to {tuple(stride)}, but got: {tuple(out.stride())}")
    return out


def _arg(schema, args, kwargs, index):
    a = schema.arguments[index]
    if index < len(args):
        return args[index]
    return kwargs.get(a.name, a.default_value)


def _share_storage(func, inp, out):
    if type(inp) is not type(out) and (is_traceable_wrapper_subclass(inp)
                                       or is_traceable_wrapper_subclass(out)):
        raise AssertionError(f"Called {func} with input of type {type(inp)}\nand output of type "
                             f"{type(out)}. But expected types to match.")
    out._storage = inp._storage
    out._np_buf = None


def return_and_correct_aliasing(func, args, kwargs, out):
    """Make a wrapper subclass's result honour ``func``'s schema (PyTorch's
    ``return_and_correct_aliasing``, SEMANTICS.md §5.5):

    1. view outputs get their input's Storage object (sizes/strides/offset untouched), so
       ``w[0].untyped_storage() is w.untyped_storage()``;
    2. in-place metadata ops (``t_``, ``transpose_``, ``unsqueeze_``, ``as_strided_``...) are
       replayed on the wrapper's own metadata;
    3. in-place and out= ops return the mutated argument itself.

    Returns what the op should return. Raises RuntimeError for schemas that mix mutable and
    non-mutable returns.
    """
    facts = _ALIAS_FACTS.get(func)
    if facts is None:
        facts = _ALIAS_FACTS[func] = _alias_facts(func.schema)
    view_pairs, multi, mutated_at = facts
    if not view_pairs and mutated_at is None and "inplace_view" not in func.tags:
        return out          # the common case: a functional op
    schema = func.schema
    kwargs = kwargs or {}
    for ai, ri in view_pairs:
        inp = _arg(schema, args, kwargs, ai)
        res = out[ri] if multi else out
        for o in (res if isinstance(res, (list, tuple)) else (res,)):
            if isinstance(o, Tensor) and isinstance(inp, Tensor):
                _share_storage(func, inp, o)
    if "inplace_view" in func.tags:
        self_arg = _arg(schema, args, kwargs, 0)
        get_kernel(func, "meta")(*args, **kwargs) if self_arg._storage.device.type == "meta" \
            else _replay_metadata(func, args, kwargs)
    if mutated_at is None:
        return out
    if mutated_at is _UNSUPPORTED:
        raise RuntimeError(f"Unsupported schema: {schema}")
    mutated = [_arg(schema, args, kwargs, i) for i in mutated_at]
    return mutated[0] if len(mutated) == 1 else tuple(mutated)


# Per op: (view pairs, several returns?, indices of the arguments mutable returns alias, or
# None when no return is mutable, or _UNSUPPORTED when only some are). Schemas are immutable.
_ALIAS_FACTS: dict = {}
_UNSUPPORTED = "unsupported"


def _alias_facts(schema):
    writes = [r.alias is not None and r.alias.is_write for r in schema.returns]
    if not any(writes):
        mutated_at = None
    elif not all(writes):
        mutated_at = _UNSUPPORTED
    else:
        found = []
        for ret in schema.returns:
            for i, a in enumerate(schema.arguments):
                if a.alias is not None and a.alias.alias_sets & ret.alias.alias_sets:
                    found.append(i)
                    break
        mutated_at = tuple(found)
    return tuple(schema.view_pairs), len(schema.returns) > 1, mutated_at


def _replay_metadata(func, args, kwargs):
    # The in-place view kernels only touch metadata (never data), so the cpu kernel can run on
    # a data-less wrapper.
    get_kernel(func, "cpu")(*args, **kwargs)
