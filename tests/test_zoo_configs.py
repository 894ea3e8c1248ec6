"""Hugging Face ``config.json`` files in the zoo: the shipped configs, ``from_config`` and its
errors, what each field changes, Hugging Face ``state_dict`` names, the mixture of experts
(active parameters, routing on meta), attention implementations, the long-sequence warning, and
tiny Qwen2 / Gemma / Mixtral configs against torch references written from the Hugging Face
modeling code's definitions (not from the zoo's code).
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit import zoo
from subclass_kit.cli import main

CONFIGS = os.path.join(os.path.dirname(zoo.__file__), "configs")


def _path(name):
    return os.path.join(CONFIGS, name + ".json")


def _raw(name):
    with open(_path(name)) as f:
        return json.load(f)


def _numel(model):
    return sum(p.numel() for p in model.parameters())


# -- the shipped configs -------------------------------------------------------------------------
def test_every_zoo_model_is_a_shipped_config_json():
    files = sorted(f[:-5] for f in os.listdir(CONFIGS) if f.endswith(".json"))
    assert files == zoo.list_models()
    with open(os.path.join(os.path.dirname(CONFIGS), "..", "..", "pyproject.toml")) as f:
        assert '"zoo/configs/*.json"' in f.read()            # installed as package data
    for name in files:
        raw = _raw(name)
        assert raw["model_type"] in zoo.config.MODEL_TYPES
        assert "architectures" in raw                         # a real HF file, not a stub


@pytest.mark.parametrize("name", ["gpt2", "llama-3-70b", "mixtral-8x7b", "gemma-7b",
                                  "bert-base-uncased", "vit-b-16"])
def test_zoo_name_and_config_path_are_one_code_path(name):
    by_name = zoo.get_model(name, **_one_layer(name))
    by_path = zoo.from_config(_path(name), **_one_layer(name))
    by_dict = zoo.from_config(_raw(name), **_one_layer(name))
    shapes = {k: tuple(v.shape) for k, v in by_name.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in by_path.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in by_dict.state_dict().items()}
    assert type(by_name) is type(by_path)
    assert by_path.config.name_or_path == _path(name)


def _one_layer(name):
    return {"n_layer": 1} if name.startswith("gpt2") else {"num_hidden_layers": 1}


def test_cli_accepts_a_config_json(capsys, tmp_path):
    assert main(["shapes", _path("qwen2-7b"), "--seq", "8", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parameters"] == 7_615_616_512
    assert report["output_shape"] == [1, 8, 152064]
    assert report["active_parameters"] is None
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "t5", "d_model": 512}))
    assert main(["shapes", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "unsupported model_type 't5'" in err and "qwen2" in err


# -- errors ---------------------------------------------------------------------------------------
def test_unsupported_model_type_names_it_and_the_supported_ones():
    with pytest.raises(ValueError) as info:
        zoo.from_config({"model_type": "falcon", "hidden_size": 64})
    text = str(info.value)
    assert "unsupported model_type 'falcon'" in text
    for supported in ("llama", "mistral", "mixtral", "qwen2", "gemma", "gpt2", "bert", "vit"):
        assert supported in text


def test_missing_fields_are_named_with_the_file(tmp_path):
    raw = _raw("llama-2-7b")
    del raw["intermediate_size"]
    path = tmp_path / "my-llama.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=r"my-llama\.json: required config field "
                                         r"'intermediate_size' is missing"):
        zoo.from_config(path)
    path.write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(ValueError, match="'model_type' is missing"):
        zoo.from_config(str(path))
    raw = _raw("mixtral-8x7b")
    del raw["num_local_experts"]
    with pytest.raises(ValueError, match="'num_local_experts'"):
        zoo.from_config(raw)


def test_unreadable_files_and_bad_values(tmp_path):
    with pytest.raises(ValueError, match="nope.json: cannot read"):
        zoo.from_config(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: not a JSON config"):
        zoo.from_config(broken)
    with pytest.raises(ValueError, match="not a multiple of num_key_value_heads 3"):
        zoo.get_model("llama-2-7b", num_key_value_heads=3)
    with pytest.raises(ValueError, match="not divisible by num_attention_heads 7"):
        zoo.get_model("llama-2-7b", num_attention_heads=7, num_key_value_heads=7)
    with pytest.raises(ValueError, match="attn_implementation must be one of sdpa, eager"):
        zoo.get_model("gpt2", attn_implementation="flash_attention_2")
    with pytest.raises(ValueError, match="unsupported torch_dtype 'int8'"):
        zoo.get_model("gpt2", torch_dtype="int8")
    with pytest.raises(ValueError, match="unsupported activation 'swiglu'"):
        zoo.get_model("llama-2-7b", hidden_act="swiglu", num_hidden_layers=1)
    with pytest.raises(TypeError, match="no field 'n_layer'"):
        zoo.get_model("llama-2-7b", n_layer=2)           # a GPT-2 field on a LLaMA
    with pytest.raises(ValueError, match="num_experts_per_tok 9"):
        zoo.get_model("mixtral-8x7b", num_experts_per_tok=9)


def test_dtype_auto_follows_torch_dtype():
    model = zoo.get_model("llama-2-7b", dtype="auto", num_hidden_layers=1)
    assert {p.dtype for p in model.parameters()} == {sk.float16}
    assert {p.dtype for p in zoo.get_model("gpt2", dtype="auto", n_layer=1).parameters()} == {
        sk.float32}                                      # no torch_dtype: the default dtype
    bf16 = getattr(sk, "bfloat16", None)
    if bf16 is None:
        with pytest.raises(ValueError, match="torch_dtype is 'bfloat16'"):
            zoo.get_model("mistral-7b", dtype="auto", num_hidden_layers=1)
    else:
        model = zoo.get_model("mistral-7b", dtype="auto", num_hidden_layers=1)
        assert {p.dtype for p in model.parameters()} == {bf16}
    assert zoo.config_dtype(zoo.get_config("llama-2-7b")) is sk.float16
    with pytest.raises(ValueError, match="'auto'"):
        zoo.get_model("gpt2", dtype="float16")


# -- what the fields do ---------------------------------------------------------------------------
def _shapes(model):
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def test_head_dim_and_kv_heads():
    gemma = _shapes(zoo.get_model("gemma-7b", num_hidden_layers=1))
    # 16 heads of 256 in a 3072-wide model: q/k/v are 4096 wide, o maps back
    assert gemma["model.layers.0.self_attn.q_proj.weight"] == (4096, 3072)
    assert gemma["model.layers.0.self_attn.o_proj.weight"] == (3072, 4096)
    cfg = zoo.from_config({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
                           "num_hidden_layers": 1, "num_attention_heads": 4,
                           "vocab_size": 10}).config
    assert (cfg.num_key_value_heads, cfg.head_dim) == (4, 16)     # HF's defaults
    assert zoo.get_config("llama-3-8b").num_key_value_heads == 8


def test_biases_by_model_type():
    qwen = _shapes(zoo.get_model("qwen2-7b", num_hidden_layers=1))
    assert qwen["model.layers.0.self_attn.q_proj.bias"] == (3584,)
    assert qwen["model.layers.0.self_attn.k_proj.bias"] == (512,)
    assert "model.layers.0.self_attn.o_proj.bias" not in qwen       # q/k/v only
    assert not any(n.endswith("bias") for n in _shapes(zoo.get_model("llama-3-8b",
                                                                     num_hidden_layers=1)))
    llama = _shapes(zoo.get_model("llama-3-8b", num_hidden_layers=1, attention_bias=True))
    assert {n.split(".")[-2] for n in llama if n.endswith("bias")} == {
        "q_proj", "k_proj", "v_proj", "o_proj"}


def test_tied_embeddings():
    gemma = zoo.get_model("gemma-7b", num_hidden_layers=1)
    assert gemma.lm_head.weight is gemma.model.embed_tokens.weight
    assert "lm_head.weight" in gemma.state_dict()
    untied = zoo.get_model("gemma-7b", num_hidden_layers=1, tie_word_embeddings=False)
    assert _numel(untied) == _numel(gemma) + 256000 * 3072
    tied = zoo.get_model("llama-2-7b", num_hidden_layers=1, tie_word_embeddings=True)
    assert _numel(tied) == _numel(zoo.get_model("llama-2-7b", num_hidden_layers=1)) - 32000 * 4096


def test_sliding_windows_per_model_type():
    mistral = zoo.get_config("mistral-7b")
    assert [mistral.layer_sliding_window(i) for i in (0, 31)] == [4096, 4096]
    qwen = zoo.get_config("qwen2-7b")
    assert qwen.layer_sliding_window(27) is None                 # use_sliding_window false
    qwen = zoo.get_config("qwen2-7b", use_sliding_window=True, max_window_layers=20,
                          sliding_window=1024)
    assert [qwen.layer_sliding_window(i) for i in (19, 20, 27)] == [None, 1024, 1024]
    qwen = zoo.get_config("qwen2-7b", num_hidden_layers=3, sliding_window=64,
                          layer_types=["full_attention", "sliding_attention", "full_attention"])
    assert [qwen.layer_sliding_window(i) for i in range(3)] == [None, 64, None]
    with pytest.raises(ValueError, match="layer_types has 1 entries for 28 layers"):
        zoo.get_config("qwen2-7b", layer_types=["full_attention"])
    assert zoo.get_config("llama-2-7b", sliding_window=8).layer_sliding_window(0) is None
    assert zoo.get_config("mixtral-8x7b").sliding_window is None


def test_gemma_defaults_and_activation():
    cfg = zoo.get_config("gemma-7b")
    assert cfg.hidden_act == "gelu" and cfg.activation == "gelu_pytorch_tanh"
    assert zoo.get_config("gemma-7b", hidden_activation="gelu").activation == "gelu"
    norm = zoo.get_model("gemma-7b", num_hidden_layers=1, device="cpu", vocab_size=8,
                         hidden_size=8, intermediate_size=8, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=4).model.norm
    assert np.all(norm.weight.detach().numpy() == 0)           # scales by 1 + weight


def test_vit_labels_from_id2label():
    raw = {**_raw("vit-b-16"), "id2label": {str(i): f"c{i}" for i in range(10)}}
    del raw["num_labels"]
    assert zoo.from_config(raw).classifier.weight.shape == (10, 768)


# -- Hugging Face state_dict names ----------------------------------------------------------------
def _llama_keys(layers, mlp=("gate_proj", "up_proj", "down_proj"), bias=()):
    """LlamaForCausalLM.state_dict() keys as modeling_llama.py defines them."""
    keys = ["model.embed_tokens.weight"]
    for i in range(layers):
        pre = f"model.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            keys.append(pre + f"self_attn.{proj}.weight")
            if proj in bias:
                keys.append(pre + f"self_attn.{proj}.bias")
        keys += [pre + f"mlp.{m}.weight" for m in mlp]
        keys += [pre + "input_layernorm.weight", pre + "post_attention_layernorm.weight"]
    return keys + ["model.norm.weight", "lm_head.weight"]


def test_llama_state_dict_keys_are_hugging_faces():
    keys = list(zoo.get_model("llama-2-7b").state_dict())
    assert keys == _llama_keys(32)
    assert len(keys) == 291                   # the tensors of the released checkpoint
    assert "model.rotary_emb.inv_freq" not in keys                    # non-persistent buffer
    qwen = list(zoo.get_model("qwen2-7b", num_hidden_layers=2).state_dict())
    assert qwen == _llama_keys(2, bias=("q_proj", "k_proj", "v_proj"))
    gemma = list(zoo.get_model("gemma-7b", num_hidden_layers=2).state_dict())
    assert gemma == _llama_keys(2)            # the tied head keeps its key, as torch's does


def test_gpt2_state_dict_keys_are_hugging_faces():
    keys = list(zoo.get_model("gpt2").state_dict())
    expected = ["transformer.wte.weight", "transformer.wpe.weight"]
    for i in range(12):
        pre = f"transformer.h.{i}."
        for mod in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"):
            expected += [pre + mod + ".weight", pre + mod + ".bias"]
    expected += ["transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"]
    assert keys == expected and len(keys) == 149


def test_mixtral_bert_vit_key_structure():
    mixtral = list(zoo.get_model("mixtral-8x7b").state_dict())
    # per layer: 4 attention + router + 8 experts x 3 + 2 norms
    assert len(mixtral) == 1 + 32 * (4 + 1 + 24 + 2) + 2
    assert "model.layers.0.block_sparse_moe.gate.weight" in mixtral
    assert "model.layers.31.block_sparse_moe.experts.7.w2.weight" in mixtral
    bert = list(zoo.get_model("bert-base-uncased").state_dict())
    assert len(bert) == 5 + 12 * 16 + 2
    assert bert[:2] == ["embeddings.word_embeddings.weight",
                        "embeddings.position_embeddings.weight"]
    assert "encoder.layer.11.attention.self.query.weight" in bert
    assert "encoder.layer.0.attention.output.LayerNorm.bias" in bert
    assert bert[-2:] == ["pooler.dense.weight", "pooler.dense.bias"]
    vit = list(zoo.get_model("vit-b-16").state_dict())
    assert len(vit) == 4 + 12 * 16 + 2 + 2
    assert "vit.embeddings.patch_embeddings.projection.weight" in vit
    assert "vit.encoder.layer.0.attention.attention.query.bias" in vit
    assert vit[-2:] == ["classifier.weight", "classifier.bias"]


def test_a_state_dict_loads_across_devices():
    """The names are load_state_dict's keys: a meta model takes a cpu model's weights."""
    kw = {"num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 24,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 12}
    cpu = zoo.get_model("qwen2-7b", device="cpu", **kw)
    meta = zoo.get_model("qwen2-7b", **kw)
    result = meta.load_state_dict(cpu.state_dict(), assign=True)
    assert not result.missing_keys and not result.unexpected_keys
    assert all(p.device.type == "cpu" for p in meta.parameters())


# -- mixture of experts -----------------------------------------------------------------------------
def test_mixtral_active_parameters():
    model = zoo.get_model("mixtral-8x7b")
    cfg = model.config
    expert = 3 * cfg.hidden_size * cfg.intermediate_size
    total = _numel(model)
    expected = total - cfg.num_hidden_layers * (cfg.num_local_experts
                                                - cfg.num_experts_per_tok) * expert
    assert expected == 12_879_925_248                 # the published "12.9B active"
    s = zoo.summarize(model, model.example_inputs(seq=4))
    assert s.active_parameters == expected and s.to_dict()["active_parameters"] == expected
    assert s.parameters == total == 46_702_792_704
    one = zoo.get_model("mixtral-8x7b", num_hidden_layers=1, num_experts_per_tok=1)
    assert zoo.summarize(one, one.example_inputs(seq=2)).active_parameters == (
        _numel(one) - 7 * expert)


@pytest.mark.parametrize("tokens", [5, 16])
def test_moe_routing_rows_on_meta_and_cpu(tokens):
    kw = {"num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 8,
          "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 10,
          "num_local_experts": 4, "num_experts_per_tok": 2}
    for device in ("meta", "cpu"):
        model = zoo.get_model("mixtral-8x7b", device=device, **kw)
        rows = []
        for expert in model.model.layers[0].block_sparse_moe.experts:
            expert.register_forward_pre_hook(lambda m, args: rows.append(args[0].shape[0]))
        with sk.no_grad():
            out = model(*model.example_inputs(batch=1, seq=tokens, device=device))
        assert tuple(out.shape) == (1, tokens, 10)
        if device == "meta":          # uniform routing: ceil(tokens * k / E) rows each
            assert rows == [math.ceil(tokens * 2 / 4)] * 4
        else:                         # real routing: every token reaches exactly k experts
            assert sum(rows) == tokens * 2


# -- attention implementations and long sequences -----------------------------------------------------
TINY = {
    "mistral-7b": {"num_hidden_layers": 2, "hidden_size": 16, "intermediate_size": 24,
                   "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 20,
                   "sliding_window": 3},
    "gemma-7b": {"num_hidden_layers": 2, "hidden_size": 16, "intermediate_size": 24,
                 "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 12,
                 "vocab_size": 20},
    "gpt2": {"n_layer": 2, "n_head": 2, "n_embd": 16, "vocab_size": 20},
    "bert-base-uncased": {"num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 24,
                          "num_attention_heads": 2, "vocab_size": 20},
    "vit-b-16": {"num_hidden_layers": 1, "hidden_size": 16, "intermediate_size": 24,
                 "num_attention_heads": 2, "image_size": 32, "patch_size": 8,
                 "num_labels": 3},
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_eager_and_sdpa_agree(name):
    sdpa = zoo.get_model(name, dtype=sk.float64, device="cpu", **TINY[name])
    eager = zoo.get_model(name, dtype=sk.float64, device="cpu", attn_implementation="eager",
                          **TINY[name])
    eager.load_state_dict(sdpa.state_dict())
    seq = None if name == "vit-b-16" else 7
    inputs = sdpa.example_inputs(batch=2, seq=seq, device="cpu")
    with sk.no_grad():
        a, b = sdpa(*inputs), eager(*inputs)
    a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
    # eager takes the softmax in float32, as Hugging Face's eager attention does
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert sdpa.config.attn_implementation == "sdpa"
    assert eager.config.attn_implementation == "eager"


def test_sdpa_calls_the_attention_op_and_eager_does_not(monkeypatch):
    """"sdpa" is one ``F.scaled_dot_product_attention`` call per layer (is_causal, or the
    sliding-window mask; enable_gqa for GQA); "eager" computes the scores itself."""
    calls = []
    real = sk.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, **kw):
        calls.append((tuple(q.shape), tuple(k.shape), attn_mask is not None, kw))
        return real(q, k, v, attn_mask=attn_mask, **kw)

    monkeypatch.setattr(sk.nn.functional, "scaled_dot_product_attention", spy)
    for impl in ("sdpa", "eager"):
        model = zoo.get_model("mistral-7b", num_hidden_layers=2, attn_implementation=impl,
                              sliding_window=3)
        model(*model.example_inputs(seq=5))
        if impl == "sdpa":
            assert calls == [((1, 32, 5, 128), (1, 8, 5, 128), True,
                              {"is_causal": False, "enable_gqa": True})] * 2
        else:
            assert len(calls) == 2
    calls.clear()
    model = zoo.get_model("gpt2", n_layer=1)
    model(*model.example_inputs(seq=5))
    assert calls == [((1, 12, 5, 64), (1, 12, 5, 64), False,
                      {"is_causal": True, "enable_gqa": False})]


def test_long_sequences_warn_for_rope_models_and_fail_for_learned_positions():
    model = zoo.get_model("llama-2-7b", num_hidden_layers=1)
    with pytest.warns(UserWarning, match=r"llama-2-7b: sequence length 5000 exceeds "
                                         r"max_position_embeddings \(4096\)"):
        model(*model.example_inputs(seq=5000))
    qwen = zoo.from_config(_path("qwen2-7b"), num_hidden_layers=1, max_position_embeddings=8)
    with pytest.warns(UserWarning, match=r"qwen2-7b\.json: sequence length 9"):
        qwen(*qwen.example_inputs(seq=9))
    with pytest.raises(ValueError, match="exceeds the model's 1024 learned positions"):
        zoo.get_model("gpt2").example_inputs(seq=1025)


def test_tiny_configs_on_meta_and_cpu_agree():
    for name in ("qwen2-7b", "gemma-7b", "mixtral-8x7b", "llama-3-8b"):
        kw = {"num_hidden_layers": 2, "hidden_size": 16, "intermediate_size": 24,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 20}
        if name == "gemma-7b":
            kw["head_dim"] = 8
        meta = zoo.get_model(name, **kw)
        cpu = zoo.get_model(name, device="cpu", **kw)
        assert _shapes(meta) == _shapes(cpu)
        outs = []
        for model, device in ((meta, "meta"), (cpu, "cpu")):
            with sk.no_grad():
                out = model(*model.example_inputs(batch=2, seq=5, device=device))
            outs.append((tuple(out.shape), out.dtype, out.stride()))
        assert outs[0] == outs[1] == ((2, 5, 20), sk.float32, (100, 20, 1))


# -- tiny Qwen2 / Gemma / Mixtral against torch ---------------------------------------------------------
def _torch_decoder(torch, model, ids, cfg):
    """Hugging Face's decoder computation, written from modeling_{qwen2,gemma,mixtral}.py
    in float64: rotate-half RoPE, GQA through SDPA, (1 + w) RMSNorm and sqrt(hidden) embedding
    scale for Gemma, dense top-k expert mixing for Mixtral."""
    F = torch.nn.functional
    p = {n: torch.from_numpy(t.detach().numpy().copy()) for n, t in model.state_dict().items()}
    gemma = cfg.model_type == "gemma"
    hd, heads, kv = cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads
    b, s = ids.shape

    def norm(x, w):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.rms_norm_eps)
        return x * (1 + w) if gemma else x * w

    inv = 1.0 / cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.outer(torch.arange(s, dtype=torch.float64), inv)
    ang = torch.cat([ang, ang], -1)
    cos, sin = ang.cos(), ang.sin()

    def rope(x):
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    act = (lambda t: F.gelu(t, approximate="tanh")) if gemma else F.silu
    x = F.embedding(ids, p["model.embed_tokens.weight"])
    if gemma:
        x = x * cfg.hidden_size ** 0.5
    for i in range(cfg.num_hidden_layers):
        pre = f"model.layers.{i}."
        h = norm(x, p[pre + "input_layernorm.weight"])
        q, k, v = (F.linear(h, p[pre + f"self_attn.{m}_proj.weight"],
                            p.get(pre + f"self_attn.{m}_proj.bias")).view(b, s, -1, hd)
                   .transpose(1, 2) for m in "qkv")
        a = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True,
                                           enable_gqa=heads != kv)
        x = x + F.linear(a.transpose(1, 2).reshape(b, s, heads * hd),
                         p[pre + "self_attn.o_proj.weight"])
        h = norm(x, p[pre + "post_attention_layernorm.weight"])
        if cfg.model_type == "mixtral":
            moe = pre + "block_sparse_moe."
            probs = F.softmax(F.linear(h, p[moe + "gate.weight"]), -1)
            top, idx = probs.topk(cfg.num_experts_per_tok, -1)
            mix = torch.zeros_like(probs).scatter(-1, idx, top / top.sum(-1, keepdim=True))
            out = 0
            for e in range(cfg.num_local_experts):
                w = lambda n: p[moe + f"experts.{e}.{n}.weight"]   # noqa: E731
                y = F.linear(act(F.linear(h, w("w1"))) * F.linear(h, w("w3")), w("w2"))
                out = out + mix[..., e:e + 1] * y
            x = x + out
        else:
            g = act(F.linear(h, p[pre + "mlp.gate_proj.weight"]))
            x = x + F.linear(g * F.linear(h, p[pre + "mlp.up_proj.weight"]),
                             p[pre + "mlp.down_proj.weight"])
    return F.linear(norm(x, p["model.norm.weight"]), p["lm_head.weight"])


@pytest.mark.parametrize("name", ["qwen2-7b", "gemma-7b", "mixtral-8x7b"])
def test_tiny_decoders_match_torch(torch, name):
    kw = {"num_hidden_layers": 2, "hidden_size": 16, "intermediate_size": 24,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 20,
          "rope_theta": 100.0}
    if name == "gemma-7b":
        kw["head_dim"] = 6
    if name == "mixtral-8x7b":
        kw.update(num_local_experts=4, num_experts_per_tok=2)
    model = zoo.get_model(name, dtype=sk.float64, device="cpu", **kw)
    if name == "gemma-7b":           # (1 + w) norms start at w = 0: give them values
        with sk.no_grad():
            for n, p in model.named_parameters():
                if "norm" in n:
                    p.copy_(sk.randn(p.shape, dtype=sk.float64) * 0.5)
    (ids,) = model.example_inputs(batch=2, seq=6, device="cpu")
    with sk.no_grad():
        out = model(ids)
    expected = _torch_decoder(torch, model, torch.from_numpy(ids.numpy().copy()), model.config)
    # RoPE tables and the router softmax are float32 in the model (as Hugging Face's)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


# -- any decoder config: counts and shapes ----------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(model_type=st.sampled_from(["llama", "mistral", "mixtral", "qwen2", "gemma"]),
       kv=st.integers(1, 3), groups=st.integers(1, 3), head_dim=st.sampled_from([2, 4, 6]),
       hidden=st.integers(2, 12), inner=st.integers(1, 10), layers=st.integers(1, 3),
       vocab=st.integers(2, 30), tie=st.booleans(), bias=st.booleans(),
       experts=st.integers(1, 4), seq=st.integers(1, 6),
       impl=st.sampled_from(["sdpa", "eager"]), window=st.sampled_from([None, 1, 2, 4]))
def test_any_decoder_config_counts_and_runs_on_meta(model_type, kv, groups, head_dim, hidden,
                                                     inner, layers, vocab, tie, bias, experts,
                                                     seq, impl, window):
    heads = kv * groups
    raw = {"model_type": model_type, "hidden_size": hidden, "intermediate_size": inner,
           "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": kv, "head_dim": head_dim, "vocab_size": vocab,
           "tie_word_embeddings": tie, "attention_bias": bias, "sliding_window": window,
           "use_sliding_window": True, "max_window_layers": 1,
           "num_local_experts": experts, "num_experts_per_tok": 1 + (experts > 1)}
    model = zoo.from_config(raw, attn_implementation=impl)
    # the count, from the layer definitions of Hugging Face's modeling files
    q, k = heads * head_dim, kv * head_dim
    qkv_bias = bias or model_type == "qwen2"
    attn = hidden * (q + 2 * k) + q * hidden + qkv_bias * (q + 2 * k) + bias * hidden
    mlp = 3 * hidden * inner
    if model_type == "mixtral":
        mlp = experts * mlp + hidden * experts          # experts + router
    expected = (vocab * hidden * (1 if tie else 2) + hidden
                + layers * (attn + mlp + 2 * hidden))
    assert _numel(model) == expected
    (ids,) = model.example_inputs(batch=2, seq=seq)
    out = model(ids)
    assert tuple(out.shape) == (2, seq, vocab) and out.dtype is sk.float32
    assert out.device.type == "meta"
