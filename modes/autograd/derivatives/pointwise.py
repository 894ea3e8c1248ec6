"""Derivative-table entries of the unary pointwise ops (PyTorch's ``derivatives.yaml`` rows).

Each formula follows PyTorch 2.13's entry for the op (the node names are its codegen's:
``AbsBackward0``, ``ClampBackward1`` ...) and its ``FunctionsManual.cpp`` helpers, written with
``sk`` ops so that a ``create_graph=True`` backward records them and double backward works.
Gradients come back in the broadcast shape and computation dtype; the engine reduces and casts
them (``formulas.finish_grads``).

relu, gelu, sigmoid and tanh call PyTorch's backward ops (``threshold_backward``,
``gelu_backward``, ``sigmoid_backward``, ``tanh_backward``, kernels in
``kernels/pointwise_backward.py``), which have rows of their own for double backward.
``silu_backward``, ``logit_backward`` and ``polygamma`` are not in ``sk.ops``: their math is
composed here from existing ops, with PyTorch's values and a longer backward op stream
(docs/differences.md). The binary, ternary and predicate ops are in ``pointwise_binary.py``.
"""

from __future__ import annotations

import math

import subclass_kit as sk
from ..formulas import derivative

_SQRT_PI = math.sqrt(math.pi)
_M_2_SQRTPI = 2.0 / _SQRT_PI
_M_SQRT1_2 = math.sqrt(0.5)
_M_SQRT2 = math.sqrt(2.0)
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _zeros(grad):
    """PyTorch's ``zeros_like(grad)`` for the piecewise-constant ops (floor, sign ...)."""
    return sk.zeros_like(grad)


# -- trigonometric and hyperbolic ------------------------------------------------------------
@derivative("sin.default", "SinBackward0", save=("self",))
def _sin(ctx, grad):
    return grad * ctx.self.cos()


@derivative("cos.default", "CosBackward0", save=("self",))
def _cos(ctx, grad):
    sin = ctx.self.sin()        # kept to the end, as C++ keeps the temporary
    return grad * -sin


@derivative("tan.default", "TanBackward0", save=("result",))
def _tan(ctx, grad):
    return grad * (1 + ctx.result.pow(2))


@derivative("asin.default", "AsinBackward0", save=("self",))
def _asin(ctx, grad):
    x = ctx.self
    return grad * (-x * x + 1).rsqrt()


@derivative("acos.default", "AcosBackward0", save=("self",))
def _acos(ctx, grad):
    x = ctx.self
    return grad * -((-x * x + 1).rsqrt())


@derivative("atan.default", "AtanBackward0", save=("self",))
def _atan(ctx, grad):
    x = ctx.self
    return grad / (x * x + 1)


@derivative("sinh.default", "SinhBackward0", save=("self",))
def _sinh(ctx, grad):
    return grad * ctx.self.cosh()


@derivative("cosh.default", "CoshBackward0", save=("self",))
def _cosh(ctx, grad):
    return grad * ctx.self.sinh()


@derivative("sinc.default", "SincBackward0", save=("self",))
def _sinc(ctx, grad):
    # FunctionsManual's sinc_backward: (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where x == 0.
    x = ctx.self
    x_pi = x * math.pi
    x_sq_pi = x * x * math.pi
    out = grad * ((x_pi * x_pi.cos() - x_pi.sin()) / x_sq_pi)
    return sk.where(x_sq_pi == 0, sk.zeros_like(grad), out)


@derivative("deg2rad.default", "Deg2RadBackward0")
def _deg2rad(ctx, grad):
    return grad * (math.pi / 180.0)


@derivative("rad2deg.default", "Rad2DegBackward0")
def _rad2deg(ctx, grad):
    return grad * (180.0 / math.pi)


# -- exponentials, logarithms, powers of self ------------------------------------------------
@derivative("exp2.default", "Exp2Backward0", save=("result",))
def _exp2(ctx, grad):
    return grad * ctx.result * _LN2


@derivative("expm1.default", "Expm1Backward0", save=("result",))
def _expm1(ctx, grad):
    return grad * (ctx.result + 1)


@derivative("log.default", "LogBackward0", save=("self",))
def _log(ctx, grad):
    return grad.div(ctx.self)


@derivative("log2.default", "Log2Backward0", save=("self",))
def _log2(ctx, grad):
    return grad / (ctx.self * _LN2)


@derivative("log10.default", "Log10Backward0", save=("self",))
def _log10(ctx, grad):
    return grad / (ctx.self * _LN10)


@derivative("log1p.default", "Log1PBackward0", save=("self",))
def _log1p(ctx, grad):
    return grad / (ctx.self + 1)


@derivative("sqrt.default", "SqrtBackward0", save=("result",))
def _sqrt(ctx, grad):
    return grad / (2 * ctx.result)


@derivative("rsqrt.default", "RsqrtBackward0", save=("result",))
def _rsqrt(ctx, grad):
    return -0.5 * grad * ctx.result.pow(3)


@derivative("reciprocal.default", "ReciprocalBackward0", save=("result",))
def _reciprocal(ctx, grad):
    r = ctx.result
    return -grad * (r * r)


# -- special functions -----------------------------------------------------------------------
@derivative("erf.default", "ErfBackward0", save=("self",))
def _erf(ctx, grad):
    return _M_2_SQRTPI * (-(ctx.self.pow(2))).exp() * grad


@derivative("erfc.default", "ErfcBackward0", save=("self",))
def _erfc(ctx, grad):
    return -_M_2_SQRTPI * (-(ctx.self.pow(2))).exp() * grad


@derivative("erfinv.default", "ErfinvBackward0", save=("self",))
def _erfinv(ctx, grad):
    return 0.5 * _SQRT_PI * ctx.self.erfinv().pow(2).exp() * grad


@derivative("lgamma.default", "LgammaBackward0", save=("self",))
def _lgamma(ctx, grad):
    return grad * ctx.self.digamma()


def trigamma(x):
    """``polygamma(1, x)`` written with sk ops (PyTorch's ``calc_trigamma`` scheme: reflection
    below 0.5, six recurrence steps, then the asymptotic series), so digamma's backward is
    itself differentiable. Accurate to ~1e-12 relative in float64."""
    reflect = x < 0.5
    y = sk.where(reflect, 1 - x, x)
    total = None
    for _ in range(6):
        term = (y * y).reciprocal()
        total = term if total is None else total + term
        y = y + 1
    iyy = (y * y).reciprocal()
    series = (1 + 1 / (2 * y) + iyy * (1 / 6 - iyy * (1 / 30 - iyy * (1 / 42 - iyy * (1 / 30
              - iyy * (5 / 66)))))) / y
    total = total + series
    s = (x * math.pi).sin()
    return sk.where(reflect, math.pi ** 2 / (s * s) - total, total)


@derivative("digamma.default", "DigammaBackward0", save=("self",))
def _digamma(ctx, grad):
    return grad * trigamma(ctx.self)


# -- activations: PyTorch's backward ops, and their own derivatives (double backward) ---------
@derivative("sigmoid.default", "SigmoidBackward0", save=("result",))
def _sigmoid(ctx, grad):
    return sk.ops.sigmoid_backward.default(grad, ctx.result)


@derivative("sigmoid_backward.default", "SigmoidBackwardBackward0",
            inputs=("grad_output", "output"), save=("grad_output", "output"))
def _sigmoid_backward(ctx, grad):
    y = ctx.output
    return (sk.ops.sigmoid_backward.default(grad, y) if ctx.needs_input_grad[0] else None,
            grad * ctx.grad_output * (-2 * y + 1) if ctx.needs_input_grad[1] else None)


@derivative("tanh_backward.default", "TanhBackwardBackward0",
            inputs=("grad_output", "output"), save=("grad_output", "output"))
def _tanh_backward(ctx, grad):
    y = ctx.output
    return (sk.ops.tanh_backward.default(grad, y) if ctx.needs_input_grad[0] else None,
            grad * (-2 * y * ctx.grad_output) if ctx.needs_input_grad[1] else None)


@derivative("relu.default", "ReluBackward0", save=("result",))
def _relu(ctx, grad):
    return sk.ops.threshold_backward.default(grad, ctx.result, 0)


@derivative("threshold_backward.default", "ThresholdBackwardBackward0",
            inputs=("grad_output", "self"), save=("self",))
def _threshold_backward(ctx, grad):
    return (sk.ops.threshold_backward.default(grad, ctx.self, ctx.threshold)
            if ctx.needs_input_grad[0] else None,
            sk.zeros_like(grad) if ctx.needs_input_grad[1] else None)


@derivative("silu.default", "SiluBackward0", save=("self",))
def _silu(ctx, grad):
    # infinitely_differentiable_silu_backward (PyTorch calls the silu_backward op when grad
    # mode is off: the same values)
    x = ctx.self
    s = x.sigmoid()
    return grad * s * (1.0 + x * (1.0 - s))


@derivative("gelu.default", "GeluBackward0", save=("self",))
def _gelu(ctx, grad):
    return sk.ops.gelu_backward.default(grad, ctx.self, approximate=ctx.approximate)


def _gelu_second(x, approximate: str):
    """d^2 gelu / dx^2 (FunctionsManual's gelu_double_backward without ``ggI * gO``)."""
    if approximate == "tanh":
        beta = _M_SQRT2 * _M_2_SQRTPI * 0.5
        kappa = 0.044715
        t = (beta * (x + kappa * x * x * x)).tanh()
        sech_sq = 1 - t * t
        du = beta * (1 + 3 * kappa * x * x)          # inner'
        ddu = 6 * kappa * beta * x                     # inner''
        # gelu = x/2 (1 + t): gelu'' = sech^2 (du + x/2 (ddu - 2 t du^2))
        return sech_sq * (du + 0.5 * x * (ddu - 2 * t * du * du))
    pdf = (-0.5 * x * x).exp() * (_M_2_SQRTPI * _M_SQRT1_2 * 0.5)
    return 2 * pdf - x * x * pdf


@derivative("gelu_backward.default", "GeluBackwardBackward0", inputs=("grad_output", "self"),
            save=("grad_output", "self"))
def _gelu_backward(ctx, grad):
    x = ctx.self
    return (sk.ops.gelu_backward.default(grad, x, approximate=ctx.approximate)
            if ctx.needs_input_grad[0] else None,
            grad * ctx.grad_output * _gelu_second(x, ctx.approximate)
            if ctx.needs_input_grad[1] else None)


@derivative("logit.default", "LogitBackward0", save=("self",))
def _logit(ctx, grad):
    # infinitely_differentiable_logit_backward (grad mode on, a create_graph backward) and the
    # vectorized logit_backward kernel (grad mode off) agree but for a negative eps, which the
    # kernel treats as no eps: outside [eps, 1 - eps] the gradient is 0 (eps given, NaN
    # inputs included) or NaN (no eps).
    x = ctx.self
    inner = grad / (x * (1.0 - x))
    eps = ctx.eps
    if eps is not None and (eps >= 0 or sk.is_grad_enabled()):
        return sk.where(sk.logical_and(x >= eps, x <= 1.0 - eps), inner, 0.0)
    return sk.where(sk.logical_or(x < 0.0, x > 1.0), math.nan, inner)


# -- piecewise: clamps, abs, rounding -------------------------------------------------------
@derivative("abs.default", "AbsBackward0", save=("self",))
def _abs(ctx, grad):
    return grad * ctx.self.sgn()


@derivative("frac.default", "FracBackward0")
def _frac(ctx, grad):
    return grad


for _op, _node in (("floor.default", "FloorBackward0"), ("ceil.default", "CeilBackward0"),
                   ("round.default", "RoundBackward0"), ("trunc.default", "TruncBackward0"),
                   ("sign.default", "SignBackward0")):
    derivative(_op, _node)(lambda ctx, grad: _zeros(grad))


@derivative("sgn.default", "SgnBackward0", save=("self", "result"))
def _sgn(ctx, grad):
    # sgn_backward: zero for real inputs (PyTorch saves self and result for the complex case).
    return _zeros(grad)


@derivative("nan_to_num.default", "NanToNumBackward0", save=("self",))
def _nan_to_num(ctx, grad):
    return grad * sk.isfinite(ctx.self)


def _clamp_self(grad, x, lo, hi):
    """clamp_backward: ``grad`` where ``lo <= x <= hi`` (the bounds get the subgradient 1)."""
    if lo is not None and hi is not None:
        return sk.where(sk.logical_and(x >= lo, x <= hi), grad, 0.0)
    if lo is not None:
        return sk.where(x >= lo, grad, 0.0)
    if hi is not None:
        return sk.where(x <= hi, grad, 0.0)
    return grad


@derivative("clamp.default", "ClampBackward1", save=("self",))
def _clamp(ctx, grad):
    return _clamp_self(grad, ctx.self, ctx.min, ctx.max)


@derivative("clamp.Tensor", "ClampBackward0", inputs=("self", "min", "max"),
            save=("self", "min", "max"))
def _clamp_tensor(ctx, grad):
    x, lo, hi = ctx.self, ctx.min, ctx.max
    g_self = _clamp_self(grad, x, lo, hi) if ctx.needs_input_grad[0] else None
    g_min = g_max = None
    # clamp_backward_min_max: min wins where min > max (clamp returns max there).
    if lo is not None and hi is not None:
        if ctx.needs_input_grad[1]:
            g_min = sk.where(sk.logical_and(x < lo, lo < hi), grad, 0.0)
        if ctx.needs_input_grad[2]:
            g_max = sk.where(sk.logical_or(x > hi, hi < lo), grad, 0.0)
    elif lo is not None and ctx.needs_input_grad[1]:
        g_min = sk.where(x < lo, grad, 0.0)
    elif hi is not None and ctx.needs_input_grad[2]:
        g_max = sk.where(x > hi, grad, 0.0)
    return g_self, g_min, g_max


@derivative("clamp_min.default", "ClampMinBackward0", save=("self",))
def _clamp_min(ctx, grad):
    return sk.where(ctx.self >= ctx.min, grad, 0.0)


@derivative("clamp_min.Tensor", "ClampMinBackward1", inputs=("self", "min"), save=("self", "min"))
def _clamp_min_tensor(ctx, grad):
    x, lo = ctx.self, ctx.min
    return (sk.where(x >= lo, grad, 0.0) if ctx.needs_input_grad[0] else None,
            sk.where(x < lo, grad, 0.0) if ctx.needs_input_grad[1] else None)


@derivative("clamp_max.default", "ClampMaxBackward0", save=("self",))
def _clamp_max(ctx, grad):
    return sk.where(ctx.self <= ctx.max, grad, 0.0)


@derivative("clamp_max.Tensor", "ClampMaxBackward1", inputs=("self", "max"), save=("self", "max"))
def _clamp_max_tensor(ctx, grad):
    x, hi = ctx.self, ctx.max
    return (sk.where(x <= hi, grad, 0.0) if ctx.needs_input_grad[0] else None,
            sk.where(x > hi, grad, 0.0) if ctx.needs_input_grad[1] else None)
