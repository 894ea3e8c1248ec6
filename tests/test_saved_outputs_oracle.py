"""Outputs saved for backward, as PyTorch's ``SavedVariable`` keeps them.

A node that saves its own output (``tanh``, ``exp``, a custom Function saving what it returns)
keeps it detached: the output holds the node as its ``grad_fn``, so the node must not hold the
output, or every such graph is a reference cycle left to the garbage collector. Modes see the
``detach`` at save and another as the node unpacks the output, which comes back with the node as
its ``grad_fn`` (a new object each time). A non-differentiable output (``native_layer_norm``'s
mean and rstd) is saved as is. Everything here is compared with torch, op streams included.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for saved outputs")
from oracle import SkOpLog, to_torch, torch_op_log  # noqa: E402

PROGRAMS = {
    "tanh": lambda m, x: x.tanh(),
    "exp_then_sigmoid": lambda m, x: x.exp().sigmoid(),
    "mlp_layer": lambda m, x: m.addmm(x[0, :3], x, x.t()).tanh(),
    "softmax": lambda m, x: x.softmax(1),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (x.shape[1],)),
}


def _custom(m):
    class ExpSaved(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y
    return ExpSaved


PROGRAMS["custom_function"] = lambda m, x: _custom(m).apply(x)


@pytest.fixture
def no_collector():
    """Run with the cyclic garbage collector off: what is freed is freed by reference counts."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _x(m):
    values = np.linspace(-1.5, 1.2, 12).reshape(3, 4)
    x = sk.tensor(values) if m is sk else torch.tensor(values)
    return x.requires_grad_()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_op_streams_are_torchs(name):
    """Forward and backward op streams, the saved outputs' ``detach`` included."""
    streams = []
    for m, log in ((sk, SkOpLog), (torch, torch_op_log)):
        x = _x(m)
        with log() as forward:
            y = PROGRAMS[name](m, x)
        with log() as backward:
            y.sum().backward()
        streams.append((forward.ops, backward.ops, x.grad.detach().numpy()))
    (f, b, g), (tf, tb, tg) = streams
    assert f == tf
    assert b == tb
    np.testing.assert_allclose(g, tg, rtol=1e-12, atol=1e-13)


# PyTorch's nodes take no weak references, so these two hold for ours alone; its graphs are
# freed by reference counts by design (SavedVariable's note on cycles).
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_is_freed_by_reference_counts(name, no_collector):
    """Dropping the output frees its node and what it saved, with no collection."""
    y = PROGRAMS[name](sk, _x(sk))
    node, data = weakref.ref(y.grad_fn), weakref.ref(y._storage)
    del y
    assert node() is None and data() is None


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_after_backward_is_freed_by_reference_counts(name, no_collector):
    x = _x(sk)
    y = PROGRAMS[name](sk, x)
    node = weakref.ref(y.grad_fn)
    y.sum().backward()
    del y
    assert node() is None


def test_saved_result_is_a_new_alias_with_the_node_as_grad_fn():
    facts = []
    for m in (sk, torch):
        y = _x(m).tanh()
        r = y.grad_fn._saved_result
        facts.append((r is y, r.grad_fn is y.grad_fn, r._version, r.requires_grad,
                      r.is_leaf, np.array_equal(r.detach().numpy(), y.detach().numpy())))
    assert facts[0] == facts[1]


def test_saved_output_modified_in_place_names_its_node():
    """The version check of a detached saved output still names the node that made it."""
    errors = []
    for m in (sk, torch):
        y = _x(m).exp()
        with m.no_grad():
            y.add_(1)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        errors.append(str(e.value))
    assert errors[0].replace("[sk.", "[torch.") == errors[1]
    assert "which is output 0 of Exp, is at version 1; expected version 0" in errors[0]


def test_double_backward_through_a_saved_output():
    """The unpacked output carries the node, so create_graph differentiates through it."""
    outs = []
    for m in (sk, torch):
        x = _x(m)
        (g,) = m.autograd.grad(x.exp().tanh().sum(), x, create_graph=True)
        (h,) = m.autograd.grad((g * g).sum(), x)
        outs.append((g.detach().numpy(), h.numpy()))
    for ours, theirs in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def test_saved_outputs_keep_their_storage_alive_after_the_output_dies():
    """The node's detached alias holds the data when the user drops the output."""
    for m in (sk, torch):
        x = _x(m)
        z = x.exp()
        node = z.grad_fn
        expected = z.detach().numpy().copy()
        del z
        np.testing.assert_array_equal(node._saved_result.detach().numpy(), expected)


def test_custom_function_saving_an_input_saves_it_as_is():
    """Only outputs are detached: a saved input shows no ``detach`` (torch neither)."""
    streams = []
    for m, log in ((sk, SkOpLog), (torch, torch_op_log)):
        class Scale(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 + x * 0

        x = to_torch(_x(sk).detach(), requires_grad=True) if m is torch else _x(sk)
        with log() as forward:
            y = Scale.apply(x)
        with log() as backward:
            y.sum().backward()
        streams.append((forward.ops, backward.ops))
    assert streams[0] == streams[1]
