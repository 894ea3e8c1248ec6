"""``sk.linspace`` and ``sk.logspace`` against torch 2.13, and the fused multiply-adds behind
them.

PyTorch's cpu kernels count the first half of the points up from ``start`` and the rest down
from ``end``, ``linspace`` in the dtype's own arithmetic, ``logspace``'s exponents in double,
and its compiler fuses ``start + step * i`` into one multiply-add: hypothesis draws ends, step
counts and dtypes and compares every bit of the result (``logspace`` in float64: within one
unit in the last place, numpy's ``power`` against ``std::pow``), or the error.
``kernels/_fma`` is checked against exact rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit.kernels._fma import fma32, fma64

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8"]
ENDS = st.one_of(st.floats(-1e4, 1e4, allow_nan=False), st.integers(-300, 300),
                 st.sampled_from([0.0, 0.1, -2.5, 3.3, 1.0]))
STEPS = st.one_of(st.integers(0, 40), st.sampled_from([100, 257, 1000, 4097]))


def _bits(t, torch=None):
    if t.dtype == (torch.bfloat16 if torch else sk.bfloat16):
        t = t.float()
    return t.numpy().tobytes()


def _run(lib, *args, **kwargs):
    try:
        return lib.linspace(*args, **kwargs), None
    except Exception as e:      # noqa: BLE001 - compared with torch's below
        return None, e


@given(start=ENDS, end=ENDS, steps=STEPS, dtype=st.sampled_from(DTYPES))
def test_values_and_errors_match_torch_bit_for_bit(torch, start, end, steps, dtype):
    ours, our_err = _run(sk, start, end, steps, dtype=getattr(sk, dtype))
    theirs, their_err = _run(torch, start, end, steps, dtype=getattr(torch, dtype))
    if their_err is not None or our_err is not None:
        assert type(our_err) is type(their_err), (our_err, their_err)
        assert str(our_err) == str(their_err)
        return
    assert (ours.dtype.name, tuple(ours.shape), ours.stride()) == (
        str(theirs.dtype).removeprefix("torch."), tuple(theirs.shape), theirs.stride())
    assert _bits(ours) == _bits(theirs, torch)


BASES = st.one_of(st.sampled_from([10.0, 2.0, 0.5, 3, -2.0, 1.0, 0.0]),
                  st.floats(0.01, 20.0, allow_nan=False))
EXPONENTS = st.one_of(st.floats(-8, 8, allow_nan=False), st.integers(-6, 6))


def _run_log(lib, *args, **kwargs):
    try:
        return lib.logspace(*args, **kwargs), None
    except Exception as e:      # noqa: BLE001 - compared with torch's below
        return None, e


@given(start=EXPONENTS, end=EXPONENTS, steps=STEPS, base=BASES, dtype=st.sampled_from(DTYPES))
def test_logspace_matches_torch(torch, start, end, steps, base, dtype):
    ours, our_err = _run_log(sk, start, end, steps, base, dtype=getattr(sk, dtype))
    theirs, their_err = _run_log(torch, start, end, steps, base, dtype=getattr(torch, dtype))
    if their_err is not None or our_err is not None:
        assert type(our_err) is type(their_err), (our_err, their_err)
        assert str(our_err) == str(their_err)
        return
    assert (ours.dtype.name, tuple(ours.shape)) == (str(theirs.dtype).removeprefix("torch."),
                                                   tuple(theirs.shape))
    if dtype != "float64":
        assert _bits(ours) == _bits(theirs, torch)
        return
    a, b = ours.numpy(), theirs.numpy()
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    assert (same | (np.abs(a - b) <= np.spacing(np.abs(b)))).all()


def test_defaults_ends_and_flags_as_torch(torch):
    cases = [((0, 10, 5), {}), ((3, 1, 1), {}), ((0, 1, 0), {}),
             ((0, 1, 1), {"dtype": "bool"}), ((0, 1, 4), {"requires_grad": True})]
    for args, kw in cases:
        kw_sk = {k: getattr(sk, v) if k == "dtype" else v for k, v in kw.items()}
        kw_t = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
        ours, theirs = sk.linspace(*args, **kw_sk), torch.linspace(*args, **kw_t)
        assert repr(ours) == repr(theirs).replace("torch.", "sk.")
        assert (ours.requires_grad, ours.is_leaf, ours._version) == (
            theirs.requires_grad, theirs.is_leaf, theirs._version)
    # 0-d tensors as ends do not set the dtype; steps may be a numpy or tensor integer
    ours = sk.linspace(sk.tensor(1.0, dtype=sk.float64), sk.tensor(2), np.int64(3))
    theirs = torch.linspace(torch.tensor(1.0, dtype=torch.float64), torch.tensor(2),
                            torch.tensor(3))
    assert repr(ours) == repr(theirs)
    meta = sk.linspace(0, 1, 3, dtype=sk.bool, device="meta")
    assert (meta.device.type, tuple(meta.shape), meta.dtype) == ("meta", (3,), sk.bool)


@pytest.mark.parametrize("args, kwargs", [
    ((0, 1, -1), {}), ((0, 1, 3), {"dtype": "bool"}), ((1e300, 0, 3), {}),
    ((0, 1, 3), {"dtype": "int64", "requires_grad": True}), ((0, 1, True), {}),
    ((0, 1, 2.5), {}), (("zeros2", 1, 3), {})])
def test_errors_as_torch(torch, args, kwargs):
    def call(lib):
        a = [lib.zeros(2) if x == "zeros2" else x for x in args]
        kw = {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}
        return _run(lib, *a, **kw)[1]
    ours, theirs = call(sk), call(torch)
    assert type(ours) is type(theirs)
    if not isinstance(theirs, TypeError):       # torch's parser lists every signature
        assert str(ours) == str(theirs)


def test_under_a_mode_the_op_is_linspace_default():
    seen = []

    class Log(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Log():
        sk.linspace(0, 1, 5)
    assert seen == ["sk.ops.linspace.default"]


# -- the fused multiply-adds ------------------------------------------------------------------
def _nearest(exact: Fraction, np_type):
    """The ``np_type`` value nearest ``exact``, ties to even."""
    guess = np_type(float(exact))
    cands = [np.nextafter(guess, np_type(-np.inf)), guess, np.nextafter(guess, np_type(np.inf))]
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                     int(np.array(v).view(f"int{8 * v.itemsize}")) & 1))


FINITE64 = st.floats(-1e30, 1e30, allow_nan=False, allow_infinity=False)
FINITE32 = st.floats(-2.0 ** 50, 2.0 ** 50, allow_nan=False, allow_infinity=False, width=32)


@given(a=FINITE64, b=st.one_of(FINITE64, st.integers(0, 2 ** 20).map(float)), c=FINITE64)
def test_fma64_rounds_once(a, b, c):
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    assert fma64(a, np.array([b]), c)[0] == _nearest(exact, np.float64)


@given(a=FINITE32, b=FINITE32, c=FINITE32)
def test_fma32_rounds_once(a, b, c):
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    want = _nearest(exact, np.float32)
    got = fma32(a, np.array([b], np.float32), c)[0]
    assert got == want or (np.isinf(want) and np.isinf(got))
