"""Derivatives of the ops that move elements into fresh outputs: joins (cat, stack), gathers and
scatters, index ops, triangle/flip/roll/repeat/rot90/diag_embed/trace/take, the functional
``*_scatter`` ops, the ``<view>_copy`` ops and ``_unsafe_view``; the in-place random fills; and
the non-differentiable marks of the factories (after PyTorch's ``derivatives.yaml``).

A ``<view>_copy`` op has its view's formula under the view's node name plus ``_copy``
(``ViewBackward0_copy``), as PyTorch's codegen names them. ``view_copy.dtype`` and
``detach_copy`` are non-differentiable here: PyTorch gives ``view.dtype`` no derivative and
``detach_copy`` a ``NotImplemented`` node (docs/differences.md).
"""

from __future__ import annotations

import math

import subclass_kit as sk

from ..formulas import derivative, non_differentiable
from ._helpers import maybe_multiply, wrap, zeros

non_differentiable(
    "empty.memory_format", "empty_strided.default", "full.default", "arange.start_step",
    "eye.m", "rand.default", "randn.default", "randint.low", "scalar_tensor.default",
    "empty_like.default", "full_like.default", "zeros_like.default", "ones_like.default",
    "rand_like.default", "randn_like.default", "new_empty.default",
    "new_empty_strided.default", "new_full.default", "new_zeros.default", "new_ones.default",
    reason="factory: a fresh tensor that depends on no input's values")
non_differentiable("nonzero.default", reason="integer output")
non_differentiable("view_copy.dtype", reason="view.dtype has no derivative in PyTorch")
non_differentiable("detach_copy.default", reason="PyTorch: derivative not implemented")


# -- joins ---------------------------------------------------------------------------------------
def _is_legacy_empty(shape) -> bool:
    """cat skips 1-d empty tensors of any other rank (PyTorch's legacy behaviour)."""
    return tuple(shape) == (0,)


@derivative("cat.default", "CatBackward0", inputs=("tensors",))
def _(ctx, grad):
    metas = ctx.meta("tensors")
    dim = wrap(ctx.dim, grad.dim())
    out, offset = [], 0
    for m in metas:
        if _is_legacy_empty(m.shape) and grad.dim() != 1:
            out.append(zeros(grad, (0,)))
            continue
        size = m.shape[dim]
        out.append(grad.narrow(dim, offset, size))
        offset += size
    return out


@derivative("stack.default", "StackBackward0", inputs=("tensors",))
def _(ctx, grad):
    return list(grad.unbind(wrap(ctx.dim, grad.dim())))


# -- gather / scatter ----------------------------------------------------------------------------
@derivative("gather.default", "GatherBackward0", save=("index",))
def _(ctx, grad):
    return zeros(grad, ctx.meta("self").shape).scatter_add(ctx.dim, ctx.index, grad)


@derivative("scatter.src", "ScatterBackward0", inputs=("self", "src"), save=("index",))
def _(ctx, grad):
    need = ctx.needs_input_grad
    gs = grad.scatter(ctx.dim, ctx.index, 0) if need[0] else None
    gsrc = grad.gather(ctx.dim, ctx.index) if need[1] else None
    return gs, gsrc


@derivative("scatter.value", "ScatterBackward1", save=("index",))
def _(ctx, grad):
    return grad.scatter(ctx.dim, ctx.index, 0)


@derivative("scatter_add.default", "ScatterAddBackward0", inputs=("self", "src"),
            save=("index",))
def _(ctx, grad):
    return grad, (grad.gather(ctx.dim, ctx.index) if ctx.needs_input_grad[1] else None)


# -- index ops -----------------------------------------------------------------------------------
@derivative("index_select.default", "IndexSelectBackward0", save=("index",))
def _(ctx, grad):
    return zeros(grad, ctx.meta("self").shape).index_add(ctx.dim, ctx.index, grad)


@derivative("index.Tensor", "IndexBackward0", save=("indices",))
def _(ctx, grad):
    return sk.ops.index_put.default(zeros(grad, ctx.meta("self").shape), ctx.indices, grad, True)


@derivative("index_put.default", "IndexPutBackward0", inputs=("self", "values"),
            save=("indices",))
def _(ctx, grad):
    need = ctx.needs_input_grad
    gs = gv = None
    if need[0]:
        gs = grad if ctx.accumulate else sk.ops.index_put.default(
            grad, ctx.indices, zeros(grad, ctx.meta("values").shape), False)
    if need[1]:
        gv = sk.ops.index.Tensor(grad, ctx.indices)
    return gs, gv


def _source_grad(ctx, grad):
    """index_add/index_copy: the rows of grad that ``source`` landed on, in source's shape."""
    shape = ctx.meta("source").shape
    if len(shape) > 0:
        return grad.index_select(ctx.dim, ctx.index).expand(list(shape))
    return grad.index_select(ctx.dim, ctx.index.squeeze([0]) if ctx.index.dim() else ctx.index)


@derivative("index_add.default", "IndexAddBackward0", inputs=("self", "source"),
            save=("index",))
def _(ctx, grad):
    gsrc = maybe_multiply(_source_grad(ctx, grad), ctx.alpha) if ctx.needs_input_grad[1] \
        else None
    return grad, gsrc


@derivative("index_copy.default", "IndexCopyBackward0", inputs=("self", "source"),
            save=("index",))
def _(ctx, grad):
    gs = gsrc = None
    if ctx.needs_input_grad[0]:
        # grad.index_fill(dim, index, 0), written as an index_copy of zeros.
        shape = list(grad.shape)
        if shape:
            shape[wrap(ctx.dim, grad.dim())] = ctx.index.numel()
        gs = grad.index_copy(ctx.dim, ctx.index, zeros(grad, shape))
    if ctx.needs_input_grad[1]:
        gsrc = _source_grad(ctx, grad)
    return gs, gsrc


@derivative("masked_scatter.default", "MaskedScatterBackward0", inputs=("self", "source"),
            save=("mask",))
def _(ctx, grad):
    mask = ctx.mask
    gs = grad.masked_fill(mask, 0) if ctx.needs_input_grad[0] else None
    gsrc = None
    if ctx.needs_input_grad[1]:
        # masked_scatter_backward: the masked elements of grad in order, zero-padded to the
        # source's numel, viewed as the source.
        shape = list(ctx.meta("source").shape)
        full = mask if tuple(mask.shape) == tuple(grad.shape) else mask.expand(list(grad.shape))
        if grad.dim() == 0:         # masked_select takes 0-d tensors; boolean indexing does not
            grad, full = grad.reshape([1]), full.reshape([1])
        selected = sk.ops.index.Tensor(grad, [full])
        missing = math.prod(shape) - selected.numel()
        if missing > 0:
            selected = sk.cat([selected, zeros(grad, (missing,))], 0)
        gsrc = selected.view(shape)
    return gs, gsrc


@derivative("take.default", "TakeBackward0", save=("index",))
def _(ctx, grad):
    shape = list(ctx.meta("self").shape)
    flat = zeros(grad, (math.prod(shape),))
    return flat.index_put([ctx.index.reshape([-1])], grad.reshape([-1]), True).view(shape)


# -- rearranging copies --------------------------------------------------------------------------
@derivative("tril.default", "TrilBackward0")
def _(ctx, grad):
    return grad.tril(ctx.diagonal)


@derivative("triu.default", "TriuBackward0")
def _(ctx, grad):
    return grad.triu(ctx.diagonal)


@derivative("flip.default", "FlipBackward0")
def _(ctx, grad):
    return grad.flip(ctx.dims)


@derivative("roll.default", "RollBackward0")
def _(ctx, grad):
    shifts = [-s for s in reversed(list(ctx.shifts))]
    return grad.roll(shifts, list(reversed(list(ctx.dims))))


@derivative("rot90.default", "Rot90Backward0")
def _(ctx, grad):
    return grad.rot90(-ctx.k, ctx.dims)


@derivative("diag_embed.default", "DiagEmbedBackward0")
def _(ctx, grad):
    return grad.diagonal(ctx.offset, ctx.dim1, ctx.dim2)


@derivative("repeat.default", "RepeatBackward0")
def _(ctx, grad):
    # repeat_backward: sum the leading new dims away, then view each repeated dim as
    # (repeat, size) and sum the repeat dims in one go.
    shape = list(ctx.meta("self").shape)
    repeats = list(ctx.repeats)
    if 0 in repeats:
        return zeros(grad, shape)
    lead = grad.dim() - len(shape)
    for _ in range(lead):
        grad = grad.sum([0])
    split, sum_dims = [], []
    for d, size in enumerate(shape):
        r = repeats[d + lead]
        if r != 1:
            split.append(r)
            sum_dims.append(len(split) - 1)
        split.append(size)
    grad = grad.reshape(split)
    return grad.sum(sum_dims) if sum_dims else grad


@derivative("trace.default", "TraceBackward0")
def _(ctx, grad):
    rows, cols = ctx.meta("self").shape
    flat = zeros(grad, (rows * cols,))
    diag = sk.arange(0, min(rows, cols) * (cols + 1), cols + 1, dtype=sk.int64,
                     device=grad.device)
    return flat.index_put([diag], grad, False).view([rows, cols])


# -- functional scatters -------------------------------------------------------------------------
def _scatter_pair(view_of, scatter_zeros):
    """Formula of ``X_scatter(self, src, ...)``: self gets grad with the slot zeroed, src the
    slot of grad."""
    def formula(ctx, grad):
        need = ctx.needs_input_grad
        gs = scatter_zeros(ctx, grad, zeros(grad, ctx.meta("src").shape)) if need[0] else None
        gsrc = view_of(ctx, grad) if need[1] else None
        return gs, gsrc
    return formula


derivative("slice_scatter.default", "SliceScatterBackward0", inputs=("self", "src"))(
    _scatter_pair(lambda c, g: sk.ops.slice.Tensor(g, c.dim, c.start, c.end, c.step),
                  lambda c, g, z: sk.ops.slice_scatter.default(g, z, c.dim, c.start, c.end,
                                                               c.step)))
derivative("select_scatter.default", "SelectScatterBackward0", inputs=("self", "src"))(
    _scatter_pair(lambda c, g: g.select(c.dim, c.index),
                  lambda c, g, z: sk.ops.select_scatter.default(g, z, c.dim, c.index)))
derivative("diagonal_scatter.default", "DiagonalScatterBackward0", inputs=("self", "src"))(
    _scatter_pair(lambda c, g: g.diagonal(c.offset, c.dim1, c.dim2),
                  lambda c, g, z: sk.ops.diagonal_scatter.default(g, z, c.offset, c.dim1, c.dim2)))
derivative("as_strided_scatter.default", "AsStridedScatterBackward0",
           inputs=("self", "src"))(
    # PyTorch supports contiguous inputs only here: grad is made contiguous first.
    _scatter_pair(lambda c, g: g.contiguous().as_strided(c.size, c.stride, c.storage_offset),
                  lambda c, g, z: sk.ops.as_strided_scatter.default(g.contiguous(), z, c.size,
                                                                    c.stride, c.storage_offset)))


# -- <view>_copy ---------------------------------------------------------------------------------
@derivative("view_copy.default", "ViewBackward0_copy")
def _(ctx, grad):
    return grad.reshape(list(ctx.meta("self").shape))


@derivative("alias_copy.default", "AliasBackward0_copy")
def _(ctx, grad):
    return grad


@derivative("lift_fresh_copy.default", "LiftFreshBackward0_copy")
def _(ctx, grad):
    return grad


@derivative("expand_copy.default", "ExpandBackward0_copy")
def _(ctx, grad):
    return grad                     # summed to self's shape by the engine (sum_to)


@derivative("t_copy.default", "TBackward0_copy")
def _(ctx, grad):
    return grad.t()


@derivative("transpose_copy.int", "TransposeBackward0_copy")
def _(ctx, grad):
    return grad.transpose(ctx.dim0, ctx.dim1)


@derivative("permute_copy.default", "PermuteBackward0_copy")
def _(ctx, grad):
    n = grad.dim()
    inverse = [0] * n
    for i, d in enumerate(ctx.dims):
        inverse[wrap(d, n)] = i
    return grad.permute(inverse)


@derivative("squeeze_copy.dims", "SqueezeBackward2_copy")
def _(ctx, grad):
    shape = ctx.meta("self").shape
    n = len(shape)
    for d in sorted({wrap(d, n) for d in ctx.dim}):
        if n and shape[d] == 1:
            grad = grad.unsqueeze(d)
    return grad


@derivative("unsqueeze_copy.default", "UnsqueezeBackward0_copy")
def _(ctx, grad):
    return grad.squeeze([ctx.dim])


@derivative("select_copy.int", "SelectBackward0_copy")
def _(ctx, grad):
    return sk.ops.select_scatter.default(zeros(grad, ctx.meta("self").shape), grad, ctx.dim,
                                         ctx.index)


@derivative("slice_copy.Tensor", "SliceBackward0_copy")
def _(ctx, grad):
    return sk.ops.slice_scatter.default(zeros(grad, ctx.meta("self").shape), grad, ctx.dim,
                                        ctx.start, ctx.end, ctx.step)


@derivative("diagonal_copy.default", "DiagonalBackward0_copy")
def _(ctx, grad):
    return sk.ops.diagonal_scatter.default(zeros(grad, ctx.meta("self").shape), grad, ctx.offset,
                                           ctx.dim1, ctx.dim2)


@derivative("unfold_copy.default", "UnfoldBackward0_copy")
def _(ctx, grad):
    # Window w, element j of the unfolded dim came from position w * step + j: move the window
    # elements next to their window index, flatten the pair and add into zeros at those spots.
    shape = list(ctx.meta("self").shape)
    if not shape:
        return grad.reshape([])
    d = wrap(ctx.dimension, len(shape))
    windows, size = grad.shape[d], ctx.size
    pos = (sk.arange(0, windows, 1, dtype=sk.int64, device=grad.device).unsqueeze(1) * ctx.step
           + sk.arange(0, size, 1, dtype=sk.int64, device=grad.device).unsqueeze(0))
    g = grad.movedim(-1, d + 1)
    flat_shape = shape[:d] + [windows * size] + shape[d + 1:]
    return zeros(grad, shape).index_add(d, pos.reshape([-1]), g.reshape(flat_shape))


def _multi_output(join):
    def formula(ctx, *grads):
        if not grads:           # no outputs (unbind of an empty dim): nothing flows back
            meta = ctx.meta("self")
            return sk.zeros(list(meta.shape), dtype=meta.dtype, device=meta.device)
        return join(ctx, list(grads))
    return formula


derivative("split_copy.Tensor", "SplitBackward0_copy")(
    _multi_output(lambda c, gs: sk.cat(gs, c.dim)))
derivative("split_with_sizes_copy.default", "SplitWithSizesBackward0_copy")(
    _multi_output(lambda c, gs: sk.cat(gs, c.dim)))
derivative("unbind_copy.int", "UnbindBackward0_copy")(
    _multi_output(lambda c, gs: sk.stack(gs, c.dim)))


def _positions(shape, stride, offset, device):
    """Storage positions of every element of the geometry, as an int64 tensor of ``shape``."""
    pos = sk.full([], offset, dtype=sk.int64, device=device)
    for d, (size, st) in enumerate(zip(shape, stride)):
        view = [1] * len(shape)
        view[d] = size
        pos = pos + sk.arange(0, size, 1, dtype=sk.int64, device=device).view(view) * st
    return pos.expand(list(shape)) if shape else pos


def _last(shape, stride, offset) -> int:
    """The largest storage position of a geometry (``offset`` when it has no element)."""
    if any(size == 0 for size in shape):
        return offset
    return offset + sum((size - 1) * st for size, st in zip(shape, stride))


@derivative("as_strided_copy.default", "AsStridedBackward0_copy", save=("self",))
def _(ctx, grad):
    # as_strided_backward for an input whose elements have distinct storage positions: each
    # output element adds its gradient to the input element at the same storage position.
    # (``self`` is saved for its storage offset; TensorMeta does not record it.)
    inp = ctx.self
    shape, stride = list(inp.shape), list(inp.stride())
    offset = inp.storage_offset() if ctx.storage_offset is None else ctx.storage_offset
    in_pos = _positions(shape, stride, inp.storage_offset(), grad.device).reshape([-1])
    out_pos = _positions(list(ctx.size), list(ctx.stride), offset, grad.device).reshape([-1])
    extent = max(_last(shape, stride, inp.storage_offset()),
                 _last(ctx.size, ctx.stride, offset)) + 1
    numel = in_pos.numel()
    owner = sk.full([extent], numel, dtype=sk.int64, device=grad.device)
    owner = owner.index_put([in_pos], sk.arange(0, numel, 1, dtype=sk.int64,
                                                device=grad.device), False)
    flat = zeros(grad, (numel + 1,))      # slot ``numel``: positions outside the input
    flat = flat.index_put([owner.index_select(0, out_pos)], grad.reshape([-1]), True)
    return flat.narrow(0, 0, numel).view(shape)


# -- in-place random fills -----------------------------------------------------------------------
# No functional variant exists: the entries are keyed by the in-place overload. The values no
# longer depend on the input, so its gradient is zero (PyTorch's UniformBackward0 /
# NormalBackward0: ``zeros_like(grad)``).
@derivative("uniform_.default", "UniformBackward0")
def _(ctx, grad):
    return sk.zeros_like(grad)


@derivative("normal_.default", "NormalBackward0")
def _(ctx, grad):
    return sk.zeros_like(grad)
