"""Operator schemas in PyTorch's notation, parsed once into frozen dataclasses.

Grammar (``native_functions.yaml`` / ``FunctionSchema``)::

    add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
    view(Tensor(a) self, SymInt[] size) -> Tensor(a)
    split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]
    max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)

An alias annotation ``(a)`` says an output may alias that input's storage (a view); ``(a!)`` says
the op writes through it (in-place and ``out=``); ``(a -> *)`` puts the list outputs of
multi-output views in the input's alias set. Everything alias- and mutation-related in the
project (version bumps, view tracking, functionalization, the debug-assert mode) reads these
dataclasses, never a hand-written list.

Raises ``ValueError`` with the column and the offending token for malformed schema strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["AliasInfo", "Argument", "Return", "OpSchema", "parse_schema"]


class cached_property:
    """``functools.cached_property`` without its per-class lock (Python 3.11 takes an RLock on
    every first read, a visible share of deriving an op's facts). The values are pure functions
    of an immutable schema, so two threads computing one at once store equal values."""

    def __init__(self, fn):
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


@dataclass(frozen=True)
class AliasInfo:
    """An alias annotation: ``(a)`` -> sets {a}; ``(a!)`` adds ``is_write``; ``(a -> *)``
    sets ``after_sets={'*'}`` (list elements join a wildcard set)."""

    alias_sets: frozenset
    is_write: bool = False
    after_sets: frozenset = frozenset()

    def __str__(self):
        text = "|".join(sorted(self.alias_sets)) + ("!" if self.is_write else "")
        if self.after_sets:
            text += " -> " + "|".join(sorted(self.after_sets))
        return f"({text})"


def _insert_alias(type_str: str, alias: AliasInfo | None) -> str:
    if alias is None:
        return type_str
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", type_str)
    return type_str[:m.end()] + str(alias) + type_str[m.end():]


@dataclass(frozen=True)
class Argument:
    """One schema argument. ``type`` is the type text without its alias annotation
    (``"Tensor?"``, ``"int[]"``, ``"SymInt[2]"``); ``default`` is the default's source text."""

    name: str
    type: str
    alias: AliasInfo | None = None
    default: str | None = None
    kwarg_only: bool = False

    @property
    def base_type(self) -> str:
        return re.match(r"[A-Za-z_][A-Za-z0-9_]*", self.type).group(0)

    @property
    def is_tensor(self) -> bool:
        """A single (possibly optional) Tensor."""
        return self.type in ("Tensor", "Tensor?")

    @property
    def is_tensor_list(self) -> bool:
        return self.type.startswith("Tensor") and "[" in self.type

    @property
    def is_write(self) -> bool:
        return self.alias is not None and self.alias.is_write

    @property
    def has_default(self) -> bool:
        return self.default is not None

    @cached_property
    def default_value(self):
        return _parse_default(self.default)

    def __str__(self):
        text = f"{_insert_alias(self.type, self.alias)} {self.name}"
        if self.default is not None:
            text += f"={self.default}"
        return text


@dataclass(frozen=True)
class Return:
    """One schema return; ``name`` is empty for unnamed returns."""

    type: str
    alias: AliasInfo | None = None
    name: str = ""

    @property
    def is_tensor_list(self) -> bool:
        return self.type.startswith("Tensor") and "[" in self.type

    def __str__(self):
        text = _insert_alias(self.type, self.alias)
        return f"{text} {self.name}" if self.name else text


@dataclass(frozen=True)
class OpSchema:
    """A parsed schema. ``str(schema)`` gives the canonical text back (round trip)."""

    name: str
    overload: str
    arguments: tuple
    returns: tuple
    returns_tuple: bool = field(default=False)

    # -- derived facts (computed once; the schema is immutable) ------------------------------
    @cached_property
    def qualified_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @cached_property
    def base_name(self) -> str:
        """The name without namespace: ``mylib::scale`` -> ``scale``."""
        return self.name.split("::")[-1]

    @cached_property
    def is_out(self) -> bool:
        """An ``out=`` variant: a keyword-only argument that the op writes."""
        return any(a.kwarg_only and a.is_write for a in self.arguments)

    @cached_property
    def is_inplace(self) -> bool:
        """An in-place variant: ``name_`` whose first argument is written (``Tensor(a!) self``)."""
        base = self.base_name
        return (base.endswith("_") and not base.endswith("__") and bool(self.arguments)
                and self.arguments[0].is_write and not self.is_out)

    @cached_property
    def mutated_args(self) -> tuple:
        """Names of the arguments the op writes (data or metadata), in schema order."""
        return tuple(a.name for a in self.arguments if a.is_write)

    @cached_property
    def mutated_positions(self) -> tuple:
        return tuple(i for i, a in enumerate(self.arguments) if a.is_write)

    @cached_property
    def is_mutable(self) -> bool:
        return bool(self.mutated_args)

    @cached_property
    def view_pairs(self) -> tuple:
        """``(argument index, return index)`` pairs where a return aliases an input it does not
        write: the op is a view of that input (``Tensor(a) self -> Tensor(a)``)."""
        pairs = []
        for ri, ret in enumerate(self.returns):
            if ret.alias is None or ret.alias.is_write:
                continue
            for ai, arg in enumerate(self.arguments):
                if (arg.alias is not None and not arg.is_write
                        and arg.alias.alias_sets & ret.alias.alias_sets):
                    pairs.append((ai, ri))
        return tuple(pairs)

    @cached_property
    def is_view(self) -> bool:
        return bool(self.view_pairs)

    @cached_property
    def is_multi_output_view(self) -> bool:
        return self.is_view and any(self.returns[r].is_tensor_list for _, r in self.view_pairs)

    @cached_property
    def functional_variant(self) -> str | None:
        """The qualified name of the out-of-place op this mutable op stands for:
        ``add_.Tensor -> add.Tensor``, ``add.out -> add`` (overload resolved by the registry),
        ``None`` for ops that do not mutate."""
        overload = f".{self.overload}" if self.overload else ""
        if self.is_inplace:
            return self.name[:-1] + overload
        if self.is_mutable and self.name.startswith("__i") and self.name.endswith("__"):
            return "__" + self.name[3:] + overload      # Python's ``__ilshift__`` -> ``__lshift__``
        if self.is_out:
            return self.name
        return None

    @cached_property
    def positional(self) -> tuple:
        return tuple(a for a in self.arguments if not a.kwarg_only)

    @cached_property
    def kwarg_only(self) -> tuple:
        return tuple(a for a in self.arguments if a.kwarg_only)

    def argument(self, name: str) -> Argument:
        for a in self.arguments:
            if a.name == name:
                return a
        raise KeyError(name)

    def __str__(self):
        parts = []
        star = False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        if self.returns_tuple or len(self.returns) != 1:
            rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
        else:
            rets = str(self.returns[0])
        return f"{self.qualified_name}({', '.join(parts)}) -> {rets}"


_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)?"
_HEAD = re.compile(rf"\s*({_NAME})(?:\.([A-Za-z0-9_]+))?\s*\((.*)\)\s*->\s*(.+?)\s*$", re.S)
_TYPE = re.compile(
    r"\s*([A-Za-z_][A-Za-z0-9_]*)"          # base type
    r"(\(\s*([^()!>-]+?)\s*(!?)\s*(?:->\s*([^()]+?))?\s*\))?"  # alias annotation
    r"((?:\s*(?:\?|\[\s*\d*\s*\]))*)"        # optional / list suffixes (PyTorch's parser
)                                          # reads tokens: ``int? []`` is ``int?[]``)
# An alias set: any identifier (``a``, ``A``, ``a1``) or the wildcard ``*``.
_ALIAS_SETS = re.compile(r"\s*(?:[A-Za-z_]\w*|\*)\s*(?:\|\s*(?:[A-Za-z_]\w*|\*)\s*)*")


_KNOWN_TYPES = frozenset({
    "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Device",
    "Layout", "MemoryFormat", "Generator", "Storage", "Dimname", "Any", "complex", "Stream",
})


class _At(ValueError):
    """A parse error at ``offset`` (characters into the text being parsed) of ``token``;
    ``parse_schema`` turns it into a ValueError showing the whole schema with a marker."""

    def __init__(self, message: str, offset: int, token: str):
        super().__init__(message)
        self.offset, self.token = offset, token

    def shifted(self, by: int) -> "_At":
        return _At(self.args[0], self.offset + by, self.token)


def _split_top(text: str) -> list:
    """Split on commas outside brackets and quotes: ``(part, offset)`` pairs, each part
    stripped and ``offset`` where it starts in ``text``. Raises ``_At`` for empty parts (a
    trailing comma) and unbalanced brackets or quotes."""
    parts, depth, start, quote, opened = [], 0, 0, None, []
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote, qpos = ch, i
        elif ch in "([":
            depth += 1
            opened.append(i)
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                raise _At("unbalanced bracket", i, ch)
            opened.pop()
        elif ch == "," and depth == 0:
            parts.append(_stripped(text, start, i))
            start = i + 1
    if quote:
        raise _At("unterminated quote", qpos, text[qpos:])
    if depth:
        raise _At("unbalanced bracket", opened[-1], text[opened[-1]])
    last = _stripped(text, start, len(text))
    if last[0] or parts:
        parts.append(last)
    for k, (part, offset) in enumerate(parts):
        if not part:
            comma = text.rfind(",", 0, offset + 1) if k else text.find(",")
            raise _At("empty element (stray comma)", comma, ",")
    return parts


def _stripped(text: str, start: int, end: int) -> tuple:
    piece = text[start:end]
    return piece.strip(), start + len(piece) - len(piece.lstrip())


def _parse_type(text: str):
    """``(type text, alias, rest after the type)`` of an argument or return. Raises ``_At``
    (offsets into ``text``)."""
    m = _TYPE.match(text)
    if not m:
        raise _At("cannot parse a type", 0, text.split()[0] if text.split() else text)
    base, ann, sets, bang, after, suffix = m.groups()
    if base not in _KNOWN_TYPES:
        raise _At(f"unknown type {base!r}", m.start(1), base)
    for group in (sets, after):
        if group and not _ALIAS_SETS.fullmatch(group):
            raise _At("bad alias annotation", m.start(2), ann)
    alias = None
    if ann:
        alias = AliasInfo(frozenset(s.strip() for s in sets.split("|")), bool(bang),
                          frozenset(s.strip() for s in after.split("|")) if after else frozenset())
    return base + re.sub(r"\s", "", suffix or ""), alias, text[m.end():].strip()


# Types whose defaults are written as bare names (``ScalarType dtype=float``).
_ENUM_TYPES = frozenset({"ScalarType", "Layout", "MemoryFormat"})
# Element types whose lists may have a list default (PyTorch: "lists are only supported for
# float, int and complex types"; bool lists are accepted too).
_LIST_DEFAULT_TYPES = frozenset({"int", "SymInt", "float", "complex", "bool"})


def _check_default(type_str: str, default: str):
    """Raise ValueError for a default PyTorch's schema parser rejects for ``type_str``: a
    non-list default of an unsized list (``int[] x=1``), a list default of a non-list or of
    an element type other than numbers (``int x=[1]``, ``Tensor[] x=[]``), a bare name that
    is no enum value (``int x=abc``, ``float x=inf``, ``Device d=cpu``), a leading ``+``, and
    anything but None for a Tensor."""
    base = re.match(r"[A-Za-z_]\w*", type_str).group(0)
    suffix = type_str[len(base):]
    optional = suffix.endswith("?")
    if default.startswith("["):
        ok = suffix.startswith("[") and base in _LIST_DEFAULT_TYPES
    elif suffix.endswith("[]") and not optional:
        ok = False
    elif default in ("None", "True", "False"):
        ok = default == "None" or base != "Tensor" or optional
    elif re.fullmatch(r"-?[A-Za-z_]\w*", default):
        ok = base in _ENUM_TYPES and not default.startswith("-")
    else:
        ok = not default.startswith("+") and (base != "Tensor" or optional)
    if not ok:
        raise ValueError(f"invalid default value {default!r} for a {type_str}")


def _parse_default(text):
    if text is None:
        return None
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_parse_default(t.strip()) for t in inner.split(",")] if inner else []
    if text.startswith(("'", '"')):
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text  # an enum name such as contiguous_format


# The words PyTorch's schema lexer reads as keywords, so never as names. Not all of Python's:
# ``from`` names an argument of ``uniform_``, and ``lambda``, ``try``, ``yield``, ``async``,
# ``await``, ``nonlocal``, ``except``, ``finally`` are names too.
_LEXER_KEYWORDS = frozenset({
    "and", "as", "assert", "break", "class", "continue", "def", "del", "elif", "else", "False",
    "for", "global", "if", "import", "in", "is", "None", "not", "or", "pass", "raise", "return",
    "True", "while", "with"})


def parse_schema(text: str) -> OpSchema:
    """Parse one schema string. Raises ValueError saying what does not parse and where: the
    column and the offending token, then the schema with the token marked (as PyTorch's
    parser marks it, ``~~~~ <--- HERE``)."""
    try:
        return _parse(text)
    except _At as e:
        col = max(0, min(e.offset, len(text)))
        token = e.token or " "
        raise ValueError(f"{e.args[0]} at column {col + 1} ({e.token!r}) in schema:\n"
                         f"{text}\n{' ' * col}{'~' * len(token)} <--- HERE") from None


def _parse(text: str) -> OpSchema:
    m = _HEAD.match(text)
    if not m:
        raise _head_error(text)
    name, overload, arg_text, ret_text = m.groups()
    for word, at in ((n, m.start(1) + name.find(n)) for n in name.split("::")):
        if word in _LEXER_KEYWORDS:
            raise _At("a keyword is no name (PyTorch's lexer reads it as the keyword)", at,
                      word)
    if overload in _LEXER_KEYWORDS:
        raise _At("a keyword is no overload name", m.start(2), overload)
    args = []
    kwarg_only = False
    base = m.start(3)
    try:
        arg_parts = _split_top(arg_text)
    except _At as e:
        raise e.shifted(base) from None
    for part, offset in arg_parts:
        at = base + offset
        if part == "*":
            kwarg_only = True
            continue
        arg = _ARGUMENTS.get((part, kwarg_only))
        if arg is None:
            arg = _parse_argument(part, at, kwarg_only)
            _ARGUMENTS[(part, kwarg_only)] = arg
        rest, default = arg.name, arg.default
        if (default is None and not kwarg_only and args and args[-1].default is not None
                and not args[-1].kwarg_only):
            raise _At(f"non-default argument {rest!r} follows a default argument",
                      at + _find_after_type(part, rest), rest)
        if any(a.name == rest for a in args):
            raise _At(f"duplicate argument name {rest!r}", at + _find_after_type(part, rest),
                      rest)
        args.append(arg)
    ret_base = m.start(4)
    ret_text = ret_text.strip()
    returns_tuple = ret_text.startswith("(")
    try:
        if returns_tuple:
            if not ret_text.endswith(")"):
                raise _At("unbalanced returns", 0, "(")
            ret_parts = [(p, o + 1) for p, o in _split_top(ret_text[1:-1])]
        else:
            ret_parts = [(ret_text, 0)]
    except _At as e:
        raise e.shifted(ret_base) from None
    returns = []
    for part, offset in ret_parts:
        ret = _RETURNS.get(part)
        if ret is None:
            ret = _RETURNS[part] = _parse_return(part, ret_base + offset)
        returns.append(ret)
    return OpSchema(name, overload or "", tuple(args), tuple(returns),
                    returns_tuple and len(returns) != 1 or (returns_tuple and not returns))


# Parsed arguments and returns by their text: the built-in schemas repeat a few hundred
# distinct pieces (``Tensor self``, ``*, Tensor(a!) out``...). The objects are immutable, so
# schemas share them.
_ARGUMENTS: dict = {}
_RETURNS: dict = {}


def _parse_argument(part: str, at: int, kwarg_only: bool) -> Argument:
    """One argument's text (not ``*``); raises ``_At`` (offsets into the schema, ``at`` being
    where ``part`` starts). The checks that need the other arguments stay in ``_parse``."""
    try:
        type_str, alias, rest = _parse_type(part)
    except _At as e:
        raise e.shifted(at) from None
    default = None
    if "=" in rest:
        rest, default = (s.strip() for s in rest.split("=", 1))
        if not default:
            raise _At("empty default", at + part.rfind("="), "=")
        try:
            _check_default(type_str, default)
        except ValueError as e:
            raise _At(str(e), at + part.rfind(default), default) from None
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rest) or rest in _LEXER_KEYWORDS:
        # PyTorch's lexer reads these (``as``, ``def``, ``None``) as keywords
        raise _At("bad argument name", at + _find_after_type(part, rest), rest)
    return Argument(rest, type_str, alias, default, kwarg_only)


def _parse_return(part: str, at: int) -> Return:
    try:
        type_str, alias, rest = _parse_type(part)
    except _At as e:
        raise e.shifted(at) from None
    if rest and (not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rest) or rest in _LEXER_KEYWORDS):
        raise _At("bad return", at + _find_after_type(part, rest), rest)
    return Return(type_str, alias, rest)


def _find_after_type(part: str, rest: str) -> int:
    """Where ``rest`` (what follows the type) starts in ``part``."""
    found = part.rfind(rest.split()[0] if rest.split() else rest)
    return found if found >= 0 else len(part)


def _head_error(text: str) -> _At:
    """Why ``text`` is not ``name[.overload](arguments) -> returns``, and where."""
    m = re.match(rf"\s*({_NAME})(?:\.([A-Za-z0-9_]+))?", text)
    if not m:
        return _At("expected an op name", len(text) - len(text.lstrip()),
                   text.strip()[:1] or text)
    after = m.end()
    if not text[after:].lstrip().startswith("("):
        rest = text[after:].strip()
        return _At("expected '(' after the op name", after + len(text[after:]) -
                   len(text[after:].lstrip()), rest[:1] or "")
    arrow = text.find("->", after)
    if arrow < 0:
        return _At("expected '->' and the returns", len(text), "")
    close = text.rfind(")", after, arrow)
    if close < 0:
        return _At("expected ')' before '->'", arrow, "->")
    return _At("expected the returns after '->'", arrow, "->")
