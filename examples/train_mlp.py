"""Train an MLP classifier on a synthetic data set with ``sk.nn`` and ``sk.optim``.

The model code takes the library as an argument (``nn``), so the same function builds the
PyTorch twin that ``tests/test_training_oracle.py`` trains side by side::

    python examples/train_mlp.py                 # 300 steps, prints loss and accuracy
    python examples/train_mlp.py --steps 20      # the small configuration CI runs
"""

from __future__ import annotations

import argparse
import sys

import subclass_kit as sk

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _progress import progress  # noqa: E402


def make_mlp(nn, sizes=(2, 64, 64, 3)):
    """An MLP with tanh between the linear layers, from ``nn`` (``sk.nn`` or ``torch.nn``)."""
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def spirals(n_per_class: int = 100, classes: int = 3, seed: int = 0):
    """Points on interleaved spirals, ``(x (N, 2) float32, y (N,) int64)``."""
    sk.manual_seed(seed)
    t = sk.linspace(0.0, 1.0, n_per_class) if hasattr(sk, "linspace") else \
        sk.arange(n_per_class, dtype=sk.float32) / (n_per_class - 1)
    xs, ys = [], []
    for c in range(classes):
        angle = t * 4.0 + c * (2 * 3.141592653589793 / classes) + sk.randn(n_per_class) * 0.2
        xs.append(sk.stack([t * angle.sin(), t * angle.cos()], dim=1))
        ys.append(sk.full((n_per_class,), c, dtype=sk.int64))
    return sk.cat(xs), sk.cat(ys)


def train(steps: int = 300, lr: float = 0.01, seed: int = 0):
    x, y = spirals(seed=seed)
    sk.manual_seed(seed)
    model = make_mlp(sk.nn)
    opt = sk.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    bar = progress(steps, "train_mlp")
    losses = []
    for _ in bar:
        loss = sk.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
    with sk.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    return losses, accuracy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args(argv)
    losses, accuracy = train(args.steps, args.lr)
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}, training accuracy {accuracy:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
