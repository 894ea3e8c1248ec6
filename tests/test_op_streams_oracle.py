"""Op streams against PyTorch: what a dispatch mode sees (SEMANTICS.md §5.1).

Each small program runs twice: on our side under a recording ``sk.DispatchMode``, on torch's
side under a recording ``TorchDispatchMode``. Op names are normalised to ``name.overload``
(``aten.add.Tensor`` and ``sk.ops.add.Tensor`` both become ``"add.Tensor"``) and the two
streams must be equal. Inputs (and weights) are built before recording starts, so their
factories are not part of the streams.

Deliberate differences, mapped by ``_DIFFERENCES`` before comparing:

- **No Scalar overloads.** We keep one overload per op and pass Python numbers as wrapped
  numbers in Tensor positions, so ``x > 1`` is ``gt.Tensor`` (torch: ``gt.Scalar``),
  ``x ** 2`` is ``pow.Tensor_Tensor`` (torch: ``pow.Tensor_Scalar``) and the reflected
  ``1 - x`` is ``sub.Tensor(1, x)`` (torch: ``rsub.Scalar``). ``1 / x`` is ``div.Tensor(1, x)``
  where torch emits ``reciprocal`` + ``mul``: that program is compared with its own expected
  streams (``test_reflected_division``).
- **One squeeze overload**: ``squeeze.dims`` stands for torch's ``squeeze.dim``/``.default``.
- **Factories lower to fewer ops**: ``zeros``/``ones`` are ``full``, ``arange(n)`` is
  ``arange.start_step`` (compared in ``test_factories_lower_to_primitives``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from torch.utils._python_dispatch import TorchDispatchMode

import subclass_kit as sk

_DIFFERENCES = {
    "rsub.Scalar": "sub.Tensor",
    "pow.Tensor_Scalar": "pow.Tensor_Tensor",
    "squeeze.dim": "squeeze.dims",
    "squeeze.default": "squeeze.dims",
}
for _cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
    _DIFFERENCES[f"{_cmp}.Scalar"] = f"{_cmp}.Tensor"


class TorchRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = f"{func._overloadpacket.__name__}.{func._overloadname}"
        self.ops.append(_DIFFERENCES.get(name, name))
        return func(*args, **(kwargs or {}))


class SkRecorder(sk.DispatchMode):
    def __init__(self):
        self.ops = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.__name__)
        return func(*args, **(kwargs or {}))


class Env:
    """The inputs of a program, built for one library (``m`` is torch or sk)."""

    def __init__(self, m):
        self.m = m
        self.F = torch.nn.functional if m is torch else sk.nn.functional
        self.x = m.arange(6.0).view(2, 3)
        self.x3 = m.arange(24.0).view(2, 3, 4)
        self.w = m.arange(12.0).view(4, 3)          # a Linear(3, 4) weight
        self.b = m.ones(4)
        self.k = m.ones(3, 4)
        self.idx = m.tensor([1, 0])
        self.row = m.ones(3)


def _stream(m, program):
    env = Env(m)
    rec = TorchRecorder() if m is torch else SkRecorder()
    with rec:
        program(env)
    return rec.ops


def _setitem(t, key, value):
    t[key] = value


# (name, program, the stream both sides must show)
PROGRAMS = [
    ("reshape_contiguous_is_view", lambda e: e.x.reshape(3, 2), ["view.default"]),
    ("reshape_transposed_copies", lambda e: e.x.t().reshape(6),
     ["t.default", "clone.default", "_unsafe_view.default"]),
    ("flatten_is_view", lambda e: e.x3.flatten(1), ["view.default"]),
    ("T_is_permute", lambda e: e.x.T, ["permute.default"]),
    ("mT_is_transpose", lambda e: e.x3.mT, ["transpose.int"]),
    ("detach", lambda e: e.x.detach(), ["detach.default"]),
    ("setitem_number", lambda e: _setitem(e.x, 0, 1.0),
     ["lift_fresh.default", "select.int", "fill_.Tensor"]),
    ("setitem_tensor", lambda e: _setitem(e.x, 0, e.row), ["select.int", "copy_.default"]),
    ("index_with_list", lambda e: e.x[[1, 0]], ["lift_fresh.default", "index.Tensor"]),
    ("index_with_tensor", lambda e: e.x[e.idx], ["index.Tensor"]),
    ("index_with_mask", lambda e: e.x[e.x > 2], ["gt.Tensor", "index.Tensor"]),
    ("tensor_factory", lambda e: e.m.tensor([[1.0, 2.0], [3.0, 4.0]]), ["lift_fresh.default"]),
    ("to_float64", lambda e: e.x.to(e.m.float64), ["_to_copy.default"]),
    ("double", lambda e: e.x.double(), ["_to_copy.default"]),
    ("float_noop", lambda e: e.x.float(), []),
    ("chunk_is_split", lambda e: e.x.chunk(3, 1), ["split.Tensor"]),
    ("split", lambda e: e.x.split(1), ["split.Tensor"]),
    ("unbind", lambda e: e.x.unbind(1), ["unbind.int"]),
    ("linear", lambda e: e.F.linear(e.x, e.w), ["t.default", "mm.default"]),
    ("linear_bias", lambda e: e.F.linear(e.x, e.w, e.b), ["t.default", "addmm.default"]),
    ("linear_3d", lambda e: e.F.linear(e.x3.transpose(1, 2), e.w, e.b),
     ["transpose.int", "t.default", "expand.default", "view.default", "expand.default",
      "view.default", "bmm.default", "_unsafe_view.default", "add.Tensor"]),
    ("matmul_2d_is_mm", lambda e: e.x @ e.k, ["mm.default"]),
    ("matmul_3d_2d_is_bmm", lambda e: e.x.expand(5, 2, 3) @ e.k,
     ["expand.default", "expand.default", "view.default", "expand.default", "view.default",
      "bmm.default", "_unsafe_view.default"]),
    ("contiguous_noop", lambda e: e.x.contiguous(), []),
    ("contiguous_copies", lambda e: e.x.t().contiguous(), ["t.default", "clone.default"]),
    ("narrow_is_slice", lambda e: e.x.narrow(1, 0, 2), ["slice.Tensor"]),
    ("basic_slicing", lambda e: e.x[:, 1:], ["slice.Tensor"]),
    ("select_and_none", lambda e: e.x[-1, None], ["select.int", "unsqueeze.default"]),
    ("movedim_is_permute", lambda e: e.x3.movedim(0, 2), ["permute.default"]),
    ("expand", lambda e: e.row.expand(4, 3), ["expand.default"]),
    ("squeeze_dim", lambda e: e.x.unsqueeze(1).squeeze(1),
     ["unsqueeze.default", "squeeze.dims"]),
    ("view_as_and_unflatten", lambda e: e.x.view_as(e.x).unflatten(1, (3, 1)),
     ["view.default", "view.default"]),
    ("inplace_chain", lambda e: e.x.clone().mul_(2).add_(1),
     ["clone.default", "mul_.Tensor", "add_.Tensor"]),
    ("reflected_sub", lambda e: 1 - e.x, ["sub.Tensor"]),
    ("scalar_pow_and_compare", lambda e: (e.x ** 2) > 3, ["pow.Tensor_Tensor", "gt.Tensor"]),
    ("softmax", lambda e: e.x.softmax(-1), ["_softmax.default"]),
    ("log_softmax", lambda e: e.x.log_softmax(1), ["_log_softmax.default"]),
    ("gelu_relu", lambda e: e.F.gelu(e.F.relu(e.x), approximate="tanh"),
     ["relu.default", "gelu.default"]),
    ("layer_norm", lambda e: e.F.layer_norm(e.x, (3,)), ["native_layer_norm.default"]),
    ("masked_fill", lambda e: e.x.masked_fill(e.x > 2, 0.0),
     ["gt.Tensor", "masked_fill.Scalar"]),
    ("fill_masked_fill_with_tensor",
     lambda e: e.x.clone().fill_(e.x[0, 0]).masked_fill_(e.x > 2, e.x[1, 1]),
     ["clone.default", "select.int", "select.int", "fill_.Tensor", "gt.Tensor", "select.int",
      "select.int", "masked_fill_.Tensor"]),
    ("add_div_out", lambda e: (e.m.add(e.x, e.x, out=e.x3[0, :2, :3]),
                               e.m.div(e.x, e.x, rounding_mode="floor", out=e.x3[1, :2, :3])),
     ["select.int", "slice.Tensor", "slice.Tensor", "add.out", "select.int", "slice.Tensor",
      "slice.Tensor", "div.out_mode"]),
    ("resize_as_", lambda e: e.x.clone().resize_as_(e.x3), ["clone.default", "resize_as_.default"]),
    ("where", lambda e: e.m.where(e.x > 2, e.x, e.x * 2),
     ["gt.Tensor", "mul.Tensor", "where.self"]),
    ("cat_stack", lambda e: e.m.stack([e.m.cat([e.x, e.x]), e.m.cat([e.x, e.x])]),
     ["cat.default", "cat.default", "stack.default"]),
    ("embedding", lambda e: e.F.embedding(e.idx, e.w), ["embedding.default"]),
    ("sum_mean_dims", lambda e: (e.x.sum(1), e.x.mean(0)), ["sum.dim_IntList", "mean.dim"]),
    ("sum_all", lambda e: e.x.sum(), ["sum.default"]),
    ("item", lambda e: e.x[0, 0].item(),
     ["select.int", "select.int", "_local_scalar_dense.default"]),
]

# Programs whose sk side is known to differ for a reason outside the dispatch layer.
_KNOWN = {
    "sum_all": "no sum.default overload yet: x.sum() dispatches sum.dim_IntList(x, None) "
               "(owner: op_table.py reductions)",
}


def _sk_stream_or_skip(program):
    try:
        return _stream(sk, program)
    except (AttributeError, NotImplementedError) as e:
        pytest.skip(f"missing in subclass_kit: {type(e).__name__}: {e}")


@pytest.mark.parametrize("name,program,expected", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_op_stream_matches_torch(name, program, expected):
    assert _stream(torch, program) == expected, "the expected stream is torch's own"
    if name in _KNOWN:
        got = _sk_stream_or_skip(program)
        if got != expected:
            pytest.xfail(_KNOWN[name])
    assert _sk_stream_or_skip(program) == expected


def test_reflected_division():
    prog = (lambda e: 1 / e.x)
    assert _stream(torch, prog) == ["reciprocal.default", "mul.Tensor"]
    assert _stream(sk, prog) == ["div.Tensor"]


def test_factories_lower_to_primitives():
    def prog(e):
        e.m.zeros(2, 3)
        e.m.ones(2)
        e.m.arange(5)
        e.m.full((2,), 3.0)

    assert _stream(torch, prog) == ["zeros.default", "ones.default", "arange.default",
                                    "full.default"]
    assert _stream(sk, prog) == ["full.default", "full.default", "arange.start_step",
                                 "full.default"]


def test_metadata_queries_emit_nothing():
    def prog(e):
        x = e.x
        return (x.size(), x.stride(), x.numel(), x.dim(), x.is_contiguous(),
                x.storage_offset(), x.shape, x.dtype, x.device)

    assert _stream(torch, prog) == []
    assert _stream(sk, prog) == []


def test_factory_ops_reach_modes_with_no_types():
    seen = []

    class Types(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func.__name__, types))
            return func(*args, **(kwargs or {}))

    with Types():
        sk.zeros(2)
    assert seen == [("full.default", ())]
