"""Calling and registering custom ops (``sk.library``) against ``torch.library`` in PyTorch
2.13: arguments bound and converted to their schema types (or rejected with PyTorch's
message), returns checked and normalised, ``define`` / ``impl`` / ``register_fake`` and their
errors, and which schema strings parse. How custom ops behave in views, versions and modes:
``test_custom_ops_oracle.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
import custom_ops_support as support
from custom_ops_support import (
    NS,
    SkRecorder,
    TorchRecorder,
    error,
    first_lines,
    fresh_name,
    neutral,
)

import subclass_kit as sk


@pytest.fixture(scope="module")
def torch_lib():
    yield from support.torch_library()


@pytest.fixture
def define(torch_lib):
    return support.definer(torch_lib)


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
    "list_tensor": lambda L: [L.ones(2), L.zeros(1)],
    "list_tensor_none": lambda L: [None, L.ones(2)], "dtype": lambda L: L.float64,
    "np_int": lambda L: np.int64(3), "np_float": lambda L: np.float32(3.5),
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


@pytest.fixture(scope="module")
def typed_ops(torch_lib):
    """Per schema type ``T``: ``(sk op, torch op, seen)`` for ``(Tensor x, T k) -> Tensor``
    whose kernel records the ``k`` it receives in ``seen[library name]``."""
    ops = {}
    for i, typ in enumerate(ARG_TYPES):
        seen = {}

        def kernel(x, k, seen=seen):
            seen["torch" if isinstance(x, torch.Tensor) else "sk"] = neutral(k)
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
            expected = first_lines(str(theirs_got)).replace(
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
    expected = first_lines(str(theirs_err.value)).replace(
        f"{theirs._schema.name}()", f"{ours!r}()").replace(
        f"operator '{theirs._schema.name}'", f"operator '{ours!r}'")
    expected = expected.replace(f"{theirs._schema.name}(", f"{ours.schema.name}(").replace(
        "int[] z=[]) ", "int[] z=[]) ").replace(".  ", ". ")
    assert str(ours_err.value) == expected


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
    for L, op, rec in ((sk, ours, SkRecorder), (torch, theirs, TorchRecorder)):
        log = logs[L] = []
        with rec(log):
            MODE_CALLS[case](op, L)
    assert logs[sk] == logs[torch] and len(logs[sk]) == 1


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
        return neutral(op(L.ones(2)))
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
def test_define_errors_match_torch(torch_lib):
    name = fresh_name()
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
        (our_cls, our_msg), (their_cls, their_msg) = error(ours), error(theirs)
        assert our_cls is their_cls is RuntimeError
        expected = ". ".join(their_msg.split(". ")[:sentences])
        assert our_msg.startswith(expected.rstrip(".")), (our_msg, expected)
    # no namespace: ValueError on both sides
    assert error(lambda: sk.library.define("plain(Tensor x) -> Tensor"))[0] is ValueError
    assert error(lambda: torch.library.define("plain", "(Tensor x) -> Tensor"))[0] is ValueError


@pytest.mark.parametrize("types", ["gpu", ["cpu", "bogus"]])
def test_impl_rejects_unknown_devices_like_torch(define, types):
    ours, theirs = define("(Tensor x) -> Tensor", lambda x: x + 1)
    (our_cls, our_msg) = error(lambda: sk.library.impl(ours, types, lambda x: x))
    (their_cls, their_msg) = error(lambda: torch.library.impl(theirs._schema.name, types,
                                                               lambda x: x))
    assert our_cls is their_cls is RuntimeError
    assert re.sub("Expected one of .* device type", "", our_msg) == \
        re.sub("Expected one of .* device type", "", their_msg)


@pytest.mark.parametrize("types", ["default", ["cpu", "meta"], ("CPU", "Meta")])
def test_impl_for_several_devices(torch_lib, types):
    """``"default"`` (every device), a sequence of device types and PyTorch's dispatch-key
    spellings register the kernel for cpu and meta, as ``torch.library.impl`` does."""
    name = fresh_name()
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
    name = fresh_name()
    ours = sk.library.define(f"{NS}::{name}(Tensor x) -> Tensor")
    torch_lib.define(f"{name}(Tensor x) -> Tensor")
    theirs = getattr(getattr(torch.ops, NS), name).default
    for device in ("cpu", "meta"):
        (our_cls, our_msg) = error(lambda d=device: ours(sk.ones(2, device=d)))
        (their_cls, their_msg) = error(lambda d=device: theirs(torch.ones(2, device=d)))
        assert our_cls is their_cls is NotImplementedError
        first = their_msg.split(". ")[0] if device == "cpu" else their_msg.split(" You may")[0]
        assert our_msg.startswith(first)


def test_impl_of_an_unknown_overload_raises():
    op = sk.library.define(f"{NS}::{fresh_name()}(Tensor x) -> Tensor")
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


# -- schema strings: what PyTorch's parser accepts, ours accepts ---------------------------------
SCHEMA_TEXTS = [
    # accepted by both
    "f(Tensor(a) x) -> Tensor(a)", "f(Tensor(a!) x) -> Tensor(a!)",
    "f(Tensor(a -> *) x) -> Tensor(a)[]", "f(Tensor[] xs, Tensor? y, Tensor?[] z) -> Tensor",
    ("f(Scalar s, int[] a, int[2] b, SymInt[] c, float? f, bool g=False, str h=\"mean\", "
     "ScalarType? d=None) -> Tensor"),
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


def test_defaults_filling_a_gap_arrive_converted(define):
    """Defaults before an argument given by keyword reach the kernel as PyTorch passes them:
    converted to their type (``float k=1`` is 1.0, ``int[2] s=1`` is ``[1, 1]``, a dtype name is
    the dtype, a memory format name the memory format)."""
    got = {}

    def kernel(x, dt, s, k, m, j):
        got["torch" if isinstance(x, torch.Tensor) else "sk"] = [neutral(v) for v in
                                                                 (dt, s, k, str(m), j)]
        return x.clone()
    ours, theirs = define("(Tensor x, ScalarType dt=long, int[2] s=1, float k=1, "
                          "MemoryFormat m=contiguous_format, int j=0) -> Tensor", kernel)
    ours(sk.ones(1), j=5)
    theirs(torch.ones(1), j=5)
    assert got["sk"] == [n if i != 3 else ("str", n[1].replace("torch.", "sk."))
                         for i, n in enumerate(got["torch"])]
