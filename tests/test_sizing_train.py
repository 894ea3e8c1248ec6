"""``subclass-kit shapes --train``: the ``train`` section (sizing/train.py) through the command
line and ``train_step`` on small zoo models (meta), against what the categories must be: the
gradients of float32 parameters are their bytes, AdamW keeps two states and a float32 step per
parameter, SGD with momentum one buffer; mixed precision keeps float32 masters; checkpointing
saves less; the model is left as it was."""

from __future__ import annotations

import json

import pytest

import subclass_kit as sk
from subclass_kit import zoo
from subclass_kit.cli import main
from subclass_kit.sizing import train as train_feature
from subclass_kit.modes.memory_tracker import CATEGORIES

TINY_LLAMA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=100)


def run_json(capsys, *argv):
    code = main(["shapes", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _params(model):
    ps = list(model.parameters())
    return sum(p.numel() * p.element_size() for p in ps), len(ps)


def _step(**kw):
    model = zoo.get_model("llama-2-7b", device="meta", **TINY_LLAMA)
    inputs = model.example_inputs(batch=2, seq=32)
    return model, train_feature.train_step(model, inputs, **kw)


def test_cli_train_section(capsys):
    d = run_json(capsys, "gpt2", "--seq", "32", "--train")
    t = d["train"]
    n = len(list(zoo.get_model("gpt2").parameters()))
    assert t["parameters"] == t["gradients"] == d["parameter_bytes"]
    assert t["optimizer_states"] == 2 * d["parameter_bytes"] + 4 * n
    assert t["peak"] == sum(t["at_peak"][c] for c in CATEGORIES)
    assert t["peak"] >= t["parameters"] + t["gradients"]
    assert t["peak_phase"] in ("forward", "backward", "optimizer")
    assert t["peak_phase"] in t["peak_at"]
    assert 0 < len(t["timeline"]) <= 2000
    assert max(sum(p[c] for c in CATEGORIES) for p in t["timeline"]) == t["peak"]
    assert set(t["timeline"][0]) >= {"at", "phase", *CATEGORIES}
    assert t["optimizer"] == "adamw" and not t["mixed_precision"] and not t["checkpointing"]


def test_cli_train_text(capsys):
    assert main(["shapes", "gpt2", "--seq", "8", "--train", "--optimizer", "sgd"]) == 0
    out = capsys.readouterr().out
    assert "train peak" in out and "saved activations" in out and "sgd" in out


@pytest.mark.parametrize("argv", [["--optimizer", "sgd"], ["--mixed-precision"],
                                  ["--checkpointing"]])
def test_options_need_train(capsys, argv):
    assert main(["shapes", "gpt2", *argv]) == 2
    assert "need --train" in capsys.readouterr().err


def test_mixed_precision_needs_float32_masters(capsys):
    assert main(["shapes", "gpt2", "--seq", "8", "--dtype", "float16", "--train",
                 "--mixed-precision"]) == 2
    assert "float32 master" in capsys.readouterr().err


def test_sgd_keeps_one_buffer_per_parameter():
    model, t = _step(optimizer="sgd")
    nbytes, _ = _params(model)
    assert t["optimizer_states"] == nbytes == t["gradients"]


def test_mixed_precision_keeps_float32_masters():
    model, full = _step()
    _, mixed = _step(mixed_precision=True)
    nbytes, n = _params(model)
    assert mixed["parameters"] == mixed["gradients"] == nbytes
    assert mixed["optimizer_states"] == 2 * nbytes + 4 * n
    assert mixed["compute_dtype"] == "bfloat16"
    # matmuls save 2-byte copies of their inputs and weights, the float32 ops (norms, softmax)
    # their float32 tensors: between half the float32 run and it plus a copy of the weights
    assert full["activations"] / 2 < mixed["activations"] < full["activations"] + nbytes / 2
    assert mixed["activations"] != full["activations"]


def test_checkpointing_saves_less_with_the_same_gradients():
    _, plain = _step()
    _, ckpt = _step(checkpointing=True)
    assert ckpt["activations"] < plain["activations"]
    assert ckpt["gradients"] == plain["gradients"]
    _, mixed = _step(mixed_precision=True)
    _, both = _step(checkpointing=True, mixed_precision=True)
    assert both["activations"] < mixed["activations"]
    assert both["gradients"] == mixed["gradients"] == plain["gradients"]


def test_checkpointing_needs_layers():
    model = sk.nn.Linear(4, 3, device="meta")
    with pytest.raises(train_feature.SizingError, match="no ModuleList"):
        train_feature.train_step(model, (sk.empty(2, 4, device="meta"),), checkpointing=True)


def test_model_is_left_as_it_was():
    model = zoo.get_model("llama-2-7b", device="meta", **TINY_LLAMA)
    frozen = next(model.parameters())
    frozen.requires_grad_(False)
    t = train_feature.train_step(model, model.example_inputs(batch=2, seq=32),
                                 checkpointing=True, mixed_precision=True)
    assert not frozen.requires_grad
    # the frozen parameter gets no gradient and no optimizer state
    nbytes, n = _params(model)
    small = frozen.numel() * frozen.element_size()
    assert t["gradients"] == nbytes - small
    assert t["optimizer_states"] == 2 * (nbytes - small) + 4 * (n - 1)
    for p in model.parameters():
        assert p.requires_grad is not (p is frozen)
        assert p.grad is None and p.dtype == sk.float32
    for layer in train_feature._layers(model):
        assert "forward" not in layer.__dict__
        assert not layer._forward_hooks and not layer._forward_pre_hooks
    assert not sk.get_function_mode_stack()
    assert model(*model.example_inputs(batch=1, seq=4)).dtype == sk.float32


def test_cpu_and_meta_agree():
    cpu = zoo.get_model("llama-2-7b", device="cpu", **TINY_LLAMA)
    meta = zoo.get_model("llama-2-7b", device="meta", **TINY_LLAMA)
    a = train_feature.train_step(cpu, cpu.example_inputs(batch=1, seq=8, device="cpu"))
    b = train_feature.train_step(meta, meta.example_inputs(batch=1, seq=8))
    assert a == b


@pytest.mark.parametrize("seq,batch", [(32, 2), (17, 1)])
def test_gpt2_layer_saves_korthikanti_minus_dropout_and_scores(seq, batch):
    """docs/sizing.md: a GPT-2 layer in 16-bit saves s·b·h·(34 + 5·a·s/h) bytes by
    Korthikanti et al. minus the dropout masks (2·sbh + a·s²·b), the attention scores
    (2·a·s²·b), which softmax's backward does not need, and the softmax probabilities
    (2·a·s²·b), which the fused ``scaled_dot_product_attention`` (the zoo's default ``sdpa``)
    recomputes in its backward; plus LayerNorm's mean and rstd and the fused attention's
    float32 logsumexp (b·a·s). Its output is laid out (b, s, a, d), so the merged heads that
    ``c_proj`` saves are a view of it, not another copy."""
    h, a = 64, 4

    def saved(layers):
        model = zoo.get_model("gpt2", dtype=sk.float16, n_layer=layers, n_embd=h, n_head=a)
        inputs = model.example_inputs(batch=batch, seq=seq)
        return train_feature.train_step(model, inputs)["activations"]

    s, b = seq, batch
    korthikanti = s * b * h * 34 + 5 * a * s * s * b
    expected = korthikanti - (2 * s * b * h + a * s * s * b) - 2 * a * s * s * b
    expected -= 2 * a * s * s * b           # probabilities: recomputed by the fused backward
    expected += 2 * 2 * s * b * 2           # mean and rstd (float16) of the two LayerNorms
    expected += 4 * b * a * s               # logsumexp (float32) of the fused attention
    assert saved(2) - saved(1) == expected
