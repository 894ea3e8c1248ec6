"""A GPT-style model written once against ``nn``/``F``/library ``L`` (``sk`` or ``torch``) for the
training-memory and checkpoint oracle tests: eager attention (explicit scores, so both
libraries run the same ops; PyTorch's fused SDPA saves other tensors), optional dropout."""

from __future__ import annotations


def make_twin(nn, F, L, vocab=50, width=32, heads=4, layers=2, block=16, dropout=0.0):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.ln_2 = nn.LayerNorm(width)
            self.fc = nn.Linear(width, 4 * width)
            self.fc_proj = nn.Linear(4 * width, width)
            self.drop = nn.Dropout(dropout)

        def forward(self, x, mask):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split(width, dim=2)
            q, k, v = (z.view(b, t, heads, width // heads).transpose(1, 2) for z in (q, k, v))
            s = (q @ k.transpose(-2, -1)) * (1.0 / (width // heads) ** 0.5)
            s = s.masked_fill(mask[:t, :t], float("-inf"))
            y = self.drop(F.softmax(s, dim=-1)) @ v
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, width))
            return x + self.drop(self.fc_proj(F.gelu(self.fc(self.ln_2(x)))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.wpe = nn.Embedding(block, width)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx, checkpoint=None):
            t = idx.shape[1]
            mask = L.ones(t, t, dtype=L.bool, device=idx.device).triu(1)
            x = self.wte(idx) + self.wpe.weight[:t]
            for blk in self.blocks:
                x = blk(x, mask) if checkpoint is None else checkpoint(blk, x, mask)
            return self.head(self.ln_f(x))

    return GPT()
