"""Derivatives of reductions, scans and value-selecting ops (PyTorch's ``derivatives.yaml``
entries for prod, var/std, amax/amin, max/min, median, kthvalue, sort/topk, logsumexp, norms,
cumsum/cumprod/logcumsumexp, cummax/cummin, nansum), and the non-differentiable marks of the
reductions with integer or bool outputs (argmax, count_nonzero, all/any, equal, allclose).

Each formula follows PyTorch's ``FunctionsManual.cpp`` helper of the same name (the node names
are PyTorch's: ``ProdBackward1`` is the second ``prod`` entry of the yaml). Formulas use only
``sk`` ops and Tensor methods, so they are differentiable again.
"""

from __future__ import annotations

import math

import subclass_kit as sk

from ..formulas import derivative, non_differentiable
from ._helpers import (dims_of, evenly_distribute_backward, restore_reduced_dims,
                       scale_grad_by_count, unsqueeze_multiple, value_selecting_backward, wrap,
                       zeros)

non_differentiable("argmax.default", "argmin.default", "count_nonzero.default",
                   "count_nonzero.dim_IntList", "all.default", "all.dim", "all.dims",
                   "any.default", "any.dim", "any.dims", "equal.default", "allclose.default",
                   reason="integer or bool output")


def _as(grad, dtype):
    return grad if grad.dtype == dtype else grad.to(dtype)


# -- prod ----------------------------------------------------------------------------------------
def _prod_safe_zeros_backward(grad, inp, dim: int):
    """Gradient of a product along ``dim`` when ``inp`` holds zeros: each element's gradient is
    the product of the others, as exclusive cumulative products from the left and the right."""
    if inp.numel() == 0:
        return grad.expand(list(inp.shape))
    n = inp.shape[dim]
    ones_size = list(inp.shape)
    ones_size[dim] = 1
    ones = grad.new_ones(ones_size)
    left = sk.cat([ones, inp.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    right = sk.cat([ones, inp.narrow(dim, 1, n - 1).flip([dim])], dim).cumprod(dim).flip([dim])
    return grad * (left * right)


@derivative("prod.default", "ProdBackward0", save=("self", "result"))
def _(ctx, grad):
    inp, result = _as(ctx.self, grad.dtype), ctx.result
    if inp.dim() == 0:
        return grad
    if inp.is_meta:
        return grad * (result / inp)
    zero_count = int((inp == 0).sum().item())
    if zero_count == 0:
        return grad * (result / inp)
    if zero_count > 1:
        return sk.zeros_like(inp)
    flat = inp.contiguous().view([-1])
    return _prod_safe_zeros_backward(grad, flat, 0).view(list(inp.shape))


@derivative("prod.dim_int", "ProdBackward1", save=("self", "result"))
def _(ctx, grad):
    inp, result = _as(ctx.self, grad.dtype), ctx.result
    if inp.dim() == 0:
        return grad
    dim = wrap(ctx.dim, inp.dim())
    if not ctx.keepdim:
        grad, result = grad.unsqueeze(dim), result.unsqueeze(dim)
    if inp.is_meta or int((inp == 0).sum().item()) == 0:
        return grad * (result / inp)
    return _prod_safe_zeros_backward(grad, inp, dim)


# -- var / std -----------------------------------------------------------------------------------
def _var_backward(grad, inp, dim, correction, keepdim):
    """PyTorch's ``var_backward``: ``2 / (N - correction) * grad * (x - mean)``; with no
    degrees of freedom left, NaN where ``x == mean`` and inf elsewhere."""
    correction = 1.0 if correction is None else float(correction)
    if inp.dim() == 0 or dim is None:
        dof = inp.numel() - correction
        if dof <= 0:
            nan = sk.scalar_tensor(math.nan, dtype=inp.dtype, device=inp.device)
            inf = sk.scalar_tensor(math.inf, dtype=inp.dtype, device=inp.device)
            nan_inf = sk.where(inp == inp.mean(), nan, inf)
            return grad * nan_inf
        return (2.0 / dof) * grad * (inp - inp.mean())
    dims = dims_of(dim, inp.dim())
    if not keepdim and inp.dim() > 1:
        grad = unsqueeze_multiple(grad, dims, inp.dim())
    # PyTorch's ``_safe_size`` over the listed dims (an empty list counts 1 element).
    rnumel = 1
    for d in ([] if len(dim) == 0 else dims):
        rnumel *= inp.shape[d]
    dof = rnumel - correction
    scale = 2.0 / dof if dof != 0 else math.inf     # SymFloat division: 2 / 0 is inf
    return scale * grad * (inp - inp.mean(dims, keepdim=True))


@derivative("var.correction", "VarBackward0", save=("self",))
def _(ctx, grad):
    return _var_backward(grad, ctx.self, ctx.dim, ctx.correction, ctx.keepdim)


@derivative("std.correction", "StdBackward0", save=("self", "result"))
def _(ctx, grad):
    result = ctx.result
    grad_var = (grad / (result * 2)).masked_fill(result == 0, 0)
    return _var_backward(grad_var, ctx.self, ctx.dim, ctx.correction, ctx.keepdim)


# -- amax / amin / aminmax -----------------------------------------------------------------------
def _amaxamin_backward(grad, inp, result, dim, keepdim):
    ndim = inp.dim()
    mask = restore_reduced_dims(result, dim, keepdim, ndim) == inp
    return scale_grad_by_count(restore_reduced_dims(grad, dim, keepdim, ndim), mask,
                               dims_of(dim, ndim))


@derivative("amax.default", "AmaxBackward0", save=("self", "result"))
def _(ctx, grad):
    return _amaxamin_backward(grad, ctx.self, ctx.result, ctx.dim, ctx.keepdim)


@derivative("amin.default", "AminBackward0", save=("self", "result"))
def _(ctx, grad):
    return _amaxamin_backward(grad, ctx.self, ctx.result, ctx.dim, ctx.keepdim)


@derivative("aminmax.default", "AminmaxBackward0", save=("self", "result"))
def _(ctx, grad_min, grad_max):
    lo, hi = ctx.results
    dim = None if ctx.dim is None else [ctx.dim]
    return (_amaxamin_backward(grad_min, ctx.self, lo, dim, ctx.keepdim)
            + _amaxamin_backward(grad_max, ctx.self, hi, dim, ctx.keepdim))


# -- max / min / median: all elements, and the .dim (values, indices) forms ----------------------
for _op, _node in (("max.default", "MaxBackward1"), ("min.default", "MinBackward1"),
                   ("median.default", "MedianBackward0"),
                   ("nanmedian.default", "NanmedianBackward0")):
    @derivative(_op, _node, save=("self", "result"))
    def _(ctx, grad):
        return evenly_distribute_backward(grad, ctx.self, ctx.result)


def _selecting(ctx, grad, _indices):
    """Values of a (values, indices) reduction: the gradient goes to the selected positions."""
    shape = ctx.meta("self").shape
    return value_selecting_backward(grad, wrap(ctx.dim, len(shape)), ctx.results[1], shape,
                                    ctx.keepdim)


for _op, _node in (("max.dim", "MaxBackward0"), ("min.dim", "MinBackward0"),
                   ("median.dim", "MedianBackward1"), ("nanmedian.dim", "NanmedianBackward1"),
                   ("kthvalue.default", "KthvalueBackward0")):
    derivative(_op, _node, save=("result1",))(_selecting)     # the indices, as PyTorch


def _sorting(ctx, grad, _indices):
    """sort/topk values: as ``_selecting`` with the dim kept."""
    shape = ctx.meta("self").shape
    return value_selecting_backward(grad, wrap(ctx.dim, len(shape)), ctx.results[1], shape, True)


for _op, _node in (("sort.default", "SortBackward0"), ("sort.stable", "SortBackward1"),
                   ("topk.default", "TopkBackward0")):
    derivative(_op, _node, save=("result1",))(_sorting)


# -- logsumexp and norms -------------------------------------------------------------------------
@derivative("logsumexp.default", "LogsumexpBackward0", save=("self", "result"))
def _(ctx, grad):
    inp, result = ctx.self, ctx.result
    if not ctx.keepdim and inp.dim() != 0:
        dims = dims_of(ctx.dim, inp.dim())
        grad = unsqueeze_multiple(grad, dims, inp.dim())
        result = unsqueeze_multiple(result, dims, inp.dim())
    return grad * (inp - result).exp()


def _norm_backward(grad, inp, p, norm, dim, keepdim):
    """PyTorch's ``norm_backward`` for the p-norm over ``dim`` (all dims when empty)."""
    p = 2.0 if p is None else float(p)
    ndim = inp.dim()
    dims = dims_of(dim, ndim)
    if not keepdim and ndim != 0:
        grad = unsqueeze_multiple(grad, dims, ndim)
        norm = unsqueeze_multiple(norm, dims, ndim)
    if p == 0.0:
        return None
    if p == 1.0:
        return inp.sgn() * grad
    if p == 2.0:
        return grad * (inp / norm).masked_fill(norm == 0, 0)
    if math.isinf(p):
        # amax(|x|) respecting NaN: the arg-max positions are where |x| == norm or |x| is NaN.
        absx = inp.abs()
        mask = absx.eq(norm).logical_or(absx.isnan())
        return inp.sgn() * ((grad / mask.sum(dims, keepdim=True)) * mask)
    if p < 1.0:
        scaled = inp.sgn() * inp.abs().pow(p - 1).masked_fill(inp == 0, 0)
        return scaled * grad * norm.pow(1 - p)
    if p < 2.0:
        scaled = inp.sgn() * inp.abs().pow(p - 1)
    else:
        scaled = inp * inp.abs().pow(p - 2)
    scale = (grad / norm.pow(p - 1)).masked_fill(norm == 0, 0)
    return scaled * scale


@derivative("norm.ScalarOpt_dim", "NormBackward1", save=("self", "result"))
def _(ctx, grad):
    return _norm_backward(grad, ctx.self, ctx.p, ctx.result, ctx.dim, ctx.keepdim)


@derivative("linalg_vector_norm.default", "LinalgVectorNormBackward0", save=("self", "result"))
def _(ctx, grad):
    return _norm_backward(grad, ctx.self, ctx.ord, ctx.result, ctx.dim, ctx.keepdim)


# -- scans ---------------------------------------------------------------------------------------
def _reversed_cumsum(t, dim):
    return t.flip([dim]).cumsum(dim).flip([dim])


@derivative("cumsum.default", "CumsumBackward0")
def _(ctx, grad):
    grad = _as(grad, ctx.meta("self").dtype)
    if grad.numel() <= 1 or grad.shape[wrap(ctx.dim, grad.dim())] == 1:
        return grad
    return _reversed_cumsum(grad, wrap(ctx.dim, grad.dim()))


@derivative("cumprod.default", "CumprodBackward0", save=("self", "result"))
def _(ctx, grad):
    inp, out = ctx.self, ctx.result
    grad = _as(grad, inp.dtype)
    if inp.numel() <= 1:
        return grad
    dim = wrap(ctx.dim, inp.dim())
    n = inp.shape[dim]
    if n == 1:
        return grad
    w = _as(out, inp.dtype) * grad
    if inp.is_meta or not bool((inp == 0).any().item()):
        return _reversed_cumsum(w, dim).div(inp)
    # With zeros, d out_j / d x_k is the product of x_0..x_j without x_k: for each k, the
    # cumulative product of x with x_k replaced by 1, weighted by grad_j for j >= k. Stacked
    # along a new leading axis (k), it stays vectorised (O(n^2) memory along ``dim`` only).
    moved = inp.movedim(dim, -1)
    g = grad.movedim(dim, -1)
    eye = sk.eye(n, n, dtype=sk.bool)
    shape = [n] + list(moved.shape)
    eye_b = eye.view([n] + [1] * (moved.dim() - 1) + [n]).expand(shape)
    ones = sk.ones_like(moved).unsqueeze(0).expand(shape)
    without_k = sk.where(eye_b, ones, moved.unsqueeze(0).expand(shape))
    upper = sk.ones(n, n, dtype=sk.bool).triu()       # j >= k
    upper_b = upper.view([n] + [1] * (moved.dim() - 1) + [n]).expand(shape)
    terms = (without_k.cumprod(-1) * g.unsqueeze(0)).masked_fill(upper_b.logical_not(), 0)
    per_k = terms.sum([-1])                           # [n, *batch]
    return per_k.movedim(0, -1).movedim(-1, dim)


# The most negative finite value of each floating dtype (``numeric_limits::lowest``).
_LOWEST = {"float64": -1.7976931348623157e308, "float32": -3.4028234663852886e38,
           "float16": -65504.0, "bfloat16": -3.3895313892515355e38}


@derivative("logcumsumexp.default", "LogcumsumexpBackward0", save=("self", "result"))
def _(ctx, grad):
    # Split grad by sign and accumulate in log space (PyTorch's formula, after TensorFlow's).
    inp, result = ctx.self, ctx.result
    if grad.dim() == 0 or grad.numel() == 0:
        return grad
    dim = wrap(ctx.dim, inp.dim())
    lowest = sk.scalar_tensor(_LOWEST[grad.dtype.name], dtype=grad.dtype, device=grad.device)
    log_abs = grad.abs().log()
    pos = sk.where(grad > 0, log_abs, lowest)
    neg = sk.where(grad < 0, log_abs, lowest)

    def rev_lcse(x):
        return x.flip([dim]).logcumsumexp(dim).flip([dim])
    return (rev_lcse(pos - result) + inp).exp() - (rev_lcse(neg - result) + inp).exp()


def _cummaxmin(ctx, grad, _indices):
    meta = ctx.meta("self")
    if math.prod(meta.shape) == 0:
        return zeros(grad, meta.shape)
    dim = wrap(ctx.dim, len(meta.shape))
    return zeros(grad, meta.shape).scatter_add(dim, ctx.results[1], grad)


derivative("cummax.default", "CummaxBackward0", save=("result",))(_cummaxmin)
derivative("cummin.default", "CumminBackward0", save=("result",))(_cummaxmin)


@derivative("nansum.default", "NansumBackward0", save=("self",))
def _(ctx, grad):
    inp = ctx.self
    grad = _as(grad, inp.dtype)
    if not ctx.keepdim and inp.dim() > 0:
        grad = unsqueeze_multiple(grad, dims_of(ctx.dim, inp.dim()), inp.dim())
    return grad.expand(list(inp.shape)) * inp.isnan().logical_not()
