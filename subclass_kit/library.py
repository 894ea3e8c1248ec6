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
    op(x, 2.0)          # same object as sk.ops.mylib.scale.default
"""

from __future__ import annotations

import re

from . import registry
from .custom_op import CustomOp
from .registry import OpOverload, register_kernel
from .storage import device

__all__ = ["define", "impl", "register_autograd", "get_autograd", "register_fake"]

# op -> (backward, setup_context): read by the autograd mode (the table's owner is its consumer;
# this module only stores what users register).
_AUTOGRAD: dict = {}


def define(schema: str) -> OpOverload:
    """Define ``ns::name(...) -> ...``; the op appears as ``sk.ops.ns.name`` (PyTorch's
    ``torch.library.define``, with name and schema in one string).

    Raises ValueError for a malformed schema or a name without a namespace; RuntimeError for
    the overload name ``default`` (PyTorch reserves it for the unnamed overload) and for an
    overload that exists already, with PyTorch's messages.
    """
    if "::" not in schema.split("(")[0]:
        raise ValueError(f"custom op schemas need a namespace, e.g. 'mylib::{schema}'")
    if re.match(r"\s*[\w:]+\.default\s*\(", schema):
        raise RuntimeError("default is not a legal overload name for aten operators")
    return registry.define(schema, CustomOp)


def _resolve(op) -> OpOverload:
    """The op ``op`` names: an ``OpOverload``, an ``OpOverloadPacket`` or ``"ns::name"`` (the
    overload a call of the packet runs: the default one, else the first defined), or
    ``"ns::name.overload"``. Raises RuntimeError for a name that is not defined (PyTorch's
    ``register_fake`` message)."""
    if isinstance(op, (OpOverload, registry.OpOverloadPacket)):
        return registry.overload_of(op)
    if isinstance(op, str):
        name, _, overload = op.partition(".")
        packet = registry._lookup(name)
        if packet is not None:
            if not overload:
                return registry.overload_of(packet)
            if overload in packet._overloads:
                return packet._overloads[overload]
    raise RuntimeError(f"operator {op} does not exist")


# PyTorch's dispatch-key spellings of our devices (``impl(op, "CPU")``).
_DISPATCH_KEYS = {"CPU": "cpu", "Meta": "meta"}


def _device_types(types) -> list:
    if isinstance(types, str):
        types = (types,)
    # ``device`` raises RuntimeError "Expected one of cpu, meta device type at start of device
    # string: gpu" for names we do not know, as PyTorch does for names it does not know.
    return [t if t == "default" else _DISPATCH_KEYS.get(t) or device(t).type for t in types]


def impl(op, types, func=None):
    """Register ``func`` as ``op``'s kernel for ``types``: a device type ("cpu", "meta";
    PyTorch's dispatch-key spellings "CPU", "Meta" too), ``"default"`` for every device
    without a kernel of its own, or a sequence of them (PyTorch's ``torch.library.impl``).
    A decorator when ``func`` is None.

    Raises RuntimeError for an unknown device type or an op that is not defined. Registering
    again for a device replaces the kernel, as in PyTorch.
    """
    op = _resolve(op)
    devices = _device_types(types)

    def deco(fn):
        for d in devices:
            register_kernel(op, d)(fn)
        return fn
    if func is not None:
        deco(func)
        return None
    return deco


def register_fake(op, func=None):
    """Register the meta kernel (PyTorch's ``register_fake``: the "fake" implementation that
    computes output metadata); a decorator when ``func`` is None. Raises RuntimeError for an op
    that is not defined."""
    return impl(op, "meta", func)


def register_autograd(op, backward, setup_context=None) -> None:
    """Register a derivative for ``op``: ``backward(ctx, *grads)`` and
    ``setup_context(ctx, inputs, output)`` (PyTorch's ``torch.library.register_autograd``)."""
    _AUTOGRAD[_resolve(op)] = (backward, setup_context)


def get_autograd(op):
    """The ``(backward, setup_context)`` registered for ``op``, or None."""
    return _AUTOGRAD.get(_resolve(op))
