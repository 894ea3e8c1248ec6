"""Vision Transformer ViT-B/16 (Dosovitskiy et al. 2020), as in timm's
``vit_base_patch16_224`` with its 1000-class ImageNet head.

The 16x16 patch embedding is a stride-16 convolution in the checkpoints; here it is the same
computation written as reshape/permute + matmul against the conv-shaped weight (768, 3, 16, 16)
plus bias, so the parameters are exactly the convolution's. Then a class token, learned position
embeddings (197 = 1 + 14 * 14), pre-LayerNorm encoder blocks with a fused qkv projection and a
GELU MLP, a final LayerNorm, and a linear head on the class token.
"""

from __future__ import annotations

from dataclasses import dataclass

import subclass_kit as sk

from . import nn

__all__ = ["ViTConfig", "VisionTransformer", "CONFIGS"]


@dataclass(frozen=True)
class ViTConfig:
    image_size: int = 224
    patch_size: int = 16
    num_channels: int = 3
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    num_classes: int = 1000
    layer_norm_eps: float = 1e-6


CONFIGS = {"vit-b-16": ViTConfig()}


class PatchEmbedding(nn.Module):
    """Images (B, C, H, W) -> (B, 1 + patches, hidden): conv-as-matmul, class token, positions."""

    def __init__(self, cfg: ViTConfig, dtype, device):
        p, c, d = cfg.patch_size, cfg.num_channels, cfg.hidden_size
        grid = cfg.image_size // p
        self.proj_weight = nn.parameter(d, c, p, p, dtype=dtype, device=device)
        self.proj_bias = nn.parameter(d, dtype=dtype, device=device, init="zeros")
        self.cls_token = nn.parameter(1, 1, d, dtype=dtype, device=device)
        self.pos_embed = nn.parameter(1, 1 + grid * grid, d, dtype=dtype, device=device)
        self.patch = p

    def forward(self, images):
        b, c, h, w = images.shape
        p = self.patch
        gh, gw = h // p, w // p
        # (B, C, gh, p, gw, p) -> (B, gh, gw, C, p, p): each patch flattened in the
        # (channel, row, column) order of the conv weight.
        patches = images.view(b, c, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5)
        patches = patches.reshape(b, gh * gw, c * p * p)
        d = self.proj_weight.shape[0]
        x = patches @ self.proj_weight.reshape(d, c * p * p).t() + self.proj_bias
        cls = self.cls_token.expand(b, 1, d)
        return sk.cat([cls, x], dim=1) + self.pos_embed


class ViTAttention(nn.Module):
    def __init__(self, cfg: ViTConfig, dtype, device):
        d = cfg.hidden_size
        self.qkv = nn.Linear(d, 3 * d, dtype=dtype, device=device)
        self.proj = nn.Linear(d, d, dtype=dtype, device=device)
        self.heads = cfg.num_attention_heads

    def forward(self, x):
        q, k, v = self.qkv(x).split(x.shape[-1], dim=-1)
        h = self.heads
        out = nn.attention(nn.split_heads(q, h), nn.split_heads(k, h), nn.split_heads(v, h))
        return self.proj(nn.merge_heads(out))


class ViTMLP(nn.Module):
    def __init__(self, cfg: ViTConfig, dtype, device):
        self.fc1 = nn.Linear(cfg.hidden_size, cfg.intermediate_size, dtype=dtype, device=device)
        self.fc2 = nn.Linear(cfg.intermediate_size, cfg.hidden_size, dtype=dtype, device=device)

    def forward(self, x):
        return self.fc2(sk.gelu(self.fc1(x)))


class ViTBlock(nn.Module):
    def __init__(self, cfg: ViTConfig, dtype, device):
        d, eps = cfg.hidden_size, cfg.layer_norm_eps
        self.norm1 = nn.LayerNorm(d, eps, dtype=dtype, device=device)
        self.attn = ViTAttention(cfg, dtype, device)
        self.norm2 = nn.LayerNorm(d, eps, dtype=dtype, device=device)
        self.mlp = ViTMLP(cfg, dtype, device)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ClassifierHead(nn.Module):
    """Logits from the class token: ``linear(x[:, 0])``."""

    def __init__(self, cfg: ViTConfig, dtype, device):
        self.fc = nn.Linear(cfg.hidden_size, cfg.num_classes, dtype=dtype, device=device)

    def forward(self, x):
        return self.fc(x[:, 0])


class VisionTransformer(nn.Module):
    """Images (batch, 3, 224, 224) -> class logits (batch, num_classes)."""

    def __init__(self, cfg: ViTConfig, *, dtype=None, device="meta"):
        self.config = cfg
        self.patch_embed = PatchEmbedding(cfg, dtype, device)
        self.blocks = nn.ModuleList(ViTBlock(cfg, dtype, device)
                                    for _ in range(cfg.num_hidden_layers))
        self.norm = nn.LayerNorm(cfg.hidden_size, cfg.layer_norm_eps, dtype=dtype, device=device)
        self.head = ClassifierHead(cfg, dtype, device)

    def forward(self, images):
        x = self.patch_embed(images)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))

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
        dtype = self.patch_embed.proj_weight.dtype
        if sk.device(device).type == "meta":
            return (sk.empty(shape, dtype=dtype, device=device),)
        return (sk.randn(shape, dtype=dtype, device=device),)
