"""GPT-2 (Radford et al. 2019) as Hugging Face's ``GPT2LMHeadModel``, with its ``state_dict``
names (``transformer.h.0.attn.c_attn.weight``, ``lm_head.weight``).

Learned token and position embeddings, pre-LayerNorm blocks of causal multi-head attention and
an MLP (``activation_function``, the tanh GELU "gelu_new" in the released models), a final
LayerNorm, and an LM head tied to the token embedding (one tensor, counted once). Projections
are Hugging Face's ``Conv1D`` (weight stored as (in, out)). Dropout is omitted (inference).
"""

from __future__ import annotations

import subclass_kit as sk
from subclass_kit.nn.containers import ModuleList
from subclass_kit.nn.layers import Embedding, LayerNorm, Linear
from subclass_kit.nn.module import Module

from . import nn
from .config import GPT2Config

__all__ = ["GPT2LMHeadModel", "GPT2Model"]


class GPT2Attention(Module):
    def __init__(self, cfg: GPT2Config, kw: dict):
        super().__init__()
        d = cfg.n_embd
        self.c_attn = nn.Conv1D(3 * d, d, **kw)
        self.c_proj = nn.Conv1D(d, d, **kw)
        self.n_head = cfg.n_head
        self.attn_implementation = cfg.attn_implementation

    def forward(self, x, mask):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=2)
        h = self.n_head
        out = nn.attention(nn.split_heads(q, h), nn.split_heads(k, h), nn.split_heads(v, h),
                           mask, causal=True, implementation=self.attn_implementation)
        return self.c_proj(nn.merge_heads(out))


class GPT2MLP(Module):
    def __init__(self, cfg: GPT2Config, kw: dict):
        super().__init__()
        inner = cfg.n_inner or 4 * cfg.n_embd
        self.c_fc = nn.Conv1D(inner, cfg.n_embd, **kw)
        self.c_proj = nn.Conv1D(cfg.n_embd, inner, **kw)
        self.act = nn.activation(cfg.activation_function)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(Module):
    def __init__(self, cfg: GPT2Config, kw: dict):
        super().__init__()
        eps = cfg.layer_norm_epsilon
        self.ln_1 = LayerNorm(cfg.n_embd, eps=eps, **kw)
        self.attn = GPT2Attention(cfg, kw)
        self.ln_2 = LayerNorm(cfg.n_embd, eps=eps, **kw)
        self.mlp = GPT2MLP(cfg, kw)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(Module):
    """Token ids (batch, seq) -> hidden states (batch, seq, n_embd)."""

    def __init__(self, cfg: GPT2Config, kw: dict):
        super().__init__()
        self.config = cfg
        self.wte = Embedding(cfg.vocab_size, cfg.n_embd, **kw)
        self.wpe = Embedding(cfg.n_positions, cfg.n_embd, **kw)
        self.h = ModuleList(GPT2Block(cfg, kw) for _ in range(cfg.n_layer))
        self.ln_f = LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon, **kw)

    def forward(self, ids):
        positions = sk.arange(ids.shape[1], dtype=sk.int64, device=ids.device)
        x = self.wte(ids) + self.wpe(positions)
        # sdpa: is_causal; eager: one boolean mask for all blocks
        mask = (None if self.config.attn_implementation == "sdpa"
                else nn.causal_mask(ids.shape[1], device=ids.device))
        for block in self.h:
            x = block(x, mask)
        return self.ln_f(x)


class GPT2LMHeadModel(Module):
    """Token ids (batch, seq) int64 -> logits (batch, seq, vocab_size)."""

    def __init__(self, cfg: GPT2Config, *, dtype=None, device="meta"):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.config = cfg
        self.transformer = GPT2Model(cfg, kw)
        self.lm_head = Linear(cfg.n_embd, cfg.vocab_size, bias=False, **kw)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, ids):
        return self.lm_head(self.transformer(ids))

    def example_inputs(self, batch=1, seq=None, device="meta"):
        """``(ids,)``: int64 token ids of shape (batch, seq); random ids on cpu.

        Raises ValueError when ``seq`` exceeds the learned positions (``n_positions``)."""
        return (nn.token_ids(self.config.vocab_size, batch, seq, device, self.config.n_positions),)
