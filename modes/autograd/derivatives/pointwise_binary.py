"""Derivative-table entries of the binary and ternary pointwise ops, and the non-differentiable
marks of the pointwise predicates (comparisons, logical and bitwise ops, ``isnan`` ...).

subclass_kit has one overload where PyTorch has a Tensor and a Scalar one (``x.pow(2)`` calls
``pow.Tensor_Tensor`` with the number 2, PyTorch's Python API ``pow.Tensor_Scalar``): such a
formula sees the Python number, returns ``None`` for it, and names the node as PyTorch's Scalar
overload does (``numbers=`` of ``derivative``; ``formulas.node_name``). Formulas follow PyTorch
2.13's ``derivatives.yaml`` and ``FunctionsManual.cpp`` helpers, written with ``sk`` ops.
"""

from __future__ import annotations

import math

import subclass_kit as sk
from ..formulas import derivative, non_differentiable

_NOT_IMPLEMENTED = "torch::autograd::NotImplemented"


def _tensor(v) -> bool:
    return isinstance(v, sk.Tensor)


def _wants(ctx, i: int, name: str) -> bool:
    """Input ``i`` needs a gradient and is a tensor (not a Python number or None): only tensor
    arguments have a recorded ``TensorMeta``."""
    if not ctx.needs_input_grad[i]:
        return False
    try:
        ctx.meta(name)
    except KeyError:
        return False
    return True


def _not_implemented(op: str):
    raise RuntimeError(f"derivative for aten::{op} is not implemented")


# -- powers and divisions --------------------------------------------------------------------
@derivative("pow.Tensor_Tensor", "PowBackward1", inputs=("self", "exponent"),
            save=("self", "exponent", "result"), save_for={"result": ("exponent",)},
            numbers={("exponent",): "PowBackward0", ("self",): "PowBackward2"})
def _pow(ctx, grad):
    # PyTorch computes the exponent's gradient first (what modes see)
    x, e = ctx.self, ctx.exponent
    g_self = g_exp = None
    if _wants(ctx, 1, "exponent"):
        r = ctx.result
        if _tensor(x):     # pow_backward_exponent: d/de at x == 0, e >= 0 is 0 by continuity
            nonneg = e >= 0     # PyTorch's evaluation order of logical_and(x == 0, e >= 0)
            cond = sk.logical_and(x == 0, nonneg)
            value = r * x.log()
            g_exp = grad * sk.where(cond, _zero(grad), value)
        else:
            g_exp = _pow_exponent_grad(grad, x, e, r)
    if _wants(ctx, 0, "self"):
        if _tensor(e):     # pow_backward_self
            value = grad * (e * x.pow(e - 1))
            zero = _zero(grad)
            g_self = sk.where(e == 0.0, zero, value)
        else:
            g_self = _pow_self_grad(grad, x, e)
    return g_self, g_exp


def _zero(grad):
    """PyTorch's ``at::scalar_tensor(0.0, grad.options())``."""
    return sk.scalar_tensor(0.0, dtype=grad.dtype, device=grad.device)


def _pow_self_grad(grad, x, e):
    """PyTorch's ``pow_backward`` for a Scalar exponent ``e``: ``exponent * self.pow(exponent
    - 1)`` is ``mul(Tensor, Scalar)``."""
    if e == 0:
        return sk.zeros_like(x, memory_format=sk.contiguous_format)
    return grad * (x.pow(e - 1) * e)


def _pow_exponent_grad(grad, base, e, result):
    """PyTorch's ``pow_backward_exponent`` for a Scalar ``base``: the log of the number (NaN
    below 0, as C's log); at base 0, ``at::where(exponent >= 0, at::zeros({}), result * log)``."""
    log_base = math.log(base) if base > 0 else (-math.inf if base == 0 else math.nan)
    if base == 0:
        value = result * log_base
        zero = sk.zeros((), dtype=grad.dtype, device=grad.device)
        return grad * sk.where(e >= 0, zero, value)
    return grad * (result * log_base)


@derivative("pow.Tensor_Scalar", "PowBackward0", save=("self",))
def _pow_tensor_scalar(ctx, grad):
    return _pow_self_grad(grad, ctx.self, ctx.exponent)


@derivative("pow.Scalar", "PowBackward2", inputs=("exponent",), save=("exponent", "result"))
def _pow_scalar(ctx, grad):
    return _pow_exponent_grad(grad, ctx.self, ctx.exponent, ctx.result)


@derivative("div.Tensor_mode", "DivBackward2", inputs=("self", "other"), save=("self", "other"))
def _div_mode(ctx, grad):
    x, y = ctx.self, ctx.other
    if ctx.rounding_mode is not None:    # floor / trunc: piecewise constant, other's first
        g_other = _zeros_like(grad) if _wants(ctx, 1, "other") else None
        return (_zeros_like(grad) if _wants(ctx, 0, "self") else None), g_other
    # other's gradient first, as DivBackward0 (core.py)
    g_other = None
    if _wants(ctx, 1, "other"):
        quotient = (x / y) / y
        g_other = -grad * quotient
    return (grad / y if _wants(ctx, 0, "self") else None), g_other


def _zeros_like(grad):
    """PyTorch's ``at::zeros_like(grad, grad.options())``."""
    return sk.zeros_like(grad, dtype=grad.dtype, device=grad.device)


def _neg_times(grad, value):
    """``-grad * value``, ``value`` computed first (PyTorch's evaluation order)."""
    return -grad * value


@derivative("remainder.Tensor", "RemainderBackward1", inputs=("self", "other"),
            save=("self", "other"),
            numbers={("other",): "RemainderBackward0", ("self",): _NOT_IMPLEMENTED})
def _remainder(ctx, grad):
    if not _tensor(ctx.self):    # PyTorch's remainder.Scalar_Tensor has no formula
        _not_implemented("remainder")
    return (grad if ctx.needs_input_grad[0] else None,
            _neg_times(grad, ctx.self.div(ctx.other, rounding_mode="floor"))
            if _wants(ctx, 1, "other") else None)


@derivative("rsub.Tensor", "RsubBackward0", inputs=("self", "other"))
def _rsub(ctx, grad):
    # PyTorch's maybe_multiply(-grad, alpha): the negation first
    g_self = None
    if ctx.needs_input_grad[0]:
        g_self = -grad if ctx.alpha == 1 else -grad * ctx.alpha
    return g_self, (grad if ctx.needs_input_grad[1] else None)


@derivative("rsub.Scalar", "RsubBackward1")
def _rsub_scalar(ctx, grad):
    return -grad if ctx.alpha == 1 else -grad * ctx.alpha


@derivative("floor_divide.default", _NOT_IMPLEMENTED, inputs=("self", "other"))
def _floor_divide(ctx, grad):
    _not_implemented("floor_divide")     # as in PyTorch: no formula, the node raises


@derivative("remainder.Scalar", "RemainderBackward0")
def _remainder_scalar(ctx, grad):
    return grad


@derivative("remainder.Scalar_Tensor", _NOT_IMPLEMENTED, inputs=("other",))
def _remainder_scalar_tensor(ctx, grad):
    _not_implemented("remainder")     # as in PyTorch: no formula, the node raises


@derivative("fmod.Scalar", "FmodBackward0")
def _fmod_scalar(ctx, grad):
    return grad


@derivative("fmod.Tensor", "FmodBackward1", inputs=("self", "other"), save=("self", "other"),
            numbers={("other",): "FmodBackward0"})
def _fmod(ctx, grad):
    return (grad if _wants(ctx, 0, "self") else None,
            _neg_times(grad, ctx.self.div(ctx.other, rounding_mode="trunc"))
            if _wants(ctx, 1, "other") else None)


@derivative("xlogy.Tensor", "XlogyBackward0", inputs=("self", "other"), save=("self", "other"),
            numbers={("self",): "XlogyBackward1", ("other",): "XlogyBackward2"})
def _xlogy(ctx, grad):
    x, y = ctx.self, ctx.other
    g_self = g_other = None
    if _wants(ctx, 1, "other"):     # other's first, as PyTorch
        g_other = grad * x / y
    if _wants(ctx, 0, "self"):
        if _tensor(y):   # (self == 0.) & (other <= 0.), its right operand first
            value = sk.xlogy(grad, y)
            nonpos = y <= 0.0
            g_self = value.masked_fill(sk.bitwise_and(x == 0.0, nonpos), 0.0)
        elif y > 0:
            g_self = sk.xlogy(grad, y)
        else:
            g_self = sk.xlogy(grad, y).masked_fill(x == 0.0, 0.0)
    return g_self, g_other


# -- two-argument math -----------------------------------------------------------------------
@derivative("atan2.default", "Atan2Backward0", inputs=("self", "other"), save=("self", "other"))
def _atan2(ctx, grad):
    x, y = ctx.self, ctx.other
    yy = y * y                        # PyTorch's order of the ops
    denom = x * x + yy
    # at the origin the gradient is 0, not 0 * inf (PyTorch's atan2_backward)
    recip = denom.reciprocal().masked_fill(denom == 0, 0)
    return (grad * y * recip if ctx.needs_input_grad[0] else None,
            grad * -x * recip if ctx.needs_input_grad[1] else None)


@derivative("hypot.default", "HypotBackward0", inputs=("self", "other"),
            save=("self", "other", "result"))
def _hypot(ctx, grad):
    r = ctx.result
    g_other = grad * ctx.other / r if ctx.needs_input_grad[1] else None   # other's first
    return (grad * ctx.self / r if ctx.needs_input_grad[0] else None), g_other


@derivative("logaddexp.default", "LogaddexpBackward0", inputs=("self", "other"),
            save=("self", "other"))
def _logaddexp(ctx, grad):
    x, y = ctx.self, ctx.other    # other's first; ``1 + t`` is add(t, 1) in PyTorch's C++
    g_other = grad / ((x - y).exp() + 1) if ctx.needs_input_grad[1] else None
    return (grad / ((y - x).exp() + 1) if ctx.needs_input_grad[0] else None), g_other


@derivative("logaddexp2.default", "Logaddexp2Backward0", inputs=("self", "other"),
            save=("self", "other"))
def _logaddexp2(ctx, grad):
    x, y = ctx.self, ctx.other    # as logaddexp
    g_other = grad / (2 ** (x - y) + 1) if ctx.needs_input_grad[1] else None
    return (grad / (2 ** (y - x) + 1) if ctx.needs_input_grad[0] else None), g_other


def _max_min(ctx, grad, lose_self, lose_other):
    """maximum/minimum: ties split the gradient in half. PyTorch computes other's gradient
    first, each as ``at::where(self == other, grad / 2, grad).masked_fill_(lose, 0)``."""
    x, y = ctx.self, ctx.other

    def grad_of(lose):
        half = grad / 2
        return sk.where(x == y, half, grad).masked_fill_(lose(x, y), 0)
    g_other = grad_of(lose_other) if ctx.needs_input_grad[1] else None
    return (grad_of(lose_self) if ctx.needs_input_grad[0] else None), g_other


@derivative("maximum.default", "MaximumBackward0", inputs=("self", "other"),
            save=("self", "other"))
def _maximum(ctx, grad):
    return _max_min(ctx, grad, lambda x, y: x < y, lambda x, y: x > y)


@derivative("minimum.default", "MinimumBackward0", inputs=("self", "other"),
            save=("self", "other"))
def _minimum(ctx, grad):
    return _max_min(ctx, grad, lambda x, y: x > y, lambda x, y: x < y)


def _fmax_fmin(ctx, grad, self_wins):
    """fmax/fmin: the NaN-ignoring choice takes all of the gradient (no tie split). PyTorch
    computes other's gradient first, each with its own ``self_wins(...).logical_or_(isnan)``."""
    x, y = ctx.self, ctx.other
    g_other = (grad.masked_fill(self_wins(x, y).logical_or_(y.isnan()), 0)
               if ctx.needs_input_grad[1] else None)
    g_self = (grad.masked_fill(self_wins(x, y).logical_or_(y.isnan()).logical_not_(), 0)
              if ctx.needs_input_grad[0] else None)
    return g_self, g_other


@derivative("fmax.default", "FmaxBackward0", inputs=("self", "other"), save=("self", "other"))
def _fmax(ctx, grad):
    return _fmax_fmin(ctx, grad, lambda x, y: x >= y)


@derivative("fmin.default", "FminBackward0", inputs=("self", "other"), save=("self", "other"))
def _fmin(ctx, grad):
    return _fmax_fmin(ctx, grad, lambda x, y: x <= y)


@derivative("heaviside.default", _NOT_IMPLEMENTED, inputs=("self", "values"))
def _heaviside(ctx, grad):
    _not_implemented("heaviside")


# -- selection -------------------------------------------------------------------------------
@derivative("where.self", "WhereBackward0", inputs=("self", "other"), save=("condition",))
def _where(ctx, grad):
    c = ctx.condition
    g_other = sk.where(c, 0, grad) if _wants(ctx, 1, "other") else None   # other's first
    return (sk.where(c, grad, 0) if _wants(ctx, 0, "self") else None), g_other


@derivative("masked_fill.Scalar", "MaskedFillBackward0", save=("mask",))
def _masked_fill_scalar(ctx, grad):
    return grad.masked_fill(ctx.mask, 0)


@derivative("masked_fill.Tensor", "MaskedFillBackward1", inputs=("self", "value"),
            save=("mask",))
def _masked_fill_tensor(ctx, grad):
    # masked_fill_backward: the 0-d value receives the sum of the filled positions' gradient.
    m = ctx.mask
    return (grad.masked_fill(m, 0) if ctx.needs_input_grad[0] else None,
            sk.where(m, grad, 0).sum() if ctx.needs_input_grad[1] else None)


# -- blends ----------------------------------------------------------------------------------
@derivative("lerp.Scalar", "LerpBackward0", inputs=("self", "end"))
def _lerp_scalar(ctx, grad):
    w = ctx.weight    # end's gradient first, as PyTorch
    g_end = grad * w if ctx.needs_input_grad[1] else None
    return (grad * (1 - w) if ctx.needs_input_grad[0] else None), g_end


def _scalar_op(value, op_, t):
    """PyTorch's C++ ``Scalar op Tensor`` (``1 - w``, ``value / t``): ``empty_like(t)``
    filled with ``value``, then ``op_`` in place."""
    return op_(sk.empty_like(t, memory_format=sk.preserve_format).fill_(value), t)


@derivative("lerp.Tensor", "LerpBackward1", inputs=("self", "end", "weight"),
            save=("self", "end", "weight"))
def _lerp_tensor(ctx, grad):
    w = ctx.weight    # PyTorch's order: end, self, weight
    g_end = grad * w if ctx.needs_input_grad[1] else None
    g_self = grad * _scalar_op(1, sk.Tensor.sub_, w) if ctx.needs_input_grad[0] else None
    return (g_self, g_end,
            grad * (ctx.end - ctx.self) if ctx.needs_input_grad[2] else None)


@derivative("addcmul.default", "AddcmulBackward0", inputs=("self", "tensor1", "tensor2"),
            save=("tensor1", "tensor2"))
def _addcmul(ctx, grad):
    v = ctx.value
    return (grad if ctx.needs_input_grad[0] else None,
            grad * (ctx.tensor2 * v) if ctx.needs_input_grad[1] else None,
            grad * (ctx.tensor1 * v) if ctx.needs_input_grad[2] else None)


@derivative("addcdiv.default", "AddcdivBackward0", inputs=("self", "tensor1", "tensor2"),
            save=("tensor1", "tensor2"))
def _addcdiv(ctx, grad):
    v, t1, t2 = ctx.value, ctx.tensor1, ctx.tensor2
    g1 = grad * _scalar_op(v, sk.Tensor.div_, t2) if ctx.needs_input_grad[1] else None
    g2 = None
    if ctx.needs_input_grad[2]:   # -grad * (value * tensor1 / (tensor2 * tensor2))
        square = t2 * t2
        g2 = _neg_times(grad, t1 * v / square)
    return (grad if ctx.needs_input_grad[0] else None), g1, g2


# -- predicates and integer ops: outputs never require grad -----------------------------------
non_differentiable(
    "eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor",
    "eq.Scalar", "ne.Scalar", "lt.Scalar", "le.Scalar", "gt.Scalar", "ge.Scalar",
    reason="comparison: boolean output")
non_differentiable(
    "logical_and.default", "logical_or.default", "logical_xor.default", "logical_not.default",
    "isnan.default", "isinf.default", "isposinf.default", "isneginf.default", "signbit.default",
    reason="predicate: boolean output")
non_differentiable(
    "bitwise_and.Tensor", "bitwise_or.Tensor", "bitwise_xor.Tensor", "bitwise_not.default",
    "bitwise_and.Scalar", "bitwise_or.Scalar", "bitwise_xor.Scalar",
    "bitwise_and.Scalar_Tensor", "bitwise_or.Scalar_Tensor", "bitwise_xor.Scalar_Tensor",
    "gcd.default", "lcm.default",
    reason="integral or boolean inputs only")
