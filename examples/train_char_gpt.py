"""Train a tiny character-level GPT on a bundled text (three of Shakespeare's sonnets) with
``sk.nn`` and ``sk.optim``, then sample from it.

The model code takes the library as arguments (``nn``, ``F``), so the same function builds the
PyTorch twin that ``tests/test_training_oracle.py`` trains side by side::

    python examples/train_char_gpt.py                  # 300 steps, loss and a sample
    python examples/train_char_gpt.py --steps 10       # the small configuration CI runs
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import subclass_kit as sk

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _progress import progress  # noqa: E402

TEXT = pathlib.Path(__file__).parent / "data" / "sonnets.txt"


def make_gpt(nn, F, vocab: int, width: int = 64, heads: int = 4, layers: int = 2,
             block: int = 32, *, kv_heads: int | None = None, eager: bool = False,
             dropout: float = 0.0):
    """A GPT-2-style decoder (pre-norm blocks, causal attention, GELU MLP) from ``nn`` and
    ``F`` (``sk.nn`` and ``sk.nn.functional``, or torch's): token ids (B, T) -> logits
    (B, T, vocab). ``model(idx, checkpoint=fn)`` runs each block as ``fn(block, x, mask)``
    (``sk.utils.checkpoint.checkpoint`` / ``torch.utils.checkpoint.checkpoint`` style).

    The tests build their twins from this one definition, with:

    - ``kv_heads``: key/value heads, fewer than ``heads`` for grouped-query attention
      (default: one per head);
    - ``eager``: attention as explicit scores, a causal mask, softmax and ``@ v`` instead of
      one ``F.scaled_dot_product_attention`` (PyTorch's fused CPU kernel saves other tensors
      for the backward than these ops do);
    - ``dropout``: on the attention weights and the MLP output while training.
    """
    kv_heads = kv_heads or heads
    head_dim = width // heads
    kv_width = kv_heads * head_dim

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.qkv = nn.Linear(width, width + 2 * kv_width)
            self.proj = nn.Linear(width, width)
            self.ln_2 = nn.LayerNorm(width)
            self.fc = nn.Linear(width, 4 * width)
            self.fc_proj = nn.Linear(4 * width, width)
            self.drop = nn.Dropout(dropout)

        def forward(self, x, mask=None):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split([width, kv_width, kv_width], dim=2)
            q = q.view(b, t, heads, head_dim).transpose(1, 2)
            k, v = (z.view(b, t, kv_heads, head_dim).transpose(1, 2) for z in (k, v))
            if eager:
                k, v = (z.repeat_interleave(heads // kv_heads, dim=1) for z in (k, v))
                s = (q @ k.transpose(-2, -1)) * (1.0 / head_dim ** 0.5)
                y = self.drop(F.softmax(s.masked_fill(mask, float("-inf")), dim=-1)) @ v
            else:
                y = F.scaled_dot_product_attention(
                    q, k, v, dropout_p=dropout if self.training else 0.0, is_causal=True,
                    enable_gqa=kv_heads != heads)
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
            # True above the diagonal: the future keys a query may not see (eager only)
            mask = idx.new_ones(t, t).triu(1).bool() if eager else None
            x = self.wte(idx) + self.wpe.weight[:t]
            for blk in self.blocks:
                x = blk(x, mask) if checkpoint is None else checkpoint(blk, x, mask)
            return self.head(self.ln_f(x))

    return GPT()


def load_text():
    """``(data (N,) int64 character ids, itos list)`` of the bundled text."""
    text = TEXT.read_text(encoding="utf-8")
    itos = sorted(set(text))
    stoi = {c: i for i, c in enumerate(itos)}
    return sk.tensor([stoi[c] for c in text], dtype=sk.int64), itos


def batch(data, batch_size: int, block: int):
    """Random windows: inputs and next-character targets, both (batch_size, block)."""
    starts = sk.randint(0, data.shape[0] - block - 1, (batch_size,))
    idx = starts.unsqueeze(1) + sk.arange(block)
    return data[idx], data[idx + 1]


def sample(model, itos, length: int = 200, block: int = 32, temperature: float = 0.8) -> str:
    """Generate ``length`` characters from a newline, sampling by inverse CDF."""
    idx = sk.tensor([[itos.index("\n")]], dtype=sk.int64)
    with sk.no_grad():
        for _ in range(length):
            logits = model(idx[:, -block:])[:, -1] / temperature
            cdf = logits.softmax(-1).cumsum(-1)
            nxt = (cdf < sk.rand(1)).sum(-1, keepdim=True).clamp_max(len(itos) - 1)
            idx = sk.cat([idx, nxt], dim=1)
    return "".join(itos[i] for i in idx[0].tolist())


def train(steps: int = 300, batch_size: int = 8, block: int = 32, lr: float = 3e-3,
          seed: int = 0):
    data, itos = load_text()
    sk.manual_seed(seed)
    model = make_gpt(sk.nn, sk.nn.functional, len(itos), block=block)
    opt = sk.optim.AdamW(model.parameters(), lr=lr)
    bar = progress(steps, "train_char_gpt")
    losses = []
    for _ in bar:
        x, y = batch(data, batch_size, block)
        logits = model(x)
        loss = sk.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        opt.zero_grad()
        loss.backward()
        sk.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
    return model, itos, losses


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--sample", type=int, default=200, help="characters to generate")
    args = parser.parse_args(argv)
    model, itos, losses = train(args.steps)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(sample(model, itos, args.sample))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
