"""Attach public API callables to ``Tensor``."""

from __future__ import annotations

from ..function import op_method, public_api
from ..tensor import Tensor


def method(*names, op=None):
    """Decorator: wrap with ``public_api`` and install as ``Tensor.<name>`` for each name.
    ``op``: the method is exactly ``op(self, *args)``, so it may use ``op_method``'s direct
    path to the kernel when nothing can intercept the call."""
    def deco(fn):
        public = public_api(fn) if op is None else op_method(op, fn, (names or (fn.__name__,))[0])
        if names:
            # Handlers see ``func.__name__`` as PyTorch's: "__getitem__", "float".
            public.__name__ = public.__qualname__ = names[0]
        for name in names or (fn.__name__,):
            setattr(Tensor, name, public)
        return public
    return deco


def prop(name):
    """Decorator: a public_api property getter installed as ``Tensor.<name>``."""
    def deco(fn):
        public = public_api(fn)
        setattr(Tensor, name, property(public))
        return public
    return deco


def size_args(args) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all mean the shape (2, 3).

    Raises TypeError for an element that is not an integer (bool and float included), as
    PyTorch's argument parser does for ``int[]`` arguments."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    for s in args:
        if s.__class__ is not int:
            return _checked_ints(args)
    return tuple(args)


def _checked_ints(args) -> tuple:
    out = []
    for i, s in enumerate(args):
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {i}")
        out.append(s.__index__())
    return tuple(out)
