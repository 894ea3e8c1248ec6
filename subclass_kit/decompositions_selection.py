"""Composite selection ops, PyTorch's CompositeImplicitAutograd bodies written with ``sk.ops``
(modes see the ops they lower to, as in PyTorch):

- ``repeat_interleave.self_int(x, r, dim)`` -> ``unsqueeze`` + ``expand`` + ``clone``
  (contiguous) + ``view`` (after ``flatten`` when ``dim`` is None);
- ``repeat_interleave.self_Tensor(x, repeats, dim)`` -> ``repeat_interleave.Tensor(repeats)``
  + ``index_select`` (a single repeat count is first ``view`` + ``expand``-ed to the dim's size).
"""

from __future__ import annotations

from .layout import wrap_dim
from .registry import ops, register_decomposition
from .tensor import contiguous_format


@register_decomposition(ops.repeat_interleave.self_int)
def repeat_interleave_self_int(self, repeats, dim=None, *, output_size=None):
    """Each element (``dim`` None: of the flattened tensor) or slice along ``dim`` repeated
    ``repeats`` times. RuntimeError "Repeats must be non-negative", and for an ``output_size``
    other than the result's size along ``dim``."""
    input = self if dim is not None else ops.flatten.using_ints(self)
    d = wrap_dim(0 if dim is None else dim, len(self._layout.sizes))
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    out_shape = list(input._layout.sizes)
    out_shape[d] *= repeats
    if output_size is not None and output_size != out_shape[d]:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {out_shape[d]} "
                           f"but got {output_size}")
    expanded = ops.unsqueeze.default(input, d + 1)
    shape = list(expanded._layout.sizes)
    shape[d + 1] = repeats
    expanded = ops.expand.default(expanded, shape)
    return ops.view.default(ops.clone.default(expanded, memory_format=contiguous_format), out_shape)


@register_decomposition(ops.repeat_interleave.self_Tensor)
def repeat_interleave_self_tensor(self, repeats, dim=None, *, output_size=None):
    """Slice ``i`` along ``dim`` (``dim`` None: element ``i`` of the flattened tensor) repeated
    ``repeats[i]`` times; ``repeats`` 0-d or 1-d (one count for all, or one per slice).
    RuntimeError "repeats must have the same size as input along dim, but got ..." and the
    errors of ``repeat_interleave.Tensor``."""
    input = self if dim is not None else ops.flatten.using_ints(self)
    d = 0 if dim is None else dim
    n = input._layout.sizes[d] if input._layout.sizes else 1
    rank = len(repeats._layout.sizes)
    if rank == 0 or (rank == 1 and repeats._layout.sizes[0] == 1):
        repeats = ops.expand.default(ops.reshape.default(repeats, [1]), [n])
    elif rank == 1:
        if repeats._layout.sizes[0] != n:
            raise RuntimeError(
                f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{repeats._layout.sizes[0]} and input.size({d}) = {n}")
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if output_size is None:
        index = ops.repeat_interleave.Tensor(repeats)
    else:
        index = ops.repeat_interleave.Tensor(repeats, output_size=output_size)
    return ops.index_select.default(input, d, index)
