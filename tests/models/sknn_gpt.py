"""A user model function for ``subclass-kit shapes`` built on ``sk.nn`` (parameters requiring
grad), used by tests/test_sizing_flops.py: a small GPT (token + position embeddings, pre-norm
blocks with causal ``F.scaled_dot_product_attention``, GELU MLP, tied LM head), and its
``torch.nn`` twin for the oracle (``build_torch``)."""


def _define(lib, vocab, dim, heads, layers, max_seq, kv_heads=None):
    nn, F = lib.nn, lib.nn.functional
    kv_heads = kv_heads or heads
    hd = dim // heads

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(dim, dim)
            self.kv = nn.Linear(dim, 2 * kv_heads * hd)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            b, s, _ = x.shape
            q = self.q(x).view(b, s, heads, hd).transpose(1, 2)
            k, v = self.kv(x).view(b, s, 2, kv_heads, hd).unbind(2)
            y = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True, enable_gqa=kv_heads != heads)
            return self.proj(y.transpose(1, 2).reshape(b, s, dim))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(dim)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, dim)
            self.wpe = nn.Embedding(max_seq, dim)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(dim)

        def forward(self, ids):
            pos = lib.arange(ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.ln_f(x) @ self.wte.weight.t()

    return GPT()


CONFIG = {"vocab": 96, "dim": 32, "heads": 4, "layers": 2, "max_seq": 64}


def build(batch=1, seq=16, dtype=None, device="meta", kv_heads=None):
    """The sk.nn GPT moved to ``device`` and int64 token ids (batch, seq)."""
    import subclass_kit as sk
    model = _define(sk, kv_heads=kv_heads, **CONFIG).to(device)
    if dtype is not None:
        model = model.to(dtype)
    return model, (sk.zeros(batch, seq, dtype=sk.int64, device=device),)


def build_gqa(batch=1, seq=16, dtype=None, device="meta"):
    """The same GPT with 2 key/value heads for 4 query heads."""
    return build(batch=batch, seq=seq, dtype=dtype, device=device, kv_heads=2)


def build_torch(kv_heads=None):
    import torch
    return _define(torch, kv_heads=kv_heads, **CONFIG)
