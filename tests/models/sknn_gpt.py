"""A user model function for ``subclass-kit shapes`` built on ``sk.nn`` (parameters requiring
grad), used by tests/test_sizing_flops.py: the small GPT of ``examples/train_char_gpt.py``
(``make_gpt``: token + position embeddings, pre-norm blocks with causal
``F.scaled_dot_product_attention``, GELU MLP, LM head), and its ``torch.nn`` twin for the
oracle (``build_torch``)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
from train_char_gpt import make_gpt  # noqa: E402

CONFIG = {"vocab": 96, "width": 32, "heads": 4, "layers": 2, "block": 64}


def build(batch=1, seq=16, dtype=None, device="meta", kv_heads=None):
    """The sk.nn GPT moved to ``device`` and int64 token ids (batch, seq)."""
    import subclass_kit as sk
    model = make_gpt(sk.nn, sk.nn.functional, kv_heads=kv_heads, **CONFIG).to(device)
    if dtype is not None:
        model = model.to(dtype)
    return model, (sk.zeros(batch, seq, dtype=sk.int64, device=device),)


def build_gqa(batch=1, seq=16, dtype=None, device="meta"):
    """The same GPT with 2 key/value heads for 4 query heads."""
    return build(batch=batch, seq=seq, dtype=dtype, device=device, kv_heads=2)


def build_torch(kv_heads=None):
    import torch
    return make_gpt(torch.nn, torch.nn.functional, kv_heads=kv_heads, **CONFIG)
