"""Functionalized graphs: the twelve canonical graphs of SEMANTICS.md §6.4 op for op (ours, and
torch's ``make_fx(torch.func.functionalize(f))`` where they must agree), mutation- and view-free
graphs over the whole corpus that replay on new inputs to eager torch's results, and
``Graph.eliminate_dead_code``."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from functionalization_corpus import CORPUS, PROGRAM_NAMES, make_inputs
from subclass_kit.modes import functionalize, make_graph

REMOVES = ("mutations", "mutations_and_views")


def _graph(name, remove="mutations", offset=1.0):
    fn, shapes = CORPUS[name]
    return make_graph(functionalize(lambda *a: fn(sk, *a), remove=remove))(
        *make_inputs(sk, shapes, offset))


def _names(graph):
    return [n.op.__name__ for n in graph.calls]


# -- the twelve canonical graphs (SEMANTICS.md §6.4), "dead" regeneration nodes included -------
CANONICAL = {
    "view_add_return_base": ["view.default", "add.Tensor", "view.default", "view.default",
                             "copy_.default"],
    "intermediate_mutation": ["full.default", "view.default", "add.Tensor", "view.default",
                              "view.default"],
    "input_mutation": ["add.Tensor", "mul.Tensor", "copy_.default"],
    "select_mul": ["select.int", "mul.Tensor", "select_scatter.default", "select.int",
                   "copy_.default"],
    "transpose_inplace_then_add": ["clone.default", "transpose.int", "add.Tensor",
                                   "transpose.int", "transpose.int"],
    "split_add": ["split.Tensor", "add.Tensor", "slice_scatter.default", "split.Tensor",
                  "copy_.default"],
    "setitem_row_scalar": ["clone.default", "lift_fresh_copy.default", "select.int",
                           "fill.Tensor", "select_scatter.default", "select.int"],
    "view_of_view": ["view.default", "slice.Tensor", "mul.Tensor", "view.default",
                     "slice_scatter.default", "view.default", "view.default", "slice.Tensor",
                     "view.default", "copy_.default"],
    "two_views_then_base_mutation": ["view.default", "view.default", "add.Tensor",
                                     "view.default", "mul.Tensor", "view.default", "mul.Tensor",
                                     "copy_.default"],
    "copy_into_view": ["view.default", "view.default", "mul.Tensor", "copy.default",
                       "view.default", "view.default", "copy_.default"],
    "out_into_empty": ["empty.memory_format", "add.Tensor"],
    "resize_smaller_then_add": ["clone.default", "resize.default", "as_strided.default",
                                "add.Tensor", "as_strided_scatter.default",
                                "as_strided.default"],
}

# Where our op names differ from aten's for the same call: ``sk.ones`` is ``full`` here.
_ATEN_NAMES = {"ones.default": "full.default"}


@pytest.mark.parametrize("name", sorted(CANONICAL))
def test_canonical_graph_op_for_op(name):
    assert _names(_graph(name)) == CANONICAL[name]


@pytest.mark.parametrize("name", sorted(CANONICAL))
def test_canonical_graph_views_mode_uses_copies(name):
    expected = [_copy_name(n) for n in CANONICAL[name]]
    assert _names(_graph(name, "mutations_and_views")) == expected


def _copy_name(n):
    base, _, overload = n.partition(".")
    views = {"view", "select", "slice", "transpose", "split", "as_strided", "t", "unbind"}
    return f"{base}_copy.{overload}" if base in views else n


@pytest.mark.parametrize("name", sorted(CANONICAL))
def test_canonical_graph_matches_make_fx(torch, name):
    from torch.fx.experimental.proxy_tensor import make_fx
    fn, shapes = CORPUS[name]
    g = make_fx(torch.func.functionalize(lambda *a: fn(torch, *a)))(
        *make_inputs(torch, shapes))
    theirs = [str(n.target).removeprefix("aten.") for n in g.graph.nodes
              if n.op == "call_function" and "getitem" not in str(n.target)]
    theirs = [_ATEN_NAMES.get(t, t) for t in theirs]
    assert _names(_graph(name)) == theirs


# Programs whose op stream must equal make_fx(functionalize(f))'s beyond the canonical twelve.
SAME_STREAM = ["mutate_through_t", "mutate_through_diagonal", "mutate_through_narrow",
               "mutate_through_step_slice", "mutate_through_squeeze", "mutate_through_unsqueeze",
               "setitem_int", "fill_zero_ops", "input_t_", "mutate_then_return_view",
               "in_place_on_clone_keeps_input", "out_into_input"]


@pytest.mark.parametrize("name", SAME_STREAM)
def test_op_stream_matches_make_fx(torch, name):
    from torch.fx.experimental.proxy_tensor import make_fx
    fn, shapes = CORPUS[name]
    g = make_fx(torch.func.functionalize(lambda *a: fn(torch, *a)))(
        *make_inputs(torch, shapes))
    theirs = [str(n.target).removeprefix("aten.") for n in g.graph.nodes
              if n.op == "call_function" and "getitem" not in str(n.target)]
    ours = [_OUR_ALIASES.get(n, n) for n in _names(_graph(name))]
    assert ours == theirs


# Overloads aten has and sk.ops spells as one: ``squeeze.dims`` covers ``squeeze.dim``.
_OUR_ALIASES = {"squeeze.dims": "squeeze.dim", "full.default": "ones.default",
                "zero.default": "zero.default"}


def test_unbind_regenerates_one_output_not_all():
    """A deliberate difference: an ``unbind`` output replays as ``select`` (PyTorch replays the
    whole ``unbind``, which makes loops over its outputs quadratic)."""
    assert _names(_graph("mutate_through_unbind"))[:5] == [
        "unbind.int", "mul.Tensor", "select_scatter.default", "select.int", "select.int"]


# -- every corpus program: functional graphs that replay ---------------------------------------
def _mutates_only_inputs(graph):
    placeholders = set(graph.placeholders)
    bad = []
    for n in graph.calls:
        if n.op.is_mutable:
            target = n.args[0]
            while target.node.kind == "call" and target.node.op.is_inplace:
                target = target.node.args[0]      # as_strided_(x) returns x
            if n.op.__name__ not in ("copy_.default", "as_strided_.default", "resize_.default") \
                    or target.node not in placeholders:
                bad.append(n)
    return bad


@pytest.mark.parametrize("remove", REMOVES)
@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_graph_is_functional_and_replays(torch, name, remove):
    fn, shapes = CORPUS[name]
    graph = _graph(name, remove)
    assert _mutates_only_inputs(graph) == []
    if remove == "mutations_and_views":
        views = [n for n in graph.calls if n.op.is_view]
        assert views == []
    if name == "random_fill_shape":
        return
    new_sk = make_inputs(sk, shapes, offset=-3.0)
    new_torch = make_inputs(torch, shapes, offset=-3.0)
    got = graph.run(*new_sk)
    want = fn(torch, *new_torch)
    _assert_same(got, want)
    for a, b in zip(new_sk, new_torch):
        _assert_same(a, b)


def _assert_same(ours, theirs):
    ours = ours if isinstance(ours, (tuple, list)) else (ours,)
    theirs = theirs if isinstance(theirs, (tuple, list)) else (theirs,)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if not isinstance(b, type(b)) or not hasattr(b, "shape"):
            assert a == b
            continue
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


# -- dead code elimination -------------------------------------------------------------------------
def test_eliminate_dead_code_removes_regeneration_nodes():
    g = _graph("view_add_return_base")
    removed = g.eliminate_dead_code()
    assert removed == 1
    assert _names(g) == ["view.default", "add.Tensor", "view.default", "copy_.default"]
    x = sk.arange(8.).view(4, 2)
    out = g.run(x)
    np.testing.assert_array_equal(out.numpy(), (np.arange(8.) + 1).reshape(4, 2))
    np.testing.assert_array_equal(x.numpy(), (np.arange(8.) + 1).reshape(4, 2))


def test_eliminate_dead_code_keeps_mutations_and_random_ops():
    def f(x):
        y = sk.empty(3)
        y.uniform_()          # unused, but it moves the generator
        x.add_(1)
        x.mul(5)              # dead
        return None
    g = make_graph(f)(sk.ones(3))
    g.eliminate_dead_code()
    assert _names(g) == ["empty.memory_format", "uniform_.default", "add_.Tensor"]


def test_eliminate_dead_code_on_the_canonical_graphs_keeps_results():
    for name in CANONICAL:
        fn, shapes = CORPUS[name]
        g = _graph(name)
        before = g.run(*make_inputs(sk, shapes))
        g.eliminate_dead_code()
        after = g.run(*make_inputs(sk, shapes))
        _assert_same(after, tuple(t for t in (before if isinstance(before, tuple) else (before,))))


def test_unbind_loop_runs_a_linear_number_of_ops():
    """Linear regeneration, counted deterministically (bench/functionalize.py times it): four
    ops per mutation (regenerate, mul, select_scatter, dead regenerate) plus unbind and the
    epilogue, whatever N."""
    def f(x):
        for i, v in enumerate(x.unbind(1)):
            v.mul_(i + 1)
        return x
    for n in (10, 100, 400):
        g = make_graph(functionalize(f))(sk.ones(8, n))
        # unbind + 3 ops for column 0 (fresh, no regeneration) + 4 per later column + copy_
        assert len(g.calls) == 1 + 3 + 4 * (n - 1) + 1
