"""The fused CPU attention ``_scaled_dot_product_flash_attention_for_cpu`` (and its backward)
against torch 2.13: which calls of ``F.scaled_dot_product_attention`` take it (the op streams a
dispatch mode sees, forward and backward), values, sizes, strides and dtypes of output and
logsumexp, gradients, the meta kernel's layouts, and the errors of direct calls."""

from __future__ import annotations

import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for the fused attention")
from oracle import SkOpLog, assert_same, assert_same_error, to_sk, torch_op_log  # noqa: E402

F = sk.nn.functional
TF = torch.nn.functional
OP = "_scaled_dot_product_flash_attention_for_cpu"


def _qkv(q=(2, 3, 5, 4), k=(2, 3, 7, 4), v=None, dtype=torch.float32, layout=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    v = v or k
    ts = [torch.randn(s, generator=gen, dtype=torch.float64).to(dtype) for s in (q, k, v)]
    if layout == "bshd":        # (B, S, H, E) memory transposed to (B, H, S, E): HF's layout
        ts = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in ts]
    elif layout == "q_last_stride":
        ts[0] = ts[0].transpose(-1, -2).contiguous().transpose(-1, -2)
    return ts


# name -> (qkv kwargs, sdpa kwargs as a function of (lib, L, S)): fused or not per torch
CASES = {
    "plain": ({}, {}),
    "causal": ({}, {"is_causal": True}),
    "causal_L_gt_S": ({"q": (2, 3, 9, 4)}, {"is_causal": True}),
    "scale": ({}, {"scale": 0.3}),
    "bool_mask_2d": ({}, {"attn_mask": lambda L, n, s: L.rand(n, s) > 0.3}),
    "float_mask_2d": ({}, {"attn_mask": lambda L, n, s: L.randn(n, s)}),
    "float_mask_4d": ({}, {"attn_mask": lambda L, n, s: L.randn(2, 1, n, s)}),
    "mask_bcast_key": ({}, {"attn_mask": lambda L, n, s: L.randn(n, 1)}),
    "mask_3d_math": ({}, {"attn_mask": lambda L, n, s: L.randn(1, n, s)}),
    "gqa": ({"q": (2, 4, 5, 4), "k": (2, 2, 7, 4)}, {"enable_gqa": True}),
    "head_dims_differ_math": ({"v": (2, 3, 7, 6)}, {}),
    "3d_math": ({"q": (3, 5, 4), "k": (3, 7, 4)}, {}),
    "batch_bcast_math": ({"k": (1, 3, 7, 4)}, {}),
    "bshd_layout": ({"layout": "bshd"}, {}),
    "q_last_stride_math": ({"layout": "q_last_stride"}, {}),
    "L_1": ({"q": (2, 3, 1, 4)}, {}),
    "E_1": ({"q": (2, 3, 5, 1), "k": (2, 3, 7, 1)}, {}),
    "float64": ({"dtype": torch.float64}, {"is_causal": True}),
    "float16": ({"dtype": torch.float16}, {}),
    "float64_float32_mask": ({"dtype": torch.float64}, {"attn_mask": lambda L, n, s:
                                                        L.randn(n, s, dtype=L.float32)}),
    "float16_float32_mask": ({"dtype": torch.float16}, {"attn_mask": lambda L, n, s:
                                                        L.randn(n, s, dtype=L.float32)}),
}


def _kwargs(lib, qkv, kw):
    """The sdpa keyword arguments, a mask made by torch (the same values in both)."""
    n, s = qkv[0].shape[-2], qkv[1].shape[-2]
    torch.manual_seed(3)
    kwargs = {k: (v(torch, n, s) if callable(v) else v) for k, v in kw.items()}
    if "attn_mask" in kwargs and lib is sk:
        kwargs["attn_mask"] = to_sk(kwargs["attn_mask"])
    return kwargs


def _run(lib, name, backward):
    qkv_kw, kw = CASES[name]
    ts = _qkv(**qkv_kw)
    ts = [to_sk(t) for t in ts] if lib is sk else ts
    for t in ts:
        t.requires_grad_(backward)
    log = SkOpLog() if lib is sk else torch_op_log()
    kwargs = _kwargs(lib, ts, kw)
    with log:
        out = (F if lib is sk else TF).scaled_dot_product_attention(*ts, **kwargs)
        if backward:
            (out * out).sum().backward()
    return out, [t.grad for t in ts], log.ops


@pytest.mark.parametrize("name", list(CASES))
def test_forward_takes_the_fused_op_where_torch_does(name):
    ours, _, our_ops = _run(sk, name, False)
    theirs, _, their_ops = _run(torch, name, False)
    assert (OP in our_ops) == (OP in their_ops) == ("math" not in name)
    if OP in their_ops:
        assert our_ops == their_ops          # bool masks: scalar_tensor, scalar_tensor, where
    rtol = 1e-2 if "16" in name else None
    assert_same(ours, theirs, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", [n for n in CASES if "math" not in n])
def test_backward_op_and_gradients(name):
    ours, our_grads, our_ops = _run(sk, name, True)
    theirs, their_grads, their_ops = _run(torch, name, True)
    assert OP + "_backward" in our_ops and OP + "_backward" in their_ops
    assert ours.grad_fn.name() == theirs.grad_fn.name() == \
        "ScaledDotProductFlashAttentionForCpuBackward0"
    tol = 2e-2 if "16" in name else 1e-5
    for g, tg in zip(our_grads, their_grads):
        assert_same(g, tg, rtol=tol, atol=tol, check_strides=False)
        assert tuple(g.shape) == tuple(tg.shape)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", ["plain", "gqa", "bshd_layout", "L_1", "E_1", "float16",
                                  "float64"])
def test_direct_calls_outputs_and_layouts(name, device):
    qkv_kw, _ = CASES[name]
    ts = [t.to(device) for t in _qkv(**qkv_kw)]
    theirs = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(*ts, 0.0, True)
    ours = sk.ops._scaled_dot_product_flash_attention_for_cpu(*[to_sk(t) for t in ts], 0.0,
                                                               True)
    tol = 1e-2 if name == "float16" else None
    assert_same(list(ours), list(theirs), rtol=tol, atol=tol)
    grad = torch.ones_like(theirs[0])
    args = (grad, *ts, *theirs, 0.0, True)
    theirs_b = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(*args)
    ours_b = sk.ops._scaled_dot_product_flash_attention_for_cpu_backward(
        *[to_sk(a) if isinstance(a, torch.Tensor) else a for a in args])
    tol = 2e-2 if name == "float16" else 1e-5
    assert_same(list(ours_b), list(theirs_b), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["causal", "causal_L_gt_S", "float_mask_4d", "bool_mask_2d",
                                  "gqa", "bshd_layout", "float64"])
def test_blocks_of_a_long_op_match_torch(name, monkeypatch):
    """Above ``_CHUNK`` score elements the fills go block by block (per batch, per range of
    key/value heads with their query heads): shrunk to force one block per key/value head,
    forward and gradients still match torch."""
    from subclass_kit.kernels import attention
    monkeypatch.setattr(attention, "_CHUNK", 1)
    _, kw = CASES[name]
    qkv_kw = {"q": (2, 6, 5, 4), "k": (2, 3, 7, 4)} if name == "gqa" else CASES[name][0]
    kw = dict(kw, enable_gqa=True) if name == "gqa" else kw
    ts = _qkv(**qkv_kw)
    kwargs = _kwargs(torch, ts, kw)
    ours_in = [to_sk(t).requires_grad_(True) for t in ts]
    theirs_in = [t.clone().requires_grad_(True) for t in ts]
    ours_kw = {n: (to_sk(v) if isinstance(v, torch.Tensor) else v) for n, v in kwargs.items()}
    ours = F.scaled_dot_product_attention(*ours_in, **ours_kw)
    theirs = TF.scaled_dot_product_attention(*theirs_in, **kwargs)
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    assert_same(ours, theirs)
    for g, tg in zip(ours_in, theirs_in):
        assert_same(g.grad, tg.grad, rtol=1e-5, atol=1e-5, check_strides=False)


def test_fully_masked_rows_give_zero_output_and_logsumexp():
    q, k, v = _qkv(q=(1, 1, 3, 2), k=(1, 1, 4, 2))
    mask = torch.zeros(3, 4)
    mask[1] = float("-inf")
    theirs = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v,
                                                                         attn_mask=mask)
    ours = sk.ops._scaled_dot_product_flash_attention_for_cpu(
        to_sk(q), to_sk(k), to_sk(v), attn_mask=to_sk(mask))
    assert_same(list(ours), list(theirs))


def test_errors_of_direct_calls():
    q, k, v = _qkv()
    ours = [to_sk(t) for t in (q, k, v)]
    op, top = sk.ops._scaled_dot_product_flash_attention_for_cpu, \
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    assert_same_error(lambda: op(*ours, 0.5), lambda: top(q, k, v, 0.5))
    assert_same_error(lambda: op(*[t[0] for t in ours]), lambda: top(q[0], k[0], v[0]))
    assert_same_error(lambda: op(ours[0].double(), *ours[1:]), lambda: top(q.double(), k, v))


def test_fused_meta_allocates_no_score_matrix():
    """On meta, the fused op allocates output + logsumexp only: the (L, S) scores of the math
    version never exist (what a sizing run of a long sequence should see)."""
    b, h, n, e = 1, 8, 4096, 64
    q = sk.empty(b, h, n, e, device="meta")

    class Allocations(sk.DispatchMode):
        def __init__(self):
            self.ops, self.nbytes = [], []

        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.ops.append(func.name)
            self.nbytes += [t.untyped_storage().nbytes() for t in sk.pytree.tree_leaves(out)
                            if isinstance(t, sk.Tensor)]
            return out

    with Allocations() as fused:
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert fused.ops == [OP]
    assert fused.nbytes == [b * h * n * e * 4, b * h * n * 4]
    with Allocations() as math:      # dropout keeps it off the fused op
        F.scaled_dot_product_attention(q, q, q, is_causal=True, dropout_p=0.1)
    assert max(math.nbytes) >= b * h * n * n * 4


@pytest.mark.parametrize("case", ["mask_f64", "mask_int", "mask_f16", "key_f64", "query_1d"])
def test_input_validation_errors(case):
    q, k, v = _qkv()
    kw = {}
    if case.startswith("mask"):
        dtype = {"mask_f64": torch.float64, "mask_int": torch.int64,
                 "mask_f16": torch.float16}[case]
        kw["attn_mask"] = torch.zeros(5, 7, dtype=dtype)
    elif case == "key_f64":
        k = k.double()
    else:
        q = q[0, 0, 0]
    ours_kw = {n: to_sk(t) for n, t in kw.items()}
    assert_same_error(lambda: F.scaled_dot_product_attention(to_sk(q), to_sk(k), to_sk(v),
                                                             **ours_kw),
                      lambda: TF.scaled_dot_product_attention(q, k, v, **kw))


def test_long_causal_masks_are_not_retained():
    """A causal mask is cached for short sequences only: a long one (here 1100 x 1100) is built
    per call, so no shape keeps megabytes alive after the call."""
    from subclass_kit.kernels import attention
    before = (attention._cached_causal_mask.cache_info().currsize,
              attention._cached_causal_bias.cache_info().currsize)
    q = sk.randn(1, 1, 1100, 4)
    out = sk.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.shape == (1, 1, 1100, 4)
    assert (attention._cached_causal_mask.cache_info().currsize,
            attention._cached_causal_bias.cache_info().currsize) == before
