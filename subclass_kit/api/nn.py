"""``sk.nn.functional``: the functional layers the model zoo needs, with PyTorch's signatures.

``linear``, ``layer_norm``, ``embedding``, ``softmax``/``log_softmax`` call the ops of the same
name (composites where PyTorch has them: ``linear`` -> ``t, addmm``...). ``dropout``,
``scaled_dot_product_attention`` and ``rms_norm`` are written here with ``sk.ops`` the way
PyTorch's reference implementations are, so they run on meta tensors and under every mode.

``scaled_dot_product_attention`` calls PyTorch's fused CPU op
``_scaled_dot_product_flash_attention_for_cpu`` (kernels/attention.py) where PyTorch's CPU
would (``_use_fused``), on meta tensors too, and the math version otherwise. Difference from
PyTorch: on the meta device PyTorch takes the math version; we take the fused op, whose meta
kernel allocates what the CPU kernel does (no score matrix).
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from ..function import public_api
from ..registry import ops
from .linalg import log_softmax as _log_softmax_fn
from .linalg import softmax as _softmax_fn
from .math import gelu as gelu  # noqa: F401  (re-exported: F.gelu is sk.gelu)

__all__ = [
    "dropout",
    "embedding",
    "gelu",
    "layer_norm",
    "linear",
    "log_softmax",
    "relu",
    "rms_norm",
    "scaled_dot_product_attention",
    "silu",
    "softmax",
]

# Machine epsilon of the dtype rms_norm computes in (PyTorch's default ``eps``).
_EPS = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07}


@public_api
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (PyTorch's ``F.linear``): 2-D input with bias lowers to
    ``t, addmm``; contiguous N-d input with a 1-d bias to ``view, t, addmm, view``; else
    ``matmul`` then ``add_``."""
    return ops.linear.default(input, weight, bias)


@public_api
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing ``normalized_shape`` dims (biased variance), then scale by
    ``weight`` and shift by ``bias`` (``native_layer_norm``'s first output)."""
    if isinstance(normalized_shape, int):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple "
                        "of ints, not int")
    return ops.layer_norm.default(input, list(normalized_shape), weight, bias, eps)


@public_api
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of the 2-D ``weight`` at the int64/int32 ``input`` indices: shape
    ``input.shape + (weight.shape[1],)``. Out-of-range indices raise IndexError "index out of
    range in self"; a bad ``padding_idx`` AssertionError "Padding_idx must be within
    num_embeddings". ``max_norm`` (in-place renormalisation) is not supported."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        raise NotImplementedError("embedding(max_norm=...) is not supported")
    if padding_idx == -1 and not scale_grad_by_freq and not sparse:
        return ops.embedding.default(weight, input)
    return ops.embedding.default(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _implicit_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


@public_api
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``sk.softmax`` with PyTorch's ``F.softmax`` signature (``dim=None`` picks a dim and
    warns, as PyTorch does)."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel + 1)
    return _softmax_fn(input, dim, dtype)


@public_api
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``sk.log_softmax`` with PyTorch's ``F.log_softmax`` signature."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel + 1)
    return _log_softmax_fn(input, dim, dtype)


@public_api
def silu(input, inplace=False):
    """``x * sigmoid(x)``; ``inplace`` runs ``silu_``."""
    return ops.silu_.default(input) if inplace else ops.silu.default(input)


@public_api
def relu(input, inplace=False):
    """``max(x, 0)``; ``inplace`` runs ``relu_``."""
    return ops.relu_.default(input) if inplace else ops.relu.default(input)


@public_api
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero elements with probability ``p`` and scale the rest by ``1 / (1 - p)`` when
    ``training``; returns ``input`` itself when not training, ``p == 0`` or ``input`` is empty
    (PyTorch). Shapes are preserved on meta tensors. Raises ValueError for ``p`` outside [0, 1].
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        out = ops.mul.Tensor(input, ops.full.default([], 0, dtype=input.dtype, device=input.device))
    else:
        noise = ops.rand.default(list(input.shape), dtype=input.dtype, device=input.device)
        out = ops.where.self(ops.lt.Tensor(noise, 1.0 - p),
                             ops.mul.Tensor(input, 1.0 / (1.0 - p)), 0.0)
    return ops.copy_.default(input, out) if inplace else out


def _repeat_heads(t, repeats):
    """``t.repeat_interleave(repeats, dim=-3)`` as expand + reshape (grouped-query attention)."""
    if repeats == 1:
        return t
    sizes = list(t.shape)
    expanded = ops.expand.default(ops.unsqueeze.default(t, -3), sizes[:-2] + [repeats] + sizes[-2:])
    return ops.reshape.default(expanded, sizes[:-3] + [sizes[-3] * repeats] + sizes[-2:])


_FUSED_DTYPES = ("float16", "bfloat16", "float32", "float64")
# C++ type names in PyTorch's sdpa input checks (``validate_sdpa_input``)
_CPP_TYPE = {"float32": "float", "float64": "double", "float16": "c10::Half",
             "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
             "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
             "bool": "bool"}


def _validate_sdpa(query, key, value, attn_mask) -> None:
    """PyTorch's ``validate_sdpa_input`` checks of dtypes and ranks (RuntimeError)."""
    names = [_CPP_TYPE.get(t.dtype.name, t.dtype.name) for t in (query, key, value)]
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {names[0]} key.dtype: {names[1]} and value.dtype: "
                           f"{names[2]} instead.")
    if attn_mask is not None and attn_mask.dtype not in (dt.bool_, dt.float32, query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: "
                           f"{_CPP_TYPE.get(attn_mask.dtype.name, attn_mask.dtype.name)} and  "
                           f"query.dtype: {names[0]} instead.")
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: "
                           f"{value.ndim} instead.")


def _use_fused(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether PyTorch's CPU backend runs its flash kernel for this call (its
    ``use_flash_attention_cpp`` checks): 4-d q/k/v of one floating dtype, no dropout, the
    same batch and head counts (fewer key/value heads only with ``enable_gqa``), one head
    dim E for q, k and v, nonzero sizes, unit last-dim strides, and a mask (not requiring
    grad) that is 2-d or 4-d with sizes 1 or the full ones."""
    if not (query.ndim == key.ndim == value.ndim == 4) or dropout_p != 0.0:
        return False
    dtype = query.dtype
    if dtype.name not in _FUSED_DTYPES or key.dtype is not dtype or value.dtype is not dtype:
        return False
    b, h, n, e = query.shape
    kb, kh, s, ke = key.shape
    vb, vh, vs, ve = value.shape
    if not (b == kb == vb and kh == vh and s == vs and e == ke == ve):
        return False
    if h != kh and not (enable_gqa and kh and h % kh == 0):
        return False
    if 0 in (b, h, n, s, e):
        return False
    if not (query.stride(-1) == key.stride(-1) == value.stride(-1) == 1):
        return False
    if attn_mask is None:
        return True
    if attn_mask.requires_grad:
        return False
    m = attn_mask.shape
    if attn_mask.ndim not in (2, 4) or m[-2] not in (n, 1) or m[-1] not in (s, 1):
        return False
    return attn_mask.ndim == 2 or (m[0] in (1, b) and m[1] in (1, h))


@public_api
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dims. ``attn_mask``: bool
    (True = keep) or additive float, broadcast to ``(..., L, S)``; ``is_causal`` masks the
    upper triangle (top-left aligned, as ``tril``); ``scale`` defaults to ``1 / sqrt(E)``;
    ``enable_gqa`` repeats key/value heads to match the query's (dim -3). Shapes:
    ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)`` -> ``(..., L, Ev)``.

    Where PyTorch's CPU backend runs its flash kernel (``_use_fused``) this calls the same
    op, ``_scaled_dot_product_flash_attention_for_cpu`` (a bool mask first becomes an
    additive one, ``where(mask, 0, -inf)``, as PyTorch does), which never materialises the
    ``(L, S)`` scores; else PyTorch's math version (``matmul``, ``mul``, masking,
    ``_softmax``). Raises RuntimeError (PyTorch's texts) for query, key and value of
    different dtypes or of fewer than 2 dims, a mask neither bool, float32 nor the query's
    dtype, and ``attn_mask`` with ``is_causal`` on the math path (the fused op applies both,
    as PyTorch's does).
    """
    _validate_sdpa(query, key, value, attn_mask)
    if _use_fused(query, key, value, attn_mask, dropout_p, enable_gqa):
        if attn_mask is not None and attn_mask.dtype is dt.bool_:
            neg_inf = ops.scalar_tensor.default(float("-inf"), dtype=query.dtype,
                                                device=query.device)
            zero = ops.scalar_tensor.default(0.0, dtype=query.dtype, device=query.device)
            attn_mask = ops.where.self(attn_mask, zero, neg_inf)
        return ops._scaled_dot_product_flash_attention_for_cpu.default(
            query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)[0]
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa:
        key = _repeat_heads(key, query.size(-3) // key.size(-3))
        value = _repeat_heads(value, query.size(-3) // value.size(-3))
    attn = ops.mul.Tensor(ops.matmul.default(query, ops.transpose.int(key, -2, -1)), scale_factor)
    if is_causal:
        keep = ops.tril.default(ops.full.default([L, S], True, dtype=dt.bool_, device=query.device))
        attn = ops.masked_fill.Scalar(attn, ops.logical_not.default(keep), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is dt.bool_:
            attn = ops.masked_fill.Scalar(attn, ops.logical_not.default(attn_mask), float("-inf"))
        else:
            attn = ops.add.Tensor(attn, attn_mask)
    attn = ops.softmax.int(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return ops.matmul.default(attn, value)


@public_api
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x * rsqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight``,
    computed in float32 for float16 and bfloat16 input (PyTorch's composite: ``pow, mean,
    add_, rsqrt, mul``). ``eps`` defaults to the machine epsilon of the compute dtype."""
    if isinstance(normalized_shape, int):
        raise TypeError("rms_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        "ints, not int")
    shape = tuple(normalized_shape)
    sizes = tuple(input.shape)
    if len(sizes) < len(shape) or sizes[len(sizes) - len(shape):] != shape:
        inner = ", ".join(str(s) for s in shape)
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{inner}], but got input of size{list(sizes)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(shape)}")
    compute = dt.float32 if input.dtype in (dt.float16, dt.bfloat16) else input.dtype
    x = input if compute is input.dtype else ops._to_copy.default(input, dtype=compute)
    if eps is None:
        eps = _EPS.get(compute.name, _EPS["float32"])
    dims = [input.ndim - 1 - i for i in range(len(shape))]
    rstd = ops.rsqrt.default(
        ops.add_.Tensor(ops.mean.dim(ops.pow.Tensor_Scalar(x, 2), dims, True), eps))
    result = ops.mul.Tensor(x, rstd)
    if compute is not input.dtype:
        result = ops._to_copy.default(result, dtype=input.dtype)
    if weight is not None:
        result = ops.mul.Tensor(result, weight)
    return result
