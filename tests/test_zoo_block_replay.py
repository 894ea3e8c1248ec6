"""The shortcuts that make ``subclass-kit shapes`` on a 70B model fast, checked against the
slow paths they replace:

- Note [Block replay] (``zoo/block_replay.py``): ``summarize`` with replay gives the same
  ``Summary`` as running every op, on every zoo model and on the cases that must not be
  replayed (user modules, stateful blocks, other modes watching, the timeline);
- ``sk.nn.parameter.empty_parameter``: the meta fast path builds the same tensor state as
  ``Parameter(sk.empty(...))`` (and as torch's meta layers: version, strides, flags).
"""

from __future__ import annotations

import gc

import warnings

import pytest

import subclass_kit as sk
from subclass_kit import zoo
from subclass_kit.nn.parameter import Parameter, empty_parameter
from subclass_kit.zoo import block_replay


@pytest.fixture
def replays(monkeypatch):
    """A list that grows by one per replayed block call."""
    calls = []
    original = block_replay.BlockReplay._replay

    def counting(self, record, name):
        calls.append(name)
        return original(self, record, name)

    monkeypatch.setattr(block_replay.BlockReplay, "_replay", counting)
    return calls


def _watched() -> bool:
    """Whether a mode is active around the test (``--debug-asserts``): then every op must be
    seen, and nothing is replayed."""
    state = sk.mode_state()
    return bool(state.dispatch_modes or state.function_modes)


def _both(model, inputs, **kwargs):
    fast = zoo.summarize(model, inputs, name="m", **kwargs)
    full = zoo.summarize(model, inputs, name="m", replay_blocks=False, **kwargs)
    return fast, full


SMALL = {"num_hidden_layers": 4}
CASES = [(name, SMALL if name not in ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
                                       "bert-base-uncased", "vit-b-16") else {})
         for name in zoo.list_models()]


@pytest.mark.parametrize("name,overrides", CASES)
@pytest.mark.parametrize("dtype", [None, sk.bfloat16])
def test_replay_gives_the_full_runs_summary(name, overrides, dtype, replays):
    model = zoo.get_model(name, dtype=dtype, **overrides)
    seq = None if name.startswith("vit") else 96     # an image model has a fixed sequence
    inputs = model.example_inputs(batch=2, seq=seq, device="meta")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast, full = _both(model, inputs)
    assert fast == full
    assert bool(replays) is not _watched(), "the repeated layers were replayed"
    # the model is left as it was: no replayed forward stays on a block
    assert not any("forward" in m.__dict__ for m in model.modules())


@pytest.mark.parametrize("overrides,seq", [
    ({"attn_implementation": "eager"}, 300),
    ({"sliding_window": 64}, 200),          # mistral: the window mask
])
def test_replay_with_masks_and_eager_attention(overrides, seq, replays):
    model = zoo.get_model("mistral-7b", num_hidden_layers=3, **overrides)
    fast, full = _both(model, model.example_inputs(seq=seq))
    assert fast == full and bool(replays) is not _watched()


def test_layers_that_differ_are_not_replayed_as_each_other(replays):
    # qwen2: sliding windows from layer 2 on, so layers 0-1 and 2-5 are two kinds
    model = zoo.get_model("qwen2-7b", num_hidden_layers=6, use_sliding_window=True,
                          sliding_window=16, max_window_layers=2)
    # A garbage collection inside a block makes it no model for replay (Note [Block
    # replay]): whether one falls inside layer 0 depends on what earlier tests allocated.
    gc.collect()
    gc.disable()
    try:
        fast, full = _both(model, model.example_inputs(seq=64))
    finally:
        gc.enable()
    assert fast == full
    if not _watched():
        assert sorted(replays) == [f"model.layers.{i}" for i in (1, 3, 4, 5)]


def test_no_replay_with_a_timeline_or_for_user_modules(replays):
    model = zoo.get_model("llama-2-7b", num_hidden_layers=3)
    inputs = model.example_inputs(seq=32)
    fast, full = _both(model, inputs, timeline=True)
    assert fast == full and fast.timeline == full.timeline and not replays

    class Block(sk.nn.Module):          # not a subclass_kit class: its forward is unknown
        def __init__(self):
            super().__init__()
            self.lin = sk.nn.Linear(8, 8, device="meta")

        def forward(self, x):
            return self.lin(x).relu()

    class Net(sk.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = sk.nn.ModuleList(Block() for _ in range(3))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    fast, full = _both(Net(), (sk.empty(4, 8, device="meta"),))
    assert fast == full and not replays


def test_a_block_that_keeps_a_tensor_is_not_replayed(replays):
    model = zoo.get_model("llama-2-7b", num_hidden_layers=3)
    kept = []
    for layer in model.model.layers:
        # a forward hook holding the attention output: storage survives the block
        layer.self_attn.o_proj.register_forward_hook(lambda m, a, out: kept.append(out))
    fast, full = _both(model, model.example_inputs(seq=32))
    assert fast == full and not replays


@pytest.mark.parametrize("effect", ["keeps its result", "writes its input"])
def test_a_block_with_side_effects_is_not_replayed(effect, replays, monkeypatch):
    from subclass_kit.zoo import llama
    kept = []
    forward = llama.DecoderLayer.forward

    def leaky(self, x, *args):
        if effect == "writes its input":
            x.mul_(1)                   # bumps the argument's version
        out = forward(self, x, *args)
        if effect == "keeps its result":
            kept.append(out * 1)        # a storage that outlives the block
        return out

    monkeypatch.setattr(llama.DecoderLayer, "forward", leaky)
    model = zoo.get_model("llama-2-7b", num_hidden_layers=3)
    fast, full = _both(model, model.example_inputs(seq=32))
    assert fast == full and not replays


def test_a_run_with_a_garbage_collection_is_not_recorded(replays, monkeypatch):
    import gc

    from subclass_kit.zoo import llama
    forward = llama.DecoderLayer.forward

    def collecting(self, *args):
        gc.collect()        # what it frees would depend on when collections run: no record
        return forward(self, *args)

    monkeypatch.setattr(llama.DecoderLayer, "forward", collecting)
    model = zoo.get_model("llama-2-7b", num_hidden_layers=3)
    fast, full = _both(model, model.example_inputs(seq=32))
    assert fast == full and not replays


def test_other_modes_see_every_op(replays):
    class Count(sk.DispatchMode):
        def __init__(self):
            self.n = 0

        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += 1
            return func(*args, **(kwargs or {}))

    model = zoo.get_model("llama-2-7b", num_hidden_layers=3)
    inputs = model.example_inputs(seq=32)
    counts = []
    for replay in (True, False):
        with Count() as mode:
            zoo.summarize(model, inputs, replay_blocks=replay)
        counts.append(mode.n)
    assert counts[0] == counts[1] and not replays


# -- empty_parameter ---------------------------------------------------------------------------
def _state(t):
    return (type(t), t._layout, t._dtype, t._inference, t._base, None if t._vc is None
            else t._vc[0], dict(t.__dict__), t._storage.nbytes(), t._storage.device,
            t.requires_grad, t.is_leaf, t.grad_fn)


class _Pass(sk.DispatchMode):
    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("size", [(3, 4), (0, 5), (7,), ()])
@pytest.mark.parametrize("dtype", [None, sk.float16, sk.bfloat16, sk.float64])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_empty_parameter_is_parameter_of_empty(size, dtype, requires_grad):
    fast = empty_parameter(size, "meta", dtype, requires_grad)
    reference = Parameter(sk.empty(size, device="meta", dtype=dtype), requires_grad)
    with _Pass():                       # a mode active: the op path
        watched = empty_parameter(size, sk.device("meta"), dtype, requires_grad)
    assert _state(fast) == _state(reference) == _state(watched)
    with sk.inference_mode():
        assert _state(empty_parameter(size, "meta", dtype, False)) == _state(
            Parameter(sk.empty(size, device="meta", dtype=dtype), False))


@pytest.mark.parametrize("size", [(-1, 3), (2.0,), (2**62, 2**62)])
def test_empty_parameter_raises_as_empty(size):
    with pytest.raises(Exception) as fast:
        empty_parameter(size, "meta", None)
    with pytest.raises(Exception) as reference:
        sk.empty(size, device="meta")
    assert type(fast.value) is type(reference.value)
    assert str(fast.value) == str(reference.value)


def test_meta_layers_match_torch():
    torch = pytest.importorskip("torch", reason="torch is the oracle for the meta layers")
    pairs = [(sk.nn.Linear(8, 4, device="meta", dtype=sk.float16),
              torch.nn.Linear(8, 4, device="meta", dtype=torch.float16)),
             (sk.nn.Embedding(10, 4, device="meta"), torch.nn.Embedding(10, 4, device="meta")),
             (sk.nn.RMSNorm(4, device="meta"), torch.nn.RMSNorm(4, device="meta")),
             (sk.nn.LayerNorm(4, device="meta"), torch.nn.LayerNorm(4, device="meta"))]
    for ours, theirs in pairs:
        for (n, p), (tn, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert n == tn
            assert (tuple(p.shape), p.stride(), p.dtype.name, p.requires_grad, p._version,
                    p.is_leaf, p.device.type) == (tuple(tp.shape), tp.stride(),
                                                  str(tp.dtype).removeprefix("torch."),
                                                  tp.requires_grad, tp._version, tp.is_leaf,
                                                  tp.device.type)
