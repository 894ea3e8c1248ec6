"""Derivatives of the arithmetic, reductions and matrix products the engine's own tests and the
MLP use: ``add sub mul div neg sum mean mm addmm tanh exp`` (PyTorch's ``derivatives.yaml``
entries of the same names). Written with ``sk`` ops, so they are differentiable themselves
(double backward)."""

from __future__ import annotations

import subclass_kit as sk

from ..formulas import NODE_NAMES, derivative

# The ops themselves, not Tensor methods: PyTorch's formulas call ATen in C++, so the function
# level (``__tensor_function__``, function modes) sees none of a backward's ops.
_ops = sk.ops
_mul = _ops.mul.Tensor
_div = _ops.div.Tensor
_neg = _ops.neg.default
_mm_op = _ops.mm.default
_t = _ops.t.default
_expand = _ops.expand.default


def _scaled(grad, alpha):
    return grad if alpha == 1 else _mul(grad, alpha)


@derivative("add.Tensor", "AddBackward0", inputs=("self", "other"))
def _add(ctx, grad):
    return grad, (_scaled(grad, ctx.alpha) if ctx.needs_input_grad[1] else None)


@derivative("sub.Tensor", "SubBackward0", inputs=("self", "other"))
def _sub(ctx, grad):
    return grad, (_neg(_scaled(grad, ctx.alpha)) if ctx.needs_input_grad[1] else None)


@derivative("mul.Tensor", "MulBackward0", inputs=("self", "other"), save=("self", "other"),
            save_for={"self": ("other",), "other": ("self",)})
def _mul_backward(ctx, grad):
    # PyTorch's MulBackward0 computes ``other``'s gradient first
    b = _mul(grad, ctx.self) if ctx.needs_input_grad[1] else None
    a = _mul(grad, ctx.other) if ctx.needs_input_grad[0] else None
    return a, b


@derivative("div.Tensor", "DivBackward0", inputs=("self", "other"), save=("self", "other"),
            save_for={"self": ("other",)})
def _div_backward(ctx, grad):
    other = ctx.other       # a Python number when only ``self`` is differentiated
    # PyTorch's div_tensor_other_backward, in its order: -grad * ((self / other) / other)
    b = None
    if ctx.needs_input_grad[1]:
        quotient = _div(_div(ctx.self, other), other)
        b = _mul(_neg(grad), quotient)
    a = _div(grad, other) if ctx.needs_input_grad[0] else None
    return a, b


@derivative("neg.default", "NegBackward0")
def _neg_backward(ctx, grad):
    return _neg(grad)


def _reduced_dims(ndim, dim):
    if not dim:
        return list(range(ndim))
    return sorted(d % ndim if ndim else 0 for d in dim)


def _expand_back(grad, meta, dim, keepdim):
    """The gradient of a reduction over ``dim`` brought back to the input's shape."""
    shape = meta.shape
    if grad.dim() == 0 or not shape:
        return _expand(grad, shape) if grad.dim() == 0 else grad.reshape(shape)
    if not keepdim:
        for d in _reduced_dims(len(shape), dim):
            grad = grad.unsqueeze(d)
    return _expand(grad, shape)


@derivative("sum.dim_IntList", "SumBackward1")
def _sum(ctx, grad):
    return _expand_back(grad, ctx.meta("self"), ctx.dim, ctx.keepdim)


@derivative("mean.dim", "MeanBackward1")
def _mean(ctx, grad):
    meta = ctx.meta("self")
    count = 1
    for d in _reduced_dims(len(meta.shape), ctx.dim):
        count *= meta.shape[d] if meta.shape else 1
    return _div(_expand_back(grad, meta, ctx.dim, ctx.keepdim), count)


@derivative("sum.default", "SumBackward0")
def _sum_all(ctx, grad):
    return _expand(grad, ctx.meta("self").shape)


@derivative("mean.default", "MeanBackward0")
def _mean_all(ctx, grad):
    shape = ctx.meta("self").shape
    count = 1
    for s in shape:
        count *= s
    return _div(_expand(grad, shape), count)


NODE_NAMES["sum.dim_IntList"] = lambda b: "SumBackward1" if b.get("dim") else "SumBackward0"
NODE_NAMES["mean.dim"] = lambda b: "MeanBackward1" if b.get("dim") else "MeanBackward0"


def _column_major(meta) -> bool:
    (rows, _), strides = meta.shape, meta.stride
    return strides[0] == 1 and strides[1] == rows


def _mat1_grad(grad, mat2, mat1_meta, alpha):
    """PyTorch's ``mm_mat1_backward``: a column-major ``mat1`` gets its gradient column-major
    (``mat2 @ grad.T``, transposed) for efficiency; else ``grad @ mat2.T``."""
    if _column_major(mat1_meta):
        return _scaled(_t(_mm_op(mat2, _t(grad))), alpha)
    return _scaled(_mm_op(grad, _t(mat2)), alpha)


def _mat2_grad(grad, mat1, mat2_meta, alpha):
    """PyTorch's ``mm_mat2_backward``: ``(grad.T @ mat1).T`` for a column-major ``mat2`` (the
    transposed weight of a Linear), else ``mat1.T @ grad``."""
    if _column_major(mat2_meta):
        return _scaled(_t(_mm_op(_t(grad), mat1)), alpha)
    return _scaled(_mm_op(_t(mat1), grad), alpha)


@derivative("mm.default", "MmBackward0", inputs=("self", "mat2"), save=("self", "mat2"),
            save_for={"self": ("mat2",), "mat2": ("self",)})
def _mm(ctx, grad):
    needs = ctx.needs_input_grad
    # mat2's first: PyTorch's MmBackward0 computes them in that order (what modes see)
    b = _mat2_grad(grad, ctx.self, ctx.meta("mat2"), 1) if needs[1] else None
    a = _mat1_grad(grad, ctx.mat2, ctx.meta("self"), 1) if needs[0] else None
    return a, b


@derivative("addmm.default", "AddmmBackward0", inputs=("self", "mat1", "mat2"),
            save=("mat1", "mat2"), save_for={"mat1": ("mat2",), "mat2": ("mat1",)})
def _addmm(ctx, grad):
    needs = ctx.needs_input_grad
    a = _scaled(grad, ctx.beta) if needs[0] else None
    b = _mat1_grad(grad, ctx.mat2, ctx.meta("mat1"), ctx.alpha) if needs[1] else None
    c = _mat2_grad(grad, ctx.mat1, ctx.meta("mat2"), ctx.alpha) if needs[2] else None
    return a, b, c


@derivative("tanh.default", "TanhBackward0", save=("result",))
def _tanh(ctx, grad):
    return sk.ops.tanh_backward.default(grad, ctx.result)


@derivative("exp.default", "ExpBackward0", save=("result",))
def _exp(ctx, grad):
    return _mul(grad, ctx.result)
