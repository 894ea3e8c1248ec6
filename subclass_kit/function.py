"""The function level: ``__tensor_function__`` on modes and subclasses (PyTorch's
``__torch_function__``, NEP 18's ``__array_function__``).

Every public API callable (``Tensor`` methods and ``sk.*`` functions) is wrapped by
:func:`public_api`. With no function mode active and no Tensor subclass among the arguments the
wrapper calls the implementation directly (one thread-local read and one type check per
argument); otherwise function modes run innermost first, then subclass handlers (subclasses
before superclasses, else left to right, each type once), each able to decline with
``NotImplemented``. When all decline: ``TypeError`` naming the function and every handler.
"""

from __future__ import annotations

import functools

from ._argcheck import explain
from ._state import flags, tls
from .dispatch import (DISPATCH_TYPES, _handler_name, _order_types, _record_view_op, dispatch,
                       single_type)
from .registry import overload_of

__all__ = ["public_api", "op_method", "FUNCTION_TYPES", "DEFAULT_FUNCTION_TYPES",
           "INLINE_FUNCTION_TYPES", "handle_function", "DisableTensorFunction",
           "DisableTensorFunctionSubclass"]

# Tensor subclasses taking part in the function level (all subclasses, unless they set
# ``__tensor_function__ = sk.disabled_tensor_function``). Filled by Tensor.__init_subclass__.
FUNCTION_TYPES: set = set()
# The subclasses among them whose ``__tensor_function__`` is Tensor's default (the class
# survives ops); handle_function runs that default inline for them.
DEFAULT_FUNCTION_TYPES: set = set()
# Those among them that also keep Tensor's ``__tensor_dispatch__``: op_method runs both levels
# inline for them (one set lookup on its hot path).
INLINE_FUNCTION_TYPES: set = set()


def public_api(impl):
    """Wrap ``impl`` so that modes and subclasses can intercept it at the function level."""

    @functools.wraps(impl)
    def public(*args, **kwargs):
        if flags.interceptors and tls.function_modes:
            return handle_function(public, impl, args, kwargs)
        for a in args:
            t = type(a)
            if t in FUNCTION_TYPES or ((t is list or t is tuple) and _holds_function_type(a)):
                return handle_function(public, impl, args, kwargs)
        if kwargs:
            for a in kwargs.values():
                t = type(a)
                if t in FUNCTION_TYPES or ((t is list or t is tuple)
                                           and _holds_function_type(a)):
                    return handle_function(public, impl, args, kwargs)
        try:    # zero-cost until it raises: Note [Argument types are checked on the failure path]
            return impl(*args, **kwargs)
        except _EXPLAINED as e:
            _raise_explained(public, impl, args, kwargs, e)

    public.__wrapped_impl__ = impl
    return public


def _holds_function_type(items) -> bool:
    """Whether a list/tuple argument (``sk.cat([a, b])``) holds a function-level subclass."""
    for x in items:
        if type(x) in FUNCTION_TYPES:
            return True
    return False


def _function_types(args, kwargs) -> tuple:
    found = []
    for a in args:
        _add_function_type(a, found)
    if kwargs:
        for a in kwargs.values():
            _add_function_type(a, found)
    if not found:
        return ()
    return _order_types(found) if len(found) > 1 else tuple(found)


def _add_function_type(a, found):
    t = type(a)
    if t in FUNCTION_TYPES:
        if t not in found:
            found.append(t)
    elif t is list or t is tuple:
        for x in a:
            tx = type(x)
            if tx in FUNCTION_TYPES and tx not in found:
                found.append(tx)


def handle_function(public, impl, args, kwargs):
    """Run function modes, then subclass ``__tensor_function__`` handlers, then ``impl``."""
    st = tls.__dict__          # this thread's state: one thread-local lookup
    if st["function_disabled"]:
        return _run_impl(public, impl, args, kwargs)
    stack = st["function_modes"]
    if st["function_subclass_disabled"]:
        types = ()
    else:
        inputs = args if not kwargs else (*args, *kwargs.values())
        types = single_type(inputs, FUNCTION_TYPES)
        if types is None:
            types = _function_types(args, kwargs)
        elif types and not stack:
            cls = types[0]
            if cls in DEFAULT_FUNCTION_TYPES:
                # One subclass with the default __tensor_function__ and no mode left, so the
                # default would call ``impl`` itself: run it here with subclass handling off
                # and convert the results. Fresh plain-Tensor results get their class swapped
                # in place (no new object).
                st["function_subclass_disabled"] = True
                try:
                    ret = impl(*args, **kwargs)
                finally:
                    st["function_subclass_disabled"] = False
                return result_as(ret, cls, inputs)
    tried = []
    for i in range(len(stack) - 1, -1, -1):
        mode = stack[i]
        st["function_modes"] = stack[:i]
        try:
            res = mode.__tensor_function__(public, types, args, kwargs)
        finally:
            st["function_modes"] = stack
        if res is not NotImplemented:
            return res
        tried.append(mode)
    for t in types:
        res = t.__tensor_function__(public, types, args, kwargs)
        if res is not NotImplemented:
            return res
        tried.append(t)
    if tried:
        if getattr(public, "__name__", None) in _BINARY_OPERATORS:
            # Python then tries the other operand and raises its own "unsupported operand"
            # TypeError (``==`` falls back to identity), as PyTorch's operators do.
            return NotImplemented
        lines = "\n".join(f"  - {_handler_name(h)}" for h in tried)
        raise TypeError(f"Multiple dispatch failed for '{_public_name(public)}'; all "
                        f"__tensor_function__ handlers returned NotImplemented:\n\n{lines}\n")
    return _run_impl(public, impl, args, kwargs)


def _run_impl(public, impl, args, kwargs):
    try:
        return impl(*args, **kwargs)
    except _EXPLAINED as e:
        _raise_explained(public, impl, args, kwargs, e)


class _FunctionLevelOff:
    """Base of the two context managers below: sets one thread-local flag for the block and
    restores its previous value on exit (nesting works; ``__enter__`` returns None, as
    PyTorch's)."""

    _flag = ""

    def __enter__(self):
        self._prev = getattr(tls, self._flag)
        setattr(tls, self._flag, True)

    def __exit__(self, *exc):
        setattr(tls, self._flag, self._prev)
        return False


class DisableTensorFunction(_FunctionLevelOff):
    """Inside the block public API calls skip the whole function level: no function mode and
    no subclass ``__tensor_function__`` runs, the implementation runs directly, and its Tensor
    results stay plain (PyTorch's ``torch._C.DisableTorchFunction``). Modes entered inside the
    block do not run either; dispatch modes and ``__tensor_dispatch__`` still do.

    >>> class Loud(sk.Tensor):
    ...     @classmethod
    ...     def __tensor_function__(cls, func, types, args=(), kwargs=None):
    ...         with sk.DisableTensorFunction():
    ...             return func(*args, **(kwargs or {}))      # no recursion
    >>> type(sk.ones(2).as_subclass(Loud) + 1).__name__
    'Tensor'
    """

    _flag = "function_disabled"


class DisableTensorFunctionSubclass(_FunctionLevelOff):
    """Inside the block subclass ``__tensor_function__`` handlers are skipped (function modes
    still run), so a handler can call the default implementation without recursing; results
    are plain Tensors (PyTorch's ``torch._C.DisableTorchFunctionSubclass``)."""

    _flag = "function_subclass_disabled"


# Failures that may come from a wrong-typed argument (NotImplementedError never does).
_EXPLAINED = (TypeError, ValueError, AttributeError, RuntimeError, IndexError, OverflowError)


def _raise_explained(public, impl, args, kwargs, error):
    """Re-raise ``error`` of a public call, as PyTorch's parser TypeError when an argument has
    the wrong type (Note [Argument types are checked on the failure path])."""
    if not isinstance(error, NotImplementedError):
        better = explain(getattr(public, "__name__", ""), impl, args, kwargs)
        if better is not None:
            raise better from None
    raise error


def _public_name(public) -> str:
    """``sk.cat``, ``sk.Tensor.__setitem__``: where ``public`` is reachable (PyTorch's
    ``resolve_name``); a function that is also a method is named as the function."""
    import subclass_kit
    name = getattr(public, "__name__", None)
    if name is None:
        return repr(public)
    if getattr(subclass_kit, name, None) is public:
        return f"sk.{name}"
    attr = subclass_kit.Tensor.__dict__.get(name)
    if attr is public or getattr(attr, "fget", None) is public:
        return f"sk.Tensor.{name}"
    return getattr(public, "__qualname__", name)


_BINARY_OPERATORS = frozenset(
    f"__{p}{name}__" for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                   "matmul", "and", "or", "xor", "lshift", "rshift")
    for p in ("", "r", "i")) | {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}


def result_as(ret, cls, inputs):
    """The default ``__tensor_function__``'s result conversion: Tensor results become ``cls``.
    In-place ops return their (``cls``) self unchanged; a fresh plain result gets its class
    swapped in place (no new object); anything else goes through ``tensor._convert``."""
    rc = ret.__class__
    if rc is cls:
        return ret
    if _tensor is None:
        _bind_tensor()
    if rc is _tensor:
        for a in inputs:
            if a is ret:
                break
        else:
            try:
                ret.__class__ = cls
                return ret
            except TypeError:
                pass
    return _convert(ret, cls, inputs)


_tensor = None     # tensor.Tensor and tensor._convert, bound on first use


def _bind_tensor():
    # tensor.py imports this module, so its names are bound on first use.
    global _tensor, _convert
    from .tensor import Tensor, _convert
    _tensor = Tensor


_NUMBERS = frozenset({int, float, bool})
# Keyword arguments of kernel calls only: handlers get a fresh dict each call, as they may
# change it.
_NO_KWARGS: dict = {}


def op_method(op, impl, name: str, reflected: bool = False, scalar_op=None):
    """The public method ``name`` whose implementation ``impl`` is ``op(self, *args)`` (or
    ``op(other, self)`` when ``reflected``): Tensor operators and simple methods on the hot path.
    ``scalar_op``: the overload ``impl`` calls instead when the first of ``args`` (``other``) is
    a Python number (PyTorch's Scalar overloads: ``x > 0`` is ``gt.Scalar``); both compute with
    the same kernel.

    When nothing can intercept the call -- ``self`` and the other arguments are plain Tensors or
    Python numbers, and no function mode, dispatch mode or dispatch trace is active -- it goes
    straight to the op's kernel (one Python frame instead of four). With plain operands under a
    mode or trace it enters the dispatcher itself (function modes first), skipping ``impl`` and
    ``OpOverload.__call__``. A ``self`` of a direct subclass keeping the default
    ``__tensor_function__`` (no mode active, no ``__tensor_dispatch__``, other operands plain,
    of its class or numbers) takes the same kernel path and gets its result as that class, as
    the default handler would. Otherwise it behaves exactly like a ``public_api`` method
    (``func`` seen by handlers is this method).
    """
    op = overload_of(op)            # a packet: the overload its call runs
    tensor_cls = _tensor_cls()
    resolve = op._resolve_kernel
    # Ops that neither mutate nor need the dispatcher's view bookkeeping beyond
    # ``_record_view_op`` run their device's kernel right here (no version layer to apply).
    kernels = op._kernels
    direct = op._plain and op.decomposition is None and op._device_arg == 0
    view_op = op if op._view_name is not None else None
    # Binary operators turn a TypeError of the dispatcher (every mode declined) into
    # NotImplemented, as PyTorch's do; ``impl`` does the same on the other paths. (Reflected
    # methods are all binary operators.)
    binary = name in _BINARY_OPERATORS
    # With an autograd layer installed, a method calls its op whenever the call could reach
    # the layer, a mode or a trace (Note [Autograd layer]: autograd first). Under ``no_grad``
    # and below the layer, ``OpOverload.__call__`` would skip the layer: the kernel path below
    # gives the same result without it (an optimizer's update, a backward's ops).

    def slow(args, kwargs):
        if tls.function_modes:
            return handle_function(method, impl, args, kwargs)
        if _function_types(args, kwargs):
            return handle_function(method, impl, args, kwargs)
        try:
            return impl(*args, **kwargs)
        except _EXPLAINED as e:
            _raise_explained(method, impl, args, kwargs, e)

    number_op = scalar_op if scalar_op is not None else op
    # a number operand computes with the Scalar overload's kernel (its values may differ:
    # ``pow.Tensor_Scalar``'s products, ``pow.Scalar``'s contiguous result)
    number_resolve = number_op._resolve_kernel
    number_kernels = number_op._kernels

    if reflected:
        def method(self, other):
            cls = self.__class__
            if other.__class__ in _NUMBERS:
                if cls is tensor_cls:
                    if flags.interceptors:
                        # a mode or trace somewhere: function modes first, else the
                        # dispatcher with no overriding types (what impl -> op() would do)
                        st = tls.__dict__
                        if st["function_modes"]:
                            return handle_function(method, impl, (self, other), {})
                        if flags.autograd is None and (st["dispatch_modes"]
                                                       or st["trace"] is not None):
                            if number_op.decomposition is not None:
                                return number_op(other, self)
                            try:
                                return dispatch(number_op, (other, self), {}, ())
                            except TypeError:
                                return NotImplemented
                    if flags.autograd is not None and (
                            flags.interceptors or tls.grad_enabled and not tls.autograd_off):
                        try:
                            return number_op(other, self)
                        except TypeError:
                            return NotImplemented
                    return number_resolve((other, self), _NO_KWARGS)
                if (cls in INLINE_FUNCTION_TYPES and not flags.interceptors
                        and flags.autograd is None and not tls.function_subclass_disabled):
                    # the default __tensor_function__, inline (as handle_function runs it)
                    return result_as(number_resolve((other, self), _NO_KWARGS), cls,
                                     (self, other))
            if cls in FUNCTION_TYPES:     # a subclass: its handler decides
                return handle_function(method, impl, (self, other), {})
            return slow((self, other), {})
    else:
        def method(self, *args, **kwargs):
            cls = self.__class__
            if kwargs:
                if cls in FUNCTION_TYPES:
                    return handle_function(method, impl, (self,) + args, kwargs)
                return slow((self,) + args, kwargs)
            if cls is tensor_cls:
                for a in args:
                    if a.__class__ is not tensor_cls and a.__class__ not in _NUMBERS:
                        return slow((self,) + args, kwargs)
                if flags.interceptors:
                    # as in the reflected method above
                    st = tls.__dict__
                    if st["function_modes"]:
                        return handle_function(method, impl, (self,) + args, {})
                    if flags.autograd is None and (st["dispatch_modes"]
                                                   or st["trace"] is not None):
                        o = number_op if args and args[0].__class__ in _NUMBERS else op
                        if o.decomposition is not None:
                            return o(self, *args)
                        if binary:
                            try:
                                return dispatch(o, (self,) + args, {}, ())
                            except TypeError:
                                return NotImplemented
                        return dispatch(o, (self,) + args, {}, ())
            elif cls in FUNCTION_TYPES:
                # A subclass: its handler decides, unless it keeps the default
                # __tensor_function__, which then runs here (as handle_function runs it).
                if (cls not in INLINE_FUNCTION_TYPES or flags.interceptors
                        or flags.autograd is not None or tls.function_subclass_disabled):
                    return handle_function(method, impl, (self,) + args, kwargs)
                for a in args:
                    c = a.__class__
                    if c is not cls and c is not tensor_cls and c not in _NUMBERS:
                        return handle_function(method, impl, (self,) + args, kwargs)
            else:
                return slow((self,) + args, kwargs)
            if flags.autograd is not None and (flags.interceptors or tls.grad_enabled
                                               and not tls.autograd_off):
                o = number_op if args and args[0].__class__ in _NUMBERS else op
                if binary:
                    try:
                        return o(self, *args)
                    except TypeError:
                        return NotImplemented
                return o(self, *args)
            # Operands are plain tensors, numbers or (default handler) ``cls`` tensors.
            number = scalar_op is not None and args and args[0].__class__ in _NUMBERS
            kernel = ((number_kernels if number else kernels).get(self._storage.device.type)
                      if direct else None)
            if kernel is not None:
                out = kernel(self, *args)
                if view_op is not None:
                    _record_view_op(view_op, out)
            else:
                out = (number_resolve if number else resolve)((self,) + args, _NO_KWARGS)
            rc = out.__class__
            if rc is cls:
                return out
            if rc is tensor_cls and out is not self:
                # result_as's common case: a fresh plain result takes the class in place
                for a in args:
                    if a is out:
                        break
                else:
                    try:
                        out.__class__ = cls
                        return out
                    except TypeError:
                        pass
            return result_as(out, cls, (self,) + args)
    method.__wrapped_impl__ = impl
    method.__name__ = method.__qualname__ = name
    method.__doc__ = impl.__doc__
    return method


def _tensor_cls():
    from .tensor import Tensor
    return Tensor
