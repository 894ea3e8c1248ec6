"""gelu and its backward (exact, erf-based, and ``approximate="tanh"``), with PyTorch's float32
arithmetic.

PyTorch's CPU computes float32's erf-based gelu on one of two paths, both of which approximate
erf by Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7)::

    erf(z) = sign(z) (1 - t R(t) exp(-z^2)),  t = 1 / (1 + p |z|),  R a quartic

- a contiguous tensor of two or more elements goes to oneDNN's ``eltwise_gelu_erf`` (ATen's
  ``use_mkldnn``), which forms ``S + S erf`` with ``S = x / 2``, and for the backward
  ``1/2 + T + erf / 2`` with ``T = z exp(-z^2) / sqrt(pi)``;
- anything else, float16 and bfloat16 included, goes to ATen's ``GeluKernel``,
  ``x / 2 (1 + erf)`` with A&S erf (``Vectorized<float>::erf``) on each full step of its
  vectorised loop (16 elements, 32 for the 16-bit types) and ``std::erf`` on the scalar tail
  (the rest of a loop row); ``cdf + x pdf`` for the backward.

Both are done here with one rounding per operation (PyTorch fuses some into multiply-adds, and
oneDNN has its own exp): most results are PyTorch's bit for bit, nearly all within four ulp,
and it is ten times faster than the float64 erf it replaces. The 16-bit types compute in
float32 (``reduced``). float64 takes ``erf`` (PyTorch's Sleef erf is within an ulp of it).
"""

from __future__ import annotations

import math

import numpy as np

from ._pointwise_fns import erf

_F32 = np.dtype(np.float32)
_ONE = np.float32(1)
_HALF = np.float32(0.5)
_ZERO = np.float32(0)
_AS_P = np.float32(0.3275911)
_AS_R = tuple(np.float32(c) for c in
              (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
# elements per step of ATen's vectorized_loop (two AVX2 vectors): float32, 16-bit types
_VEC_STEP, _VEC_STEP_REDUCED = 16, 32
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_RSQRT_PI = np.float32(1.0 / math.sqrt(math.pi))
_BETA = 2.0 / math.sqrt(math.pi) * _SQRT1_2 * 0.5     # ATen's kBeta: 1 / sqrt(2 pi)


def _onednn(x) -> bool:
    """Whether PyTorch sends this float32 operand to oneDNN (ATen's ``use_mkldnn``)."""
    return x.flags.c_contiguous and x.size > 1


def _as_terms(z, out=None, consume=False):
    """``q = exp(-z^2)`` and ``e = q t R(t)``, so that A&S's erf(z) is
    ``sign(z) (1 - e)``; both float32 arrays shaped and laid out like ``z``. ``e`` goes into
    ``out`` when given (laid out as ``z``), ``q`` into ``z`` itself when ``consume``: each a
    fresh array less (a large one costs its page faults)."""
    t = np.abs(z, out=out)
    np.multiply(t, _AS_P, out=t)
    np.add(t, _ONE, out=t)
    np.divide(_ONE, t, out=t)
    r = np.multiply(t, _AS_R[0])
    for c in _AS_R[1:-1]:
        np.add(r, c, out=r)
        np.multiply(r, t, out=r)
    np.add(r, _AS_R[-1], out=r)
    q = np.multiply(z, z, out=z if consume else None)
    np.negative(q, out=q)
    with np.errstate(under="ignore"):
        np.exp(q, out=q)
        np.multiply(q, t, out=t)
        np.multiply(t, r, out=t)
    return q, t


def _as_erf(z, e):
    """A&S's erf from ``e`` (``_as_terms``), written into ``e``."""
    np.subtract(_ONE, e, out=e)
    np.copysign(e, z, out=e)
    return e


def _loop_rows(*operands):
    """How ATen's TensorIterator loops over same-shaped ``operands`` (and an output laid out
    like them): a function viewing an array laid out as the first as the loop's rows (dims in
    memory order, decided by the first operand whose strides tell them apart; inner dims
    merged while every operand is contiguous across them), or None when an operand's inner
    stride is neither one element nor zero (ATen's loop is then scalar throughout)."""
    x = operands[0]
    order = sorted((i for i in range(x.ndim) if x.shape[i] > 1),
                   key=lambda i: tuple(-abs(a.strides[i]) for a in operands))
    if order and any(abs(a.strides[order[-1]]) not in (0, a.itemsize) for a in operands):
        return None
    k = len(order) - 1
    while k > 0 and all(a.strides[order[k - 1]] == a.strides[order[k]] * a.shape[order[k]]
                        for a in operands):
        k -= 1
    outer = order[:max(k, 0)]
    shape = tuple(x.shape[i] for i in outer) + (-1,)
    perm = outer + [i for i in range(x.ndim) if i not in outer]
    return lambda a: a.transpose(perm).reshape(shape)      # views: only contiguous dims merge


def _aten_erf(z, *operands, step=_VEC_STEP, out=None, consume=False):
    """erf of float32 ``z = x / sqrt 2`` (laid out as ``x``, or compact in its order) as
    ATen's GeluKernel computes it over ``operands`` (``x``, or ``dy, x``): A&S on each full
    ``step`` of a loop row whose elements are adjacent, ``erf`` on the rest of the row and on
    every row of a scalar loop. ``out`` and ``consume`` as for ``_as_terms`` (the sign is then
    read from the last operand, ``x``)."""
    rows = _loop_rows(*operands)
    if rows is None:
        return erf(z)
    z_rows = rows(z)
    tail = z_rows.shape[-1] % step
    exact = erf(z_rows[..., -tail:]) if tail else None    # before ``consume`` overwrites z
    e = _as_erf(operands[-1] if consume else z, _as_terms(z, out, consume)[1])
    if tail:
        rows(e)[..., -tail:] = exact
    return e


def _buffer(out, z, *operands):
    """``out`` when it can hold a float32 temporary laid out as ``z`` while the ``operands``
    are still read (no overlap: an in-place ``gelu_`` writes into its input), else None."""
    if out is not None and out.dtype == _F32 and out.shape == z.shape and \
            out.strides == z.strides and \
            not any(np.may_share_memory(out, a) for a in operands):
        return out
    return None


def gelu(x, approximate="none", *, reduced=False, out=None):
    """gelu of the float array ``x`` (module docstring); returns an array of its dtype, ``out``
    when it could be written there. ``reduced``: ``x`` holds a float16 or bfloat16 tensor's
    values in float32."""
    if x.ndim == 0:     # (numpy's 0-d arithmetic gives scalars, which take no ``out=``)
        return gelu(x.reshape(1), approximate, reduced=reduced).reshape(())
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + np.tanh(k * (x + 0.044715 * x * x * x)))
    z = x * _SQRT1_2
    if x.dtype != _F32:
        # 0.5 * x * (1 + erf(z)) with the expression's roundings, in two temporaries
        cdf = erf(z)
        np.add(1.0, cdf, out=cdf)
        np.multiply(np.multiply(0.5, x, dtype=cdf.dtype), cdf, out=cdf)
        return cdf
    onednn = not reduced and _onednn(x)
    # z's buffer takes exp(-z^2), then x / 2; the sign comes from x (z's is x's)
    buf = _buffer(out, z, x)
    res = (_as_erf(x, _as_terms(z, buf, consume=True)[1]) if onednn
           else _aten_erf(z, x, step=_VEC_STEP_REDUCED if reduced else _VEC_STEP, out=buf,
                          consume=True))
    np.add(_ONE, res, out=res)
    np.multiply(np.multiply(x, _HALF, out=z), res, out=res)
    if onednn:
        # oneDNN's fused S + S erf is S (1 + erf) rounded once: +0 where it is zero
        np.add(res, _ZERO, out=res)
    return res


def _gelu_into(reduced: bool):
    """``gelu`` as a pointwise compute ``fn(out, x, approximate="none")``: the result written
    into ``out``; ``reduced`` for float16 and bfloat16 tensors' values in float32."""
    def compute(out, x, approximate="none"):
        res = gelu(x, approximate, reduced=reduced, out=out)
        if res is not out:
            np.copyto(out, res, casting="unsafe")
    compute.__name__ = "gelu_reduced_into" if reduced else "gelu_into"
    return compute


gelu_into, gelu_reduced_into = _gelu_into(False), _gelu_into(True)


def gelu_backward(dy, x, approximate="none", *, reduced=False, out=None):
    """d gelu(x) / dx times ``dy`` (float arrays of one dtype; ``dy`` may broadcast over
    ``x``); an array, ``out`` when it could be written there. ``reduced`` as for ``gelu``."""
    if x.ndim == 0:
        return gelu_backward(dy, x.reshape(1), approximate,
                             reduced=reduced).reshape(np.shape(dy))
    if approximate == "tanh":
        beta = math.sqrt(2.0) * 2.0 / math.sqrt(math.pi) * 0.5
        kappa = 0.044715
        x_sq = x * x
        t = np.tanh(beta * (x + kappa * x_sq * x))
        left = 0.5 * x
        right = 1 + t
        right_derivative = left * (1 - t * t) * beta * (1 + 3 * kappa * x_sq)
        return dy * (0.5 * right + right_derivative)
    z = x * _SQRT1_2
    buf = _buffer(out, z, x, dy) if np.shape(dy) == x.shape else None
    if x.dtype == _F32 and not reduced and _onednn(x):
        q, e = _as_terms(z, buf)
        res = _as_erf(z, e)
        np.multiply(res, _HALF, out=res)
        np.multiply(z, _RSQRT_PI, out=z)
        np.multiply(z, q, out=z)                # T
        np.add(z, _HALF, out=z)
        np.add(z, res, out=res)
    else:
        # cdf + x pdf, cdf = 0.5 (1 + erf(z)), pdf = exp(-x^2 / 2) / sqrt(2 pi), in two
        # temporaries
        res = (_aten_erf(z, *np.broadcast_arrays(dy, x),
                         step=_VEC_STEP_REDUCED if reduced else _VEC_STEP, out=buf)
               if x.dtype == _F32 else erf(z))
        np.add(1, res, out=res)
        np.multiply(0.5, res, out=res)
        pdf = np.multiply(x, x, out=z)
        np.multiply(pdf, -0.5, out=pdf)
        with np.errstate(under="ignore"):
            np.exp(pdf, out=pdf)
        np.multiply(pdf, _BETA, out=pdf)
        np.multiply(x, pdf, out=pdf)
        np.add(res, pdf, out=res)
    if dy.shape != res.shape or dy.dtype != res.dtype:
        return dy * res         # dy broadcasts over x: a result of its own shape
    return np.multiply(dy, res, out=res)
