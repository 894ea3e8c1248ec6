"""What the zoo's models need beyond ``sk.nn``: Hugging Face's ``Conv1D`` and activation names,
attention in its two implementations, causal masks, the per-block report rows and example
token ids.

The models themselves are ``sk.nn.Module`` trees (``sk.nn.Linear``, ``Embedding``,
``LayerNorm``, ``RMSNorm``, ``ModuleList``...); nothing here is a second module system.

    >>> import subclass_kit as sk
    >>> from subclass_kit import zoo
    >>> model = zoo.get_model("gpt2", n_layer=2)
    >>> [name for name, _ in zoo.blocks(model)]
    ['transformer.wte', 'transformer.wpe', 'transformer.h.0', 'transformer.h.1', 'transformer.ln_f', 'lm_head']
"""

from __future__ import annotations

import math

import subclass_kit as sk
from subclass_kit.nn import functional as F
from subclass_kit.nn.containers import ModuleList
from subclass_kit.nn.module import Module
from subclass_kit.nn.parameter import Parameter

__all__ = ["Conv1D", "activation", "blocks", "split_heads", "merge_heads", "repeat_kv",
           "attention", "causal_mask", "token_ids", "DEFAULT_SEQ"]


class Conv1D(Module):
    """Hugging Face's ``Conv1D`` (GPT-2's projections): ``y = bias + x @ weight`` with
    ``weight`` of shape (in_features, out_features), computed as one ``addmm`` as there.
    Not a PyTorch layer (it is ``Linear`` with the weight transposed), so it lives here."""

    def __init__(self, out_features: int, in_features: int, device=None, dtype=None):
        super().__init__()
        self.nf = out_features
        self.weight = Parameter(sk.empty((in_features, out_features), device=device,
                                         dtype=dtype))
        self.bias = Parameter(sk.zeros(out_features, device=device, dtype=dtype))
        if self.weight.device.type != "meta":
            sk.nn.init.normal_(self.weight, std=0.02)     # Hugging Face's initializer_range

    def forward(self, x):
        size_out = x.shape[:-1] + (self.nf,)
        x = sk.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight)
        return x.view(size_out)

    def extra_repr(self) -> str:
        return f"nf={self.nf}, nx={self.weight.shape[0]}"


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# Hugging Face's ACT2FN names -> the function (gelu_new / gelu_pytorch_tanh are the same tanh
# approximation up to rounding).
_ACTIVATIONS = {"silu": F.silu, "swish": F.silu, "gelu": F.gelu, "relu": F.relu,
                "gelu_new": _gelu_tanh, "gelu_pytorch_tanh": _gelu_tanh,
                "gelu_fast": _gelu_tanh, "tanh": sk.tanh}


def activation(name: str):
    """The function of Hugging Face activation ``name``; ValueError lists the known names."""
    fn = _ACTIVATIONS.get(name)
    if fn is None:
        raise ValueError(f"unsupported activation {name!r}; supported: "
                         f"{', '.join(sorted(_ACTIVATIONS))}")
    return fn


def _holds_layer_list(module: Module) -> bool:
    return any(isinstance(c, ModuleList) or _holds_layer_list(c) for c in module.children())


def blocks(model: Module, prefix: str = ""):
    """The rows of a per-block report: ``(name, module)`` for each child of ``model``, where a
    ``ModuleList`` expands into its items (``model.layers.0``...) and a child holding a
    ``ModuleList`` somewhere below (the base model of a ``*ForCausalLM``, BERT's ``encoder``)
    expands into its own children. A module reachable twice is one row."""
    for name, child in model.named_children():
        if isinstance(child, ModuleList):
            for i, item in child.named_children():
                yield f"{prefix}{name}.{i}", item
        elif _holds_layer_list(child):
            yield from blocks(child, f"{prefix}{name}.")
        else:
            yield prefix + name, child


# -- attention ---------------------------------------------------------------------------------
def split_heads(x, n_heads: int, head_dim: int | None = None):
    """(batch, seq, n_heads * head_dim) -> (batch, n_heads, seq, head_dim), a view."""
    b, s, d = x.shape
    return x.view(b, s, n_heads, head_dim or d // n_heads).transpose(1, 2)


def merge_heads(x):
    """(batch, n_heads, seq, head_dim) -> (batch, seq, n_heads * head_dim) (copies)."""
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, h * d)


def repeat_kv(x, n_rep: int):
    """(batch, kv_heads, seq, d) -> (batch, kv_heads * n_rep, seq, d), Hugging Face's
    ``repeat_kv`` (an expand, then a copy)."""
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x.unsqueeze(2).expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


def attention(q, k, v, mask=None, *, causal: bool = False, implementation: str = "sdpa"):
    """Multi-head attention ``softmax(q @ k^T / sqrt(head_dim) + mask) @ v`` as Hugging Face's
    ``config._attn_implementation`` runs it.

    q: (batch, heads, seq_q, head_dim); k, v: (batch, kv_heads, seq_k, head_dim) with
    ``heads`` a multiple of ``kv_heads`` (grouped-query attention). ``mask``: None, or a
    boolean (seq_q, seq_k) tensor, True where a key may be attended (``causal_mask``).
    ``causal`` without a mask: the plain causal mask.

    - "sdpa": one ``sk.nn.functional.scaled_dot_product_attention`` call (``is_causal`` or the
      mask, ``enable_gqa``), the op a fused kernel implements on GPUs.
    - "eager": explicit scores, an additive mask, softmax in float32 (Hugging Face upcasts),
      then ``@ v``; K/V heads repeated with ``repeat_kv``. Holds the (seq_q, seq_k) scores.
    """
    if implementation == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              is_causal=causal and mask is None,
                                              enable_gqa=k.shape[1] != q.shape[1])
    n_rep = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is None and causal:
        mask = causal_mask(q.shape[-2], device=q.device)
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    probs = F.softmax(scores, -1, dtype=sk.float32).to(q.dtype)
    return probs @ v


def causal_mask(seq: int, *, device, window: int | None = None):
    """Boolean (seq, seq) mask, True where query i may attend key j: ``j <= i`` and, with a
    sliding ``window`` (Mistral), ``i - j < window``."""
    keep = sk.ones((seq, seq), dtype=sk.bool, device=device).tril()
    if window is not None and seq > window:
        keep = keep.triu(-(window - 1))
    return keep


# -- example inputs ------------------------------------------------------------------------------
DEFAULT_SEQ = 128  # tokens per sequence when the caller gives none


def token_ids(vocab_size, batch, seq, device, max_positions=None):
    """Token ids (batch, seq) int64: uninitialised on meta, uniform random on cpu. Raises
    ValueError when ``seq`` exceeds ``max_positions`` (learned position embeddings)."""
    seq = DEFAULT_SEQ if seq is None else seq
    if max_positions is not None and seq > max_positions:
        raise ValueError(f"sequence length {seq} exceeds the model's {max_positions} learned "
                         "positions")
    if sk.device(device).type == "meta":
        return sk.empty((batch, seq), dtype=sk.int64, device=device)
    return sk.randint(0, vocab_size, (batch, seq), device=device)
