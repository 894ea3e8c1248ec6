"""Argument type checks of the public API: PyTorch's Python argument parser, run late.

Note [Argument types are checked on the failure path]
    PyTorch's parser checks every argument's type before an op runs. Doing that on every call
    would cost our hot paths a loop per call, so the public API does not check up front: a
    wrong-typed argument makes the implementation fail somewhere (an ``AttributeError`` in a
    kernel, a numpy ``ValueError``), and only then :func:`explain` binds the call to the
    implementation's signature, looks up the argument kinds in the op schemas of the same name
    (Tensor, Scalar, int, int[], bool, ScalarType, Tensor[]) and, when an argument has the
    wrong kind, raises PyTorch's TypeError instead ("add(): argument 'alpha' (position 2) must
    be Number, not str"). Failures happen before any write (rules run before fills, version
    bumps after kernels), so nothing is left changed. Values no kernel would reject (``None``
    for a Tensor, a float for an int) are refused where the implementation already branches
    on unusual values, with the same helpers (:func:`type_error`, :func:`check_int`, ...).
"""

from __future__ import annotations

import inspect

import numpy as np

from . import _dtype as dt
from .layout import layout as _layout_kind

__all__ = ["check_bool", "check_int", "check_number", "check_tensor", "explain", "type_error"]


def _name(value) -> str:
    return type(value).__name__


def type_error(fn: str, arg: str, expected: str, value, pos=None) -> TypeError:
    """PyTorch's parser error: "fn(): argument 'arg' (position pos) must be T, not U"."""
    where = f" (position {pos})" if pos is not None else ""
    return TypeError(f"{fn}(): argument '{arg}'{where} must be {expected}, not {_name(value)}")


# -- what each schema kind accepts (PyTorch's parser, slightly permissive) ----------------------
def _is_tensor(v) -> bool:
    return hasattr(v, "_storage") and hasattr(v, "_layout")


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float, complex, np.bool_, np.number)) or _is_tensor(v)


def _is_int(v) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return False
    return isinstance(v, (int, np.integer)) or _is_tensor(v)


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _ok_tensor(v):
    return _is_tensor(v) or (_is_number(v) and not isinstance(v, complex))


def _ok_int_list(v):
    if _is_int(v):
        return True
    return isinstance(v, (list, tuple)) and all(_is_int(x) for x in v)


def _ok_tensor_list(v):
    return isinstance(v, (list, tuple)) and all(_is_tensor(x) for x in v)


# base kind -> (accepts, PyTorch's name of the kind)
_KINDS = {
    "Tensor": (_ok_tensor, "Tensor"), "Scalar": (_is_number, "Number"),
    "float": (_is_number, "float"), "int": (_is_int, "int"), "SymInt": (_is_int, "int"),
    "bool": (_is_bool, "bool"), "ScalarType": (lambda v: isinstance(v, dt.dtype), "sk.dtype"),
    "Layout": (lambda v: isinstance(v, _layout_kind), "sk.layout"),
    "int[]": (_ok_int_list, "tuple of ints"), "Tensor[]": (_ok_tensor_list, "tuple of Tensors"),
}


def _anything(value) -> bool:
    return True


def _kind(type_text: str):
    """(accepts, name, optional) for a schema type, or None for kinds not checked here."""
    optional = type_text.endswith("?")
    base = type_text.rstrip("?").replace("SymInt", "int")
    if "[" in base:
        base = base[:base.index("[")] + "[]"
    found = _KINDS.get(base)
    return None if found is None else (found[0], found[1], optional)


# -- the checks used where an implementation already branches on an unusual value ---------------
def check_tensor(fn, arg, value, pos=None, optional=False):
    if not (_is_tensor(value) or (optional and value is None)):
        raise type_error(fn, arg, "Tensor", value, pos)


def check_number(fn, arg, value, pos=None):
    if not _is_number(value):
        raise type_error(fn, arg, "Number", value, pos)


def check_int(fn, arg, value, pos=None):
    if not _is_int(value):
        raise type_error(fn, arg, "int", value, pos)
    return value if value.__class__ is int else int(value)


def check_bool(fn, arg, value, pos=None):
    if not _is_bool(value):
        raise type_error(fn, arg, "bool", value, pos)


# -- the failure path: which argument had the wrong type? ---------------------------------------
def _first_bad(kinds, value):
    """(expected name, element index or None) when no kind accepts ``value``, else None."""
    names = []
    for accepts, name, optional in kinds:
        if (value is None and optional) or accepts(value):
            return None
        if name not in names:
            names.append(name)
    if isinstance(value, (list, tuple)) and any(n.startswith("tuple") for n in names):
        names = [n for n in names if n.startswith("tuple")]
        check = _is_tensor if names[0].endswith("Tensors") else _is_int
        for j, x in enumerate(value):
            if not check(x):
                return names[0], j
    return " or ".join(names), None


# Public functions that take the arguments of several ops (``split(x, [1, 2])`` is
# ``split_with_sizes``).
_ALSO = {"split": ("split_with_sizes",), "split_": ("split_with_sizes",)}


def _schema_kinds(name: str) -> dict:
    """argument name -> kinds over every overload of the op ``name`` (out= ones excepted);
    positions as ``"#i"`` -> [(schema name, kind), ...] for the positional arguments."""
    from .registry import _lookup
    packets = [_lookup(n) for n in (name, *_ALSO.get(name, ()))]
    kinds: dict = {}
    overloads = [op for packet in packets if packet is not None
                 for op in packet._overloads.values()]
    for op in overloads:
        if op.schema.is_out:
            continue
        for i, arg in enumerate(op.schema.arguments):
            kind = _kind(arg.type) or (_anything, arg.type, True)
            kinds.setdefault(arg.name, []).append(kind)
            if not arg.kwarg_only:
                kinds.setdefault(f"#{i}", []).append((arg.name, kind))
    return kinds


def explain(fn_name: str, impl, args, kwargs):
    """The TypeError PyTorch's parser raises for this call of the public ``fn_name``
    (implemented by ``impl``), or None when every argument has an accepted type."""
    try:
        kinds = _schema_kinds(fn_name)
        if not kinds:
            return None
        params = list(inspect.signature(impl).parameters.values())
        bound = inspect.signature(impl).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return None
    method = bool(params) and params[0].name == "self"
    for i, p in enumerate(params):
        if p.name not in bound:
            continue
        value = bound[p.name]
        if value is p.default:
            continue        # the implementation's own default (``dim=None``) is never wrong
        forms = (value,)
        if p.kind is p.VAR_POSITIONAL and len(value) == 1:
            # f(2, 3), f((2, 3)), f(dtype), meshgrid(t): one argument is the list itself or
            # its only element; it is wrong only if both readings are
            forms = (value[0], value)
        elif p.kind is p.VAR_KEYWORD:
            continue
        schema_name = "self" if i == 0 and p.name == "input" else p.name
        candidates, name = kinds.get(schema_name), p.name
        if candidates is None and p.kind is not p.KEYWORD_ONLY:
            by_position = kinds.get(f"#{i}")      # [(schema name, kind), ...]
            if by_position is not None:
                candidates = [kind for _, kind in by_position]
                # name it as the overload of the value's shape: tensor_split(x, [1, "a"])
                # reports ``indices`` (int[]), tensor_split(x, "a") ``sections`` (int)
                listy = isinstance(forms[0], (list, tuple))
                name = next((n for n, kind in by_position
                             if kind[1].startswith("tuple") == listy), by_position[0][0])
        if not candidates:
            continue
        bads = [_first_bad(candidates, form) for form in forms]
        if None in bads:
            continue
        value = forms[0]
        expected, element = bads[0]
        pos = None if p.kind is p.KEYWORD_ONLY else (i if method else i + 1)
        where = f" (position {pos})" if pos is not None else ""
        if element is not None:
            what = "Tensors" if expected.endswith("Tensors") else "ints"
            return TypeError(f"{fn_name}(): argument '{name}'{where} must be tuple of {what}, "
                             f"but found element of type {_name(value[element])} at pos "
                             f"{element}")
        return type_error(fn_name, name, expected, value, pos)
    return None
