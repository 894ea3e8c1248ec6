"""Mixtral's sparse mixture-of-experts MLP, as Hugging Face's ``MixtralSparseMoeBlock`` (the
checkpoint names: ``block_sparse_moe.gate.weight``, ``block_sparse_moe.experts.3.w1.weight``).

A router (``gate``, a bias-free Linear to ``num_local_experts`` logits) picks the top
``num_experts_per_tok`` experts per token; their softmax weights, renormalised to sum to 1, mix
the outputs of those experts (each a SwiGLU MLP ``w2(silu(w1(x)) * w3(x))``).

Routing on the meta device (Note [Uniform routing on meta]): which tokens an expert receives
depends on the data, which meta tensors do not have. The meta forward therefore runs the same
program with each expert receiving ``ceil(tokens * k / E)`` rows, the load of a perfectly
balanced router: the shapes, op stream and memory of a typical step, not of one particular
batch (a real, unbalanced batch gives some experts more rows and others fewer).
"""

from __future__ import annotations

import math

import subclass_kit as sk
from subclass_kit.nn import functional as F
from subclass_kit.nn.containers import ModuleList
from subclass_kit.nn.layers import Linear
from subclass_kit.nn.module import Module

from . import nn
from .config import DecoderConfig

__all__ = ["MixtralBlockSparseTop2MLP", "MixtralSparseMoeBlock", "active_parameters"]


class MixtralBlockSparseTop2MLP(Module):
    """One expert: ``w2(act(w1(x)) * w3(x))`` (w1 = gate, w3 = up, w2 = down)."""

    def __init__(self, cfg: DecoderConfig, kw: dict):
        super().__init__()
        d, inner = cfg.hidden_size, cfg.intermediate_size
        self.w1 = Linear(d, inner, bias=False, **kw)
        self.w2 = Linear(inner, d, bias=False, **kw)
        self.w3 = Linear(d, inner, bias=False, **kw)
        self.act_fn = nn.activation(cfg.activation)

    def forward(self, x):
        return self.w2(self.act_fn(self.w1(x)) * self.w3(x))


class MixtralSparseMoeBlock(Module):
    """(batch, seq, hidden) -> (batch, seq, hidden): each token through its top-``top_k``
    experts, weighted by the renormalised router probabilities."""

    def __init__(self, cfg: DecoderConfig, kw: dict):
        super().__init__()
        self.num_experts = cfg.num_local_experts
        self.top_k = cfg.num_experts_per_tok
        self.gate = Linear(cfg.hidden_size, self.num_experts, bias=False, **kw)
        self.experts = ModuleList(MixtralBlockSparseTop2MLP(cfg, kw)
                                  for _ in range(self.num_experts))

    def forward(self, x):
        b, s, d = x.shape
        flat = x.view(-1, d)
        tokens = flat.shape[0]
        router_logits = self.gate(flat)                                   # (tokens, E)
        weights = F.softmax(router_logits, dim=1, dtype=sk.float32)
        weights, selected = weights.topk(self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = sk.zeros((tokens, d), dtype=x.dtype, device=x.device)
        meta = x.device.type == "meta"
        if meta:
            # Note [Uniform routing on meta] (module docstring)
            rows = math.ceil(tokens * self.top_k / self.num_experts)
        else:
            expert_mask = F.one_hot(selected, num_classes=self.num_experts).permute(2, 1, 0)
        for e, expert in enumerate(self.experts):
            if meta:
                slot = sk.empty(rows, dtype=sk.int64, device=x.device)
                token = sk.empty(rows, dtype=sk.int64, device=x.device)
            else:
                slot, token = sk.where(expert_mask[e])
            y = expert(flat[token]) * weights[token, slot, None]
            out.index_add_(0, token, y.to(x.dtype))
        return out.view(b, s, d)


def active_parameters(model: Module) -> int | None:
    """Parameters one token uses: every parameter outside the experts of sparse MoE blocks,
    plus, for each such block, its ``top_k`` largest experts. Counted over the module tree
    (tied tensors once); None for a model without a MoE block (dense: all are active)."""
    moe = [m for m in model.modules() if isinstance(getattr(m, "experts", None), ModuleList)
           and isinstance(getattr(m, "top_k", None), int)]
    if not moe:
        return None
    expert_ids = {id(p) for m in moe for p in m.experts.parameters()}
    total = sum(p.numel() for p in model.parameters() if id(p) not in expert_ids)
    for m in moe:
        sizes = sorted(sum(p.numel() for p in e.parameters()) for e in m.experts)
        total += sum(sizes[len(sizes) - m.top_k:])
    return total
