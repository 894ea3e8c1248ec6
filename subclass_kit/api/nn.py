"""``sk.nn.functional``: the functional layers the model zoo needs, with PyTorch's signatures.

``linear``, ``layer_norm``, ``embedding``, ``softmax``/``log_softmax`` call the ops of the same
name (composites where PyTorch has them: ``linear`` -> ``t, addmm``...). ``dropout``,
``scaled_dot_product_attention`` and ``rms_norm`` are written here with ``sk.ops`` the way
PyTorch's reference implementations are, so they run on meta tensors and under every mode.

Differences from PyTorch: ``scaled_dot_product_attention`` is the math (reference) version --
PyTorch's CPU dispatch shows one fused ``_scaled_dot_product_flash_attention_for_cpu`` op, we
show ``matmul``'s primitives, ``mul``, ``masked_fill``/``add``, ``_softmax``.
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
    return ops.linear(input, weight, bias)


@public_api
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing ``normalized_shape`` dims (biased variance), then scale by
    ``weight`` and shift by ``bias`` (``native_layer_norm``'s first output)."""
    if isinstance(normalized_shape, int):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple "
                        "of ints, not int")
    return ops.layer_norm(input, list(normalized_shape), weight, bias, eps)


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
        return ops.embedding(weight, input)
    return ops.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


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
    return ops.silu_(input) if inplace else ops.silu(input)


@public_api
def relu(input, inplace=False):
    """``max(x, 0)``; ``inplace`` runs ``relu_``."""
    return ops.relu_(input) if inplace else ops.relu(input)


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
        out = ops.mul(input, ops.full([], 0, dtype=input.dtype, device=input.device))
    else:
        noise = ops.rand(list(input.shape), dtype=input.dtype, device=input.device)
        out = ops.where(ops.lt(noise, 1.0 - p), ops.mul(input, 1.0 / (1.0 - p)), 0.0)
    return ops.copy_(input, out) if inplace else out


def _repeat_heads(t, repeats):
    """``t.repeat_interleave(repeats, dim=-3)`` as expand + reshape (grouped-query attention)."""
    if repeats == 1:
        return t
    sizes = list(t.shape)
    expanded = ops.expand(ops.unsqueeze(t, -3), sizes[:-2] + [repeats] + sizes[-2:])
    return ops.reshape(expanded, sizes[:-3] + [sizes[-3] * repeats] + sizes[-2:])


@public_api
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dims (PyTorch's reference
    implementation). ``attn_mask``: bool (True = keep) or additive float, broadcast to
    ``(..., L, S)``; ``is_causal`` masks the upper triangle; ``scale`` defaults to
    ``1 / sqrt(E)``; ``enable_gqa`` repeats key/value heads to match the query's (dim -3).
    Shapes: ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)`` -> ``(..., L, Ev)``.
    """
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa:
        key = _repeat_heads(key, query.size(-3) // key.size(-3))
        value = _repeat_heads(value, query.size(-3) // value.size(-3))
    attn = ops.mul(ops.matmul(query, ops.transpose(key, -2, -1)), scale_factor)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        keep = ops.tril(ops.full([L, S], True, dtype=dt.bool_, device=query.device))
        attn = ops.masked_fill(attn, ops.logical_not(keep), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is dt.bool_:
            attn = ops.masked_fill(attn, ops.logical_not(attn_mask), float("-inf"))
        else:
            attn = ops.add(attn, attn_mask)
    attn = ops.softmax(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return ops.matmul(attn, value)


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
    x = input if compute is input.dtype else ops._to_copy(input, dtype=compute)
    if eps is None:
        eps = _EPS.get(compute.name, _EPS["float32"])
    dims = [input.ndim - 1 - i for i in range(len(shape))]
    rstd = ops.rsqrt(ops.add_(ops.mean.dim(ops.pow(x, 2), dims, True), eps))
    result = ops.mul(x, rstd)
    if compute is not input.dtype:
        result = ops._to_copy(result, dtype=input.dtype)
    if weight is not None:
        result = ops.mul(result, weight)
    return result
