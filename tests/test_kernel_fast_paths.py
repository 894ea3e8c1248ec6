"""The cpu kernels' fast paths give what the rule and fill they skip give.

``register_rule(op, rule, fill, fast=...)`` lets an op serve its common call without building a
Spec (``mm``, ``bmm``, ``addmm``: one matmul into a fresh output; ``tanh_backward`` and
``sigmoid_backward`` on contiguous operands of one dtype); ``sum`` and ``mean`` over
float32/float64 have such a kernel too (``reductions._fast_reduction``). Each case here runs
the public call, which tries the fast path first, and the op's ``rule`` + ``fill`` by hand on
the same inputs (contiguous, transposed, strided, expanded and offset operands of several
dtypes), and compares values bit for bit, sizes, strides, dtype and version; a call the rule
rejects must raise the rule's error through the public call too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit import ops
from subclass_kit.kernels._common import new_tensor

DTYPES = [sk.float32, sk.float64, sk.float16, sk.bfloat16, sk.int64]


def _operand(draw, sizes, dtype):
    """A tensor of ``sizes`` made contiguous, transposed, strided, expanded or as an offset
    view, so the fast path meets every layout a model hands it."""
    kind = draw(st.sampled_from(["contiguous", "transposed", "strided", "expanded", "offset"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    def make(shape):
        return sk.tensor(rng.integers(-4, 5, size=shape).astype(np.float64) / 4, dtype=dtype)
    if kind == "transposed" and len(sizes) >= 2:
        return make(sizes[:-2] + (sizes[-1], sizes[-2])).transpose(-1, -2)
    if kind == "strided" and sizes:
        return make(sizes[:-1] + (2 * sizes[-1],))[..., ::2]
    if kind == "expanded" and sizes:
        return make((1,) + sizes[1:]).expand(sizes)
    if kind == "offset":
        return make((1 + sizes[0],) + sizes[1:])[1:] if sizes else make(sizes)
    return make(sizes)


def _general(op, *args):
    """The op's rule and fill, called by hand (the path before fast paths existed)."""
    spec = op.rule(*args)
    out = new_tensor(spec)
    op.fill([out._array()], spec, *args)
    return out


def _assert_same(got, want):
    assert type(got) is type(want)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset() == 0
    assert got._version == want._version == 0
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def _run_both(call, op, *args):
    try:
        want = _general(op, *args)
    except Exception as e:  # noqa: BLE001  (the rule's error, compared below)
        with pytest.raises(type(e)) as got:
            call(*args)
        assert str(got.value) == str(e)
        return
    _assert_same(call(*args), want)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4),
       st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_mm_fast_path_matches_rule_and_fill(data, n, k, m, d1, d2):
    k2 = data.draw(st.sampled_from([k, k + 1]))
    a = _operand(data.draw, (n, k), d1)
    b = _operand(data.draw, (k2, m), d2)
    _run_both(sk.mm, ops.mm.default, a, b)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3),
       st.sampled_from(DTYPES))
def test_bmm_fast_path_matches_rule_and_fill(data, b, n, k, m, dtype):
    b2 = data.draw(st.sampled_from([b, b + 1]))
    x = _operand(data.draw, (b, n, k), dtype)
    y = _operand(data.draw, (b2, k, m), dtype)
    _run_both(sk.bmm, ops.bmm.default, x, y)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4),
       st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_addmm_fast_path_matches_rule_and_fill(data, n, k, m, dtype, bias_dtype):
    bias_sizes = data.draw(st.sampled_from([(m,), (n, m), (1, m), (n, 1), (), (m + 1,)]))
    bias = _operand(data.draw, bias_sizes, bias_dtype)
    x = _operand(data.draw, (n, k), dtype)
    w = _operand(data.draw, (k, m), dtype)
    _run_both(sk.addmm, ops.addmm.default, bias, x, w)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.lists(st.integers(0, 4), max_size=4), st.sampled_from(DTYPES),
       st.sampled_from(["sum", "mean"]), st.booleans())
def test_sum_and_mean_fast_paths_match_rule_and_fill(data, sizes, dtype, name, keepdim):
    x = _operand(data.draw, tuple(sizes), dtype)
    ndim = max(len(sizes), 1)
    dims = data.draw(st.one_of(st.none(), st.lists(st.integers(-ndim - 1, ndim), max_size=3)))
    op = ops.sum.dim_IntList if name == "sum" else ops.mean.dim
    _run_both(lambda *a: op(*a), op, x, dims, keepdim)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.lists(st.integers(0, 4), max_size=3), st.sampled_from(DTYPES),
       st.sampled_from(DTYPES), st.sampled_from(["tanh_backward", "sigmoid_backward"]))
def test_pointwise_backward_fast_paths_match_rule_and_fill(data, sizes, d1, d2, name):
    sizes = tuple(sizes)
    other_sizes = data.draw(st.sampled_from([sizes, sizes[1:], (1,) + sizes]))
    grad = _operand(data.draw, sizes, d1)
    y = _operand(data.draw, other_sizes, d2) / 2     # the saved output: |y| <= 1
    op = getattr(ops, name).default
    _run_both(lambda *a: op(*a), op, grad, y)


def test_fast_path_output_never_aliases_an_input():
    """The fast path writes a fresh storage, also when an input is the previous output."""
    w = sk.randn(3, 3)
    b = sk.randn(3)
    x = sk.randn(2, 3)
    y = sk.addmm(b, x, w)
    z = sk.addmm(b, y, w)
    assert z.untyped_storage().data_ptr() not in {
        t.untyped_storage().data_ptr() for t in (w, b, x, y)}
    np.testing.assert_allclose(z.numpy(), (y.numpy() @ w.numpy()) + b.numpy(), rtol=1e-6)


@pytest.mark.parametrize("inference", [False, True])
def test_fast_path_outputs_follow_inference_mode(inference):
    a, b = sk.randn(2, 3), sk.randn(3, 4)
    with sk.inference_mode(inference):
        out = sk.mm(a, b)
    assert out.is_inference() is inference
