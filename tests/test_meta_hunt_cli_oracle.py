"""``subclass-kit shapes`` and the model zoo on the meta device, against torch 2.13 (the
oracle); the op-level meta checks are in ``test_meta_hunt_oracle.py``.

- sizes past the int64 byte range: a one-line usage error (exit 2, no traceback) quoting the
  error torch raises for the same tensor ("Storage size calculation overflowed with sizes=...");
- a user function the command line cannot call (a required parameter it does not fill), or
  whose example inputs are neither a tuple nor a tensor, is a usage error too;
- the zoo's GPT-2 and LLaMA/Mistral configs against the same architectures built from
  ``torch.nn`` under ``torch.device("meta")``: per-block parameter counts, parameter bytes per
  dtype, and the logits of a forward on meta (shape, strides, dtype).
"""

from __future__ import annotations

import re

import pytest
from test_meta_hunt_oracle import observe

import subclass_kit as sk
from subclass_kit.cli import main

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")


# -- the CLI with sizes too large ---------------------------------------------------------------------
HUGE = [("llama-2-7b", ["--batch", str(2 ** 62), "--seq", "3"]),
        ("gpt2", ["--batch", str(2 ** 40)]),
        ("llama-2-70b", ["--seq", str(2 ** 32)]),
        ("mistral-7b", ["--batch", str(2 ** 62), "--seq", "2", "--dtype", "float16"]),
        ("vit-b-16", ["--batch", str(10 ** 16)]),
        ("bert-base-uncased", ["--batch", str(10 ** 18)]),
        ("gpt2-xl", ["--batch", str(10 ** 30)])]   # past int64 itself (torch cannot parse it)


@pytest.mark.parametrize("name,argv", HUGE, ids=[h[0] for h in HUGE])
def test_cli_sizes_too_large_is_a_usage_error(capsys, name, argv):
    code = main(["shapes", name, *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"subclass-kit shapes: error: {name}: a tensor would not fit")
    assert err.count("\n") == 1
    found = re.search(r"\((Storage size calculation overflowed with sizes=\[([\d, ]+)\])\)", err)
    sizes = [int(x) for x in found.group(2).split(", ")]
    if max(sizes) >= 2 ** 63:
        return
    with pytest.raises(RuntimeError) as theirs:
        torch.empty(sizes, device="meta")
    assert str(theirs.value) == found.group(1)


def test_cli_user_function_with_sizes_too_large(capsys, tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import subclass_kit as sk\n"
                    "def inputs_too_large(batch=1):\n"
                    "    return (lambda x: x), (sk.empty(batch, 2 ** 62, device='meta'),)\n"
                    "def forward_too_large(batch=1):\n"
                    "    return (lambda x: x.expand(batch, 2 ** 62)), (sk.empty(1, 1, device='meta'),)\n")
    for func, text in (("inputs_too_large", "Storage size calculation overflowed"),
                       ("forward_too_large", "numel: integer multiplication overflow")):
        code = main(["shapes", f"{path}:{func}", "--batch", "4"])
        _, err = capsys.readouterr()
        assert code == 2 and "Traceback" not in err and text in err, err


# -- zoo configs vs torch.nn on meta -------------------------------------------------------------------
def _torch_gpt2(cfg, dtype):
    nn, d = torch.nn, cfg.n_embd

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = (t.view(b, s, cfg.n_head, -1).transpose(1, 2)
                       for t in self.c_attn(self.ln_1(x)).split(d, -1))
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(a.transpose(1, 2).reshape(b, s, d))
            mlp = torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
            return x + self.mlp_proj(mlp)

    with torch.device("meta"):
        rows = {"wte": nn.Embedding(cfg.vocab_size, d), "wpe": nn.Embedding(cfg.n_positions, d)}
        rows.update({f"h_{i}": Block() for i in range(cfg.n_layer)})
        rows["ln_f"] = nn.LayerNorm(d)
        model = nn.ModuleDict(rows).to(dtype)

    def forward(ids):
        x = model["wte"](ids) + model["wpe"](torch.arange(ids.shape[1]))
        for i in range(cfg.n_layer):
            x = model[f"h_{i}"](x)
        return model["ln_f"](x) @ model["wte"].weight.t()   # tied head
    return model, forward


def _torch_llama(cfg, dtype):
    nn, d = torch.nn, cfg.hidden_size
    hd = d // cfg.num_attention_heads

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = nn.RMSNorm(d, eps=cfg.rms_norm_eps)
            self.post_attention_layernorm = nn.RMSNorm(d, eps=cfg.rms_norm_eps)
            self.q = nn.Linear(d, cfg.num_attention_heads * hd, bias=False)
            self.k = nn.Linear(d, cfg.num_key_value_heads * hd, bias=False)
            self.v = nn.Linear(d, cfg.num_key_value_heads * hd, bias=False)
            self.o = nn.Linear(cfg.num_attention_heads * hd, d, bias=False)
            self.gate = nn.Linear(d, cfg.intermediate_size, bias=False)
            self.up = nn.Linear(d, cfg.intermediate_size, bias=False)
            self.down = nn.Linear(cfg.intermediate_size, d, bias=False)

        def forward(self, x):   # shapes only: RoPE does not change them
            b, s, _ = x.shape
            h = self.input_layernorm(x)
            q, k, v = (p(h).view(b, s, -1, hd).transpose(1, 2) for p in (self.q, self.k, self.v))
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                 enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
            h = self.post_attention_layernorm(x)
            return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))

    with torch.device("meta"):
        rows = {"embed_tokens": nn.Embedding(cfg.vocab_size, d)}
        rows.update({f"layers_{i}": Layer() for i in range(cfg.num_hidden_layers)})
        rows["norm"] = nn.RMSNorm(d, eps=cfg.rms_norm_eps)
        rows["lm_head"] = nn.Linear(d, cfg.vocab_size, bias=False)
        model = nn.ModuleDict(rows).to(dtype)

    def forward(ids):
        x = model["embed_tokens"](ids)
        for i in range(cfg.num_hidden_layers):
            x = model[f"layers_{i}"](x)
        return model["lm_head"](model["norm"](x))
    return model, forward


ZOO_LM = ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "llama-2-7b", "llama-2-13b",
          "llama-2-70b", "llama-3-8b", "mistral-7b"]


@pytest.mark.parametrize("name", ZOO_LM)
def test_zoo_block_parameters_match_torch_nn_on_meta(name):
    from subclass_kit import zoo
    cfg = zoo.get_config(name)
    build = _torch_gpt2 if name.startswith("gpt2") else _torch_llama
    theirs, _ = build(cfg, torch.float16)
    model = zoo.get_model(name, dtype=sk.float16)
    seen, ours = set(), {}
    for row, block in zoo.blocks(model):      # a tied tensor counts in its first block
        fresh = [p for p in block.parameters() if id(p) not in seen]
        seen.update(id(p) for p in fresh)
        ours[row] = sum(p.numel() for p in fresh)
    # torch.nn names cannot hold dots (h.0 is h_0); rows without parameters (rotary_emb, the
    # tied GPT-2 head) have no torch module; the base model's prefix is dropped
    ours = {row.removeprefix("transformer.").removeprefix("model.").replace(".", "_"): n
            for row, n in ours.items() if n}
    assert ours == {row: sum(p.numel() for p in m.parameters()) for row, m in theirs.items()}
    total = sum(p.numel() for p in theirs.parameters())
    assert sum(p.numel() for p in model.parameters()) == total
    assert sum(p.numel() * p.element_size() for p in model.parameters()) == 2 * total
    assert all(p.device.type == "meta" for p in model.parameters())


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", ["gpt2", "llama-2-70b", "mistral-7b"])
def test_zoo_forward_on_meta_matches_torch_nn(name, dtype):
    """Two layers of the full-width config, batch 2, seq 5: logits' shape, strides, dtype."""
    from subclass_kit import zoo
    layers = {"n_layer": 2} if name.startswith("gpt2") else {"num_hidden_layers": 2}
    cfg = zoo.get_model(name, **layers).config
    build = _torch_gpt2 if name.startswith("gpt2") else _torch_llama
    _, forward = build(cfg, getattr(torch, dtype))
    with torch.device("meta"):
        theirs = forward(torch.empty(2, 5, dtype=torch.int64))
    model = zoo.get_model(name, dtype=getattr(sk, dtype), **layers)
    ours = model(*model.example_inputs(batch=2, seq=5))
    assert observe(ours) == observe(theirs)




# -- the CLI: user functions it cannot call ----------------------------------------------------------
USER_FILE = """
import subclass_kit as sk
def needs_width(width):
    return (lambda x: x), (sk.empty(2, device="meta"),)
def keyword_batch(*, batch):
    return (lambda x: x * 2), (sk.empty(batch, device="meta"),)
def positional_only(n, /):
    return (lambda x: x), (sk.empty(n, device="meta"),)
def string_inputs():
    return (lambda x: x * 2), "text"
def int_inputs():
    return (lambda x: x * 2), 3
def generator_inputs():
    return (lambda x: x), (t for t in [sk.empty(2, device="meta")])
def tensor_input(batch=1):
    return (lambda x: x.sum(0)), sk.empty(batch, 3, device="meta")
"""


@pytest.mark.parametrize("func,argv,code,text", [
    ("needs_width", [], 2, "needs a value for its parameter 'width'"),
    ("keyword_batch", [], 2, ("needs a value for its parameter 'batch', which the command line "
                              "passes only for batch, seq, dtype and device; give --batch")),
    ("keyword_batch", ["--batch", "3"], 0, '"output_shape": [3]'),
    ("positional_only", [], 2, "required positional-only parameter 'n'"),
    ("string_inputs", [], 2, ("example_inputs a tuple of positional arguments or a single "
                              "tensor; got str")),
    ("int_inputs", [], 2, "got int"),
    ("generator_inputs", [], 2, "got generator"),
    ("tensor_input", ["--batch", "4"], 0, '"output_shape": [3]'),
])
def test_cli_user_function_contract(capsys, tmp_path, func, argv, code, text):
    path = tmp_path / "model.py"
    path.write_text(USER_FILE)
    assert main(["shapes", f"{path}:{func}", "--json", *argv]) == code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and text in (out if code == 0 else err)
