"""Explain: who handled each op of a program, and which kernel ran.

What it is
    ``explain(fn)(*args)`` runs ``fn`` once and returns an :class:`Explanation`: for every op,
    the dispatch steps it went through -- each mode and subclass ``__tensor_dispatch__`` that
    was asked, whether it declined (``NotImplemented``) or handled the op, the ops a handler ran
    in turn (nested), and the device of the kernel that finally ran. Ops are grouped under the
    public API call (``Tensor.reshape``, ``sk.ones``...) that issued them. Printing it gives a
    tree; ``table()`` a one-line-per-op summary::

        Tensor.__add__(...)
          sk.ops.add.Tensor
            mode LoggingMode: handled
              sk.ops.add.Tensor
                subclass NegativeTensor: handled
                  sk.ops.neg.default
                    kernel cpu
                  ...

    The answer comes from the core's dispatch trace hook ``sk.dispatch_trace(callback)``
    (events ``mode``/``subclass``/``declined``/``kernel`` with a nesting depth), plus a
    ``sk.FunctionMode`` that names the public call around each group of ops.

Which PyTorch feature it mirrors
    PyTorch has no user-level equivalent: the closest are ``TORCH_SHOW_DISPATCH_TRACE=1``
    (a debug-build dump of dispatcher steps) and ``torch._C._dispatch_dump`` (the kernel table
    of one op). This mode reads the same information as a structured, printable object.

Where it sits in the mode stack
    It is not a dispatch mode: the trace callback sees every dispatch step of every mode and
    subclass, at every depth, so it observes without changing what runs (while active, all
    ops take the dispatcher's slow path). Its ``FunctionMode`` is pushed when ``explain`` is
    called, so function modes entered inside ``fn`` run before it and are not grouped by it.
    Limits: ops run by a composite's decomposition are reported under the primitive they
    lower to; ops a custom-op kernel calls run at the kernel's own depth and appear as
    siblings after it. If ``fn`` raises, the exception propagates with the partial
    explanation attached as ``exc.explanation``.
"""

from __future__ import annotations

import sys

import subclass_kit as sk

__all__ = ["ApiCall", "Explanation", "OpCall", "Step", "explain"]


def _handler_label(kind: str, handler) -> str:
    if kind == "kernel":
        return f"kernel {handler}"
    if kind == "subclass":
        return f"subclass {getattr(handler, '__name__', handler)}"
    return f"mode {type(handler).__name__}"


class Step:
    """One dispatch step of an op: ``kind`` ("mode", "subclass" or "kernel"), ``handler`` (the
    mode object, the subclass type, or the kernel's device type), ``declined``, and ``calls``:
    the ops the handler ran (:class:`OpCall`, one level deeper)."""

    __slots__ = ("calls", "declined", "handler", "kind")

    def __init__(self, kind, handler):
        self.kind, self.handler = kind, handler
        self.declined = False
        self.calls: list = []

    @property
    def label(self) -> str:
        return _handler_label(self.kind, self.handler)

    @property
    def outcome(self) -> str:
        if self.kind == "kernel":
            return "ran"
        return "declined" if self.declined else "handled"

    def __repr__(self):
        return f"Step({self.label}: {self.outcome})"


class OpCall:
    """One call of an op: ``op`` (the ``OpOverload``), ``depth`` (0 for ops the program ran;
    deeper for ops run by handlers) and ``steps`` in dispatch order."""

    __slots__ = ("depth", "op", "steps")

    def __init__(self, op, depth):
        self.op, self.depth = op, depth
        self.steps: list = []

    @property
    def name(self) -> str:
        return repr(self.op)

    @property
    def handled_by(self):
        """The step that did not decline (a mode, a subclass or the kernel), or None."""
        for step in self.steps:
            if step.kind == "kernel" or not step.declined:
                return step
        return None

    def _redispatch(self):
        """The same op run again by the handling step (``func(*args)`` in a handler)."""
        step = self.handled_by
        if step is None or step.kind == "kernel":
            return None
        for call in step.calls:
            if call.op is self.op:
                return call
        return None

    @property
    def kernel(self):
        """Device type of the kernel that finally ran *this op* ("cpu", "meta"), following
        handlers that forwarded it; None when a handler computed the result with other ops."""
        step = self.handled_by
        if step is not None and step.kind == "kernel":
            return step.handler
        again = self._redispatch()
        return again.kernel if again is not None else None

    @property
    def path(self) -> list:
        """Handler labels in order, e.g. ``["mode LoggingMode", "subclass Neg (declined)",
        "kernel cpu"]``, following forwarded calls of the same op."""
        out = [s.label + (" (declined)" if s.declined else "") for s in self.steps]
        again = self._redispatch()
        if again is not None:
            out += again.path
        else:
            step = self.handled_by
            if step is not None and step.kind != "kernel" and step.calls:
                out.append(f"({len(step.calls)} inner ops)")
        return out

    def __repr__(self):
        return f"OpCall({self.name}: {' -> '.join(self.path)})"


class ApiCall:
    """A public API call (``Tensor.reshape``, ``sk.ones``) and the ops it ran (``calls``)."""

    __slots__ = ("calls", "name")

    def __init__(self, name):
        self.name = name
        self.calls: list = []

    def __repr__(self):
        return f"ApiCall({self.name}: {len(self.calls)} ops)"


def _tree_lines(call: OpCall, indent: int, lines: list):
    pad = "  " * indent
    lines.append(f"{pad}{call.name}")
    for step in call.steps:
        text = step.label if step.kind == "kernel" else f"{step.label}: {step.outcome}"
        lines.append(f"{pad}  {text}")
        for inner in step.calls:
            _tree_lines(inner, indent + 2, lines)


class Explanation:
    """What ``explain`` found: ``entries`` (top-level :class:`ApiCall` groups and bare
    :class:`OpCall` s, in program order), ``calls`` (every top-level op call, flattened),
    and ``result`` (what ``fn`` returned). ``str()`` is the tree; ``table()`` the summary."""

    def __init__(self):
        self.entries: list = []
        self.result = None

    @property
    def calls(self) -> list:
        out = []
        for e in self.entries:
            out.extend(e.calls if isinstance(e, ApiCall) else [e])
        return out

    def _api_of(self) -> dict:
        return {id(c): e.name for e in self.entries if isinstance(e, ApiCall) for c in e.calls}

    def table(self) -> str:
        """One row per op the program ran: index, API call, op, handler path, kernel."""
        api = self._api_of()
        rows = [("#", "api", "op", "handled by", "kernel")]
        for i, c in enumerate(self.calls):
            rows.append((str(i), api.get(id(c), ""), c.name, " -> ".join(c.path),
                         c.kernel or "-"))
        widths = [max(len(r[j]) for r in rows) for j in range(4)]
        lines = []
        for r in rows:
            lines.append("  ".join(r[j].ljust(widths[j]) for j in range(4)) + "  " + r[4])
        return "\n".join(line.rstrip() for line in lines)

    def tree(self) -> str:
        lines: list = []
        for e in self.entries:
            if isinstance(e, ApiCall):
                lines.append(f"{e.name}(...)")
                for c in e.calls:
                    _tree_lines(c, 1, lines)
            else:
                _tree_lines(e, 0, lines)
        return "\n".join(lines)

    __str__ = tree

    def print(self, file=None):
        print(self.tree(), file=file or sys.stdout)

    def __repr__(self):
        return f"<Explanation: {len(self.calls)} ops>"


class _Builder:
    """Turns the flat DispatchEvent stream into OpCall trees (see Step/OpCall)."""

    def __init__(self, explanation: Explanation):
        self.ex = explanation
        self.open: dict = {}        # depth -> the OpCall being dispatched at that depth
        self.base = None            # depth of the program's own ops
        self.group = None           # the ApiCall of the public call in progress, if any
        self.group_listed = False   # listed lazily: only once one of its ops runs at depth 0

    def __call__(self, event):
        kind, op, handler, depth = event
        if self.base is None:
            self.base = depth
        depth -= self.base
        if kind == "declined":
            call = self.open.get(depth)
            if call is not None and call.steps:
                call.steps[-1].declined = True
            return
        call = self.open.get(depth)
        if not (call is not None and call.op is op and call.steps and call.steps[-1].declined):
            call = OpCall(op, depth)
            parent = self.open.get(depth - 1)
            if depth > 0 and parent is not None and parent.steps:
                # a public call made inside a handler lands here too: its ops belong to the
                # handler, not to a group of their own
                parent.steps[-1].calls.append(call)
            elif self.group is not None:
                if not self.group_listed:
                    self.ex.entries.append(self.group)
                    self.group_listed = True
                self.group.calls.append(call)
            else:
                self.ex.entries.append(call)
            self.open[depth] = call
            for d in [d for d in self.open if d > depth]:
                del self.open[d]
        call.steps.append(Step(kind, handler))


def _api_name(func) -> str:
    """``Tensor.reshape``, ``Tensor.__matmul__``, ``sk.ones``: where the user reaches ``func``."""
    name = getattr(func, "__name__", repr(func))
    if getattr(sk.Tensor, name, None) is func:
        return f"Tensor.{name}"
    if getattr(sk, name, None) is func:
        return f"sk.{name}"
    for owner, space in (("Tensor", vars(sk.Tensor)), ("sk", vars(sk))):
        for key, value in space.items():
            if value is func:
                return f"{owner}.{key}"
    return name


class _ApiGroups(sk.FunctionMode):
    """Names the public call around each group of top-level ops. Nested public calls run with
    this mode popped, so only the outermost call is seen; a public call made by a dispatch
    handler has its ops at depth > 0, and they stay under that handler."""

    def __init__(self, builder: _Builder):
        self.builder = builder

    def __tensor_function__(self, func, types, args=(), kwargs=None):
        name = _api_name(func)
        b = self.builder
        prev = (b.group, b.group_listed)
        b.group, b.group_listed = ApiCall(name), False
        try:
            return func(*args, **(kwargs or {}))
        finally:
            b.group, b.group_listed = prev


def explain(fn, *, group_by_api: bool = True):
    """``explain(fn)(*args, **kwargs) -> Explanation``: run ``fn`` and report, for each op,
    the modes and subclass hooks that handled or declined it and the kernel that ran (see
    the module docstring). ``group_by_api=False`` lists ops without their public API calls.
    """

    def run(*args, **kwargs) -> Explanation:
        ex = Explanation()
        builder = _Builder(ex)
        try:
            with sk.dispatch_trace(builder):
                if group_by_api:
                    with _ApiGroups(builder):
                        ex.result = fn(*args, **kwargs)
                else:
                    ex.result = fn(*args, **kwargs)
        except Exception as e:
            e.explanation = ex
            raise
        return ex

    return run
