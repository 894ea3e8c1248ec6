"""Derivatives of the batched/vector linear-algebra primitives (bmm, baddbmm, dot, mv, vdot) and
the neural-network primitives of ``kernels/nn.py`` (``_softmax``, ``_log_softmax``,
``native_layer_norm``, ``embedding``, the fused attention
``_scaled_dot_product_flash_attention_for_cpu``) and of the backward ops their formulas call
(``_softmax_backward_data``, ``_log_softmax_backward_data``, ``native_layer_norm_backward``,
``embedding_dense_backward``: their double backward), after PyTorch's ``derivatives.yaml``.

``matmul``, ``linear``, ``softmax``, ``log_softmax``, ``layer_norm`` and ``einsum`` are composite
(CompositeImplicitAutograd): they are differentiated through the primitives they lower to and
have no entry here.
"""

from __future__ import annotations

import math

import subclass_kit as sk

from ..formulas import derivative, non_differentiable
from ._helpers import maybe_multiply, wrap


# -- linear algebra ------------------------------------------------------------------------------
@derivative("bmm.default", "BmmBackward0", inputs=("self", "mat2"), save=("self", "mat2"),
            save_for={"self": ("mat2",), "mat2": ("self",)})
def _(ctx, grad):
    gs = grad.bmm(ctx.mat2.transpose(1, 2)) if ctx.needs_input_grad[0] else None
    gm = ctx.self.transpose(1, 2).bmm(grad) if ctx.needs_input_grad[1] else None
    return gs, gm


@derivative("baddbmm.default", "BaddbmmBackward0", inputs=("self", "batch1", "batch2"),
            save=("batch1", "batch2"),
            save_for={"batch1": ("batch2",), "batch2": ("batch1",)})
def _(ctx, grad):
    need = ctx.needs_input_grad
    gs = maybe_multiply(grad, ctx.beta) if need[0] else None
    g1 = maybe_multiply(grad.bmm(ctx.batch2.transpose(1, 2)), ctx.alpha) if need[1] else None
    g2 = maybe_multiply(ctx.batch1.transpose(1, 2).bmm(grad), ctx.alpha) if need[2] else None
    return gs, g1, g2


@derivative("dot.default", "DotBackward0", inputs=("self", "tensor"), save=("self", "tensor"))
def _(ctx, grad):
    return grad * ctx.tensor, grad * ctx.self


@derivative("vdot.default", "VdotBackward0", inputs=("self", "other"), save=("self", "other"))
def _(ctx, grad):
    # Real dtypes only: conj() is the identity.
    return grad * ctx.other, grad * ctx.self


@derivative("mv.default", "MvBackward0", inputs=("self", "vec"), save=("self", "vec"))
def _(ctx, grad):
    gs = grad.ger(ctx.vec) if ctx.needs_input_grad[0] else None
    gv = ctx.self.t().mv(grad) if ctx.needs_input_grad[1] else None
    return gs, gv


# -- softmax -------------------------------------------------------------------------------------
@derivative("_softmax.default", "SoftmaxBackward0", save=("result",))
def _(ctx, grad):
    return sk.ops._softmax_backward_data.default(grad, ctx.result, ctx.dim, ctx.meta("self").dtype)


@derivative("_log_softmax.default", "LogSoftmaxBackward0", save=("result",))
def _(ctx, grad):
    return sk.ops._log_softmax_backward_data.default(grad, ctx.result, ctx.dim,
                                                     ctx.meta("self").dtype)


def _as(grad, dtype):
    return grad if grad.dtype == dtype else grad.to(dtype)


@derivative("_softmax_backward_data.default", "SoftmaxBackwardDataBackward0",
            inputs=("grad_output", "output"), save=("grad_output", "output"))
def _(ctx, grad):
    # d/d grad_output is the same op again; d/d output is PyTorch's softmax_double_backward.
    out, gout = ctx.output, ctx.grad_output
    grad = _as(grad, out.dtype)
    dim = [wrap(ctx.dim, out.dim())]
    ggo = sk.ops._softmax_backward_data.default(grad, out, ctx.dim, ctx.input_dtype) \
        if ctx.needs_input_grad[0] else None
    gout_ = None
    if ctx.needs_input_grad[1]:
        gout_ = (gout * grad - (out * gout).sum(dim, keepdim=True) * grad
                 - gout * (out * grad).sum(dim, keepdim=True))
    return ggo, gout_


@derivative("_log_softmax_backward_data.default", "LogSoftmaxBackwardDataBackward0",
            inputs=("grad_output", "output"), save=("grad_output", "output"))
def _(ctx, grad):
    out, gout = ctx.output, ctx.grad_output
    grad = _as(grad, out.dtype)
    dim = [wrap(ctx.dim, out.dim())]
    ggo = grad - (grad * out.exp()).sum(dim, keepdim=True) if ctx.needs_input_grad[0] else None
    gout_ = (-gout.sum(dim, keepdim=True) * out.exp() * grad) if ctx.needs_input_grad[1] \
        else None
    return ggo, gout_


# -- layer norm ----------------------------------------------------------------------------------
@derivative("native_layer_norm.default", "NativeLayerNormBackward0",
            inputs=("input", "weight", "bias"), save=("input", "weight", "bias", "result1",
                                                      "result2"), outputs=(True, False, False))
def _(ctx, grad, _grad_mean, _grad_rstd):
    # PyTorch's yaml: one native_layer_norm_backward call, the mask saying which of input,
    # weight and bias need a gradient. mean and rstd are not differentiable outputs
    # (output_differentiability [True, False, False]): they never require grad.
    _, mean, rstd = ctx.results
    need = ctx.needs_input_grad
    mask = [need[0], need[1] and ctx.weight is not None, need[2] and ctx.bias is not None]
    return sk.ops.native_layer_norm_backward.default(
        grad, ctx.input, ctx.normalized_shape, mean, rstd, ctx.weight, ctx.bias, mask)


def _row_mean(t, dims):
    return t.mean(dims, keepdim=True)


@derivative("native_layer_norm_backward.default", "NativeLayerNormBackwardBackward0",
            inputs=("grad_out", "input", "weight"),
            save=("grad_out", "input", "mean", "rstd", "weight"))
def _(ctx, ggx, ggw, ggb):
    # PyTorch's layer_norm_double_backward, derived here per normalized row of N elements with
    # mean and rstd as functions of the input: x_hat = (x - mean) * rstd, a = grad_out * weight
    # and the incoming gradients ggx (of dx), ggw (of dweight), ggb (of dbias):
    #   d grad_out = weight * q + ggw * x_hat + ggb,  q = rstd * (ggx - <ggx> - x_hat <ggx x_hat>)
    #   d weight   = sum over the rows of grad_out * q
    #   d input    = c - <c>,  c = rstd^2 * (3 x_hat <a x_hat> <ggx x_hat> - x_hat (<ggx a> -
    #                <ggx><a>) - a <ggx x_hat> - ggx <a x_hat>) + rstd * (v - x_hat <v x_hat>)
    # with <.> the row mean and v = ggw * grad_out. mean and rstd get no gradient (PyTorch's
    # yaml: non_differentiable); bias gets none either (it only gives dbias its shape).
    x, g, weight = ctx.input, ctx.grad_out, ctx.weight
    k = len(ctx.normalized_shape)
    axis = x.dim() - k
    dims = list(range(axis, x.dim()))
    stat_shape = list(x.shape[:axis]) + [1] * k
    mean, rstd = ctx.mean, ctx.rstd
    if list(mean.shape) != stat_shape:
        mean, rstd = mean.reshape(stat_shape), rstd.reshape(stat_shape)
    if ggx is not None:
        ggx = _as(ggx, x.dtype)
    if math.prod(x.shape) == 0:
        ggx = ggw = ggb = None
    x_hat = (x - mean) * rstd
    a = g * weight if weight is not None else g
    need = ctx.needs_input_grad
    q = None
    if ggx is not None and (need[0] or need[2]):
        q = rstd * (ggx - _row_mean(ggx, dims) - x_hat * _row_mean(ggx * x_hat, dims))
    d_g = d_x = d_w = None
    if need[0]:
        terms = [q * weight if weight is not None else q] if q is not None else []
        if ggw is not None:
            terms.append(ggw * x_hat)
        if ggb is not None:
            terms.append(ggb.expand(x.shape))
        for t in terms:
            d_g = t if d_g is None else d_g + t
    if need[1] and (ggx is not None or ggw is not None):
        c = None
        if ggx is not None:
            ax, ux = _row_mean(a * x_hat, dims), _row_mean(ggx * x_hat, dims)
            ua = _row_mean(ggx * a, dims) - _row_mean(ggx, dims) * _row_mean(a, dims)
            c = (rstd * rstd) * (x_hat * (3 * ax * ux - ua) - a * ux - ggx * ax)
        if ggw is not None:
            v = ggw * g
            cw = rstd * (v - x_hat * _row_mean(v * x_hat, dims))
            c = cw if c is None else c + cw
        d_x = c - _row_mean(c, dims)
    if need[2] and weight is not None and q is not None:
        batch = list(range(axis))
        d_w = (g * q).sum(batch) if batch else g * q
    return d_g, d_x, d_w


# -- embedding -----------------------------------------------------------------------------------
@derivative("embedding.default", "EmbeddingBackward0", inputs=("weight",), save=("indices",))
def _(ctx, grad):
    # ``sparse=True`` yields a dense gradient here (no sparse layout; docs/differences.md).
    return sk.ops.embedding_dense_backward.default(grad, ctx.indices, ctx.meta("weight").shape[0],
                                                   ctx.padding_idx, ctx.scale_grad_by_freq)


@derivative("embedding_dense_backward.default", "EmbeddingDenseBackwardBackward0",
            inputs=("grad_output",), save=("indices",))
def _(ctx, grad):
    # embedding_dense_double_backward: the rows read back at the indices (padding rows zero;
    # PyTorch ignores scale_grad_by_freq here too).
    indices = ctx.indices
    flat = indices.reshape([-1])
    rows = grad.index_select(0, flat)
    if ctx.padding_idx >= 0:
        rows = rows.masked_fill((flat == ctx.padding_idx).unsqueeze(1), 0)
    return rows.view(list(indices.shape) + [grad.shape[1]])


# -- fused attention -----------------------------------------------------------------------------
@derivative("_scaled_dot_product_flash_attention_for_cpu.default",
            "ScaledDotProductFlashAttentionForCpuBackward0", inputs=("query", "key", "value"),
            save=("query", "key", "value", "attn_mask", "result"), outputs=(True, False))
def _(ctx, grad, _grad_logsumexp):
    # PyTorch's yaml: the three gradients from the fused backward op, which recomputes the
    # attention probabilities from the saved logsumexp; logsumexp is not differentiable.
    output, logsumexp = ctx.results
    return sk.ops._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad, ctx.query, ctx.key, ctx.value, output, logsumexp, ctx.dropout_p, ctx.is_causal,
        attn_mask=ctx.attn_mask, scale=ctx.scale)


non_differentiable("_scaled_dot_product_flash_attention_for_cpu_backward.default",
                   reason="PyTorch has no double backward for the fused attention")
