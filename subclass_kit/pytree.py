"""Pytrees: nested containers of leaves (PyTorch's ``torch.utils._pytree``, JAX's tree_util).

Containers: ``list``, ``tuple``, named tuples, ``dict``, ``OrderedDict``, ``defaultdict`` (keys
in insertion order), ``deque`` and types registered with :func:`register_pytree_node`;
everything else (tensors, numbers, None) is a leaf, as in PyTorch.
Handlers flatten args of a dispatch call with ``tree_map(unwrap, args)`` and rebuild outputs.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from typing import Any, Callable, NamedTuple

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_map", "tree_map_only",
           "tree_leaves", "register_pytree_node", "PyTree"]


class _Node(NamedTuple):
    flatten: Callable
    unflatten: Callable


_NODES: dict = {}
# Types known to be leaves (not containers): one set lookup per leaf on the mapping hot path.
# Cleared when a node type is registered.
_LEAF_TYPES: set = set()


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``. Raises ValueError if ``cls`` is registered."""
    if cls in _NODES:
        raise ValueError(f"{cls.__name__} is already registered as a pytree node")
    _NODES[cls] = _Node(flatten_fn, unflatten_fn)
    _LEAF_TYPES.clear()


register_pytree_node(list, lambda x: (list(x), None), lambda c, _: list(c))
register_pytree_node(tuple, lambda x: (list(x), None), lambda c, _: tuple(c))
register_pytree_node(dict, lambda x: (list(x.values()), list(x.keys())),
                     lambda c, keys: dict(zip(keys, c)))
register_pytree_node(OrderedDict, lambda x: (list(x.values()), list(x.keys())),
                     lambda c, keys: OrderedDict(zip(keys, c)))
register_pytree_node(defaultdict,
                     lambda x: (list(x.values()), [x.default_factory, list(x.keys())]),
                     lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c)))
register_pytree_node(deque, lambda x: (list(x), x.maxlen),
                     lambda c, maxlen: deque(c, maxlen=maxlen))


def _dict_keys(spec) -> list | None:
    """The keys of a dict-like node's spec (children are matched by key), else None."""
    if spec.type is dict or spec.type is OrderedDict:
        return spec.context
    if spec.type is defaultdict:
        return spec.context[1]
    return None


class TreeSpec:
    """The structure of a flattened tree: node type, context and child specs."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, type_, context, children):
        self.type = type_
        self.context = context
        self.children = children
        self.num_leaves = sum(c.num_leaves for c in children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __repr__(self):
        return f"TreeSpec({self.type.__name__}, {self.context!r}, {self.children!r})"


class LeafSpec(TreeSpec):
    __slots__ = ()

    def __init__(self):
        self.type = None
        self.context = None
        self.children = []
        self.num_leaves = 1

    def __repr__(self):
        return "*"


_LEAF = LeafSpec()


def _node_of(x):
    t = type(x)
    node = _NODES.get(t)
    if node is None and isinstance(x, tuple) and hasattr(t, "_fields"):
        return _Node(lambda v: (list(v), None), lambda c, _, t=t: t(*c))
    return node


def _flatten(x, leaves: list) -> TreeSpec:
    node = _node_of(x)
    if node is None:
        leaves.append(x)
        return _LEAF
    children, ctx = node.flatten(x)
    return TreeSpec(type(x), ctx, [_flatten(c, leaves) for c in children])


def tree_flatten(tree: Any):
    """``(leaves, spec)``: the leaves in depth-first order and the structure to rebuild."""
    leaves: list = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def tree_leaves(tree: Any) -> list:
    return tree_flatten(tree)[0]


def _unflatten(spec: TreeSpec, it):
    if spec.type is None:
        return next(it)
    children = [_unflatten(c, it) for c in spec.children]
    node = _NODES.get(spec.type)
    if node is None:  # a named tuple
        return spec.type(*children)
    return node.unflatten(children, spec.context)


def tree_unflatten(leaves, spec: TreeSpec):
    """Rebuild a tree from ``leaves`` and ``spec``. Raises ValueError on a leaf-count mismatch."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten(leaves, spec): expected {spec.num_leaves} leaves, got "
                         f"{len(leaves)}")
    return _unflatten(spec, iter(leaves))


def _leaf(t) -> bool:
    """Whether ``t`` is a leaf type (not a registered node, not a named tuple); leaf types are
    remembered in ``_LEAF_TYPES``, which callers check first."""
    if t in _NODES or (issubclass(t, tuple) and hasattr(t, "_fields")):
        return False
    if len(_LEAF_TYPES) >= 1024:
        _LEAF_TYPES.clear()
    _LEAF_TYPES.add(t)
    return True


def _map(fn, x):
    """``tree_map(fn, x)`` without building a spec: containers rebuilt recursively, leaves
    mapped in depth-first order."""
    t = type(x)
    if t is list or t is tuple:
        out = []
        for c in x:
            tc = type(c)
            if tc in _LEAF_TYPES or (tc not in _NODES and _leaf(tc)):
                out.append(fn(c))
            else:
                out.append(_map(fn, c))
        return out if t is list else tuple(out)
    if t is dict:
        out = {}
        for k, v in x.items():
            tv = type(v)
            if tv in _LEAF_TYPES or (tv not in _NODES and _leaf(tv)):
                out[k] = fn(v)
            else:
                out[k] = _map(fn, v)
        return out
    if t in _LEAF_TYPES:
        return fn(x)
    node = _node_of(x)
    if node is None:
        return fn(x)
    children, ctx = node.flatten(x)
    return node.unflatten([_map(fn, c) for c in children], ctx)


def _flatten_up_to(spec: TreeSpec, tree, leaves: list):
    """The leaves of ``tree`` at the positions of ``spec``'s leaves (a leaf of ``spec`` takes
    a whole subtree); dict-like children are matched by key. Raises ValueError, with
    PyTorch's texts, when the structure differs."""
    if spec.type is None:
        leaves.append(tree)
        return
    keys = _dict_keys(spec)
    if keys is not None and isinstance(tree, dict):
        if len(tree) != len(keys):
            raise ValueError(f"Node arity mismatch; expected {len(keys)}, but got {len(tree)}.")
        if set(tree) != set(keys):
            raise ValueError(f"Node keys mismatch; missing key(s): {set(keys) - set(tree)}; "
                             f"extra key(s): {set(tree) - set(keys)}.")
        children = [tree[k] for k in keys]
    else:
        if type(tree) is not spec.type:
            raise ValueError(f"Node type mismatch; expected {spec.type!r}, but got "
                             f"{type(tree)!r}.")
        children, _ = _node_of(tree).flatten(tree)
        if len(children) != len(spec.children):
            raise ValueError(f"Node arity mismatch; expected {len(spec.children)}, but got "
                             f"{len(children)}.")
    for child_spec, child in zip(spec.children, children):
        _flatten_up_to(child_spec, child, leaves)


def tree_map(fn: Callable, tree: Any, *rests: Any):
    """Apply ``fn`` to every leaf (and the matching leaves of ``rests``), keeping the structure
    of ``tree`` (PyTorch's ``tree_map``). Each of ``rests`` must have ``tree``'s structure (a
    leaf of ``tree`` may stand for a subtree there; dicts are matched by key); else ValueError
    "Node type/arity/keys mismatch"."""
    if not rests:
        return _map(fn, tree)
    leaves, spec = tree_flatten(tree)
    others = []
    for r in rests:
        rest_leaves: list = []
        _flatten_up_to(spec, r, rest_leaves)
        others.append(rest_leaves)
    return tree_unflatten([fn(x, *xs) for x, *xs in zip(leaves, *others)], spec)


def tree_map_only(types, fn: Callable, tree: Any):
    """``tree_map`` applying ``fn`` only to leaves that are instances of ``types``."""
    if type(tree) is dict and not tree:     # the kwargs of most dispatch calls
        return {}
    return _map(lambda x: fn(x) if isinstance(x, types) else x, tree)


# Type alias for annotations, as ``torch.utils._pytree.PyTree`` (``typing.Any``: any nesting of
# containers and leaves).
PyTree = Any
