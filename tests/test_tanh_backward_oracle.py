"""``tanh_backward`` bit for bit against torch, and tanh's gradient through it.

ATen's ``tanh_backward`` kernel computes ``grad * (1 - y*y)`` with ``1 - y*y`` as one fused
multiply-add (one rounding), in its vectorised loop and its scalar tail alike; float16 and
bfloat16 compute in float32. Composing it of three ops (``1 - y*y`` rounded twice) disagreed
with torch in the last bit for about a third of the elements. ``TanhBackward0`` calls the op, as
PyTorch's does, so a mode sees one op where the composition showed three.
"""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for tanh_backward's arithmetic")
pytest.importorskip("hypothesis", reason="hypothesis draws the values")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import SkOpLog, to_sk, to_torch, torch_op_log  # noqa: E402

SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, 1e160, -1e300, 5e-324, 0.5,
           1 - 2**-53, 2**-30, 3.4e38, -1e-45]


def _bits_equal(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    same = (ours == theirs) & (np.signbit(ours) == np.signbit(theirs))
    same |= np.isnan(ours) & np.isnan(theirs)
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{bad.size} of {ours.size} differ, e.g. {ours.flat[bad[:3]]} vs " \
                          f"{theirs.flat[bad[:3]]}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "17 elements", "0-d"])
def test_tanh_backward_bit_for_bit(dtype, layout):
    rng = np.random.default_rng(0)
    y = np.tanh(rng.standard_normal((64, 40)) * 2) * rng.choice([1.0, 1.0, 3.0, 1e-5], (64, 40))
    y.flat[:len(SPECIAL)] = SPECIAL
    g = rng.standard_normal((64, 40))
    view = {"contiguous": lambda a: a, "transposed": lambda a: a.t(),
            "strided": lambda a: a[:, ::3], "17 elements": lambda a: a[1, :17],
            "0-d": lambda a: a[2, 5]}[layout]
    with np.errstate(over="ignore"):
        ty = torch.from_numpy(y.astype(dtype))
        tg = torch.from_numpy(g.astype(dtype))
    want = torch.ops.aten.tanh_backward(view(tg), view(ty))
    got = sk.ops.tanh_backward.default(view(to_sk(tg)), view(to_sk(ty)))
    assert tuple(got.stride()) == tuple(want.stride())
    _bits_equal(got.numpy(), want.numpy())


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["float16", "bfloat16", "float32", "float64"]),
       st.lists(st.floats(-4, 4, width=32), min_size=1, max_size=40), st.integers(0, 2**16))
def test_tanh_gradient_is_torchs_kernel_on_the_saved_result(dtype, values, seed):
    """TanhBackward0 -> tanh_backward(grad, result), in every floating dtype. (The forward
    ``tanh`` itself is numpy's, within an ulp of torch's: the kernel gets our result.)"""
    grads = np.random.default_rng(seed).standard_normal(len(values)).astype(np.float32)
    x = sk.tensor(values, dtype=getattr(sk, dtype), requires_grad=True)
    y = x.tanh()
    g = sk.tensor(grads).to(getattr(sk, dtype))
    y.backward(g)
    want = torch.ops.aten.tanh_backward(to_torch(g), to_torch(y.detach()))
    _bits_equal(x.grad.float().numpy(), want.float().numpy())


def test_backward_of_tanh_runs_tanh_backward_like_torch():
    """The forward and backward op streams are torch's, the ``detach`` of the saved result
    included: at save, as the node unpacks it, and AccumulateGrad's."""
    x = sk.randn(3, 4, requires_grad=True)
    tx = to_torch(x.detach(), requires_grad=True)
    with SkOpLog() as ours_forward:
        y = x.tanh().sum()
    with torch_op_log() as theirs_forward:
        ty = tx.tanh().sum()
    assert ours_forward.ops == theirs_forward.ops == ["tanh", "detach", "sum"]
    with SkOpLog() as ours:
        y.backward()
    with torch_op_log() as theirs:
        ty.backward()
    assert ours.ops == theirs.ops == ["ones_like", "expand", "detach", "tanh_backward", "detach"]


def test_double_backward_through_tanh_backward_matches_torch():
    """``TanhBackwardBackward0``: Hessian-vector products of tanh against torch's."""
    values = [[0.3, -1.2, 2.0], [0.0, 0.7, -0.1]]
    outs = []
    for m in (sk, torch):
        x = m.tensor(values, dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad(x.tanh().pow(2).sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == "TanhBackwardBackward0" or m is torch
        (h,) = m.autograd.grad((g * g).sum(), x)
        outs.append((g.detach().numpy(), h.numpy()))
    for ours, theirs in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=0)


def test_tanh_backward_errors_like_torch():
    for d in ("int64", "bool"):
        a = sk.ones(3, dtype=getattr(sk, d))
        with pytest.raises(NotImplementedError, match=f'"tanh_backward_cpu" not implemented'):
            sk.ops.tanh_backward.default(a, a)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        sk.ops.tanh_backward.default(sk.ones(2, 3), sk.ones(4))
