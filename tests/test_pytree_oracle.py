"""``sk.pytree`` against ``torch.utils._pytree``: the same nested containers flatten to the same
leaves, map to the same trees, and multi-tree ``tree_map`` pairs leaves (dicts by key) or
raises the same ValueError when the structures differ."""

from __future__ import annotations

import re
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

from subclass_kit import pytree

torch = pytest.importorskip("torch", reason="torch's pytree is the oracle")
pytest.importorskip("hypothesis", reason="hypothesis builds the trees")
import torch.utils._pytree as torch_pytree  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

Pair = namedtuple("Pair", "a b")
_keys = st.sampled_from("abcd")


def _containers(children):
    dicts = st.dictionaries(_keys, children, max_size=3)
    return st.one_of(
        st.lists(children, max_size=3), st.tuples(children, children), dicts,
        dicts.map(OrderedDict), dicts.map(lambda d: defaultdict(list, d)),
        st.lists(children, max_size=3).map(deque), st.builds(Pair, children, children))


_trees = st.recursive(st.integers(-5, 5) | st.none(), _containers, max_leaves=10)


def _outcome(fn):
    try:
        return "ok", repr(fn())
    except ValueError as e:
        # torch names the node type of any named tuple as the ``namedtuple`` function
        return "ValueError", re.sub(r"<function namedtuple at 0x[0-9a-f]+>|<class '[\w.]*Pair'>",
                                    "<namedtuple>", str(e))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_trees)
def test_flatten_and_map_match_torch(tree):
    ours, theirs = pytree.tree_flatten(tree)[0], torch_pytree.tree_flatten(tree)[0]
    assert ours == theirs
    bump = lambda x: None if x is None else x + 1   # noqa: E731
    assert repr(pytree.tree_map(bump, tree)) == repr(torch_pytree.tree_map(bump, tree))
    leaves, spec = pytree.tree_flatten(tree)
    assert repr(pytree.tree_unflatten(leaves, spec)) == repr(tree)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_trees, _trees)
def test_two_tree_map_pairs_or_raises_like_torch(tree, other):
    pair = lambda x, y: (x, y)                      # noqa: E731
    assert (_outcome(lambda: pytree.tree_map(pair, tree, other))
            == _outcome(lambda: torch_pytree.tree_map(pair, tree, other)))


@pytest.mark.parametrize("tree,other", [
    ([1, 2], [1, 2, 3]), ([1, 2], (1, 2)), ({"a": 1, "b": 2}, {"b": 10, "a": 20}),
    ({"a": 1}, {"b": 1}), (OrderedDict(b=1, a=2), {"a": 3, "b": 4}), ([1, [2]], [[0, 0], [3]]),
])
def test_two_tree_map_examples(tree, other):
    pair = lambda x, y: (x, y)                      # noqa: E731
    assert (_outcome(lambda: pytree.tree_map(pair, tree, other))
            == _outcome(lambda: torch_pytree.tree_map(pair, tree, other)))
