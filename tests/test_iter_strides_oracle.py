"""Output strides of elementwise ops over permuted layouts with size-1 dims, against PyTorch.

TensorIterator gives a fresh output the inputs' stride order (``compute_strides`` +
``reorder_dimensions`` + ``allocate_or_resize_outputs``), unless every operand has the same
shape and a shared layout (``fast_set_up``). A Python number is an operand too (a wrapped 0-d
tensor), so ``x + 1`` over ``zeros(1, 2, 1).permute(1, 0, 2)`` keeps the order of the size-1
dims, strides ``(1, 2, 1)``, where ``x + x`` is plainly contiguous. Hypothesis draws the shapes
(sizes 0 to 3, size 1 often), the permutations and a step slice; each op's output strides must
equal torch's. ``sk.tensor(ndarray)``'s strides are checked here too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")

import subclass_kit as sk  # noqa: E402


@st.composite
def layouts(draw, max_dims=4):
    """(shape, permutation, step-sliced dim or None, dtype name) of an input tensor."""
    ndim = draw(st.integers(1, max_dims))
    shape = tuple(draw(st.lists(st.sampled_from([1, 1, 2, 3, 0]), min_size=ndim,
                                max_size=ndim)))
    perm = tuple(draw(st.permutations(range(ndim))))
    step = draw(st.one_of(st.none(), st.integers(0, ndim - 1)))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    return shape, perm, step, dtype


def _make(m, spec):
    shape, perm, step, dtype = spec
    if step is not None:
        shape = tuple(s * 2 if i == step else s for i, s in enumerate(shape))
    t = m.zeros(shape, dtype=getattr(m, dtype))
    if step is not None:
        t = t[(slice(None),) * step + (slice(None, None, 2),)]
    return t.permute(perm)


UNARY = {
    "neg": lambda m, x: x.neg(),
    "exp": lambda m, x: x.exp(),
    "add_number": lambda m, x: x + 1,
    "mul_float": lambda m, x: x.mul(1),
    "radd": lambda m, x: 2.5 - x,
    "gt_number": lambda m, x: x > 0,
    "div_floor": lambda m, x: x.div(2, rounding_mode="floor"),
    "pow_number": lambda m, x: x ** 2,
    "clamp": lambda m, x: x.clamp(0, 1),
    "add_self": lambda m, x: x + x,
    "add_0d": lambda m, x: x + m.tensor(1.0, dtype=x.dtype),
    "where_number": lambda m, x: m.where(x > 0, x, 0.0),
    "to_float16": lambda m, x: x.to(m.float16),
    "clone": lambda m, x: x.clone(),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=60, deadline=None)
@given(spec=layouts())
def test_unary_output_strides_match_torch(name, spec):
    fn = UNARY[name]
    theirs = fn(torch, _make(torch, spec))
    ours = fn(sk, _make(sk, spec))
    assert ours.shape == theirs.shape
    assert ours.stride() == theirs.stride(), (spec, ours.stride(), theirs.stride())


BINARY = {
    "add": lambda m, x, y: x + y,
    "mul": lambda m, x, y: x.mul(y),
    "eq": lambda m, x, y: x == y,
    "maximum": lambda m, x, y: m.maximum(x, y),
    "where": lambda m, x, y: m.where(x > 0, x, y),
}


@st.composite
def pairs(draw):
    """Two layouts over one broadcast shape: the second may be permuted differently and may
    have size-1 (broadcast) dims or fewer dims."""
    shape, perm, step, dtype = draw(layouts())
    perm2 = tuple(draw(st.permutations(range(len(shape)))))
    ones = draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    out_shape = tuple(shape[p] for p in perm)
    shape2 = tuple(1 if one else s for s, one in zip(out_shape, ones))
    drop = draw(st.integers(0, len(shape2) - 1))
    return (shape, perm, step, dtype), (shape2[drop:], perm2, dtype)


def _make_second(m, spec):
    shape, perm, dtype = spec
    order = [p for p in perm if p < len(shape)]     # memory order of the dims, outermost first
    stored = m.zeros(tuple(shape[d] for d in order), dtype=getattr(m, dtype))
    return stored.permute([order.index(d) for d in range(len(shape))])


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=60, deadline=None)
@given(spec=pairs())
def test_binary_output_strides_match_torch(name, spec):
    first, second = spec
    fn = BINARY[name]
    theirs = fn(torch, _make(torch, first), _make_second(torch, second))
    ours = fn(sk, _make(sk, first), _make_second(sk, second))
    assert ours.shape == theirs.shape
    assert ours.stride() == theirs.stride(), (spec, ours.stride(), theirs.stride())


def test_the_issue_examples():
    for m in (torch, sk):
        x = m.zeros(1, 2, 1).permute(-2, 0, -1)
        assert x.stride() == (1, 2, 1)
        assert (x + 1).stride() == (1, 2, 1)
        assert (x + x).stride() == (1, 1, 1)
        y = m.zeros(1, 4, 1, 3, dtype=m.float64).movedim((3, 1), (3, 2))
        assert y.mul(1).stride() == (12, 3, 3, 1)
        assert y.neg().stride() == (12, 12, 3, 1)


@pytest.mark.parametrize("make", [
    lambda: np.zeros((3, 0)), lambda: np.zeros((0, 3), np.float32), lambda: np.zeros((2, 0, 3)),
    lambda: np.zeros((2, 3)).T, lambda: np.asfortranarray(np.zeros((2, 3))),
    lambda: np.zeros((4, 6))[:, ::2], lambda: np.zeros(0, np.int64),
    lambda: np.broadcast_to(np.zeros(3), (2, 3)),
], ids=["3x0", "0x3", "2x0x3", "transposed", "fortran", "sliced", "empty_int", "broadcast"])
@pytest.mark.parametrize("kwargs", [{}, {"dtype": "float16"}, {"device": "meta"}])
def test_tensor_of_ndarray_keeps_numpy_strides(make, kwargs):
    def run(m):
        kw = {k: getattr(m, v) if k == "dtype" else v for k, v in kwargs.items()}
        t = m.tensor(make(), **kw)
        return t.shape, t.stride(), t.storage_offset(), t.dtype.itemsize
    theirs, ours = run(torch), run(sk)
    assert ours[0] == theirs[0] and ours[1:] == theirs[1:]


def test_tensor_of_ndarray_with_negative_strides_raises_as_torch():
    a = np.arange(6.0).reshape(2, 3)[:, ::-1]
    with pytest.raises(ValueError) as theirs:
        torch.tensor(a)
    with pytest.raises(ValueError) as ours:
        sk.tensor(a)
    assert str(ours.value) == str(theirs.value)
