"""Tests of the tracing tensor example (tracing_tensor.py)."""

from tracing_tensor import TracingTensor, trace

import subclass_kit as sk


def test_records_ops_as_code_and_replays():
    w = sk.arange(12.0).view(4, 3)

    def f(x, b):
        h = (x @ w.t() + b).relu()
        return h.reshape(-1), h.sum()

    x, b = sk.arange(6.0).view(2, 3) - 2, sk.ones(4)
    tracer, outs = trace(f, x, b)
    assert [o.tolist() for o in outs] == [v.tolist() for v in f(x, b)]
    code = tracer.code()
    assert code.splitlines()[0] == "def traced(x0, x1):"
    assert "t0 = sk.ops.mm.default(x0, const0)" in code  # w.t() ran outside: a constant
    assert tracer.constants["const0"].shape == (3, 4)
    x2, b2 = sk.ones(2, 3), sk.full((4,), -20.0)
    replay = tracer.run(x2, b2)
    assert [o.tolist() for o in replay] == [v.tolist() for v in f(x2, b2)]


def test_multi_output_and_views_alias():
    tracer = __import__("tracing_tensor").Tracer()
    x = tracer.input(sk.arange(6.0), "x")
    a, b = x.split(3)
    assert isinstance(a, TracingTensor) and a.name.endswith("[0]")
    assert a._base is x and a.untyped_storage() is x.untyped_storage()
    y = a.add_(1)
    assert y is a and x._version == 1
    tracer.output(b * 2)
    assert tracer.run(sk.zeros(6))[0].tolist() == [0.0, 0.0, 0.0]


def test_factories_inside_become_constants():
    def f(x):
        return x + sk.ones(2)

    tracer, _ = trace(f, sk.zeros(2))
    assert len(tracer.constants) == 1 and len(tracer.nodes) == 1
