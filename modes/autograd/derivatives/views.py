"""Derivatives of the view ops, the copies (``clone``, ``_to_copy``, ``copy``) and the fills
(``fill``, ``zero_``), with PyTorch's node names. A view's gradient goes back to its input's
shape by the inverse view, or by writing it into zeros through the same view: ``select``,
``slice`` and ``diagonal`` call PyTorch's backward ops (``select_backward``, ``slice_backward``,
``diagonal_backward``: one op each in a mode's stream, with rows of their own for double
backward); ``unfold`` adds into views of fresh zeros and ``as_strided`` scatter-adds, in ops the
engine differentiates too."""

from __future__ import annotations

import numpy as np

import subclass_kit as sk

from ..formulas import NODE_NAMES, derivative, non_differentiable


def _zeros(meta, like):
    return sk.zeros(meta.shape, dtype=like.dtype, device=like.device)


@derivative("view.default", "ViewBackward0")
def _view(ctx, grad):
    return grad.reshape(ctx.meta("self").shape)


@derivative("_unsafe_view.default", "UnsafeViewBackward0")
def _unsafe_view(ctx, grad):
    return grad.reshape(ctx.meta("self").shape)


@derivative("alias.default", "AliasBackward0")
def _alias(ctx, grad):
    return grad


@derivative("t.default", "TBackward0")
def _t(ctx, grad):
    return grad.t()


@derivative("transpose.int", "TransposeBackward0")
def _transpose(ctx, grad):
    return grad.transpose(ctx.dim0, ctx.dim1)


@derivative("permute.default", "PermuteBackward0")
def _permute(ctx, grad):
    n = len(ctx.dims)
    inverse = [0] * n
    for i, d in enumerate(ctx.dims):
        inverse[d % n] = i
    return grad.permute(inverse)


@derivative("expand.default", "ExpandBackward0")
def _expand(ctx, grad):
    return grad         # the engine sums it back to the input's shape (sum_to)


@derivative("squeeze.dims", "SqueezeBackward2")
def _squeeze(ctx, grad):
    return grad.reshape(ctx.meta("self").shape)


def _squeeze_name(bound):
    dims = bound.get("dim") or []
    self = bound.get("self")
    if self is not None and len(dims) == self.dim() and list(dims) == list(range(self.dim())):
        return "SqueezeBackward0"
    return "SqueezeBackward1" if len(dims) == 1 else "SqueezeBackward2"


NODE_NAMES["squeeze.dims"] = _squeeze_name


@derivative("unsqueeze.default", "UnsqueezeBackward0")
def _unsqueeze(ctx, grad):
    return grad.squeeze(ctx.dim)


_INT64_MAX = (1 << 63) - 1


@derivative("select.int", "SelectBackward0")
def _select(ctx, grad):
    return sk.ops.select_backward.default(grad, list(ctx.meta("self").shape), ctx.dim, ctx.index)


@derivative("slice.Tensor", "SliceBackward0")
def _slice(ctx, grad):
    # PyTorch's slice_backward_wrapper: an omitted start is 0, an omitted end INT64_MAX
    start = 0 if ctx.start is None else ctx.start
    end = _INT64_MAX if ctx.end is None else ctx.end
    return sk.ops.slice_backward.default(grad, list(ctx.meta("self").shape), ctx.dim, start, end,
                                         ctx.step)


@derivative("diagonal.default", "DiagonalBackward0")
def _diagonal(ctx, grad):
    return sk.ops.diagonal_backward.default(grad, list(ctx.meta("self").shape), ctx.offset,
                                            ctx.dim1, ctx.dim2)


# The backward ops are linear in ``grad_output``: their derivative is the view itself.
@derivative("select_backward.default", "SelectBackwardBackward0", inputs=("grad_output",))
def _select_backward(ctx, grad):
    return grad.select(ctx.dim, ctx.index)


@derivative("slice_backward.default", "SliceBackwardBackward0", inputs=("grad_output",))
def _slice_backward(ctx, grad):
    return sk.ops.slice.Tensor(grad, ctx.dim, ctx.start, ctx.end, ctx.step)


@derivative("diagonal_backward.default", "DiagonalBackwardBackward0", inputs=("grad_output",))
def _diagonal_backward(ctx, grad):
    return grad.diagonal(ctx.offset, ctx.dim1, ctx.dim2)


def _storage_index(shape, stride, offset):
    """The storage position of every element of a strided geometry, row-major (int64)."""
    idx = np.full(tuple(shape), offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(shape, stride)):
        step = np.arange(n, dtype=np.int64) * st
        idx = idx + step.reshape((n,) + (1,) * (len(shape) - d - 1))
    return sk.tensor(idx.reshape(-1))


@derivative("as_strided.default", "AsStridedBackward0")
def _as_strided(ctx, grad):
    # PyTorch's as_strided_backward: scatter-add the gradient onto the storage positions the
    # output covers (overlapping outputs accumulate), then gather the input's positions
    meta = ctx.meta("self")
    offset = meta.offset if ctx.storage_offset is None else ctx.storage_offset
    out_idx = _storage_index(ctx.size, ctx.stride, offset)
    in_idx = _storage_index(meta.shape, meta.stride, meta.offset)
    extent = 1 + max(int(out_idx.max()) if out_idx.numel() else 0,
                     int(in_idx.max()) if in_idx.numel() else 0)
    flat = sk.zeros(extent, dtype=grad.dtype, device=grad.device)
    flat = flat.index_add(0, out_idx, grad.reshape(-1))
    return flat.take(in_idx).reshape(meta.shape)


@derivative("unfold.default", "UnfoldBackward0")
def _unfold(ctx, grad):
    # window element k of window i is input position i * step + k: one strided slice per k
    meta = ctx.meta("self")
    out = _zeros(meta, grad)
    dim = ctx.dimension % max(len(meta.shape), 1)
    n_windows = grad.shape[dim] if meta.shape else 1
    for k in range(ctx.size):
        part = grad.select(grad.dim() - 1, k)
        if not meta.shape:
            out = out + part
            continue
        end = k + (n_windows - 1) * ctx.step + 1
        target = sk.ops.slice.Tensor(out, dim, k, end, ctx.step)
        target.add_(part)
    return out


@derivative("split.Tensor", "SplitBackward0")
def _split(ctx, *grads):
    return sk.cat(list(grads), ctx.dim)


@derivative("split_with_sizes.default", "SplitWithSizesBackward0")
def _split_with_sizes(ctx, *grads):
    return sk.cat(list(grads), ctx.dim)


@derivative("unbind.int", "UnbindBackward0")
def _unbind(ctx, *grads):
    return sk.stack(list(grads), ctx.dim)


@derivative("clone.default", "CloneBackward0")
def _clone(ctx, grad):
    return grad


@derivative("_to_copy.default", "ToCopyBackward0")
def _to_copy(ctx, grad):
    return grad         # the engine casts it to the input's dtype


@derivative("copy.default", "CopyBackwards", inputs=("self", "src"))
def _copy(ctx, grad):
    return (_zeros(grad, grad) if ctx.needs_input_grad[0] else None,
            grad if ctx.needs_input_grad[1] else None)


@derivative("fill.Scalar", "FillBackward0")
def _fill_scalar(ctx, grad):
    return _zeros(grad, grad)


@derivative("fill.Tensor", "FillBackward1", inputs=("self", "value"))
def _fill_tensor(ctx, grad):
    return (_zeros(grad, grad) if ctx.needs_input_grad[0] else None,
            grad.sum() if ctx.needs_input_grad[1] else None)


@derivative("zero_.default", "ZeroBackward0")
def _zero(ctx, grad):
    return _zeros(grad, grad)


NODE_NAMES.update({"fill_.Scalar": "FillBackward2", "fill_.Tensor": "FillBackward3",
                   "t_.default": "TBackward1", "transpose_.default": "TransposeBackward1",
                   "unsqueeze_.default": "UnsqueezeBackward1",
                   "squeeze_.dims": "SqueezeBackward5", "as_strided_.default":
                   "AsStridedBackward1"})

non_differentiable("detach.default", "view.dtype", "lift_fresh.default",
                   reason="not differentiable (PyTorch: output_differentiability False)")
