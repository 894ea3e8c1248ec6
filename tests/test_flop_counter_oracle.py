"""``modes.FlopCounterMode`` against ``torch.utils.flop_counter.FlopCounterMode``: the same model
built from ``sk.nn`` and ``torch.nn`` (torch's weights loaded into ours), run under both
counters forward and forward + backward; totals, per-op and per-module counts must be equal.

torch 2.13 has no formula for its fused *CPU* attention op (it counts 0 there, see
docs/differences.md); where our model runs that op, torch's counter gets the formula torch uses
for its fused GPU ops through ``custom_mapping`` (``sdpa_flop_count`` /
``sdpa_backward_flop_count`` from torch's own module), so the comparison stays with torch's
arithmetic. Hypothesis checks the formulas on random shapes through ``matmul``'s
decompositions (1-d to 4-d, broadcasting) on meta tensors in both libraries.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit.modes import FlopCounterMode, register_flop_formula

torch = pytest.importorskip("torch", reason="torch is the oracle for FlopCounterMode")
from torch.utils import flop_counter as tfc  # noqa: E402

TF = torch.nn.functional


def _names(counts) -> dict:
    """``{module: {op base name: flops}}`` for our counts and torch's alike."""
    # both are keyed by packets (``sk.ops.mm``, ``aten.mm``): ``__name__`` is "mm" in both
    return {mod: {op.__name__: n for op, n in ops.items()} for mod, ops in counts.items()}


_TORCH_FUSED = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:
        lambda q, k, v, *a, out_shape=None, **kw: tfc.sdpa_flop_count(q, k, v),
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
        lambda g, q, k, v, *a, out_shape=None, **kw: tfc.sdpa_backward_flop_count(g, q, k, v),
}


def _count(lib, fn, *args):
    """Run ``fn(*args)`` under ``lib``'s counter; its counts by names."""
    if lib is sk:
        counter = FlopCounterMode(display=False)
    else:
        counter = tfc.FlopCounterMode(display=False, custom_mapping=_TORCH_FUSED)
    with counter:
        fn(*args)
    return _names(counter.get_flop_counts()), counter.get_total_flops()


# -- the twin models ------------------------------------------------------------------------------
def _mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.GELU(), lib.nn.Linear(16, 16),
                             lib.nn.Tanh(), lib.nn.Linear(16, 3, bias=False))


def _block(lib, heads=4, kv_heads=4, attention="fused"):
    """A pre-norm transformer block; attention through F.scaled_dot_product_attention
    ("fused": PyTorch's CPU picks its flash kernel; "math": a 3-d float mask keeps it off)."""
    nn, F = lib.nn, lib.nn.functional
    dim, head_dim = 16, 4

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(dim, heads * head_dim)
            self.kv = nn.Linear(dim, 2 * kv_heads * head_dim, bias=False)
            self.out = nn.Linear(heads * head_dim, dim)

        def forward(self, x):
            b, s, _ = x.shape
            q = self.q(x).view(b, s, heads, head_dim).transpose(1, 2)
            k, v = self.kv(x).view(b, s, 2, kv_heads, head_dim).unbind(2)
            k, v = k.transpose(1, 2), v.transpose(1, 2)
            if attention == "math":
                mask = lib.zeros(1, s, s)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                   enable_gqa=heads != kv_heads)
            else:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                   enable_gqa=heads != kv_heads)
            return self.out(y.transpose(1, 2).reshape(b, s, heads * head_dim))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(dim)
            self.attn = Attention()
            self.ln2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    return Block()


def _twins(build, **kw):
    torch.manual_seed(0)
    theirs = build(torch, **kw)
    ours = build(sk, **kw)
    ours.load_state_dict({k: sk.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


def _run(model, x, backward):
    out = model(x)
    if backward:
        out.sum().backward()
    return out


MODELS = {
    "mlp": (_mlp, {}, (5, 6)),
    "mlp_3d": (_mlp, {}, (2, 5, 6)),
    "block_fused": (_block, {}, (2, 6, 16)),
    "block_math": (_block, {"attention": "math"}, (2, 6, 16)),
    "block_gqa": (_block, {"heads": 4, "kv_heads": 2}, (2, 6, 16)),
}


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "forward_backward"])
@pytest.mark.parametrize("name", list(MODELS))
def test_model_counts_equal_torch(name, backward):
    build, kw, shape = MODELS[name]
    ours, theirs = _twins(build, **kw)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got, total = _count(sk, _run, ours, sk.tensor(x), backward)
    want, want_total = _count(torch, _run, theirs, torch.tensor(x), backward)
    assert total == want_total > 0
    assert got == want        # every module (torch's names: "Block.attn.q"), every op
    assert got["Global"] == want["Global"]


def test_fused_attention_counts_what_torch_counts_for_fused_gpu_attention():
    """The fused op's count is torch's ``sdpa_flop_count`` (2 products) forward and
    ``sdpa_backward_flop_count`` (5 products) backward, with GQA heads at the query's count."""
    q = sk.randn(2, 4, 5, 8, requires_grad=True)
    k = sk.randn(2, 2, 7, 8, requires_grad=True)
    v = sk.randn(2, 2, 7, 8, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        out = sk.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    fwd = tfc.sdpa_flop_count((2, 4, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8))
    assert counter.get_total_flops() == fwd == 2 * (2 * 4 * 5 * 7 * 8) * 2
    with counter:
        out.sum().backward()
    assert counter.get_total_flops() == tfc.sdpa_backward_flop_count(
        (2, 4, 5, 8), (2, 4, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8))


def test_bmm_and_baddbmm_programs():
    rng = np.random.default_rng(2)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4, 5), (3, 5, 6),
                                                                   (3, 4, 6)))

    def program(lib, a, b, c):
        x = lib.bmm(a, b)
        y = lib.baddbmm(c, a, b, beta=0.5, alpha=2.0)
        z = a @ b                                  # matmul of 3-d operands: bmm
        w = lib.matmul(a[0], b[0])                 # 2-d: mm
        return x.sum() + y.sum() + z.sum() + w.sum()

    def run(lib, backward):
        args = [lib.tensor(t, requires_grad=True) for t in (a, b, c)]
        return _count(lib, lambda: program(lib, *args).backward() if backward
                      else program(lib, *args))

    for backward in (False, True):
        assert run(sk, backward) == run(torch, backward)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4),
       st.lists(st.integers(1, 5), min_size=1, max_size=4), st.integers(1, 6))
def test_matmul_on_meta_counts_equal_torch(a_shape, b_shape, k):
    """Random 1-d..4-d matmuls (batch dims broadcast where sizes allow) on meta tensors: the
    decomposition reaches the same counted ops with the same shapes in both libraries."""
    a_shape = a_shape[:-1] + [k] if len(a_shape) > 1 else [k]
    b_shape = b_shape[:-2] + [k, b_shape[-1]] if len(b_shape) > 1 else [k]
    # batch dims: make them broadcastable (1 or equal) from the right
    ab, bb = a_shape[:-2], b_shape[:-2]
    for i in range(1, min(len(ab), len(bb)) + 1):
        if ab[-i] != bb[-i] and 1 not in (ab[-i], bb[-i]):
            bb[-i] = ab[-i]
    b_shape = bb + b_shape[len(bb):]
    ours = _count(sk, lambda: sk.matmul(sk.empty(a_shape, device="meta"),
                                        sk.empty(b_shape, device="meta")))
    theirs = _count(torch, lambda: torch.matmul(torch.empty(a_shape, device="meta"),
                                                torch.empty(b_shape, device="meta")))
    assert ours == theirs


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.integers(1, 9),
       st.integers(1, 9), st.integers(1, 8), st.booleans())
def test_sdpa_formulas_equal_torch(b, kv_heads, group, s_q, s_k, d, backward):
    h = kv_heads * group
    q, k, v = (b, h, s_q, d), (b, kv_heads, s_k, d), (b, kv_heads, s_k, d)
    from subclass_kit.modes import flop_counter as ours
    if backward:
        assert ours.sdpa_backward_flop_count(q, q, k, v) == tfc.sdpa_backward_flop_count(q, q, k, v)
    else:
        assert ours.sdpa_flop_count(q, k, v) == tfc.sdpa_flop_count(q, k, v)
    assert ours.mm_flop((s_q, d), (d, s_k)) == tfc.mm_flop((s_q, d), (d, s_k))


def test_table_and_depth():
    ours, theirs = _twins(_block)
    x = sk.randn(2, 6, 16)
    with FlopCounterMode(display=False, depth=1) as counter:
        ours(x)
    table = counter.get_table()
    assert table.splitlines()[0].split() == ["Module", "FLOP", "%", "Total"]
    assert "Block.attn" not in table and " - sk.ops.addmm" in table
    deep = counter.get_table(depth=3)
    assert "Block.attn.q" in deep and "100.00%" in deep
    total = counter.get_total_flops()
    assert sum(counter.get_flop_counts()["Block"].values()) == total


def test_display_prints_on_exit(capsys):
    with FlopCounterMode():
        sk.mm(sk.ones(2, 3), sk.ones(3, 4))
    out = capsys.readouterr().out
    assert "Global" in out and "48" in out


def test_counts_cleared_on_reentry_and_mods_warns():
    with pytest.warns(UserWarning, match="mods argument is not needed"):
        counter = FlopCounterMode(mods=sk.nn.Linear(2, 2), display=False)
    for _ in range(2):
        with counter:
            sk.mm(sk.ones(2, 3), sk.ones(3, 4))
        assert counter.get_total_flops() == 48


def test_register_flop_formula_for_a_custom_op_and_custom_mapping():
    lib = "flopcount_test"
    op = sk.library.define(f"{lib}::scaled(Tensor x, float s) -> Tensor")
    sk.library.impl(op, ["cpu", "meta"], lambda x, s: x * s)

    @register_flop_formula(op)
    def scaled_flop(x_shape, s, out_shape=None, **kwargs):
        return math.prod(x_shape)

    x = sk.ones(3, 4)
    with FlopCounterMode(display=False) as counter:
        op(x, 2.0)
    assert counter.get_flop_counts()["Global"] == {op.overloadpacket: 12}
    with pytest.raises(RuntimeError, match="duplicate registrations"):
        register_flop_formula(op)(scaled_flop)
    with pytest.raises(ValueError, match="expected each target to be an op"):
        register_flop_formula("mm")(scaled_flop)
    # custom_mapping: for one counter, replacing the registry's formula
    with FlopCounterMode(display=False, custom_mapping={sk.ops.mm: lambda a, b, **kw: 7}) as c:
        sk.mm(x, sk.ones(4, 2))
    assert c.get_total_flops() == 7


def test_backward_ops_are_attributed_to_their_modules():
    """The gradient products of a layer count under that layer, as torch's ModuleTracker
    attributes them; after the backward only "Global" is open again."""
    ours, theirs = _twins(_mlp)
    x = sk.randn(5, 6)
    with FlopCounterMode(display=False) as counter:
        out = ours(x)
        forward = counter.get_flop_counts()
        out.sum().backward()
        sk.mm(sk.ones(1, 1), sk.ones(1, 1))        # after the backward: Global only
        assert counter.mod_tracker.parents == {"Global"}
    counts = counter.get_flop_counts()
    assert counts["Sequential.0"][sk.ops.mm] > 0       # grad of weight of the first layer
    assert {op.name for op in forward["Sequential.0"]} == {"addmm"}
    assert counts["Global"][sk.ops.mm] == counts["Sequential"][sk.ops.mm] + 2
