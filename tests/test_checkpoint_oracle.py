"""``sk.utils.checkpoint.checkpoint`` (non-reentrant) against ``torch.utils.checkpoint``: the
same gradients, the function run again in the backward, the same errors; and the memory it
saves, measured with ``modes.MemTracker``."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit.modes import MemTracker

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _train_twin import make_twin  # noqa: E402

torch = pytest.importorskip("torch", reason="torch is the oracle for checkpointing")
from oracle import to_sk  # noqa: E402


def _twins(**kw):
    torch.manual_seed(0)
    theirs = make_twin(torch.nn, torch.nn.functional, **kw).double()
    ours = make_twin(sk.nn, sk.nn.functional, **kw).to(sk.float64)
    ours.load_state_dict({k: to_sk(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _grads(L, model, x, checkpoint):
    def ckpt(f, *a):
        return L.utils.checkpoint.checkpoint(f, *a, use_reentrant=False)
    logits = model(x, checkpoint=ckpt if checkpoint else None)
    L.nn.functional.cross_entropy(logits.reshape(-1, 50), x.reshape(-1)).backward()
    return {k: p.grad.detach().numpy() for k, p in model.named_parameters()}


@pytest.mark.parametrize("layers,seq", [(1, 8), (2, 16)])
def test_gradients_are_torchs(layers, seq):
    x = np.random.RandomState(1).randint(0, 50, (3, seq))
    ours, theirs = _twins(layers=layers)
    a = _grads(sk, ours, sk.tensor(x), True)
    b = _grads(torch, theirs, torch.tensor(x), True)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-10, atol=1e-12, err_msg=k)


def test_dropout_is_replayed_with_the_same_random_numbers():
    x = sk.tensor(np.random.RandomState(2).randint(0, 50, (2, 16)))
    ours, _ = _twins(dropout=0.3)
    sk.manual_seed(5)
    plain = _grads(sk, ours, x, False)
    ours.zero_grad()
    sk.manual_seed(5)
    again = _grads(sk, ours, x, True)
    for k in plain:
        np.testing.assert_array_equal(plain[k], again[k], err_msg=k)


def _count_runs(L):
    calls = []

    def f(a, b):
        calls.append(1)
        return (a * b).sin() * b

    a = L.tensor([0.5, 1.5], requires_grad=True)
    b = L.tensor([2.0, -1.0], requires_grad=True)
    out = L.utils.checkpoint.checkpoint(f, a, b, use_reentrant=False)
    runs_forward = len(calls)
    out.sum().backward()
    return runs_forward, len(calls), a.grad.tolist(), b.grad.tolist()


def test_the_function_runs_again_in_the_backward():
    ours, theirs = _count_runs(sk), _count_runs(torch)
    assert ours[:2] == theirs[:2] == (1, 2)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-6)


def _different_second_run(L):
    calls = []

    def f(a):
        calls.append(1)
        return a.exp() if len(calls) == 1 else a * 2.0

    a = L.tensor([1.0, 2.0], requires_grad=True)
    out = L.utils.checkpoint.checkpoint(f, a, use_reentrant=False)
    out.sum().backward()


def test_a_function_saving_other_tensors_the_second_time_raises():
    with pytest.raises(torch.utils.checkpoint.CheckpointError):
        _different_second_run(torch)
    with pytest.raises(sk.utils.checkpoint.CheckpointError):
        _different_second_run(sk)


def test_use_reentrant():
    a = sk.tensor([1.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="use_reentrant=True is not implemented"):
        sk.utils.checkpoint.checkpoint(lambda t: t * 2, a, use_reentrant=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        sk.utils.checkpoint.checkpoint(lambda t: t * 2, a)


def test_checkpointed_layers_save_only_their_inputs():
    """Under MemTracker the forward of a checkpointed layer saves nothing but its inputs (kept
    for the recomputation); the gradients are the same."""
    x = sk.zeros((4, 16), dtype=sk.int64, device="meta")
    found = {}
    for layers, ckpt in ((0, False), (3, False), (3, True)):
        model = make_twin(sk.nn, sk.nn.functional, layers=layers).to_empty(device="meta")
        tracker = MemTracker()
        tracker.track_external(model, x)
        with tracker:
            fn = (lambda f, *a: sk.utils.checkpoint.checkpoint(f, *a, use_reentrant=False)) \
                if ckpt else None
            logits = model(x, checkpoint=fn)
            saved = tracker.snapshot()["activations"]
            logits.sum().backward()
        found[layers, ckpt] = saved, tracker.maxima["gradients"]
    # per layer the input (4, 16, 32) float32 is kept, and the (16, 16) bool mask once
    kept = 3 * 4 * 16 * 32 * 4 + 16 * 16
    outside = found[0, False][0]        # what the embeddings, ln_f and head save
    assert found[3, True][0] == outside + kept < found[3, False][0]
    assert found[3, True][1] == found[3, False][1]


# ---- context_fn, checkpoint_sequential, one unpack per backward -----------------------------

def _cp(L):
    return L.utils.checkpoint


def test_context_fn_wraps_the_forward_and_the_recomputation():
    """The forward runs inside the first context of ``context_fn()``, the recomputation inside
    the second; a context that swallows the forward's exception makes checkpoint raise."""
    import contextlib

    def program(L):
        events = []

        class Ctx:
            def __init__(self, name):
                self.name = name

            def __enter__(self):
                events.append(("enter", self.name, L.is_grad_enabled()))

            def __exit__(self, exc_type, *exc):
                events.append(("exit", self.name, exc_type is not None))

        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        out = _cp(L).checkpoint(lambda t: (t.sin() * t).sum(), x, use_reentrant=False,
                                context_fn=lambda: (Ctx("forward"), Ctx("recompute")))
        events.append("backward")
        out.backward()

        def fails(t):
            raise ValueError("forward failed")

        class Swallow:
            def __enter__(self):
                pass

            def __exit__(self, *exc):
                return True
        try:
            _cp(L).checkpoint(fails, x, use_reentrant=False,
                              context_fn=lambda: (Swallow(), contextlib.nullcontext()))
            msg = "ok"
        except RuntimeError as e:
            msg = str(e).replace("torch.", "sk.")
        return events, np.round(x.grad.numpy(), 12).tolist(), msg
    ours, theirs = program(sk), program(torch)
    assert ours == theirs


def test_checkpoint_sequential():
    def program(L):
        L.manual_seed(0)
        layers = [L.nn.Linear(3, 3), L.nn.Tanh(), L.nn.Linear(3, 3), L.nn.Tanh(),
                  L.nn.Linear(3, 2)]
        for m in layers:
            for p in m.parameters():
                with L.no_grad():
                    p.copy_(L.arange(p.numel()).reshape(p.shape) * 0.125 - 0.5)
        x = L.tensor([[1.0, -2.0, 0.5]], requires_grad=True)
        out = _cp(L).checkpoint_sequential(L.nn.Sequential(*layers), 2, x,
                                           use_reentrant=False)
        out.sum().backward()
        return (np.round(out.detach().numpy(), 6).tolist(),
                np.round(x.grad.numpy(), 6).tolist(),
                [np.round(p.grad.numpy(), 6).tolist() for m in layers for p in m.parameters()])
    assert program(sk) == program(torch)


def test_saved_tensors_unpacked_twice_in_one_backward():
    """Within one backward a recomputed tensor is given once: a custom backward reading
    ``ctx.saved_tensors`` twice gets CheckpointError the second time."""
    def program(L):
        seen = []

        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                try:
                    ctx.saved_tensors
                    seen.append("ok")
                except RuntimeError as e:
                    seen.append((type(e).__name__, str(e).replace("torch.", "sk.")))
                return g * 2

        x = L.tensor([1.0, 2.0], requires_grad=True)
        _cp(L).checkpoint(lambda t: Fn.apply(t * 3), x, use_reentrant=False).sum().backward()
        return seen, x.grad.tolist()
    assert program(sk) == program(torch)


@pytest.mark.parametrize("change", ["fewer", "more", "metadata"])
def test_recomputation_that_differs(change):
    """A recomputation saving fewer tensors, or tensors of another shape, raises PyTorch's
    CheckpointError (its first paragraph); saving more stops early and is fine."""
    def program(L):
        def first(t):
            return t.sin().exp().sin() if change == "fewer" else t.sin().exp()

        def again(t):
            if change == "metadata":
                return t.sin() * L.tensor([1.0, 2.0])
            return t.sin().exp() if change == "fewer" else t.sin().exp().sin()
        calls = []

        def fn(t):
            calls.append(1)
            return first(t) if len(calls) == 1 else again(t)
        x = L.tensor([0.5], requires_grad=True)
        try:
            L.utils.checkpoint.checkpoint(fn, x, use_reentrant=False).sum().backward()
            return "ok"
        except RuntimeError as e:
            text = str(e).replace("torch.", "sk.")
            return type(e).__name__, text.split("\n\nTip")[0].rstrip(".\n")
    assert program(sk) == program(torch)
