"""Graph capture: record the ``sk.ops`` calls of a program as a replayable ``Graph``.

What it is
    ``make_graph(fn)(*args)`` runs ``fn`` eagerly on ``args`` under a capturing dispatch mode
    and returns a :class:`Graph`: placeholders for the tensor inputs, one node per op call
    whose arguments reference earlier values (inputs, outputs of earlier nodes, constants), and
    an output node. ``graph.print_code()`` prints it as Python a user can read and run::

        def forward(x):
            t: "f32[3, 2]" = sk.ops.t.default(x)
            add: "f32[3, 2]" = sk.ops.add.Tensor(t, 1)
            return add

    ``graph.run(*args)`` re-executes the nodes on new inputs; ``graph.compile()`` turns the
    printed code into a function. Factory ops inside ``fn`` (``sk.zeros(...)``, which reach
    modes with ``types == ()``) are captured like any other op; tensors ``fn`` reads that are
    neither inputs nor op outputs (module parameters, ``sk.from_numpy`` arrays) become
    constants, held by the graph and named ``_tensor_constant0`` ...

    What is *specialised* (baked into the graph, as in any tracer): non-tensor arguments of
    ``fn`` (the graph takes only the tensor leaves of its inputs), Python control flow, and
    Python values computed from data (``t.item()`` records ``_local_scalar_dense`` but later
    uses of the number are literals). Ops run under ``sk.no_dispatch()`` and data written
    outside the op layer are invisible to the capture. A tensor object passed twice is read
    from its first position.

Which PyTorch feature it mirrors
    ``torch.fx.experimental.proxy_tensor.make_fx`` (tracing at the dispatch level with a
    ``TorchDispatchMode``) and its ``GraphModule.print_readable()``; node names and the
    ``_tensor_constant`` convention follow FX.

Where it sits in the mode stack
    The capture mode is pushed when ``make_graph(fn)(...)`` is called, so modes active outside
    it see the ops it forwards, and modes ``fn`` enters itself (e.g. a functionalization mode)
    sit above it: the graph records what they forward. It records each op *before* forwarding
    it with ``func(*args)``, so ops a subclass handler runs internally are not recorded: a
    graph over wrapper-subclass inputs is a graph at the wrapper level. An op that raises is
    not recorded, and the exception propagates (the mode stack is restored by the core).
"""

from __future__ import annotations

import inspect
import keyword
import math
import re
import sys

import subclass_kit as sk

__all__ = ["Graph", "Node", "Ref", "make_graph"]

_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int8": "i8",
          "int16": "i16",
          "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "b8"}
_MEMORY_FORMAT = type(sk.contiguous_format)


def _tensor_type(t) -> str:
    return f"{_SHORT.get(t.dtype.name, t.dtype.name)}[{', '.join(map(str, t.shape))}]"


class Ref:
    """A reference to a graph value: a node's output, or element ``index`` of it."""

    __slots__ = ("index", "node")

    def __init__(self, node, index=None):
        self.node, self.index = node, index

    def __str__(self):
        return self.node.name if self.index is None else f"{self.node.name}[{self.index}]"

    __repr__ = __str__


class Node:
    """One graph node.

    ``kind``: "placeholder" (an input), "constant" (``value`` holds the object), "call"
    (``op(*args, **kwargs)``, arguments with :class:`Ref` leaves) or "output" (``args[0]`` is the
    output tree). ``type``: the output's dtype/shape text, e.g. ``"f32[2, 3]"``.
    """

    __slots__ = ("args", "kind", "kwargs", "name", "op", "type", "value")

    def __init__(self, kind, name, op=None, args=(), kwargs=None, value=None, type=None):
        self.kind, self.name, self.op = kind, name, op
        self.args, self.kwargs = args, kwargs or {}
        self.value, self.type = value, type

    @property
    def target(self) -> str:
        """``"sk.ops.add.Tensor"`` for calls, else the kind."""
        return repr(self.op) if self.op is not None else self.kind

    def __repr__(self):
        if self.kind == "call":
            return f"Node({self.name} = {self.target}{_call_args(self.args, self.kwargs)})"
        return f"Node({self.kind} {self.name})"


# -- literals in generated code ------------------------------------------------------------------
def _is_literal(x) -> bool:
    if x is None or isinstance(x, (bool, int, float, str, Ref, sk.dtype, sk.device,
                                   _MEMORY_FORMAT)):
        return True
    if isinstance(x, (list, tuple)):
        return all(_is_literal(v) for v in x)
    return False


def _lit(x) -> str:
    """Python source for an argument value (Ref, literal, or container of them)."""
    if isinstance(x, Ref):
        return str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return f"float('{x}')"
    if isinstance(x, sk.device):
        return f"sk.device({str(x)!r})"
    if isinstance(x, list):
        return "[" + ", ".join(_lit(v) for v in x) + "]"
    if isinstance(x, tuple):
        inner = ", ".join(_lit(v) for v in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_lit(v)}" for k, v in x.items()) + "}"
    return repr(x)


def _call_args(args, kwargs) -> str:
    parts = [_lit(a) for a in args] + [f"{k}={_lit(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _identifier(text: str) -> str:
    name = re.sub(r"\W", "_", text) or "v"
    if name[0].isdigit() or keyword.iskeyword(name) or name == "sk":
        name = "_" + name
    return name


class Graph:
    """A captured program: ``nodes`` (placeholders, constants, calls, one output).

    ``run(*args, **kwargs)`` re-executes on new inputs with the same pytree structure as the
    captured ones (only tensor leaves are read; non-tensor leaves were specialised).
    ``code`` / ``print_code()`` give readable Python; ``compile()`` a callable built from it.
    """

    def __init__(self):
        self.nodes: list = []
        self._names: set = {"sk", "float"}
        self._next_suffix: dict = {}
        self._in_spec = None
        self._tensor_leaves: list = []   # positions of tensor leaves in the flattened inputs
        self._out_spec = None

    # -- building ---------------------------------------------------------------------------
    def _fresh(self, base: str) -> str:
        # The next suffix per base name is remembered: probing from 1 each time made capturing
        # n calls of one op quadratic.
        base = _identifier(base)
        i = self._next_suffix.get(base, 0)
        name = base if i == 0 else f"{base}_{i}"
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._next_suffix[base] = i + 1
        self._names.add(name)
        return name

    def _add(self, kind, base, **fields) -> Node:
        node = Node(kind, self._fresh(base), **fields)
        self.nodes.append(node)
        return node

    # -- reading ----------------------------------------------------------------------------
    @property
    def placeholders(self) -> list:
        return [n for n in self.nodes if n.kind == "placeholder"]

    @property
    def calls(self) -> list:
        """The op-call nodes, in program order."""
        return [n for n in self.nodes if n.kind == "call"]

    @property
    def constants(self) -> dict:
        """Constant name -> the object the graph holds."""
        return {n.name: n.value for n in self.nodes if n.kind == "constant"}

    @property
    def ops(self) -> list:
        """The ops called, in order (``OpOverload`` objects)."""
        return [n.op for n in self.calls]

    @property
    def output(self) -> Node:
        return self.nodes[-1]

    # -- executing --------------------------------------------------------------------------
    def run(self, *args, **kwargs):
        """Re-execute the graph on new inputs; returns outputs in the captured structure.

        Raises TypeError when the inputs do not have the captured structure."""
        leaves, spec = sk.pytree.tree_flatten((args, kwargs))
        if spec != self._in_spec:
            raise TypeError(f"Graph.run(): inputs must have the structure of the captured "
                            f"inputs ({len(self._tensor_leaves)} tensor(s) at the same places)")
        inputs = iter(leaves[i] for i in self._tensor_leaves)
        env: dict = {}

        def resolve(x):
            if isinstance(x, Ref):
                value = env[x.node]
                return value if x.index is None else value[x.index]
            return x

        for node in self.nodes:
            if node.kind == "placeholder":
                env[node] = next(inputs)
            elif node.kind == "constant":
                env[node] = node.value
            elif node.kind == "call":
                env[node] = node.op(*sk.pytree.tree_map(resolve, node.args),
                                    **sk.pytree.tree_map(resolve, node.kwargs))
            else:
                return sk.pytree.tree_map(resolve, node.args[0])
        return None

    __call__ = run

    # -- passes -----------------------------------------------------------------------------
    def eliminate_dead_code(self) -> int:
        """Remove the call nodes whose results nothing uses (transitively), keeping every op
        that mutates an argument and the random ops (their draws move the generator). Constants
        no call uses any more go too. Returns how many nodes were removed. PyTorch's
        ``Graph.eliminate_dead_code``; functionalization's dead regeneration nodes are what it
        is for (SEMANTICS.md §6.4)."""
        used: set = set()

        def mark(x):
            if isinstance(x, Ref):
                used.add(x.node)
            return x

        kept = []
        for node in reversed(self.nodes):
            live = (node.kind in ("output", "placeholder") or node in used
                    or (node.kind == "call" and _impure(node.op)))
            if live:
                sk.pytree.tree_map(mark, (node.args, node.kwargs))
                kept.append(node)
        removed = len(self.nodes) - len(kept)
        self.nodes = kept[::-1]
        return removed

    def to_jax(self):
        """This graph as a pure ``jax.numpy`` function of the placeholders (flat, in order),
        returning the output structure; ``jax.jit`` compiles it. Raises ValueError naming the
        first node that mutates (only functional graphs can be lowered: ``functionalize`` them
        first; the input-mutation epilogue's ``copy_`` into a placeholder becomes an extra
        output instead, see ``modes/jax_lowering.py``), NotImplementedError for an op without a
        lowering, ImportError when JAX is not installed."""
        from .jax_lowering import lower
        return lower(self)

    # -- printing ---------------------------------------------------------------------------
    @property
    def code(self) -> str:
        """The graph as Python source: ``def forward(<placeholders>): ...``."""
        params = ", ".join(n.name for n in self.placeholders)
        lines = []
        consts = [n for n in self.nodes if n.kind == "constant"]
        for n in consts:
            what = _tensor_type(n.value) if isinstance(n.value, sk.Tensor) else \
                type(n.value).__name__
            lines.append(f"# constant {n.name}: {what}")
        lines.append(f"def forward({params}):")
        for n in self.nodes:
            if n.kind == "call":
                note = f': "{n.type}"' if n.type else ""
                lines.append(f"    {n.name}{note} = {n.target}{_call_args(n.args, n.kwargs)}")
            elif n.kind == "output":
                lines.append(f"    return {_lit(n.args[0])}")
        return "\n".join(lines) + "\n"

    def print_code(self, file=None):
        """Print :attr:`code` (to ``file``, default stdout)."""
        print(self.code, end="", file=file or sys.stdout)

    def __str__(self):
        return self.code

    def __repr__(self):
        return (f"<Graph: {len(self.placeholders)} inputs, {len(self.calls)} ops, "
                f"{len(self.constants)} constants>")

    def compile(self):
        """The printed code as a function of the placeholders (flat tensors, in order)."""
        # __name__: the function's frames count as this module's (DebugAssertMode's report
        # skips them when it names the line that called an op)
        namespace = {"sk": sk, **self.constants, "__name__": __name__}
        exec(compile(self.code, "<graph>", "exec"), namespace)  # noqa: S102 (our own code)
        return namespace["forward"]


_RANDOM = frozenset({"rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
                     "uniform", "uniform_", "normal_", "normal_functional", "bernoulli",
                     "bernoulli_", "dropout", "native_dropout", "randperm", "multinomial"})


def _impure(op) -> bool:
    return op.is_mutable or op.__name__.split(".")[0] in _RANDOM


# Lifted constants are copied. ``sk.tensor([...])`` inside ``fn`` reaches modes as
# ``lift_fresh(c)`` of a constant ``c``, and ``lift_fresh`` returns ``c`` itself, which ``fn``
# may then mutate (``d.add_(x)``). Recording ``lift_fresh(c)`` would let the capture and every
# run mutate the stored constant. Like make_fx, the graph records ``lift_fresh_copy(c)``, and
# ``c`` is a snapshot taken when ``lift_fresh`` ran, so each run starts from the value the
# program made.
class _Capture(sk.DispatchMode):
    """Records every op reaching it into a Graph, then forwards it."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.env: dict = {}          # id(obj) -> (obj, Ref); holds obj so ids stay unique
        self.counts: dict = {}        # constant-name prefix -> how many so far

    def ref(self, x):
        entry = self.env.get(id(x))
        if entry is not None and entry[0] is x:
            return entry[1]
        if isinstance(x, sk.Tensor):
            base = "_tensor_constant"
        elif _is_literal(x):
            return x
        else:
            base = "_const"
        n = self.counts.get(base, 0)
        self.counts[base] = n + 1
        node = self.graph._add("constant", f"{base}{n}", value=x)
        r = Ref(node)
        self.env[id(x)] = (x, r)
        return r

    def bind(self, x, r: Ref):
        self.env[id(x)] = (x, r)

    def lift(self, x):
        """``lift_fresh(x)`` of a tensor the graph has not seen: record ``lift_fresh_copy`` of a
        constant holding a snapshot of ``x`` (``fn`` may mutate ``x`` later), so each run starts
        from a fresh copy of the value ``x`` had here (see the comment above the class)."""
        with sk.no_dispatch():
            snapshot = sk.ops.clone.default(x)
        out = sk.ops.lift_fresh.default(x)
        n = self.counts.get("_tensor_constant", 0)
        self.counts["_tensor_constant"] = n + 1
        const = self.graph._add("constant", f"_tensor_constant{n}", value=snapshot)
        node = self.graph._add("call", "lift_fresh_copy", op=sk.ops.lift_fresh_copy.default,
                               args=(Ref(const),), type=_tensor_type(out))
        self.bind(out, Ref(node))
        return out

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is sk.ops.lift_fresh.default and len(args) == 1 and not kwargs \
                and isinstance(args[0], sk.Tensor) and id(args[0]) not in self.env:
            return self.lift(args[0])
        g_args = sk.pytree.tree_map(self.ref, tuple(args))
        g_kwargs = sk.pytree.tree_map(self.ref, dict(kwargs))
        out = func(*args, **kwargs)
        base = func.__name__.split(".")[0]
        if isinstance(out, sk.Tensor):
            node = self.graph._add("call", base, op=func, args=g_args, kwargs=g_kwargs,
                                   type=_tensor_type(out))
            self.bind(out, Ref(node))
        elif isinstance(out, (list, tuple)):
            types_ = [_tensor_type(o) if isinstance(o, sk.Tensor) else repr(o) for o in out]
            node = self.graph._add("call", base, op=func, args=g_args, kwargs=g_kwargs,
                                   type=f"[{', '.join(types_)}]")
            for i, o in enumerate(out):
                if isinstance(o, sk.Tensor):
                    self.bind(o, Ref(node, i))
        else:
            self.graph._add("call", base, op=func, args=g_args, kwargs=g_kwargs,
                            type=type(out).__name__ if out is not None else None)
        return out


def _input_names(fn, args, kwargs) -> list:
    """A name per top-level input: ``fn``'s parameter names where it has a signature,
    ``<varargs>_<i>`` (or ``arg<i>``) beyond them, keyword names for keyword inputs."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    names = []
    for i in range(len(args)):
        if i < len(positional):
            names.append(positional[i])
        else:
            names.append(f"{star}_{i - len(positional)}" if star else f"arg{i}")
    return names + list(kwargs)


def make_graph(fn):
    """``make_graph(fn)(*args, **kwargs) -> Graph``: run ``fn`` once under a capturing
    dispatch mode and return the graph of ``sk.ops`` calls it made (see the module
    docstring). Exceptions raised by ``fn`` propagate; the mode stack is left as it was."""

    def capture(*args, **kwargs) -> Graph:
        graph = Graph()
        mode = _Capture(graph)
        leaves, spec = sk.pytree.tree_flatten((args, kwargs))
        graph._in_spec = spec
        top_names = _input_names(fn, args, kwargs)
        # leaf positions per top-level input, to name nested tensors ``x_0``, ``x_1`` ...
        counts = [len(sk.pytree.tree_leaves(a)) for a in list(args) + list(kwargs.values())]
        owner = [i for i, c in enumerate(counts) for _ in range(c)]
        for pos, leaf in enumerate(leaves):
            if isinstance(leaf, sk.Tensor):
                top = owner[pos]
                nested = counts[top] > 1
                name = f"{top_names[top]}_{pos - sum(counts[:top])}" if nested \
                    else top_names[top]
                node = graph._add("placeholder", name)
                graph._tensor_leaves.append(pos)
                if id(leaf) not in mode.env:   # a tensor passed twice reads its first place
                    mode.bind(leaf, Ref(node))
        with mode:
            out = fn(*args, **kwargs)
        graph._add("output", "output", args=(sk.pytree.tree_map(mode.ref, out),))
        mode.env.clear()
        return graph

    return capture
