"""``modes.MemTracker`` against PyTorch: the tensors our autograd graph saves (the
``activations`` category) are, storage for storage, the ones PyTorch's saves for the same twin
model (counted with ``torch.autograd.graph.saved_tensors_hooks``); parameters, gradients and
optimizer states equal torch ``MemTracker``'s after a step; and cpu and meta runs give the same
numbers."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit.modes import MemTracker
from subclass_kit.modes.memory_tracker import CATEGORIES

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _train_twin import make_twin  # noqa: E402

torch = pytest.importorskip("torch", reason="torch is the oracle for saved tensors")

VOCAB = 50


def _ids(batch=4, seq=16, seed=0):
    return np.random.RandomState(seed).randint(0, VOCAB, (batch, seq))


def _torch_saved_bytes(model, x):
    """Bytes of the distinct storages PyTorch's graph saves (parameters excluded)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = torch.nn.functional.cross_entropy(model(x).view(-1, VOCAB), x.view(-1))
    return sum(seen.values()), loss


def _sk_step(model, x, opt=None, device="cpu", after_forward=None):
    tracker = MemTracker()
    tracker.track_external(model, x, *([opt] if opt is not None else []))
    with tracker:
        loss = sk.nn.functional.cross_entropy(model(x).view(-1, VOCAB), x.view(-1))
        if after_forward is not None:
            after_forward(tracker)
        loss.backward()
        if opt is not None:
            opt.step()
    return tracker


@pytest.mark.parametrize("layers,width,seq", [(1, 16, 8), (2, 32, 16), (3, 64, 5)])
def test_saved_activations_are_torchs(layers, width, seq):
    x = _ids(seq=seq)
    theirs, _ = _torch_saved_bytes(make_twin(torch.nn, torch.nn.functional,
                                             layers=layers, width=width), torch.tensor(x))
    found = {}
    _sk_step(make_twin(sk.nn, sk.nn.functional, layers=layers, width=width), sk.tensor(x),
             after_forward=lambda tr: found.update(tr.snapshot()))
    # the input ids are saved (by the embeddings) in both; torch's pack sees them too
    assert found["activations"] == theirs


@settings(max_examples=8, deadline=None)
@given(layers=st.integers(0, 2), heads=st.sampled_from([1, 2, 4]),
       head_dim=st.integers(1, 6), seq=st.integers(1, 9), batch=st.integers(1, 3))
def test_saved_activations_property(layers, heads, head_dim, seq, batch):
    """Any size: the saved bytes are torch's, and meta traces what cpu runs."""
    width = heads * head_dim
    x = _ids(batch, seq, seed=seq)
    kw = dict(layers=layers, width=width, heads=heads, block=seq)
    theirs, _ = _torch_saved_bytes(make_twin(torch.nn, torch.nn.functional, **kw),
                                   torch.tensor(x))
    found = {}
    for device in ("cpu", "meta"):
        model = make_twin(sk.nn, sk.nn.functional, **kw)
        if device == "meta":
            model = model.to_empty(device="meta")
        ids = sk.tensor(x).to(device)
        _sk_step(model, ids, after_forward=lambda tr: found.setdefault(device, tr.snapshot()))
    assert found["cpu"] == found["meta"]
    assert found["cpu"]["activations"] == theirs


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_parameters_gradients_states_are_torch_memtrackers(optimizer):
    from torch.distributed._tools.mem_tracker import MemTracker as TorchMemTracker
    from torch.distributed._tools.mem_tracker import _MemRefType as R
    x = _ids()
    make = {"adamw": lambda o, ps: o.AdamW(ps),
            "sgd": lambda o, ps: o.SGD(ps, lr=0.1, momentum=0.9)}[optimizer]
    tm = make_twin(torch.nn, torch.nn.functional)
    topt = make(torch.optim, tm.parameters())
    tx = torch.tensor(x)
    tt = TorchMemTracker()
    tt.track_external(tm, topt, tx)
    with tt:
        torch.nn.functional.cross_entropy(tm(tx).view(-1, VOCAB), tx.view(-1)).backward()
        topt.step()
        theirs = tt.get_tracker_snapshot()[torch.device("cpu")]
    m = make_twin(sk.nn, sk.nn.functional)
    sx = sk.tensor(x)       # alive, as the torch input is
    ours = _sk_step(m, sx, make(sk.optim, m.parameters())).snapshot()
    assert ours["parameters"] == theirs[R.PARAM]
    assert ours["gradients"] == theirs[R.GRAD]
    assert ours["optimizer_states"] == theirs[R.OPT]
    assert ours["total"] == theirs["Total"]


def _run(device, checkpoint=False, optimizer=True):
    sk.manual_seed(0)
    m = make_twin(sk.nn, sk.nn.functional, layers=2, width=32)
    if device == "meta":
        m = m.to_empty(device="meta")
    opt = sk.optim.AdamW(m.parameters()) if optimizer else None
    x = sk.zeros((4, 16), dtype=sk.int64, device=device)
    if checkpoint:
        fwd = m.forward
        m.forward = lambda idx: fwd(idx, checkpoint=lambda f, *a: sk.utils.checkpoint.checkpoint(
            f, *a, use_reentrant=False))
    return _sk_step(m, x, opt)


@pytest.mark.parametrize("checkpoint", [False, True])
def test_meta_and_cpu_give_the_same_numbers(checkpoint):
    cpu, meta = _run("cpu", checkpoint), _run("meta", checkpoint)
    assert cpu.peak == meta.peak > 0
    assert cpu.peak_at == meta.peak_at
    assert cpu.maxima == meta.maxima
    assert cpu.snapshot("peak") == meta.snapshot("peak")
    strip = [{k: v for k, v in p.items()} for p in cpu.timeline()]
    assert strip == meta.timeline()


def test_categories_over_the_step():
    tr = _run("meta")
    m = make_twin(sk.nn, sk.nn.functional, layers=2, width=32)
    nbytes = sum(p.numel() * p.element_size() for p in m.parameters())
    n = len(list(m.parameters()))
    assert tr.maxima["parameters"] == nbytes
    assert tr.maxima["gradients"] == nbytes
    assert tr.maxima["optimizer_states"] == 2 * nbytes + 4 * n     # exp_avg, exp_avg_sq, step
    phases = [p["phase"] for p in tr.timeline()]
    # forward, then backward, then the optimizer step: each phase one stretch
    assert phases == sorted(phases, key=["forward", "backward", "optimizer"].index)
    assert phases[0] == "forward" and phases[-1] == "optimizer" and "backward" in phases
    peak = tr.snapshot("peak")
    assert peak["total"] == tr.peak == sum(peak[c] for c in CATEGORIES)
    # the backward freed the saved tensors (the input ids, saved by the embeddings, died
    # with _run's frame)
    assert tr.snapshot()["activations"] == 0


def test_checkpointing_saves_less_and_peaks_no_higher():
    plain, ckpt = _run("meta", optimizer=False), _run("meta", checkpoint=True, optimizer=False)
    assert ckpt.maxima["activations"] < plain.maxima["activations"]
    assert ckpt.maxima["gradients"] == plain.maxima["gradients"]
    assert ckpt.peak <= plain.peak


def test_timeline_limit_keeps_the_peak_and_the_order():
    tr = _run("meta")
    full = tr.timeline(limit=10**9)
    short = tr.timeline(limit=50)
    assert len(short) <= 50 < len(full)
    assert short[-1] == full[-1]
    assert max(sum(p[c] for c in CATEGORIES) for p in short) == tr.peak
    index = {id(p): i for i, p in enumerate(tr._points)}
    assert index     # points are kept in run order; the short list is a subsequence
    keys = [(p["at"], p["phase"]) for p in full]
    it = iter(keys)
    assert all(any(k == (p["at"], p["phase"]) for k in it) for p in short)
    with pytest.raises(ValueError, match="limit must be at least 2"):
        tr.timeline(limit=1)
    with pytest.raises(ValueError, match="kind must be"):
        tr.snapshot("later")


def test_track_external_rejects_other_objects():
    with pytest.raises(TypeError, match="cannot track an object of type int"):
        MemTracker().track_external(3)


def test_tracker_leaves_model_and_optimizer_as_they_were():
    m = make_twin(sk.nn, sk.nn.functional)
    opt = sk.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    _sk_step(m, sk.tensor(_ids()), opt)
    assert "step" not in opt.__dict__
    assert type(opt.state[next(m.parameters())]) is dict
    assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in m.modules())


def test_outer_saved_tensors_hooks_still_pack():
    """A ``saved_tensors_hooks`` active around the tracker still packs every saved tensor (the
    tracker only looks), and the gradients are unchanged."""
    x = sk.tensor(_ids())

    def run(track):
        sk.manual_seed(0)
        model = make_twin(sk.nn, sk.nn.functional)
        packed = []

        def pack(t):
            packed.append(tuple(t.shape))
            return ("packed", t)

        with sk.autograd.graph.saved_tensors_hooks(pack, lambda p: p[1]):
            tracker = MemTracker()
            tracker.track_external(model, x)
            if track:
                with tracker:
                    loss = sk.nn.functional.cross_entropy(model(x).view(-1, VOCAB), x.view(-1))
                    loss.backward()
            else:
                loss = sk.nn.functional.cross_entropy(model(x).view(-1, VOCAB), x.view(-1))
                loss.backward()
        return packed, [p.grad.numpy() for p in model.parameters()], tracker

    plain, grads, _ = run(False)
    seen, tracked_grads, tracker = run(True)
    assert seen == plain and len(seen) > 10
    for a, b in zip(grads, tracked_grads):
        np.testing.assert_array_equal(a, b)
    assert tracker.maxima["activations"] > 0


def test_backward_points_name_the_module_that_recorded_the_node():
    tl = _run("meta").timeline(limit=10**9)
    backward = [p for p in tl if p["phase"] == "backward"]
    norms = {p["module"] for p in backward if p["node"] == "NativeLayerNormBackward0"}
    assert norms == {"blocks.0.ln_1", "blocks.0.ln_2", "blocks.1.ln_1", "blocks.1.ln_2", "ln_f"}
    gelus = {p["module"] for p in backward if p["node"] == "GeluBackward0"}
    assert gelus == {"blocks.0", "blocks.1"}        # F.gelu is called by the block itself
    optimizer = {p["module"] for p in tl if p["phase"] == "optimizer"}
    assert optimizer == {"AdamW.step"}
    forward = {p["module"] for p in tl if p["phase"] == "forward"}
    assert {"wte", "blocks.1.fc", "head"} <= forward
