"""The LLaMA family of decoders as in Hugging Face's ``LlamaForCausalLM``,
``MistralForCausalLM``, ``MixtralForCausalLM``, ``Qwen2ForCausalLM`` and ``GemmaForCausalLM``,
with their ``state_dict`` names (``model.layers.0.self_attn.q_proj.weight``, ``lm_head.weight``).

Pre-norm decoder layers: RMSNorm, attention with rotary position embeddings (RoPE, the "rotate
half" form) and grouped-query attention (``num_key_value_heads`` K/V heads, each serving
``heads / kv_heads`` query heads), then RMSNorm and a gated MLP ``down(act(gate(x)) * up(x))``
(Mixtral: a sparse mixture of experts, ``mixtral.py``). What differs by ``model_type``:

- mistral / mixtral: a sliding-window causal mask (``sliding_window``); qwen2 only with
  ``use_sliding_window``, on layers from ``max_window_layers`` on.
- qwen2: biases on q/k/v (none on o); llama / gemma: on all four with ``attention_bias``.
- gemma: embeddings scaled by ``sqrt(hidden_size)`` (rounded to the model dtype), RMSNorm
  scaling by ``1 + weight`` in float32 (weight initialised to zeros), tanh GELU, tied LM head.

A sequence longer than ``max_position_embeddings`` runs (RoPE has no position table) and warns
(``UserWarning``), since the model was not trained for it. Dropout is omitted (inference).
"""

from __future__ import annotations

import math
import warnings

import subclass_kit as sk
from subclass_kit.nn import functional as F
from subclass_kit.nn.containers import ModuleList
from subclass_kit.nn.layers import Embedding, Linear, RMSNorm
from subclass_kit.nn.module import Module
from subclass_kit.nn.parameter import Parameter

from . import nn
from .config import DecoderConfig

__all__ = ["LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
           "GemmaForCausalLM", "DecoderModel", "DecoderForCausalLM", "RotaryEmbedding",
           "CLASSES"]


class RotaryEmbedding(Module):
    """cos and sin tables (seq, head_dim) for positions 0..seq-1, in the activations' dtype.

    ``inv_freq[i] = rope_theta ** (-2i / head_dim)`` is a non-persistent float32 buffer (not in
    the ``state_dict``), as Hugging Face's ``LlamaRotaryEmbedding``."""

    def __init__(self, cfg: DecoderConfig, device=None):
        super().__init__()
        half = cfg.head_dim // 2
        steps = sk.arange(half, dtype=sk.float32, device=device)
        # exp of a product rather than a power: float32-accurate for theta up to 1e6
        inv_freq = (steps * (-2.0 * math.log(cfg.rope_theta) / cfg.head_dim)).exp()
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, seq: int):
        positions = sk.arange(seq, dtype=sk.float32, device=x.device)
        freqs = positions.unsqueeze(1) * self.inv_freq.unsqueeze(0)
        angles = sk.cat([freqs, freqs], dim=-1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return sk.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin):
    """Rotate (batch, heads, seq, head_dim) by the position angles."""
    return x * cos + rotate_half(x) * sin


class GemmaRMSNorm(Module):
    """Gemma's RMSNorm: normalise in float32, scale by ``1 + weight`` (weight zeros), cast
    back. Not PyTorch's ``nn.RMSNorm`` (which scales by ``weight``)."""

    def __init__(self, dim: int, eps: float = 1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = Parameter(sk.zeros(dim, device=device, dtype=dtype))

    def forward(self, x):
        out = F.rms_norm(x.float(), (x.shape[-1],), None, self.eps)
        return (out * (1.0 + self.weight.float())).to(x.dtype)


def _norm(cfg: DecoderConfig, kw: dict) -> Module:
    if cfg.model_type == "gemma":
        return GemmaRMSNorm(cfg.hidden_size, cfg.rms_norm_eps, **kw)
    return RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, **kw)


class DecoderAttention(Module):
    """q/k/v/o projections, RoPE on q and k, attention with ``num_key_value_heads`` K/V heads."""

    def __init__(self, cfg: DecoderConfig, layer_idx: int, kw: dict):
        super().__init__()
        d, hd = cfg.hidden_size, cfg.head_dim
        self.heads, self.kv_heads, self.head_dim = (cfg.num_attention_heads,
                                                    cfg.num_key_value_heads, hd)
        qkv_bias = cfg.attention_bias or cfg.model_type == "qwen2"
        self.q_proj = Linear(d, self.heads * hd, bias=qkv_bias, **kw)
        self.k_proj = Linear(d, self.kv_heads * hd, bias=qkv_bias, **kw)
        self.v_proj = Linear(d, self.kv_heads * hd, bias=qkv_bias, **kw)
        self.o_proj = Linear(self.heads * hd, d, bias=cfg.attention_bias, **kw)
        self.sliding_window = cfg.layer_sliding_window(layer_idx)
        self.attn_implementation = cfg.attn_implementation

    def forward(self, x, cos, sin, mask):
        q = apply_rope(nn.split_heads(self.q_proj(x), self.heads, self.head_dim), cos, sin)
        k = apply_rope(nn.split_heads(self.k_proj(x), self.kv_heads, self.head_dim), cos, sin)
        v = nn.split_heads(self.v_proj(x), self.kv_heads, self.head_dim)
        out = nn.attention(q, k, v, mask, causal=True, implementation=self.attn_implementation)
        return self.o_proj(nn.merge_heads(out))


class DecoderMLP(Module):
    """Gated MLP: ``down_proj(act(gate_proj(x)) * up_proj(x))`` (SwiGLU for silu)."""

    def __init__(self, cfg: DecoderConfig, kw: dict):
        super().__init__()
        d, inner = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = Linear(d, inner, bias=cfg.mlp_bias, **kw)
        self.up_proj = Linear(d, inner, bias=cfg.mlp_bias, **kw)
        self.down_proj = Linear(inner, d, bias=cfg.mlp_bias, **kw)
        self.act_fn = nn.activation(cfg.activation)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(Module):
    def __init__(self, cfg: DecoderConfig, layer_idx: int, kw: dict):
        super().__init__()
        self.self_attn = DecoderAttention(cfg, layer_idx, kw)
        if cfg.model_type == "mixtral":
            from .mixtral import MixtralSparseMoeBlock
            self.block_sparse_moe = MixtralSparseMoeBlock(cfg, kw)
        else:
            self.mlp = DecoderMLP(cfg, kw)
        self.input_layernorm = _norm(cfg, kw)
        self.post_attention_layernorm = _norm(cfg, kw)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        h = self.post_attention_layernorm(x)
        mlp = self.mlp if "mlp" in self._modules else self.block_sparse_moe
        return x + mlp(h)


class DecoderModel(Module):
    """The base model (``LlamaModel``...): token ids (batch, seq) -> hidden states
    (batch, seq, hidden_size)."""

    def __init__(self, cfg: DecoderConfig, kw: dict):
        super().__init__()
        self.config = cfg
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.hidden_size, **kw)
        self.layers = ModuleList(DecoderLayer(cfg, i, kw) for i in range(cfg.num_hidden_layers))
        self.norm = _norm(cfg, kw)
        self.rotary_emb = RotaryEmbedding(cfg, device=kw["device"])

    def forward(self, ids):
        cfg = self.config
        seq = ids.shape[1]
        if seq > cfg.max_position_embeddings:
            warnings.warn(f"{cfg_label(cfg)}: sequence length {seq} exceeds "
                          f"max_position_embeddings ({cfg.max_position_embeddings}); RoPE runs "
                          "at any length, but the model was not trained that far",
                          UserWarning, stacklevel=3)
        x = self.embed_tokens(ids)
        if cfg.model_type == "gemma":
            x = x * sk.tensor(cfg.hidden_size ** 0.5, dtype=x.dtype, device=x.device)
        cos, sin = self.rotary_emb(x, seq)
        masks = {}
        for layer in self.layers:
            window = layer.self_attn.sliding_window
            if window not in masks:
                masks[window] = _mask(cfg.attn_implementation, seq, window, x.device)
            x = layer(x, cos, sin, masks[window])
        return self.norm(x)


def _mask(implementation: str, seq: int, window, device):
    """None when ``is_causal`` says it all (sdpa, no effective window), else the boolean
    mask, built once per forward and shared by the layers."""
    if implementation == "sdpa" and (window is None or seq <= window):
        return None
    return nn.causal_mask(seq, device=device, window=window)


def cfg_label(cfg) -> str:
    """How warnings and errors name a model: its zoo name or config path."""
    return getattr(cfg, "name_or_path", None) or cfg.model_type


class DecoderForCausalLM(Module):
    """Token ids (batch, seq) int64 -> logits (batch, seq, vocab_size). ``lm_head.weight`` is
    ``model.embed_tokens.weight`` itself when ``tie_word_embeddings``."""

    def __init__(self, cfg: DecoderConfig, *, dtype=None, device="meta"):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.config = cfg
        self.model = DecoderModel(cfg, kw)
        self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, bias=False, **kw)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids):
        return self.lm_head(self.model(ids))

    def example_inputs(self, batch=1, seq=None, device="meta"):
        """``(ids,)``: int64 token ids of shape (batch, seq), random on cpu. Any ``seq`` is
        accepted; the forward warns past ``max_position_embeddings``."""
        return (nn.token_ids(self.config.vocab_size, batch, seq, device),)


class LlamaForCausalLM(DecoderForCausalLM):
    """LLaMA 2/3 (``model_type`` "llama")."""


class MistralForCausalLM(DecoderForCausalLM):
    """Mistral (sliding-window attention)."""


class MixtralForCausalLM(DecoderForCausalLM):
    """Mixtral (sparse mixture-of-experts MLPs; see ``mixtral.py``)."""


class Qwen2ForCausalLM(DecoderForCausalLM):
    """Qwen2 (q/k/v biases)."""


class GemmaForCausalLM(DecoderForCausalLM):
    """Gemma (scaled embeddings, ``1 + weight`` RMSNorm, tied head)."""


CLASSES = {"llama": LlamaForCausalLM, "mistral": MistralForCausalLM,
           "mixtral": MixtralForCausalLM, "qwen2": Qwen2ForCausalLM, "gemma": GemmaForCausalLM}
