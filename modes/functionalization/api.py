"""``functionalize(fn, remove=...)``: run ``fn`` under FunctionalizeMode on wrapped inputs
(PyTorch's ``torch.func.functionalize``, SEMANTICS.md §6.3).

1. Inputs are wrapped. Inputs sharing a storage (a view and its base, two views of one base)
   get a **synthetic base**: one wrapper over the whole storage, each input an ``as_strided``
   view of it, so a write through one is seen by the others, as in eager mode (PyTorch's
   ``functionalize`` treats them as unrelated; AOTAutograd builds such a base).
2. ``fn`` runs under :class:`FunctionalizeMode`; its outputs are synced and unwrapped. With
   ``remove="mutations"`` an output that is an (unmutated) view of an input is a real view of it.
3. The input-mutation epilogue, outside the mode (so a graph capture records it, as make_fx
   does): an input whose metadata changed is re-strided (``as_strided_``, or ``resize_`` when its
   storage was replaced), an input whose data changed receives ``copy_(input, new_value)``.
"""

from __future__ import annotations

import functools

import subclass_kit as sk

from .mode import FunctionalizeMode
from .wrapper import from_functional, wrap_fresh

__all__ = ["functionalize"]

_INVALID_REMOVE = (
    "functionalize(f, remove='mutations'): received invalid argument for remove={0}. Valid "
    "options are:\n     remove='mutations': all inplace and out= operators will be removed from "
    "the program, and replaced with their out-of-place equivalents.\n     "
    "remove='mutations_and_views': In addition to the above, all aliasing operators {{view}} "
    "will be replaced with their non-aliasing counterparts, {{view}}_copy.\n")


def functionalize(fn, remove: str = "mutations"):
    """A function computing what ``fn`` computes, with every mutation (and, with
    ``remove="mutations_and_views"``, every view) replaced by functional ops: under
    ``make_graph`` the captured graph mutates nothing but the inputs ``fn`` mutates (one
    ``copy_`` each, at the end).

    Same results and same input mutations (data and metadata) as ``fn(*args)``, on cpu and meta
    tensors; inputs that alias each other get the eager result (module docstring). Raises
    RuntimeError for an invalid ``remove`` (PyTorch's text), and what ``fn`` raises (inputs are
    then left unchanged)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(_INVALID_REMOVE.format(remove))
    reapply = remove == "mutations"

    @functools.wraps(fn)
    def run(*args, **kwargs):
        leaves, spec = sk.pytree.tree_flatten((args, kwargs))
        groups = _alias_groups(leaves)
        inputs = []      # (plain, wrapper, is_synthetic_base)
        # An input that requires grad becomes a leaf wrapper that requires grad over its
        # detached value (AOTAutograd's inputs): the autograd mode, above this one, records
        # the program on the wrappers, so ``backward`` / ``autograd.grad`` inside ``fn`` is
        # functionalized and captured with the forward.
        detached = {id(t): t.detach() for members in groups if len(members) == 1
                    for t in members if t.requires_grad}
        with FunctionalizeMode(reapply_views=reapply):
            by_id = {}
            for members in groups:
                if len(members) == 1:
                    t = members[0]
                    w = wrap_fresh(detached.get(id(t), t))
                    if id(t) in detached:
                        w.requires_grad_(True)
                    by_id[id(t)] = w
                    inputs.append((t, w, False))
                    continue
                first = members[0]
                n = first.untyped_storage().nbytes() // first.dtype.itemsize
                flat = sk.ops.as_strided.default(first, [n], [1], 0)
                base = wrap_fresh(flat)
                inputs.append((flat, base, True))
                for t in members:
                    w = sk.ops.as_strided.default(base, list(t.shape), list(t.stride()),
                                                  t.storage_offset())
                    by_id[id(t)] = w
                    inputs.append((t, w, False))
            wrapped = [by_id.get(id(x), x) if isinstance(x, sk.Tensor) else x for x in leaves]
            fargs, fkwargs = sk.pytree.tree_unflatten(wrapped, spec)
            out = fn(*fargs, **fkwargs)
        out = from_functional(out)
        _epilogue(inputs)
        return out

    return run


def _alias_groups(leaves) -> list:
    """Distinct tensor inputs grouped by storage: a group of several is given a synthetic base
    (only when they share a dtype: otherwise each is functionalized on its own)."""
    seen, order = {}, []
    for x in leaves:
        if isinstance(x, sk.Tensor) and not any(x is y for y in seen.get(id(x.untyped_storage()),
                                                                           ())):
            key = id(x.untyped_storage())
            if key not in seen:
                seen[key] = []
                order.append(key)
            seen[key].append(x)
    groups = []
    for key in order:
        members = seen[key]
        if len(members) > 1 and len({m.dtype for m in members}) == 1:
            groups.append(members)
        else:
            groups.extend([m] for m in members)
    return groups


def _epilogue(inputs):
    """Copy mutations back into the caller's tensors (SEMANTICS.md §6.3)."""
    for plain, w, synthetic in inputs:
        w.sync()
        if w.has_metadata_mutation:
            if w.was_storage_changed:
                sk.ops.resize_.default(plain, list(w.shape))
            else:
                sk.ops.as_strided_.default(plain, list(w.shape), list(w.stride()),
                                           w.storage_offset())
        # PyTorch copies after a metadata-only mutation too (make_fx shows ``as_strided_`` then
        # ``copy_``).
        data_mutated = w.has_data_mutation or w.has_metadata_mutation
        in_synthetic_family = any(s and fw.fstorage is w.fstorage
                                  for _, fw, s in inputs) and not synthetic
        if data_mutated and not in_synthetic_family:
            sk.ops.copy_.default(plain, w.value)
