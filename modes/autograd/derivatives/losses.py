"""Derivative-table entries of the loss primitives (``kernels/losses.py``) and their backward
ops, after PyTorch's ``derivatives.yaml``: the backward of ``nll_loss_forward`` is the
``nll_loss_backward`` op, of ``mse_loss`` ``mse_loss_backward``, of ``binary_cross_entropy``
``binary_cross_entropy_backward``, of ``softplus`` ``softplus_backward`` (so a mode sees
PyTorch's backward op stream); ``binary_cross_entropy_with_logits`` and the target gradients
are composed from ``sk`` ops as PyTorch's ``FunctionsManual.cpp`` composes them. The backward
ops have entries of their own (for double backward): each is linear in ``grad_output``.
"""

from __future__ import annotations

import subclass_kit as sk
from ..formulas import derivative

_MEAN = 1


def _numel(meta) -> int:
    n = 1
    for s in meta.shape:
        n *= s
    return n


@derivative("nll_loss_forward.default", "NllLossBackward0", inputs=("self",),
            save=("self", "target", "weight", "result1"))
def _nll(ctx, grad, grad_total_weight):
    return sk.ops.nll_loss_backward.default(grad, ctx.self, ctx.target, ctx.weight, ctx.reduction,
                                            ctx.ignore_index, ctx.results[1])


@derivative("nll_loss_backward.default", "NllLossBackwardBackward0", inputs=("grad_output",),
            save=("target", "weight"))
def _nll_backward(ctx, grad):
    return sk.ops.nll_loss_forward.default(grad, ctx.target, ctx.weight, ctx.reduction,
                                           ctx.ignore_index)[0]


@derivative("mse_loss.default", "MseLossBackward0", inputs=("self", "target"),
            save=("self", "target"))
def _mse(ctx, grad):
    self_grad = target_grad = None
    if ctx.needs_input_grad[0]:
        self_grad = sk.ops.mse_loss_backward.default(grad, ctx.self, ctx.target, ctx.reduction)
    if ctx.needs_input_grad[1]:
        target_grad = sk.ops.mse_loss_backward.default(grad, ctx.target, ctx.self, ctx.reduction)
    return self_grad, target_grad


@derivative("mse_loss_backward.default", "MseLossBackwardBackward0",
            inputs=("grad_output", "self", "target"), save=("grad_output", "self", "target"))
def _mse_backward(ctx, grad):
    n = _numel(ctx.meta("self")) if ctx.reduction == _MEAN else 1
    go = ctx.grad_output
    # Linear in grad_output: the engine sums this to grad_output's shape.
    gg = sk.ops.mse_loss_backward.default(grad, ctx.self, ctx.target, ctx.reduction) \
        if ctx.needs_input_grad[0] else None
    d_self = grad * go * (2.0 / n)
    return gg, d_self, -d_self


@derivative("binary_cross_entropy.default", "BinaryCrossEntropyBackward0",
            inputs=("self", "target"), save=("self", "target", "weight"))
def _bce(ctx, grad):
    self_grad = target_grad = None
    if ctx.needs_input_grad[0]:
        self_grad = sk.ops.binary_cross_entropy_backward.default(
            grad, ctx.self, ctx.target, ctx.weight, ctx.reduction)
    if ctx.needs_input_grad[1]:
        x = ctx.self
        target_grad = grad * ((1 - x).log() - x.log())
        if ctx.weight is not None:
            target_grad = target_grad * ctx.weight
        if ctx.reduction == _MEAN:
            target_grad = target_grad / _numel(ctx.meta("target"))
    return self_grad, target_grad


@derivative("binary_cross_entropy_backward.default", "BinaryCrossEntropyBackwardBackward0",
            inputs=("grad_output",), save=("self", "target", "weight"))
def _bce_backward(ctx, grad):
    return sk.ops.binary_cross_entropy_backward.default(grad, ctx.self, ctx.target, ctx.weight,
                                                        ctx.reduction)


@derivative("binary_cross_entropy_with_logits.default", "BinaryCrossEntropyWithLogitsBackward0",
            inputs=("self", "target"), save=("self", "target", "weight", "pos_weight"))
def _bce_logits(ctx, grad):
    x, y, w, pw = ctx.self, ctx.target, ctx.weight, ctx.pos_weight
    n = _numel(ctx.meta("self")) if ctx.reduction == _MEAN else 1
    self_grad = target_grad = None
    if ctx.needs_input_grad[0]:
        if pw is not None:
            t = pw * y
            g = (t + 1 - y) * x.sigmoid() - t
        else:
            g = x.sigmoid() - y
        g = g * grad
        if w is not None:
            g = g * w
        self_grad = g / n if n != 1 else g
    if ctx.needs_input_grad[1]:
        log_sig = -sk.nn.functional.softplus(-x)
        g = -x if pw is None else -x - (pw - 1) * log_sig
        g = g * grad
        if w is not None:
            g = g * w
        target_grad = g / n if n != 1 else g
    return self_grad, target_grad


@derivative("softplus.default", "SoftplusBackward0", save=("self",))
def _softplus(ctx, grad):
    return sk.ops.softplus_backward.default(grad, ctx.self, ctx.beta, ctx.threshold)


@derivative("softplus_backward.default", "SoftplusBackwardBackward0",
            inputs=("grad_output", "self"), save=("grad_output", "self"))
def _softplus_backward(ctx, grad):
    x, beta, threshold = ctx.self, ctx.beta, ctx.threshold
    d_go = sk.ops.softplus_backward.default(grad, x, beta, threshold)
    s = (x * beta).sigmoid()
    inside = (x * beta <= threshold)
    d_self = grad * ctx.grad_output * beta * s * (1 - s) * inside
    return d_go, d_self


@derivative("constant_pad_nd.default", "ConstantPadNdBackward0")
def _pad(ctx, grad):
    return sk.ops.constant_pad_nd.default(grad, [-p for p in ctx.pad])
