"""Training-step benchmarks (issue: training programs), subclass_kit vs torch in one run.

- ``train_gpt_step``: one training step (forward, cross-entropy, backward, AdamW step) of the
  2-layer GPT of ``examples/train_char_gpt.py`` (width 64, 4 heads, seq 32, batch 8, vocab
  65), built from the same code in both libraries, float32. Target sk <= 3x torch.
- ``adamw_step``: ``AdamW.step()`` alone over a 10M-parameter set (ten 1000x1000 matrices),
  gradients already in place. Target sk <= 1.5x torch.

Times are CPU seconds per step (median over repeats), one thread.
"""

from __future__ import annotations

import pathlib
import sys

from harness import SK, TORCH, Case, Result, Skip, import_torch, measure, median_seconds

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))

VOCAB, WIDTH, HEADS, LAYERS, SEQ, BATCH = 65, 64, 4, 2, 32, 8
N_MATRICES, SIDE = 10, 1000


def _sk():
    import subclass_kit as sk
    if not hasattr(sk.Tensor, "backward"):
        raise Skip("the autograd mode is not available")
    return sk


def _gpt_step(lib, F, optim, make):
    from train_char_gpt import make_gpt
    model = make_gpt(lib, F, VOCAB, width=WIDTH, heads=HEADS, layers=LAYERS, block=SEQ)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    x, y = make()

    def step():
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def train_gpt_step(repeats=None) -> list:
    repeats = repeats or 10
    result = Result("train_gpt_step", "ms/step", target=3.0)

    def ours():
        sk = _sk()
        step = _gpt_step(sk.nn, sk.nn.functional, sk.optim,
                         lambda: (sk.randint(0, VOCAB, (BATCH, SEQ)),
                                  sk.randint(0, VOCAB, (BATCH, SEQ))))
        return median_seconds(step, repeats) * 1e3

    def theirs():
        torch = import_torch()
        step = _gpt_step(torch.nn, torch.nn.functional, torch.optim,
                         lambda: (torch.randint(0, VOCAB, (BATCH, SEQ)),
                                  torch.randint(0, VOCAB, (BATCH, SEQ))))
        return median_seconds(step, repeats) * 1e3

    measure(result, SK, ours)
    measure(result, TORCH, theirs)
    return [result]


def adamw_step(repeats=None) -> list:
    repeats = repeats or 5
    result = Result("adamw_step", "ms/step", target=1.5)

    def run(lib, optim, make):
        params = [make() for _ in range(N_MATRICES)]
        for p in params:
            p.grad = make().detach()
        opt = optim.AdamW(params, lr=1e-3)
        return median_seconds(opt.step, repeats, warmup=1) * 1e3

    def ours():
        sk = _sk()
        return run(sk, sk.optim, lambda: sk.nn.Parameter(sk.randn(SIDE, SIDE)))

    def theirs():
        torch = import_torch()
        return run(torch, torch.optim, lambda: torch.nn.Parameter(torch.randn(SIDE, SIDE)))

    measure(result, SK, ours)
    measure(result, TORCH, theirs)
    return [result]


CASES = [
    Case("train_gpt_step", train_gpt_step, "one forward/backward/AdamW step of a 2-layer GPT"),
    Case("adamw_step", adamw_step, "AdamW.step() on 10M parameters"),
]
