"""The model zoo: registry, exact parameter counts, meta parameters, the ``sk.nn`` module tree
and its block rows, the activation tally, and differential runs of small configs on cpu
against torch. Config files, Hugging Face key names and the new model types are in
``test_zoo_configs.py``.

The torch references are written independently of the zoo code where it matters: attention
via ``F.scaled_dot_product_attention`` (``is_causal`` / ``enable_gqa`` / a boolean window
mask), RoPE in Meta's complex-number form on un-permuted weights, the ViT patch embedding as a
real ``conv2d``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit import zoo

# Published parameter counts (model cards / checkpoints); tied GPT-2 embeddings count once,
# BERT includes the pooler, ViT the 1000-class head.
PUBLISHED = {
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
    "mistral-7b": 7_241_732_096,
    "llama-3-70b": 70_553_706_496,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2-7b": 7_615_616_512,
    "gemma-7b": 8_537_680_896,
    "bert-base-uncased": 109_482_240,
    "vit-b-16": 86_567_656,
}


# -- registry ----------------------------------------------------------------------------------
def test_list_models_is_sorted_and_complete():
    names = zoo.list_models()
    assert names == sorted(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_is_exact_and_on_meta(name):
    model = zoo.get_model(name)
    params = list(model.parameters())
    assert sum(p.numel() for p in params) == PUBLISHED[name]
    assert isinstance(model, sk.nn.Module)
    for p in params:
        assert isinstance(p, sk.nn.Parameter) and p.requires_grad and p.is_leaf
        assert p.device.type == "meta"
        assert p.untyped_storage().data_ptr() == 0        # nothing allocated
        assert p.dtype is sk.float32


def test_unknown_model_lists_valid_names():
    with pytest.raises(ValueError, match="unknown model 'gpt3'") as info:
        zoo.get_model("gpt3")
    for name in PUBLISHED:
        assert name in str(info.value)
    with pytest.raises(ValueError, match="valid names"):
        zoo.get_config("llama-4")


def test_configs_have_hugging_face_fields():
    cfg = zoo.get_config("llama-2-70b")
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads,
            cfg.num_key_value_heads, cfg.intermediate_size) == (8192, 80, 64, 8, 28672)
    assert zoo.get_config("mistral-7b").sliding_window == 4096
    assert zoo.get_config("llama-3-8b").rope_theta == 500000.0
    assert zoo.get_config("gpt2-xl").n_embd == 1600
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.hidden_size = 1


def test_config_overrides_and_dtype():
    model = zoo.get_model("llama-2-7b", num_hidden_layers=2, dtype=sk.float16)
    assert len(model.model.layers) == 2
    assert all(p.dtype is sk.float16 for p in model.parameters())
    with pytest.raises(TypeError):
        zoo.get_model("gpt2", no_such_field=3)


def test_gpt2_lm_head_is_tied_and_counted_once():
    model = zoo.get_model("gpt2")
    assert model.lm_head.weight is model.transformer.wte.weight
    names = [n for n, _ in model.named_parameters()]
    assert "transformer.wte.weight" in names and "lm_head.weight" not in names
    assert len(names) == len(set(names))
    assert "lm_head.weight" in model.state_dict()       # state_dict keeps both names, as torch


def test_parameter_shapes_follow_the_checkpoints():
    shapes = {n: tuple(p.shape) for n, p in zoo.get_model("llama-2-70b").named_parameters()}
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (1024, 8192)  # GQA: 8 kv heads
    assert shapes["model.layers.79.mlp.gate_proj.weight"] == (28672, 8192)
    assert shapes["lm_head.weight"] == (32000, 8192)
    vit = {n: tuple(p.shape) for n, p in zoo.get_model("vit-b-16").named_parameters()}
    assert vit["vit.embeddings.patch_embeddings.projection.weight"] == (768, 3, 16, 16)
    assert vit["vit.embeddings.position_embeddings"] == (1, 197, 768)
    gpt = {n: tuple(p.shape) for n, p in zoo.get_model("gpt2").named_parameters()}
    assert gpt["transformer.h.0.attn.c_attn.weight"] == (768, 2304)       # Conv1D (in, out)
    bert = {n: tuple(p.shape) for n, p in zoo.get_model("bert-base-uncased").named_parameters()}
    assert bert["pooler.dense.weight"] == (768, 768)


# -- the module tree ---------------------------------------------------------------------------
def test_blocks_expand_layer_lists_and_hooks_run():
    class Net(sk.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = sk.nn.Linear(3, 4, device="meta")
            self.body = sk.nn.Module()
            self.body.blocks = sk.nn.ModuleList([sk.nn.Linear(4, 4, bias=False,
                                                              device="meta"),
                                                 sk.nn.RMSNorm(4, device="meta")])
            self.scale = 2.0                          # not a parameter

        def forward(self, x):
            x = self.a(x)
            for b in self.body.blocks:
                x = b(x)
            return x

    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "a.weight", "a.bias", "body.blocks.0.weight", "body.blocks.1.weight"]
    # a child holding a ModuleList expands; ModuleList items are rows
    assert [n for n, _ in zoo.blocks(net)] == ["a", "body.blocks.0", "body.blocks.1"]
    seen = []
    handle = net.body.blocks[0].register_forward_hook(lambda m, args, out: seen.append(out.shape))
    pre = net.a.register_forward_pre_hook(lambda m, args: seen.append(args[0].shape))
    net(sk.empty(2, 3, device="meta"))
    assert seen == [sk.Size([2, 3]), sk.Size([2, 4])]
    handle.remove()
    pre.remove()
    net(sk.empty(2, 3, device="meta"))
    assert len(seen) == 2


def test_block_rows_of_every_family():
    rows = {name: [n for n, _ in zoo.blocks(zoo.get_model(name, **layers))]
            for name, layers in (("gpt2", {"n_layer": 2}), ("llama-2-7b", {"num_hidden_layers": 2}),
                                 ("bert-base-uncased", {"num_hidden_layers": 2}),
                                 ("vit-b-16", {"num_hidden_layers": 2}))}
    assert rows["gpt2"] == ["transformer.wte", "transformer.wpe", "transformer.h.0",
                            "transformer.h.1", "transformer.ln_f", "lm_head"]
    assert rows["llama-2-7b"] == ["model.embed_tokens", "model.layers.0", "model.layers.1",
                                  "model.norm", "model.rotary_emb", "lm_head"]
    assert rows["bert-base-uncased"] == ["embeddings", "encoder.layer.0", "encoder.layer.1",
                                         "pooler"]
    assert rows["vit-b-16"] == ["vit.embeddings", "vit.encoder.layer.0", "vit.encoder.layer.1",
                                "vit.layernorm", "classifier"]


def test_parameters_on_cpu_have_data_and_gradients():
    model = zoo.get_model("gpt2", n_layer=1, n_head=2, n_embd=8, vocab_size=11, n_positions=6,
                          device="cpu")
    for name, p in model.named_parameters():
        assert p.device.type == "cpu" and p.requires_grad, name
    assert not np.all(model.transformer.h[0].attn.c_attn.weight.detach().numpy() == 0)
    assert np.all(model.transformer.h[0].attn.c_attn.bias.detach().numpy() == 0)
    assert np.all(model.transformer.ln_f.weight.detach().numpy() == 1)
    # training works: a loss backpropagates to every parameter
    (ids,) = model.example_inputs(batch=2, seq=5, device="cpu")
    model(ids).sum().backward()
    assert all(p.grad is not None for p in model.parameters())


# -- summary / activation tally ------------------------------------------------------------------
def test_peak_follows_liveness():
    def chain(x):
        for _ in range(10):
            x = x * 2            # the previous x dies when the name is rebound
        return x

    x = sk.empty(1000, device="meta")
    s = zoo.summarize(chain, (x,), name="chain")
    assert s.activation_bytes == 10 * 4000
    # input + previous result + new result alive at once
    assert s.peak_activation_bytes == 3 * 4000
    assert s.output_shape == [1000] and s.dtype == "float32" and s.parameters == 0


def test_views_are_free_and_rows_add_up():
    def f(x):
        y = x.view(10, 100).transpose(0, 1)     # views: no new storage
        return y * 1

    s = zoo.summarize(f, sk.empty(1000, device="meta"))
    assert s.activation_bytes == 4000
    assert [r.name for r in s.blocks] == ["(top level)"]
    model = zoo.get_model("gpt2", n_layer=2, n_head=2, n_embd=8)
    s = zoo.summarize(model, model.example_inputs(batch=2, seq=5), name="tiny")
    assert [r.name for r in s.blocks] == ["transformer.wte", "transformer.wpe",
                                          "transformer.h.0", "transformer.h.1",
                                          "transformer.ln_f", "lm_head", "(top level)"]
    assert sum(r.parameters for r in s.blocks) == s.parameters == sum(
        p.numel() for p in model.parameters())
    assert sum(r.activation_bytes for r in s.blocks) == s.activation_bytes
    assert s.blocks[2].output_shape == [2, 5, 8]
    assert s.blocks[5].parameters == 0                          # tied head
    assert s.active_parameters is None and s.to_dict()["active_parameters"] is None
    assert s.output_shape == [2, 5, 50257]
    assert s.parameter_bytes == 4 * s.parameters


@pytest.mark.no_debug_asserts  # asserts sk.get_mode_stack() == []
def test_summary_leaves_no_hooks_or_modes():
    model = zoo.get_model("bert-base-uncased", num_hidden_layers=1)
    zoo.summarize(model, model.example_inputs(seq=4))
    assert sk.get_mode_stack() == []
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in model.modules())


def test_summary_runs_without_autograd():
    """The inference forward records no graph, even though parameters require grad."""
    model = zoo.get_model("gpt2", n_layer=1, n_head=2, n_embd=8, vocab_size=11, device="cpu")
    outputs = []
    model.register_forward_hook(lambda m, args, out: outputs.append(out))
    zoo.summarize(model, model.example_inputs(seq=3, device="cpu"))
    assert outputs[0].grad_fn is None and not outputs[0].requires_grad


@pytest.mark.no_debug_asserts  # asserts the exact mode stack
def test_summary_propagates_forward_errors():
    def bad(x):
        return x @ x            # (2, 3) @ (2, 3): inner sizes differ

    with pytest.raises(RuntimeError):
        zoo.summarize(bad, sk.empty(2, 3, device="meta"))
    assert sk.get_mode_stack() == []


# -- differential runs on cpu against torch ------------------------------------------------------
# Tests take the ``torch`` fixture (conftest.py: skips when torch is missing); the helpers
# below are only called from them.
def _F():
    import torch
    return torch.nn.functional


def _t(p):
    import torch
    return torch.from_numpy(p.detach().numpy().copy())


def _params(model, strip=""):
    """The parameters as torch tensors by name, ``strip`` removed from the front."""
    return {n.removeprefix(strip): _t(p) for n, p in model.named_parameters()}


def _run(model, seq=None):
    inputs = model.example_inputs(batch=2, seq=seq, device="cpu")
    with sk.no_grad():
        out = model(*inputs)
    return [_t(i) for i in inputs], out


def _lin(x, p, name, bias=True):
    return _F().linear(x, p[name + ".weight"], p.get(name + ".bias") if bias else None)


def _heads(x, n):
    b, s, d = x.shape
    return x.view(b, s, n, d // n).transpose(1, 2)


def _merge(x):
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, h * d)


def test_gpt2_matches_torch(torch):
    F = _F()
    model = zoo.get_model("gpt2", n_layer=2, n_head=2, n_embd=16, vocab_size=50, n_positions=12,
                          dtype=sk.float64, device="cpu")
    (ids,), out = _run(model, seq=7)
    p = _params(model, "transformer.")
    x = F.embedding(ids, p["wte.weight"]) + p["wpe.weight"][:7]
    for i in range(2):
        pre = f"h.{i}."
        h = F.layer_norm(x, (16,), p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], 1e-5)
        qkv = h @ p[pre + "attn.c_attn.weight"] + p[pre + "attn.c_attn.bias"]
        q, k, v = (_heads(t, 2) for t in qkv.split(16, dim=2))
        a = _merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        x = x + a @ p[pre + "attn.c_proj.weight"] + p[pre + "attn.c_proj.bias"]
        h = F.layer_norm(x, (16,), p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], 1e-5)
        h = F.gelu(h @ p[pre + "mlp.c_fc.weight"] + p[pre + "mlp.c_fc.bias"], approximate="tanh")
        x = x + h @ p[pre + "mlp.c_proj.weight"] + p[pre + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (16,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
    expected = x @ p["wte.weight"].t()
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-9, atol=1e-9)


def _meta_rope(x, theta):
    """Meta's reference RoPE: rotate consecutive pairs as complex numbers; x: (b, s, h, d)."""
    import torch
    d, s = x.shape[-1], x.shape[1]
    freqs = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    cis = torch.polar(torch.ones(s, d // 2, dtype=torch.float64),
                      torch.outer(torch.arange(s, dtype=torch.float64), freqs))
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * cis[None, :, None, :]).flatten(3)


def _unpermute(w, heads):
    """HF checkpoints permute q/k rows for rotate-half RoPE; undo it (Meta's layout)."""
    out_dim, in_dim = w.shape
    return w.view(heads, 2, out_dim // heads // 2, in_dim).transpose(1, 2).reshape(out_dim,
                                                                                  in_dim)


@pytest.mark.parametrize("window", [None, 3])
def test_llama_gqa_rope_matches_torch(torch, window):
    F = _F()
    heads, kv, d = 4, 2, 32
    model = zoo.get_model("mistral-7b", hidden_size=d, intermediate_size=40, num_hidden_layers=2,
                          num_attention_heads=heads, num_key_value_heads=kv, vocab_size=60,
                          rope_theta=500.0, sliding_window=window, dtype=sk.float64,
                          device="cpu")
    seq = 6
    (ids,), out = _run(model, seq=seq)
    p = _params(model, "model.")
    i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
    allowed = (j <= i) & ((i - j < window) if window else True)

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    x = F.embedding(ids, p["embed_tokens.weight"])
    for n in range(2):
        pre = f"layers.{n}."
        h = rms(x, p[pre + "input_layernorm.weight"])
        b = h.shape[0]
        q = F.linear(h, _unpermute(p[pre + "self_attn.q_proj.weight"], heads))
        k = F.linear(h, _unpermute(p[pre + "self_attn.k_proj.weight"], kv))
        v = F.linear(h, p[pre + "self_attn.v_proj.weight"])
        q = _meta_rope(q.view(b, seq, heads, -1), 500.0).transpose(1, 2)
        k = _meta_rope(k.view(b, seq, kv, -1), 500.0).transpose(1, 2)
        v = v.view(b, seq, kv, -1).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)
        x = x + F.linear(_merge(a), p[pre + "self_attn.o_proj.weight"])
        h = rms(x, p[pre + "post_attention_layernorm.weight"])
        g = F.silu(F.linear(h, p[pre + "mlp.gate_proj.weight"]))
        x = x + F.linear(g * F.linear(h, p[pre + "mlp.up_proj.weight"]),
                         p[pre + "mlp.down_proj.weight"])
    expected = F.linear(rms(x, p["norm.weight"]), p["lm_head.weight"])
    # the RoPE tables are computed in float32 (as Hugging Face's), the reference in float64
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)


def test_bert_matches_torch(torch):
    F = _F()
    model = zoo.get_model("bert-base-uncased", hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=24, vocab_size=40,
                          max_position_embeddings=10, dtype=sk.float64, device="cpu")
    (ids,), (hidden, pooled) = _run(model, seq=5)
    p = _params(model)
    eps = 1e-12
    x = (F.embedding(ids, p["embeddings.word_embeddings.weight"])
         + p["embeddings.position_embeddings.weight"][:5]
         + p["embeddings.token_type_embeddings.weight"][0])
    x = F.layer_norm(x, (16,), p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"],
                     eps)
    for n in range(2):
        pre = f"encoder.layer.{n}."
        q, k, v = (_heads(_lin(x, p, pre + "attention.self." + m), 2)
                   for m in ("query", "key", "value"))
        a = _lin(_merge(F.scaled_dot_product_attention(q, k, v)), p,
                 pre + "attention.output.dense")
        x = F.layer_norm(a + x, (16,), p[pre + "attention.output.LayerNorm.weight"],
                         p[pre + "attention.output.LayerNorm.bias"], eps)
        h = _lin(F.gelu(_lin(x, p, pre + "intermediate.dense")), p, pre + "output.dense")
        x = F.layer_norm(h + x, (16,), p[pre + "output.LayerNorm.weight"],
                         p[pre + "output.LayerNorm.bias"], eps)
    np.testing.assert_allclose(hidden.numpy(), x.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(pooled.numpy(), torch.tanh(_lin(x[:, 0], p, "pooler.dense")),
                               rtol=1e-9, atol=1e-9)


def test_vit_patch_embedding_is_a_convolution_and_matches_torch(torch):
    F = _F()
    model = zoo.get_model("vit-b-16", image_size=32, patch_size=8, hidden_size=16,
                          num_hidden_layers=1, num_attention_heads=2, intermediate_size=20,
                          num_labels=5, dtype=sk.float64, device="cpu")
    (images,), out = _run(model)
    p = _params(model, "vit.")
    x = F.conv2d(images, p["embeddings.patch_embeddings.projection.weight"],
                 p["embeddings.patch_embeddings.projection.bias"], stride=8)
    x = x.flatten(2).transpose(1, 2)                               # (b, 16 patches, 16)
    x = torch.cat([p["embeddings.cls_token"].expand(2, 1, 16), x], 1) + \
        p["embeddings.position_embeddings"]
    pre, eps = "encoder.layer.0.", 1e-12
    h = F.layer_norm(x, (16,), p[pre + "layernorm_before.weight"],
                     p[pre + "layernorm_before.bias"], eps)
    q, k, v = (_heads(_lin(h, p, pre + "attention.attention." + m), 2)
               for m in ("query", "key", "value"))
    x = x + _lin(_merge(F.scaled_dot_product_attention(q, k, v)), p,
                 pre + "attention.output.dense")
    h = F.layer_norm(x, (16,), p[pre + "layernorm_after.weight"],
                     p[pre + "layernorm_after.bias"], eps)
    x = x + _lin(F.gelu(_lin(h, p, pre + "intermediate.dense")), p, pre + "output.dense")
    x = F.layer_norm(x, (16,), p["layernorm.weight"], p["layernorm.bias"], eps)
    expected = F.linear(x[:, 0], p["classifier.weight"], p["classifier.bias"])
    assert tuple(out.shape) == (2, 5)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-9, atol=1e-9)


def test_rope_tables_match_the_closed_form():
    from subclass_kit.zoo.llama import RotaryEmbedding
    rope = RotaryEmbedding(zoo.get_config("llama-3-8b"), device="cpu")
    assert "inv_freq" not in rope.state_dict()             # a non-persistent buffer
    cos, sin = rope(sk.zeros((1, 5), dtype=sk.float64), 5)
    d = 128
    inv = np.array([500000.0 ** (-2 * i / d) for i in range(d // 2)])
    angles = np.arange(5)[:, None] * np.concatenate([inv, inv])[None, :]
    np.testing.assert_allclose(cos.numpy(), np.cos(angles), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sin.numpy(), np.sin(angles), rtol=1e-5, atol=1e-6)
    assert math.isclose(float(cos.numpy()[4, 0]), math.cos(4.0), rel_tol=1e-6)


def test_a_block_calling_another_block_keeps_the_attribution():
    class Inner(sk.nn.Module):
        def forward(self, x):
            return x * 2                                  # 400 bytes

    class Outer(sk.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            y = self.inner(x)
            return y + 1                                  # still Outer's: 400 bytes

    class Net(sk.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.outer = Outer(self.inner)

        def forward(self, x):
            return self.outer(x) - 1                      # top level: 400 bytes

    s = zoo.summarize(Net(), sk.empty(100, device="meta"))
    got = {r.name: r.activation_bytes for r in s.blocks}
    assert got == {"inner": 400, "outer": 400, "(top level)": 400}
