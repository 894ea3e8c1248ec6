"""The user-facing modes: LoggingMode, make_graph, explain, MetaMode/infer_shapes, OpUsageMode.

Each is checked for what it reports, for exception safety (an error inside leaves the mode
stacks as they were) and for nesting with other modes. The last section checks that a
pass-through wrapper subclass gives the values and metadata of plain tensors over many ops.
"""

from __future__ import annotations

import gc

import pytest

import subclass_kit as sk
from oracle import Wrapper
from subclass_kit.modes import LoggingMode, MetaMode, OpUsageMode, explain, infer_shapes, make_graph
from subclass_kit.modes.explain import OpCall
from subclass_kit.modes.op_usage import read_op_list


class Recorder(sk.DispatchMode):
    """Logs op names; declines the ops in ``decline`` (only those with subclass arguments
    when ``subclass_only``: the plain ops a subclass handler runs come back here)."""

    def __init__(self, log, decline=(), subclass_only=False):
        self.log, self.decline, self.subclass_only = log, decline, subclass_only

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append((func.__name__, args))
        if func in self.decline and (types or not self.subclass_only):
            return NotImplemented
        return func(*args, **(kwargs or {}))


def _clean_stacks():
    return sk.get_mode_stack() == [] and sk.get_function_mode_stack() == []


# -- LoggingMode ---------------------------------------------------------------------------------
def test_logging_mode_records_ops_shapes_and_prints():
    x = sk.arange(6.0).view(2, 3)
    with LoggingMode() as log:
        y = (x.t() + 1).reshape(6)
        sk.zeros(2, dtype=sk.int64)
    assert log.ops == ["sk.ops.t.default", "sk.ops.add.Tensor", "sk.ops.clone.default",
                       "sk.ops._unsafe_view.default", "sk.ops.zeros.default"]
    rec = log.log[1]
    assert rec.func is sk.ops.add.Tensor and rec.input_shapes == [(3, 2)]
    assert rec.output_shapes == [(3, 2)] and rec.error is None
    lines = str(log).splitlines()
    assert lines[0] == "sk.ops.t.default(f32[2, 3]) -> f32[3, 2]"
    assert lines[1] == "sk.ops.add.Tensor(f32[3, 2], 1) -> f32[3, 2]"
    assert lines[4].endswith("-> i64[2]")
    assert y.tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    assert repr(log) == "<LoggingMode: 5 ops>"


def test_logging_mode_multi_output_meta_and_stream(capsys):
    import sys
    with LoggingMode(stream=sys.stdout) as log:
        sk.arange(6.0).split(4)
        sk.empty(2, 3, device="meta") * 2
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "sk.ops.split.Tensor(f32[6], 4) -> [f32[4], f32[2]]"
    assert out[-1] == "sk.ops.mul.Tensor(f32[2, 3]@meta, 2) -> f32[2, 3]@meta"
    assert len(log) == 4
    log.print()
    assert capsys.readouterr().out.splitlines() == out


@pytest.mark.no_debug_asserts  # asserts the exact mode stack
def test_logging_mode_records_errors_and_restores_stack():
    x = sk.ones(2, 3)
    with LoggingMode() as log:
        with pytest.raises(RuntimeError, match="must match the size"):
            x + sk.ones(4)
        x.neg()
    assert _clean_stacks()
    assert log.log[1].error.startswith("RuntimeError: The size of tensor a (3)")
    assert log.log[1].outputs is None and "!! RuntimeError" in str(log.log[1])
    assert log.ops[-1] == "sk.ops.neg.default"


def test_logging_mode_nests_with_other_modes():
    inner_log = []
    x = sk.ones(2)
    with LoggingMode() as outer, Recorder(inner_log, decline={sk.ops.mul.Tensor}):
        x + 1
        x * 2
    # the inner mode sees each op first; a declined op goes on to the logging mode
    assert [name for name, _ in inner_log] == ["add.Tensor", "mul.Tensor"]
    assert outer.ops == ["sk.ops.add.Tensor", "sk.ops.mul.Tensor"]
    with Recorder(inner_log), LoggingMode() as inner:
        x - 1
    assert inner.ops == ["sk.ops.sub.Tensor"] and inner_log[-1][0] == "sub.Tensor"


def test_logging_mode_sees_wrapper_level_ops_only():
    w = Wrapper.wrap(sk.ones(2, 2))
    with LoggingMode() as log:
        w.t() + 1
    assert log.ops == ["sk.ops.t.default", "sk.ops.add.Tensor"]
    assert str(log.log[0].args[0]) == "Wrapper(f32[2, 2])"


# -- make_graph ----------------------------------------------------------------------------------
def _prog(x, w):
    h = (x @ w.t() + 1).relu()
    a, b = h.split(2, 1)
    return a.reshape(-1) * 2, b.sum()


def test_make_graph_prints_readable_code_and_replays():
    x, w = sk.arange(6.0).view(2, 3), sk.arange(12.0).view(4, 3) / 10
    g = make_graph(_prog)(x, w)
    code = g.code
    assert code.splitlines()[0] == "def forward(x, w):"
    assert '    t: "f32[3, 4]" = sk.ops.t.default(w)' in code
    assert '    mm: "f32[2, 4]" = sk.ops.mm.default(x, t)' in code
    assert "    add = " not in code and '    add: "f32[2, 4]" = sk.ops.add.Tensor(mm, 1)' in code
    assert "sk.ops.split.Tensor(relu, 2, 1)" in code and "split[0]" in code
    assert code.rstrip().splitlines()[-1].startswith("    return (")
    assert [n.kind for n in g.nodes][:2] == ["placeholder", "placeholder"]
    assert g.nodes[-1].kind == "output" and len(g.calls) == len(g.ops)
    x2, w2 = sk.ones(2, 3) * -1, sk.ones(4, 3)
    for got, want in ((g.run(x2, w2), _prog(x2, w2)), (g.compile()(x2, w2), _prog(x2, w2))):
        assert [t.tolist() for t in got] == [t.tolist() for t in want]
        assert [t.stride() for t in got] == [t.stride() for t in want]


def test_make_graph_captures_factories_constants_and_inplace():
    bias = sk.tensor([1.0, 2.0])

    def f(x):
        z = sk.zeros(2)
        y = x.clone()
        y.add_(z + bias)
        return y

    g = make_graph(f)(sk.ones(2))
    assert g.ops[0] is sk.ops.zeros.default          # the factory is a node
    assert 'zeros: "f32[2]" = sk.ops.zeros.default((2,))' in g.code
    assert list(g.constants) == ["_tensor_constant0"] and g.constants["_tensor_constant0"] is bias
    assert "# constant _tensor_constant0: f32[2]" in g.code
    assert "sk.ops.add_.Tensor(clone, add)" in g.code
    assert g.run(sk.full((2,), 5.0)).tolist() == [6.0, 7.0]


def test_make_graph_tensor_literals_and_item():
    g = make_graph(lambda x: x + sk.tensor([1.0, 2.0]))(sk.zeros(2))
    assert [repr(op) for op in g.ops] == ["sk.ops.lift_fresh_copy.default", "sk.ops.add.Tensor"]
    assert "sk.ops.lift_fresh_copy.default(_tensor_constant0)" in g.code
    assert g.run(sk.ones(2)).tolist() == [2.0, 3.0]
    g = make_graph(lambda x: x * x.sum().item())(sk.ones(2))
    assert sk.ops._local_scalar_dense.default in g.ops
    assert "sk.ops.mul.Tensor(x, 2.0)" in g.code       # the Python number is specialised
    assert g.run(sk.full((2,), 3.0)).tolist() == [6.0, 6.0]


def test_make_graph_of_a_small_model_replays():
    from subclass_kit import zoo
    sk.manual_seed(0)
    model = zoo.get_model("gpt2", device="cpu", n_layer=1, n_embd=16, n_head=2,
                          vocab_size=50, n_positions=8)
    ids = sk.randint(0, 50, (1, 6))
    g = make_graph(model)(ids)
    assert len(g.constants) >= 4 and all(n.kind != "call" or n.op is not None for n in g.nodes)
    ids2 = sk.randint(0, 50, (1, 6))
    assert g.run(ids2).tolist() == model(ids2).tolist()


def test_make_graph_replays_input_mutation_and_checks_structure():
    def f(x, ys, scale=3):
        x.mul_(scale)
        return {"sum": x + ys[0], "n": 1}

    g = make_graph(f)(sk.ones(2), [sk.ones(2)], scale=3)
    assert [n.name for n in g.placeholders] == ["x", "ys"]    # scale=3 is specialised
    a = sk.full((2,), 2.0)
    out = g.run(a, [sk.zeros(2)], scale=3)
    assert a.tolist() == [6.0, 6.0] and a._version == 1
    assert out == {"sum": out["sum"], "n": 1} and out["sum"].tolist() == [6.0, 6.0]
    with pytest.raises(TypeError, match="structure of the captured inputs"):
        g.run(a, sk.zeros(2))


@pytest.mark.no_debug_asserts  # asserts the exact mode stack
def test_make_graph_is_exception_safe_and_nests():
    def bad(x):
        x + 1
        raise ValueError("inside")

    with LoggingMode() as outer:
        with pytest.raises(ValueError, match="inside"):
            make_graph(bad)(sk.ones(2))
        assert sk.get_mode_stack() == [outer]
        g = make_graph(lambda x: x.t().contiguous())(sk.ones(2, 3))
    assert _clean_stacks()
    # the logging mode outside sees what the capture forwards
    assert outer.ops[-2:] == ["sk.ops.t.default", "sk.ops.clone.default"]
    assert [repr(op) for op in g.ops] == ["sk.ops.t.default", "sk.ops.clone.default"]


def test_make_graph_over_wrappers_and_meta_inputs():
    g = make_graph(lambda a: (a * 2).t())(Wrapper.wrap(sk.ones(2, 3)))
    assert [repr(op) for op in g.ops] == ["sk.ops.mul.Tensor", "sk.ops.t.default"]
    out = g.run(sk.empty(4, 5, device="meta"))
    assert out.device.type == "meta" and out.shape == (5, 4)


# -- explain -------------------------------------------------------------------------------------
@pytest.mark.no_debug_asserts  # asserts the exact dispatch path
def test_explain_names_handlers_declines_and_kernels():
    w = Wrapper.wrap(sk.ones(2))
    log = []

    def f(x):
        y = x + 1
        return w * y, x.reshape(2, 1)

    with Recorder(log, decline={sk.ops.mul.Tensor}, subclass_only=True) as rec:
        ex = explain(f)(sk.ones(2))
    calls = ex.calls
    assert [c.name for c in calls] == ["sk.ops.add.Tensor", "sk.ops.mul.Tensor",
                                       "sk.ops.view.default"]
    add, mul, _ = calls
    assert add.steps[0].kind == "mode" and add.steps[0].handler is rec
    assert add.kernel == "cpu" and add.path == ["mode Recorder", "kernel cpu"]
    assert [s.outcome for s in mul.steps] == ["declined", "handled"]
    assert mul.steps[1].kind == "subclass" and mul.steps[1].handler is Wrapper
    # the handler's inner mul (on plain tensors) goes through the mode stack again
    assert mul.path == ["mode Recorder (declined)", "subclass Wrapper", "mode Recorder",
                        "kernel cpu"]
    inner = mul.steps[1].calls[0]
    assert isinstance(inner, OpCall) and inner.depth == 1 and inner.kernel == "cpu"
    groups = [e.name for e in ex.entries]
    assert groups == ["Tensor.__add__", "Tensor.__mul__", "Tensor.reshape"]
    table = ex.table().splitlines()
    assert table[0].split() == ["#", "api", "op", "handled", "by", "kernel"]
    assert "mode Recorder (declined) -> subclass Wrapper -> mode Recorder -> kernel cpu" \
        in table[2]
    tree = str(ex)
    assert "Tensor.__mul__(...)\n  sk.ops.mul.Tensor\n    mode Recorder: declined\n" in tree
    assert ex.result[1].shape == (2, 1) and _clean_stacks()


def test_explain_meta_kernels_and_no_grouping():
    ex = explain(lambda x: sk.ops.mul.Tensor(x, 2), group_by_api=False)(
        sk.empty(3, device="meta"))
    assert [(c.name, c.kernel) for c in ex.calls] == [("sk.ops.mul.Tensor", "meta")]
    assert ex.entries == ex.calls


@pytest.mark.no_debug_asserts  # asserts the exact mode stack
def test_explain_attaches_partial_result_to_errors():
    def f(x):
        x.t()
        return x + sk.ones(5)

    with pytest.raises(RuntimeError) as info:
        explain(f)(sk.ones(2, 3))
    ex = info.value.explanation
    assert [c.name for c in ex.calls] == ["sk.ops.t.default", "sk.ops.ones.default",
                                          "sk.ops.add.Tensor"]
    assert _clean_stacks()
    # tracing is off again: ops take the fast path with no callback
    seen = []
    with sk.dispatch_trace(seen.append):
        pass
    sk.ones(2) + 1
    assert seen == []


# -- MetaMode ------------------------------------------------------------------------------------
def test_meta_mode_factories_and_real_inputs_become_meta():
    x = sk.arange(24.0).view(2, 3, 4).permute(2, 0, 1)[1:]
    with MetaMode() as mode:
        z = sk.zeros(2, 3)
        y = x * 2
        m = sk.ones(2, device="meta")
        c = y.to("cpu")
    for t in (z, y, c):
        assert t.device.type == "meta" and t.fake_device == sk.device("cpu")
        assert MetaMode.device_of(t).type == "cpu"
    assert "fake_device" not in m.__dict__ and MetaMode.device_of(m).type == "meta"
    twin = mode.to_meta(x)
    assert (twin.shape, twin.stride(), twin.storage_offset(), twin.dtype) == \
        (x.shape, x.stride(), x.storage_offset(), x.dtype)
    assert y.shape == x.shape and y.stride() == (x * 2).stride()
    assert x._version == 0 and x.device.type == "cpu"


def test_meta_mode_twins_are_cached_and_keep_aliasing():
    base = sk.arange(12.0)
    a, b = base.view(3, 4), base[2:]
    mode = MetaMode()
    ta, tb = mode.to_meta(a), mode.to_meta(b)
    assert mode.to_meta(a) is ta
    assert ta._base is mode.to_meta(base) and tb._base is mode.to_meta(base)
    assert ta.untyped_storage() is tb.untyped_storage()
    assert tb.storage_offset() == 2 and ta.untyped_storage().nbytes() == 48
    d = base.data               # another tensor over the same storage, not a view
    assert mode.to_meta(d).untyped_storage() is ta.untyped_storage()
    before = ta._version
    with mode:
        out = a.add_(1)
    # the twin was written (its version moved by one), the real data was not
    assert ta._version == before + 1
    assert out is ta and base.tolist()[0] == 0.0 and a._version == base._version == 0
    n = len(mode._tensors)
    del a, out
    gc.collect()
    assert len(mode._tensors) == n - 1


@pytest.mark.no_debug_asserts  # asserts the exact mode stack
def test_meta_mode_errors_are_the_cpu_errors():
    x = sk.ones(2, 3)
    with MetaMode():
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match"):
            x + sk.ones(4)
        with pytest.raises(RuntimeError, match="cannot be called on meta tensors"):
            x.sum().item()
    assert _clean_stacks()


def test_meta_mode_nests_with_logging_both_ways():
    x = sk.ones(2, 3)
    with LoggingMode() as outside, MetaMode(), LoggingMode() as inside:
        x.t() + 1
    assert str(inside.log[0]) == "sk.ops.t.default(f32[2, 3]) -> f32[3, 2]@meta"
    assert str(outside.log[0]) == "sk.ops.t.default(f32[2, 3]@meta) -> f32[3, 2]@meta"
    assert len(outside) == 2     # conversions of real inputs are not seen


@pytest.mark.no_debug_asserts  # a mode below MetaMode takes its declines
def test_meta_mode_with_wrapper_subclass_inputs():
    w = Wrapper.wrap(sk.ones(2, 3))
    with MetaMode():
        out = (w * 2).t()
    assert isinstance(out, Wrapper) and out.elem.device.type == "meta"
    assert out.shape == (3, 2) and out.elem.fake_device.type == "cpu"


def test_meta_mode_runs_a_cpu_model_without_data():
    from subclass_kit import zoo
    model = zoo.get_model("gpt2", device="cpu", n_layer=1, n_embd=32, n_head=2,
                          vocab_size=100, n_positions=16)
    ids = sk.randint(0, 100, (2, 8))
    real = model(ids)
    with MetaMode() as mode:
        fake = model(ids)
    assert fake.device.type == "meta" and fake.fake_device.type == "cpu"
    assert (fake.shape, fake.stride(), fake.dtype) == (real.shape, real.stride(), real.dtype)
    assert mode.op_count > 20


def test_infer_shapes_specs_and_report():
    w = sk.ones(4, 3)

    def f(x, y):
        return {"h": (x @ w.t()).softmax(-1), "n": y.sum(0)}

    rep = infer_shapes(f, ((2, 3), sk.float32), sk.empty(5, 2, dtype=sk.int64, device="meta"))
    assert rep.outputs["h"].shape == (2, 4) and rep.outputs["h"].dtype == sk.float32
    assert rep.outputs["n"].shape == (2,) and rep.outputs["n"].dtype == sk.int64
    assert rep.output_shapes == [(2, 4), (2,)]
    assert [m.shape for m in rep.inputs] == [(2, 3), (5, 2)]
    assert rep.parameters == 6 + 10 and rep.parameter_bytes == 24 + 80
    assert "outputs:     float32[2, 4], int64[2]" in str(rep)
    rep2 = infer_shapes(lambda x: x * 2, (3, 4))
    assert rep2.outputs.shape == (3, 4) and rep2.inputs[0].device == "meta"
    with pytest.raises(TypeError, match="a spec must be"):
        infer_shapes(lambda x: x, "bad")


def test_infer_shapes_counts_module_parameters_once():
    from subclass_kit import zoo
    model = zoo.get_model("gpt2", n_layer=1, n_embd=32, n_head=2, vocab_size=100,
                          n_positions=16)
    rep = infer_shapes(model, ((1, 8), sk.int64))
    assert rep.outputs.shape == (1, 8, 100)
    assert rep.parameters == model.num_parameters()      # the token ids are not parameters


# -- OpUsageMode ---------------------------------------------------------------------------------
def test_op_usage_counts_ops_and_dtypes(tmp_path):
    x = sk.ones(2, 3)
    with OpUsageMode() as usage:
        x + 1
        x + 2
        sk.arange(3) + 1
        x.to(sk.float64)
        sk.empty(2, device="meta") * 3
    add = usage.ops["sk.ops.add.Tensor"]
    assert add.count == 3 and add.dtypes == {"float32", "int64"} and add.devices == {"cpu"}
    assert usage.ops["sk.ops._to_copy.default"].dtypes == {"float32", "float64"}
    assert usage.ops["sk.ops.mul.Tensor"].devices == {"meta"}
    text = usage.to_yaml()
    assert "sk.ops.add.Tensor:\n  count: 3\n  dtypes: [float32, int64]\n  devices: [cpu]\n" \
        in text
    names = [line[:-1] for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    assert names == sorted(names)
    path = tmp_path / "ops.yaml"
    usage.write(path)
    back = read_op_list(path)
    assert back == read_op_list(text) and back["sk.ops.add.Tensor"].count == 3
    assert back["sk.ops.add.Tensor"].dtypes == {"float32", "int64"}
    assert usage.unlisted(back) == []
    assert usage.unlisted({"sk.ops.add.Tensor": None}) == [
        "sk.ops._to_copy.default", "sk.ops.arange.default", "sk.ops.empty.memory_format",
        "sk.ops.mul.Tensor"]
    with pytest.raises(ValueError, match="line 2"):
        read_op_list("sk.ops.add.Tensor:\n  colour: red\n")


@pytest.mark.no_debug_asserts  # asserts the exact mode stack
def test_op_usage_skips_failed_ops_and_nests():
    x = sk.ones(2, 3)
    with LoggingMode() as log, OpUsageMode() as usage, pytest.raises(RuntimeError):
        x + sk.ones(4)
    assert list(usage.ops) == ["sk.ops.ones.default"]
    assert log.ops == ["sk.ops.ones.default", "sk.ops.add.Tensor"] and _clean_stacks()


# -- wrapper subclasses match plain tensors ------------------------------------------------------
_OPS = [
    lambda t: t + 1, lambda t: t * t, lambda t: t.t(), lambda t: t.transpose(0, 1)[1:],
    lambda t: t.reshape(-1), lambda t: t.t().reshape(-1),
    lambda t: t.unsqueeze(0).expand(2, 3, 4), lambda t: t.permute(1, 0).contiguous(),
    lambda t: t.clone(), lambda t: t[1], lambda t: t[:, ::2],
    lambda t: t.split(2, 1)[1], lambda t: t.chunk(2)[0], lambda t: t.unbind(1)[2],
    lambda t: t.diagonal(), lambda t: t.narrow(1, 1, 2), lambda t: t.to(sk.float64),
    lambda t: t.exp().neg(), lambda t: t.sum(1), lambda t: t.amax(0, keepdim=True),
    lambda t: t @ t.t(), lambda t: t.softmax(-1), lambda t: sk.where(t > 4, t, 0.0),
    lambda t: t.flatten(), lambda t: t.view(4, 3), lambda t: t.detach(),
]


@pytest.mark.parametrize("i", range(len(_OPS)))
def test_wrapper_matches_plain_tensor(i):
    op = _OPS[i]
    plain = sk.arange(12.0).view(3, 4)
    want = op(plain)
    got = op(Wrapper.wrap(sk.arange(12.0).view(3, 4)))
    assert isinstance(got, Wrapper)
    assert got.shape == want.shape and got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset() and got.dtype == want.dtype
    assert got.elem.tolist() == want.tolist()
    assert got._is_view() == want._is_view()


def test_wrapper_inplace_matches_plain_tensor():
    plain, w = sk.zeros(3, 4), Wrapper.wrap(sk.zeros(3, 4))
    for t in (plain, w):
        row = t[1]
        row.add_(2)
        t.mul_(3)
        t.t_()
    assert w.elem.tolist() == plain.tolist() and w.stride() == plain.stride()
    assert w._version == plain._version == 3
