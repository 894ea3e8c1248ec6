"""BERT (Devlin et al. 2018) as Hugging Face's ``BertModel``, pooler included, with its
``state_dict`` names (``encoder.layer.0.attention.self.query.weight``, ``pooler.dense.weight``).

Word + position + token-type embeddings and a LayerNorm, then post-LayerNorm encoder layers
(bidirectional multi-head attention, a GELU MLP, residual + LayerNorm after each), then the
pooler: a dense layer with tanh on the first ([CLS]) token. All token types are 0 and there is
no padding mask (every token attends to every token). Dropout is omitted (inference).
"""

from __future__ import annotations

import subclass_kit as sk
from subclass_kit.nn.layers import Embedding, LayerNorm, Linear
from subclass_kit.nn.module import Module

from . import nn
from .config import BertConfig
from .encoder import Encoder, Intermediate, SelfAttention

__all__ = ["BertModel"]


class BertEmbeddings(Module):
    def __init__(self, cfg: BertConfig, kw: dict):
        super().__init__()
        d = cfg.hidden_size
        self.word_embeddings = Embedding(cfg.vocab_size, d, **kw)
        self.position_embeddings = Embedding(cfg.max_position_embeddings, d, **kw)
        self.token_type_embeddings = Embedding(cfg.type_vocab_size, d, **kw)
        self.LayerNorm = LayerNorm(d, eps=cfg.layer_norm_eps, **kw)

    def forward(self, ids):
        positions = sk.arange(ids.shape[1], dtype=sk.int64, device=ids.device)
        token_types = sk.zeros(tuple(ids.shape), dtype=sk.int64, device=ids.device)
        x = (self.word_embeddings(ids) + self.token_type_embeddings(token_types)
             + self.position_embeddings(positions))
        return self.LayerNorm(x)


class BertSelfOutput(Module):
    """``LayerNorm(dense(x) + residual)`` (also ``BertOutput``'s shape, with other sizes)."""

    def __init__(self, d_in: int, cfg: BertConfig, kw: dict):
        super().__init__()
        self.dense = Linear(d_in, cfg.hidden_size, **kw)
        self.LayerNorm = LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps, **kw)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class BertAttention(Module):
    def __init__(self, cfg: BertConfig, kw: dict):
        super().__init__()
        self.self = SelfAttention(cfg, kw)
        self.output = BertSelfOutput(cfg.hidden_size, cfg, kw)

    def forward(self, x):
        return self.output(self.self(x), x)


class BertLayer(Module):
    def __init__(self, cfg: BertConfig, kw: dict):
        super().__init__()
        self.attention = BertAttention(cfg, kw)
        self.intermediate = Intermediate(cfg, kw)
        self.output = BertSelfOutput(cfg.intermediate_size, cfg, kw)

    def forward(self, x):
        x = self.attention(x)
        return self.output(self.intermediate(x), x)


class BertPooler(Module):
    """``tanh(dense(x[:, 0]))``: the [CLS] token's summary of the sequence."""

    def __init__(self, cfg: BertConfig, kw: dict):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, **kw)

    def forward(self, x):
        return self.dense(x[:, 0]).tanh()


class BertModel(nn.PreTrainedModel):
    """Token ids (batch, seq) int64 -> ``(last_hidden_state, pooler_output)`` of shapes
    (batch, seq, hidden_size) and (batch, hidden_size)."""

    def __init__(self, cfg: BertConfig, *, dtype=None, device="meta"):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.config = cfg
        self.embeddings = BertEmbeddings(cfg, kw)
        self.encoder = Encoder(BertLayer, cfg, kw)
        self.pooler = BertPooler(cfg, kw)

    def forward(self, ids):
        x = self.encoder(self.embeddings(ids))
        return x, self.pooler(x)

    def example_inputs(self, batch=1, seq=None, device="meta"):
        """``(ids,)``: int64 token ids of shape (batch, seq). Raises ValueError when ``seq``
        exceeds ``max_position_embeddings``."""
        cfg = self.config
        return (nn.token_ids(cfg.vocab_size, batch, seq, device, cfg.max_position_embeddings),)
