"""``make_graph`` replays programs that mutate what they create: tensor literals the program
mutates (``lift_fresh_copy`` of a snapshot) and ``matmul(out=)`` / ``stack(out=)`` with an
``out`` that must be resized (dispatched ``resize_``). Each program runs directly, through
``Graph.run`` and through ``Graph.compile()`` on several fresh inputs, with equal values, sizes
and strides."""

from __future__ import annotations

import warnings

import pytest

import subclass_kit as sk
from subclass_kit.modes import LoggingMode, make_graph


def assert_same(a, b):
    assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
    assert a.dtype is b.dtype and a.tolist() == b.tolist()


def check_replays(fn, shape, runs=3):
    """Capture ``fn`` on one input, then compare it with its graph on ``runs`` fresh ones."""
    g = make_graph(fn)(sk.randn(*shape))
    compiled = g.compile()
    for _ in range(runs):
        x = sk.randn(*shape)
        expected = fn(x)
        assert_same(g.run(x), expected)
        assert_same(compiled(x), expected)
    return g


# -- constants the program mutates ---------------------------------------------------------------
def _mutated_literal(x):
    d = sk.tensor([0.0, 0.0, 0.0, 0.0])
    d.add_(x[0])
    return d


def test_mutated_literal_replays_from_its_initial_value():
    g = check_replays(_mutated_literal, (3, 4))
    assert 'lift_fresh_copy: "f32[4]" = sk.ops.lift_fresh_copy.default(_tensor_constant0)' in g.code
    assert "sk.ops.add_.Tensor(lift_fresh_copy, select)" in g.code
    assert g.constants["_tensor_constant0"].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_literal_snapshot_is_taken_when_lifted():
    # the constant holds the value at lift_fresh time, not the value after fn mutated it
    def f(x):
        d = sk.tensor([1.0, 2.0])
        d.mul_(x)
        d.add_(x)
        return d

    g = check_replays(f, (2,))
    assert g.constants["_tensor_constant0"].tolist() == [1.0, 2.0]
    x = sk.full((2,), 3.0)
    assert g.run(x).tolist() == g.run(x).tolist() == [6.0, 9.0]   # runs do not accumulate


def test_captured_output_is_the_programs_tensor():
    # the capture itself runs fn eagerly: its result is what fn returned, mutated
    x = sk.ones(3, 4)
    g = make_graph(_mutated_literal)(x)
    assert g.run(x).tolist() == [1.0] * 4
    assert g.run(x) is not g.run(x)


def test_unmutated_literal_and_parameter_constants():
    bias = sk.tensor([1.0, 2.0])
    g = check_replays(lambda x: x + sk.tensor([1.0, 2.0]) + bias, (2,))
    assert [repr(op) for op in g.ops] == ["sk.ops.lift_fresh_copy.default", "sk.ops.add.Tensor",
                                          "sk.ops.add.Tensor"]
    assert g.constants["_tensor_constant1"] is bias      # a parameter is held, not copied


def test_setitem_scalar_into_input_replays():
    def f(x):
        y = x.clone()
        y[0] = 5.0
        return y

    check_replays(f, (3, 2))


# -- out= composites that resize out --------------------------------------------------------------
def _matmul_out(x):
    o = sk.empty(0)
    sk.matmul(x, x.t(), out=o)
    return o


def _stack_out(x):
    o = sk.empty(0)
    r = sk.stack([x, x * 2], 1, out=o)
    assert r is o
    return o


def _matmul_out_batched(x):
    o = sk.empty(0)
    sk.matmul(x, x.transpose(-1, -2), out=o)
    return o


@pytest.mark.parametrize("fn, shape", [(_matmul_out, (3, 4)), (_matmul_out, (4,)),
                                       (_matmul_out_batched, (2, 3, 4)), (_stack_out, (3, 4))])
def test_out_resize_replays(fn, shape):
    g = check_replays(fn, shape)
    assert sk.ops.resize_.default in g.ops
    assert g.ops[-1] is sk.ops.copy_.default


def test_out_of_the_right_shape_is_not_resized():
    def f(x):
        o = sk.empty(3, 3)
        return sk.matmul(x, x.t(), out=o)

    g = check_replays(f, (3, 4))
    assert sk.ops.resize_.default not in g.ops


@pytest.mark.parametrize("call, shape", [
    (lambda x, o: sk.matmul(x, x.t(), out=o), (3, 3)),
    (lambda x, o: sk.stack([x, x], out=o), (2, 3, 4)),
], ids=["matmul_out", "stack_out"])
def test_logging_mode_sees_resize(call, shape):
    x, o = sk.randn(3, 4), sk.empty(0)
    with LoggingMode() as log:
        call(x, o)
    assert log.ops[-2:] == ["sk.ops.resize_.default", "sk.ops.copy_.default"]
    assert log.log[-2].args[1] == list(shape)
    assert tuple(o.shape) == shape and o._version == 1     # still one version bump


def test_out_resize_keeps_checks_and_warning():
    x = sk.randn(3, 4)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float"):
        sk.matmul(x, x.t(), out=sk.empty(0, dtype=sk.int64))
    o = sk.empty(2, 2)
    with LoggingMode() as log, warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sk.matmul(x, x.t(), out=o)
    assert "An output with one or more elements was resized" in str(w[0].message)
    assert w[0].filename == __file__                     # points at the caller
    assert "sk.ops.resize_.default" in log.ops and tuple(o.shape) == (3, 3)
    with sk.no_grad():                                   # as PyTorch: an out requiring grad
        o = sk.empty(0, requires_grad=True)              # is resized under no_grad
        sk.matmul(x, x.t(), out=o)
    assert tuple(o.shape) == (3, 3)
