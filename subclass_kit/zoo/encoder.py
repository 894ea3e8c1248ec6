"""The encoder pieces BERT and ViT share: Hugging Face writes ``BertSelfAttention`` /
``ViTSelfAttention``, ``BertIntermediate`` / ``ViTIntermediate`` and ``BertEncoder`` /
``ViTEncoder`` as separate classes, but each pair is one module (same children, same
``state_dict`` names, same computation), so the zoo has one of each.

What differs stays in ``bert.py`` and ``vit.py``: where the LayerNorms sit (BERT normalises
after each residual add, ViT before each sub-block) and so the output modules and the layer.
``cfg`` is a ``BertConfig`` or ``ViTConfig`` (the fields read here have the same names).
"""

from __future__ import annotations

from subclass_kit.nn.containers import ModuleList
from subclass_kit.nn.layers import Linear
from subclass_kit.nn.module import Module

from . import nn

__all__ = ["SelfAttention", "Intermediate", "Encoder"]


class SelfAttention(Module):
    """Bidirectional multi-head attention (no mask): ``query``/``key``/``value`` projections
    (hidden_size -> hidden_size, biases unless ``bias`` is False, as ViT's ``qkv_bias``), then
    ``nn.attention`` in ``cfg.attn_implementation``. (batch, seq, hidden) -> same shape, the
    heads merged but not yet projected (the output module does that)."""

    def __init__(self, cfg, kw: dict, bias: bool = True):
        super().__init__()
        d = cfg.hidden_size
        self.query = Linear(d, d, bias=bias, **kw)
        self.key = Linear(d, d, bias=bias, **kw)
        self.value = Linear(d, d, bias=bias, **kw)
        self.heads = cfg.num_attention_heads
        self.attn_implementation = cfg.attn_implementation

    def forward(self, x):
        h = self.heads
        q, k, v = (nn.split_heads(p(x), h) for p in (self.query, self.key, self.value))
        return nn.merge_heads(nn.attention(q, k, v, implementation=self.attn_implementation))


class Intermediate(Module):
    """The MLP's first half: ``act(dense(x))``, hidden_size -> intermediate_size, ``act`` the
    config's ``hidden_act``."""

    def __init__(self, cfg, kw: dict):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.intermediate_size, **kw)
        self.intermediate_act_fn = nn.activation(cfg.hidden_act)

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class Encoder(Module):
    """``cfg.num_hidden_layers`` layers ``layer_cls(cfg, kw)`` in a ``ModuleList`` named
    ``layer``, run in order."""

    def __init__(self, layer_cls, cfg, kw: dict):
        super().__init__()
        self.layer = ModuleList(layer_cls(cfg, kw) for _ in range(cfg.num_hidden_layers))

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x
