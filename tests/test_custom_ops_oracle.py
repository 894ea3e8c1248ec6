"""Custom ops (``sk.library``) against ``torch.library`` in PyTorch 2.13.

Each op is defined from the same schema text on both sides (``sk.library.define`` and a torch
``Library`` fragment) with the same Python kernel, written for either library; a program then
runs on ``sk`` and on ``torch`` and the observable facts are compared: values, view structure
(``_base``, storage sharing, offsets), versions, what modes see, and exceptions (class and
text). Where we differ on purpose the test says so and ``docs/differences.md`` explains it.
"""

from __future__ import annotations

import contextlib
import itertools
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from oracle import Wrapper, dtype_name
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import subclass_kit as sk

NS = "skcustomoracle"
_names = itertools.count()


@pytest.fixture(scope="module")
def torch_lib():
    lib = torch.library.Library(NS, "FRAGMENT")
    yield lib
    lib._destroy()


@pytest.fixture
def define(torch_lib):
    """``define(schema, cpu, meta=None) -> (sk op, torch op)``: one op, under a fresh name, on
    both sides (``schema`` without the name: ``"(Tensor x) -> Tensor"``)."""
    def define_both(schema, cpu, meta=None):
        name = f"op{next(_names)}"
        ours = sk.library.define(f"{NS}::{name}{schema}")
        sk.library.impl(ours, "cpu")(cpu)
        torch_lib.define(name + schema)
        torch_lib.impl(name, cpu, "CPU")
        if meta is not None:
            sk.library.register_fake(ours)(meta)
            torch_lib.impl(name, meta, "Meta")
        return ours, getattr(getattr(torch.ops, NS), name).default
    return define_both


def _run(L, program):
    """``program(L)`` in library ``L``, or ``(exception class name, message)``."""
    try:
        return program(L)
    except Exception as e:  # noqa: BLE001 (the exception is the result compared)
        return type(e).__name__, str(e)


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


# -- arguments: converted to their schema type, or rejected, before any mode sees them --------
ARG_TYPES = ["int", "SymInt", "float", "bool", "str", "Scalar", "int[]", "int[2]", "SymInt[]",
             "float?", "int?", "Tensor", "Tensor?", "Tensor[]", "Tensor?[]", "ScalarType",
             "ScalarType?", "float[]", "bool[]", "Device", "int[]?", "Scalar?", "str?"]

# name -> value built in library L
ARG_VALUES = {
    "int": lambda L: 3, "float": lambda L: 2.5, "whole_float": lambda L: 2.0,
    "bool": lambda L: True, "str": lambda L: "s", "list_int": lambda L: [1, 2],
    "tuple_int": lambda L: (1, 2), "size": lambda L: L.ones(1, 2).shape,
    "list_float": lambda L: [1.5, 2.0], "list_bool": lambda L: [True, False],
    "list_mixed": lambda L: [1, 2.5], "none": lambda L: None, "complex": lambda L: 1 + 2j,
    "tensor": lambda L: L.ones(2), "tensor_0d_int": lambda L: L.tensor(3),
    "tensor_1_int": lambda L: L.tensor([4]), "tensor_0d_float": lambda L: L.tensor(3.5),
    "list_tensor": lambda L: [L.ones(2), L.zeros(1)], "list_tensor_none": lambda L: [None, L.ones(2)],
    "dtype": lambda L: L.float64, "np_int": lambda L: np.int64(3), "np_float": lambda L: np.float32(3.5),
    "np_float64": lambda L: np.float64(1.5), "device": lambda L: L.device("cpu"),
    "device_str": lambda L: "cpu", "device_meta_str": lambda L: "meta",
    "bad_device_str": lambda L: "gpu",
}

# Where PyTorch reinterprets a value instead of rejecting it, we reject it with the type error
# (docs/differences.md, "Custom ops: argument types"). (schema type, value) pairs.
REJECTED_ON_PURPOSE = {
    ("int", "tensor_0d_float"), ("SymInt", "tensor_0d_float"), ("int?", "tensor_0d_float"),
    ("int", "np_float"), ("SymInt", "np_float"), ("int?", "np_float"),
    ("int", "dtype"), ("int?", "dtype"), ("Scalar", "dtype"),
    ("Scalar?", "dtype"), ("bool", "none"), ("Tensor?[]", "tensor"), ("Tensor?[]", "tensor_1_int"),
    ("SymInt[]", "tensor_1_int"),
} | {(t, v) for t in ("ScalarType", "ScalarType?")
     for v in ("int", "bool", "tensor_0d_int", "tensor_1_int", "tensor_0d_float", "np_int",
               "np_float")}


def _seen(value):
    """A library-neutral form of what a kernel received."""
    if isinstance(value, (sk.Tensor, torch.Tensor)):
        return ("tensor", value.tolist())
    if isinstance(value, (sk.dtype, torch.dtype)):
        return ("dtype", dtype_name(value))
    if isinstance(value, (sk.device, torch.device)):
        return ("device", value.type)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_seen(v) for v in value])
    return (type(value).__name__, value)


def _first_lines(message: str) -> str:
    """torch's text without the pybind11 details it appends."""
    return message.split("\nCast error details")[0].split("\n Python error details")[0]


@pytest.fixture(scope="module")
def typed_ops(torch_lib):
    """Per schema type ``T``: ``(sk op, torch op, seen)`` for ``(Tensor x, T k) -> Tensor``
    whose kernel records the ``k`` it receives in ``seen[library name]``."""
    ops = {}
    for i, typ in enumerate(ARG_TYPES):
        seen = {}

        def kernel(x, k, seen=seen):
            seen["torch" if isinstance(x, torch.Tensor) else "sk"] = _seen(k)
            return x.clone()
        name, schema = f"typed{i}", f"(Tensor x, {typ} k) -> Tensor"
        ours = sk.library.define(f"{NS}::{name}{schema}")
        sk.library.impl(ours, "cpu")(kernel)
        torch_lib.define(name + schema)
        torch_lib.impl(name, kernel, "CPU")
        ops[typ] = (ours, getattr(getattr(torch.ops, NS), name).default, seen)
    return ops


@pytest.mark.parametrize("typ", ARG_TYPES)
def test_argument_conversion_matches_torch(typed_ops, typ):
    """Every value kind for one schema type: accepted and converted to the same value (int for
    a float argument becomes a float, ``int[2]`` takes one int, a Device a string...), or
    rejected with PyTorch's RuntimeError and message."""
    ours, theirs, seen = typed_ops[typ]
    for value_name, make in ARG_VALUES.items():
        seen.clear()
        results = {}
        for L, op in ((sk, ours), (torch, theirs)):
            try:
                op(L.ones(2), make(L))
                results[L] = seen["sk" if L is sk else "torch"]
            except RuntimeError as e:
                results[L] = e
        ours_got, theirs_got = results[sk], results[torch]
        where = f"{typ} <- {value_name}"
        if (typ, value_name) in REJECTED_ON_PURPOSE:
            assert not isinstance(theirs_got, Exception), where   # torch reinterprets it
            assert "Expected a value of type" in str(ours_got), where
        elif isinstance(theirs_got, Exception):
            assert isinstance(ours_got, RuntimeError), f"{where}: accepted {ours_got}"
            expected = _first_lines(str(theirs_got)).replace(
                f"{theirs._schema.name}()", f"{ours!r}()").replace(
                f"{theirs._schema.name}(", f"{ours.schema.name}(")
            expected = expected.replace(repr(make(torch)), repr(make(sk)))
            if typ.startswith("ScalarType"):        # torch names its enum by its C++ type
                expected = expected.replace("type 'int' for", "type 'ScalarType' for").replace(
                    "type 'Optional[int]' for", "type 'Optional[ScalarType]' for")
            # our devices are cpu and meta
            expected = re.sub("Expected one of .* device type", "Expected one of cpu, meta "
                              "device type", expected)
            assert str(ours_got) == expected, where
        else:
            assert ours_got == theirs_got, where


BAD_ORDER_CALLS = {
    # PyTorch converts positionals first, then the rest of the schema in order: a type error
    # before a missing argument, unless the missing one comes first.
    "positional_type_error_before_missing": lambda op, L: op(L.ones(2), "s"),
    "keyword_type_error_before_missing": lambda op, L: op(L.ones(2), k="s"),
    "missing_before_keyword_type_error": lambda op, L: op(L.ones(2), j="s"),
    "type_error_before_unknown_keyword": lambda op, L: op(L.ones(2), 1.0, "s", foo=1),
    "kwarg_only_type_error": lambda op, L: op(L.ones(2), 1.0, 2, z="s"),
    "list_element_type_error": lambda op, L: op(L.ones(2), 1.0, 2, z=[1, "a"]),
}


@pytest.mark.parametrize("case", list(BAD_ORDER_CALLS))
def test_bad_calls_report_what_torch_reports(define, case):
    ours, theirs = define("(Tensor x, float k, int j, *, int[] z=[]) -> Tensor",
                          lambda x, k, j, z=(): x.clone())
    call = BAD_ORDER_CALLS[case]
    with pytest.raises(RuntimeError) as theirs_err:
        call(theirs, torch)
    with pytest.raises(RuntimeError) as ours_err:
        call(ours, sk)
    expected = _first_lines(str(theirs_err.value)).replace(
        f"{theirs._schema.name}()", f"{ours!r}()").replace(
        f"operator '{theirs._schema.name}'", f"operator '{ours!r}'")
    expected = expected.replace(f"{theirs._schema.name}(", f"{ours.schema.name}(").replace(
        "int[] z=[]) ", "int[] z=[]) ").replace(".  ", ". ")
    assert str(ours_err.value) == expected


class _TorchRecorder(TorchDispatchMode):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == NS:
            self.log.append(([_seen(a) for a in args], {k: _seen(v) for k, v in
                                                         (kwargs or {}).items()}))
        return func(*args, **(kwargs or {}))


class _SkRecorder(sk.DispatchMode):
    def __init__(self, log):
        self.log = log

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        if func.name.startswith(NS):
            self.log.append(([_seen(a) for a in args], {k: _seen(v) for k, v in
                                                         (kwargs or {}).items()}))
        return func(*args, **(kwargs or {}))


MODE_CALLS = {
    "int_for_float": lambda op, L: op(L.ones(2), 2, [1, 2], "cpu", z=1),
    "keywords": lambda op, L: op(x=L.ones(2), k=2, s=3, d="meta", z=True),
    "tuple_for_list": lambda op, L: op(L.ones(2), 1.5, (4, 5), L.device("cpu"), z=0),
}


@pytest.mark.parametrize("case", list(MODE_CALLS))
def test_dispatch_mode_sees_converted_arguments(define, case):
    ours, theirs = define("(Tensor x, float k, int[2] s, Device d, *, int z) -> Tensor",
                          lambda x, k, s, d, *, z: x.clone())
    logs = {}
    for L, op, rec in ((sk, ours, _SkRecorder), (torch, theirs, _TorchRecorder)):
        log = logs[L] = []
        with rec(log):
            MODE_CALLS[case](op, L)
    assert logs[sk] == logs[torch] and len(logs[sk]) == 1


# -- the function level: a custom op is its own public API -------------------------------------
class _TorchFnRecorder(TorchFunctionMode):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.log.append(("op" if "skcustomoracle" in str(func) else str(func),
                         [_seen(a) for a in args[1:]]))
        return func(*args, **(kwargs or {}))


class _SkFnRecorder(sk.FunctionMode):
    def __init__(self, log):
        self.log = log

    def __tensor_function__(self, func, types, args=(), kwargs=None):
        self.log.append(("op" if isinstance(func, sk.OpOverload) else str(func),
                         [_seen(a) for a in args[1:]]))
        return func(*args, **(kwargs or {}))


class _TorchSub(torch.Tensor):
    pass


class _SkSub(sk.Tensor):
    pass


def test_function_mode_sees_the_call_not_the_kernel(define):
    """The mode sees the custom op once, with the arguments as written (``2``, not ``2.0``);
    the ops its kernel runs happen below the mode."""
    ours, theirs = define("(Tensor x, float k) -> Tensor", lambda x, k: (x * k).sin())
    logs = {}
    for L, op, rec in ((sk, ours, _SkFnRecorder), (torch, theirs, _TorchFnRecorder)):
        x = L.ones(2)
        log = logs[L] = []
        with rec(log):
            op(x, 2)
    assert logs[sk] == logs[torch] == [("op", [("int", 2)])]


@pytest.mark.parametrize("schema,kernel", [
    ("(Tensor x, float k) -> Tensor", lambda x, k: x * k),
    ("(Tensor x, float k) -> (Tensor, Tensor)", lambda x, k: (x * k, x + k)),
    ("(Tensor(a!) x, float k) -> Tensor(a!)", lambda x, k: x.mul_(k)),
    ("(Tensor(a) x, float k) -> Tensor(a)", lambda x, k: x[1:]),
])
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


# -- returns: checked against the schema and normalised, as PyTorch hands them on --------------
RETURN_CASES = {
    # schema, kernel (either library)
    "tensor": ("(Tensor x) -> Tensor", lambda x: x + 1),
    "tuple_for_tensor": ("(Tensor x) -> Tensor", lambda x: (x + 1, x + 2)),
    "int_for_tensor": ("(Tensor x) -> Tensor", lambda x: 3),
    "none_for_tensor": ("(Tensor x) -> Tensor", lambda x: None),
    "list_for_two": ("(Tensor x) -> (Tensor, Tensor)", lambda x: [x + 1, x + 2]),
    "tensor_for_two": ("(Tensor x) -> (Tensor, Tensor)", lambda x: x + 1),
    "tensor_for_nothing": ("(Tensor x) -> ()", lambda x: x + 1),
    "none_for_nothing": ("(Tensor x) -> ()", lambda x: None),
    "int_for_float": ("(Tensor x) -> float", lambda x: 3),
    "bool_for_int": ("(Tensor x) -> int", lambda x: True),
    "tuple_for_list": ("(Tensor x) -> Tensor[]", lambda x: (x + 1, x + 2)),
    "tensor_for_list": ("(Tensor x) -> Tensor[]", lambda x: x + 1),
    "numbers": ("(Tensor x) -> (int, float, Tensor)", lambda x: [1, 2, x + 1]),
}


def _returned(L, op):
    try:
        return _seen(op(L.ones(2)))
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize("case", list(RETURN_CASES))
def test_returns_are_checked_and_normalised(define, case):
    ours, theirs = define(*RETURN_CASES[case])
    got, expected = _returned(sk, ours), _returned(torch, theirs)
    if isinstance(expected[1], str) and "Unable to cast Python instance" in expected[1]:
        # pybind11's text names no type; ours names the value and the schema's return type
        assert got[0] == expected[0] and got[1].startswith("Unable to cast ")
        assert got[1].endswith(f" to {ours.schema.returns[0].type}")
    elif isinstance(expected[1], str):
        assert got == (expected[0], expected[1].replace("PythonKernelHolder for",
                                                        "the kernel of"))
    else:
        assert got == expected


def test_returning_too_few_values_raises(define):
    """PyTorch hands on the first value alone when a kernel returns fewer values than the
    schema declares (docs/differences.md); we raise."""
    ours, theirs = define("(Tensor x) -> (Tensor, Tensor)", lambda x: (x + 1,))
    assert isinstance(theirs(torch.ones(2)), torch.Tensor)
    with pytest.raises(RuntimeError, match=r"to return 2 values .* but it returned 1"):
        ours(sk.ones(2))


# -- define / impl / register_fake ---------------------------------------------------------
def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the exception is the result compared)
        return type(e), str(e)
    return None


def test_define_errors_match_torch(torch_lib):
    name = f"op{next(_names)}"
    sk.library.define(f"{NS}::{name}(Tensor x) -> Tensor")
    torch_lib.define(f"{name}(Tensor x) -> Tensor")
    cases = [
        # (our call, torch's call, how many sentences of torch's message we repeat)
        (lambda: sk.library.define(f"{NS}::{name}(Tensor y) -> Tensor"),
         lambda: torch_lib.define(f"{name}(Tensor y) -> Tensor"), 2),
        (lambda: sk.library.define(f"{NS}::{name}x.default(Tensor y) -> Tensor"),
         lambda: torch_lib.define(f"{name}x.default(Tensor y) -> Tensor"), 1),
        (lambda: sk.library.register_fake(f"{NS}::undefined_{name}")(lambda x: x),
         lambda: torch.library.register_fake(f"{NS}::undefined_{name}")(lambda x: x), 1),
    ]
    for ours, theirs, sentences in cases:
        (our_cls, our_msg), (their_cls, their_msg) = _error(ours), _error(theirs)
        assert our_cls is their_cls is RuntimeError
        expected = ". ".join(their_msg.split(". ")[:sentences])
        assert our_msg.startswith(expected.rstrip(".")), (our_msg, expected)
    # no namespace: ValueError on both sides
    assert _error(lambda: sk.library.define("plain(Tensor x) -> Tensor"))[0] is ValueError
    assert _error(lambda: torch.library.define("plain", "(Tensor x) -> Tensor"))[0] is ValueError


@pytest.mark.parametrize("types", ["gpu", ["cpu", "bogus"]])
def test_impl_rejects_unknown_devices_like_torch(define, types):
    ours, theirs = define("(Tensor x) -> Tensor", lambda x: x + 1)
    (our_cls, our_msg) = _error(lambda: sk.library.impl(ours, types, lambda x: x))
    (their_cls, their_msg) = _error(lambda: torch.library.impl(theirs._schema.name, types,
                                                               lambda x: x))
    assert our_cls is their_cls is RuntimeError
    assert re.sub("Expected one of .* device type", "", our_msg) == \
        re.sub("Expected one of .* device type", "", their_msg)


@pytest.mark.parametrize("types", ["default", ["cpu", "meta"], ("CPU", "Meta")])
def test_impl_for_several_devices(torch_lib, types):
    """``"default"`` (every device), a sequence of device types and PyTorch's dispatch-key
    spellings register the kernel for cpu and meta, as ``torch.library.impl`` does."""
    name = f"op{next(_names)}"
    ours = sk.library.define(f"{NS}::{name}(Tensor x) -> Tensor")
    sk.library.impl(ours, types, lambda x: x * 2)
    torch_lib.define(f"{name}(Tensor x) -> Tensor")
    torch.library.impl(f"{NS}::{name}", types, lambda x: x * 2, lib=torch_lib)
    theirs = getattr(getattr(torch.ops, NS), name).default
    for device in ("cpu", "meta"):
        got = [op(L.ones(2, 3, device=device).t()) for L, op in ((sk, ours), (torch, theirs))]
        assert [(tuple(g.shape), g.stride(), g.device.type) for g in got] == \
            [(tuple(got[1].shape), got[1].stride(), device)] * 2
    assert ours(sk.ones(2)).tolist() == [2.0, 2.0]


def test_a_kernel_for_one_device_wins_over_default(define):
    ours, _ = define("(Tensor x) -> Tensor", lambda x: x + 1)
    sk.library.impl(ours, "default", lambda x: x * 10)
    assert ours(sk.ones(1)).tolist() == [2.0]
    assert ours(sk.ones(1, device="meta")).device.type == "meta"


def test_missing_kernels_raise_like_torch(torch_lib):
    name = f"op{next(_names)}"
    ours = sk.library.define(f"{NS}::{name}(Tensor x) -> Tensor")
    torch_lib.define(f"{name}(Tensor x) -> Tensor")
    theirs = getattr(getattr(torch.ops, NS), name).default
    for device in ("cpu", "meta"):
        (our_cls, our_msg) = _error(lambda: ours(sk.ones(2, device=device)))
        (their_cls, their_msg) = _error(lambda: theirs(torch.ones(2, device=device)))
        assert our_cls is their_cls is NotImplementedError
        first = their_msg.split(". ")[0] if device == "cpu" else their_msg.split(" You may")[0]
        assert our_msg.startswith(first)


def test_impl_of_an_unknown_overload_raises():
    op = sk.library.define(f"{NS}::op{next(_names)}(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="does not exist"):
        sk.library.impl(f"{op.name}.nope", "cpu", lambda x: x)
    assert op._kernels == {}


@pytest.mark.parametrize("text", ["t::f(Tensor x) -> Tensor", "_packets::f(Tensor x) -> Tensor",
                                  f"{NS}x::_publish(Tensor x) -> Tensor"])
def test_names_that_would_shadow_sk_ops_are_rejected(text):
    """Built-in ops live in ``sk.ops`` itself, so a namespace named like one (``t``) cannot
    exist (docs/differences.md); nor names of the namespace objects' own attributes. The
    error leaves nothing behind."""
    before = set(sk.ops.__dict__)
    with pytest.raises(ValueError, match="choose another"):
        sk.library.define(text)
    assert set(sk.ops.__dict__) == before
    assert callable(sk.ops.t) and sk.ops.t(sk.ones(2, 3)).shape == (3, 2)


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
    name = f"cop{next(_names)}"

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
    from modes import DebugAssertMode, LoggingMode, MetaMode
    contexts = {"none": contextlib.nullcontext, "no_grad": sk.no_grad, "inference_mode": sk.inference_mode,
                "logging": LoggingMode, "debug": DebugAssertMode, "meta_mode": MetaMode}
    ours, _ = define("(Tensor(a!) x, Tensor(b!) y) -> ()", _raising, meta=_raising)
    x, y = sk.zeros(2), sk.zeros(2)
    args = (Wrapper.wrap(x), y) if wrap else (x, y)
    modes, grad = sk.get_mode_stack(), sk.is_grad_enabled()
    with pytest.raises(ValueError, match="kernel failed"):
        with contexts[context]():
            ours(*args)
    assert [a._version for a in args] == [0, 0] and x._version == 0
    assert sk.get_mode_stack() == modes and sk.is_grad_enabled() == grad
    assert not sk.is_below_autograd() and not sk.is_inference_mode_enabled()


def test_bad_argument_raises_before_any_mode(define):
    ours, _ = define("(Tensor(a!) x, int k) -> ()", lambda x, k: None)
    log = []
    x = sk.zeros(2)
    with _SkRecorder(log), pytest.raises(RuntimeError, match="Expected a value of type 'int'"):
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
    from modes import DebugAssertMode
    schema, kernel, rule = SCHEMA_BUGS[case]
    ours, _ = define(schema, kernel)
    args = [sk.arange(4.0), sk.arange(3.0)][:len(ours.schema.positional)]
    kwargs = {"out": sk.zeros(4)} if ours.schema.kwarg_only else {}
    mode = DebugAssertMode(raise_on_violation=False, check_data=True)
    with mode:
        ours(*args, **kwargs)
    assert [v.rule for v in mode.violations] == ([rule] if rule else [])


def test_graph_capture_and_replay_of_custom_ops(define):
    from modes import make_graph
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
    from modes import MetaMode
    ours, _ = define("(Tensor x, int[2] s) -> Tensor", lambda x, s: x.reshape(s).clone(),
                     meta=lambda x, s: sk.empty(s, dtype=x.dtype, device=x.device))
    nometa, _ = define("(Tensor x) -> Tensor", lambda x: x + 1)
    with MetaMode():
        out = ours(sk.arange(4.0), 2)
        with pytest.raises(NotImplementedError, match="no fake impl or Meta kernel"):
            nometa(sk.ones(2))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 2)
    assert MetaMode.device_of(out) == "cpu"


# -- schema strings: what PyTorch's parser accepts, ours accepts ---------------------------------
SCHEMA_TEXTS = [
    # accepted by both
    "f(Tensor(a) x) -> Tensor(a)", "f(Tensor(a!) x) -> Tensor(a!)",
    "f(Tensor(a -> *) x) -> Tensor(a)[]", "f(Tensor[] xs, Tensor? y, Tensor?[] z) -> Tensor",
    "f(Scalar s, int[] a, int[2] b, SymInt[] c, float? f, bool g=False, str h=\"mean\", "
    "ScalarType? d=None) -> Tensor",
    "f(Tensor x, *, int k) -> (Tensor, Tensor)", "f(Tensor x) -> ()",
    "f(Tensor x, int[] dims=[], Scalar alpha=1, str reduce=\"mean\") -> Tensor",
    "f(Tensor(A) x) -> Tensor(A)", "f(Tensor(a1) x, Tensor(a_b!) y) -> Tensor(a1)",
    "f(int? [] x, int [] y, Tensor ? z, int[ 2 ] w) -> Tensor", "f(int[2] x=1) -> Tensor",
    "f(int[]? x=1) -> Tensor", "f(bool[] x=[True]) -> Tensor", "f(Tensor x=None) -> Tensor",
    "f(Layout? l=strided, MemoryFormat m=contiguous_format) -> Tensor", "f(int x=-1) -> Tensor",
    "f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", "f(int x=True, str s=None) -> Tensor",
    # rejected by both
    "f(int[] x=1) -> Tensor", "f(float[] x=1) -> Tensor", "f(int[] x=None) -> Tensor",
    "f(float k=inf) -> Tensor", "f(float k=-inf) -> Tensor", "f(float k=nan) -> Tensor",
    "f(Tensor x, int as) -> Tensor", "f(Tensor x, int None) -> Tensor", "as(Tensor x) -> Tensor",
    "f.in(int a=0) -> Tensor", "f(Tensor x=1) -> Tensor", "f(int x=[1]) -> Tensor",
    "f(str x=abc) -> Tensor", "f(int x=abc) -> Tensor", "f(Device d=cpu) -> Tensor",
    "f(int x=+1) -> Tensor", "f(Tensor[] x=[]) -> Tensor", "f(int?[] x=[None]) -> Tensor",
    "f(bool x=true) -> Tensor", "f(Tensor x -> Tensor", "f(Foo x) -> Tensor",
    "f(Tensor x) -> Foo", "f(Tensor x, int a=1, int b) -> Tensor", "f(Tensor(a b) x) -> Tensor",
]


@pytest.mark.parametrize("text", SCHEMA_TEXTS)
def test_schema_strings_parse_like_torch(text):
    """Accepted and rejected alike; accepted ones agree on names, types' kwarg-only flags and
    alias annotations. Rejections are ValueError here (PyTorch's parser raises RuntimeError:
    docs/differences.md)."""
    try:
        theirs = torch._C.parse_schema(text)
    except RuntimeError:
        theirs = None
    if theirs is None:
        with pytest.raises(ValueError):
            sk.parse_schema(text)
        return
    ours = sk.parse_schema(text)

    def alias(info):
        return None if info is None else (sorted(info.before_set), info.is_write)
    assert [(a.name, a.kwarg_only, alias(a.alias_info)) for a in theirs.arguments] == \
        [(a.name, a.kwarg_only, None if a.alias is None else
          (sorted(a.alias.alias_sets), a.alias.is_write)) for a in ours.arguments]
    # (torch keeps the annotation of ``Tensor(a)[]`` on the element type: not compared)
    assert [alias(t.alias_info) for t, r in zip(theirs.returns, ours.returns)
            if not r.is_tensor_list] == \
        [None if r.alias is None else (sorted(r.alias.alias_sets), r.alias.is_write)
         for r in ours.returns if not r.is_tensor_list]
    assert sk.parse_schema(str(ours)) == ours       # the canonical text round-trips
