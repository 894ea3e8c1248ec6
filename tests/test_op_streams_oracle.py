"""Op streams against PyTorch: what a dispatch mode sees (SEMANTICS.md §5.1).

Each small program runs twice: on our side under a recording ``sk.DispatchMode``, on torch's
side under a recording ``TorchDispatchMode``. Op names are normalised to ``name.overload``
(``aten.add.Tensor`` and ``sk.ops.add.Tensor`` both become ``"add.Tensor"``) and the two
streams must be equal: first the names, then every call's arguments (tensors as ``T``, dtypes,
devices and memory formats by name). Handlers see only the arguments the caller passed: trailing
positional and keyword-only arguments equal to their schema defaults are dropped, as PyTorch's
Python-handler boundary drops them (``x.to(sk.uint8)`` is ``_to_copy(x, dtype=uint8)``).
Inputs (and weights) are built before recording starts, so their factories are not part of the
streams.

Deliberate differences, mapped by ``_DIFFERENCES`` / ``_torch_kwargs`` before comparing:

- **Python numbers.** The operators and functions call what torch's call, the tensor where
  torch puts it and torch's Scalar overloads for numbers (``x > 1`` is ``gt.Scalar``, ``x ** 2``
  ``pow.Tensor_Scalar``, ``2 * x`` ``mul.Tensor(x, 2)``, ``1 - x`` ``rsub.Scalar``, ``1 / x``
  ``reciprocal`` then ``mul``, ``x // y`` ``floor_divide``); ``where(c, x, 0.0)`` makes the
  number a tensor first (``scalar_tensor``), as PyTorch's ``where.ScalarOther`` does.
- **One squeeze overload**: ``squeeze.dims`` stands for torch's ``squeeze.dim``/``.default``.
- **TensorOptions fill-ins**: PyTorch's Python bindings of factories pass ``device`` (the
  resolved one, ``cpu``) and ``pin_memory=False`` even when the caller gave neither (a
  ``device=cpu`` of a call without tensor arguments is dropped on both sides), and some
  conversions (``to("meta")``, ``type_as``) pass ``dtype``/``layout``/``device`` taken from the
  tensor; ours pass what the caller gave (``layout`` / ``pin_memory`` only when given).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from torch.utils._python_dispatch import TorchDispatchMode

import subclass_kit as sk

_DIFFERENCES = {
    "squeeze.dim": "squeeze.dims",
    "squeeze.default": "squeeze.dims",
}


def _norm(x):
    """An argument in a form both libraries share: tensors as "T", dtypes, devices and memory
    formats by name, sequences as lists."""
    if isinstance(x, (torch.Tensor, sk.Tensor)):
        return "T"
    if isinstance(x, (list, tuple)):
        return [_norm(v) for v in x]
    if isinstance(x, (torch.dtype, sk.dtype)):
        return str(x).split(".")[-1]
    if isinstance(x, (torch.device, sk.device)):
        return f"device:{x}"
    if isinstance(x, torch.memory_format) or type(x).__name__ == "_MemoryFormat":
        return str(x).split(".")[-1]
    return x


# Arguments PyTorch's bindings add that the caller did not pass (see the module docstring).
_TORCH_ONLY_KWARGS = ("pin_memory", "layout")


def _torch_kwargs(args, kwargs):
    kw = {k: _norm(v) for k, v in kwargs.items() if k not in _TORCH_ONLY_KWARGS}
    if kw.get("device") == "device:cpu" and not any(
            isinstance(a, torch.Tensor) for a in args):
        del kw["device"]        # a factory's resolved device, filled in by the binding
    return kw


class TorchRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = f"{func._overloadpacket.__name__}.{func._overloadname}"
        name = _DIFFERENCES.get(name, name)
        self.ops.append(name)
        self.calls.append((name, _norm(args), _torch_kwargs(args, kwargs or {})))
        return func(*args, **(kwargs or {}))


class SkRecorder(sk.DispatchMode):
    def __init__(self):
        self.ops = []
        self.calls = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.__name__)
        kw = {k: _norm(v) for k, v in (kwargs or {}).items()}
        if kw.get("device") == "device:cpu" and not any(isinstance(a, sk.Tensor) for a in args):
            del kw["device"]    # as _torch_kwargs: scalar_tensor(0.0, dtype=, device=cpu)
        self.calls.append((func.__name__, _norm(args), kw))
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
        self.i = m.arange(6).view(2, 3)
        self.mask = self.x > 2
        self.meta_mask = m.ones(2, dtype=m.bool, device="meta")
        self.xm = m.zeros(2, 3, device="meta")
        self.im = m.zeros(2, 3, dtype=m.int64, device="meta")


def _stream(m, program, calls=False):
    env = Env(m)
    rec = TorchRecorder() if m is torch else SkRecorder()
    with rec:
        program(env)
    return rec.calls if calls else rec.ops


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
    ("index_with_mask", lambda e: e.x[e.x > 2], ["gt.Scalar", "index.Tensor"]),
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
    ("reflected_sub", lambda e: 1 - e.x, ["rsub.Scalar"]),
    ("reflected_division", lambda e: 1 / e.x, ["reciprocal.default", "mul.Tensor"]),
    ("reflected_operators", lambda e: (2 + e.x, 2.5 * e.x, 2 - e.idx, 3 / e.idx, 7 // e.x),
     ["add.Tensor", "mul.Tensor", "rsub.Scalar", "reciprocal.default", "mul.Tensor",
      "floor_divide.default"]),
    ("floor_division", lambda e: (e.x // 2, e.idx // (e.idx + 1), e.x.clone().__ifloordiv__(3)),
     ["floor_divide.default", "add.Tensor", "floor_divide.default", "clone.default",
      "floor_divide_.Tensor"]),
    ("scalar_pow_and_compare", lambda e: (e.x ** 2) > 3, ["pow.Tensor_Scalar", "gt.Scalar"]),
    ("softmax", lambda e: e.x.softmax(-1), ["_softmax.default"]),
    ("log_softmax", lambda e: e.x.log_softmax(1), ["_log_softmax.default"]),
    ("gelu_relu", lambda e: e.F.gelu(e.F.relu(e.x), approximate="tanh"),
     ["relu.default", "gelu.default"]),
    ("layer_norm", lambda e: e.F.layer_norm(e.x, (3,)), ["native_layer_norm.default"]),
    ("masked_fill", lambda e: e.x.masked_fill(e.x > 2, 0.0),
     ["gt.Scalar", "masked_fill.Scalar"]),
    ("fill_masked_fill_with_tensor",
     lambda e: e.x.clone().fill_(e.x[0, 0]).masked_fill_(e.x > 2, e.x[1, 1]),
     ["clone.default", "select.int", "select.int", "fill_.Tensor", "gt.Scalar", "select.int",
      "select.int", "masked_fill_.Tensor"]),
    ("add_div_out", lambda e: (e.m.add(e.x, e.x, out=e.x3[0, :2, :3]),
                               e.m.div(e.x, e.x, rounding_mode="floor", out=e.x3[1, :2, :3])),
     ["select.int", "slice.Tensor", "slice.Tensor", "add.out", "select.int", "slice.Tensor",
      "slice.Tensor", "div.out_mode"]),
    ("resize_as_", lambda e: e.x.clone().resize_as_(e.x3), ["clone.default", "resize_as_.default"]),
    ("where", lambda e: e.m.where(e.x > 2, e.x, e.x * 2),
     ["gt.Scalar", "mul.Tensor", "where.self"]),
    ("where_number", lambda e: (e.m.where(e.mask, e.x, 0.0), e.x.where(e.mask, 2)),
     ["scalar_tensor.default", "where.self", "scalar_tensor.default", "where.self"]),
    ("cat_stack", lambda e: e.m.stack([e.m.cat([e.x, e.x]), e.m.cat([e.x, e.x])]),
     ["cat.default", "cat.default", "stack.default"]),
    ("embedding", lambda e: e.F.embedding(e.idx, e.w), ["embedding.default"]),
    ("sum_mean_dims", lambda e: (e.x.sum(1), e.x.mean(0)), ["sum.dim_IntList", "mean.dim"]),
    ("sum_all", lambda e: e.x.sum(), ["sum.default"]),
    ("item", lambda e: e.x[0, 0].item(),
     ["select.int", "select.int", "_local_scalar_dense.default"]),
    ("to_uint8", lambda e: e.x.to(e.m.uint8), ["_to_copy.default"]),
    ("ones_zeros", lambda e: (e.m.ones(2, 3), e.m.zeros(2)), ["ones.default", "zeros.default"]),
]

# Programs whose sk side is known to differ for a reason outside the dispatch layer.
_KNOWN: dict = {}

# A broad set of common calls (reductions with and without dims, factories, conversions,
# indexing, in-place ops): streams and every call's arguments must equal torch's.
BROAD = {
    # reductions
    "sum": lambda e: e.x.sum(),
    "sum_dtype": lambda e: e.x.sum(dtype=e.m.float64),
    "sum_dim": lambda e: e.x.sum(0),
    "sum_dims_keepdim": lambda e: e.x3.sum((0, 2), keepdim=True),
    "sum_none": lambda e: e.x.sum(None),
    "sum_function": lambda e: e.m.sum(e.i),
    "mean": lambda e: e.x.mean(),
    "mean_dtype": lambda e: e.x.mean(dtype=e.m.float64),
    "mean_dim": lambda e: e.x.mean(1, keepdim=True),
    "prod": lambda e: (e.x.prod(), e.x.prod(1)),
    "max_min": lambda e: (e.x.max(), e.x.min(), e.x.max(0), e.x.min(1, keepdim=True)),
    "amax_amin": lambda e: (e.x.amax(1), e.x.amin((0, 1))),
    "argmax_argmin": lambda e: (e.x.argmax(), e.x.argmax(1), e.x.argmin(0, keepdim=True)),
    "std": lambda e: e.x.std(),
    "all_any": lambda e: (e.mask.all(), e.mask.any(1)),
    "norm": lambda e: e.x.norm(),
    "logsumexp": lambda e: e.x.logsumexp(1),
    "cumsum": lambda e: e.x.cumsum(1),
    "count_nonzero": lambda e: e.m.count_nonzero(e.x),
    "topk_sort": lambda e: (e.x.topk(2), e.x.sort(), e.x.sort(0, descending=True)),
    # factories
    "ones": lambda e: (e.m.ones(2, 3), e.m.ones((2,)), e.m.ones(2, dtype=e.m.float64)),
    "zeros": lambda e: (e.m.zeros(2), e.m.zeros(2, dtype=e.m.int64), e.m.zeros(0)),
    "full": lambda e: (e.m.full((2,), 3.0), e.m.full((2,), 3), e.m.full((2,), 1, dtype=e.m.int32)),
    "empty": lambda e: (e.m.empty(2), e.m.empty(2, dtype=e.m.int32)),
    "empty_strided": lambda e: e.m.empty_strided((2, 3), (1, 2)),
    "arange": lambda e: (e.m.arange(5), e.m.arange(5.0), e.m.arange(1, 5),
                         e.m.arange(1, 5, 2), e.m.arange(0, 1, 0.25),
                         e.m.arange(5, dtype=e.m.float32)),
    "eye": lambda e: (e.m.eye(3), e.m.eye(3, 4), e.m.eye(2, dtype=e.m.int64)),
    "random": lambda e: (e.m.rand(2), e.m.randn(2, 3, dtype=e.m.float64),
                         e.m.randint(10, (3,)), e.m.randint(2, 10, (3,))),
    "likes": lambda e: (e.m.zeros_like(e.x), e.m.ones_like(e.x, dtype=e.m.int64),
                        e.m.full_like(e.x, 2.0), e.m.empty_like(e.x), e.m.rand_like(e.x),
                        e.m.randn_like(e.x)),
    "new_factories": lambda e: (e.x.new_zeros(2), e.x.new_ones((2,)), e.x.new_full((2,), 1.0),
                                e.x.new_empty(2), e.x.new_tensor([1.0])),
    "tensor": lambda e: (e.m.tensor([1.0]), e.m.tensor(3)),
    "scalar_tensor": lambda e: e.m.scalar_tensor(1.0),
    # conversions
    "to_dtype": lambda e: (e.x.to(e.m.uint8), e.x.to(e.m.float64), e.x.to(e.m.float32),
                           e.x.to(e.m.float32, copy=True)),
    "to_device": lambda e: (e.x.to("cpu"), e.x.to("cpu", e.m.float64)),
    "to_other": lambda e: e.x.to(e.i),
    "to_meta": lambda e: e.x.to("meta"),
    "type_as": lambda e: e.x.type_as(e.i),
    "casts": lambda e: (e.x.double(), e.x.float(), e.x.int(), e.x.long(), e.x.bool(),
                        e.x.half(), e.i.float()),
    "clone_contiguous": lambda e: (e.x.clone(), e.x.t().contiguous(), e.x.contiguous()),
    # indexing
    "index_basic": lambda e: (e.x[0], e.x[:, 1], e.x[..., None], e.x3[1:3:2], e.x[-1],
                              e.x[0, 1:]),
    "index_advanced": lambda e: (e.x[e.idx], e.x[e.mask], e.x[e.idx, e.idx], e.x[:, e.idx],
                                 e.x[[0, 1]]),
    "index_ops": lambda e: (e.x.index_select(1, e.idx), e.x.gather(1, e.idx.view(2, 1)),
                            e.x.masked_fill(e.mask, 1.0)),
    "setitem": lambda e: (_setitem(e.x, (0, 1), 5.0), _setitem(e.x, e.mask, 0.0),
                          _setitem(e.x, e.idx, 1.0), _setitem(e.x, slice(0, 1), e.x[1])),
    # shape and in-place
    "shape": lambda e: (e.x3.flatten(), e.x.unsqueeze(0), e.x.transpose(0, 1),
                        e.x3.permute(2, 0, 1), e.x.repeat(2, 1), e.x[0].expand_as(e.x),
                        e.m.cat([e.x, e.x], 1)),
    "inplace": lambda e: (e.x.clone().abs_(), e.x.clone().fill_(1), e.x.clone().zero_(),
                          e.x.clone().copy_(e.i)),
    "math": lambda e: (e.x.add(e.x, alpha=2), e.x.div(e.x, rounding_mode="floor"),
                       e.x.clamp(0, 1), e.x.clamp(min=0), e.x.softmax(1), e.x @ e.x.t(),
                       e.x.sqrt(), e.x * 2),
    "item_tolist": lambda e: (e.x[0, 0].item(), e.x.tolist()),
    "where_numbers": lambda e: (e.m.where(e.mask, e.x, 0.0), e.m.where(e.mask, 1, 2.0),
                                e.m.where(e.mask, e.i, 0.5), e.m.where(e.mask, 0.5, e.i),
                                e.i.where(e.mask, True), e.m.where(e.mask, True, False),
                                e.m.where(e.meta_mask, 1, 2)),
    # a number off cpu is a dispatched scalar_tensor (cpu: lift_fresh of a tensor made below)
    "setitem_meta": lambda e: (_setitem(e.xm, 0, 3.0), _setitem(e.xm, (0, 1), 5),
                               _setitem(e.im, 1, 2.5), _setitem(e.xm, ..., True),
                               _setitem(e.im, e.meta_mask, 7)),
}

# Calls whose arguments differ by a documented difference (the stream of names still matches).
_ARGS_DIFFER = {
    "to_meta": "PyTorch's binding also passes the tensor's own dtype (and layout)",
    "type_as": "PyTorch's binding also passes device=cpu (and layout)",
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


@pytest.mark.parametrize("name", sorted(BROAD))
def test_broad_op_stream_matches_torch(name):
    program = BROAD[name]
    theirs = _stream(torch, program, calls=True)
    ours = _stream(sk, program, calls=True)
    assert [c[0] for c in ours] == [c[0] for c in theirs]
    if name in _ARGS_DIFFER:
        assert ours != theirs, f"{name} now agrees: remove it from _ARGS_DIFFER"
    else:
        assert ours == theirs


def test_handlers_see_only_the_arguments_the_caller_passed():
    assert _stream(sk, lambda e: e.x.to(e.m.uint8), calls=True) == [
        ("_to_copy.default", ["T"], {"dtype": "uint8"})]
    # explicit defaults are dropped too, as at PyTorch's boundary
    calls = _stream(sk, lambda e: sk.ops.topk(e.x, 2, -1, True, True), calls=True)
    assert calls == _stream(torch, lambda e: torch.ops.aten.topk(e.x, 2, -1, True, True),
                            calls=True) == [("topk.default", ["T", 2], {})]
    calls = _stream(sk, lambda e: sk.ops._to_copy(e.x, dtype=None, non_blocking=False),
                    calls=True)
    assert calls == [("_to_copy.default", ["T"], {})]


def _packet_facts(m):
    """What a handler sees of ``x * 2`` and ``x.sum()`` against the packets ``mul``/``sum``:
    ``func == packet``, ``func.overloadpacket is packet``, ``func._overloadpacket == packet``."""
    packets = sk.ops if m is sk else torch.ops.aten
    seen = []

    def record(func):
        for packet in (packets.mul, packets.sum):
            seen.append((func == packet, func.overloadpacket is packet,
                         func._overloadpacket == packet))

    class SkRec(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            record(func)
            return func(*args, **(kwargs or {}))

    class TorchRec(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            record(func)
            return func(*args, **(kwargs or {}))

    x = m.ones(2)
    with (SkRec() if m is sk else TorchRec()):
        x * 2
        x.sum()
    return seen


def test_a_packet_is_not_an_overload():
    """``sk.ops.mul`` is an ``OpOverloadPacket``, as ``aten.mul``: a handler's ``func`` never
    equals it; ``func.overloadpacket is sk.ops.mul`` is the spelling that selects the op."""
    assert _packet_facts(sk) == _packet_facts(torch)
    assert _packet_facts(sk) == [(False, True, True), (False, False, False),
                                 (False, False, False), (False, True, True)]


def test_factories_show_torchs_overloads():
    def prog(e):
        e.m.zeros(2, 3)
        e.m.ones(2)
        e.m.arange(5)
        e.m.full((2,), 3.0)
        e.m.arange(1, 5)
        e.m.eye(2)
        e.m.randint(4, (2,))

    expected = ["zeros.default", "ones.default", "arange.default", "full.default",
                "arange.start", "eye.default", "randint.default"]
    assert _stream(torch, prog) == expected
    assert _stream(sk, prog) == expected


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
    assert seen == [("zeros.default", ())]


# -- backward streams ------------------------------------------------------------------------------
def _layer_norm_backward_stream(m, n, affine, x_grad=True):
    """The calls a mode sees during ``y.backward(g)`` of a layer norm over rows of ``n``
    built outside it."""
    F = torch.nn.functional if m is torch else sk.nn.functional
    x = m.arange(float(n * 6)).view(6, n).sin().requires_grad_(x_grad)
    w = m.arange(float(n)).cos().requires_grad_() if affine else None
    b = m.arange(float(n)).requires_grad_() if affine == "both" else None
    y = F.layer_norm(x, (n,), w, b)
    g = m.ones(6, n)
    rec = TorchRecorder() if m is torch else SkRecorder()
    with rec:
        y.backward(g)
    return rec.calls


@pytest.mark.parametrize("affine,x_grad", [("both", True), (None, True), ("weight", True),
                                          ("both", False)])
def test_layer_norm_backward_is_one_op(affine, x_grad):
    """PyTorch's backward of layer_norm is one native_layer_norm_backward call (the mask
    naming the inputs that need a gradient), then the leaves' accumulation."""
    theirs = _layer_norm_backward_stream(torch, 4, affine, x_grad)
    assert theirs[0][0] == "native_layer_norm_backward.default"
    assert _layer_norm_backward_stream(sk, 4, affine, x_grad) == theirs


def _unseen_tensor_arguments(m, program):
    """Tensors a handler gets as arguments that it neither saw made nor was given."""
    seen, unseen = set(), []
    tensor = torch.Tensor if m is torch else sk.Tensor

    def visit(func, args, kwargs):
        for a in list(args) + list(kwargs.values()):
            for t in (a if isinstance(a, (list, tuple)) else [a]):
                if isinstance(t, tensor) and id(t) not in seen:
                    unseen.append(str(func))
        out = func(*args, **kwargs)
        for t in (out if isinstance(out, (list, tuple)) else [out]):
            if isinstance(t, tensor):
                seen.add(id(t))
        return out

    class TorchCapture(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return visit(func, args, kwargs or {})

    class SkCapture(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            return visit(func, args, kwargs or {})

    env = Env(m)
    seen.update(id(t) for t in vars(env).values() if isinstance(t, tensor))
    with (TorchCapture() if m is torch else SkCapture()):
        program(env)
    return unseen


def test_setitem_number_off_cpu_shows_every_tensor():
    """``t[i] = 3.0`` on a meta tensor: a mode that captures every tensor it sees never gets
    one made behind its back (the cpu path lifts one, in both libraries)."""
    meta = (lambda e: _setitem(e.xm, 0, 3.0))
    cpu = (lambda e: _setitem(e.x, 0, 3.0))
    assert _unseen_tensor_arguments(torch, meta) == _unseen_tensor_arguments(sk, meta) == []
    assert len(_unseen_tensor_arguments(torch, cpu)) == len(_unseen_tensor_arguments(sk, cpu)) == 1


def test_setitem_overflowing_int_raises_as_torch():
    for m in (torch, sk):
        for device in ("cpu", "meta"):
            t = m.zeros(2, dtype=m.int64, device=device)
            with pytest.raises(ValueError, match="Overflow when unpacking long long"):
                t[0] = 2 ** 70
