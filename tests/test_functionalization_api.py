"""Functionalization's API: wrappers and their storage, versions and views, errors (PyTorch's
texts), inputs that alias each other (against eager torch), coverage of every op in ``sk.ops``,
and the JAX lowering."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from functionalization_corpus import CORPUS, PROGRAM_NAMES, make_inputs
from subclass_kit.modes import (FunctionalizeMode, FunctionalTensorWrapper, from_functional,
                                functionalize, make_graph, to_functional)
from subclass_kit.modes.functionalization import functional_variant, has_inverse
from subclass_kit.modes.functionalization.view_meta import copy_variant


# -- wrappers ---------------------------------------------------------------------------------------
def test_views_share_one_storage_version_and_base():
    x = to_functional(sk.arange(6.).view(2, 3))
    with FunctionalizeMode():
        y = x[0]
        z = y[1:]
        assert y.untyped_storage() is x.untyped_storage() is z.untyped_storage()
        assert y._base is x and z._base is x
        v = x._version
        z.add_(1)
        assert (x._version, y._version, z._version) == (v + 1,) * 3
        w = x * 2
        assert w.untyped_storage() is not x.untyped_storage() and w._base is None
    assert from_functional(x).tolist() == [[0.0, 2.0, 3.0], [3.0, 4.0, 5.0]]
    assert from_functional(z).tolist() == [2.0, 3.0]


def test_wrapper_mirrors_metadata_and_prints_its_value():
    x = to_functional(sk.zeros(2, 3))
    with FunctionalizeMode():
        x.t_()
        assert x.shape == (3, 2) and x.stride() == (1, 3)
        assert x.has_metadata_mutation
    assert repr(x).startswith("FunctionalTensorWrapper(tensor(")


def test_wrapper_outside_the_mode_and_data_ptr_raise():
    x = to_functional(sk.ones(2))
    with pytest.raises(RuntimeError, match="on its own. Instead, please use it with a "
                                           "corresponding FunctionalizeMode"):
        x + 1
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor"):
        x.data_ptr()
    with pytest.raises(TypeError):
        to_functional(x)


def test_mutations_queue_and_regenerate_lazily():
    base = sk.zeros(4)
    x = to_functional(base)
    with FunctionalizeMode():
        a, b = x[:2], x[2:]
        a.fill_(1)
        assert x.fstorage.generation == 1 and b.generation == 0     # b is stale, not rebuilt
        c = b + 1
        assert b.generation == 1                                    # rebuilt on use
    assert from_functional(c).tolist() == [1.0, 1.0]
    assert base.tolist() == [0.0] * 4                               # the input is untouched


# -- errors: PyTorch's texts ------------------------------------------------------------------------
def test_invalid_remove(torch):
    with pytest.raises(RuntimeError) as ours:
        functionalize(lambda x: x, remove="foo")
    with pytest.raises(RuntimeError) as theirs:
        torch.func.functionalize(lambda x: x, remove="foo")
    assert str(ours.value) == str(theirs.value)


def test_mutating_a_global_with_a_functional_tensor_raises_and_leaves_it():
    g = sk.zeros(3)

    def f(x):
        g.add_(x)
        return x
    x = sk.ones(3)
    stack = sk.get_mode_stack()
    with pytest.raises(RuntimeError, match="mutating a non-functional tensor with a functional "
                                           "tensor is not allowed. Please ensure that all of "
                                           "your inputs are wrapped inside of a functionalize"):
        functionalize(f)(x)
    assert g.tolist() == [0.0] * 3 and g._version == 0 and sk.get_mode_stack() == stack


def test_resize_a_view_larger(torch):
    def f(L, x):
        y = x.view(-1)
        y.resize_(20)
        return y
    with pytest.raises(RuntimeError) as theirs:
        torch.func.functionalize(lambda x: f(torch, x))(torch.ones(2, 3))
    with pytest.raises(RuntimeError) as ours:
        functionalize(lambda x: f(sk, x))(sk.ones(2, 3))
    assert str(ours.value) == str(theirs.value)


def test_mutation_through_as_strided_of_a_view_is_banned():
    def f(x):
        x[1:].as_strided((2,), (1,), 1).add_(1)
        return x
    with pytest.raises(RuntimeError, match="encountered a mutation on a view chain of length 2, "
                                           "where view 1 was an as_strided"):
        functionalize(f)(sk.ones(6))


def test_set_freezes_the_old_storage():
    def f(x):
        old_view = x[0:1]
        x.set_(sk.zeros(3))
        old_view.add_(1)
        return x
    with pytest.raises(RuntimeError, match="cannot mutate tensors with frozen storage"):
        functionalize(f)(sk.ones(3))


def test_set_with_a_storage_cannot_be_functionalized():
    def f(x):
        x.set_(sk.ones(3).untyped_storage(), 0, [3], [1])
        return x
    with pytest.raises(RuntimeError, match="cannot be functionalized"):
        functionalize(f)(sk.ones(2))


def test_in_place_shape_error_is_the_eager_one_and_input_unchanged():
    x = sk.ones(3)
    with pytest.raises(RuntimeError) as eager:
        sk.ones(3).add_(sk.ones(2, 3))
    with pytest.raises(RuntimeError) as ours:
        functionalize(lambda x: x.add_(sk.ones(2, 3)))(x)
    assert str(ours.value) == str(eager.value)
    assert x.tolist() == [1.0] * 3 and x._version == 0


def test_in_place_write_to_an_expanded_view_raises_as_eager():
    with pytest.raises(RuntimeError) as eager:
        sk.ones(1, 3).expand(2, 3).add_(1)
    x = sk.ones(1, 3)
    with pytest.raises(RuntimeError) as ours:
        functionalize(lambda x: x.expand(2, 3).add_(1))(x)
    assert str(ours.value) == str(eager.value)
    assert x.tolist() == [[1.0, 1.0, 1.0]]


def test_out_dtype_error_is_the_eager_one():
    with pytest.raises(RuntimeError) as eager:
        sk.add(sk.ones(2), 0.5, out=sk.zeros(2, dtype=sk.int64))
    with pytest.raises(RuntimeError) as ours:
        functionalize(lambda x, o: sk.add(x, 0.5, out=o))(sk.ones(2),
                                                          sk.zeros(2, dtype=sk.int64))
    assert str(ours.value) == str(eager.value)


# -- aliased inputs: the eager result (a synthetic base) ---------------------------------------------
ALIASED = {
    "view_and_base": (lambda x: (x, x[0]), lambda a, b: (b.mul_(2), a.add_(1))),
    "base_mutated_view_read": (lambda x: (x, x.view(-1)), lambda a, b: (a.mul_(3), b + 0)),
    "two_overlapping_views": (lambda x: (x[0:2], x[1:3]),
                              lambda a, b: (a.add_(10), b.mul_(2))),
    "transposed_alias": (lambda x: (x, x.t()), lambda a, b: (b[0].fill_(-1), a + 0)),
    "same_tensor_twice": (lambda x: (x, x), lambda a, b: (a.add_(1), b.add_(1))),
}


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@pytest.mark.parametrize("name", sorted(ALIASED))
def test_aliased_inputs_give_the_eager_result(torch, name, remove):
    make, body = ALIASED[name]
    tx = torch.arange(9.).view(3, 3)
    sx = sk.arange(9.).view(3, 3)
    want = body(*make(tx))
    got = functionalize(body, remove=remove)(*make(sx))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(sx.numpy(), tx.numpy())


def test_aliased_inputs_graph_replays():
    make, body = ALIASED["two_overlapping_views"]
    g = make_graph(functionalize(body))(*make(sk.arange(9.).view(3, 3)))
    x = sk.arange(9.).view(3, 3)
    y = sk.arange(9.).view(3, 3)
    g.run(*make(x))
    body(*make(y))
    assert x.tolist() == y.tolist()


def test_return_view_of_input_shares_its_storage():
    x = sk.ones(2, 3)
    out = functionalize(lambda x: x.t())(x)
    assert out.untyped_storage() is x.untyped_storage()
    out = functionalize(lambda x: x.t(), remove="mutations_and_views")(x)
    assert out.untyped_storage() is not x.untyped_storage()


# -- coverage: every op of sk.ops ---------------------------------------------------------------------
# Mutating ops with no functional variant that functionalization handles itself.
HANDLED = {"resize_as_.default", "set_.source_Tensor"}
REFUSED = {"set_.source_Storage_storage_offset"}      # "cannot be functionalized"


def _primitive(op):
    return op.decomposition is None


@pytest.mark.parametrize("op", [op for op in sk.ops if _primitive(op) and op.is_view],
                         ids=lambda op: op.__name__)
def test_every_view_op_has_replay_and_inverse(op):
    if op is sk.ops.lift_fresh.default:
        pytest.skip("lift_fresh makes a fresh functional tensor, no view step")
    assert has_inverse(op), f"{op}: no inverse (view_meta._INVERSES)"
    assert copy_variant(op) is not None, f"{op}: no *_copy op in sk.ops"


@pytest.mark.parametrize("op", [op for op in sk.ops if _primitive(op) and op.is_mutable],
                         ids=lambda op: op.__name__)
def test_every_mutating_op_has_a_functional_variant(op):
    name = op.__name__
    if name in HANDLED:
        return
    fv = functional_variant(op)
    if name in REFUSED:
        assert fv is None
        return
    assert fv is not None, f"{op}: no functional variant"
    assert not fv.is_mutable
    given = {a.name for a in op.schema.arguments}
    for a in fv.schema.arguments:
        assert a.name in given or a.has_default, f"{fv} takes {a.name}, which {op} lacks"
    if op.is_inplace and "inplace_view" in op.tags and name != "resize_.default":
        assert fv.is_view       # t_ -> t: replayed as a view step


def test_cannot_functionalize_error_names_the_op():
    from subclass_kit.modes.functionalization.mode import cannot_functionalize
    assert "set_.source_Storage_storage_offset" in cannot_functionalize(
        sk.ops.set_.source_Storage_storage_offset)


# -- JAX lowering ----------------------------------------------------------------------------------
def _jax():
    jax = pytest.importorskip("jax", reason="JAX is the optional extra `jax` "
                                            "(pip install 'subclass-kit[jax]'); not installed")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_to_jax_refuses_a_graph_that_mutates():
    _jax()
    g = make_graph(lambda x: x.add_(1))(sk.ones(2))
    with pytest.raises(ValueError, match=r"node add_ = sk.ops.add_.Tensor\(...\) mutates self"):
        g.to_jax()


UNLOWERED = {"item_read_after_mutation": "reads data (_local_scalar_dense)",
             "random_fill_shape": "random fill"}
# as_strided of a tensor not laid out row-major: JAX arrays have no strides, the lowering
# indexes the row-major flattening (docs/functionalization.md, "Lowering to JAX")
UNLOWERED.update(dict.fromkeys(
    ["as_strided_of_a_transposed_view", "as_strided_of_a_slice_of_an_intermediate",
     "as_strided_of_a_transposed_intermediate",
     "writes_through_as_strided_of_a_computed_transposed_base",
     "writes_through_as_strided_of_a_transposed_clone"],
    "as_strided of a tensor not laid out row-major (JAX arrays have no strides)"))


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_to_jax_runs_the_corpus_under_jit(torch, name):
    jax = _jax()
    if name in UNLOWERED:
        pytest.skip(UNLOWERED[name])
    fn, shapes = CORPUS[name]
    g = make_graph(functionalize(lambda *a: fn(sk, *a)))(*make_inputs(sk, shapes))
    lowered = g.to_jax()
    new_torch = make_inputs(torch, shapes, offset=-3.0)
    want = fn(torch, *new_torch)
    res = jax.jit(lowered)(*[jax.numpy.asarray(t.numpy()) for t in make_inputs(sk, shapes, -3.0)])
    if lowered.mutated_inputs:
        res, new_inputs = res
        for i, v in zip(lowered.mutated_inputs, new_inputs):
            np.testing.assert_allclose(np.asarray(v), new_torch[i].numpy(), rtol=1e-6)
    want = want if isinstance(want, tuple) else (want,)
    res = res if isinstance(res, (tuple, list)) else (res,)
    for a, b in zip(res, want):
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-6)


def test_random_in_place_fills_draw_the_eager_numbers():
    def f(x):
        x[0].uniform_(-1, 1)
        x[1].normal_(2, 3)
        return x[2].zero_()
    sk.manual_seed(7)
    eager_in = sk.ones(3, 4)
    f(eager_in)
    sk.manual_seed(7)
    ours_in = sk.ones(3, 4)
    functionalize(f)(ours_in)
    assert ours_in.tolist() == eager_in.tolist()
    g = make_graph(functionalize(f))(sk.ones(3, 4))
    assert {"uniform.default", "normal_functional.default", "zero.default"} <= {
        n.op.__name__ for n in g.calls}


def _train_step(lib):
    """A forward with an in-place op on a view of an intermediate, then the gradient."""
    def f(x, w):
        y = x @ w
        y[:, 0].mul_(2)
        loss = y.tanh().sum()
        gw, = lib.autograd.grad(loss, [w])
        return loss, gw
    return f


def test_forward_and_backward_capture_as_one_functional_graph(torch):
    """With the autograd mode above functionalization, a program that calls
    ``sk.autograd.grad`` is captured as one mutation-free forward + backward graph (what
    AOTAutograd produces), which replays to torch's eager loss and gradient."""
    gen = torch.Generator().manual_seed(0)
    tx = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    tw = torch.randn(3, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    t_loss, t_grad = _train_step(torch)(tx, tw)
    x, w = sk.tensor(tx.numpy()), sk.tensor(tw.detach().numpy()).requires_grad_()
    graph = make_graph(functionalize(_train_step(sk)))(x, w)
    ops = [c.op for c in graph.calls]
    assert not [op for op in ops if op.is_mutable], ops
    assert sk.ops.mm.default in ops and sk.ops.select_scatter.default in ops
    assert sum(op is sk.ops.mm.default for op in ops) == 2       # forward and backward
    x2 = sk.tensor(tx.numpy() * 0.5)
    loss, grad = graph.run(x2, w.detach())
    t_loss2, t_grad2 = _train_step(torch)(tx * 0.5, tw)
    np.testing.assert_allclose(float(loss), float(t_loss2), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), t_grad2.numpy(), rtol=1e-12)
    eager_loss, eager_grad = functionalize(_train_step(sk))(x, w)
    np.testing.assert_allclose(eager_grad.numpy(), t_grad.detach().numpy(), rtol=1e-12)
    assert w.grad is None and w.is_leaf
