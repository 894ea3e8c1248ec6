"""Pytrees: nested containers of leaves (PyTorch's ``torch.utils._pytree``, JAX's tree_util).

Containers: ``list``, ``tuple``, named tuples, ``dict`` (keys in insertion order) and types
registered with :func:`register_pytree_node`; everything else (tensors, numbers, None) is a leaf.
Handlers flatten args of a dispatch call with ``tree_map(unwrap, args)`` and rebuild outputs.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_map", "tree_map_only",
           "tree_leaves", "register_pytree_node"]


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


def tree_map(fn: Callable, tree: Any, *rests: Any):
    """Apply ``fn`` to every leaf (and the matching leaves of ``rests``), keeping the structure."""
    if not rests:
        return _map(fn, tree)
    leaves, spec = tree_flatten(tree)
    others = [spec_leaves for spec_leaves, _ in (tree_flatten(r) for r in rests)]
    return tree_unflatten([fn(x, *xs) for x, *xs in zip(leaves, *others)], spec)


def tree_map_only(types, fn: Callable, tree: Any):
    """``tree_map`` applying ``fn`` only to leaves that are instances of ``types``."""
    if type(tree) is dict and not tree:     # the kwargs of most dispatch calls
        return {}
    return _map(lambda x: fn(x) if isinstance(x, types) else x, tree)
