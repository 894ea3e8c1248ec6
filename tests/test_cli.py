"""The ``subclass-kit`` command line: every zoo model through ``main([...])`` in-process, one
real subprocess, JSON fields, exact published parameter counts, and the error cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from subclass_kit import zoo
from subclass_kit.cli import human_bytes, main
from test_zoo import PUBLISHED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "custom_model.py")

# name -> (output shape at batch 2, seq 16; number of block rows)
EXPECTED = {
    # transformer.wte, transformer.wpe, transformer.h.*, transformer.ln_f, lm_head, top level
    "gpt2": ([2, 16, 50257], 2 + 12 + 2 + 1),
    "gpt2-medium": ([2, 16, 50257], 2 + 24 + 2 + 1),
    "gpt2-large": ([2, 16, 50257], 2 + 36 + 2 + 1),
    "gpt2-xl": ([2, 16, 50257], 2 + 48 + 2 + 1),
    # model.embed_tokens, model.layers.*, model.norm, model.rotary_emb, lm_head
    "llama-2-7b": ([2, 16, 32000], 1 + 32 + 3),
    "llama-2-13b": ([2, 16, 32000], 1 + 40 + 3),
    "llama-2-70b": ([2, 16, 32000], 1 + 80 + 3),
    "llama-3-8b": ([2, 16, 128256], 1 + 32 + 3),
    "llama-3-70b": ([2, 16, 128256], 1 + 80 + 3),
    "mistral-7b": ([2, 16, 32000], 1 + 32 + 3),
    "mixtral-8x7b": ([2, 16, 32000], 1 + 32 + 3),
    "qwen2-7b": ([2, 16, 152064], 1 + 28 + 3),
    "gemma-7b": ([2, 16, 256000], 1 + 28 + 3 + 1),      # + top level: the embedding scale
    "bert-base-uncased": ([2, 16, 768], 1 + 12 + 1),     # embeddings, encoder.layer.*, pooler
    "vit-b-16": ([2, 1000], 1 + 12 + 2),     # vit.embeddings, vit.encoder.layer.*, vit.layernorm,
}                                            # classifier


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, "shapes", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_list(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert out.split() == zoo.list_models() == sorted(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_shapes_json_for_every_model(capsys, name):
    args = [name, "--batch", "2"] + ([] if name == "vit-b-16" else ["--seq", "16"])
    report = run_json(capsys, *args)
    shape, rows = EXPECTED[name]
    assert report["model"] == name
    assert report["parameters"] == PUBLISHED[name]
    assert isinstance(report["parameters"], int)
    assert report["parameter_bytes"] == 4 * PUBLISHED[name]
    assert report["output_shape"] == shape
    assert report["dtype"] == "float32"
    blocks = report["blocks"]
    assert len(blocks) == rows
    assert {"name", "output_shape", "parameters", "activation_bytes"} <= set(blocks[0])
    assert sum(b["parameters"] for b in blocks) == PUBLISHED[name]
    assert sum(b["activation_bytes"] for b in blocks) == report["activation_bytes"]
    out_bytes = 4 * _numel(shape)
    assert out_bytes <= report["peak_activation_bytes"] <= (
        report["activation_bytes"] + sum(8 * _numel(s) for s in report["input_shapes"]))


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def test_bert_reports_both_outputs(capsys):
    report = run_json(capsys, "bert-base-uncased", "--seq", "8")
    assert report["output_shapes"] == [[1, 8, 768], [1, 768]]
    assert report["blocks"][-1]["name"] == "pooler"
    assert report["blocks"][-1]["output_shape"] == [1, 768]


def test_dtype_option(capsys):
    report = run_json(capsys, "gpt2", "--seq", "4", "--dtype", "float16")
    assert report["parameter_bytes"] == 2 * PUBLISHED["gpt2"]
    assert report["dtype"] == "float16"
    report = run_json(capsys, "vit-b-16", "--dtype", "float64")
    assert report["parameter_bytes"] == 8 * PUBLISHED["vit-b-16"]


def test_default_batch_and_seq(capsys):
    report = run_json(capsys, "llama-3-8b")
    assert report["input_shapes"] == [[1, zoo.nn.DEFAULT_SEQ]]


def test_attention_dominates_peak_at_long_sequence(capsys):
    report = run_json(capsys, "llama-2-70b", "--seq", "1024")
    scores = 64 * 1024 * 1024 * 4                 # one layer's (heads, seq, seq) float32 scores
    assert report["peak_activation_bytes"] >= 2 * scores      # scores and their softmax
    assert report["peak_activation_bytes"] < 10 * scores      # freed layer by layer


def test_table_is_aligned(capsys):
    code, out, _ = run(capsys, "shapes", "llama-2-7b", "--seq", "32")
    assert code == 0
    assert "6,738,415,616" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("block"))
    table = lines[header:]
    assert set(table[1]) <= {"-", " "}
    rows = table[2:]
    assert len(rows) == 1 + 32 + 3        # embed_tokens, layers.*, norm, rotary_emb, lm_head
    # right-aligned number columns end at the same place on every row
    param_end = len(table[0].split("parameters")[0]) + len("parameters")
    for row in rows:
        assert row[param_end - 1].isdigit(), row
        assert row.rstrip()[-3:] in ("KiB", "MiB", "GiB", " B") or row.endswith("B")
    assert any(line.startswith("peak activations") for line in lines)


def test_human_bytes():
    assert human_bytes(512) == "512 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(3 * 1024 ** 3) == "3.0 GiB"


# -- errors ----------------------------------------------------------------------------------------
def test_unknown_model(capsys):
    code, out, err = run(capsys, "shapes", "gpt-5")
    assert code == 2 and out == ""
    assert "unknown model 'gpt-5'" in err
    for name in PUBLISHED:
        assert name in err


def test_bad_dtype_lists_choices(capsys):
    code, _, err = run(capsys, "shapes", "gpt2", "--dtype", "bfloat16")
    assert code == 2
    assert "bfloat16" in err
    for choice in ("float32", "float16", "float64"):
        assert choice in err


@pytest.mark.parametrize("argv, message", [
    (["shapes", "gpt2", "--seq", "2048"], "exceeds the model's 1024 learned positions"),
    (["shapes", "bert-base-uncased", "--seq", "513"], "512 learned positions"),
    (["shapes", "vit-b-16", "--seq", "16"], "takes no sequence length"),
    (["shapes", "gpt2", "--batch", "0"], "must be at least 1"),
    (["shapes", "gpt2", "--seq", "x"], "invalid int value"),
    (["nonsense"], "invalid choice"),
    (["shapes"], "TARGET"),
])
def test_bad_options(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err


def test_help_documents_contract_and_peak(capsys):
    code, out, _ = run(capsys, "shapes", "--help")
    assert code == 0
    assert "(model, example_inputs)" in out
    assert "peak activations" in out and "inference estimate" in out


@pytest.fixture
def user_file(tmp_path):
    def write(text, name="model.py"):
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return write


def test_file_errors(capsys, user_file, tmp_path):
    missing = str(tmp_path / "nope.py")
    code, _, err = run(capsys, "shapes", f"{missing}:build")
    assert code == 2 and "no such file" in err

    broken = user_file("def build(:\n    pass\n", "broken.py")
    code, _, err = run(capsys, "shapes", f"{broken}:build")
    assert code == 2 and "SyntaxError" in err and "line 1" in err

    failing = user_file("import no_such_module_xyz\n", "failing.py")
    code, _, err = run(capsys, "shapes", f"{failing}:build")
    assert code == 2 and "ModuleNotFoundError" in err

    ok = user_file("def build():\n    pass\ndef other():\n    pass\n", "ok.py")
    code, _, err = run(capsys, "shapes", f"{ok}:nothere")
    assert code == 2 and "no function 'nothere'" in err and "build, other" in err

    code, _, err = run(capsys, "shapes", ok)
    assert code == 2 and f"{ok}:function" in err


def test_user_function_contract_errors(capsys, user_file):
    path = user_file(
        "from __future__ import annotations\n"
        "import dataclasses\n"
        "import subclass_kit as sk\n"
        "@dataclasses.dataclass\n"
        "class Config:\n"
        "    width: int = 3\n"
        "def no_seq(batch=1):\n"
        "    return (lambda x: x * 2), (sk.empty(batch, Config().width, device='meta'),)\n"
        "def wrong():\n"
        "    return 3\n"
        "def raises(device='cpu'):\n"
        "    raise ValueError('boom')\n"
        "def bad_forward():\n"
        "    return (lambda x: x @ x), (sk.empty(2, 3, device='meta'),)\n")
    code, out, err = run(capsys, "shapes", f"{path}:no_seq", "--batch", "4", "--json")
    assert code == 0, err
    assert json.loads(out)["output_shape"] == [4, 3]
    code, _, err = run(capsys, "shapes", f"{path}:no_seq", "--seq", "4")
    assert code == 2 and "takes no 'seq' argument" in err
    code, _, err = run(capsys, "shapes", f"{path}:wrong")
    assert code == 2 and "must return (model, example_inputs)" in err
    code, _, err = run(capsys, "shapes", f"{path}:raises")
    assert code == 1 and "ValueError: boom" in err
    code, _, err = run(capsys, "shapes", f"{path}:bad_forward")
    assert code == 1 and "RuntimeError" in err


def test_example_file(capsys):
    report = run_json(capsys, f"{EXAMPLE}:build", "--batch", "32")
    assert report["parameters"] == 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10
    assert report["output_shape"] == [32, 10]
    assert [b["name"] for b in report["blocks"]] == ["layers.0", "layers.1", "layers.2",
                                                     "(top level)"]
    report = run_json(capsys, f"{EXAMPLE}:tiny_gpt", "--seq", "64", "--dtype", "float16")
    assert report["output_shape"] == [1, 64, 50257]
    assert report["dtype"] == "float16"


def test_real_subprocess_llama_70b_long_sequence():
    """The console script end to end, at the size of the performance target."""
    script = os.path.join(os.path.dirname(sys.executable), "subclass-kit")
    cmd = [script] if os.path.exists(script) else [sys.executable, "-m", "subclass_kit.cli"]
    start = time.perf_counter()
    proc = subprocess.run(cmd + ["shapes", "llama-2-70b", "--seq", "4096", "--json"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["parameters"] == PUBLISHED["llama-2-70b"]
    assert report["output_shape"] == [1, 4096, 32000]
    assert elapsed < 10          # the target is < 1 s; generous for loaded test machines
