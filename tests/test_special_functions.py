"""The special functions numpy lacks (``kernels/_pointwise_fns.py``: erf, erfc), checked
against Python's ``math.erf`` / ``math.erfc`` (correctly rounded to within an ulp or so) over
the whole float64 range; torch comparisons of the ops built on them live in the oracle sweeps."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from subclass_kit.kernels import _pointwise_fns as fns

_FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _ulps(ours: float, ref: float) -> float:
    if ours == ref:
        return 0.0
    return abs(ours - ref) / np.spacing(abs(ref)) if ref != 0 else math.inf


@settings(max_examples=2000)
@given(st.lists(st.one_of(_FINITE, st.floats(-8, 8)), min_size=1, max_size=50))
def test_erf_and_erfc_within_8_ulp_of_math(xs):
    erf, erfc = fns.erf(np.array(xs)), fns.erfc(np.array(xs))
    for x, e, c in zip(xs, erf, erfc):
        assert _ulps(e, math.erf(x)) <= 8, (x, e, math.erf(x))
        assert _ulps(c, math.erfc(x)) <= 8, (x, c, math.erfc(x))


def test_special_values_and_dtypes():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    e = fns.erf(x)
    np.testing.assert_array_equal(e[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(e[1]) and np.isnan(e[4])
    c = fns.erfc(x)
    np.testing.assert_array_equal(c[:4], [1.0, 1.0, 0.0, 2.0])
    assert np.isnan(c[4])
    # float32 in, float32 out, rounded once from the float64 value
    x32 = np.linspace(-5, 5, 1001, dtype=np.float32)
    got = fns.erf(x32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, fns.erf(x32.astype(np.float64)).astype(np.float32))


def test_large_strided_arrays_match_math_elementwise():
    # Arrays longer than one evaluation block (``fns._BLOCK``), not contiguous, of several
    # dims, with every range (small, middle, far, saturated, nan, inf) mixed in each block:
    # each element is still its own math.erf / math.erfc.
    rng = np.random.default_rng(7)
    n = 2 * fns._BLOCK + 37
    x = rng.standard_normal(2 * n) * rng.choice([0.3, 2.0, 8.0, 40.0], 2 * n)
    x[rng.integers(0, 2 * n, 20)] = np.nan
    x[rng.integers(0, 2 * n, 20)] = np.inf
    x[rng.integers(0, 2 * n, 20)] = -np.inf
    grid = x.reshape(2, n)[:, ::2]                # strided view
    for fn, ref in ((fns.erf, math.erf), (fns.erfc, math.erfc)):
        got = fn(grid)
        assert got.shape == grid.shape and got.dtype == np.float64
        for v, g in zip(grid.ravel().tolist(), got.ravel().tolist()):
            if math.isnan(v):
                assert math.isnan(g)
            else:
                assert _ulps(g, ref(v)) <= 8, (fn.__name__, v, g, ref(v))
    x32 = grid.astype(np.float32)
    got32 = fns.erf(x32)
    assert got32.dtype == np.float32 and got32.shape == x32.shape
    np.testing.assert_array_equal(got32, fns.erf(x32.astype(np.float64)).astype(np.float32))
    assert fns.erf(np.zeros((3, 0))).shape == (3, 0)
    assert fns.erf(np.float64(0.5)).shape == ()
