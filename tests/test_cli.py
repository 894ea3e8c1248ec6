"""The ``subclass-kit`` command line: every zoo model through ``main([...])`` in-process, one
real subprocess, JSON fields, exact published parameter counts, and the error cases."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subclass_kit import cli, zoo
from subclass_kit.cli import human_bytes, main
from subclass_kit.sizing.report import collapse_blocks, parse_size
from subclass_kit.zoo.summary import BlockRow
from test_zoo import PUBLISHED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "custom_model.py")
ELEMENT_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def expected_blocks(cfg) -> list:
    """The block rows of a zoo model: the children of Hugging Face's module tree (its
    state_dict prefixes), ModuleLists expanded, in call order."""
    t = cfg.model_type
    if t == "gpt2":
        return (["transformer.wte", "transformer.wpe"]
                + [f"transformer.h.{i}" for i in range(cfg.n_layer)]
                + ["transformer.ln_f", "lm_head"])
    if t == "bert":
        return (["embeddings"] + [f"encoder.layer.{i}" for i in range(cfg.num_hidden_layers)]
                + ["pooler"])
    if t == "vit":
        return (["vit.embeddings"]
                + [f"vit.encoder.layer.{i}" for i in range(cfg.num_hidden_layers)]
                + ["vit.layernorm", "classifier"])
    return (["model.embed_tokens"] + [f"model.layers.{i}" for i in range(cfg.num_hidden_layers)]
            + ["model.norm", "model.rotary_emb", "lm_head"])


def expected_outputs(cfg, batch, seq) -> list:
    """Output shapes (first, then the others) from the config's fields."""
    if cfg.model_type == "bert":
        return [[batch, seq, cfg.hidden_size], [batch, cfg.hidden_size]]
    if cfg.model_type == "vit":
        return [[batch, cfg.num_labels]]
    return [[batch, seq, cfg.vocab_size]]


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
    assert out.split() == zoo.list_models()
    assert set(PUBLISHED) <= set(out.split())


@pytest.mark.parametrize("name", zoo.list_models())
def test_shapes_json_for_every_model(capsys, name):
    cfg = zoo.get_config(name)
    args = [name, "--batch", "2"] + ([] if name == "vit-b-16" else ["--seq", "16"])
    report = run_json(capsys, *args)
    outputs = expected_outputs(cfg, 2, 16)
    dtype = cfg.torch_dtype or "float32"         # the config's dtype is the default
    assert report["model"] == name
    if name in PUBLISHED:
        assert report["parameters"] == PUBLISHED[name]
    assert isinstance(report["parameters"], int)
    assert report["parameter_bytes"] == ELEMENT_SIZE[dtype] * report["parameters"]
    assert report["output_shape"] == outputs[0]
    assert report["other_output_shapes"] == outputs[1:]
    assert report["dtype"] == dtype
    assert report["attention"] == "sdpa"
    assert "output_shapes" not in report and "activation_bytes" not in report
    blocks = report["blocks"]
    assert [b["name"] for b in blocks if b["name"] != "(top level)"] == expected_blocks(cfg)
    assert {"name", "output_shape", "parameters", "cumulative_allocated_bytes"} <= set(blocks[0])
    assert sum(b["parameters"] for b in blocks) == report["parameters"]
    assert sum(b["cumulative_allocated_bytes"] for b in blocks) == \
        report["cumulative_allocated_bytes"]
    out_bytes = ELEMENT_SIZE[dtype] * _numel(outputs[0])
    assert out_bytes <= report["peak_activation_bytes"] <= (
        report["cumulative_allocated_bytes"] + sum(8 * _numel(s) for s in report["input_shapes"]))
    assert report["total_memory_bytes"] == (report["parameter_bytes"]
                                            + report["peak_activation_bytes"])
    assert report["total_memory_basis"] == "parameter_bytes + peak_activation_bytes"
    assert report["warnings"] == []


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def test_bert_reports_both_outputs_once(capsys):
    report = run_json(capsys, "bert-base-uncased", "--seq", "8")
    assert report["output_shape"] == [1, 8, 768]
    assert report["other_output_shapes"] == [[1, 768]]
    assert report["blocks"][-1]["name"] == "pooler"
    assert report["blocks"][-1]["output_shape"] == [1, 768]
    code, out, _ = run(capsys, "shapes", "bert-base-uncased", "--seq", "8")
    assert "output            [1, 8, 768], [1, 768] float32" in out


def test_dtype_option(capsys):
    report = run_json(capsys, "gpt2", "--seq", "4", "--dtype", "float16")
    assert report["parameter_bytes"] == 2 * PUBLISHED["gpt2"]
    assert report["dtype"] == "float16"
    assert report["notes"] == []
    report = run_json(capsys, "gpt2", "--seq", "4", "--dtype", "bfloat16")
    assert report["parameter_bytes"] == 2 * PUBLISHED["gpt2"]
    assert report["dtype"] == "bfloat16"
    report = run_json(capsys, "vit-b-16", "--dtype", "float64")
    assert report["parameter_bytes"] == 8 * PUBLISHED["vit-b-16"]
    report = run_json(capsys, "gpt2", "--seq", "4", "--dtype", "bfloat16")
    assert report["parameter_bytes"] == 2 * PUBLISHED["gpt2"]
    assert report["dtype"] == "bfloat16"


def test_default_dtype_is_the_configs(capsys):
    cfg = zoo.get_config("llama-3-8b")
    assert cfg.torch_dtype == "bfloat16"
    report = run_json(capsys, "llama-3-8b", "--seq", "4")
    assert report["dtype"] == "bfloat16"
    assert report["parameter_bytes"] == 2 * PUBLISHED["llama-3-8b"]
    assert any("torch_dtype" in note for note in report["notes"])
    report = run_json(capsys, "llama-3-8b", "--seq", "4", "--dtype", "float32")
    assert report["parameter_bytes"] == 4 * PUBLISHED["llama-3-8b"]
    assert report["notes"] == []


def test_default_batch_and_seq(capsys):
    report = run_json(capsys, "llama-3-8b")
    assert report["input_shapes"] == [[1, zoo.nn.DEFAULT_SEQ]]


def test_attention_option(capsys):
    """eager holds each layer's (heads, seq, seq) scores and float32 probabilities, so its peak
    grows with seq**2; sdpa (one fused op) holds no (seq, seq) matrix: linear in seq."""
    heads = zoo.get_config("llama-2-7b").num_attention_heads
    peaks = {}
    for attention in ("sdpa", "eager"):
        for seq in (1024, 2048):
            report = run_json(capsys, "llama-2-7b", "--seq", str(seq), "--dtype", "float32",
                              "--attention", attention)
            assert report["attention"] == attention
            peaks[attention, seq] = report["peak_activation_bytes"]
    scores = heads * 2048 * 2048 * 4                # one layer's float32 scores at seq 2048
    assert peaks["eager", 2048] >= 2 * scores        # scores and their softmax
    assert peaks["eager", 2048] < 10 * scores        # freed layer by layer
    assert peaks["eager", 2048] > 3 * peaks["eager", 1024]
    assert peaks["sdpa", 2048] < scores
    assert peaks["sdpa", 2048] <= 2 * peaks["sdpa", 1024]
    code, out, _ = run(capsys, "shapes", "gpt2", "--seq", "8", "--attention", "eager")
    assert code == 0 and "eager attention" in out
    assert run_json(capsys, "gpt2", "--seq", "8")["attention"] == "sdpa"


def test_seq_past_the_trained_positions_is_reported(capsys):
    cfg = zoo.get_config("llama-2-7b")
    seq = 2 * cfg.max_position_embeddings
    code, out, err = run(capsys, "shapes", "llama-2-7b", "--seq", str(seq), "--json")
    assert code == 0
    report = json.loads(out)
    assert len(report["warnings"]) == 1
    assert "max_position_embeddings" in report["warnings"][0]
    assert "warning:" in err and "max_position_embeddings" in err
    code, out, _ = run(capsys, "shapes", "llama-2-7b", "--seq", str(seq))
    assert code == 0
    assert any(line.startswith("note: warning:") and "max_position_embeddings" in line
               for line in out.splitlines())


def test_gpu_memory_fits(capsys):
    report = run_json(capsys, "llama-2-7b", "--seq", "64", "--gpu-memory", "80GiB")
    assert report["gpu_memory_bytes"] == 80 * 1024 ** 3
    assert report["fits"] is True
    report = run_json(capsys, "llama-2-7b", "--seq", "64", "--gpu-memory", "8GB")
    assert report["gpu_memory_bytes"] == 8 * 10 ** 9
    assert report["fits"] is (report["total_memory_bytes"] <= 8 * 10 ** 9) is False
    code, out, _ = run(capsys, "shapes", "llama-2-7b", "--seq", "64", "--gpu-memory", "8GB")
    assert code == 0
    assert next(line for line in out.splitlines() if line.startswith("fits")).split()[1] == "no:"
    code, out, err = run(capsys, "shapes", "gpt2", "--gpu-memory", "80")
    assert code == 2 and "invalid size '80'" in err


def test_parse_size():
    assert parse_size("80GiB") == 80 * 2 ** 30
    assert parse_size("24 GB") == 24 * 10 ** 9
    assert parse_size("1.5kib") == 1536
    assert parse_size("512B") == 512
    for bad in ("80", "GB", "-1GB", "1 parsec", ""):
        with pytest.raises(ValueError, match="invalid size"):
            parse_size(bad)


def test_table_is_aligned_and_collapses_identical_blocks(capsys):
    code, out, _ = run(capsys, "shapes", "llama-2-7b", "--seq", "32")
    assert code == 0
    assert "6,738,415,616" in out
    lines = out.splitlines()
    assert lines[0].startswith("model") and lines[1].startswith("inputs")
    assert any(line.startswith("total") for line in lines)
    header = next(i for i, line in enumerate(lines) if line.startswith("block"))
    table = lines[header:]
    assert set(table[1]) <= {"-", " "}
    assert table[-1].startswith("(a row name.i")
    rows = table[2:-1]
    names = [row.split("  ")[0].strip() for row in rows]
    # 32 identical decoder layers: one row
    assert names == ["model.embed_tokens", "model.layers.0\u201331 \u00d732", "model.norm",
                     "model.rotary_emb", "lm_head"]
    layer = next(b for b in run_json(capsys, "llama-2-7b", "--seq", "32")["blocks"]
                 if b["name"] == "model.layers.0")
    assert f"{layer['parameters']:,}" in rows[1]      # the numbers of one block
    # right-aligned number columns end at the same place on every row
    param_end = len(table[0].split("parameters")[0]) + len("parameters")
    for row in rows:
        assert row[param_end - 1].isdigit(), row
        assert row.rstrip()[-3:] in ("KiB", "MiB", "GiB", " B") or row.endswith("B")
    assert any(line.startswith("peak activations") for line in lines)


def _row(name, shape=(2, 4), params=10, nbytes=32):
    return BlockRow(name, list(shape), "float32", params, nbytes)


def test_collapse_blocks_only_joins_consecutive_identical_rows():
    rows = [_row("embed"), _row("layers.0"), _row("layers.1"), _row("layers.2"),
            _row("layers.3", params=11), _row("layers.4"), _row("layers.6"), _row("layers.7"),
            _row("other.8"), _row("other.9", shape=(2, 5)), _row("head")]
    labels = [label for label, _ in collapse_blocks(rows, dash="-", times="x")]
    assert labels == ["embed", "layers.0-2 x3", "layers.3", "layers.4", "layers.6-7 x2",
                      "other.8", "other.9", "head"]
    assert [label for label, _ in collapse_blocks(rows[:3])][1] == "layers.0\u20131 \u00d72"
    assert collapse_blocks([]) == []


def test_ascii_terminal_gets_ascii_labels(capsys, monkeypatch):
    from subclass_kit.sizing.report import format_report
    model = zoo.get_model("gpt2", n_layer=3)
    s = zoo.summarize(model, model.example_inputs(seq=4), name="tiny")
    assert "transformer.h.0-2 x3" in format_report(s, ascii_only=True)
    assert "transformer.h.0\u20132 \u00d73" in format_report(s)
    assert cli._can_print("\u00d7") is True           # capsys writes UTF-8
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert cli._can_print("\u00d7") is False


def test_user_function_blocks_that_differ_stay_apart(capsys):
    code, out, _ = run(capsys, "shapes", f"{EXAMPLE}:build")
    assert code == 0
    for name in ("layers.0", "layers.1", "layers.2"):
        assert any(line.startswith(name + " ") for line in out.splitlines())


def test_every_json_number_is_explained_in_help(capsys):
    code, help_text, _ = run(capsys, "shapes", "--help")
    assert code == 0
    report = run_json(capsys, "llama-2-7b", "--seq", "8", "--kv-cache", "64",
                      "--gpu-memory", "24GB")
    explained = set(re.findall(r"\[([a-z_, ]+)\]", help_text.replace("\n", " ")))
    names = {n.strip() for group in explained for n in group.split(",")}
    undocumented = {key for key, value in report.items()
                    if isinstance(value, (int, float)) and not isinstance(value, bool)
                    and key not in names}
    undocumented.discard("kv_cache_context")      # an input echoed back
    assert undocumented == set()
    for key in ("fits", "notes", "warnings", "blocks", "cumulative_allocated_bytes"):
        assert key in names


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
    code, _, err = run(capsys, "shapes", "gpt2", "--dtype", "int8")
    assert code == 2
    assert "int8" in err
    for choice in ("float32", "float16", "bfloat16", "float64"):
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


def test_config_json_target(capsys, tmp_path):
    """A config.json and the zoo name of the same file give the same report."""
    with open(os.path.join(os.path.dirname(zoo.__file__), "configs", "qwen2-7b.json")) as f:
        raw = json.load(f)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    from_file = run_json(capsys, str(path), "--seq", "8")
    from_zoo = run_json(capsys, "qwen2-7b", "--seq", "8")
    assert from_file["model"] == str(path)
    for key in ("parameters", "parameter_bytes", "output_shape", "dtype",
                "peak_activation_bytes"):
        assert from_file[key] == from_zoo[key]
    assert from_file["dtype"] == raw["torch_dtype"]
    raw["model_type"] = "t5"
    path.write_text(json.dumps(raw))
    code, out, err = run(capsys, "shapes", str(path))
    assert code == 2 and out == "" and "t5" in err
    code, _, err = run(capsys, "shapes", str(tmp_path / "missing.json"))
    assert code == 2 and "missing.json" in err and "cannot read" in err


def test_attention_is_for_zoo_models(capsys):
    code, _, err = run(capsys, "shapes", f"{EXAMPLE}:build", "--attention", "eager")
    assert code == 2 and "--attention" in err


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


def test_total_memory_follows_the_widest_question():
    from types import SimpleNamespace

    from subclass_kit.sizing.report import total_memory
    s = SimpleNamespace(parameter_bytes=100, peak_activation_bytes=10)
    assert total_memory(s, {}) == (110, "parameter_bytes + peak_activation_bytes")
    kv = {"kv_cache": {"kv_cache_bytes": 5}}
    assert total_memory(s, kv)[0] == 115
    train = {**kv, "train": {"peak": 400}}
    assert total_memory(s, train) == (400, "train.peak (the training step's peak)")
    sharded = {**train, "per_rank": {"peak": 70}}
    assert total_memory(s, sharded) == (70, "per_rank.peak (the largest rank's peak)")


def test_moe_reports_active_parameters(capsys):
    report = run_json(capsys, "mixtral-8x7b", "--seq", "8")
    assert 0 < report["active_parameters"] < report["parameters"]
    code, out, _ = run(capsys, "shapes", "mixtral-8x7b", "--seq", "8")
    line = next(line for line in out.splitlines() if line.startswith("active parameters"))
    assert f"{report['active_parameters']:,}" in line
    assert "active_parameters" not in [k for k, v in run_json(capsys, "gpt2", "--seq", "4").items()
                                       if v is not None]


def test_docs_sizing_example_is_the_real_output(capsys):
    """docs/sizing.md shows a run of the command line: it must stay what the command prints."""
    with open(os.path.join(ROOT, "docs", "sizing.md"), encoding="utf-8") as f:
        text = f.read()
    block = text.split("```\n$ subclass-kit ", 1)[1].split("```", 1)[0]
    command, expected = block.split("\n", 1)
    code, out, err = run(capsys, *command.split())
    assert code == 0, err
    assert out == expected


@pytest.mark.parametrize("name, context", [("mistral-7b", 32768), ("gemma-7b", 8192)])
def test_docs_sizing_comparison_quotes_current_figures(capsys, name, context):
    """The comparison in docs/sizing.md quotes our figures: they must be what we print."""
    with open(os.path.join(ROOT, "docs", "sizing.md"), encoding="utf-8") as f:
        text = f.read()
    sdpa = run_json(capsys, name, "--seq", "4096", "--kv-cache", str(context))
    eager = run_json(capsys, name, "--seq", "4096", "--attention", "eager")
    for n in (sdpa["parameters"], sdpa["parameter_bytes"], sdpa["kv_cache_bytes"],
              sdpa["peak_activation_bytes"], eager["peak_activation_bytes"]):
        assert f"{n:,}" in text, (name, n)


def test_docs_sizing_names_every_json_field(capsys):
    with open(os.path.join(ROOT, "docs", "sizing.md"), encoding="utf-8") as f:
        text = f.read()
    report = run_json(capsys, "llama-2-7b", "--seq", "8", "--kv-cache", "64",
                      "--gpu-memory", "24GB")
    assert [key for key in report if f"`{key}`" not in text] == []
    assert [key for key in report["blocks"][0] if f"`{key}`" not in text] == []


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["layers", "h", "blocks"]), st.integers(0, 5),
                          st.integers(1, 3), st.integers(0, 2)), max_size=30))
def test_collapse_blocks_expands_back_to_the_rows(spec):
    """Each collapsed row stands for consecutive rows prefix.i..j that are identical, and the
    rows expand back to the input in order; no two neighbouring output rows could merge."""
    rows, index = [], {}
    for prefix, step, params, nbytes in spec:
        index[prefix] = index.get(prefix, -1) + (step or 1)     # increasing, sometimes gaps
        rows.append(_row(f"{prefix}.{index[prefix]}", params=params, nbytes=nbytes))
    out = collapse_blocks(rows, dash="-", times="x")
    expanded = []
    for label, row in out:
        m = re.fullmatch(r"(.*)\.(\d+)-(\d+) x(\d+)", label)
        if m:
            prefix, i, j, n = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            assert n == j - i + 1 >= 2
            expanded += [(f"{prefix}.{k}", row) for k in range(i, j + 1)]
        else:
            expanded.append((label, row))
    assert [name for name, _ in expanded] == [r.name for r in rows]
    by_name = {r.name: r for r in rows}
    for name, row in expanded:
        twin = by_name[name]
        assert (twin.output_shape, twin.parameters, twin.cumulative_allocated_bytes) == \
            (row.output_shape, row.parameters, row.cumulative_allocated_bytes)
