"""GPT-2-small forward under a fake/meta *mode*: real cpu weights, no computation.

subclass_kit runs the zoo model built with cpu weights under ``modes.MetaMode`` (real
weights take part through cached meta twins); torch runs the ``torch.nn`` twin of
torch_gpt2.py with cpu weights under ``FakeTensorMode(allow_non_fake_inputs=True)`` on fake
ids. One mode object per side is reused across repeats, so both sides time the steady state
with their conversion memos warm. Target: sk <= 0.2x torch.
"""

from __future__ import annotations

from harness import SK, TORCH, Case, Result, Skip, import_torch, measure, median_seconds

BATCH, SEQ = 1, 128
VOCAB = 50257
DEFAULT_REPEATS = 5


def _check(out):
    if tuple(out.shape) != (BATCH, SEQ, VOCAB):
        raise AssertionError(f"GPT-2 under a meta mode gave {tuple(out.shape)}")


def gpt2_meta_mode(repeats=None) -> list:
    repeats = repeats or DEFAULT_REPEATS
    result = Result("gpt2_meta_mode_forward", "ms", target=0.2)

    def sk_forward():
        try:
            import subclass_kit as sk
            from subclass_kit.modes import MetaMode
            from subclass_kit import zoo
        except ImportError as e:
            raise Skip(f"modes.MetaMode not importable ({e})") from None
        model = zoo.get_model("gpt2", device="cpu")
        ids = sk.zeros((BATCH, SEQ), dtype=sk.int64)
        mode = MetaMode()

        def run():
            with mode, sk.no_grad():
                return model(ids)

        _check(run())
        return median_seconds(run, repeats) * 1e3

    def torch_forward():
        torch = import_torch()
        import torch_gpt2
        from torch._subclasses.fake_tensor import FakeTensorMode
        model = torch_gpt2.build("cpu")
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        ids = mode.from_tensor(torch.zeros((BATCH, SEQ), dtype=torch.int64))

        def run():
            with mode, torch.no_grad():
                return model(ids)

        _check(run())
        return median_seconds(run, repeats) * 1e3

    measure(result, SK, sk_forward)
    measure(result, TORCH, torch_forward)
    return [result]


CASES = [Case("gpt2_meta_mode", gpt2_meta_mode,
              f"GPT-2-small forward (batch {BATCH}, seq {SEQ}), cpu weights, under sk MetaMode "
              "vs torch FakeTensorMode")]
