"""Shared by the custom-op oracle tests (``test_custom_ops_oracle.py``,
``test_custom_ops_calls_oracle.py``): one op defined on both sides, and library-neutral views
of what kernels and modes receive."""

from __future__ import annotations

import itertools

import torch
from oracle import dtype_name
from torch.utils._python_dispatch import TorchDispatchMode

import subclass_kit as sk

NS = "skcustomoracle"
_names = itertools.count()


def fresh_name() -> str:
    """An op name not used before in this test session (ops cannot be undefined)."""
    return f"op{next(_names)}"


def torch_library():
    """A torch ``Library`` fragment of ``NS`` for one test module (a module fixture yields
    from this), destroyed at the end."""
    lib = torch.library.Library(NS, "FRAGMENT")
    yield lib
    lib._destroy()


def definer(torch_lib):
    """``define(schema, cpu, meta=None) -> (sk op, torch op)``: one op, under a fresh name, on
    both sides (``schema`` without the name: ``"(Tensor x) -> Tensor"``)."""
    def define_both(schema, cpu, meta=None):
        name = fresh_name()
        ours = sk.library.define(f"{NS}::{name}{schema}")
        sk.library.impl(ours, "cpu")(cpu)
        torch_lib.define(name + schema)
        torch_lib.impl(name, cpu, "CPU")
        if meta is not None:
            sk.library.register_fake(ours)(meta)
            torch_lib.impl(name, meta, "Meta")
        return ours, getattr(getattr(torch.ops, NS), name).default
    return define_both


def neutral(value):
    """A library-neutral form of what a kernel received."""
    if isinstance(value, (sk.Tensor, torch.Tensor)):
        return ("tensor", value.tolist())
    if isinstance(value, (sk.dtype, torch.dtype)):
        return ("dtype", dtype_name(value))
    if isinstance(value, (sk.device, torch.device)):
        return ("device", value.type)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [neutral(v) for v in value])
    return (type(value).__name__, value)


def first_lines(message: str) -> str:
    """torch's text without the pybind11 details it appends."""
    return message.split("\nCast error details")[0].split("\n Python error details")[0]


def error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the exception is the result compared)
        return type(e), str(e)
    return None


class TorchRecorder(TorchDispatchMode):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == NS:
            self.log.append(([neutral(a) for a in args], {k: neutral(v) for k, v in
                                                         (kwargs or {}).items()}))
        return func(*args, **(kwargs or {}))


class SkRecorder(sk.DispatchMode):
    def __init__(self, log):
        self.log = log

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        if func.name.startswith(NS):
            self.log.append(([neutral(a) for a in args], {k: neutral(v) for k, v in
                                                         (kwargs or {}).items()}))
        return func(*args, **(kwargs or {}))
