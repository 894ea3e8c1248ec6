"""Logging mode: a readable record of every op a program runs.

What it is
    ``LoggingMode`` is a ``sk.DispatchMode`` that writes down each ``sk.ops`` call it sees: the
    op, its arguments (tensors summarised as dtype and shape, e.g. ``f32[2, 3]``, other values
    as they are), its outputs, and the error if the op raised. ``mode.log`` is the list of
    records, ``str(mode)`` / ``mode.print()`` the printout, one op per line::

        with LoggingMode() as log:
            y = (x.t() + 1).sum()
        log.print()
        # sk.ops.t.default(f32[2, 3]) -> f32[3, 2]
        # sk.ops.add.Tensor(f32[3, 2], 1) -> f32[3, 2]
        # ...

Which PyTorch feature it mirrors
    ``LoggingTensorMode`` of ``torch.testing._internal.logging_tensor`` (and the logging
    ``TorchDispatchMode`` of the subclass zoo): what ``TORCH_LOGS``-style op traces show, in
    the ``aten.add.Tensor(f32[2, 3], 1)`` spelling.

Where it sits in the mode stack
    It is an ordinary dispatch mode: it sees ops *after* composite ops decomposed (a
    ``reshape`` appears as the ``view`` or ``clone`` + ``_unsafe_view`` it lowered to), records
    them, and forwards with ``func(*args)``, which runs under the next mode down (Note [Mode
    runs below itself]). Modes entered inside it (closer to the program) see an op first and
    LoggingMode sees what they forward; modes outside it see what it forwards. Ops a subclass
    handler or a mode below runs internally are not seen (they happen below this mode).
    An op that raises is recorded with its error and the exception propagates unchanged; the
    mode stack is restored by the core.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NamedTuple

import subclass_kit as sk

__all__ = ["LoggingMode", "OpRecord", "TensorInfo"]

# PyTorch's short dtype spellings (as in FX's readable printouts).
_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int8": "i8",
          "int16": "i16",
          "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "b8"}


@dataclass(frozen=True)
class TensorInfo:
    """What the log keeps of a tensor: metadata only (no data, no reference to the tensor).
    A pytree leaf (not a named tuple), so ``sk.pytree`` walks records without opening it."""

    shape: tuple
    dtype: Any
    stride: tuple
    device: str
    type_name: str      # "Tensor", or the subclass name

    @classmethod
    def of(cls, t) -> TensorInfo:
        return cls(tuple(t.shape), t.dtype, tuple(t.stride()), t.device.type, type(t).__name__)

    def __str__(self):
        text = f"{_SHORT.get(self.dtype.name, self.dtype.name)}[{', '.join(map(str, self.shape))}]"
        if self.device != "cpu":
            text += f"@{self.device}"
        if self.type_name != "Tensor":
            text = f"{self.type_name}({text})"
        return text

    __repr__ = __str__


def _summarise(value):
    """Tensors -> TensorInfo, containers kept, everything else as is."""
    return sk.pytree.tree_map_only(sk.Tensor, TensorInfo.of, value)


def _fmt(value) -> str:
    if isinstance(value, TensorInfo):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_fmt(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v)}" for k, v in value.items()) + "}"
    return repr(value)


class OpRecord(NamedTuple):
    """One logged op: ``op`` (e.g. ``"sk.ops.add.Tensor"``), ``func`` (the ``OpOverload``),
    summarised ``args``/``kwargs``/``outputs`` (tensors as :class:`TensorInfo`), and
    ``error`` (``"ValueError: ..."`` when the op raised, else None; outputs are then None)."""

    op: str
    func: Any
    args: tuple
    kwargs: dict
    outputs: Any
    error: str | None = None

    @property
    def input_shapes(self) -> list:
        """Shapes of the tensor arguments, in argument order."""
        leaves = sk.pytree.tree_leaves((self.args, self.kwargs))
        return [x.shape for x in leaves if isinstance(x, TensorInfo)]

    @property
    def output_shapes(self) -> list:
        """Shapes of the tensor outputs, in order."""
        return [x.shape for x in sk.pytree.tree_leaves(self.outputs) if isinstance(x, TensorInfo)]

    def __str__(self):
        parts = [_fmt(a) for a in self.args]
        parts += [f"{k}={_fmt(v)}" for k, v in self.kwargs.items()]
        call = f"{self.op}({', '.join(parts)})"
        if self.error is not None:
            return f"{call} !! {self.error}"
        return f"{call} -> {_fmt(self.outputs)}"


class LoggingMode(sk.DispatchMode):
    """Record every op that reaches this mode (see the module docstring).

    ``stream``: also print each record as it happens (e.g. ``sys.stderr``).
    ``name``: shown in ``repr`` (useful when several logging modes are nested).

    The mode can be entered again later: records accumulate until ``clear()``.
    """

    def __init__(self, *, stream=None, name: str = "LoggingMode"):
        self.log: list = []
        self.stream = stream
        self.name = name

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        s_args, s_kwargs = _summarise(tuple(args)), _summarise(dict(kwargs))
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            self._add(OpRecord(repr(func), func, s_args, s_kwargs, None,
                               f"{type(e).__name__}: {e}"))
            raise
        self._add(OpRecord(repr(func), func, s_args, s_kwargs, _summarise(out)))
        return out

    def _add(self, record: OpRecord):
        self.log.append(record)
        if self.stream is not None:
            print(record, file=self.stream)

    # -- reading the log ------------------------------------------------------------------
    @property
    def ops(self) -> list:
        """The op names in order, e.g. ``["sk.ops.t.default", "sk.ops.add.Tensor"]``."""
        return [r.op for r in self.log]

    def clear(self):
        self.log.clear()

    def __len__(self):
        return len(self.log)

    def __bool__(self):  # a mode object is always truthy, even with an empty log
        return True

    def __iter__(self):
        return iter(self.log)

    def __str__(self):
        return "\n".join(str(r) for r in self.log)

    def print(self, file=None):
        """Print the log, one op per line (to ``file``, default stdout)."""
        print(str(self), file=file or sys.stdout)

    def __repr__(self):
        return f"<{self.name}: {len(self.log)} ops>"
