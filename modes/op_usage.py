"""Op usage: which ops, with which dtypes, a program used -- written as an operator list.

What it is
    ``OpUsageMode`` is a ``sk.DispatchMode`` that counts every op reaching it and collects the
    dtypes of its tensor arguments and outputs and the devices they were on. ``to_yaml()``
    writes the result as a YAML operator list (plain text; no yaml dependency), sorted by op
    name, and ``write(path)`` saves it::

        sk.ops.add.Tensor:
          count: 3
          dtypes: [float32, int64]
          devices: [cpu]

    ``read_op_list(path_or_text)`` parses that format back (a test oracle and the input of a
    selective build), and ``mode.unlisted(allowed)`` names the ops a program used that an
    existing list lacks.

Which PyTorch feature it mirrors
    The *tracing-based selective build* of PyTorch Mobile: ``torch.jit.mobile``'s model tracer
    runs a model and records the operators (``aten::add.Tensor``) and the dtypes each kernel
    was used with (``kernel_metadata``); the YAML file is then passed to the build
    (``SELECTED_OP_LIST``) so only those kernels are compiled in. Names here are the
    ``sk.ops`` spellings.

Where it sits in the mode stack
    An ordinary dispatch mode: it sees ops after composites decomposed (a selective build
    needs the primitives, which is what it lists), records, and forwards with ``func(*args)``
    to the next mode down. Ops that a subclass handler or a custom op's kernel runs
    internally happen below it and are not counted; enter it *inside* other modes to list
    what they forward. An op that raises is not counted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import subclass_kit as sk

__all__ = ["OpUsageMode", "OpUse", "read_op_list"]


@dataclass
class OpUse:
    """Usage of one op: call ``count``, ``dtypes`` and ``devices`` seen (names, as sets)."""

    count: int = 0
    dtypes: set = field(default_factory=set)
    devices: set = field(default_factory=set)


class OpUsageMode(sk.DispatchMode):
    """Count ops and collect their dtypes/devices (see the module docstring).

    ``ops``: op name (``"sk.ops.add.Tensor"``) -> :class:`OpUse`. Usage accumulates across
    entries of the same mode object.
    """

    def __init__(self):
        self.ops: dict = {}

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        found = [t for t in sk.pytree.tree_leaves((args, kwargs, out))
                 if isinstance(t, sk.Tensor)]
        use = self.ops.get(repr(func))
        if use is None:
            use = self.ops[repr(func)] = OpUse()
        use.count += 1
        for t in found:
            use.dtypes.add(t.dtype.name)
            use.devices.add(t.device.type)
        # a dtype passed as an argument (factories, _to_copy) is a kernel dtype too
        dtype = kwargs.get("dtype")
        if isinstance(dtype, sk.dtype):
            use.dtypes.add(dtype.name)
        return out

    def to_yaml(self) -> str:
        """The operator list, one block per op, sorted by name."""
        lines = ["# Operators used, with the dtypes and devices of their tensors "
                 + "(subclass_kit OpUsageMode)."]
        for name in sorted(self.ops):
            use = self.ops[name]
            lines.append(f"{name}:")
            lines.append(f"  count: {use.count}")
            lines.append(f"  dtypes: [{', '.join(sorted(use.dtypes))}]")
            lines.append(f"  devices: [{', '.join(sorted(use.devices))}]")
        return "\n".join(lines) + "\n"

    def write(self, path) -> None:
        """Save :meth:`to_yaml` to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_yaml())

    def unlisted(self, allowed) -> list:
        """Ops used here that ``allowed`` (op names, or a dict from :func:`read_op_list`)
        does not contain, sorted."""
        return sorted(name for name in self.ops if name not in allowed)

    def __repr__(self):
        calls = sum(u.count for u in self.ops.values())
        return f"<OpUsageMode: {len(self.ops)} ops, {calls} calls>"


_ENTRY = re.compile(r"^(\S+):\s*$")
_FIELD = re.compile(r"^\s+(\w+):\s*(.*?)\s*$")


def read_op_list(source) -> dict:
    """Parse an operator list written by :meth:`OpUsageMode.to_yaml`.

    ``source``: the text itself or a path to it. Returns op name -> :class:`OpUse`. Raises
    ValueError naming the line for anything else (only this subset of YAML is read).
    """
    text = source
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and os.path.exists(source)):
        with open(source, encoding="utf-8") as f:
            text = f.read()
    result: dict = {}
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _ENTRY.match(line)
        if m:
            current = result[m.group(1)] = OpUse()
            continue
        m = _FIELD.match(line)
        if m is None or current is None:
            raise ValueError(f"op list line {n}: cannot parse {line!r}")
        key, value = m.groups()
        if key == "count":
            current.count = int(value)
        elif key in ("dtypes", "devices") and value.startswith("[") and value.endswith("]"):
            items = {v.strip() for v in value[1:-1].split(",") if v.strip()}
            setattr(current, key, items)
        else:
            raise ValueError(f"op list line {n}: unknown field {key!r}")
    return result
