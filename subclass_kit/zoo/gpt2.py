"""GPT-2 (Radford et al. 2019) as in Hugging Face's ``GPT2LMHeadModel``.

Learned token and position embeddings, pre-LayerNorm blocks of causal multi-head attention and
a GELU (tanh approximation) MLP, a final LayerNorm, and an LM head tied to the token embedding
(one tensor, counted once). Projections are ``Conv1D`` (weight stored as (in, out)), as in the
released checkpoints. Dropout is omitted (inference).
"""

from __future__ import annotations

from dataclasses import dataclass

import subclass_kit as sk

from . import nn

__all__ = ["GPT2Config", "GPT2LMHeadModel", "CONFIGS"]


@dataclass(frozen=True)
class GPT2Config:
    """Hugging Face ``GPT2Config`` field names."""

    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    vocab_size: int = 50257
    n_positions: int = 1024
    layer_norm_epsilon: float = 1e-5


CONFIGS = {
    "gpt2": GPT2Config(),
    "gpt2-medium": GPT2Config(n_layer=24, n_head=16, n_embd=1024),
    "gpt2-large": GPT2Config(n_layer=36, n_head=20, n_embd=1280),
    "gpt2-xl": GPT2Config(n_layer=48, n_head=25, n_embd=1600),
}


class GPT2Embeddings(nn.Module):
    """Token embedding ``wte`` plus learned absolute position embedding ``wpe``."""

    def __init__(self, cfg: GPT2Config, dtype, device):
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd, dtype=dtype, device=device)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.n_embd, dtype=dtype, device=device)

    def forward(self, ids):
        positions = sk.arange(ids.shape[1], dtype=sk.int64, device=ids.device)
        return self.wte(ids) + self.wpe(positions)


class GPT2Attention(nn.Module):
    def __init__(self, cfg: GPT2Config, dtype, device):
        self.c_attn = nn.Conv1D(cfg.n_embd, 3 * cfg.n_embd, dtype=dtype, device=device)
        self.c_proj = nn.Conv1D(cfg.n_embd, cfg.n_embd, dtype=dtype, device=device)
        self.n_head = cfg.n_head

    def forward(self, x, mask):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=2)
        h = self.n_head
        out = nn.attention(nn.split_heads(q, h), nn.split_heads(k, h), nn.split_heads(v, h),
                           mask)
        return self.c_proj(nn.merge_heads(out))


class GPT2MLP(nn.Module):
    def __init__(self, cfg: GPT2Config, dtype, device):
        self.c_fc = nn.Conv1D(cfg.n_embd, 4 * cfg.n_embd, dtype=dtype, device=device)
        self.c_proj = nn.Conv1D(4 * cfg.n_embd, cfg.n_embd, dtype=dtype, device=device)

    def forward(self, x):
        return self.c_proj(sk.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    def __init__(self, cfg: GPT2Config, dtype, device):
        eps = cfg.layer_norm_epsilon
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps, dtype=dtype, device=device)
        self.attn = GPT2Attention(cfg, dtype, device)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps, dtype=dtype, device=device)
        self.mlp = GPT2MLP(cfg, dtype, device)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class TiedLMHead(nn.Module):
    """Logits from the token embedding matrix itself (``lm_head.weight is wte.weight``)."""

    def __init__(self, weight):
        self.weight = weight

    def forward(self, x):
        return x @ self.weight.t()


class GPT2LMHeadModel(nn.Module):
    """Token ids (batch, seq) int64 -> logits (batch, seq, vocab_size)."""

    def __init__(self, cfg: GPT2Config, *, dtype=None, device="meta"):
        self.config = cfg
        self.embed = GPT2Embeddings(cfg, dtype, device)
        self.h = nn.ModuleList(GPT2Block(cfg, dtype, device) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, cfg.layer_norm_epsilon, dtype=dtype, device=device)
        self.lm_head = TiedLMHead(self.embed.wte.weight)

    def forward(self, ids):
        x = self.embed(ids)
        mask = nn.causal_mask(ids.shape[1], dtype=x.dtype, device=x.device)
        for block in self.h:
            x = block(x, mask)
        return self.lm_head(self.ln_f(x))

    def example_inputs(self, batch=1, seq=None, device="meta"):
        """``(ids,)``: int64 token ids of shape (batch, seq); random ids on cpu.

        Raises ValueError when ``seq`` exceeds the learned positions (``n_positions``)."""
        return (nn.token_ids(self.config.vocab_size, batch, seq, device, self.config.n_positions),)

