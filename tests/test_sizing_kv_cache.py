"""``subclass-kit shapes --kv-cache CONTEXT``: the key/value cache bytes, built as meta tensors,
against the cache size derived by hand from each config's fields (GQA, ``head_dim`` unlike
``hidden / heads``, sliding windows, GPT-2's field names), and the error cases."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subclass_kit import zoo
from subclass_kit.cli import main
from subclass_kit.sizing import SizingError
from subclass_kit.sizing.kv_cache import layer_caches

SIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def run(capsys, *argv):
    code = main(["shapes", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def kv_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--seq", "8", "--json")
    assert code == 0, err
    return json.loads(out)


def raw_config(name):
    with open(os.path.join(os.path.dirname(zoo.__file__), "configs", name + ".json")) as f:
        return json.load(f)


def test_llama_2_7b_full_multi_head_cache(capsys):
    c = raw_config("llama-2-7b")          # 32 layers, 32 heads = 32 K/V heads, hidden 4096
    context, batch = 4096, 2
    head_dim = c["hidden_size"] // c["num_attention_heads"]
    expected = (2 * c["num_hidden_layers"] * batch * c["num_key_value_heads"] * context
                * head_dim * SIZE[c["torch_dtype"]])
    report = kv_json(capsys, "llama-2-7b", "--kv-cache", str(context), "--batch", str(batch))
    assert report["kv_cache_bytes"] == expected == 4 * 1024 ** 3     # the well-known 2 GiB/seq
    assert report["kv_cache_dtype"] == "float16"
    assert report["total_memory_bytes"] == (report["parameter_bytes"] + expected
                                            + report["peak_activation_bytes"])
    assert "kv_cache_bytes" in report["total_memory_basis"]


def test_grouped_query_attention_caches_only_the_kv_heads(capsys):
    c = raw_config("llama-2-70b")         # 64 query heads share 8 K/V heads
    assert c["num_key_value_heads"] < c["num_attention_heads"]
    context = 1000
    head_dim = c["hidden_size"] // c["num_attention_heads"]
    expected = 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * context * head_dim * 4
    report = kv_json(capsys, "llama-2-70b", "--kv-cache", str(context), "--dtype", "float32")
    assert report["kv_cache_bytes"] == expected
    mha = 2 * c["num_hidden_layers"] * c["hidden_size"] * context * 4   # the MHA formula
    assert report["kv_cache_bytes"] * 8 == mha


def test_head_dim_from_the_config(capsys):
    c = raw_config("gemma-7b")            # head_dim 256 while hidden / heads = 192
    assert c["head_dim"] != c["hidden_size"] // c["num_attention_heads"]
    context = 8192
    expected = (2 * c["num_hidden_layers"] * c["num_key_value_heads"] * context
                * c["head_dim"] * SIZE[c["torch_dtype"]])
    report = kv_json(capsys, "gemma-7b", "--kv-cache", str(context))
    assert report["kv_cache_bytes"] == expected


def test_sliding_window_caps_the_cache(capsys):
    c = raw_config("mistral-7b")          # sliding_window 4096 on every layer
    head_dim = c["hidden_size"] // c["num_attention_heads"]
    per_token = 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * head_dim * 2
    long = kv_json(capsys, "mistral-7b", "--kv-cache", "32768")
    assert long["kv_cache_bytes"] == per_token * c["sliding_window"]
    short = kv_json(capsys, "mistral-7b", "--kv-cache", "1000")
    assert short["kv_cache_bytes"] == per_token * 1000


def test_qwen2_window_only_with_use_sliding_window(capsys, tmp_path):
    c = raw_config("qwen2-7b")            # sliding_window set but use_sliding_window false
    assert c["sliding_window"] and not c["use_sliding_window"]
    head_dim = c["hidden_size"] // c["num_attention_heads"]
    per_layer_token = 2 * c["num_key_value_heads"] * head_dim * 2
    context = 8192
    report = kv_json(capsys, "qwen2-7b", "--kv-cache", str(context))
    assert report["kv_cache_bytes"] == c["num_hidden_layers"] * per_layer_token * context
    # Switched on: layers >= max_window_layers keep the window only.
    c.update(use_sliding_window=True, sliding_window=1024, max_window_layers=20)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(c))
    report = kv_json(capsys, str(path), "--kv-cache", str(context))
    full, windowed = 20, c["num_hidden_layers"] - 20
    assert report["kv_cache_bytes"] == per_layer_token * (full * context + windowed * 1024)


def test_mixtral_and_gpt2(capsys):
    c = raw_config("mixtral-8x7b")        # sliding_window null: the full context
    assert c["sliding_window"] is None
    head_dim = c["hidden_size"] // c["num_attention_heads"]
    report = kv_json(capsys, "mixtral-8x7b", "--kv-cache", "32768")
    assert report["kv_cache_bytes"] == (2 * c["num_hidden_layers"] * c["num_key_value_heads"]
                                        * 32768 * head_dim * 2)
    g = raw_config("gpt2")                # n_layer, n_head, n_embd; no GQA
    report = kv_json(capsys, "gpt2", "--kv-cache", "1024", "--batch", "3")
    assert report["kv_cache_bytes"] == 2 * g["n_layer"] * 3 * 1024 * g["n_embd"] * 4


def test_layer_caches_of_a_parsed_config_with_layer_types():
    from subclass_kit.zoo.config import parse
    raw = {"model_type": "qwen2", "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 2, "hidden_size": 512, "intermediate_size": 64,
           "vocab_size": 10, "sliding_window": 16, "use_sliding_window": True,
           "layer_types": ["full_attention", "sliding_attention"] * 2}
    # hidden 512 / 8 heads: head_dim 64; every other layer keeps 16 tokens
    assert layer_caches(parse(raw), context=100, batch=3) == \
        [(3, 2, 100, 64), (3, 2, 16, 64)] * 2
    assert layer_caches(parse({**raw, "head_dim": 32}), context=8)[0] == (1, 2, 8, 32)
    with pytest.raises(SizingError, match="encoder-only"):
        layer_caches(zoo.get_config("bert-base-uncased"), context=4)


def test_report_line(capsys):
    code, out, _ = run(capsys, "mistral-7b", "--seq", "8", "--kv-cache", "32768")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("KV cache"))
    assert "context 32,768" in line and "[1, 8, 4096, 128]" in line and "bfloat16" in line


@pytest.mark.parametrize("target, message", [
    ("bert-base-uncased", "encoder-only"),
    ("vit-b-16", "encoder-only"),
])
def test_encoder_only_models_have_no_cache(capsys, target, message):
    code, out, err = run(capsys, target, "--kv-cache", "128")
    assert code == 2 and out == ""
    assert message in err and "--kv-cache" in err


def test_user_function_needs_a_config(capsys):
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "examples", "custom_model.py")
    code, _, err = run(capsys, f"{example}:tiny_gpt", "--kv-cache", "128")
    assert code == 2 and "needs a model config" in err


def test_bad_context(capsys):
    code, _, err = run(capsys, "gpt2", "--kv-cache", "0")
    assert code == 2 and "must be at least 1" in err


@settings(max_examples=60, deadline=None)
@given(model_type=st.sampled_from(["llama", "mistral", "qwen2", "gemma"]),
       layers=st.integers(1, 6), kv_heads=st.integers(1, 4), group=st.integers(1, 4),
       head_dim=st.sampled_from([None, 8, 24]), window=st.one_of(st.none(), st.integers(1, 64)),
       use_window=st.booleans(), max_window_layers=st.integers(0, 6),
       context=st.integers(1, 100), batch=st.integers(1, 3))
def test_cache_bytes_match_the_hand_formula(model_type, layers, kv_heads, group, head_dim,
                                            window, use_window, max_window_layers, context,
                                            batch):
    """Any decoder config: 2 (K and V) x batch x kv_heads x tokens x head_dim x bytes per
    layer, tokens capped by the window where Hugging Face applies it."""
    from types import SimpleNamespace

    from subclass_kit.sizing.kv_cache import measure
    from subclass_kit.zoo.config import parse

    heads = kv_heads * group
    raw = {"model_type": model_type, "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": kv_heads, "hidden_size": 16 * heads,
           "intermediate_size": 8, "vocab_size": 11, "sliding_window": window,
           "use_sliding_window": use_window, "max_window_layers": max_window_layers}
    if head_dim is not None:
        raw["head_dim"] = head_dim
    # Absent head_dim: hidden / heads, except GemmaConfig whose default is 256.
    dim = head_dim or (256 if model_type == "gemma" else 16)
    expected = 0
    for i in range(layers):
        slides = window is not None and (
            model_type == "mistral"
            or (model_type == "qwen2" and use_window and i >= max_window_layers))
        tokens = min(context, window) if slides else context
        expected += 2 * batch * kv_heads * tokens * dim * 2             # float16
    args = SimpleNamespace(kv_cache=context, batch=batch, dtype="float16")
    ctx = SimpleNamespace(config=parse(raw), args=args, name="cfg")
    assert measure(ctx)["kv_cache_bytes"] == expected
