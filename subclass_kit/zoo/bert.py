"""BERT (Devlin et al. 2018) as in Hugging Face's ``BertModel``, pooler included.

Word + position + token-type embeddings and a LayerNorm, then post-LayerNorm encoder layers
(bidirectional multi-head attention, a GELU MLP, residual + LayerNorm after each), then the
pooler: a dense layer with tanh on the first ([CLS]) token. All token types are 0 and there is
no padding mask (every token attends to every token). Dropout is omitted (inference).
"""

from __future__ import annotations

from dataclasses import dataclass

import subclass_kit as sk

from . import nn

__all__ = ["BertConfig", "BertModel", "CONFIGS"]


@dataclass(frozen=True)
class BertConfig:
    """Hugging Face ``BertConfig`` field names."""

    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    vocab_size: int = 30522
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12


CONFIGS = {"bert-base-uncased": BertConfig()}


class BertEmbeddings(nn.Module):
    def __init__(self, cfg: BertConfig, dtype, device):
        d = cfg.hidden_size
        self.word_embeddings = nn.Embedding(cfg.vocab_size, d, dtype=dtype, device=device)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, d, dtype=dtype,
                                                device=device)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, d, dtype=dtype,
                                                  device=device)
        self.LayerNorm = nn.LayerNorm(d, cfg.layer_norm_eps, dtype=dtype, device=device)

    def forward(self, ids):
        positions = sk.arange(ids.shape[1], dtype=sk.int64, device=ids.device)
        token_types = sk.zeros(tuple(ids.shape), dtype=sk.int64, device=ids.device)
        x = (self.word_embeddings(ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_types))
        return self.LayerNorm(x)


class BertAttention(nn.Module):
    def __init__(self, cfg: BertConfig, dtype, device):
        d = cfg.hidden_size
        self.query = nn.Linear(d, d, dtype=dtype, device=device)
        self.key = nn.Linear(d, d, dtype=dtype, device=device)
        self.value = nn.Linear(d, d, dtype=dtype, device=device)
        self.dense = nn.Linear(d, d, dtype=dtype, device=device)
        self.LayerNorm = nn.LayerNorm(d, cfg.layer_norm_eps, dtype=dtype, device=device)
        self.heads = cfg.num_attention_heads

    def forward(self, x):
        h = self.heads
        q = nn.split_heads(self.query(x), h)
        k = nn.split_heads(self.key(x), h)
        v = nn.split_heads(self.value(x), h)
        context = nn.merge_heads(nn.attention(q, k, v))
        return self.LayerNorm(self.dense(context) + x)


class BertLayer(nn.Module):
    def __init__(self, cfg: BertConfig, dtype, device):
        d = cfg.hidden_size
        self.attention = BertAttention(cfg, dtype, device)
        self.intermediate = nn.Linear(d, cfg.intermediate_size, dtype=dtype, device=device)
        self.output = nn.Linear(cfg.intermediate_size, d, dtype=dtype, device=device)
        self.LayerNorm = nn.LayerNorm(d, cfg.layer_norm_eps, dtype=dtype, device=device)

    def forward(self, x):
        x = self.attention(x)
        return self.LayerNorm(self.output(sk.gelu(self.intermediate(x))) + x)


class BertPooler(nn.Module):
    """``tanh(dense(x[:, 0]))``: the [CLS] token's summary of the sequence."""

    def __init__(self, cfg: BertConfig, dtype, device):
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size, dtype=dtype, device=device)

    def forward(self, x):
        return self.dense(x[:, 0]).tanh()


class BertModel(nn.Module):
    """Token ids (batch, seq) int64 -> ``(last_hidden_state, pooler_output)`` of shapes
    (batch, seq, hidden_size) and (batch, hidden_size)."""

    def __init__(self, cfg: BertConfig, *, dtype=None, device="meta"):
        self.config = cfg
        self.embeddings = BertEmbeddings(cfg, dtype, device)
        self.layer = nn.ModuleList(BertLayer(cfg, dtype, device)
                                   for _ in range(cfg.num_hidden_layers))
        self.pooler = BertPooler(cfg, dtype, device)

    def forward(self, ids):
        x = self.embeddings(ids)
        for layer in self.layer:
            x = layer(x)
        return x, self.pooler(x)

    def example_inputs(self, batch=1, seq=None, device="meta"):
        """``(ids,)``: int64 token ids of shape (batch, seq). Raises ValueError when ``seq``
        exceeds ``max_position_embeddings``."""
        cfg = self.config
        return (nn.token_ids(cfg.vocab_size, batch, seq, device, cfg.max_position_embeddings),)
