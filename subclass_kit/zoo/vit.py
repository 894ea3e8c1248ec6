"""Vision Transformer (Dosovitskiy et al. 2020) as Hugging Face's
``ViTForImageClassification`` (``google/vit-base-patch16-224``), with its ``state_dict`` names
(``vit.embeddings.patch_embeddings.projection.weight``, ``vit.encoder.layer.0.attention.
attention.query.weight``, ``classifier.weight``).

The patch embedding is a stride-``patch_size`` convolution in the checkpoints; here it is the
same computation written as reshape/permute + matmul against the conv-shaped weight
(hidden, channels, patch, patch) plus bias, so the parameters are exactly the convolution's.
Then a class token, learned position embeddings (1 + (image/patch)^2), pre-LayerNorm encoder
layers, a final LayerNorm and a linear classifier on the class token (``num_labels`` classes).
"""

from __future__ import annotations

import subclass_kit as sk
from subclass_kit.nn.layers import LayerNorm, Linear
from subclass_kit.nn.module import Module
from subclass_kit.nn.parameter import Parameter

from . import nn
from .config import ViTConfig
from .encoder import Encoder, Intermediate, SelfAttention

__all__ = ["ViTForImageClassification", "ViTModel"]


class PatchProjection(Module):
    """A ``Conv2d(channels, hidden, kernel_size=patch, stride=patch)`` on images whose sides
    are multiples of ``patch``, computed as a matmul on the non-overlapping patches (the
    project has no convolution op). ``weight`` (hidden, channels, patch, patch), ``bias``."""

    def __init__(self, channels: int, hidden: int, patch: int, kw: dict):
        super().__init__()
        self.patch = patch
        self.weight = Parameter(sk.empty((hidden, channels, patch, patch), **kw))
        self.bias = Parameter(sk.zeros(hidden, **kw))
        if self.weight.device.type != "meta":
            sk.nn.init.normal_(self.weight, std=0.02)

    def forward(self, images):
        b, c, h, w = images.shape
        p = self.patch
        gh, gw = h // p, w // p
        # (B, C, gh, p, gw, p) -> (B, gh, gw, C, p, p): each patch flattened in the
        # (channel, row, column) order of the conv weight.
        patches = images.view(b, c, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5)
        patches = patches.reshape(b, gh * gw, c * p * p)
        d = self.weight.shape[0]
        return patches @ self.weight.reshape(d, c * p * p).t() + self.bias


class ViTPatchEmbeddings(Module):
    def __init__(self, cfg: ViTConfig, kw: dict):
        super().__init__()
        self.projection = PatchProjection(cfg.num_channels, cfg.hidden_size, cfg.patch_size, kw)

    def forward(self, images):
        return self.projection(images)


class ViTEmbeddings(Module):
    """Images (B, C, H, W) -> (B, 1 + patches, hidden): patches, class token, positions."""

    def __init__(self, cfg: ViTConfig, kw: dict):
        super().__init__()
        d = cfg.hidden_size
        grid = cfg.image_size // cfg.patch_size
        self.cls_token = Parameter(sk.empty((1, 1, d), **kw))
        self.patch_embeddings = ViTPatchEmbeddings(cfg, kw)
        self.position_embeddings = Parameter(sk.empty((1, 1 + grid * grid, d), **kw))
        if self.cls_token.device.type != "meta":
            sk.nn.init.trunc_normal_(self.cls_token, std=0.02)
            sk.nn.init.trunc_normal_(self.position_embeddings, std=0.02)

    def forward(self, images):
        x = self.patch_embeddings(images)
        cls = self.cls_token.expand(x.shape[0], 1, x.shape[-1])
        return sk.cat([cls, x], dim=1) + self.position_embeddings


class ViTSelfOutput(Module):
    def __init__(self, cfg: ViTConfig, kw: dict):
        super().__init__()
        self.dense = Linear(cfg.hidden_size, cfg.hidden_size, **kw)

    def forward(self, x):
        return self.dense(x)


class ViTAttention(Module):
    def __init__(self, cfg: ViTConfig, kw: dict):
        super().__init__()
        self.attention = SelfAttention(cfg, kw, bias=cfg.qkv_bias)
        self.output = ViTSelfOutput(cfg, kw)

    def forward(self, x):
        return self.output(self.attention(x))


class ViTOutput(Module):
    """``dense(x) + residual``."""

    def __init__(self, cfg: ViTConfig, kw: dict):
        super().__init__()
        self.dense = Linear(cfg.intermediate_size, cfg.hidden_size, **kw)

    def forward(self, x, residual):
        return self.dense(x) + residual


class ViTLayer(Module):
    def __init__(self, cfg: ViTConfig, kw: dict):
        super().__init__()
        d, eps = cfg.hidden_size, cfg.layer_norm_eps
        self.attention = ViTAttention(cfg, kw)
        self.intermediate = Intermediate(cfg, kw)
        self.output = ViTOutput(cfg, kw)
        self.layernorm_before = LayerNorm(d, eps=eps, **kw)
        self.layernorm_after = LayerNorm(d, eps=eps, **kw)

    def forward(self, x):
        x = self.attention(self.layernorm_before(x)) + x
        return self.output(self.intermediate(self.layernorm_after(x)), x)


class ViTModel(Module):
    """Images -> hidden states (batch, 1 + patches, hidden) (no pooler, as in the classifier)."""

    def __init__(self, cfg: ViTConfig, kw: dict):
        super().__init__()
        self.embeddings = ViTEmbeddings(cfg, kw)
        self.encoder = Encoder(ViTLayer, cfg, kw)
        self.layernorm = LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps, **kw)

    def forward(self, images):
        return self.layernorm(self.encoder(self.embeddings(images)))


class ViTForImageClassification(nn.PreTrainedModel):
    """Images (batch, channels, image_size, image_size) -> logits (batch, num_labels)."""

    def __init__(self, cfg: ViTConfig, *, dtype=None, device="meta"):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.config = cfg
        self.vit = ViTModel(cfg, kw)
        if cfg.num_labels > 0:
            self.classifier = Linear(cfg.hidden_size, cfg.num_labels, **kw)
        else:
            self.classifier = sk.nn.Identity()

    def forward(self, images):
        return self.classifier(self.vit(images)[:, 0, :])

    def example_inputs(self, batch=1, seq=None, device="meta"):
        """``(images,)`` of shape (batch, channels, image_size, image_size) in the parameter
        dtype (random normal on cpu). Raises ValueError if ``seq`` is given: the sequence
        length is fixed by the image size."""
        cfg = self.config
        if seq is not None:
            grid = cfg.image_size // cfg.patch_size
            raise ValueError(f"an image model takes no sequence length: its sequence is "
                             f"1 + {grid}x{grid} patches of a {cfg.image_size}x{cfg.image_size} "
                             "image")
        shape = (batch, cfg.num_channels, cfg.image_size, cfg.image_size)
        dtype = self.vit.embeddings.cls_token.dtype
        if sk.device(device).type == "meta":
            return (sk.empty(shape, dtype=dtype, device=device),)
        return (sk.randn(shape, dtype=dtype, device=device),)
