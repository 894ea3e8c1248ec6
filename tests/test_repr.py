"""``repr`` of tensors against torch's (``torch.`` read as ``sk.``): float formatting (fixed,
integral, scientific), ints, bools, nan/inf, nesting and line wrapping, summarization of large
tensors, empty and 0-d tensors, dtype / requires_grad / meta suffixes, print options."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle of these tests")
pytest.importorskip("hypothesis")
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk

NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")


def same_repr(array: np.ndarray):
    ours = repr(sk.from_numpy(array.copy()))
    theirs = repr(torch.from_numpy(array.copy())).replace("torch.", "sk.")
    assert ours == theirs, f"\n{ours}\n!=\n{theirs}"


CASES = [[0.5, 1.0, 1.5], [1, 2], [True, False], [1e10, 1.0], [1e-5, 1.0], [0.0, 0.0],
         [math.nan, 1.0], [math.inf, -1.5], [[1.5, 2.0], [3.0, 4.25]], [[1, 2], [3, 4]],
         [[[1.0, 2], [3, 4]], [[5, 6], [7, 8]]], 5.0, 0.5, -3, True, [1e-4, 0.5],
         [123456789.0, 1.0], [100.0, 0.05], [-0.0, 1.0], list(range(30)),
         [x * 0.1 for x in range(30)], [1.0, 2.0, -3.5], [[0.001, 1000.5]], [-math.inf, math.nan],
         [1e300, -1e-300], [255, 0], [-128, 127], [2.0 ** 40, 1.0], [0.1234567, 12345.678]]


@pytest.mark.parametrize("values", CASES, ids=repr)
@pytest.mark.parametrize("dtype", NAMES)
def test_small_tensors(values, dtype):
    with np.errstate(all="ignore"):
        try:
            array = np.array(values).astype(dtype)
        except (OverflowError, ValueError):
            pytest.skip("value does not fit the dtype")
    same_repr(array)


@pytest.mark.parametrize("shape", [(2000,), (40, 40), (5, 300), (3, 4, 200), (1001,), (1000,),
                                   (2, 3, 7, 50)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_summarized(shape, dtype):
    rng = np.random.default_rng(0)
    same_repr((rng.standard_normal(shape) * 100).astype(dtype))


def test_empty_meta_grad_and_views():
    pairs = [
        (sk.empty(0), torch.empty(0)),
        (sk.empty(0, 3), torch.empty(0, 3)),
        (sk.empty(0, dtype=sk.int64), torch.empty(0, dtype=torch.int64)),
        (sk.empty(2, 0, dtype=sk.bool), torch.empty(2, 0, dtype=torch.bool)),
        (sk.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta")),
        (sk.empty((), device="meta", dtype=sk.int64),
         torch.empty((), device="meta", dtype=torch.int64)),
        (sk.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)),
        (sk.ones(2, dtype=sk.float64, requires_grad=True),
         torch.ones(2, dtype=torch.float64, requires_grad=True)),
        (sk.arange(10.).reshape(2, 5).t(), torch.arange(10.).reshape(2, 5).t()),
        (sk.arange(6)[::2], torch.arange(6)[::2]),
        (sk.ones(3).expand(2, 3), torch.ones(3).expand(2, 3)),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs).replace("torch.", "sk."), (repr(ours), repr(theirs))


def test_long_rows_wrap_with_suffix():
    for n in (12, 25, 60):
        same_repr(np.linspace(-1000, 1000, n).astype(np.float32))
        same_repr(np.arange(n, dtype=np.int32) * 1000003)


def test_print_options():
    x = np.array([1.123456, 2.5, 1e-3], dtype=np.float32)
    try:
        sk.set_printoptions(precision=2)
        torch.set_printoptions(precision=2)
        same_repr(x)
        sk.set_printoptions(sci_mode=False)
        torch.set_printoptions(sci_mode=False)
        same_repr(np.array([1e-5, 1.0], dtype=np.float32))
    finally:
        sk.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
    same_repr(x)


def test_repr_dispatches_no_op():
    seen = []

    class Spy(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = sk.arange(2000.).reshape(40, 50)
    with Spy():
        repr(x)
    assert seen == []


finite = st.floats(allow_nan=False, allow_infinity=False, width=32)
elements = st.one_of(finite, st.sampled_from([0.0, math.nan, math.inf, -math.inf, 1e-7, 1e9]),
                     st.integers(-10 ** 6, 10 ** 6).map(float))


@settings(max_examples=150)
@given(values=st.lists(elements, min_size=1, max_size=24), dtype=st.sampled_from(NAMES),
       rows=st.sampled_from([1, 2, 3]))
def test_repr_hypothesis(values, dtype, rows):
    n = len(values) - len(values) % rows or rows
    values = (values * rows)[:n]
    with np.errstate(all="ignore"):
        array = np.array(values, dtype=np.float64)
        if dtype != "bool" and not dtype.startswith("float"):
            info = np.iinfo(dtype)
            array = np.nan_to_num(array, nan=0.0, posinf=info.max, neginf=info.min)
            array = np.clip(array, info.min, info.max)
        array = array.astype(dtype).reshape(rows, -1)
    same_repr(array)
