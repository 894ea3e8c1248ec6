"""The matrix products' backward follows its operands' layouts, as PyTorch's
``mm_mat1_backward`` / ``mm_mat2_backward`` do: a column-major operand (a transposed matrix,
such as the weight ``F.linear`` passes to ``addmm``) gets a column-major gradient, computed as
the transposed product. That decides the op stream modes see, the gradient's strides, and
whether ``AccumulateGrad`` can take the gradient as it is (a Linear weight's) or must copy it.
"""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for the backward's layouts")
pytest.importorskip("hypothesis", reason="hypothesis draws the shapes and layouts")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import SkOpLog, torch_op_log  # noqa: E402


def _leaf(m, values, column_major):
    """A leaf holding ``values``; column-major ones are the transpose of a contiguous leaf."""
    if column_major:
        base = (sk.tensor(values.T.copy()) if m is sk else torch.tensor(values.T.copy()))
        base.requires_grad_()
        return base, base.t()
    t = sk.tensor(values) if m is sk else torch.tensor(values)
    t.requires_grad_()
    return t, t


def _run(m, op, n, k, p, col1, col2, with_bias):
    rng = np.random.default_rng(n * 100 + k * 10 + p)
    leaf1, mat1 = _leaf(m, rng.standard_normal((n, k)), col1)
    leaf2, mat2 = _leaf(m, rng.standard_normal((k, p)), col2)
    leaves = [leaf1, leaf2]
    if op == "addmm":
        bias = (sk.tensor if m is sk else torch.tensor)(rng.standard_normal(p if with_bias else
                                                                           (n, p)))
        bias.requires_grad_()
        leaves.append(bias)
        y = m.addmm(bias, mat1, mat2)
    else:
        y = m.mm(mat1, mat2)
    g = (sk.tensor if m is sk else torch.tensor)(rng.standard_normal((n, p)))
    log = SkOpLog() if m is sk else torch_op_log()
    with log:
        y.backward(g)
    return log.ops, [(leaf.grad.detach().numpy(), leaf.grad.stride()) for leaf in leaves]


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(["mm", "addmm"]), n=st.integers(1, 5), k=st.integers(1, 5),
       p=st.integers(1, 5), col1=st.booleans(), col2=st.booleans(), with_bias=st.booleans())
def test_gradients_streams_and_strides_are_torchs(op, n, k, p, col1, col2, with_bias):
    ours, theirs = (_run(m, op, n, k, p, col1, col2, with_bias) for m in (sk, torch))
    assert ours[0] == theirs[0]
    for (g, stride), (tg, tstride) in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(g, tg, rtol=1e-12, atol=1e-12)
        assert stride == tstride


def test_linear_weight_gradient_is_taken_not_copied():
    """``F.linear``'s weight reaches ``addmm`` transposed: its gradient is made column-major,
    so the leaf takes it with a ``detach`` (no ``empty_strided`` + ``copy_``), as in torch."""
    streams = []
    for m, log in ((sk, SkOpLog), (torch, torch_op_log)):
        F = sk.nn.functional if m is sk else torch.nn.functional
        rng = np.random.default_rng(0)
        x = (sk.tensor if m is sk else torch.tensor)(rng.standard_normal((4, 3)))
        w = (sk.tensor if m is sk else torch.tensor)(rng.standard_normal((2, 3)))
        b = (sk.tensor if m is sk else torch.tensor)(rng.standard_normal(2))
        w.requires_grad_()
        b.requires_grad_()
        y = F.linear(x, w, b).sum()
        with log() as ops:
            y.backward()
        streams.append((ops.ops, w.grad.stride(), w.grad.detach().numpy()))
    assert streams[0][0] == streams[1][0]
    assert "copy_" not in streams[0][0]
    assert streams[0][1] == streams[1][1]
    np.testing.assert_allclose(streams[0][2], streams[1][2], rtol=1e-12)


@pytest.mark.parametrize("shape,stride,program", [
    ((2, 3), (3, 1), "mul"), ((2, 3), (1, 2), "mul"), ((2, 2), (4, 1), "mul"),
    ((2, 2), (4, 1), "pass"), ((1, 3), (7, 1), "mul"), ((3, 1), (1, 5), "pass"),
    ((2, 3), (1, 2), "pass"), ((2, 2, 2), (1, 2, 4), "mul")])
def test_leaf_layout_contract_like_torch(shape, stride, program):
    """AccumulateGrad takes a gradient that obeys PyTorch's layout contract (a dense leaf's
    strides, else contiguous) and copies any other one as ``clone_obey_contract`` does."""
    seen = []
    for m, log in ((sk, SkOpLog), (torch, torch_op_log)):
        leaf = m.empty_strided(shape, stride, dtype=m.float64)
        with m.no_grad():
            leaf.fill_(1.5)
        leaf.requires_grad_()
        y = leaf * 2 if program == "mul" else leaf
        g = m.ones(*shape, dtype=m.float64).mul(3)
        with log() as ops:
            y.backward(g)
        seen.append((ops.ops, leaf.grad.stride(), leaf.grad.detach().numpy()))
    assert seen[0][0] == seen[1][0]
    assert seen[0][1] == seen[1][1]
    np.testing.assert_array_equal(seen[0][2], seen[1][2])
