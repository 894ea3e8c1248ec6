"""Custom ops from schema strings (PyTorch's ``torch.library``): ``define``, ``impl`` and
``register_autograd``.

A custom op is an ``OpOverload`` like the built-in ones (a ``CustomOp``): it carries its parsed
schema (alias annotations included), reaches function modes, dispatch modes and subclass
handlers, gets version bumps for its ``(a!)`` arguments and view tracking for its ``(a)``
returns. A call converts its arguments to the schema types as ``torch.ops`` does
(``custom_op.py``). Its kernels run below the version/view layer (they may call other ops
freely; Note [Version counters]).

    op = sk.library.define("mylib::scale(Tensor self, float k) -> Tensor")
    @sk.library.impl(op, "cpu")
    def _(self, k): ...
    op(x, 2.0)          # same object as sk.ops.mylib.scale
"""

from __future__ import annotations

from . import registry
from .custom_op import CustomOp
from .registry import OpOverload

__all__ = ["define", "impl", "register_autograd", "get_autograd", "register_fake"]

# op -> (backward, setup_context): read by the autograd mode (the table's owner is its consumer;
# this module only stores what users register).
_AUTOGRAD: dict = {}


def define(schema: str) -> OpOverload:
    """Define ``ns::name(...) -> ...``; the op appears as ``sk.ops.ns.name``.

    Raises ValueError for a malformed schema or a name without a namespace, RuntimeError if the
    overload exists already.
    """
    if "::" not in schema.split("(")[0]:
        raise ValueError(f"custom op schemas need a namespace, e.g. 'mylib::{schema}'")
    return registry.define(schema, CustomOp)


def _resolve(op) -> OpOverload:
    if isinstance(op, OpOverload):
        return op
    if isinstance(op, str):
        name, _, overload = op.partition(".")
        packet = registry._lookup(name)
        if packet is not None:
            return packet._overloads.get(overload or "default", packet)
    raise ValueError(f"unknown op {op!r}")


def impl(op, device: str):
    """Decorator registering ``fn`` as ``op``'s kernel for ``device`` ("cpu" or "meta").
    Raises ValueError for other devices."""
    op = _resolve(op)
    if device not in ("cpu", "meta"):
        raise ValueError(f"impl(): device must be 'cpu' or 'meta', got {device!r}")

    def deco(fn):
        op._kernels[device] = fn
        return fn
    return deco


def register_fake(op):
    """Decorator registering the meta kernel (PyTorch's ``register_fake``)."""
    return impl(op, "meta")


def register_autograd(op, backward, setup_context=None) -> None:
    """Register a derivative for ``op``: ``backward(ctx, *grads)`` and
    ``setup_context(ctx, inputs, output)`` (PyTorch's ``torch.library.register_autograd``)."""
    _AUTOGRAD[_resolve(op)] = (backward, setup_context)


def get_autograd(op):
    """The ``(backward, setup_context)`` registered for ``op``, or None."""
    return _AUTOGRAD.get(_resolve(op))
