"""GPT-2 built from ``torch.nn`` modules, for the meta-device comparison in gpt2_meta.py.

Mirrors ``subclass_kit.zoo.gpt2`` op for op where torch.nn allows: learned token and position
embeddings, pre-LayerNorm blocks, attention written out (q @ k^T * scale + additive causal mask,
softmax, @ v), a GELU (tanh) MLP, final LayerNorm and an LM head tied to the token embedding.
``nn.Linear`` stands in for Hugging Face's Conv1D (the same matmul plus bias). Imported only
when torch is installed.
"""

from __future__ import annotations

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d: int, n_head: int):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.n_head = n_head

    def forward(self, x, mask):
        b, s, d = x.shape
        h = self.n_head
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5) + mask
        out = scores.softmax(-1) @ v
        return self.c_proj(out.transpose(1, 2).reshape(b, s, d))


class Block(nn.Module):
    def __init__(self, d: int, n_head: int, eps: float):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps)
        self.attn = Attention(d, n_head)
        self.ln_2 = nn.LayerNorm(d, eps)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * d, d))

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """Token ids (batch, seq) int64 -> logits (batch, seq, vocab)."""

    def __init__(self, n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_positions=1024,
                 eps=1e-5):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_head, eps) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, eps)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(s, device=ids.device))
        mask = torch.full((s, s), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
        for block in self.h:
            x = block(x, mask)
        return self.ln_f(x) @ self.wte.weight.t()


def build(device="meta", **config) -> GPT2:
    with torch.device(device):
        return GPT2(**config).eval()
