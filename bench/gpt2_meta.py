"""GPT-2-small forward on the meta device: shape inference with no data.

subclass_kit runs the zoo model (``subclass_kit.zoo.get_model("gpt2")``); torch runs the
``torch.nn`` twin in torch_gpt2.py on ``device="meta"``. Both take int64 ids of shape
(BATCH, SEQ) and return logits (BATCH, SEQ, 50257). Timed: the forward only (model built
once), and separately the model build. Target: sk forward <= 0.5x torch's.
"""

from __future__ import annotations

from harness import SK, TORCH, Case, Result, Skip, import_torch, measure, median_seconds

BATCH, SEQ = 1, 128
VOCAB = 50257
DEFAULT_REPEATS = 7


def _sk_model():
    try:
        import subclass_kit as sk
        from subclass_kit import zoo
    except ImportError as e:
        raise Skip(f"subclass_kit.zoo not importable ({e})") from None
    if not hasattr(zoo, "get_model"):
        raise Skip("subclass_kit.zoo.get_model does not exist yet")
    model = zoo.get_model("gpt2")
    ids = sk.empty((BATCH, SEQ), dtype=sk.int64, device="meta")
    return model, ids


def _torch_model():
    torch = import_torch()
    import torch_gpt2

    model = torch_gpt2.build("meta")
    ids = torch.empty((BATCH, SEQ), dtype=torch.int64, device="meta")
    return torch, model, ids


def _expect_logits(out):
    shape = tuple(out.shape)
    if shape != (BATCH, SEQ, VOCAB) or str(out.device) != "meta":
        raise AssertionError(f"GPT-2 on meta gave {shape} on {out.device}")


def gpt2_meta(repeats=None) -> list:
    repeats = repeats or DEFAULT_REPEATS
    forward = Result("gpt2_meta_forward", "ms", target=0.5)
    build = Result("gpt2_meta_build", "ms")

    def sk_forward():
        model, ids = _sk_model()
        import subclass_kit as sk
        try:
            with sk.no_grad():          # as torch's side: inference, no autograd graph
                _expect_logits(model(ids))
        except (AttributeError, NotImplementedError) as e:
            raise Skip(f"missing piece: {type(e).__name__}: {e}") from None
        with sk.no_grad():
            return median_seconds(lambda: model(ids), repeats) * 1e3

    def torch_forward():
        torch, model, ids = _torch_model()
        with torch.no_grad():
            _expect_logits(model(ids))
            return median_seconds(lambda: model(ids), repeats) * 1e3

    def sk_build():
        _sk_model()
        from subclass_kit import zoo
        return median_seconds(lambda: zoo.get_model("gpt2"), repeats, warmup=1) * 1e3

    def torch_build():
        _torch_model()
        import torch_gpt2
        return median_seconds(lambda: torch_gpt2.build("meta"), repeats, warmup=1) * 1e3

    measure(forward, SK, sk_forward)
    measure(forward, TORCH, torch_forward)
    measure(build, SK, sk_build)
    measure(build, TORCH, torch_build)
    return [forward, build]


CASES = [Case("gpt2_meta", gpt2_meta,
              f"GPT-2-small forward (batch {BATCH}, seq {SEQ}) on meta: sk zoo vs torch.nn")]
