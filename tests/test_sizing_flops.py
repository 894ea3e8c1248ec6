"""``subclass-kit shapes --flops``: forward and training-step FLOPs of a user model built on
``sk.nn`` equal torch ``FlopCounterMode``'s on the ``torch.nn`` twin (forward under no_grad;
forward + backward of ``output.sum()`` with parameters requiring grad), per-token figures and
the 2N / 6N estimates, the report lines, and a model without token ids."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os

import pytest

from subclass_kit import sizing, zoo
from subclass_kit.cli import main
from subclass_kit.sizing import flops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_FILE = os.path.join(ROOT, "tests", "models", "sknn_gpt.py")
EXAMPLE = os.path.join(ROOT, "examples", "custom_model.py")


def _models():
    spec = importlib.util.spec_from_file_location("sknn_gpt", MODEL_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(capsys, *argv):
    code = main(["shapes", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _measure(target_fn, train, **kw):
    model, inputs = target_fn(**kw)
    ctx = sizing.SizingContext(model=model, inputs=inputs, name="m",
                               args=argparse.Namespace(flops=True, train=train))
    ctx.summary = zoo.summarize(model, inputs, name="m")
    return flops.measure(ctx), model


def _torch_counts(kv_heads, batch, seq, train):
    torch = pytest.importorskip("torch", reason="torch is the oracle for the FLOP counts")
    from torch.utils import flop_counter as tfc
    fused = {   # torch 2.13 has no formula for its CPU fused attention: give it the GPU one's
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:
            lambda q, k, v, *a, out_shape=None, **kw: tfc.sdpa_flop_count(q, k, v),
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
            lambda g, q, k, v, *a, out_shape=None, **kw: tfc.sdpa_backward_flop_count(g, q, k, v),
    }
    model = _models().build_torch(kv_heads=kv_heads)
    ids = torch.zeros(batch, seq, dtype=torch.int64)
    with tfc.FlopCounterMode(display=False, custom_mapping=fused) as counter:
        if train:
            model(ids).sum().backward()
        else:
            with torch.no_grad():
                model(ids)
    return counter.get_total_flops()


@pytest.mark.parametrize("kv_heads", [None, 2], ids=["mha", "gqa"])
@pytest.mark.parametrize("train", [False, True], ids=["forward", "train_step"])
def test_counts_equal_torch_on_the_twin(kv_heads, train):
    section, _ = _measure(_models().build, train, batch=2, seq=12, kv_heads=kv_heads)
    key = "train_step" if train else "forward"
    assert section[key] == _torch_counts(kv_heads, 2, 12, train) > 0
    if train:
        assert section["forward"] == _torch_counts(kv_heads, 2, 12, False)


def test_json_section_per_token_and_estimates(capsys):
    report = json.loads(_run(capsys, f"{MODEL_FILE}:build", "--batch", "2", "--seq", "8",
                             "--flops", "--json"))
    f = report["flops"]
    n, tokens = report["parameters"], 2 * 8
    assert f["tokens"] == tokens and f["n_parameters"] == n
    assert f["forward_per_token"] == f["forward"] / tokens
    assert f["estimate_2n"] == 2 * n * tokens
    assert f["forward_ratio"] == f["forward"] / f["estimate_2n"]
    assert sum(f["forward_by_op"].values()) == f["forward"]
    assert set(f["forward_by_op"]) == {"addmm", "mm", "_scaled_dot_product_flash_attention_for_cpu"}
    assert "train_step" not in f


def test_train_step_section_and_parameters_left_as_they_were():
    section, model = _measure(_models().build, True, batch=1, seq=16)
    tokens = 16
    assert section["train_step_per_token"] == section["train_step"] / tokens
    assert section["estimate_6n"] == 6 * section["n_parameters"] * tokens
    assert section["train_step_ratio"] == section["train_step"] / section["estimate_6n"]
    assert sum(section["train_step_by_op"].values()) == section["train_step"]
    # backward about twice the forward's products (the first layer's input gets no gradient),
    # attention 5 products for 2
    assert 2 * section["forward"] < section["train_step"] < 3.5 * section["forward"]
    assert all(p.grad is None for p in model.parameters())
    assert all(p.requires_grad for p in model.parameters())


def test_human_report_line(capsys):
    out = _run(capsys, f"{MODEL_FILE}:build", "--seq", "16", "--flops")
    line = next(l for l in out.splitlines() if l.startswith("forward FLOPs"))
    assert "FLOP/token" in line and "2N estimate" in line and "(x0." in line


def test_model_without_token_ids_has_no_per_token_figures(capsys):
    report = json.loads(_run(capsys, f"{EXAMPLE}:build", "--batch", "4", "--flops", "--json"))
    f = report["flops"]
    assert f["forward"] == 2 * 4 * (784 * 512 + 512 * 256 + 256 * 10)
    assert f["tokens"] is None and f["forward_per_token"] is None and f["estimate_2n"] is None
    out = _run(capsys, f"{EXAMPLE}:build", "--flops")
    assert "no token ids" in out


def test_help_lists_the_option(capsys):
    assert main(["shapes", "--help"]) == 0
    assert "--flops" in capsys.readouterr().out


def test_not_run_without_the_option(capsys):
    report = json.loads(_run(capsys, f"{MODEL_FILE}:build", "--json"))
    assert "flops" not in report
