"""The fused attention of PyTorch's CPU backend: ``_scaled_dot_product_flash_attention_for_cpu``
and its backward op.

``F.scaled_dot_product_attention`` calls the forward when PyTorch's CPU would pick its flash
kernel (``api/nn.py`` says when); the autograd formula calls the backward. One rule per op
(Note [One rule per op]); the layouts are PyTorch's: ``output`` keeps the query's strides
(``empty_like``), ``logsumexp`` is ``(B, H, L)`` laid out as ``(B, L, H)`` transposed, and
the three gradients are ``(B, H, *, E)`` laid out as ``(B, *, H, E)`` transposed.

The fill computes ``scores = q @ k^T * scale + mask`` (causal: the upper triangle ``j > i``
masked, top-left aligned as ``tril``), ``logsumexp`` over the keys and
``output = softmax(scores) @ v``; a query row with every key masked gives output 0 and
logsumexp 0, as PyTorch's kernel does. float16 computes in float32 (``opmath``) and
``logsumexp`` is float32 then; GQA (fewer key/value heads) maps query head ``h`` to key/value
head ``h // (H / H_kv)``, PyTorch's ``repeat_interleave`` order.

Speed: the fills are a fixed sequence of numpy calls, each over every batch and
head at once (per block of at most ``_CHUNK`` score elements, ``_blocks``), on the views
``(B, H_kv, group, L, *)`` that let one key/value head broadcast over its query heads. The
softmax runs in place in the one fresh scores array, and results go straight into the op's
output arrays. The arithmetic per element is that of a per-head loop, so every layout gives
the same bits as one (``_kv_operand`` says the one exception numpy's matmul needs).
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


def _grouped(a: np.ndarray, hk: int) -> np.ndarray:
    """A ``(B, H, ...)`` array as the view ``(B, H_kv, H / H_kv, ...)``: query head ``h`` is
    ``[:, h // group, h % group]``, so a key/value head ``[:, :, None]`` broadcasts over its
    group (PyTorch's ``repeat_interleave`` order) and numpy's matmul loops over no copies.
    A view always (splitting an axis needs no copy): the outputs are written through it."""
    if a.shape[1] == hk:
        return a[:, :, None]
    return np.reshape(a, (a.shape[0], hk, a.shape[1] // hk) + a.shape[2:], copy=False)


def _kv_operand(a: np.ndarray, n: int) -> np.ndarray:
    """Keys or values as a ``(B, H_kv, 1, S, E)`` matmul operand: ``a`` itself when its
    matrices take numpy's general BLAS path (gemm) as they are, else an index copy over the
    heads. numpy picks its routine by shape and strides (a one-row product, a matrix BLAS
    cannot read in place), and the routines' sums differ in the last bits; an index copy
    keeps the results of every layout those of the per-head index copies this kernel made."""
    item, rows, cols = a.itemsize, a.shape[-2], a.shape[-1]
    if not (min(n, rows, cols) > 1 and a.strides[-1] == item
            and a.strides[-2] % item == 0 and a.strides[-2] >= cols * item):
        a = a[:, np.arange(a.shape[1])]
    return a[:, :, None]


def _blocks(b, hk, group, n, s):
    """(batch slice, key/value head slice) blocks of at most ``_CHUNK`` score elements (one
    key/value head's group of query heads at least). Every batch and head in one block when
    they fit: each numpy call then covers the whole op. The blocks partition the key/value
    heads, so the backward writes each gradient element once."""
    if b * hk * group * n * s <= _CHUNK:
        yield slice(None), slice(None)
        return
    per = max(1, _CHUNK // max(1, group * n * s))
    for i in range(b):
        for j in range(0, hk, per):
            yield slice(i, i + 1), slice(j, min(hk, j + per))


def _scores(q, k, mask, is_causal, scale, block):
    """``q @ k^T * scale + mask``, causal: the upper triangle ``j > i`` -inf, for one block
    of the grouped arrays (``_grouped``): a fresh (batches, kv heads, group, L, S) array."""
    sc = np.matmul(q[block], np.swapaxes(k[block], -1, -2))
    sc *= scale
    if mask is not None:
        sc += mask[block]
    if is_causal:
        n, s = sc.shape[-2:]
        # adding 0 / -inf costs a fifth of a masked assignment; it is the assignment unless a
        # masked score is +inf or nan (then nan, which the full max propagates), so only
        # then assign (PyTorch fills the masked scores with -inf whatever they are)
        sc += _causal_bias(n, s, sc.dtype)
        if np.isnan(np.maximum.reduce(sc, axis=None)):
            np.copyto(sc, -np.inf, where=_causal_mask(n, s))
    return sc


# The causal masks of short sequences are kept (at most 16 shapes of up to 2**20 positions:
# 5 MB of masks and biases at worst); longer ones are built per call, not retained.
_CACHED_POSITIONS = 1 << 20


def _causal_mask(n: int, s: int) -> np.ndarray:
    """The (n, s) bool mask of the positions ``is_causal`` masks, ``j > i`` (the complement
    of ``tril``; read-only: may be shared by calls)."""
    return _cached_causal_mask(n, s) if n * s <= _CACHED_POSITIONS else _build_mask(n, s)


def _causal_bias(n: int, s: int, dtype) -> np.ndarray:
    """``_causal_mask`` as an additive (n, s) mask of ``dtype``: -inf masked, 0 elsewhere
    (read-only: may be shared by calls)."""
    return (_cached_causal_bias(n, s, dtype) if n * s <= _CACHED_POSITIONS
            else _build_bias(n, s, dtype))


def _build_mask(n, s):
    m = np.triu(np.ones((n, s), dtype=bool), 1)
    m.flags.writeable = False
    return m


def _build_bias(n, s, dtype):
    m = np.where(_causal_mask(n, s), -np.inf, 0.0).astype(dtype)
    m.flags.writeable = False
    return m


_cached_causal_mask = functools.lru_cache(maxsize=16)(_build_mask)
_cached_causal_bias = functools.lru_cache(maxsize=16)(_build_bias)


def _mask_array(attn_mask, dtype, b, hk, group):
    """The additive mask in ``dtype`` (a bool mask as 0 / -inf) broadcast to the grouped
    ``(B, H_kv, group, L, S)`` view; a 3-D mask is ``(B, L, S)``. None without a mask."""
    if attn_mask is None:
        return None
    m = attn_mask._array()
    m = np.where(m, 0.0, -np.inf).astype(dtype) if m.dtype == np.bool_ else m.astype(dtype)
    if m.ndim == 3:
        m = m[:, None]
    m = np.broadcast_to(m, (b, hk * group) + m.shape[-2:])
    return _grouped(m, hk)


def _forward_fill(outs, spec, query, key, value, dropout_p=0.0, is_causal=False, *,
                  attn_mask=None, scale=None):
    out, lse = outs
    q, k, v = _opmath(query), _opmath(key), _opmath(value)
    b, h, n, e = q.shape
    hk, s = k.shape[1], k.shape[2]
    if out.size == 0:
        return
    if s == 0:
        out.fill(0)
        lse.fill(-np.inf)
        return
    scale = 1.0 / math.sqrt(e) if scale is None else scale
    group = h // hk
    mask = _mask_array(attn_mask, q.dtype, b, hk, group)
    rounded = _rounder(query._dtype)
    q, out, lse = _grouped(q, hk), _grouped(out, hk), _grouped(lse, hk)
    k, v = _kv_operand(k, n), _kv_operand(v, n)
    with np.errstate(all="ignore"):
        for block in _blocks(b, hk, group, n, s):
            p = _scores(q, k, mask, is_causal, scale, block)
            rows = p.reshape(-1, s)           # the row reductions iterate simplest in 2-D
            # short rows: the maxima as an elementwise maximum over the columns of a
            # transposed copy, as a per-row reduction costs numpy an iteration step per
            # row (2x faster at 32 keys, even at 64); with a nan the row reduction, whose
            # nan (sign, payload) is the one the row order propagates
            top = None
            if s < 64:
                top = np.maximum.reduce(np.ascontiguousarray(rows.T), axis=0)[:, None]
            if top is None or np.isnan(top).any():
                top = np.maximum.reduce(rows, axis=-1, keepdims=True)
            dead = top == -np.inf             # every key masked: output 0, logsumexp 0
            dead = dead if dead.any() else None
            if dead is not None:
                top[dead] = 0.0
            np.subtract(rows, top, out=rows)
            np.exp(rows, out=rows)            # the unnormalised probabilities, in place
            total = np.add.reduce(rows, axis=-1, keepdims=True)
            lse_block = np.log(total)
            lse_block += top
            if dead is not None:
                lse_block[dead] = 0.0
                total[dead] = 1.0
            total = total.reshape(p.shape[:-1] + (1,))
            np.copyto(lse[block], lse_block.reshape(p.shape[:-1]), casting="unsafe")
            # PyTorch's order: (p @ v) / sum, with p in the input dtype for 16-bit inputs
            # (one key block; longer keys are processed in blocks there, rescaled online).
            o = np.matmul(p if rounded is None else rounded(p), v[block])
            np.divide(o, total, out=out[block], casting="unsafe")


def _store_group_sum(dst, part):
    """``dst = 0 + part[:, :, 0] + part[:, :, 1] + ...``: the gradient of a key/value head
    summed over its group of query heads in order, into zeros as PyTorch accumulates it (so
    a -0 sum is +0)."""
    if part.shape[2] == 1:
        np.add(part[:, :, 0], 0.0, out=dst, casting="unsafe")
        return
    acc = part[:, :, 0] + 0.0
    for j in range(1, part.shape[2]):
        acc += part[:, :, j]
    np.copyto(dst, acc, casting="unsafe")


def _backward_fill(outs, spec, grad_out, query, key, value, out, logsumexp, dropout_p,
                   is_causal, *, attn_mask=None, scale=None):
    gq, gk, gv = outs
    q, k, v = _opmath(query), _opmath(key), _opmath(value)
    do, o = _opmath(grad_out), _opmath(out)
    b, h, n, e = q.shape
    hk, s = k.shape[1], k.shape[2]
    if 0 in (b, h, n, s):                 # no score: every gradient 0
        for g in outs:
            g.fill(0)
        return
    lse = logsumexp._array().astype(q.dtype, copy=False)
    scale = 1.0 / math.sqrt(e) if scale is None else scale
    group = h // hk
    mask = _mask_array(attn_mask, q.dtype, b, hk, group)
    q, do, o, lse, gq = (_grouped(a, hk) for a in (q, do, o, lse, gq))
    k, v = _kv_operand(k, n), _kv_operand(v, n)
    with np.errstate(all="ignore"):
        for block in _blocks(b, hk, group, n, s):
            p = _scores(q, k, mask, is_causal, scale, block)
            rows = p.reshape(-1, s)           # row broadcasts iterate simplest in 2-D
            np.subtract(rows, lse[block].reshape(-1, 1), out=rows)
            np.exp(rows, out=rows)                                # p: (.., L, S)
            ds = np.matmul(do[block], np.swapaxes(v[block], -1, -2))
            prod = np.multiply(do[block], o[block])
            delta = np.add.reduce(prod.reshape(rows.shape[0], e), axis=-1, keepdims=True)
            ds_rows = ds.reshape(-1, s)
            ds_rows -= delta
            np.multiply(rows, ds_rows, out=ds_rows)   # p * (dp - delta), in place
            np.multiply(np.matmul(ds, k[block]), scale, out=gq[block], casting="unsafe")
            _store_group_sum(gv[block], np.matmul(np.swapaxes(p, -1, -2), do[block]))
            gk_part = np.matmul(np.swapaxes(ds, -1, -2), q[block])
            gk_part *= scale
            _store_group_sum(gk[block], gk_part)


register_rule(ops._scaled_dot_product_flash_attention_for_cpu, _forward_rule, _forward_fill)
register_rule(ops._scaled_dot_product_flash_attention_for_cpu_backward, _backward_rule,
              _backward_fill)
