"""LLaMA-2, LLaMA-3 and Mistral, as in Hugging Face's ``LlamaForCausalLM`` /
``MistralForCausalLM``.

Pre-norm decoder blocks: RMSNorm, attention with rotary position embeddings (RoPE, the
"rotate half" form) and grouped-query attention (``num_key_value_heads`` < heads: each K/V head
serves ``heads / kv_heads`` query heads, repeated as HF's ``repeat_kv`` does), then RMSNorm and
a SwiGLU MLP ``down(silu(gate(x)) * up(x))``. No biases; the LM head is a separate matrix.
Mistral adds a sliding-window causal mask. The softmax runs in the model dtype (HF upcasts to
float32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import subclass_kit as sk

from . import nn

__all__ = ["LlamaConfig", "LlamaForCausalLM", "CONFIGS"]


@dataclass(frozen=True)
class LlamaConfig:
    """Hugging Face ``LlamaConfig`` / ``MistralConfig`` field names."""

    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int = 32
    vocab_size: int = 32000
    max_position_embeddings: int = 4096
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    sliding_window: int | None = None


CONFIGS = {
    "llama-2-7b": LlamaConfig(),
    "llama-2-13b": LlamaConfig(hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                               num_attention_heads=40, num_key_value_heads=40),
    "llama-2-70b": LlamaConfig(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                               num_attention_heads=64, num_key_value_heads=8),
    "llama-3-8b": LlamaConfig(intermediate_size=14336, num_key_value_heads=8, vocab_size=128256,
                              max_position_embeddings=8192, rope_theta=500000.0),
    "mistral-7b": LlamaConfig(intermediate_size=14336, num_key_value_heads=8,
                              max_position_embeddings=32768, sliding_window=4096),
}


class RotaryEmbedding(nn.Module):
    """cos and sin tables (seq, head_dim) for the positions 0..seq-1 (no parameters)."""

    def __init__(self, cfg: LlamaConfig):
        self.head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.theta = cfg.rope_theta

    def forward(self, ids, dtype):
        half = self.head_dim // 2
        dev = ids.device
        # inv_freq[i] = theta ** (-2i / head_dim), computed as exp for float32 accuracy.
        steps = sk.arange(half, dtype=sk.float32, device=dev)
        inv_freq = (steps * (-2.0 * math.log(self.theta) / self.head_dim)).exp()
        positions = sk.arange(ids.shape[1], dtype=sk.float32, device=dev)
        freqs = positions.unsqueeze(1) * inv_freq.unsqueeze(0)
        angles = sk.cat([freqs, freqs], dim=-1)
        return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return sk.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin):
    """Rotate (batch, heads, seq, head_dim) by the position angles."""
    return x * cos + rotate_half(x) * sin


def repeat_kv(x, n_rep):
    """(batch, kv_heads, seq, d) -> (batch, kv_heads * n_rep, seq, d), as HF's ``repeat_kv``."""
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x.unsqueeze(2).expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class LlamaAttention(nn.Module):
    def __init__(self, cfg: LlamaConfig, dtype, device):
        d, heads, kv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        head_dim = d // heads
        self.q_proj = nn.Linear(d, heads * head_dim, bias=False, dtype=dtype, device=device)
        self.k_proj = nn.Linear(d, kv * head_dim, bias=False, dtype=dtype, device=device)
        self.v_proj = nn.Linear(d, kv * head_dim, bias=False, dtype=dtype, device=device)
        self.o_proj = nn.Linear(heads * head_dim, d, bias=False, dtype=dtype, device=device)
        self.heads, self.kv_heads = heads, kv

    def forward(self, x, cos, sin, mask):
        q = apply_rope(nn.split_heads(self.q_proj(x), self.heads), cos, sin)
        k = apply_rope(nn.split_heads(self.k_proj(x), self.kv_heads), cos, sin)
        v = nn.split_heads(self.v_proj(x), self.kv_heads)
        n_rep = self.heads // self.kv_heads
        out = nn.attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), mask)
        return self.o_proj(nn.merge_heads(out))


class LlamaMLP(nn.Module):
    """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``."""

    def __init__(self, cfg: LlamaConfig, dtype, device):
        d, inner = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = nn.Linear(d, inner, bias=False, dtype=dtype, device=device)
        self.up_proj = nn.Linear(d, inner, bias=False, dtype=dtype, device=device)
        self.down_proj = nn.Linear(inner, d, bias=False, dtype=dtype, device=device)

    def forward(self, x):
        return self.down_proj(sk.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig, dtype, device):
        eps = cfg.rms_norm_eps
        self.input_layernorm = nn.RMSNorm(cfg.hidden_size, eps, dtype=dtype, device=device)
        self.self_attn = LlamaAttention(cfg, dtype, device)
        self.post_attention_layernorm = nn.RMSNorm(cfg.hidden_size, eps, dtype=dtype,
                                                   device=device)
        self.mlp = LlamaMLP(cfg, dtype, device)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaForCausalLM(nn.Module):
    """Token ids (batch, seq) int64 -> logits (batch, seq, vocab_size)."""

    def __init__(self, cfg: LlamaConfig, *, dtype=None, device="meta"):
        self.config = cfg
        d = cfg.hidden_size
        self.embed_tokens = nn.Embedding(cfg.vocab_size, d, dtype=dtype, device=device)
        self.rotary_emb = RotaryEmbedding(cfg)
        self.layers = nn.ModuleList(LlamaDecoderLayer(cfg, dtype, device)
                                    for _ in range(cfg.num_hidden_layers))
        self.norm = nn.RMSNorm(d, cfg.rms_norm_eps, dtype=dtype, device=device)
        self.lm_head = nn.Linear(d, cfg.vocab_size, bias=False, dtype=dtype, device=device)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        cos, sin = self.rotary_emb(ids, x.dtype)
        mask = nn.causal_mask(ids.shape[1], dtype=x.dtype, device=x.device,
                              window=self.config.sliding_window)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))

    def example_inputs(self, batch=1, seq=None, device="meta"):
        """``(ids,)``: int64 token ids of shape (batch, seq). RoPE has no learned positions,
        so any ``seq`` runs (quality beyond ``max_position_embeddings`` is another matter)."""
        return (nn.token_ids(self.config.vocab_size, batch, seq, device),)
