"""Custom ops (``sk.library``) against ``torch.library`` in PyTorch 2.13: how they take part
in views, versions, inference mode, errors and the modes.

Each op is defined from the same schema text on both sides (``sk.library.define`` and a torch
``Library`` fragment) with the same Python kernel, written for either library; a program then
runs on ``sk`` and on ``torch`` and the observable facts are compared: values, view structure
(``_base``, storage sharing, offsets), versions, what modes see, and exceptions (class and
text). Where we differ on purpose the test says so and ``docs/differences.md`` explains it.
Calls themselves (argument and return types, registration, schema strings):
``test_custom_ops_calls_oracle.py``.
"""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
import custom_ops_support as support
from custom_ops_support import NS, SkRecorder, fresh_name, neutral
from oracle import SkFunctionLog, Wrapper, torch_function_log

import subclass_kit as sk


@pytest.fixture(scope="module")
def torch_lib():
    yield from support.torch_library()


@pytest.fixture
def define(torch_lib):
    return support.definer(torch_lib)


def _same_storage(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# -- views: each annotated return is a view of its own input ---------------------------------
VIEW_CASES = {
    # schema, kernel, number of inputs
    "one_view": ("(Tensor(a) x) -> Tensor(a)", lambda x: x[1:], 1),
    "two_inputs_two_views": ("(Tensor(a) x, Tensor(b) y) -> (Tensor(a), Tensor(b))",
                             lambda x, y: (x[1:], y[2:]), 2),
    "swapped_sets": ("(Tensor(a) x, Tensor(b) y) -> (Tensor(b), Tensor(a))",
                     lambda x, y: (y[1:], x[2:]), 2),
    "view_and_fresh": ("(Tensor(a) x) -> (Tensor(a), Tensor)", lambda x: (x[1:], x * 2), 1),
    "fresh_and_view": ("(Tensor x, Tensor(b) y) -> (Tensor, Tensor(b))",
                       lambda x, y: (x + y[0], y[1:]), 2),
    "two_views_of_one": ("(Tensor(a) x) -> (Tensor(a), Tensor(a))",
                         lambda x: (x[:2], x[2:]), 1),
    "list_of_views": ("(Tensor(a -> *) x) -> Tensor(a)[]", lambda x: [x[:1], x[1:3]], 1),
}


def _view_facts(L, op, n_inputs):
    inputs = [L.arange(4.0 + i) for i in range(n_inputs)]
    res = op(*inputs)
    outs = list(res) if isinstance(res, (list, tuple)) else [res]
    facts = []
    for o in outs:
        base = next((i for i, x in enumerate(inputs) if o._base is x), None)
        shares = [i for i, x in enumerate(inputs) if _same_storage(o, x)]
        facts.append((base, o._is_view(), shares, o.storage_offset(), o.tolist()))
    inputs[-1].add_(1)      # versions: a view shares its own input's counter, a fresh output not
    facts.append([o._version for o in outs])
    return facts


@pytest.mark.parametrize("case", list(VIEW_CASES))
def test_view_outputs_track_their_own_input(define, case):
    schema, kernel, n = VIEW_CASES[case]
    ours, theirs = define(schema, kernel)
    assert _view_facts(sk, ours, n) == _view_facts(torch, theirs, n)


@pytest.mark.parametrize("case", list(VIEW_CASES))
def test_view_outputs_of_wrapper_subclasses(define, case):
    """Resolved by a wrapper's ``__tensor_dispatch__``, each annotated return is a view of its
    own input, other returns stay fresh (PyTorch tracks nothing here for ops made with
    ``torch.library.define``: docs/differences.md)."""
    schema, kernel, n = VIEW_CASES[case]
    ours, _ = define(schema, kernel)
    inputs = [Wrapper.wrap(sk.arange(4.0 + i)) for i in range(n)]
    res = ours(*inputs)
    outs = list(res) if isinstance(res, (list, tuple)) else [res]
    views = {ri: ai for ai, ri in ours.schema.view_pairs}
    for ri, o in enumerate(outs):
        ri = 0 if ours.schema.returns[0].is_tensor_list else ri
        expected = inputs[views[ri]] if ri in views else None
        assert o._base is expected
        assert (o._vc is expected._vc) if expected is not None else \
            all(o._vc is not x._vc for x in inputs)


# -- the function level: a custom op is its own public API -------------------------------------
def _record_call(func, args):
    """A custom op's call as ``("op", its arguments after the first)``, other calls by name."""
    custom = isinstance(func, sk.OpOverload) or "skcustomoracle" in str(func)
    return ("op" if custom else str(func), [neutral(a) for a in args[1:]])


class _TorchSub(torch.Tensor):
    pass


class _SkSub(sk.Tensor):
    pass


def test_function_mode_sees_the_call_not_the_kernel(define):
    """The mode sees the custom op once, with the arguments as written (``2``, not ``2.0``);
    the ops its kernel runs happen below the mode."""
    ours, theirs = define("(Tensor x, float k) -> Tensor", lambda x, k: (x * k).sin())
    logs = {}
    for L, op, log in ((sk, ours, SkFunctionLog(_record_call)),
                       (torch, theirs, torch_function_log(_record_call))):
        x = L.ones(2)
        with log:
            op(x, 2)
        logs[L] = log.calls
    assert logs[sk] == logs[torch] == [("op", [("int", 2)])]


@pytest.mark.parametrize("schema,kernel", [
    ("(Tensor x, float k) -> Tensor", lambda x, k: x * k),
    ("(Tensor x, float k) -> (Tensor, Tensor)", lambda x, k: (x * k, x + k)),
    ("(Tensor(a!) x, float k) -> Tensor(a!)", lambda x, k: x.mul_(k)),
    ("(Tensor(a) x, float k) -> Tensor(a)", lambda x, k: x[1:]),
], ids=["out_of_place", "two_outputs", "inplace", "view"])
def test_direct_subclass_results_keep_the_class(define, schema, kernel):
    """A subclass with the default ``__tensor_function__`` gets its class back from a custom
    op (PyTorch's default ``__torch_function__``), values as computed by the kernel."""
    ours, theirs = define(schema, kernel)
    results = {}
    for L, op, make in ((sk, ours, lambda: sk.make_subclass(_SkSub, sk.arange(3.0))),
                        (torch, theirs, lambda: torch.arange(3.0).as_subclass(_TorchSub))):
        x = make()
        res = op(x, 2)
        outs = res if isinstance(res, tuple) else (res,)
        results[L] = ([type(o).__name__.lstrip("_").replace("Sk", "").replace("Torch", "")
                       for o in outs], [o.tolist() for o in outs], x._version, res is x)
    assert results[sk] == results[torch]


def test_subclass_tensor_function_sees_custom_ops(define):
    seen = []

    class Seen(sk.Tensor):
        @classmethod
        def __tensor_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__tensor_function__(func, types, args, kwargs)

    ours, _ = define("(Tensor x) -> Tensor", lambda x: x + 1)
    out = ours(sk.make_subclass(Seen, sk.zeros(2)))
    assert seen[0] is ours and type(out) is Seen and out.tolist() == [1.0, 1.0]


# -- versions: one bump per (a!) argument (docs/differences.md) --------------------------------
def _numpy_write(x):
    x.numpy()[:] += 1


def _two_add(x):
    x.add_(1)
    x.add_(1)


@pytest.mark.parametrize("kernel,torch_define,torch_custom_op", [
    (_numpy_write, 0, 1), (_two_add, 2, 3)])
def test_mutable_arguments_bump_once(define, kernel, torch_define, torch_custom_op):
    """PyTorch's two custom-op APIs count kernel internals (table in docs/differences.md); we
    bump each mutated argument once, as ``custom_op`` does for a kernel writing through numpy."""
    ours, theirs = define("(Tensor(a!) x) -> ()", kernel)
    name = "c" + fresh_name()

    def custom(x: torch.Tensor) -> None:
        kernel(x)
    custom = torch.library.custom_op(f"{NS}::{name}", mutates_args=("x",))(custom)
    versions = []
    for op, L in ((theirs, torch), (custom, torch), (ours, sk)):
        x = L.zeros(2)
        assert op(x) is None
        versions.append((x._version, x.tolist()))
    expected_values = versions[2][1]
    assert versions == [(torch_define, expected_values), (torch_custom_op, expected_values),
                        (1, expected_values)]


def test_same_tensor_for_two_mutable_arguments_bumps_twice(define):
    """One bump per mutated argument: the same tensor passed twice moves by two, as PyTorch's
    per-argument increment does for built-in ops."""
    ours, _ = define("(Tensor(a!) x, Tensor(b!) y) -> ()", lambda x, y: None)
    x = sk.zeros(2)
    ours(x, x)
    assert x._version == 2
    lst, _ = define("(Tensor(a!)[] xs) -> ()", lambda xs: None)
    x, y = sk.zeros(1), sk.zeros(1)
    lst([x, y, x])
    assert (x._version, y._version) == (2, 1)


# -- errors leave no trace -----------------------------------------------------------------------
def _raising(x, y):
    x.add_(1)                   # a write below the version layer, then a failure
    raise ValueError("kernel failed")


@pytest.mark.parametrize("context", ["none", "no_grad", "inference_mode", "logging", "debug",
                                     "meta_mode"])
@pytest.mark.parametrize("wrap", [False, True])
def test_raising_kernel_leaves_versions_and_modes(define, context, wrap):
    from subclass_kit.modes import DebugAssertMode, LoggingMode, MetaMode
    contexts = {"none": contextlib.nullcontext, "no_grad": sk.no_grad,
                "inference_mode": sk.inference_mode, "logging": LoggingMode,
                "debug": DebugAssertMode, "meta_mode": MetaMode}
    ours, _ = define("(Tensor(a!) x, Tensor(b!) y) -> ()", _raising, meta=_raising)
    x, y = sk.zeros(2), sk.zeros(2)
    args = (Wrapper.wrap(x), y) if wrap else (x, y)
    modes, grad = sk.get_mode_stack(), sk.is_grad_enabled()
    with pytest.raises(ValueError, match="kernel failed"), contexts[context]():
        ours(*args)
    assert [a._version for a in args] == [0, 0] and x._version == 0
    assert sk.get_mode_stack() == modes and sk.is_grad_enabled() == grad
    assert not sk.is_below_autograd() and not sk.is_inference_mode_enabled()


def test_bad_argument_raises_before_any_mode(define):
    ours, _ = define("(Tensor(a!) x, int k) -> ()", lambda x, k: None)
    log = []
    x = sk.zeros(2)
    with SkRecorder(log), pytest.raises(RuntimeError, match="Expected a value of type 'int'"):
        ours(x, 1.5)
    assert log == [] and x._version == 0


# -- the user modes ------------------------------------------------------------------------------
SCHEMA_BUGS = {
    # schema, kernel, the rule DebugAssertMode reports (None: a correct kernel)
    "correct_functional": ("(Tensor x) -> Tensor", lambda x: x * 2, None),
    "correct_inplace": ("(Tensor(a!) x) -> Tensor(a!)", lambda x: x.mul_(2), None),
    "correct_view": ("(Tensor(a) x) -> Tensor(a)", lambda x: x[1:], None),
    "correct_two_views": ("(Tensor(a) x, Tensor(b) y) -> (Tensor(a), Tensor(b))",
                          lambda x, y: (x[1:], y[1:]), None),
    "correct_out": ("(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
                    lambda x, out: out.copy_(x), None),
    "unannotated_alias": ("(Tensor x) -> Tensor", lambda x: x.view(-1), "output_aliases_input"),
    "returns_input": ("(Tensor x) -> Tensor", lambda x: x, "output_not_fresh"),
    "undeclared_mutation": ("(Tensor x) -> Tensor", lambda x: x.add_(1).clone(),
                            "unexpected_mutation"),
    "view_not_aliased": ("(Tensor(a) x) -> Tensor(a)", lambda x: x.clone(), "view_not_aliased"),
    "inplace_returns_copy": ("(Tensor(a!) x) -> Tensor(a!)", lambda x: x.clone(),
                             "inplace_not_self"),
}


@pytest.mark.parametrize("case", list(SCHEMA_BUGS))
@pytest.mark.no_debug_asserts
def test_debug_assert_mode_checks_custom_kernels(define, case):
    from subclass_kit.modes import DebugAssertMode
    schema, kernel, rule = SCHEMA_BUGS[case]
    ours, _ = define(schema, kernel)
    args = [sk.arange(4.0), sk.arange(3.0)][:len(ours.schema.positional)]
    kwargs = {"out": sk.zeros(4)} if ours.schema.kwarg_only else {}
    mode = DebugAssertMode(raise_on_violation=False, check_data=True)
    with mode:
        ours(*args, **kwargs)
    assert [v.rule for v in mode.violations] == ([rule] if rule else [])


def test_graph_capture_and_replay_of_custom_ops(define):
    from subclass_kit.modes import make_graph
    scale, _ = define("(Tensor x, float k) -> Tensor", lambda x, k: x * k)
    view, _ = define("(Tensor(a) x) -> Tensor(a)", lambda x: x[1:])
    inc, _ = define("(Tensor(a!) x) -> Tensor(a!)", lambda x: x.add_(1))

    def program(x):
        y = scale(x, 3)
        inc(view(y))
        return y
    graph = make_graph(program)(sk.arange(4.0))
    assert f"{scale!r}(x, 3.0)" in graph.code       # arguments as converted for the kernel
    x = sk.arange(4.0) * 2
    assert graph.run(x).tolist() == graph.compile()(x).tolist() == program(x).tolist()


def test_meta_mode_runs_fake_kernels(define):
    from subclass_kit.modes import MetaMode
    ours, _ = define("(Tensor x, int[2] s) -> Tensor", lambda x, s: x.reshape(s).clone(),
                     meta=lambda x, s: sk.empty(s, dtype=x.dtype, device=x.device))
    nometa, _ = define("(Tensor x) -> Tensor", lambda x: x + 1)
    with MetaMode():
        out = ours(sk.arange(4.0), 2)
        with pytest.raises(NotImplementedError, match="no fake impl or Meta kernel"):
            nometa(sk.ones(2))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 2)
    assert MetaMode.device_of(out) == "cpu"


# -- inference mode and no_grad ------------------------------------------------------------------
def _inplace(x):
    return x.add_(1)


def _in_mode(mode, make, op):
    """``op`` run inside ``mode`` (a context factory) on ``make()``, made outside it."""
    x = make()
    with mode():
        r = op(x)
    return x, r


INFERENCE_PROGRAMS = {
    # name: (schema, kernel, program(L, op) -> facts)
    "functional_in_mode": ("(Tensor x) -> Tensor", lambda x: x * 2, lambda L, op: (
        lambda x, r: (r.is_inference(), x.is_inference(), r.tolist()))(
        *_in_mode(L.inference_mode, lambda: L.ones(2), op))),
    "inplace_in_mode": ("(Tensor(a!) x) -> Tensor(a!)", _inplace, lambda L, op: (
        lambda x, r: (r is x, x._version, x.is_inference(), x.tolist()))(
        *_in_mode(L.inference_mode, lambda: L.ones(2), op))),
    "view_in_mode": ("(Tensor(a) x) -> Tensor(a)", lambda x: x[1:], lambda L, op: (
        lambda x, r: (r._is_view(), r._base is x, r.is_inference()))(
        *_in_mode(L.inference_mode, lambda: L.ones(3), op))),
    "inplace_under_no_grad": ("(Tensor(a!) x) -> Tensor(a!)", _inplace, lambda L, op: (
        lambda x, r: (r is x, x._version, x.tolist()))(
        *_in_mode(L.no_grad, lambda: L.ones(2), op))),
    "functional_of_inference_tensor": ("(Tensor x) -> Tensor", lambda x: x * 2, lambda L, op: (
        lambda x: op(x).is_inference())(_made_in_inference(L))),
    "view_of_inference_tensor": ("(Tensor(a) x) -> Tensor(a)", lambda x: x[1:], lambda L, op: (
        lambda r: (r.is_inference(), r._base is None, r._is_view()))(
        op(_made_in_inference(L, 3)))),
    "inplace_on_inference_tensor": ("(Tensor(a!) x) -> Tensor(a!)", _inplace, lambda L, op: (
        _raises_for(L, op, _made_in_inference(L)))),
}


def _made_in_inference(L, n=2):
    with L.inference_mode():
        return L.ones(n)


def _raises_for(L, op, x):
    with pytest.raises(RuntimeError) as info:
        op(x)
    # torch writes, then raises from the version bump; we raise before the kernel writes
    # (docs/differences.md, "Errors leave no trace")
    assert x.tolist() == ([1.0, 1.0] if L is sk else [2.0, 2.0])
    return str(info.value)


@pytest.mark.parametrize("case", list(INFERENCE_PROGRAMS))
def test_inference_mode_and_no_grad_like_torch(define, case):
    schema, kernel, program = INFERENCE_PROGRAMS[case]
    ours, theirs = define(schema, kernel)
    assert program(sk, ours) == program(torch, theirs)
