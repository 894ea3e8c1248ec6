"""The built-in ops: every schema of ``op_table`` as an op of ``sk.ops``, parsed on first use.

Imported by ``registry`` once its names exist, which then calls ``define_builtin_ops`` (Note
[Lazy schemas]).
"""

from __future__ import annotations

from . import op_table
from .op_table_derived import derived_schemas
from .registry import OpOverload, _add_overload, _check_free, ops
from .schema import parse_schema

# Note [Lazy schemas]
#     Parsing the ~630 built-in schemas and deriving each op's call facts took most of
#     ``import subclass_kit`` (a process sizing one model calls ~60 distinct ops). So a built-in
#     op is created as a ``_LazyOpOverload``: its name, overload name and kernel table exist
#     (kernel modules fill them at import), its schema is still text. The first read of any
#     other attribute (``op.schema``, a call, ``op.is_view``...) reaches ``__getattr__``, which
#     parses the text, derives the facts and turns the object into a plain ``OpOverload``
#     (``__class__`` assignment): from then on no ``__getattr__`` stands in the way of CPython's
#     attribute specialisation on the call paths (the note after ``OpOverload._overloadname``).
#     Nothing observable changes: the same object, the same attributes, the same errors (the
#     texts are checked by the tests that iterate ``sk.ops``).


class _LazyOpOverload(OpOverload):
    """A built-in op whose schema is parsed on first use (Note [Lazy schemas])."""

    def __init__(self, text: str, qualified: str):
        name, _, overload = qualified.partition(".")
        self._init_table(name, overload or "default", "")
        self._schema_text = text

    def __getattr__(self, attr):
        text = self.__dict__.get("_schema_text")
        if text is not None:
            self._derive(parse_schema(text))     # idempotent: a racing thread derives the same
            self.__class__ = OpOverload
            self.__dict__.pop("_schema_text", None)
        return object.__getattribute__(self, attr)


def _define_lazy(schema_text: str) -> OpOverload:
    """``define`` for a built-in schema (no namespace), parsed on first use (Note [Lazy
    schemas])."""
    qualified = schema_text.partition("(")[0].strip()
    base = qualified.partition(".")[0]
    if base not in ops._packets:
        _check_free(ops, base, "op name")
    return _add_overload(ops, base, _LazyOpOverload(schema_text, qualified))


def define_builtin_ops():
    """File every schema of ``op_table`` (and the derived in-place and out= ones) in ``sk.ops``,
    with the tags that the debug-assert mode and functionalization read."""
    for text in op_table.ALL + derived_schemas():
        op = _define_lazy(text)
        if text in op_table.INPLACE_VIEWS:
            op.tags.add("inplace_view")
    # Schema exceptions that the debug-assert mode and functionalization read (PyTorch keeps
    # the same lists in its autograd codegen, SEMANTICS.md §8).
    for op in ops.set_._overloads.values():
        op.tags.add("swaps_storage")
    ops._unsafe_view.default.tags.add("unsafe_alias")
    ops.lift_fresh.default.tags.add("returns_input")
    ops.detach.default.tags.add("not_a_view_for_autograd")
