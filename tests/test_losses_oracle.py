"""``sk.nn.functional`` losses against ``torch.nn.functional``: values (float64, tight), the op
names a dispatch mode sees (PyTorch's composites and primitives), warnings and errors (class and
text), and meta shapes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for the losses")
pytest.importorskip("hypothesis", reason="hypothesis draws the loss options")
import torch.nn.functional as TF  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import (SkOpLog, assert_same, assert_same_error,  # noqa: E402
                    normalize_message, to_sk, torch_op_log)

F = sk.nn.functional


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(6, 5, generator=g, dtype=torch.float64) * 3
    target = torch.randint(0, 5, (6,), generator=g)
    probs = torch.rand(6, 5, generator=g, dtype=torch.float64)
    weight = torch.rand(5, generator=g, dtype=torch.float64) + 0.1
    return logits, target, probs, weight


def _compare(fn_ours, fn_theirs, *tensors, rtol=1e-12, ops=True):
    slog, tlog = SkOpLog(skip=("detach", "lift_fresh")), torch_op_log(skip=("detach",
                                                                           "lift_fresh"))
    with tlog:
        theirs = fn_theirs(*tensors)
    converted = [to_sk(t) for t in tensors]
    with slog:
        ours = fn_ours(*converted)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=1e-13)
    if ops:
        assert slog.ops == tlog.ops
    return ours


@settings(max_examples=30)
@given(reduction=st.sampled_from(["none", "mean", "sum"]), use_weight=st.booleans(),
       ignore=st.sampled_from([-100, 0, 2]), smoothing=st.sampled_from([0.0, 0.1, 0.7]),
       seed=st.integers(0, 5))
def test_cross_entropy_class_indices(reduction, use_weight, ignore, smoothing, seed):
    logits, target, _, weight = _data(seed)
    w = weight if use_weight else None
    sw = None if w is None else to_sk(w)
    _compare(lambda x, t: F.cross_entropy(x, t, weight=sw,
                                          ignore_index=ignore, reduction=reduction,
                                          label_smoothing=smoothing),
             lambda x, t: TF.cross_entropy(x, t, weight=w, ignore_index=ignore,
                                           reduction=reduction, label_smoothing=smoothing),
             logits, target, ops=smoothing == 0)


@settings(max_examples=15)
@given(reduction=st.sampled_from(["none", "mean", "sum"]), smoothing=st.sampled_from([0.0, 0.2]),
       use_weight=st.booleans())
def test_cross_entropy_probabilities(reduction, smoothing, use_weight):
    logits, _, probs, weight = _data(1)
    w = weight if use_weight else None
    sw = None if w is None else to_sk(w)
    _compare(lambda x, p: F.cross_entropy(x, p, weight=sw,
                                          reduction=reduction, label_smoothing=smoothing),
             lambda x, p: TF.cross_entropy(x, p, weight=w, reduction=reduction,
                                           label_smoothing=smoothing),
             logits, probs.softmax(1), ops=False)


def test_cross_entropy_op_stream_and_higher_dims():
    logits, target, _, _ = _data()
    _compare(F.cross_entropy, TF.cross_entropy, logits, target)
    x = torch.randn(2, 5, 3, 4, dtype=torch.float64)
    t = torch.randint(0, 5, (2, 3, 4))
    for reduction in ("none", "mean", "sum"):
        _compare(lambda a, b: F.cross_entropy(a, b, reduction=reduction),
                 lambda a, b: TF.cross_entropy(a, b, reduction=reduction), x, t, ops=False)
    _compare(F.cross_entropy, TF.cross_entropy, logits[0], target[0])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_mse_l1(reduction):
    logits, target, probs, weight = _data(2)
    lp = logits.log_softmax(1)
    _compare(lambda x, t, w: F.nll_loss(x, t, w, ignore_index=1, reduction=reduction),
             lambda x, t, w: TF.nll_loss(x, t, w, ignore_index=1, reduction=reduction),
             lp, target, weight)
    _compare(lambda a, b: F.mse_loss(a, b, reduction=reduction),
             lambda a, b: TF.mse_loss(a, b, reduction=reduction), logits, probs)
    _compare(lambda a, b: F.l1_loss(a, b, reduction=reduction),
             lambda a, b: TF.l1_loss(a, b, reduction=reduction), logits, probs)
    _compare(lambda a, b: F.mse_loss(a, b, reduction=reduction, weight=b),
             lambda a, b: TF.mse_loss(a, b, reduction=reduction, weight=b), logits, probs,
             ops=False)


@settings(max_examples=40)
@given(dtype=st.sampled_from([torch.float32, torch.float64]), n=st.integers(0, 9),
       c=st.integers(1, 6), reduction=st.sampled_from([0, 1, 2]),
       ignore=st.sampled_from([-100, 0, 2, 9]), byte=st.booleans(), transposed=st.booleans(),
       seed=st.integers(0, 100))
def test_nll_loss_primitives_every_path(dtype, n, c, reduction, ignore, byte, transposed,
                                        seed):
    """``nll_loss_forward``/``nll_loss_backward`` (no weight) against torch's ops over the
    kernels' paths: every target counted (the common case), an ``ignore_index`` hit, or inside
    the targets' range but not hit, or outside it; int64 and uint8 targets, empty batches and
    transposed inputs; values, the total weight and the zeros' signs of the gradient."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(c, n, generator=g, dtype=dtype).t() if transposed else torch.randn(
        n, c, generator=g, dtype=dtype)
    target = torch.randint(0, c, (n,), generator=g).to(torch.uint8 if byte else torch.int64)
    aten = torch.ops.aten
    loss, total = aten.nll_loss_forward(x, target, None, reduction, ignore)
    grad_out = torch.randn(loss.shape, generator=g, dtype=dtype)
    grad = aten.nll_loss_backward(grad_out, x, target, None, reduction, ignore, total)
    ours_loss, ours_total = sk.ops.nll_loss_forward(to_sk(x), to_sk(target), None, reduction,
                                                    ignore)
    ours_grad = sk.ops.nll_loss_backward(to_sk(grad_out), to_sk(x), to_sk(target), None,
                                         reduction, ignore, ours_total)
    rtol = 1e-6 if dtype is torch.float32 else 1e-12
    for ours, theirs in ((ours_loss, loss), (ours_total, total), (ours_grad, grad)):
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=0)
    assert (np.signbit(ours_grad.numpy()) == np.signbit(grad.numpy())).all()


def test_broadcast_warning():
    a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        theirs = TF.mse_loss(a, b)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ours = F.mse_loss(to_sk(a), to_sk(b))
    assert float(ours) == pytest.approx(float(theirs), rel=1e-12)
    assert normalize_message(str(tw[0].message)) == str(w[0].message)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_family(reduction):
    logits, _, probs, _ = _data(3)
    x = logits.sigmoid()
    w = torch.rand(5, dtype=torch.float64)
    _compare(lambda p, y, w_: F.binary_cross_entropy(p, y, w_, reduction=reduction),
             lambda p, y, w_: TF.binary_cross_entropy(p, y, w_, reduction=reduction),
             x, probs, w, ops=False)
    _compare(lambda p, y: F.binary_cross_entropy(p, y, reduction=reduction),
             lambda p, y: TF.binary_cross_entropy(p, y, reduction=reduction), x, probs)
    pos = torch.rand(5, dtype=torch.float64) + 0.5
    _compare(lambda a, y, pw: F.binary_cross_entropy_with_logits(a, y, reduction=reduction,
                                                                 pos_weight=pw),
             lambda a, y, pw: TF.binary_cross_entropy_with_logits(a, y, reduction=reduction,
                                                                  pos_weight=pw),
             logits * 20, probs, pos)
    edge = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)
    _compare(F.binary_cross_entropy, TF.binary_cross_entropy, edge, torch.tensor(
        [1.0, 0.0, 1.0], dtype=torch.float64))


def test_helpers():
    logits, target, _, _ = _data(4)
    # ``sk.zeros`` reaches modes as ``full`` (PyTorch: ``zeros``): values only here.
    _compare(F.one_hot, TF.one_hot, target, ops=False)
    _compare(lambda t: F.one_hot(t, 7), lambda t: TF.one_hot(t, 7), target, ops=False)
    _compare(lambda x: F.pad(x, (1, 2)), lambda x: TF.pad(x, (1, 2)), logits)
    _compare(lambda x: F.pad(x, (1, -2, 0, 3), value=2.5),
             lambda x: TF.pad(x, (1, -2, 0, 3), value=2.5), logits)
    _compare(F.normalize, TF.normalize, logits)
    _compare(lambda x: F.normalize(x, p=1.0, dim=0), lambda x: TF.normalize(x, p=1.0, dim=0),
             logits)
    _compare(F.softplus, TF.softplus, logits * 10)
    _compare(lambda x: F.softplus(x, beta=2, threshold=3), lambda x: TF.softplus(
        x, beta=2, threshold=3), logits)


@pytest.mark.parametrize("case", ["bad_reduction", "smoothing", "one_hot_neg", "one_hot_big",
                                  "one_hot_float", "bce_size", "bcel_size", "bce_range",
                                  "nll_batch", "target_oob", "pad_odd", "one_hot_empty"])
def test_errors(case):
    logits, target, probs, _ = _data(5)

    def run(lib, conv):
        x, t, p = conv(logits), conv(target), conv(probs)
        if case == "bad_reduction":
            return lib.cross_entropy(x, t, reduction="avg")
        if case == "smoothing":
            return lib.cross_entropy(x, t, label_smoothing=1.5)
        if case == "one_hot_neg":
            return lib.one_hot(t - 10)
        if case == "one_hot_big":
            return lib.one_hot(t, 2)
        if case == "one_hot_float":
            return lib.one_hot(p)
        if case == "bce_size":
            return lib.binary_cross_entropy(p, p[0])
        if case == "bcel_size":
            return lib.binary_cross_entropy_with_logits(x, x[0])
        if case == "bce_range":
            return lib.binary_cross_entropy(x, p)
        if case == "nll_batch":
            return lib.nll_loss(x, t[:3])
        if case == "target_oob":
            return lib.nll_loss(x, t + 5)
        if case == "pad_odd":
            return lib.pad(x, (1,))
        if case == "one_hot_empty":
            return lib.one_hot(t[:0])
    assert_same_error(lambda: run(F, to_sk), lambda: run(TF, lambda v: v))


def test_meta_shapes():
    x = sk.empty(6, 5, device="meta")
    t = sk.empty(6, dtype=sk.int64, device="meta")
    assert F.cross_entropy(x, t).shape == ()
    assert F.cross_entropy(x, t, reduction="none").shape == (6,)
    assert F.mse_loss(x, x, reduction="none").shape == (6, 5)
    assert F.pad(x, (1, 1, 2, 0)).shape == (8, 7)
    assert F.softplus(x).device.type == "meta"


@pytest.mark.parametrize("input_shape,reduction,grad_shape", [
    ((4, 5), 0, (3,)), ((4, 5), 0, (4, 1)), ((4, 5), 0, ()), ((4, 5), 1, (3,)),
    ((4, 5), 2, (2, 2)), ((5,), 0, (3,)), ((4, 5), 1, (1,)), ((5,), 0, ())])
def test_nll_loss_backward_checks_grad_output_size(input_shape, reduction, grad_shape):
    """A grad_output of the wrong size raises PyTorch's error (or computes, where it does)."""
    x = torch.randn(input_shape)
    t = torch.tensor([0, 1, 2, 3]) if len(input_shape) == 2 else torch.tensor(2)
    g, tw = torch.randn(grad_shape), torch.tensor(4.0)
    args = (g, x, t, None, reduction, -100, tw)
    try:
        want = torch.ops.aten.nll_loss_backward(*args)
    except Exception as e:      # noqa: BLE001 - the oracle's class and text are compared
        with pytest.raises(type(e)) as ours:
            sk.ops.nll_loss_backward(*[to_sk(a) if isinstance(a, torch.Tensor) else a
                                       for a in args])
        assert normalize_message(str(ours.value)) == normalize_message(str(e))
        return
    got = sk.ops.nll_loss_backward(*[to_sk(a) if isinstance(a, torch.Tensor) else a for a in args])
    assert_same(got, want)


@settings(max_examples=60)
@given(dtype=st.sampled_from([torch.float32, torch.float64]), n=st.integers(0, 600),
       c=st.integers(1, 5), reduction=st.sampled_from([1, 2]),
       ignore=st.sampled_from([-100, 0, 1]), weighted=st.booleans(), seed=st.integers(0, 100))
def test_nll_loss_sums_in_pytorchs_cascade(dtype, n, c, reduction, ignore, weighted, seed):
    """``nll_loss_forward``'s sum and mean, and its total weight, bit for bit: PyTorch adds a
    batch in a cascade of partial sums (``nll_loss_out_frame``), skipping ignored samples, and
    fills an empty batch's mean with a positive NaN."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, generator=g, dtype=dtype) * 100
    target = torch.randint(0, c, (n,), generator=g)
    weight = torch.rand(c, generator=g, dtype=dtype) if weighted else None
    loss, total = torch.ops.aten.nll_loss_forward(x, target, weight, reduction, ignore)
    ours_loss, ours_total = sk.ops.nll_loss_forward(
        to_sk(x), to_sk(target), None if weight is None else to_sk(weight), reduction, ignore)
    assert ours_loss.numpy().tobytes() == loss.numpy().tobytes()
    assert ours_total.numpy().tobytes() == total.numpy().tobytes()
