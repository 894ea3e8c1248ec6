"""The subclass hook registries: which Tensor subclasses take part in which dispatch level.

``Tensor.__init_subclass__`` files each subclass by its two hooks, and the hot paths read these
sets instead of looking the hooks up on every call:

- ``dispatch.DISPATCH_TYPES``: subclasses overriding ``__tensor_dispatch__``;
- ``function.FUNCTION_TYPES``: subclasses taking part in the function level (all, unless
  ``__tensor_function__ = sk.disabled_tensor_function``);
- ``function.DEFAULT_FUNCTION_TYPES``: those among them keeping Tensor's default
  ``__tensor_function__`` (results keep the subclass), which the hot paths run inline;
- ``function.INLINE_FUNCTION_TYPES``: those among them also keeping Tensor's
  ``__tensor_dispatch__`` (``op_method`` runs both levels inline for them).

PyTorch looks ``__torch_function__`` / ``__torch_dispatch__`` up at each call; Tensor's
metaclass gives the same answers by refiling a class (and its subclasses) whenever one of the
two hooks is assigned or deleted on it after the class was made.
"""

from __future__ import annotations

import functools
import inspect

from .dispatch import DISPATCH_TYPES
from .function import DEFAULT_FUNCTION_TYPES, FUNCTION_TYPES, INLINE_FUNCTION_TYPES
from .mode import check_hook_names

__all__ = ["TensorType", "register_hooks", "file_new_class", "bind_plain_hook"]

_HOOKS = ("__tensor_function__", "__tensor_dispatch__")
_TORCH_NAMES = (("__torch_function__", "__tensor_function__"),
                ("__torch_dispatch__", "__tensor_dispatch__"))


class TensorType(type):
    """Tensor's metaclass: refiles a class in the hook registries when one of its hooks is
    assigned or deleted."""

    def __setattr__(cls, name, value):
        if name in _HOOKS:
            value = bind_plain_hook(value)
        super().__setattr__(name, value)
        if name in _HOOKS:
            _register_hooks_below(cls)

    def __delattr__(cls, name):
        super().__delattr__(name)
        if name in _HOOKS:
            _register_hooks_below(cls)


def _register_hooks_below(cls):
    todo = [cls]
    while todo:
        c = todo.pop()
        register_hooks(c)
        todo.extend(c.__subclasses__())


_BUILTIN = None    # (default function hook, default dispatch hook, disabled function hook)


def file_new_class(cls):
    """File a newly made subclass. A class that overrides ``__tensor_dispatch__`` while its
    ``__tensor_function__`` is still Tensor's default gets ``disabled_tensor_function``, as
    PyTorch 2.x does for ``__torch_dispatch__`` subclasses when the class is created (so
    results come from the dispatch handler alone). A class defining PyTorch's hook names
    (``__torch_dispatch__``) instead of ours raises TypeError."""
    check_hook_names(cls, _TORCH_NAMES)
    for name in _HOOKS:
        hook = cls.__dict__.get(name)
        if inspect.isfunction(hook):
            type.__setattr__(cls, name, bind_plain_hook(hook))
    default_tf, default_td, disabled_tf = _builtin_hooks()
    if (getattr(cls.__tensor_dispatch__, "__func__", None) is not default_td
            and getattr(cls.__tensor_function__, "__func__", None) is default_tf):
        from .tensor import disabled_tensor_function
        cls.__tensor_function__ = disabled_tensor_function     # refiles cls (TensorType)
    register_hooks(cls)


def bind_plain_hook(hook):
    """A hook defined as a plain function (no ``@classmethod``) made into a classmethod that
    calls it as PyTorch does: PyTorch looks the hook up on the first overloaded *argument*, so
    the function receives, as ``self``, the first argument (in ``args``, then ``kwargs``,
    looking one level into lists and tuples) whose type is exactly the class, followed by
    ``func, types, args, kwargs`` (all positional). Other values are returned unchanged."""
    if not inspect.isfunction(hook):
        return hook

    def plain_hook(cls, func, types, args=(), kwargs=None):
        return hook(_first_instance(cls, args, kwargs), func, types, args, kwargs)

    functools.update_wrapper(plain_hook, hook)
    return classmethod(plain_hook)


def _first_instance(cls, args, kwargs):
    for a in (*args, *kwargs.values()) if kwargs else args:
        if type(a) is cls:
            return a
        if type(a) is list or type(a) is tuple:
            for x in a:
                if type(x) is cls:
                    return x
    return cls      # no instance among the arguments (a mode forwarded the types): the class


def _builtin_hooks():
    """(default function hook, default dispatch hook, disabled function hook) as functions."""
    global _BUILTIN
    if _BUILTIN is None:
        from .tensor import Tensor, disabled_tensor_function   # tensor.py imports this module
        _BUILTIN = (Tensor.__dict__["__tensor_function__"].__func__,
                    Tensor.__dict__["__tensor_dispatch__"].__func__,
                    disabled_tensor_function.__func__)
    return _BUILTIN


def register_hooks(cls):
    """File ``cls`` in exactly the registries its two hooks call for (``Tensor`` itself in
    none). Membership is judged against the hooks Tensor was defined with."""
    from .tensor import Tensor
    if cls is Tensor:
        return
    default_tf, default_td, disabled_tf = _builtin_hooks()
    tf = getattr(cls.__tensor_function__, "__func__", None)
    td = getattr(cls.__tensor_dispatch__, "__func__", None)
    for registry, member in ((DISPATCH_TYPES, td is not default_td),
                             (FUNCTION_TYPES, tf is not disabled_tf),
                             (DEFAULT_FUNCTION_TYPES, tf is default_tf),
                             (INLINE_FUNCTION_TYPES, tf is default_tf and td is default_td)):
        if member:
            registry.add(cls)
        else:
            registry.discard(cls)
