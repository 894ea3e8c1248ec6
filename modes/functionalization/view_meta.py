"""View steps of functionalization: how to replay a view from its base and how to write a mutated
view back into its base (PyTorch's ``ViewMeta`` and ``FunctionalInverses``, SEMANTICS.md §6.1).

A :class:`ViewMeta` records one view op call (``op``, its non-``self`` arguments, the output
index of a multi-output view). ``forward(base)`` replays it: the view op itself when views are
kept (``remove="mutations"``), its ``<view>_copy`` op otherwise. ``reverse(base, mutated)``
returns a new base equal to ``base`` except that the region the view covers holds ``mutated``:
a ``*_scatter`` op for views selecting a region, the inverse view for views that only
rearrange (``view`` -> ``view`` to the base's sizes, ``transpose`` -> ``transpose``,
``unsqueeze`` -> ``squeeze``, ``permute`` -> the inverse permutation), ``sum_to`` for
``expand`` (as PyTorch).

Every step costs one op on the tensors it touches, never work proportional to the number of
other views: a multi-output view replays only its own output (``unbind`` output ``i`` replays
as ``select(dim, i)``, ``split`` output ``i`` as ``split(...)[i]`` like PyTorch). Replaying the
whole ``unbind`` per output is what makes PyTorch quadratic on ``x.unbind(1)`` loops
(docs/differences.md).
"""

from __future__ import annotations

import subclass_kit as sk

__all__ = ["ViewMeta", "copy_variant", "has_inverse"]

ops = sk.ops


def copy_variant(op):
    """The ``<view>_copy`` overload of a view op (``select.int`` -> ``select_copy.int``), or
    None when ``sk.ops`` has none."""
    name = op.__name__.split(".")[0]
    packet = getattr(ops, name + "_copy", None)
    if packet is None:
        return None
    return getattr(packet, op.overload, None)


def _v(op, reapply):
    """``op`` when views are kept, else its ``_copy`` variant."""
    return op if reapply else copy_variant(op)


def _inverse_perm(dims, ndim):
    inv = [0] * ndim
    for i, d in enumerate(dims):
        inv[d % ndim if ndim else 0] = i
    return inv


def _split_bounds(op, args, index, size):
    """``(start, end)`` of output ``index`` of ``split``/``split_with_sizes`` along a dim of
    ``size``."""
    if op is ops.split.Tensor:
        step = args[0]
        start = index * step
        return start, min(start + step, size)
    sizes = args[0]
    start = sum(sizes[:index])
    return start, start + sizes[index]


def _dim_arg(args, default=0):
    return args[1] if len(args) > 1 else default


class ViewMeta:
    """One recorded view step: ``op(base, *args, **kwargs)`` (output ``out_index`` for
    multi-output views). See the module docstring."""

    __slots__ = ("addresses_storage", "args", "exact_inverse", "is_as_strided", "kwargs", "op",
                 "out_index", "reapply", "scatters", "writes_through")

    def __init__(self, op, args, kwargs, out_index=None, reapply=True):
        self.op, self.args, self.kwargs = op, tuple(args), dict(kwargs or {})
        self.out_index, self.reapply = out_index, reapply
        self.is_as_strided = op is ops.as_strided.default
        # replayed from the base in its eager layout, not from the previous step's ``*_copy``
        # (Note [as_strided addresses the eager storage], wrapper.py)
        self.addresses_storage = self.is_as_strided and not reapply
        # What FunctionalStorage's in-place updates need (wrapper.py): whether ``reverse`` is a
        # ``*_scatter`` (a copy of ``base``, same geometry, the view's region replaced); whether
        # it is the inverse view giving back ``base``'s exact geometry from a view of it; whether
        # it equals writing ``mutated`` through the real view in place.
        self.scatters = op in _SCATTER_VIEWS
        self.exact_inverse = op in _EXACTLY_INVERTED_VIEWS
        self.writes_through = self.scatters or op in _REARRANGING_VIEWS

    def __repr__(self):
        idx = "" if self.out_index is None else f"[{self.out_index}]"
        return f"ViewMeta({self.op}{self.args}{idx})"

    # -- replay ---------------------------------------------------------------------------------
    def forward(self, base):
        """The view of ``base`` this step makes (a real view, or a fresh ``*_copy``)."""
        return self.view(base, self.reapply)

    def view(self, base, reapply=True):
        """The real view of ``base`` this step makes (its ``*_copy`` if not ``reapply``)."""
        op, args, kw = self.op, self.args, self.kwargs
        if self.out_index is not None:
            if op is ops.unbind.int:
                return _v(ops.select.int, reapply)(base, args[0] if args else 0, self.out_index)
            return _v(op, reapply)(base, *args, **kw)[self.out_index]
        return _v(op, reapply)(base, *args, **kw)

    # -- inverse --------------------------------------------------------------------------------
    def reverse(self, base, mutated):
        """A new base: ``base`` with the region this view covers replaced by ``mutated``."""
        op, args, r = self.op, self.args, self.reapply
        inverse = _INVERSES.get(op)
        if inverse is None:
            raise RuntimeError(f"functionalization: no inverse for the view op {op}")
        return inverse(self, base, mutated, args, r)


# -- inverses (PyTorch's FunctionalInverses.cpp, one per view op) ---------------------------------
def _inv_view(m, base, mutated, args, r):
    return _v(ops.view.default, r)(mutated, list(base.shape))


def _inv_view_dtype(m, base, mutated, args, r):
    return _v(ops.view.dtype, r)(mutated, base.dtype)


def _inv_as_strided(m, base, mutated, args, r):
    return ops.as_strided_scatter.default(base, mutated, *args, **m.kwargs)


def _inv_transpose(m, base, mutated, args, r):
    return _v(ops.transpose.int, r)(mutated, *args)


def _inv_t(m, base, mutated, args, r):
    return _v(ops.t.default, r)(mutated)


def _inv_permute(m, base, mutated, args, r):
    return _v(ops.permute.default, r)(mutated, _inverse_perm(list(args[0]), base.ndim))


def _inv_expand(m, base, mutated, args, r):
    # sum_to(mutated, base.shape): PyTorch's expand inverse (a write through an expanded view
    # accumulates over the broadcast dims).
    lead = mutated.ndim - base.ndim
    dims = list(range(lead)) + [lead + i for i, s in enumerate(base.shape)
                                if s == 1 and mutated.shape[lead + i] != 1]
    if not dims:
        return mutated if r else ops.clone.default(mutated)
    out = ops.sum.dim_IntList(mutated, dims, True)
    return _v(ops.view.default, r)(out, list(base.shape))


def _inv_squeeze(m, base, mutated, args, r):
    out = mutated
    dims = sorted({d % base.ndim for d in args[0]}) if base.ndim else []
    for d in dims:
        if base.shape[d] == 1:
            out = _v(ops.unsqueeze.default, r)(out, d)
    if out is mutated and not r:
        out = ops.alias_copy.default(mutated)
    return out


def _inv_unsqueeze(m, base, mutated, args, r):
    return _v(ops.squeeze.dims, r)(mutated, [args[0]])


def _inv_select(m, base, mutated, args, r):
    return ops.select_scatter.default(base, mutated, *args)


def _inv_slice(m, base, mutated, args, r):
    return ops.slice_scatter.default(base, mutated, *args, **m.kwargs)


def _inv_diagonal(m, base, mutated, args, r):
    return ops.diagonal_scatter.default(base, mutated, *args)


def _inv_unfold(m, base, mutated, args, r):
    # The windows' geometry in base's storage, written back with as_strided_scatter.
    with sk.no_dispatch():
        probe = sk.empty_strided(base.shape, base.stride(), dtype=base.dtype, device="meta")
        probe = probe.unfold(*args)
    return ops.as_strided_scatter.default(base, mutated, list(probe.shape), list(probe.stride()),
                                          base.storage_offset())


def _inv_split(m, base, mutated, args, r):
    dim = _dim_arg(args) % base.ndim
    start, end = _split_bounds(m.op, args, m.out_index, base.shape[dim])
    return ops.slice_scatter.default(base, mutated, dim, start, end)


def _inv_unbind(m, base, mutated, args, r):
    return ops.select_scatter.default(base, mutated, args[0] if args else 0, m.out_index)


def _inv_alias(m, base, mutated, args, r):
    return _v(ops.alias.default, r)(mutated)


_INVERSES = {
    ops.view.default: _inv_view, ops.view.dtype: _inv_view_dtype,
    ops.as_strided.default: _inv_as_strided, ops.transpose.int: _inv_transpose,
    ops.t.default: _inv_t, ops.permute.default: _inv_permute, ops.expand.default: _inv_expand,
    ops.squeeze.dims: _inv_squeeze, ops.unsqueeze.default: _inv_unsqueeze,
    ops.select.int: _inv_select, ops.slice.Tensor: _inv_slice,
    ops.diagonal.default: _inv_diagonal, ops.unfold.default: _inv_unfold,
    ops.split.Tensor: _inv_split, ops.split_with_sizes.default: _inv_split,
    ops.unbind.int: _inv_unbind, ops.alias.default: _inv_alias, ops.detach.default: _inv_alias,
}


# Views whose inverse is a ``*_scatter`` into ``base`` (as_strided: only as the first step).
_SCATTER_VIEWS = frozenset([
    ops.select.int, ops.slice.Tensor, ops.diagonal.default, ops.as_strided.default,
    ops.split.Tensor, ops.split_with_sizes.default, ops.unbind.int])
# Views whose inverse is the inverse view of ``mutated``: the same elements, rearranged. Not
# ``expand`` (its inverse sums), ``unfold`` (overlapping windows) or ``view.dtype``.
_REARRANGING_VIEWS = frozenset([
    ops.view.default, ops.transpose.int, ops.t.default, ops.permute.default,
    ops.squeeze.dims, ops.unsqueeze.default, ops.alias.default, ops.detach.default])
# Rearranging views whose inverse applied to the view (same strides) gives the base's strides
# back exactly. Not ``view`` or ``squeeze`` (their inverses compute strides afresh: a size-1
# dimension's stride may come out different).
_EXACTLY_INVERTED_VIEWS = frozenset([
    ops.transpose.int, ops.t.default, ops.permute.default, ops.unsqueeze.default,
    ops.alias.default, ops.detach.default])


def has_inverse(op) -> bool:
    """Whether functionalization can write a mutation through a view made by ``op``."""
    return op in _INVERSES
