"""``sk.nn`` modules against ``torch.nn``: the same architecture built in both libraries, torch's
weights loaded into ours through ``load_state_dict``; compare outputs, state-dict keys and
shapes, iterator orders, ``repr``, conversions, hooks, and the errors of registration and
``load_state_dict`` (class and text, torch's names mapped by ``normalize_message``)."""

from __future__ import annotations

import io
import math
import warnings
import zipfile

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit import nn

torch = pytest.importorskip("torch", reason="torch is the oracle for sk.nn")
from oracle import assert_same_error, to_sk  # noqa: E402

tnn = torch.nn


def _build(lib, kind):
    """The same module tree in ``lib`` (``sk.nn`` or ``torch.nn``)."""
    if kind == "mlp":
        return lib.Sequential(lib.Linear(6, 16), lib.Tanh(), lib.Linear(16, 16), lib.GELU(),
                              lib.Linear(16, 3, bias=False))
    if kind == "block":
        class Block(lib.Module):
            def __init__(self):
                super().__init__()
                self.emb = lib.Embedding(11, 8, padding_idx=0)
                self.ln = lib.LayerNorm(8)
                self.rms = lib.RMSNorm(8, eps=1e-6)
                self.layers = lib.ModuleList([lib.Linear(8, 8) for _ in range(3)])
                self.heads = lib.ModuleDict({"a": lib.Linear(8, 2), "b": lib.Linear(8, 4)})
                self.drop = lib.Dropout(0.1)
                self.act = lib.SiLU()
                self.register_buffer("scale", torch_or_sk(lib).ones(8) * 2)
                self.register_buffer("tmp", torch_or_sk(lib).zeros(2), persistent=False)

            def forward(self, ids):
                h = self.ln(self.emb(ids)) * self.scale
                for layer in self.layers:
                    h = self.act(layer(self.drop(h)))
                h = self.rms(h)
                return lib.functional.softmax(self.heads["a"](h), -1), self.heads["b"](h)
        return Block()
    raise ValueError(kind)


def torch_or_sk(lib):
    return sk if lib is nn else torch


def _twins(kind, dtype=torch.float64):
    torch.manual_seed(0)
    theirs = _build(tnn, kind).to(dtype)
    ours = _build(nn, kind).to(sk.float64 if dtype == torch.float64 else sk.float32)
    ours.load_state_dict({k: to_sk(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _close(ours, theirs, rtol=1e-12):
    if isinstance(theirs, tuple):
        for a, b in zip(ours, theirs):
            _close(a, b, rtol)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=1e-12)


@pytest.mark.parametrize("kind", ["mlp", "block"])
def test_same_state_dict_names_shapes_and_outputs(kind):
    ours, theirs = _twins(kind)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert ours.state_dict()._metadata == theirs.state_dict()._metadata
    ours.eval()
    theirs.eval()
    if kind == "mlp":
        x = torch.randn(5, 6, dtype=torch.float64)
        _close(ours(to_sk(x)), theirs(x))
    else:
        ids = torch.tensor([[0, 3, 10, 2], [1, 1, 0, 7]])
        _close(ours(to_sk(ids)), theirs(ids))


@pytest.mark.parametrize("kind", ["mlp", "block"])
def test_repr_matches(kind):
    ours, theirs = _twins(kind)
    assert repr(ours) == repr(theirs)


def test_parameter_semantics():
    data = sk.arange(4.0)
    p = nn.Parameter(data)
    tp = tnn.Parameter(torch.arange(4.0))
    assert repr(p) == repr(tp)
    assert p.untyped_storage() is data.untyped_storage()
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert type(p * 2) is sk.Tensor and type(tp * 2) is torch.Tensor
    assert type(p.t()) is sk.Tensor
    assert not nn.Parameter(sk.ones(2), requires_grad=False).requires_grad
    assert tuple(nn.Parameter().shape) == tuple(tnn.Parameter().shape) == (0,)
    assert_same_error(lambda: nn.Parameter(sk.arange(3)), lambda: tnn.Parameter(torch.arange(3)))


@pytest.mark.parametrize("case", ["dot", "empty", "exists", "not_param",
                                  "buffer_type", "assign_tensor_to_param", "assign_to_module",
                                  "buffer_int_name"])
def test_registration_errors(case):
    def run(lib, mod):
        m = lib.Linear(2, 2)
        t = mod.ones(2)
        if case == "dot":
            m.register_parameter("a.b", None)
        elif case == "empty":
            m.register_buffer("", None)
        elif case == "exists":
            m.register_buffer("forward", None)
        elif case == "not_param":
            m.register_parameter("w", t)
        elif case == "buffer_type":
            m.register_buffer("b", 3)
        elif case == "assign_tensor_to_param":
            m.weight = t
        elif case == "assign_to_module":
            s = lib.Sequential(lib.Linear(1, 1))
            setattr(s, "0", 3)
        elif case == "buffer_int_name":
            m.register_buffer(3, None)
    assert_same_error(lambda: run(nn, sk), lambda: run(tnn, torch))


@pytest.mark.parametrize("case", ["missing", "unexpected", "shape", "not_tensor", "mixed"])
def test_load_state_dict_errors(case):
    ours, theirs = _twins("mlp")

    def sd(lib_sd, conv):
        d = {k: conv(v) for k, v in lib_sd.items()}
        if case in ("missing", "mixed"):
            d.pop("2.bias")
            d.pop("4.weight")
        if case in ("unexpected", "mixed"):
            d["9.weight"] = conv(torch.ones(1))
            d["0.extra"] = conv(torch.ones(1))
        if case in ("shape", "mixed"):
            d["0.weight"] = conv(torch.ones(3, 3))
        if case == "not_tensor":
            d["0.bias"] = [1.0]
        return d
    assert_same_error(lambda: ours.load_state_dict(sd(theirs.state_dict(), to_sk)),
                lambda: theirs.load_state_dict(sd(theirs.state_dict(), lambda v: v)))
    res = ours.load_state_dict(sd(theirs.state_dict(), to_sk), strict=False) \
        if case in ("missing", "unexpected") else None
    if res is not None:
        tres = theirs.load_state_dict(sd(theirs.state_dict(), lambda v: v), strict=False)
        assert (res.missing_keys, res.unexpected_keys) == \
               (tres.missing_keys, tres.unexpected_keys)


def test_load_state_dict_copies_in_place_and_assign():
    ours, theirs = _twins("mlp")
    w = ours[0].weight
    version = w._version
    res = ours.load_state_dict(ours.state_dict())
    assert repr(res) == "<All keys matched successfully>"
    assert ours[0].weight is w and w._version == version + 1
    new = {k: v.clone() for k, v in ours.state_dict().items()}
    ours.load_state_dict(new, assign=True)
    assert isinstance(ours[0].weight, nn.Parameter)
    assert ours[0].weight.untyped_storage() is new["0.weight"].untyped_storage()


def test_train_eval_apply_requires_grad_zero_grad():
    ours, theirs = _twins("block")
    for m in (ours, theirs):
        m.eval()
    assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()]
    assert not any(m.training for m in ours.modules())
    ours.train()
    assert all(m.training for m in ours.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        ours.train(1)
    seen = []
    ours.apply(lambda m: seen.append(type(m).__name__))
    tseen = []
    theirs.apply(lambda m: tseen.append(type(m).__name__))
    assert seen == tseen
    ours.requires_grad_(False)
    assert not any(p.requires_grad for p in ours.parameters())
    for p in ours.parameters():
        p.grad = sk.ones_like(p)
    ours.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in ours.parameters())
    ours.zero_grad()
    assert all(p.grad is None for p in ours.parameters())


def test_to_dtype_and_meta():
    ours, theirs = _twins("block", dtype=torch.float32)
    w = ours.layers[0].weight
    ours.to(sk.float64)
    theirs.to(torch.float64)
    assert ours.layers[0].weight is w          # same Parameter object, as PyTorch
    assert [(k, v.dtype.name) for k, v in ours.state_dict().items()] == \
           [(k, str(v.dtype).replace("torch.", "")) for k, v in theirs.state_dict().items()]
    ours.to("meta")
    theirs.to("meta")
    assert all(p.device.type == "meta" for p in ours.parameters())
    assert all(isinstance(p, nn.Parameter) for p in ours.parameters())
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    assert_same_error(lambda: ours.to(sk.int64), lambda: theirs.to(torch.int64))
    out = ours(sk.zeros(2, 5, dtype=sk.int64, device="meta"))
    assert [tuple(o.shape) for o in out] == [(2, 5, 2), (2, 5, 4)]


def test_meta_construction_allocates_nothing():
    m = nn.Linear(4096, 4096, device="meta")
    assert m.weight.device.type == "meta"
    assert sum(p.numel() for p in m.parameters()) == 4096 * 4097


def test_hooks():
    ours, theirs = _twins("mlp")
    logs = {"sk": [], "torch": []}

    def add(m, key):
        h1 = m.register_forward_pre_hook(lambda mod, args: logs[key].append("pre") or
                                         (args[0] * 2,))
        h2 = m.register_forward_hook(lambda mod, args, out: logs[key].append("post") or out + 1)
        h3 = m.register_forward_pre_hook(lambda mod, args: logs[key].append("first"),
                                         prepend=True)
        return h1, h2, h3
    hs, ht = add(ours, "sk"), add(theirs, "torch")
    x = torch.randn(2, 6, dtype=torch.float64)
    _close(ours(to_sk(x)), theirs(x))
    assert logs["sk"] == logs["torch"] == ["first", "pre", "post"]
    for h in hs + ht:
        h.remove()
    _close(ours(to_sk(x)), theirs(x))
    assert len(logs["sk"]) == 3


def test_containers():
    lin = [nn.Linear(2, 2) for _ in range(4)]
    seq = nn.Sequential(*lin)
    assert seq[1] is lin[1] and seq[-1] is lin[3]
    assert isinstance(seq[1:3], nn.Sequential) and list(seq[1:3]) == lin[1:3]
    with pytest.raises(IndexError, match="index 4 is out of range"):
        seq[4]
    del seq[0]
    assert list(seq._modules) == ["0", "1", "2"]
    ml = nn.ModuleList(lin[:2])
    ml.append(lin[2])
    ml.insert(0, lin[3])
    assert list(ml) == [lin[3], lin[0], lin[1], lin[2]]
    ml += [nn.ReLU()]
    assert len(ml) == 5
    md = nn.ModuleDict({"a": lin[0]})
    md["b"] = lin[1]
    assert list(md.keys()) == ["a", "b"] and "a" in md and md.pop("a") is lin[0]
    with pytest.raises(TypeError):
        nn.ModuleList(nn.Linear(1, 1))


def test_tied_weights_reported_once():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 3)
            self.head = nn.Linear(3, 5, bias=False)
            self.head.weight = self.emb.weight
    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["emb.weight"]
    assert list(m.state_dict()) == ["emb.weight", "head.weight"]


def _names_taken_and_walks(lib, zeros):
    """Which names ``register_parameter`` refuses (instance attributes, methods, properties
    that answer or raise AttributeError, existing buffers) and the ``named_modules`` orders of
    a tree holding one module twice and an empty ``ModuleList``, in ``lib``."""
    class M(lib.Module):
        @property
        def absent(self):
            raise AttributeError("absent")

        @property
        def present(self):
            return 1

        def __init__(self):
            super().__init__()
            self.x = 3
            self.register_buffer("b", zeros())

    m, out = M(), []
    for name in ("x", "absent", "present", "new", "training", "forward", "b"):
        try:
            m.register_parameter(name, lib.Parameter(zeros()))
            out.append((name, "registered"))
        except KeyError as e:
            out.append((name, str(e)))
    shared = lib.Linear(2, 2)
    seq = lib.Sequential(shared, lib.Sequential(shared, lib.ReLU()), lib.ModuleList())
    for kwargs in ({}, {"remove_duplicate": False}, {"prefix": "p"}):
        out.append([n for n, _ in seq.named_modules(**kwargs)])
    out.append((len(list(seq.modules())), len(list(seq.parameters()))))
    return out


def test_name_checks_and_module_walks_match_torch():
    assert _names_taken_and_walks(nn, lambda: sk.zeros(2)) == \
        _names_taken_and_walks(tnn, lambda: torch.zeros(2))


@pytest.mark.parametrize("name", ["linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu",
                                  "selu"])
def test_init_gain(name):
    assert nn.init.calculate_gain(name) == pytest.approx(tnn.init.calculate_gain(name))
    assert_same_error(lambda: nn.init.calculate_gain("nope"), lambda: tnn.init.calculate_gain("nope"))


@pytest.mark.parametrize("shape", [(3, 4), (8, 2, 3, 3), (5, 1, 7)])
@pytest.mark.parametrize("fn", ["xavier_uniform_", "kaiming_uniform_"])
def test_init_bounds_match_fans(shape, fn):
    """Uniform initializers reach (nearly) the same bound as PyTorch's on a large sample."""
    big = (shape[0] * 200,) + shape[1:]
    ours = getattr(nn.init, fn)(sk.empty(big, dtype=sk.float64))
    theirs = getattr(tnn.init, fn)(torch.empty(big, dtype=torch.float64))
    b_ours, b_theirs = float(ours.abs().max()), float(theirs.abs().max())
    assert abs(b_ours - b_theirs) / b_theirs < 0.02
    fan = nn.init._calculate_fan_in_and_fan_out(ours)
    assert fan == tnn.init._calculate_fan_in_and_fan_out(theirs)


def test_init_normal_family_and_errors():
    sk.manual_seed(0)
    t = nn.init.trunc_normal_(sk.empty(20000, dtype=sk.float64), mean=1.0, std=2.0, a=-1.0, b=2.0)
    assert float(t.min()) >= -1.0 and float(t.max()) <= 2.0
    k = nn.init.kaiming_normal_(sk.empty(400, 100, dtype=sk.float64), mode="fan_out",
                                nonlinearity="relu")
    assert float(k.std()) == pytest.approx(math.sqrt(2 / 400), rel=0.05)
    assert_same_error(lambda: nn.init.xavier_uniform_(sk.empty(3)),
                lambda: tnn.init.xavier_uniform_(torch.empty(3)))
    assert_same_error(lambda: nn.init.kaiming_uniform_(sk.empty(3, 3), mode="x"),
                lambda: tnn.init.kaiming_uniform_(torch.empty(3, 3), mode="x"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.init.kaiming_uniform_(sk.empty(0, 3))
    assert "no-op" in str(w[0].message)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(norm_type, max_norm):
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(3, 4, generator=gen, dtype=torch.float64),
             torch.randn(5, generator=gen, dtype=torch.float64)]
    tps = [tnn.Parameter(torch.zeros_like(g)) for g in grads]
    ps = [nn.Parameter(sk.zeros(*g.shape, dtype=sk.float64)) for g in grads]
    for tp, p, g in zip(tps, ps, grads):
        tp.grad, p.grad = g.clone(), to_sk(g.clone())
    total_t = tnn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    total = nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
    assert float(total) == pytest.approx(float(total_t), rel=1e-12)
    for tp, p in zip(tps, ps):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)
    nn.utils.clip_grad_value_(ps, 0.1)
    tnn.utils.clip_grad_value_(tps, 0.1)
    for tp, p in zip(tps, ps):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_nonfinite_error():
    p, tp = nn.Parameter(sk.ones(2)), tnn.Parameter(torch.ones(2))
    p.grad, tp.grad = sk.tensor([float("inf"), 1.0]), torch.tensor([float("inf"), 1.0])
    assert_same_error(lambda: nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True),
                lambda: tnn.utils.clip_grad_norm_([tp], 1.0, error_if_nonfinite=True))


# -- sk.save / sk.load ---------------------------------------------------------------------------
def test_save_load_round_trip(tmp_path):
    ours, _ = _twins("block", dtype=torch.float32)
    opt = sk.optim.AdamW(ours.parameters())
    for p in ours.parameters():
        p.grad = sk.ones_like(p)
    opt.step()
    obj = {"model": ours.state_dict(), "opt": opt.state_dict(), "epoch": 3, "note": None,
           "meta": sk.empty(2, 3, device="meta"), "ints": sk.arange(5), "nan": float("nan")}
    path = tmp_path / "ckpt.sk"
    sk.save(obj, path)
    back = sk.load(path)
    assert list(back["model"]) == list(obj["model"])
    assert type(back["model"]) is type(obj["model"])
    for k, v in obj["model"].items():
        assert back["model"][k].dtype == v.dtype and sk.equal(back["model"][k], v)
    assert back["opt"]["state"].keys() == obj["opt"]["state"].keys()
    assert back["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["meta"].device.type == "meta" and tuple(back["meta"].shape) == (2, 3)
    assert back["ints"].dtype == sk.int64 and math.isnan(back["nan"])
    fresh = _build(nn, "block")
    fresh.load_state_dict(back["model"])
    opt2 = sk.optim.AdamW(fresh.parameters())
    opt2.load_state_dict(back["opt"])
    assert float(opt2.state[fresh.layers[0].weight]["step"]) == 1.0
    meta = sk.load(path, map_location="meta")
    assert all(v.device.type == "meta" for v in meta["model"].values())


def test_load_never_executes_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    with pytest.raises(TypeError, match="cannot save"):
        sk.save({"x": Evil()}, tmp_path / "e")
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)       # a pickle-based file
    buf.seek(0)
    with pytest.raises(ValueError, match="not a subclass_kit save file"):
        sk.load(buf)
    with zipfile.ZipFile(tmp_path / "p.zip", "w") as z:
        z.writestr("data.pkl", b"\x80\x04K\x01.")
    with pytest.raises(ValueError):
        sk.load(tmp_path / "p.zip")
    with pytest.raises(NotImplementedError):
        sk.load(tmp_path / "p.zip", weights_only=False)


def test_manual_seed_reproduces_init_randn_and_dropout():
    def run():
        sk.manual_seed(123)
        model = _build(nn, "block")
        x = sk.randn(3, 8)
        drop = nn.Dropout(0.5)
        return model.state_dict(), x, drop(sk.ones(50))
    (sd1, x1, d1), (sd2, x2, d2) = run(), run()
    assert all(sk.equal(sd1[k], sd2[k]) for k in sd1)
    assert sk.equal(x1, x2) and sk.equal(d1, d2)
    drop = nn.Dropout(0.5).eval()
    assert sk.equal(drop(x1), x1)
    sk.manual_seed(124)
    assert not sk.equal(_build(nn, "block").layers[0].weight, sd1["layers.0.weight"])
