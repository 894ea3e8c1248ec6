"""Training programs against PyTorch: the example models (``examples/train_mlp.py``,
``examples/train_char_gpt.py``) built from the same code in both libraries, the same initial
weights (torch's, loaded with ``load_state_dict``) and the same batches; after every step of
SGD / AdamW the losses agree (float64, tight tolerance), and at the end every parameter and
optimizer state does."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for training")
from oracle import to_sk  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "examples"))
import train_char_gpt  # noqa: E402
import train_mlp  # noqa: E402


def _twins(build):
    torch.manual_seed(0)
    theirs = build(torch.nn, torch.nn.functional).double()
    ours = build(sk.nn, sk.nn.functional).to(sk.float64)
    ours.load_state_dict({k: to_sk(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _train(ours, theirs, batches, make_opt, loss_fn, steps):
    opt, topt = make_opt(sk.optim, ours), make_opt(torch.optim, theirs)
    for step in range(steps):
        x, y = batches(step)
        tloss = loss_fn(torch.nn.functional, theirs(x), y)
        topt.zero_grad()
        tloss.backward()
        topt.step()
        loss = loss_fn(sk.nn.functional, ours(to_sk(x)), to_sk(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-10), f"step {step}"
    for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == tname
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)
        assert p.grad is not None and tp.grad is not None
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-8, atol=1e-12,
                                   err_msg=f"{name}.grad")


def _ce(F, logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_mlp_trains_like_torch(optimizer):
    ours, theirs = _twins(lambda nn, F: train_mlp.make_mlp(nn))
    gen = torch.Generator().manual_seed(1)
    data = [(torch.randn(16, 2, generator=gen, dtype=torch.float64),
             torch.randint(0, 3, (16,), generator=gen)) for _ in range(20)]

    def make_opt(optim, model):
        if optimizer == "sgd":
            return optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
        return optim.AdamW(model.parameters(), lr=1e-2)
    _train(ours, theirs, lambda i: data[i], make_opt, _ce, 20)


def test_char_gpt_trains_like_torch():
    vocab, block = 20, 16
    ours, theirs = _twins(lambda nn, F: train_char_gpt.make_gpt(nn, F, vocab, width=32, heads=4,
                                                                layers=2, block=block))
    gen = torch.Generator().manual_seed(2)
    data = [torch.randint(0, vocab, (4, block + 1), generator=gen) for _ in range(20)]

    def batches(i):
        return data[i][:, :-1], data[i][:, 1:]
    _train(ours, theirs, batches, lambda optim, m: optim.AdamW(m.parameters(), lr=3e-3), _ce,
           20)


def test_examples_run_small():
    losses, accuracy = train_mlp.train(steps=30, lr=0.05)
    assert losses[-1] < losses[0] and 0.0 <= accuracy <= 1.0
    model, itos, losses = train_char_gpt.train(steps=4)
    assert len(losses) == 4 and all(np.isfinite(losses))
    text = train_char_gpt.sample(model, itos, 10)
    assert len(text) == 11 and set(text) <= set(itos)
