"""nn ops against torch: ``_softmax``/``softmax``, ``_log_softmax``/``log_softmax``,
``native_layer_norm``/``layer_norm``, ``embedding`` and ``sk.nn.functional`` (``linear``,
``softmax``, ``gelu``, ``silu``, ``relu``, ``dropout``, ``scaled_dot_product_attention``,
``rms_norm``).

Same inputs in both libraries; compare values, sizes, strides, dtypes, ``_version``, the op
stream a dispatch mode sees (``softmax(dtype=)`` is ``_to_copy, _softmax``; ``layer_norm`` is
``native_layer_norm``), errors, and meta-vs-cpu metadata.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for nn ops")
pytest.importorskip("hypothesis", reason="hypothesis generates the shapes")
import torch.nn.functional as TF  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import SkOpLog, assert_same, normalize_message, to_sk, torch_op_log  # noqa: E402

F = sk.nn.functional


# -- helpers -------------------------------------------------------------------------------------
def SkLog():
    return SkOpLog()

def TorchLog():
    return torch_op_log(skip=("lift_fresh",))


def make(shape, layout="contig", dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shape = tuple(shape)
    if layout == "t" and len(shape) >= 2:
        return torch.randn(shape[::-1], generator=gen).to(dtype).permute(
            *range(len(shape) - 1, -1, -1))
    if layout == "cl" and len(shape) == 4:
        return torch.randn(shape, generator=gen).to(dtype).to(memory_format=torch.channels_last)
    if layout == "expand" and shape:
        return torch.randn((1,) + shape[1:], generator=gen).to(dtype).expand(shape)
    return torch.randn(shape, generator=gen).to(dtype)


def sk_twin(x):
    if isinstance(x, (list, tuple)):
        return type(x)(sk_twin(v) for v in x)
    if not isinstance(x, torch.Tensor):
        return x
    n = x.untyped_storage().nbytes() // x.element_size()
    flat = x.detach().as_strided((n,), (1,), 0).clone()
    return to_sk(flat.as_strided(tuple(x.shape), x.stride(), x.storage_offset()))


def outcome(fn, args, log):
    try:
        with log:
            return fn(*args)
    except Exception as e:  # noqa: BLE001 - an exception is an outcome to compare
        return e


def check(torch_fn, sk_fn, *targs, ops=True, meta=True, rtol=None, atol=None):
    sargs = [sk_twin(a) for a in targs]
    tlog, slog = TorchLog(), SkLog()
    theirs = outcome(torch_fn, targs, tlog)
    ours = outcome(sk_fn, sargs, slog)
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"sk returned a result, torch raised {theirs!r}"
        assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
        assert str(ours) in (str(theirs), normalize_message(str(theirs))), (ours, theirs)
        return
    if isinstance(ours, Exception):
        raise ours
    assert_same(ours, theirs, rtol=rtol, atol=atol)
    if ops:
        assert slog.ops == tlog.ops
    if meta:
        metas = [a.to("meta") if isinstance(a, sk.Tensor) else a for a in sargs]
        got = sk_fn(*metas)
        for m, c in zip(_flat(got), _flat(ours)):
            assert m.device.type == "meta"
            assert (tuple(m.shape), m.stride(), m.dtype) == (tuple(c.shape), c.stride(), c.dtype)
    return ours


def _flat(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


# -- softmax / log_softmax -----------------------------------------------------------------------
SOFTMAX_CASES = [
    ((2, 3), "contig", -1), ((3, 2), "t", 0), ((3, 2), "t", 1), ((3, 4), "expand", 1),
    ((2, 3, 4, 5), "cl", 1), ((), "contig", 0), ((), "contig", -1), ((0, 3), "contig", 1),
    ((2, 3), "contig", 2), ((), "contig", 1), ((4, 1, 3), "contig", 1),
]


@pytest.mark.parametrize("shape, layout, dim", SOFTMAX_CASES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(shape, layout, dim, name):
    x = make(shape, layout)
    check(lambda a: getattr(a, name)(dim), lambda a: getattr(a, name)(dim), x)
    check(lambda a: getattr(torch, name)(a, dim), lambda a: getattr(sk, name)(a, dim), x)
    check(lambda a: getattr(torch, "_" + name)(a, dim, False),
          lambda a: getattr(sk.ops, "_" + name)(a, dim, False), x)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_dtypes(name):
    x = make((2, 3))
    for dtype in (torch.float64, torch.float32):
        sk_dtype = getattr(sk, str(dtype)[6:])
        check(lambda a, d=dtype: getattr(a, name)(-1, dtype=d),
              lambda a, d=sk_dtype: getattr(a, name)(-1, dtype=d), x)
    check(lambda a: getattr(a, name)(0), lambda a: getattr(a, name)(0), x.half())
    for ints in (torch.ones(3, 2).long(), torch.ones(3).int(), torch.ones(3) > 0):
        check(lambda a: getattr(a, name)(0), lambda a: getattr(a, name)(0), ints, meta=False)
        check(lambda a: getattr(a, name)(-1), lambda a: getattr(a, name)(-1), ints, meta=False)
    check(lambda a: getattr(a, name)(0, dtype=torch.float32),
          lambda a: getattr(a, name)(0, dtype=sk.float32), torch.ones(3).long())
    check(lambda a: getattr(torch, "_" + name)(a, 0, True),
          lambda a: getattr(sk.ops, "_" + name)(a, 0, True), x.half())


def test_softmax_extremes():
    x = torch.tensor([[float("-inf"), float("-inf")], [1e30, -1e30], [float("inf"), 0.0]])
    check(lambda a: a.softmax(1), lambda a: a.softmax(1), x)
    check(lambda a: a.log_softmax(1), lambda a: a.log_softmax(1), x)


def test_functional_softmax_implicit_dim_warns():
    x = make((2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        ours = F.softmax(to_sk(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = TF.softmax(x)
    assert_same(ours, theirs)
    check(lambda a: TF.log_softmax(a, 1, dtype=torch.float64),
          lambda a: F.log_softmax(a, 1, dtype=sk.float64), x)


@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.data())
def test_softmax_random(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    layout = data.draw(st.sampled_from(["contig", "t", "expand"]))
    x = make(shape, layout) * 5
    check(lambda a: a.softmax(dim), lambda a: a.softmax(dim), x, rtol=1e-5, atol=1e-6)
    check(lambda a: a.log_softmax(dim), lambda a: a.log_softmax(dim), x, rtol=1e-5, atol=1e-5)


# -- layer norm ----------------------------------------------------------------------------------
LAYER_NORM_CASES = [
    ((2, 3, 4), (3, 4), True), ((2, 3, 4), (4,), False), ((4, 3), (4,), False),
    ((0, 3), (3,), True), ((2, 0), (0,), False), ((5,), (5,), True), ((2, 3), (4,), False),
    ((2, 3), (2, 4), False), ((3,), (2, 3), False), ((2, 3), (), False),
]


@pytest.mark.parametrize("shape, normalized, affine", LAYER_NORM_CASES)
def test_native_layer_norm(shape, normalized, affine):
    x = make(shape, "t")
    w = make(normalized, seed=1) if affine and normalized else None
    b = make(normalized, seed=2) if affine and normalized else None
    check(lambda *a: torch.native_layer_norm(a[0], normalized, a[1], a[2], 1e-5),
          lambda *a: sk.ops.native_layer_norm(a[0], list(normalized), a[1], a[2], 1e-5),
          x, w, b, rtol=1e-4, atol=1e-5)
    check(lambda *a: TF.layer_norm(a[0], normalized, a[1], a[2]),
          lambda *a: F.layer_norm(a[0], normalized, a[1], a[2]), x, w, b, rtol=1e-4, atol=1e-5)


def test_layer_norm_parameter_checks_and_dtypes():
    x = make((2, 3))
    cases = [
        (x, make((4,)), None), (x, make((3,)), make((4,))), (x, make((3,)).double(), None),
        (x.half(), make((3,)), make((3,))), (x.half(), make((3,)).double(), None),
        (x.half(), make((3,)).half(), make((3,))), (x.long(), None, None),
        (x.long(), make((3,)), None), (x.double(), make((3,)).double(), make((3,)).double()),
    ]
    for args in cases:
        check(lambda *a: torch.native_layer_norm(a[0], (3,), a[1], a[2], 1e-5),
              lambda *a: sk.ops.native_layer_norm(a[0], [3], a[1], a[2], 1e-5), *args,
              rtol=1e-3, atol=1e-3)
    check(lambda a: TF.layer_norm(a, 3), lambda a: F.layer_norm(a, 3), x)


# -- embedding -----------------------------------------------------------------------------------
EMBEDDING_CASES = [
    ([[1, 2], [0, 3]], (4, 3), "contig", {}), ([[1, 2], [0, 3]], (4, 3), "t", {}),
    (1, (4, 3), "contig", {}), ([], (4, 3), "contig", {}), ([1, 7], (4, 3), "contig", {}),
    ([1, -1], (4, 3), "contig", {}), ([[[3]]], (4, 3), "contig", {}),
    ([1, 2], (4,), "contig", {}), ([1, 2], (4, 3), "contig", {"padding_idx": 1}),
    ([1, 2], (4, 3), "contig", {"padding_idx": -1}),
]


@pytest.mark.parametrize("idx, wshape, layout, kw", EMBEDDING_CASES)
def test_embedding(idx, wshape, layout, kw):
    i, w = torch.tensor(idx, dtype=torch.int64), make(wshape, layout)
    check(lambda a, b: TF.embedding(a, b, **kw), lambda a, b: F.embedding(a, b, **kw), i, w)
    check(lambda a, b: TF.embedding(a.int(), b, **kw),
          lambda a, b: F.embedding(a.int(), b, **kw), i, w)


def test_embedding_errors():
    w = make((4, 3))
    for idx in (torch.tensor([1.0]), torch.tensor([1], dtype=torch.int16)):
        check(lambda a, b: TF.embedding(a, b), lambda a, b: F.embedding(a, b), idx, w)
    check(lambda a, b: torch.embedding(b, a), lambda a, b: sk.ops.embedding(b, a),
          torch.tensor([1]), make((4, 3, 2)))
    for pad in (5, -5):
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            F.embedding(sk.tensor([1]), to_sk(w), padding_idx=pad)


def test_embedding_meta_skips_range_check():
    out = F.embedding(sk.tensor([1, 9]).to("meta"), sk.empty(4, 3, device="meta"))
    assert out.shape == (2, 3) and out.device.type == "meta"


# -- functional ----------------------------------------------------------------------------------
def test_linear_and_activations():
    x, w, b = make((2, 5, 3)), make((4, 3), seed=1), make((4,), seed=2)
    check(TF.linear, F.linear, x, w, b)
    check(lambda a: TF.gelu(a), lambda a: F.gelu(a), x, rtol=1e-5, atol=1e-6)
    check(lambda a: TF.gelu(a, approximate="tanh"), lambda a: F.gelu(a, approximate="tanh"), x,
          rtol=1e-5, atol=1e-6)
    check(lambda a: TF.silu(a), lambda a: F.silu(a), x, rtol=1e-5, atol=1e-6)
    check(lambda a: TF.relu(a), lambda a: F.relu(a), x)
    check(lambda a: TF.relu(a, inplace=True), lambda a: F.relu(a, inplace=True), make((3, 2)))
    check(lambda a: TF.silu(a, inplace=True), lambda a: F.silu(a, inplace=True), make((3, 2)),
          rtol=1e-5, atol=1e-6)


def test_dropout():
    x = sk.ones(4, 8)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(sk.ones(0), 0.5) .shape == (0,)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got "
                                         "1.5"):
        F.dropout(x, 1.5)
    assert F.dropout(x, 1.0).numpy().sum() == 0
    sk.manual_seed(0)
    out = F.dropout(sk.ones(200, 50), 0.25)
    vals = np.unique(out.numpy())
    assert set(vals.tolist()) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < (out.numpy() == 0).mean() < 0.35
    meta = F.dropout(sk.empty(3, 5, device="meta"), 0.3)
    assert meta.shape == (3, 5) and meta.device.type == "meta"
    y = sk.ones(10, 10)
    assert F.dropout(y, 0.5, inplace=True) is y and y._version == 1


SDPA_CASES = [
    ((1, 2, 4, 8), (1, 2, 6, 8), {}), ((1, 2, 4, 8), (1, 2, 6, 8), {"is_causal": True}),
    ((1, 2, 4, 8), (1, 2, 4, 8), {"is_causal": True}), ((2, 4, 8), (2, 5, 8), {"scale": 0.3}),
    ((1, 4, 4, 8), (1, 2, 6, 8), {"enable_gqa": True}),
]


@pytest.mark.parametrize("qshape, kshape, kw", SDPA_CASES)
def test_scaled_dot_product_attention(qshape, kshape, kw):
    q, k, v = make(qshape), make(kshape, seed=1), make(kshape, seed=2)
    check(lambda *a: TF.scaled_dot_product_attention(*a, **kw),
          lambda *a: F.scaled_dot_product_attention(*a, **kw), q, k, v, ops=False,
          rtol=1e-4, atol=1e-5)


def test_scaled_dot_product_attention_masks():
    q, k, v = make((1, 2, 4, 8)), make((1, 2, 6, 8), seed=1), make((1, 2, 6, 8), seed=2)
    bool_mask = torch.rand(4, 6, generator=torch.Generator().manual_seed(3)) > 0.3
    bool_mask[:, 0] = True  # no fully masked row (that gives nan in both)
    for mask in (bool_mask, make((4, 6), seed=4), make((1, 1, 4, 6), seed=5)):
        check(lambda *a: TF.scaled_dot_product_attention(*a[:3], attn_mask=a[3]),
              lambda *a: F.scaled_dot_product_attention(*a[:3], attn_mask=a[3]), q, k, v, mask,
              ops=False, rtol=1e-4, atol=1e-5)


def test_scaled_dot_product_attention_matches_reference_formula():
    q = sk.randn(2, 3, 4)
    out = F.scaled_dot_product_attention(q, q, q)
    ref = sk.softmax(q @ q.transpose(-2, -1) * (1 / math.sqrt(4)), -1) @ q
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape, normalized, weight, dtype", [
    ((2, 3), (3,), True, torch.float32), ((2, 3, 4), (3, 4), False, torch.float32),
    ((2, 3), (3,), True, torch.float16), ((2, 3), (4,), False, torch.float32),
    ((2, 3), (3,), True, torch.float64),
])
def test_rms_norm(shape, normalized, weight, dtype):
    if "cpu" not in sk.ops.mean.default._kernels:
        pytest.skip("sk.ops.mean has no cpu kernel yet (reductions family)")
    x = make(shape, dtype=dtype)
    w = make(normalized, seed=1, dtype=dtype) if weight else None
    check(lambda a, b: TF.rms_norm(a, normalized, b), lambda a, b: F.rms_norm(a, normalized, b),
          x, w, ops=dtype is not torch.float16, rtol=1e-3, atol=1e-3)


def test_rms_norm_shape_errors():
    for shape, normalized, weight in [((2, 3), (4,), None), ((2, 3), (3,), (4,))]:
        w = None if weight is None else make(weight)
        check(lambda a, b, n=normalized: TF.rms_norm(a, n, b),
              lambda a, b, n=normalized: F.rms_norm(a, n, b), make(shape), w)


@given(n=st.integers(0, 400), vocab=st.integers(1, 80), dim=st.sampled_from([1, 3, 64]),
       padding_idx=st.sampled_from([-1, 0, 2]), scale=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_embedding_dense_backward_is_torchs_bit_for_bit(n, vocab, dim, padding_idx, scale, dtype):
    """Repeated indices add their gradient rows in index order, as PyTorch's loop does (float
    sums depend on the order). With ``scale_grad_by_freq`` PyTorch fuses the scaling into a
    multiply-add: last-place differences there."""
    gen = torch.Generator().manual_seed(n * 7 + vocab)
    grad = torch.randn(n, dim, generator=gen, dtype=dtype) * 10
    skew = torch.randint(0, vocab, (n,), generator=gen)
    idx = torch.where(torch.rand(n, generator=gen) < 0.5, skew, skew % 3 % vocab)
    pad = padding_idx if padding_idx < vocab else -1
    theirs = torch.ops.aten.embedding_dense_backward(grad, idx, vocab, pad, scale)
    ours = sk.ops.embedding_dense_backward(to_sk(grad), to_sk(idx), vocab, pad, scale)
    if scale:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
    else:
        assert ours.numpy().tobytes() == theirs.numpy().tobytes()
