"""The fused attention of PyTorch's CPU backend: ``_scaled_dot_product_flash_attention_for_cpu``
and its backward op.

``F.scaled_dot_product_attention`` calls the forward when PyTorch's CPU would pick its flash
kernel (``api/nn.py`` says when); the autograd formula calls the backward. One rule per op
(Note [One rule per op]); the layouts are PyTorch's: ``output`` keeps the query's strides
(``empty_like``), ``logsumexp`` is ``(B, H, L)`` laid out as ``(B, L, H)`` transposed, and
the three gradients are ``(B, H, *, E)`` laid out as ``(B, *, H, E)`` transposed.

The fill computes, per chunk of (batch, head) pairs so that no more than ``_CHUNK`` score
elements exist at once, ``scores = q @ k^T * scale + mask`` (causal: the upper triangle
``j > i`` masked, top-left aligned as ``tril``), ``logsumexp`` over the keys and
``output = softmax(scores) @ v``; a query row with every key masked gives output 0 and
logsumexp 0, as PyTorch's kernel does. float16 computes in float32 (``opmath``) and
``logsumexp`` is float32 then; GQA (fewer key/value heads) maps query head ``h`` to key/value
head ``h // (H / H_kv)``, PyTorch's ``repeat_interleave`` order.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import _dtype as dt
from ..registry import ops
from ..storage import round_to_bfloat16
from ._common import Spec, common_device, register_rule, type_name
from .factories import _preserved_strides

# Score elements computed at once by the cpu fill (a (chunk, L, S) block), 4 Mi.
_CHUNK = 1 << 22

_NAME = "scaled_dot_product_attention_flash_attention"


def _reduced(dtype) -> bool:
    return dtype.itemsize == 2        # float16 / bfloat16: float32 logsumexp and math


def _rounder(dtype):
    """What PyTorch's flash kernel does to the unnormalised probabilities before ``p @ v``:
    a reduced dtype stores them in that dtype (its gemm takes two operands of one type)."""
    if dtype is dt.bfloat16:
        return round_to_bfloat16
    if dtype is dt.float16:
        return lambda p: p.astype(np.float16).astype(np.float32)
    return None


def _transposed_strides(b, h, s, e) -> tuple:
    """Strides of a ``(b, h, s, e)`` tensor allocated as ``(b, s, h, e)`` then transposed."""
    return (s * h * e, e, h * e, 1)


def _check(query, key, value, dropout_p, attn_mask):
    """Validate a call; ``dropout_p`` None skips the dropout check (the backward ignores it,
    as PyTorch's does). Returns the device."""
    if dropout_p is not None and dropout_p > 0.0:
        raise RuntimeError(f"{_NAME}: Currently do not support dropout > 0")
    if not (query.ndim == key.ndim == value.ndim == 4):
        raise RuntimeError(f"{_NAME}: Accept only 4 dims inputs shape of {{B, H, T, K}}")
    dtype = query._dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{_NAME}: Expected data type in FP32, FP64, BF16, FP16, but got "
                           f"{type_name(dtype)} instead.")
    for t in (key, value) + ((attn_mask,) if attn_mask is not None else ()):
        if t._dtype is not dtype and not (t is attn_mask and t._dtype in (dt.bool_, dt.float32)):
            raise RuntimeError(f"expected scalar type {type_name(dtype)} but found "
                               f"{type_name(t._dtype)}")
    b, h, _, e = query._layout.sizes
    kb, kh, s, ke = key._layout.sizes
    vb, vh, vs, ve = value._layout.sizes
    if not (b == kb == vb and kh == vh and s == vs and e == ke == ve) or kh == 0 or h % kh:
        raise RuntimeError(f"{_NAME}: query {list(query.shape)}, key {list(key.shape)} and "
                           f"value {list(value.shape)} do not fit (B, H, L, E), (B, H_kv, S, "
                           f"E), (B, H_kv, S, E) with H a multiple of H_kv")
    return common_device([query, key, value])


def _forward_rule(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None,
                  scale=None):
    device = _check(query, key, value, dropout_p, attn_mask)
    b, h, n, e = query._layout.sizes
    lse_dtype = dt.float32 if _reduced(query._dtype) else query._dtype
    return (Spec(query._layout.sizes, _preserved_strides(query, None), query._dtype, device),
            Spec((b, h, n), (n * h, 1, h), lse_dtype, device))


def _backward_rule(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *,
                   attn_mask=None, scale=None):
    device = _check(query, key, value, None, attn_mask)
    if grad_out._dtype is not query._dtype:
        raise RuntimeError(f"expected scalar type {type_name(query._dtype)} but found "
                           f"{type_name(grad_out._dtype)}")
    if grad_out._layout.sizes != query._layout.sizes[:3] + value._layout.sizes[3:]:
        raise RuntimeError(f"{_NAME}: grad_out {list(grad_out.shape)} does not match the "
                           f"output's shape")
    accumulate = dt.float32 if _reduced(query._dtype) else query._dtype
    if logsumexp._dtype is not accumulate:      # the forward's logsumexp: float32 for 16-bit
        raise RuntimeError(f"expected scalar type {type_name(accumulate)} but found "
                           f"{type_name(logsumexp._dtype)}")
    return tuple(Spec(t._layout.sizes, _transposed_strides(*t._layout.sizes), t._dtype, device)
                 for t in (query, key, value))


def _opmath(t) -> np.ndarray:
    a = t._array()
    return a.astype(np.float32) if _reduced(t._dtype) else a


def _blocks(b, h, n, s, mask):
    """(batch, head range) chunks of at most ``_CHUNK`` score elements (one head at least).
    With no mask and every score fitting in one chunk, one block of all batches (``batch`` a
    slice): the same arithmetic per (batch, head) matrix, without a Python round per batch."""
    if mask is None and b * h * n * s <= _CHUNK:
        yield slice(None), slice(0, h)
        return
    per = max(1, _CHUNK // max(1, n * s))
    for i in range(b):
        for j in range(0, h, per):
            yield i, slice(j, min(h, j + per))


def _scores(q, k, mask, is_causal, scale, i, hs, group):
    """``q @ k^T * scale + mask`` for batch ``i``, query heads ``hs``: (heads, L, S); for a
    batch slice ``i`` (``_blocks``, only without a mask), (batches, heads, L, S)."""
    kv = np.arange(hs.start, hs.stop) // group
    sc = np.matmul(q[i, hs], np.swapaxes(k[i, kv], -1, -2)) * scale
    if mask is not None:
        m = mask if mask.ndim == 2 else mask[min(i, mask.shape[0] - 1)]
        if m.ndim == 3:
            m = m if m.shape[0] == 1 else m[hs]
        sc = sc + m
    if is_causal:
        n, s = sc.shape[-2:]
        sc = np.where(_causal_mask(n, s), sc, -np.inf)
    return sc, kv


@functools.lru_cache(maxsize=16)
def _causal_mask(n: int, s: int) -> np.ndarray:
    """The (n, s) lower-triangular bool mask of ``is_causal`` (read-only: shared by calls)."""
    m = np.tril(np.ones((n, s), dtype=bool))
    m.flags.writeable = False
    return m


def _mask_array(attn_mask, dtype):
    if attn_mask is None:
        return None
    m = attn_mask._array()
    if m.dtype == np.bool_:
        return np.where(m, 0.0, -np.inf).astype(dtype)
    return m.astype(dtype)


def _forward_fill(outs, spec, query, key, value, dropout_p=0.0, is_causal=False, *,
                  attn_mask=None, scale=None):
    out, lse = outs
    q, k, v = _opmath(query), _opmath(key), _opmath(value)
    b, h, n, e = q.shape
    s = k.shape[2]
    scale = 1.0 / math.sqrt(e) if scale is None else scale
    mask = _mask_array(attn_mask, q.dtype)
    group = h // k.shape[1] if k.shape[1] else 1
    rounded = _rounder(query._dtype)
    if out.size == 0:
        return
    with np.errstate(all="ignore"):
        for i, hs in _blocks(b, h, n, s, mask):
            if s == 0:
                np.copyto(out[i, hs], 0)
                np.copyto(lse[i, hs], -np.inf)
                continue
            sc, kv = _scores(q, k, mask, is_causal, scale, i, hs, group)
            top = np.max(sc, axis=-1, keepdims=True)
            dead = np.isneginf(top)           # every key masked: output 0, logsumexp 0
            top = np.where(dead, 0.0, top)
            p = np.exp(sc - top)
            total = np.sum(p, axis=-1, keepdims=True)
            np.copyto(lse[i, hs], np.where(dead, 0.0, np.log(total) + top)[..., 0],
                      casting="unsafe")
            # PyTorch's order: (p @ v) / sum, with p in the input dtype for 16-bit inputs
            # (one key block; longer keys are processed in blocks there, rescaled online).
            o = np.matmul(p if rounded is None else rounded(p), v[i, kv])
            o /= np.where(dead, 1.0, total)
            np.copyto(out[i, hs], o, casting="unsafe")


def _backward_fill(outs, spec, grad_out, query, key, value, out, logsumexp, dropout_p,
                   is_causal, *, attn_mask=None, scale=None):
    gq, gk, gv = outs
    q, k, v = _opmath(query), _opmath(key), _opmath(value)
    do, o = _opmath(grad_out), _opmath(out)
    lse = logsumexp._array().astype(q.dtype)
    b, h, n, e = q.shape
    hk, s = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(e) if scale is None else scale
    mask = _mask_array(attn_mask, q.dtype)
    group = h // hk if hk else 1
    dk = np.zeros(k.shape, dtype=q.dtype)
    dv = np.zeros(v.shape, dtype=q.dtype)
    dq = np.zeros(q.shape, dtype=q.dtype)
    with np.errstate(all="ignore"):
        for i, hs in _blocks(b, h, n, s, mask):
            if s == 0 or n == 0:
                continue
            sc, kv = _scores(q, k, mask, is_causal, scale, i, hs, group)
            p = np.exp(sc - lse[i, hs][..., None])                    # (heads, L, S)
            dp = np.matmul(do[i, hs], np.swapaxes(v[i, kv], -1, -2))
            delta = np.sum(do[i, hs] * o[i, hs], axis=-1, keepdims=True)
            ds = p * (dp - delta)
            dq[i, hs] = np.matmul(ds, k[i, kv]) * scale
            # key/value heads shared by a group of query heads sum their gradients
            gv_part = np.matmul(np.swapaxes(p, -1, -2), do[i, hs])
            gk_part = np.matmul(np.swapaxes(ds, -1, -2), q[i, hs]) * scale
            if group == 1:
                # one query head per key/value head: one addition per element, as np.add.at
                # does (which costs ~100 ns an element)
                dv[i, hs] += gv_part
                dk[i, hs] += gk_part
            elif isinstance(i, slice):  # every batch in one block: np.add.at per batch
                for j in range(b):          # (a (slice, kv) index is slower still)
                    np.add.at(dv[j], kv, gv_part[j])
                    np.add.at(dk[j], kv, gk_part[j])
            else:
                np.add.at(dv[i], kv, gv_part)
                np.add.at(dk[i], kv, gk_part)
    for dst, src in ((gq, dq), (gk, dk), (gv, dv)):
        np.copyto(dst, src, casting="unsafe")


register_rule(ops._scaled_dot_product_flash_attention_for_cpu, _forward_rule, _forward_fill)
register_rule(ops._scaled_dot_product_flash_attention_for_cpu_backward, _backward_rule,
              _backward_fill)
