"""``--fsdp N`` / ``--tp M`` (subclass_kit/sizing/sharding.py): per-rank bytes against torch's
DTensor local shapes for the Megatron / FSDP2 placements (written out here from the parameter
names, independently of modes.sharding_plan), the peak's parts, the training states, the local
program and the errors."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit import cli, sizing, zoo
from subclass_kit.sizing import sharding as feature

SMALL_LLAMA = dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                   num_attention_heads=8, num_key_value_heads=4, vocab_size=1001)


def run(target, argv, *, train=None, optimizer="adamw", results=None, **overrides):
    """The sizing features of ``shapes TARGET argv`` on a zoo model built with ``overrides``;
    returns the context (``ctx.results["per_rank"]``...)."""
    args = cli._parser().parse_args(["shapes", target, *argv])
    if train is not None:
        args.train, args.optimizer = train, optimizer
    model = zoo.get_model(target, **overrides)
    inputs = model.example_inputs(batch=args.batch or 1, seq=args.seq or 16)
    ctx = sizing.SizingContext(model=model, inputs=inputs, name=target, args=args,
                               config=model.config)
    chosen = sizing.wanted(args)
    sizing.prepare(ctx, chosen)
    ctx.summary = zoo.summarize(model, inputs, name=target)
    ctx.results.update(results or {})
    sizing.run(ctx, chosen)
    return ctx


def megatron(name: str, ndim: int, conv1d: bool):
    """The TP placement of a parameter, from its name (what the plan promises)."""
    parts = name.split(".")
    module, attr = parts[-2], parts[-1]
    if module in ("embed_tokens", "wte", "lm_head") and attr == "weight":
        return ("S", 0)
    col = module in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "c_attn", "c_fc")
    row = module in ("o_proj", "down_proj", "c_proj")
    if attr == "bias":
        return ("S", 0) if col else ("R",)
    if col:
        return ("S", 1 if conv1d else 0)
    if row:
        return ("S", 0 if conv1d else 1)
    return ("R",)


def torch_rank_bytes(torch, model, dp, tp, conv1d=False):
    """Bytes of parameters per global rank ``dp_index * tp + tp_index``, from torch's DTensor
    local shapes: the TP placement first, then Shard(0) over dp (FSDP2 on a TP model)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset
    totals = {}
    for dp_i, tp_i in itertools.product(range(dp), range(tp)):
        total = 0
        for name, p in model.named_parameters():
            tp_pl = megatron(name, p.ndim, conv1d) if tp > 1 else ("R",)
            pls = [Shard(tp_pl[1]) if tp_pl[0] == "S" else Replicate(),
                   Shard(0) if dp > 1 else Replicate()]
            shape, _ = _compute_local_shape_and_global_offset(list(p.shape), [tp, dp],
                                                              [tp_i, dp_i], pls)
            total += int(np.prod(shape)) * p.element_size()
        totals[dp_i * tp + tp_i] = total
    return totals


@pytest.mark.parametrize("dp,tp", [(1, 2), (3, 1), (3, 2), (5, 4)])
def test_llama_per_rank_parameters_match_torch_dtensor(torch, dp, tp):
    argv = (["--fsdp", str(dp)] if dp > 1 else []) + (["--tp", str(tp)] if tp > 1 else [])
    ctx = run("llama-2-7b", argv, **SMALL_LLAMA)
    section = ctx.results["per_rank"]
    expected = torch_rank_bytes(torch, ctx.model, dp, tp)
    assert section["parameters"] == max(expected.values())
    assert section["world_size"] == dp * tp and section["mesh"] == {"dp": dp, "tp": tp}
    assert section["rank"] == min(r for r, v in expected.items() if v == max(expected.values()))
    assert section["peak"] == (section["parameters"] + section["gradients"] +
                               section["optimizer_states"] + section["gathered"] +
                               section["activations"])


# A torch.nn twin of the zoo's llama (same parameter names and shapes), sharded by torch itself:
# parallelize_module with ColwiseParallel / RowwiseParallel, then fully_shard per decoder layer
# and on the root, on every rank of a fake process group; prints each rank's local shapes.
_TORCH_FSDP_TP = textwrap.dedent("""
    import json, sys
    import torch, torch.nn as nn, torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    from torch.distributed.fsdp import fully_shard

    def module(**children):
        m = nn.Module()
        for k, v in children.items():
            setattr(m, k, v)
        return m

    def build(d, h, kv, i, n, v):
        hd = d // h
        lin = lambda a, b: nn.Linear(a, b, bias=False)
        layers = nn.ModuleList(module(
            self_attn=module(q_proj=lin(d, h * hd), k_proj=lin(d, kv * hd),
                             v_proj=lin(d, kv * hd), o_proj=lin(h * hd, d)),
            mlp=module(gate_proj=lin(d, i), up_proj=lin(d, i), down_proj=lin(i, d)),
            input_layernorm=nn.RMSNorm(d), post_attention_layernorm=nn.RMSNorm(d))
            for _ in range(n))
        return module(model=module(embed_tokens=nn.Embedding(v, d), layers=layers,
                                   norm=nn.RMSNorm(d)), lm_head=lin(d, v))

    cfg, cases = json.loads(sys.stdin.read())
    results = []
    for dp, tp in cases:
        per_rank = []
        for rank in range(dp * tp):
            dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=dp * tp)
            mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
            with torch.device("meta"):
                m = build(**cfg)
            if tp > 1:
                plan = {"model.embed_tokens": RowwiseParallel(), "lm_head": ColwiseParallel()}
                for j in range(cfg["n"]):
                    for name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                 "mlp.gate_proj", "mlp.up_proj"):
                        plan[f"model.layers.{j}.{name}"] = ColwiseParallel()
                    for name in ("self_attn.o_proj", "mlp.down_proj"):
                        plan[f"model.layers.{j}.{name}"] = RowwiseParallel()
                parallelize_module(m, mesh["tp"], plan)
            if dp > 1:
                for layer in m.model.layers:
                    fully_shard(layer, mesh=mesh["dp"])
                fully_shard(m, mesh=mesh["dp"])
            per_rank.append({n: list(p.to_local().shape) if hasattr(p, "to_local")
                             else list(p.shape) for n, p in m.named_parameters()})
            dist.destroy_process_group()
        results.append(per_rank)
    print(json.dumps(results))
""")


def test_local_shapes_match_torch_fsdp2_and_tensor_parallel(torch):
    from subclass_kit.modes import sharding_plan as plan
    from subclass_kit.modes.sharding import distribute_tensor
    cfg = dict(d=256, h=8, kv=4, i=688, n=2, v=1001)
    cases = [(3, 2), (2, 4), (5, 1), (1, 4), (3, 4)]
    proc = subprocess.run([sys.executable, "-c", _TORCH_FSDP_TP],
                          input=json.dumps([cfg, cases]), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    model = zoo.get_model("llama-2-7b", **SMALL_LLAMA)
    params = dict(model.named_parameters())
    for (dp, tp), per_rank in zip(cases, theirs):
        mesh, placements = plan.fsdp_tp_placements(model, dp, tp)
        for rank, shapes in enumerate(per_rank):
            assert set(shapes) == set(params)
            ours = {n: list(distribute_tensor(p.detach(), mesh, placements[n],
                                              rank=rank).to_local().shape)
                    for n, p in params.items()}
            assert ours == shapes, (dp, tp, rank)


def test_gpt2_conv1d_placements_match_torch_dtensor(torch):
    ctx = run("gpt2", ["--tp", "4", "--fsdp", "3"], n_layer=1)
    expected = torch_rank_bytes(torch, ctx.model, 3, 4, conv1d=True)
    assert ctx.results["per_rank"]["parameters"] == max(expected.values())


def test_fsdp_gathers_the_largest_unit():
    ctx = run("llama-2-7b", ["--fsdp", "4"], **SMALL_LLAMA)
    section = ctx.results["per_rank"]
    layer = sum(p.numel() for p in ctx.model.model.layers[0].parameters()) * 4
    root = sum(p.numel() for n, p in ctx.model.named_parameters()
               if not n.startswith("model.layers.")) * 4
    assert (section["gathered"], section["gathered_unit"]) == max(
        (layer, "model.layers.0"), (root, "(root)"), key=lambda x: x[0])
    # Inference: the inference peak of the whole (data-parallel) program, no training states.
    assert section["activations"] == ctx.summary.peak_activation_bytes
    assert section["gradients"] == section["optimizer_states"] == 0


def measure_only(target, argv, *, train_section=None, optimizer=None, **overrides):
    """The sharding feature alone, with ``--train`` set and ``train_section`` as the train
    feature's result (None: as if it had not run)."""
    args = cli._parser().parse_args(["shapes", target, *argv, "--train"])
    args.optimizer = optimizer
    model = zoo.get_model(target, **overrides)
    inputs = model.example_inputs(seq=16)
    ctx = sizing.SizingContext(model=model, inputs=inputs, name=target, args=args,
                               config=model.config, summary=zoo.summarize(model, inputs))
    if train_section is not None:
        ctx.results["train"] = train_section
    return feature.measure(ctx)


@pytest.mark.parametrize("optimizer,states_per_param", [("adamw", 2), ("sgd", 1)])
def test_training_states_without_a_train_section(optimizer, states_per_param):
    section = measure_only("llama-2-7b", ["--fsdp", "4", "--tp", "2"], optimizer=optimizer,
                           **SMALL_LLAMA)
    # float32 parameters: gradients as large as the shards; adamw 2 states each, sgd's
    # momentum buffer 1, like the parameter.
    assert section["gradients"] == section["parameters"]
    assert section["optimizer_states"] == states_per_param * section["parameters"]


def test_training_states_scale_the_train_section():
    model = zoo.get_model("llama-2-7b", **SMALL_LLAMA)
    numel = sum(p.numel() for p in model.parameters())
    train = {"gradients": 2 * numel, "optimizer_states": 12 * numel, "activations": 1000,
             "temporaries": 24, "at_peak": {"activations": 0, "temporaries": 5}}
    section = measure_only("llama-2-7b", ["--fsdp", "4"], train_section=train, **SMALL_LLAMA)
    rank_numel = section["parameters"] // 4          # float32 shards
    assert section["gradients"] == 2 * rank_numel
    assert section["optimizer_states"] == 12 * rank_numel
    assert section["activations"] == 1024 and section["activations_from"] == "train"


@pytest.mark.parametrize("argv,source", [(["--fsdp", "4"], "train"),
                                         (["--tp", "2"], "train, local program")])
def test_with_the_train_feature(argv, source):
    ctx = run("llama-2-7b", argv, train=True, **SMALL_LLAMA)
    train, section = ctx.results["train"], ctx.results["per_rank"]
    numel = sum(p.numel() for p in ctx.model.parameters())
    rank_numel = section["parameters"] // 4
    assert section["gradients"] == train["gradients"] * rank_numel // numel
    assert section["optimizer_states"] == train["optimizer_states"] * rank_numel // numel
    assert section["activations_from"] == source
    largest = train["activations"] + train["temporaries"]
    if source == "train":
        assert section["activations"] == largest
    else:       # the local program of a TP rank holds less than the whole model's
        assert 0 < section["activations"] < largest
    assert all(p.grad is None for p in ctx.model.parameters())


def test_tp_local_program_runs_on_shards_and_restores_the_model():
    ctx = run("llama-2-7b", ["--tp", "4"], **SMALL_LLAMA)
    section = ctx.results["per_rank"]
    assert section["activations_from"] == "inference, local program"
    assert 0 < section["activations"] < ctx.summary.peak_activation_bytes
    attn = ctx.model.model.layers[0].self_attn
    assert (attn.heads, attn.kv_heads) == (8, 4)
    assert tuple(attn.q_proj.weight.shape) == (256, 256)
    again = zoo.summarize(ctx.model, ctx.inputs)
    assert again.peak_activation_bytes == ctx.summary.peak_activation_bytes


def test_tp_with_fused_qkv_falls_back_with_a_note():
    ctx = run("gpt2", ["--tp", "2"], n_layer=1)
    section = ctx.results["per_rank"]
    assert section["activations"] == ctx.summary.peak_activation_bytes
    assert "unsharded" in section["activations_from"]
    assert any("local program" in note for note in ctx.notes)


def test_quantized_shards_count_codes_and_scales():
    ctx = run("llama-2-7b", ["--quantize", "int4", "--group-size", "16", "--fsdp", "3"],
              **SMALL_LLAMA)
    rows = lambda n: -(-n // 3)          # rank 0's rows: ceil
    expected = 0
    for name, p in zoo.get_model("llama-2-7b", **SMALL_LLAMA).named_parameters():
        out, *rest = p.shape
        if name.endswith("proj.weight") or name == "lm_head.weight":
            n = rest[0]
            expected += rows(out) * n // 2 + 2 * rows(out) * (n // 16) * 4
        else:
            expected += rows(out) * int(np.prod(rest, dtype=np.int64)) * 4
    assert ctx.results["per_rank"]["parameters"] == expected


def test_cli_json_and_text(capsys):
    assert cli.main(["shapes", "gpt2", "--fsdp", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"parameters", "gradients", "optimizer_states", "peak"} <= set(data["per_rank"])
    assert cli.main(["shapes", "gpt2", "--tp", "2"]) == 0
    out = capsys.readouterr().out
    assert "per rank" in out and "per-rank peak" in out


def test_tp_that_does_not_divide_the_heads_is_refused(capsys):
    assert cli.main(["shapes", "llama-2-7b", "--tp", "3"]) == 2
    err = capsys.readouterr().err
    assert "--tp 3" in err and "num_attention_heads=32" in err


def test_help_says_what_the_peak_includes(capsys):
    assert cli.main(["shapes", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "LARGEST rank" in out and "all-gathered" in out and "--fsdp N" in out


def test_user_function_without_parameters_is_refused(tmp_path, capsys):
    path = tmp_path / "plain.py"
    path.write_text("import subclass_kit as sk\n"
                    "def f(device='cpu'):\n"
                    "    return (lambda x: x * 2), (sk.empty(3, device=device),)\n")
    assert cli.main(["shapes", f"{path}:f", "--fsdp", "2"]) == 2
    assert "no parameters to shard" in capsys.readouterr().err
    assert sk.empty(1).numel() == 1
