"""Fused multiply-add on numpy arrays: ``a * b + c`` rounded once.

ATen's cpu kernels are built for x86-64 with FMA, and the compiler contracts ``a * b + c`` in
them into one fused multiply-add (``linspace``'s ``start + step * i``, ``tanh_backward``'s
``1 - y * y``): one rounding where numpy's ``a * b + c`` rounds twice, a last-bit difference
in about one element in five (``linspace``, float32 and float64). numpy has no fma ufunc, so:

- float32: the product of two float32 values is exact in float64; Knuth's TwoSum gives the
  sum's rounding error, and rounding the float64 sum *to odd* before the float32 rounding
  makes that second rounding the only one (Boldo and Melquiond, "Emulation of FMA and
  correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008: float64
  has more than 24 + 2 bits);
- float64: Dekker's exact product (Veltkamp's split) and TwoSum turn ``a * b + c`` into an
  unevaluated sum ``s + t + e`` with ``t`` and ``e`` below half an ulp of ``s``; ``t + e``
  rounded to odd, then added to ``s``, rounds once. Where the split overflows (``|a|`` or
  ``|b|`` past about 1e300, infinities, NaN) the plain ``a * b + c`` is returned.

Both were checked against exact rational arithmetic on random operands, cancellation
included, and are held to torch's results bit for bit by the tests of their kernels.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SPLIT", "fma32", "fma64"]

SPLIT = 134217729.0         # 2**27 + 1: Veltkamp's splitter for float64


def _two_sum(a, b):
    """``(s, t)`` with ``s = a + b`` rounded and ``s + t == a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _round_to_odd(s, t):
    """``s`` moved one ulp towards ``s + t`` where ``t != 0`` and ``s``'s last bit is even:
    the float64 nearest ``s + t`` with an odd last bit when the sum is inexact, so that a
    later rounding to fewer bits is never a second tie-break."""
    fix = (t != 0) & ((s.view(np.int64) & 1) == 0)
    if not fix.any():
        return s
    # towards the sign of ``t``, not towards ``s + t``: that sum rounds back to ``s``
    return np.where(fix, np.nextafter(s, np.copysign(np.inf, t)), s)


def fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float32; the operands are converted to float32 first
    (arrays or scalars, broadcast)."""
    p = (np.asarray(a, np.float32).astype(np.float64)
         * np.asarray(b, np.float32).astype(np.float64))          # exact
    s, t = _two_sum(p, np.asarray(c, np.float32).astype(np.float64))
    return np.asarray(_round_to_odd(np.asarray(s), np.asarray(t))).astype(np.float32)


def _split(x):
    g = SPLIT * x
    hi = g - (g - x)
    return hi, x - hi


def fma64(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float64 (arrays or scalars, broadcast)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl            # p + e == a * b exactly
    s, t = _two_sum(p, c)
    v, v_err = _two_sum(t, e)
    out = s + _round_to_odd(np.asarray(v), np.asarray(v_err))
    return np.where(np.isfinite(e), out, p + c)
