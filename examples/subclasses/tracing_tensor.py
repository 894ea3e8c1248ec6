"""A tracing tensor: run a program on real values and record it as a graph.

The idea
    Wrap a program's inputs in ``TracingTensor`` s; every op that touches one runs on the real
    values *and* appends a node ``name = op(args)`` to a shared ``Tracer``. At the end the
    tracer holds the program as straight-line code over ``sk.ops`` that can be printed and
    re-run on new inputs. This is tracing by subclass -- the approach of the subclass zoo's
    ``tracer_tensor.py`` and of early ``torch.fx`` proxies; ``modes.make_graph`` does the
    same with a dispatch mode.

How it works
    A wrapper subclass with three attributes: ``elem`` (the real value), ``name`` (the graph
    value it stands for) and ``tracer``. ``__tensor_dispatch__`` unwraps arguments, runs the
    op, gives each tensor output a fresh name (``t0``, ``t1``...; multi-output ops get
    ``t3 = op(...)`` and ``t3[0]``...), records the node with arguments spelled as names or
    literals, and rewraps with ``sk.return_and_correct_aliasing`` (so views alias and in-place
    ops return ``self``). Plain tensors that appear as arguments (closed-over weights) become
    *constants* of the tracer. ``Tracer.code()`` prints the program; ``Tracer.run`` replays it.

Tradeoffs (subclass vs mode)
    + Only ops that touch traced values are recorded; unrelated work in the program (logging,
      metrics on other tensors) stays out of the graph.
    + Several tracers can run side by side (each input carries its tracer).
    - Factories inside the program (``sk.zeros(3)``) are not seen: their results enter the
      graph as constants, where a mode would record the factory op (``make_graph`` does).
    - One wrapper per value; data-dependent Python (``if t.sum() > 0``) is specialised on the
      traced inputs, as in any tracer.
"""

from __future__ import annotations

import math

import subclass_kit as sk


class Tracer:
    """The graph being recorded: ``inputs`` (names), ``nodes`` ``(name, op, args, kwargs)``
    with argument values spelled as names, ``constants`` (name -> tensor), ``outputs``."""

    def __init__(self):
        self.inputs: list = []
        self.nodes: list = []
        self.constants: dict = {}
        self.outputs: list = []
        self._counts: dict = {}

    def fresh(self, prefix="t") -> str:
        n = self._counts.get(prefix, 0)
        self._counts[prefix] = n + 1
        return f"{prefix}{n}"

    def input(self, t: sk.Tensor, name: str | None = None) -> TracingTensor:
        """Start tracing ``t``: returns the TracingTensor standing for input ``name``."""
        name = name or self.fresh("x")
        self.inputs.append(name)
        return TracingTensor.wrap(t, name, self)

    def output(self, *values) -> None:
        """Mark the graph outputs. Raises TypeError for a value that is not a TracingTensor
        (e.g. a plain tensor written by ``out=``: it is a constant of the graph)."""
        for i, v in enumerate(values):
            if not isinstance(v, TracingTensor):
                raise TypeError(f"output {i} is a {type(v).__name__}, not a traced value: only "
                                "results computed from the traced inputs can be outputs")
        self.outputs = [v.name for v in values]

    def code(self) -> str:
        """The recorded program as Python source."""
        lines = [f"def traced({', '.join(self.inputs)}):"]
        for name, op, args, kwargs in self.nodes:
            parts = [_source(a) for a in args] + [f"{k}={_source(v)}" for k, v in kwargs.items()]
            lines.append(f"    {name} = {op!r}({', '.join(parts)})")
        lines.append(f"    return ({', '.join(self.outputs)},)")
        return "\n".join(lines) + "\n"

    def run(self, *inputs):
        """Replay the recorded program on new plain tensors; returns the outputs (a tuple)."""
        namespace = {"sk": sk, **self.constants}
        exec(compile(self.code(), "<traced>", "exec"), namespace)  # noqa: S102 (own code)
        return namespace["traced"](*inputs)


class _Name(str):
    """An argument that is a graph value: printed without quotes."""

    def __repr__(self):
        return str(self)


def _source(value) -> str:
    """Python source evaluating to ``value`` in ``Tracer.run``'s namespace: graph values by
    name, literals by ``repr`` -- except those whose ``repr`` is not source (a device prints
    ``device(type='meta')``, an infinite float ``inf``)."""
    if isinstance(value, sk.device):
        return f"sk.device({value.type!r})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, list):
        return "[" + ", ".join(_source(v) for v in value) + "]"
    if isinstance(value, tuple) and not isinstance(value, sk.Size):
        return "(" + "".join(_source(v) + ", " for v in value) + ")"
    return repr(value)


class TracingTensor(sk.Tensor):
    """A real tensor ``elem`` standing for graph value ``name`` of ``tracer``."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(elem, name, tracer) -> TracingTensor:
        w = sk.make_wrapper_subclass(TracingTensor, elem.shape, elem.stride(),
                                     elem.storage_offset(), dtype=elem.dtype,
                                     device=elem.device)
        w.elem, w.name, w.tracer = elem, name, tracer
        return w

    def __repr__(self):
        return f"TracingTensor({self.name}: {self.elem!r})"

    def __tensor_flatten__(self):
        return ["elem"], (self.name, self.tracer)

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return TracingTensor.wrap(inner["elem"], *ctx)

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracer = next(a.tracer for a in sk.pytree.tree_leaves((args, kwargs))
                      if isinstance(a, cls))

        def spell(x):
            if isinstance(x, cls):
                return _Name(x.name)
            if isinstance(x, sk.Tensor):          # a closed-over plain tensor
                name = tracer.fresh("const")
                tracer.constants[name] = x
                return _Name(name)
            return x

        g_args = sk.pytree.tree_map(spell, args)
        g_kwargs = sk.pytree.tree_map(spell, kwargs)
        out = func(*sk.pytree.tree_map_only(cls, lambda t: t.elem, args),
                   **sk.pytree.tree_map_only(cls, lambda t: t.elem, kwargs))
        name = tracer.fresh()
        tracer.nodes.append((name, func, tuple(g_args), dict(g_kwargs)))
        if isinstance(out, sk.Tensor):
            out = cls.wrap(out, name, tracer)
        elif isinstance(out, (list, tuple)):
            out = type(out)(cls.wrap(o, f"{name}[{i}]", tracer) if isinstance(o, sk.Tensor)
                            else o for i, o in enumerate(out))
        return sk.return_and_correct_aliasing(func, args, kwargs, out)


def trace(fn, *inputs):
    """Trace ``fn(*inputs)``: returns ``(tracer, outputs)`` with plain-tensor outputs."""
    tracer = Tracer()
    traced = [tracer.input(x, f"x{i}") for i, x in enumerate(inputs)]
    out = fn(*traced)
    outs = out if isinstance(out, (list, tuple)) else (out,)
    tracer.output(*outs)
    return tracer, tuple(o.elem for o in outs)
