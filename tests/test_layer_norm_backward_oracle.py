"""``native_layer_norm_backward`` (kernels/nn.py) and its derivative against torch.

The op: values, sizes, strides and dtypes of the three gradients for float32/float64/float16/
bfloat16 inputs, one to three normalized dims, weight and bias present or not, every
``output_mask``, empty inputs; a masked-out gradient is ``None`` as in torch, under the modes
too. Its derivative (``NativeLayerNormBackwardBackward0``): layer norm's gradcheck and
gradgradcheck in float64, Hessian-vector products as torch's.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import assert_same_error

import subclass_kit as sk
from subclass_kit import modes

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")

sk.autograd.install()
A = torch.ops.aten
MASKS = [list(m) for m in itertools.product([False, True], repeat=3)]
DTYPES = ["float32", "float64", "float16", "bfloat16"]
# relative tolerance by input dtype (float16 computes in float32 and rounds once, as torch)
RTOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1e-2}


def _sk(t):
    if t is None:
        return None
    if t.dtype == torch.bfloat16:
        return sk.tensor(t.float().numpy()).to(sk.bfloat16)
    return sk.tensor(t.numpy())


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return t.to(sk.float32).numpy() if t.dtype == sk.bfloat16 else t.numpy()


def _inputs(shape, k, dtype, weight, bias, seed=0):
    g = torch.Generator().manual_seed(seed)
    dt = getattr(torch, dtype)
    norm = list(shape[len(shape) - k:])
    x = torch.randn(shape, generator=g).to(dt)
    dy = torch.randn(shape, generator=g).to(dt)
    w = torch.randn(norm, generator=g).to(dt) if weight else None
    b = torch.randn(norm, generator=g).to(dt) if bias else None
    _, mean, rstd = A.native_layer_norm(x, norm, w, b, 1e-5)
    return dy, x, norm, mean, rstd, w, b


def _both(args, mask):
    theirs = A.native_layer_norm_backward(*args, mask)
    ours = sk.ops.native_layer_norm_backward(*[_sk(a) if isinstance(a, torch.Tensor) else a
                                               for a in args], mask)
    return ours, theirs


def _compare(ours, theirs, rtol):
    for i, (s, t) in enumerate(zip(ours, theirs)):
        assert (s is None) == (t is None), f"output {i}: {s!r} vs torch {t!r}"
        if t is None:
            continue
        assert tuple(s.shape) == tuple(t.shape) and s.stride() == t.stride()
        assert s.dtype.name == str(t.dtype).split(".")[-1]
        want = _np(t)
        np.testing.assert_allclose(_np(s), want, rtol=rtol,
                                   atol=rtol * max(1.0, float(np.abs(want).max(initial=0))))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k", [((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), 3),
                                     ((3, 7, 64), 1), ((0, 4), 1), ((3, 0), 1)])
def test_values_match_torch(dtype, shape, k):
    for weight, bias in itertools.product([False, True], repeat=2):
        args = _inputs(shape, k, dtype, weight, bias)
        for mask in MASKS:
            if (mask[1] and not weight) or (mask[2] and not bias):
                continue            # torch raises: test_asking_for_a_missing_parameters_grad
            _compare(*_both(args, mask), RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision_input_with_float32_parameters(dtype):
    """The mixed-dtype path: a float16/bfloat16 input with float32 weight, bias and stats."""
    dt = getattr(torch, dtype)
    x, dy = torch.randn(4, 8).to(dt), torch.randn(4, 8).to(dt)
    w, b = torch.randn(8), torch.randn(8)
    _, mean, rstd = A.native_layer_norm(x, [8], w, b, 1e-5)
    assert mean.dtype == torch.float32
    _compare(*_both((dy, x, [8], mean, rstd, w, b), [True, True, True]), RTOL[dtype])


def test_bfloat16_input_gradient_is_bitwise():
    """bfloat16: the input gradient rounds once from float32, as torch's; the weight and bias
    gradients are within a few bfloat16 ulps (torch sums them in per-thread bfloat16 buffers,
    docs/differences.md)."""
    args = _inputs((5, 3, 16), 1, "bfloat16", True, True, seed=3)
    ours, theirs = _both(args, [True, True, True])
    assert np.array_equal(_np(ours[0]), _np(theirs[0]))


def test_masked_out_gradients_are_none():
    args = _inputs((2, 4), 1, "float32", True, True)
    for mask in MASKS:
        ours, theirs = _both(args, mask)
        assert [o is None for o in ours] == [t is None for t in theirs] == [not m for m in mask]


@pytest.mark.parametrize("weight,bias,mask", [(False, False, [True, True, False]),
                                              (True, False, [True, True, True]),
                                              (False, True, [False, True, True])])
def test_asking_for_a_missing_parameters_grad(weight, bias, mask):
    args = _inputs((2, 4), 1, "float32", weight, bias)
    assert_same_error(
        lambda: sk.ops.native_layer_norm_backward(*[_sk(a) if isinstance(a, torch.Tensor)
                                                    else a for a in args], mask),
        lambda: A.native_layer_norm_backward(*args, mask))


@pytest.mark.parametrize("bad", ["grad_out", "mean"])
def test_mismatched_sizes_raise(bad):
    """torch reads grad_out / mean as buffers of the input's row count without a check; ours
    raises (docs/differences.md)."""
    dy, x, norm, mean, rstd, w, b = [_sk(a) if isinstance(a, torch.Tensor) else a
                                     for a in _inputs((2, 3, 4), 1, "float32", True, True)]
    if bad == "grad_out":
        dy = dy[:1]
    else:
        mean = mean[:1]
    before = x.numpy().copy()
    with pytest.raises(RuntimeError, match=bad):
        sk.ops.native_layer_norm_backward(dy, x, norm, mean, rstd, w, b, [True, True, True])
    assert np.array_equal(x.numpy(), before)


def test_modes_handle_a_masked_out_output():
    dy, x, norm, mean, rstd, w, b = [_sk(a) if isinstance(a, torch.Tensor) else a
                                     for a in _inputs((3, 4), 1, "float32", True, False)]

    def f(dy, x, mean, rstd, w):
        return sk.ops.native_layer_norm_backward(dy, x, norm, mean, rstd, w, None,
                                                 [True, True, False])
    want = f(dy, x, mean, rstd, w)
    with modes.LoggingMode() as log:
        f(dy, x, mean, rstd, w)
    assert log.log[0].outputs[2] is None
    with modes.DebugAssertMode(check_data=True):
        got = f(dy, x, mean, rstd, w)
    assert got[2] is None and np.array_equal(got[0].numpy(), want[0].numpy())
    got = modes.functionalize(f)(dy, x, mean, rstd, w)
    assert got[2] is None and np.array_equal(got[1].numpy(), want[1].numpy())
    with modes.MetaMode():
        got = f(dy, x, mean, rstd, w)
    assert got[2] is None and got[0].is_meta and tuple(got[1].shape) == (4,)
    graph = modes.make_graph(f)(dy, x, mean, rstd, w)
    assert graph(dy, x, mean, rstd, w)[2] is None


# -- derivative --------------------------------------------------------------------------------
def _layer_norm_leaves(lib, shape, k, seed=0):
    rng = np.random.default_rng(seed)
    norm = shape[len(shape) - k:]
    vals = [rng.standard_normal(shape), rng.standard_normal(norm), rng.standard_normal(norm)]
    return [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in vals]


@pytest.mark.parametrize("shape,k", [((3, 4), 1), ((2, 2, 3), 2)])
def test_layer_norm_gradcheck_and_gradgradcheck(shape, k):
    x, w, b = _layer_norm_leaves(sk, shape, k)
    norm = list(shape[len(shape) - k:])

    def f(x, w, b):
        return sk.nn.functional.layer_norm(x, norm, w, b)
    assert sk.autograd.gradcheck(f, (x, w, b))
    assert sk.autograd.gradgradcheck(f, (x, w, b))
    assert sk.autograd.gradgradcheck(lambda x: sk.nn.functional.layer_norm(x, norm), (x,))


def test_hessian_vector_products_match_torch():
    """d/d(x, w, b) of <grad of sum(layer_norm(x) * c), v>: the double backward node and its
    values as torch's."""
    def hvp(lib):
        x, w, b = _layer_norm_leaves(lib, (3, 5), 1, seed=4)
        rng = np.random.default_rng(9)
        c, v = (lib.tensor(rng.standard_normal((3, 5)), dtype=lib.float64) for _ in range(2))
        y = lib.nn.functional.layer_norm(x, (5,), w, b)
        gx, gw, gb = lib.autograd.grad((y * c).sum(), (x, w, b), create_graph=True)
        node = gx.grad_fn.name()
        second = lib.autograd.grad((gx * v).sum() + gw.sum() * 0.5 + (gb * gb).sum(),
                                   (x, w, b), allow_unused=True)
        return node, [None if s is None else s.detach().numpy() for s in second]
    (n1, ours), (n2, theirs) = hvp(sk), hvp(torch)
    assert n1 == n2 == "NativeLayerNormBackwardBackward0"
    for o, t in zip(ours, theirs):
        assert (o is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


def test_bias_only_double_backward_gives_grad_outs_gradient():
    """Without weight, the gradient reaching dbias still flows to grad_out (dbias is the sum
    of grad_out over the rows: its derivative is that gradient broadcast). torch 2.13's
    layer_norm_double_backward drops it (zeros; docs/differences.md): checked against the
    math instead."""
    x = sk.tensor(np.random.default_rng(1).standard_normal((3, 4)))
    _, mean, rstd = sk.ops.native_layer_norm(x, [4], None, None, 1e-5)
    dy = sk.zeros(3, 4, dtype=sk.float64, requires_grad=True)
    b = sk.ones(4, dtype=sk.float64)
    _, _, db = sk.ops.native_layer_norm_backward(dy, x, [4], mean, rstd, None, b,
                                                 [False, False, True])
    ggb = sk.tensor([1.0, -2.0, 0.5, 3.0], dtype=sk.float64)
    (gdy,) = sk.autograd.grad((db * ggb).sum(), (dy,))
    np.testing.assert_array_equal(gdy.numpy(), np.broadcast_to(ggb.numpy(), (3, 4)))
