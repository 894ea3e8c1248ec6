"""A lazily negated view: a tensor that reads as ``-x`` without ever computing ``-x``.

The idea
    ``neg_view(x)`` returns a tensor whose values are ``-x`` and which *aliases* ``x``: no
    memory is allocated, and writing through it writes (negated) into ``x``. Negation is
    deferred until an op needs actual values, and view ops stay lazy. PyTorch has this as a
    dispatch key (``torch._neg_view`` and the "negative bit", resolved by
    ``resolve_neg()``; the conjugate bit of complex tensors works the same way).

How it works
    ``NegativeTensor`` is a wrapper subclass holding the tensor it negates in ``elem``.
    ``__tensor_dispatch__`` sorts ops by their schema:

    - **view ops** (``func.is_view``: ``t``, ``select``, ``slice``, ``split`` ...; and the
      in-place metadata ops ``t_``, ``unsqueeze_``...) apply to ``elem`` and wrap again: a
      view of a negated tensor is a negated view, still lazy, and
      ``sk.return_and_correct_aliasing`` makes it share the wrapper's Storage;
    - **mutating ops** (``add_``, ``copy_``, ``out=``): the negated values are materialised,
      the op runs on that temporary, and the result is written back negated into ``elem``
      (``elem.copy_(-tmp)``), so ``x`` sees the write; the op returns the wrapper itself;
    - **everything else** materialises ``-elem`` (``sk.ops.neg``) for each NegativeTensor
      argument and returns plain tensors.

Tradeoffs
    + Negating is free and chains of view ops stay free.
    + Writes reach the aliased tensor, as a real view's would.
    - Every compute op pays one ``neg`` per NegativeTensor argument; a kernel aware of the
      sign (``sub`` instead of ``add``) would avoid it, at the cost of one rule per op.
    - The wrapper and ``x`` do not share a version counter: the write-back into ``elem``
      runs inside the handler, below the version/view layer (Note [Version counters]), so
      ``x._version`` does not move when the wrapper is written. PyTorch's negative bit lives
      on a real view and has no such gap.
"""

from __future__ import annotations

import subclass_kit as sk


class NegativeTensor(sk.Tensor):
    """Reads as ``-elem``; aliases ``elem`` (see the module docstring)."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(elem: sk.Tensor) -> NegativeTensor:
        w = sk.make_wrapper_subclass(NegativeTensor, elem.shape, elem.stride(),
                                     elem.storage_offset(), dtype=elem.dtype,
                                     device=elem.device)
        w.elem = elem
        return w

    def resolve(self) -> sk.Tensor:
        """The values, materialised as a plain tensor (PyTorch's ``resolve_neg``)."""
        return sk.ops.neg(self.elem)

    def __repr__(self):
        return f"NegativeTensor(-{self.elem!r})"

    def __tensor_flatten__(self):
        return ["elem"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return NegativeTensor.wrap(inner["elem"])

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        lazy = func.is_view or "inplace_view" in func.tags   # metadata-only ops stay lazy
        if lazy and isinstance(args[0], cls) and func is not sk.ops.view.dtype:
            out = func(args[0].elem, *args[1:], **kwargs)
            out = sk.pytree.tree_map_only(sk.Tensor, cls.wrap, out)
            return sk.return_and_correct_aliasing(func, args, kwargs, out)

        def materialise(t):
            return sk.ops.neg(t.elem)

        if func.mutated_args:
            return _mutate(cls, func, args, kwargs, materialise)
        return func(*sk.pytree.tree_map_only(cls, materialise, args),
                    **sk.pytree.tree_map_only(cls, materialise, kwargs))


def _mutate(cls, func, args, kwargs, materialise):
    """Run a mutating op on materialised temporaries, then write mutated NegativeTensors
    back (negated) into the tensors they alias."""
    temps = {}

    def temp(t):
        if id(t) not in temps:
            temps[id(t)] = (t, materialise(t))
        return temps[id(t)][1]

    out = func(*sk.pytree.tree_map_only(cls, temp, args),
               **sk.pytree.tree_map_only(cls, temp, kwargs))
    names = [a.name for a in func.schema.arguments]
    for name in func.mutated_args:
        i = names.index(name)
        target = args[i] if i < len(args) else kwargs.get(name)
        if isinstance(target, cls):
            target.elem.copy_(sk.ops.neg(temps[id(target)][1]))
    return sk.return_and_correct_aliasing(func, args, kwargs, out)


def neg_view(x: sk.Tensor) -> NegativeTensor:
    """A tensor reading as ``-x`` that aliases ``x`` (no data is computed or copied)."""
    return NegativeTensor.wrap(x)
