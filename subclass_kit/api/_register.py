"""Attach public API callables to ``Tensor``."""

from __future__ import annotations

from ..function import public_api
from ..tensor import Tensor


def method(*names):
    """Decorator: wrap with ``public_api`` and install as ``Tensor.<name>`` for each name."""
    def deco(fn):
        public = public_api(fn)
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
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all mean the shape (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)
