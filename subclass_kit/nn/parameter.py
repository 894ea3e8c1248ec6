"""``sk.nn.Parameter``: a tensor that a ``Module`` registers as one of its parameters.

PyTorch's ``torch.nn.Parameter``: a direct ("is-a") subclass sharing the storage of the data it
is made from, ``requires_grad=True`` by default. Like PyTorch's, it opts out of the function
level (``__tensor_function__ = disabled_tensor_function``), so ``p * 2`` and ``p.t()`` are plain
``Tensor``s: an expression of a parameter is not a parameter of any module.

A tensor subclass instance stays of its own class when made a parameter (PyTorch's custom-tensor
path): ``Parameter(Sub(...))`` is a detached ``Sub`` flagged ``_is_param``, and the metaclass
makes ``isinstance(t, Parameter)`` true for such a flagged tensor.
"""

from __future__ import annotations

from .._dtype import dtype as _dtype, get_default_dtype
from .._state import flags
from ..layout import contiguous_strides
from ..storage import META
from ..subclass import make_subclass
from ..hooks import TensorType
from ..tensor import Tensor, disabled_tensor_function

__all__ = ["Parameter", "Buffer", "is_parameter"]


class _ParameterMeta(TensorType):
    """Parameter's metaclass (PyTorch's ``_ParameterMeta``): ``isinstance(t, Parameter)`` is
    also true for a tensor of another class flagged ``_is_param`` (a subclass parameter)."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Parameter and isinstance(instance, Tensor) and getattr(
                instance, "_is_param", False):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A module parameter (PyTorch's ``nn.Parameter``).

    ``Parameter(data=None, requires_grad=True)``: for a plain ``Tensor`` or ``Parameter``
    ``data``, a ``cls`` instance sharing ``data``'s storage and version counter (no copy, and,
    as PyTorch's ``_make_subclass``, no ``detach`` op for a mode to see); ``data=None`` gives an
    empty float tensor. For any other class (a direct or wrapper subclass, or a subclass of
    Parameter) PyTorch's custom-tensor path: ``data.detach().requires_grad_(requires_grad)``,
    flagged ``_is_param = True`` and returned as is, so it keeps its class (``cls`` is not
    used). The result is a leaf.

    Raises TypeError for a non-tensor ``data``; RuntimeError for ``requires_grad=True`` on a
    non-floating ``data``, and when the subclass's ``detach`` returns another class (as
    PyTorch).
    """

    __tensor_function__ = disabled_tensor_function

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..api.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if type(data) is Tensor or type(data) is Parameter:
            return make_subclass(cls, data, requires_grad)     # a detached alias already
        t = data.detach().requires_grad_(requires_grad)
        if type(t) is not type(data):
            raise RuntimeError(
                f"Creating a Parameter from an instance of type {type(data).__name__} requires "
                f"that detach() returns an instance of the same type, but return type "
                f"{type(t).__name__} was found instead. To use the type as a Parameter, please "
                "correct the detach() semantics defined by its __tensor_dispatch__() "
                "implementation.")
        t._is_param = True
        return t

    def __repr__(self):
        from .._repr import tensor_repr
        return "Parameter containing:\n" + tensor_repr(self, plain=type(self) is Parameter)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class Buffer(Tensor):
    """Marks a tensor to register as a module buffer when assigned (PyTorch's ``nn.Buffer``):
    ``Buffer(data, persistent=True)`` returns ``data`` itself, tagged; ``Module.__setattr__``
    registers it with ``register_buffer``."""

    def __new__(cls, data: Tensor, *, persistent: bool = True):
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        t = data.detach()
        t._buffer_persistent = persistent
        return t


def is_parameter(value) -> bool:
    return isinstance(value, Parameter)


def empty_parameter(size: tuple, device=None, dtype=None, requires_grad: bool = True) -> Parameter:
    """``Parameter(sk.empty(size, device=device, dtype=dtype), requires_grad)``: the
    uninitialised parameter an ``sk.nn`` layer creates before ``reset_parameters`` fills it.

    ``size``: a tuple of ints. Same result and errors as the expression above. On the meta
    device with no mode or dispatch trace active (nothing could observe the ``empty`` op)
    and plain non-negative int sizes, the tensor is allocated directly by the kernel's
    allocator (same contiguous strides, overflow check, version counter and inference state)
    instead of dispatching ``empty`` and ``detach``: a 70B model creates ~700 parameters, and
    the two dispatches were a third of building it (``subclass-kit shapes``).
    """
    if (not flags.interceptors and (device is META or device == "meta")
            and (dtype is None or dtype.__class__ is _dtype)
            and all(s.__class__ is int and s >= 0 for s in size)):
        from ..kernels._iter_layout import alloc
        t = alloc(size, contiguous_strides(size), dtype or get_default_dtype(), META)
        return make_subclass(Parameter, t, requires_grad)
    from ..api.creation import empty
    return Parameter(empty(size, device=device, dtype=dtype), requires_grad)
