"""``sk.utils.prims_common`` against ``torch._prims_common``: values and errors (class and
text) of each helper, on hand-picked and generated shapes and dims."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_same_error, to_torch

import subclass_kit as sk
from subclass_kit.utils import prims_common as ours


@pytest.fixture(scope="module")
def theirs():
    return pytest.importorskip("torch._prims_common")


def _same(fn, *args, **kwargs):
    import torch._prims_common as theirs
    try:
        expected = getattr(theirs, fn)(*args, **kwargs)
    except Exception:
        assert_same_error(lambda: getattr(ours, fn)(*args, **kwargs),
                          lambda: getattr(theirs, fn)(*args, **kwargs))
        return
    got = getattr(ours, fn)(*args, **kwargs)
    assert got == expected and type(got) is type(expected)


shapes = st.lists(st.integers(-3, 4), max_size=4)


@given(shapes, st.integers(0, 30), st.sampled_from([list, tuple]))
def test_infer_size(shape, numel, kind):
    pytest.importorskip("torch")
    _same("infer_size", kind(shape), numel)


@pytest.mark.parametrize("shape, numel", [((2, -2), 4), ([0, -1], 0), ([0, -1], 3),
                                          ([-1, -1], 0), ([3], 4), ([3, -1], 4), ([2, -1], 4),
                                          ((), 1), ((), 2), ([-1], 0)])
def test_infer_size_errors(shape, numel, theirs):
    _same("infer_size", shape, numel)


@given(st.integers(-1, 4), st.integers(-6, 6), st.booleans())
def test_canonicalize_dim(rank, idx, wrap_scalar):
    pytest.importorskip("torch")
    _same("canonicalize_dim", rank, idx, wrap_scalar)
    _same("canonicalize_dims", rank, idx, wrap_scalar)
    _same("canonicalize_dims", rank, [idx, 0], wrap_scalar)


@given(st.lists(st.integers(-1, 4), max_size=5), st.booleans())
def test_strides_helpers(shape, row_major):
    pytest.importorskip("torch")
    _same("make_contiguous_strides_for", tuple(shape), row_major)
    _same("make_contiguous_strides_for", list(shape), row_major=row_major)
    _same("make_channels_last_strides_for", tuple(shape))
    _same("validate_shape", tuple(shape))


def test_non_sequence_shapes(theirs):
    _same("make_contiguous_strides_for", 5)
    _same("validate_shape", 5)
    _same("validate_dim_length", -1)
    _same("validate_dim_length", 0)


@pytest.mark.parametrize("make", [
    lambda: sk.zeros(2, 3), lambda: sk.zeros(2, 3).t(), lambda: sk.zeros(1, 3).t(),
    lambda: sk.zeros(4, 6)[:, ::2], lambda: sk.zeros(0, 3).t(), lambda: sk.zeros(3, 1, 2)[:, :, :1],
    lambda: sk.zeros(2, 1).expand(2, 5), lambda: sk.zeros(()),
])
def test_is_contiguous(make, theirs):
    t = make()
    assert ours.is_contiguous(t) == theirs.is_contiguous(to_torch(t)) == t.is_contiguous()


def test_check(theirs):
    for b, exc in [(True, RuntimeError), (False, RuntimeError), (False, ValueError)]:
        with warnings.catch_warnings(record=True) as w_ours:
            warnings.simplefilter("always")
            try:
                ours.check(b, lambda: "boom", exc)
                got = None
            except Exception as e:
                got = (type(e), str(e))
        with warnings.catch_warnings(record=True) as w_theirs:
            warnings.simplefilter("always")
            try:
                theirs.check(b, lambda: "boom", exc)
                expected = None
            except Exception as e:
                expected = (type(e), str(e))
        assert got == expected
        assert [w.category for w in w_ours] == [w.category for w in w_theirs] == [FutureWarning]
