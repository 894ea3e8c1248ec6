"""The schema parser: round trips, derived alias/mutation facts, malformed input.

Round trip means ``str(parse_schema(s)) == s`` for every schema of ``op_table`` (the functional
ones and the derived in-place/out= ones), for hand-written strings using every grammar feature,
and for hypothesis-generated schemas in canonical form. Derived facts (``is_view``,
``is_inplace``, ``is_out``, ``mutated_args``, ``functional_variant``, ``view_pairs``) are checked
on known ops and, for generated schemas, against ``torch._C.parse_schema`` when torch is present.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit import op_table
from subclass_kit.op_table_derived import derived_schemas
from subclass_kit.schema import _LEXER_KEYWORDS, parse_schema

TABLE = list(op_table.ALL) + list(derived_schemas())


@pytest.mark.parametrize("text", TABLE)
def test_op_table_round_trip(text):
    assert str(parse_schema(text)) == text


def test_op_table_has_no_duplicates():
    names = [parse_schema(t).qualified_name for t in TABLE]
    dups = sorted({n for n in names if names.count(n) > 1})
    assert not dups, f"schemas defined twice: {dups}"


def test_every_registered_op_has_its_schema():
    """Each ``sk.ops`` overload carries a parsed schema whose text is in op_table (or was
    defined by a library), and whose name/overload match the op."""
    texts = set(TABLE)
    for op in sk.ops:
        assert isinstance(op.schema, sk.OpSchema), op
        assert op.schema.name == op.name
        assert (op.schema.overload or "default") == op.overload
        assert str(op.schema) in texts, f"{op}: schema not in op_table"


GRAMMAR = [
    # namespaces, overloads, no arguments, empty returns
    "f() -> Tensor",
    "f(Tensor a) -> ()",
    "mylib::scale(Tensor self, float k) -> Tensor",
    "mylib::scale.overload_2(Tensor self, float k) -> Tensor",
    # alias annotations: view, write, wildcard after-set, multiple sets
    "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "f(Tensor(a|b) self) -> Tensor(a|b)",
    "f(Tensor(a!)[] xs) -> ()",
    "f(Tensor(a!) x, Tensor(b!) y) -> (Tensor(a!), Tensor(b!))",
    # optional, lists, fixed-size lists, optional lists, lists of optionals
    "f(Tensor? w, Tensor[] ts, Tensor?[] idx, int[2] k, int[1]? dim, SymInt[] s) -> Tensor",
    # defaults of every kind
    "f(int x=-1, float y=-1.5, float e=1e-05, bool b=True, bool c=False, int? z=None) -> Tensor",
    "f(Tensor self, str approximate='none', str? mode=None, str q=\"a,b\") -> Tensor",
    "f(int[] a=[], int[2] b=[0, 1], Scalar s=1, ScalarType? dtype=None) -> Tensor",
    "f(Tensor self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
    # keyword-only section, named returns, tuple returns
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "f(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "f(Tensor input, SymInt[] shape, Tensor? w, Tensor? b, float eps) -> (Tensor, Tensor, Tensor)",
    "f(Tensor self) -> Scalar",
    "f(Tensor self, Storage source, Device? device=None, Layout? layout=None) -> Tensor",
]


@pytest.mark.parametrize("text", GRAMMAR)
def test_grammar_round_trip(text):
    assert str(parse_schema(text)) == text


@pytest.mark.parametrize("text", GRAMMAR)
def test_grammar_matches_torch_parser(text, torch):
    """Argument names, kwarg-only flags, write annotations and return count agree with
    ``torch._C.parse_schema`` (torch prints defaults differently, so we compare structure)."""
    ts = torch._C.parse_schema(text)
    ours = parse_schema(text)
    assert [a.name for a in ours.arguments] == [a.name for a in ts.arguments]
    assert [a.kwarg_only for a in ours.arguments] == [a.kwarg_only for a in ts.arguments]
    assert ours.mutated_args == tuple(a.name for a in ts.arguments
                                      if a.alias_info is not None and a.alias_info.is_write)
    assert len(ours.returns) == len(ts.returns)
    assert [r.name for r in ours.returns] == [r.name for r in ts.returns]


def test_argument_details():
    s = parse_schema("mylib::f.ov(Tensor(a!) self, Tensor? w, int[1]? dim=None, *, "
                     "float eps=1e-05, str mode='x') -> Tensor(a!)")
    assert s.name == "mylib::f" and s.overload == "ov" and s.base_name == "f"
    assert s.qualified_name == "mylib::f.ov"
    self_, w, dim, eps, mode = s.arguments
    assert self_.type == "Tensor" and self_.alias.alias_sets == frozenset("a")
    assert self_.alias.is_write and self_.is_write and self_.is_tensor
    assert w.type == "Tensor?" and w.is_tensor and w.alias is None and not w.has_default
    assert dim.type == "int[1]?" and dim.base_type == "int" and dim.default_value is None
    assert eps.kwarg_only and eps.default_value == 1e-05
    assert mode.default_value == "x"
    assert [a.name for a in s.positional] == ["self", "w", "dim"]
    assert [a.name for a in s.kwarg_only] == ["eps", "mode"]
    assert s.argument("eps") is eps
    with pytest.raises(KeyError):
        s.argument("nope")


def test_default_values():
    s = parse_schema("f(int a=-1, int[] b=[], int[2] c=[0, 1], bool d=True, bool e=False, "
                     "int? g=None, float h=2.5, MemoryFormat m=contiguous_format) -> Tensor")
    got = {a.name: a.default_value for a in s.arguments}
    assert got == {"a": -1, "b": [], "c": [0, 1], "d": True, "e": False, "g": None, "h": 2.5,
                   "m": "contiguous_format"}


def test_tensor_list_flags():
    s = parse_schema("f(Tensor[] ts, Tensor?[] idx, Tensor t) -> Tensor[]")
    ts, idx, t = s.arguments
    assert ts.is_tensor_list and idx.is_tensor_list and not ts.is_tensor
    assert not t.is_tensor_list and t.is_tensor
    assert s.returns[0].is_tensor_list


# -- derived facts on known ops ------------------------------------------------------------------
KNOWN = [
    # op, is_view, is_inplace, is_out, mutated_args, view_pairs
    ("view.default", True, False, False, (), ((0, 0),)),
    ("transpose.int", True, False, False, (), ((0, 0),)),
    ("split.Tensor", True, False, False, (), ((0, 0),)),
    ("unbind.int", True, False, False, (), ((0, 0),)),
    ("_unsafe_view.default", False, False, False, (), ()),
    ("detach.default", True, False, False, (), ((0, 0),)),
    ("add.Tensor", False, False, False, (), ()),
    ("add_.Tensor", False, True, False, ("self",), ()),
    ("add.out", False, False, True, ("out",), ()),
    ("t_.default", False, True, False, ("self",), ()),
    ("copy_.default", False, True, False, ("self",), ()),
    ("index_put_.default", False, True, False, ("self",), ()),
    ("sum.IntList_out", False, False, True, ("out",), ()),
    ("max.dim", False, False, False, (), ()),
    ("clone.default", False, False, False, (), ()),
    ("reshape.default", True, False, False, (), ((0, 0),)),
    ("contiguous.default", True, False, False, (), ((0, 0),)),
]


def _op(qual):
    name, _, overload = qual.partition(".")
    return getattr(getattr(sk.ops, name), overload)


@pytest.mark.parametrize("qual,view,inplace,out,mutated,pairs", KNOWN)
def test_derived_facts(qual, view, inplace, out, mutated, pairs):
    op = _op(qual)
    s = op.schema
    assert (s.is_view, s.is_inplace, s.is_out) == (view, inplace, out)
    assert (op.is_view, op.is_inplace, op.is_out) == (view, inplace, out)
    assert s.mutated_args == mutated and op.mutated_args == mutated
    assert s.view_pairs == pairs
    assert s.is_mutable == bool(mutated)


def test_multi_output_view():
    assert sk.ops.split.Tensor.schema.is_multi_output_view
    assert sk.ops.unbind.int.schema.is_multi_output_view
    assert sk.ops.chunk.default.schema.is_multi_output_view
    assert not sk.ops.view.default.schema.is_multi_output_view


def test_derived_facts_of_custom_strings():
    s = parse_schema("f(Tensor(a) x, Tensor(b) y) -> (Tensor(b), Tensor(a))")
    assert s.view_pairs == ((1, 0), (0, 1))
    s = parse_schema("f(Tensor(a!) x, Tensor(a) y) -> Tensor(a!)")
    assert s.view_pairs == () and s.mutated_args == ("x",)
    s = parse_schema("foo__(Tensor(a!) self) -> Tensor(a!)")   # dunder: not in-place
    assert not s.is_inplace
    s = parse_schema("foo_(Tensor self, Tensor(a!) other) -> Tensor(a!)")  # first arg not written
    assert not s.is_inplace and not s.is_out
    s = parse_schema("foo.out(Tensor self, *, Tensor(a!) out, Tensor(b!) out2) -> "
                     "(Tensor(a!), Tensor(b!))")
    assert s.is_out and s.mutated_args == ("out", "out2") and s.mutated_positions == (1, 2)


FUNCTIONAL = [
    ("add_.Tensor", "add.Tensor"),
    ("add.out", "add.Tensor"),
    ("div_.Tensor_mode", "div.Tensor_mode"),
    ("div.out", "div.Tensor"),
    ("div.out_mode", "div.Tensor_mode"),
    ("pow_.Tensor_Tensor", "pow.Tensor_Tensor"),
    ("copy_.default", "copy.default"),
    ("fill_.Scalar", "fill.Scalar"),
    ("masked_fill_.Scalar", "masked_fill.Scalar"),
    ("index_put_.default", "index_put.default"),
    ("sum.IntList_out", "sum.dim_IntList"),
    ("prod.int_out", "prod.dim_int"),
    ("abs.out", "abs.default"),
    ("where.self_out", "where.self"),
    ("transpose_.default", "transpose.int"),
    ("zero_.default", "zero.default"),
    ("uniform_.default", "uniform.default"),
    ("normal_.default", None),   # normal_functional: functionalization maps it by name
    ("add.Tensor", None),
    ("view.default", None),
]


@pytest.mark.parametrize("qual,expected", FUNCTIONAL)
def test_functional_variant(qual, expected):
    got = _op(qual).functional_variant
    if expected is None:
        assert got is None
    else:
        assert got is _op(expected), f"{qual} -> {got}, expected sk.ops.{expected}"


def test_schema_functional_variant_text():
    assert parse_schema("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"
                        ).functional_variant == "add.Tensor"
    assert parse_schema("abs_(Tensor(a!) self) -> Tensor(a!)").functional_variant == "abs"
    assert parse_schema("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
                        ).functional_variant == "abs"
    assert parse_schema("abs(Tensor self) -> Tensor").functional_variant is None


# -- malformed strings ---------------------------------------------------------------------------
MALFORMED = [
    "",
    "f",
    "f(",
    "f(Tensor a)",
    "f(Tensor a) -> ",
    "f(Tensor) -> Tensor",
    "f(Tensor a -> Tensor",
    "f(Tensor a, Tensor a) -> Tensor",
    "f(Tensor 1a) -> Tensor",
    "1f(Tensor a) -> Tensor",
    "f.(Tensor a) -> Tensor",
    "f(Tensor a b) -> Tensor",
    "f(Tensor[ a) -> Tensor",
    "f(int[x] a) -> Tensor",
    "f(Tensor a) -> Tensor b c",
    "f(Tensor a) -> (Tensor",
    "f(Tensor(a) a) -> Tensor(",
    "f(Tensor(a!) self) -> Tensor(a",
    "f(Tensor(a) a) -> Tensor(a)[",
]

# Accepted by our parser although torch._C.parse_schema rejects them (report: schema.py).
# Malformed strings torch._C.parse_schema rejects: ours must reject them too.
MALFORMED_LIKE_TORCH = [
    "f(Tensor a,) -> Tensor",
    "f(Tensor a=) -> Tensor",
    "f(Tensor a) -> (Tensor, )",
    "f(int a=[1, 2) -> Tensor",
    "f(str a=\"x) -> Tensor",
    "f(Tensor(a b) a) -> Tensor",
    "f(Foo a) -> Tensor",
    "f(int a=0, int b) -> Tensor",
]

# Malformed for us, accepted by torch's parser.
TORCH_ACCEPTS = {"f(Tensor a, Tensor a) -> Tensor"}


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_raises_value_error(text):
    with pytest.raises(ValueError):
        parse_schema(text)


@pytest.mark.parametrize("text", MALFORMED_LIKE_TORCH)
def test_malformed_like_torch_raises_value_error(text):
    with pytest.raises(ValueError):
        parse_schema(text)


@pytest.mark.parametrize("text", [t for t in MALFORMED + MALFORMED_LIKE_TORCH
                                  if t not in TORCH_ACCEPTS])
def test_malformed_is_rejected_by_torch_too(text, torch):
    """The malformed list is really malformed: torch's parser rejects every entry."""
    with pytest.raises(RuntimeError):
        torch._C.parse_schema(text)


def test_define_rejects_malformed_and_duplicates():
    from subclass_kit.registry import define
    with pytest.raises(ValueError):
        define("not a schema")
    with pytest.raises(RuntimeError):
        define("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")


# -- hypothesis: generated schemas in canonical form round-trip ---------------------------------
# (not a word PyTorch's schema lexer keeps for itself: ``if``, ``def``, ... are refused as
# names there and here, ``test_lexer_keywords_are_no_names``)
_IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda n: n not in _LEXER_KEYWORDS)
_PLAIN_TYPES = ["int", "int?", "int[]", "int[2]", "int[1]?", "SymInt", "SymInt[]", "float",
                "float?", "bool", "str", "str?", "Scalar", "Scalar?", "ScalarType?", "Device?",
                "MemoryFormat?", "Storage"]
_TENSOR_TYPES = ["Tensor", "Tensor?", "Tensor[]", "Tensor?[]"]
_DEFAULTS = {
    "int": ["0", "-1", "3"], "int?": ["None", "2"], "int[]": ["[]", "[0, 1]"],
    "int[2]": ["[0, 1]", "[1, 1]"], "int[1]?": ["None"], "SymInt": ["1"], "SymInt[]": ["[]"],
    "float": ["1.5", "1e-05", "-2.0"], "float?": ["None"], "bool": ["True", "False"],
    "str": ["'none'", "\"tanh\""], "str?": ["None"], "Scalar": ["1", "0.5"],
    "Scalar?": ["None"], "ScalarType?": ["None"], "Device?": ["None"],
    "MemoryFormat?": ["None"], "Tensor?": ["None"],
}


@st.composite
def _alias(draw, write_ok=True):
    sets = sorted(draw(st.sets(st.sampled_from("abc"), min_size=1, max_size=2)))
    bang = "!" if write_ok and draw(st.booleans()) else ""
    return "(" + "|".join(sets) + bang + ")"


@st.composite
def _argument(draw, name):
    """(type text, name, default text or None)."""
    if draw(st.booleans()):
        base = draw(st.sampled_from(_TENSOR_TYPES))
        ann = draw(_alias()) if draw(st.booleans()) and base in ("Tensor", "Tensor[]") else ""
        typ = "Tensor" + ann + base[len("Tensor"):]
    else:
        base = typ = draw(st.sampled_from(_PLAIN_TYPES))
    default = None
    if base in _DEFAULTS and draw(st.booleans()):
        default = draw(st.sampled_from(_DEFAULTS[base]))
    return typ, name, default


def _arg_text(typ, name, default):
    return f"{typ} {name}" + ("" if default is None else f"={default}")


@st.composite
def schemas(draw):
    name = draw(_IDENT)
    if draw(st.booleans()):
        name = draw(_IDENT) + "::" + name
    if draw(st.booleans()):
        name += "." + draw(_IDENT)
    names = draw(st.lists(_IDENT.filter(lambda n: n not in ("out",)), max_size=5, unique=True))
    parsed = [draw(_argument(n)) for n in names]
    cut = draw(st.integers(0, len(parsed))) if parsed else 0
    # A positional argument with a default may only be followed by defaulted positionals.
    all_default = True
    for i in range(cut - 1, -1, -1):
        typ, name_, default = parsed[i]
        if default is None:
            all_default = False
        elif not all_default:
            parsed[i] = (typ, name_, None)
    args = [_arg_text(*a) for a in parsed]
    if cut < len(args):
        args = args[:cut] + ["*"] + args[cut:]
    n_ret = draw(st.integers(0, 3))
    rets = []
    named = draw(st.booleans())
    ret_names = draw(st.lists(_IDENT, min_size=n_ret, max_size=n_ret, unique=True))
    for i in range(n_ret):
        typ = "Tensor" + (draw(_alias()) if draw(st.booleans()) else "")
        typ += draw(st.sampled_from(["", "[]"]))
        if draw(st.booleans()):
            typ = draw(st.sampled_from(["int", "float", "Scalar", "bool"]))
        rets.append(f"{typ} {ret_names[i]}" if named else typ)
    ret_text = rets[0] if n_ret == 1 else "(" + ", ".join(rets) + ")"
    return f"{name}({', '.join(args)}) -> {ret_text}"


@given(schemas())
def test_generated_schemas_round_trip(text):
    s = parse_schema(text)
    assert str(s) == text
    assert str(parse_schema(str(s))) == text
    assert s.mutated_args == tuple(a.name for a in s.arguments
                                   if a.alias is not None and a.alias.is_write)


@given(schemas())
def test_generated_schemas_agree_with_torch(text):
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    ts = torch._C.parse_schema(text)
    s = parse_schema(text)
    assert [a.name for a in s.arguments] == [a.name for a in ts.arguments]
    assert [a.kwarg_only for a in s.arguments] == [a.kwarg_only for a in ts.arguments]
    assert s.mutated_args == tuple(a.name for a in ts.arguments
                                   if a.alias_info is not None and a.alias_info.is_write)
    assert len(s.returns) == len(ts.returns)
    assert s.is_mutable == ts.is_mutable


@pytest.mark.parametrize("word", sorted(_LEXER_KEYWORDS) + ["lambda", "from", "try", "yield",
                                                           "async", "nonlocal", "self"])
@pytest.mark.parametrize("place", ["{}() -> ()", "ns::{}() -> ()", "f.{}() -> ()",
                                   "f(Tensor {}) -> ()", "f(Tensor x) -> Tensor {}"])
def test_lexer_keywords_are_no_names(word, place):
    """A word PyTorch's schema lexer reads as a keyword is refused as an op, namespace,
    overload, argument or return name, as ``torch._C.parse_schema`` refuses it; other words
    (Python keywords it does not reserve, such as ``from``, an argument of ``uniform_``) parse."""
    torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")
    text = place.format(word)
    try:
        torch._C.parse_schema(text)
        theirs = True
    except RuntimeError:
        theirs = False
    try:
        parse_schema(text)
        ours = True
    except ValueError:
        ours = False
    assert ours == theirs
