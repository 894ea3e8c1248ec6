"""Calling a custom op: the function level, then PyTorch's argument parsing.

A custom op (``sk.library.define``) is its own public API: there is no ``sk.*`` function in
front of it, so the op object takes the function level's part too. ``CustomOp.__call__`` is
what PyTorch's ``torch.ops.<ns>.<op>`` does:

1. ``__torch_function__``: function modes, then ``__tensor_function__`` of subclass arguments
   (``handle_function``), with the arguments as the caller wrote them;
2. ``createStackForSchema``: bind the arguments to the schema and convert each one to its
   schema type, raising RuntimeError "Expected a value of type 'int' for argument 'k' but
   instead found type 'float'" for a value of the wrong type (``float`` takes ints and becomes
   a float, ``int[2]`` takes one int and becomes ``[k, k]``, a ``Device`` takes a string...);
3. the dispatcher, as for every op (``OpOverload.__call__``).

Built-in ops keep ``OpOverload.__call__`` (no conversion: their public API has already built
well-typed arguments), so none of this costs anything on their hot path.

Where PyTorch's conversions reinterpret a value instead of rejecting it, we reject it with the
same message (docs/differences.md, "Custom ops: argument types"): a float or a numpy float for
an ``int`` (PyTorch truncates ``2.5`` to ``2``), a dtype for an ``int`` or a ``Scalar``
(PyTorch passes its enum number), an int for a ``ScalarType``, ``None`` for a ``bool`` (PyTorch
passes False) and a Tensor for a ``Tensor?[]`` (PyTorch passes its rows).
"""

from __future__ import annotations

import operator
import re

import numpy as np

from . import _dtype
from ._state import flags, tls
from .dispatch import _run_below
from .function import FUNCTION_TYPES, _function_types, handle_function
from .registry import OpOverload
from .storage import device
from .tensor import Tensor, channels_last, contiguous_format, preserve_format

__all__ = ["CustomOp"]


class CustomOp(OpOverload):
    """An op made by ``sk.library.define``: an ``OpOverload`` whose call also takes part in the
    function level and parses its arguments against the schema (module docstring)."""

    def __init__(self, schema, namespace: str = ""):
        super().__init__(schema, namespace)
        # Its kernel may call other ops, so it runs "below" the version/view layer (Note
        # [Version counters]) and never takes the plain-kernel shortcut.
        self._custom = True
        self._plain = False
        self._converters = tuple(_converter(a.type) for a in schema.arguments)
        self._defaults = tuple(self._default_of(i, a) for i, a in enumerate(schema.arguments))
        self._return_converters = tuple((_converter(r.type)[0], r.type) for r in schema.returns)
        self._conv = tuple(c for c, _ in self._converters)

    def __call__(self, /, *args, **kwargs):
        if (flags.interceptors and tls.function_modes) or kwargs:
            if (flags.interceptors and tls.function_modes) or _function_types(args, kwargs):
                return handle_function(self, self._parse_and_dispatch, args, kwargs)
        else:
            for a in args:      # the check of public_api, inline
                t = type(a)
                if t in FUNCTION_TYPES or ((t is list or t is tuple)
                                           and _function_types((a,), None)):
                    return handle_function(self, self._parse_and_dispatch, args, kwargs)
        return self._parse_and_dispatch(*args, **kwargs)

    def _parse_and_dispatch(self, /, *args, **kwargs):
        n = len(args)
        if kwargs or n > self._max_pos or not self._arity_ok[n]:
            args, kwargs = self._parse(args, kwargs)
        else:
            # all arguments positional, none missing: convert each (errors by _parse)
            try:
                args = tuple([conv(v) for conv, v in zip(self._conv, args)])
            except _Mismatch:
                args, kwargs = self._parse(args, kwargs)
        return OpOverload.__call__(self, *args, **kwargs)

    def _parse(self, args, kwargs):
        """The canonical ``(args, kwargs)`` of a call, every value converted to its schema type
        (PyTorch's ``createStackForSchema``, in its order: arity, then each positional, then the
        rest of the schema in order, each from a keyword, a default or missing, then unknown
        keywords). Defaults fill only gaps before a later positional given by keyword (the
        form ``OpOverload._bind`` gives). Raises RuntimeError."""
        arguments = self.schema.arguments
        if len(args) + len(kwargs) > len(arguments) or len(args) > self._max_pos:
            self._bind(args, kwargs)            # raises PyTorch's arity error
        convert = self._convert
        positional = [convert(i, v) for i, v in enumerate(args)]
        bound_kwargs = {}
        skipped = []
        consumed = 0
        for i in range(len(args), len(arguments)):
            a = arguments[i]
            if a.name in kwargs:
                consumed += 1
                value = convert(i, kwargs[a.name])
                if a.kwarg_only:
                    bound_kwargs[a.name] = value
                    continue
                positional.extend(self._default(j) for j in skipped)
                skipped.clear()
                positional.append(value)
            elif a.default is None:
                self._bind(args, kwargs)        # raises "is missing value for argument"
            elif not a.kwarg_only:
                skipped.append(i)
        if consumed != len(kwargs):
            raise RuntimeError(self._keyword_error(kwargs))
        return tuple(positional), bound_kwargs

    # -- the kernel and its returns ------------------------------------------------------------
    def _resolve_kernel(self, args, kwargs):
        """Run the kernel below the version/view layer (``_run_below``: one bump per mutated
        argument, view tracking of annotated returns), its result checked against the
        schema's returns first."""
        return _run_below(self, self._run_kernel, args, kwargs)

    def _run_kernel(self, *args, **kwargs):
        try:
            kernel = self._kernels[args[self._device_arg]._storage.device.type]
        except (AttributeError, IndexError, TypeError, KeyError):
            kernel = self._find_kernel(args, kwargs)
        return self._check_returns(kernel(*args, **kwargs))

    def _check_returns(self, res):
        """What the kernel returned, as PyTorch hands it on: ``None`` for ``-> ()``, a tuple for
        several returns, a list for ``Tensor[]``, numbers converted (``-> float`` gives a
        float). Raises RuntimeError (TypeError when several returns are not a sequence) for a
        result that does not fit, as PyTorch does."""
        returns = self._return_converters
        if not returns:
            if res is not None:
                raise RuntimeError(f"Expected the kernel of {self.name} to return None but it "
                                   "returned something else instead.")
            return None
        if len(returns) == 1:
            return _convert_return(returns[0], res)
        if not isinstance(res, (tuple, list)):
            raise TypeError(f"Object of type '{type(res).__name__}' is not an instance of "
                            "'sequence'")
        if len(res) != len(returns):
            raise RuntimeError(f"Expected the kernel of {self.name} to return {len(returns)} "
                               f"values ({self.schema}) but it returned {len(res)}.")
        return tuple(_convert_return(r, v) for r, v in zip(returns, res))

    # -- arguments ------------------------------------------------------------------------------
    def _convert(self, i, value):
        conv, type_name = self._converters[i]
        try:
            return conv(value)
        except _Mismatch:
            pass
        raise RuntimeError(
            f"{self!r}() Expected a value of type '{type_name}' for argument "
            f"'{self.schema.arguments[i].name}' but instead found type "
            f"'{type(value).__name__}'.\nPosition: {i}\nValue: {value!r}\n"
            f"Declaration: {self.schema}")

    def _default(self, i):
        value = self._defaults[i]
        return list(value) if isinstance(value, list) else value

    def _default_of(self, i, arg):
        """The default as the kernel gets it: converted like an argument (``float k=1`` gives
        1.0, ``int[2] s=1`` gives ``[1, 1]``, ``ScalarType dt=float`` gives ``sk.float32``).
        A default that does not convert is kept as written (PyTorch's parser accepts
        ``int k=1.5``)."""
        if arg.default is None:
            return None
        value = arg.default_value
        if isinstance(value, str) and arg.base_type in _ENUM_DEFAULTS:
            value = _ENUM_DEFAULTS[arg.base_type].get(value, value)
        try:
            return self._converters[i][0](value)
        except (_Mismatch, RuntimeError):
            return value


def _convert_return(converter, value):
    conv, type_text = converter
    try:
        return conv(value)
    except _Mismatch:
        pass
    raise RuntimeError(f"Unable to cast {value!r} to {type_text}")


class _Mismatch(Exception):
    """A value that does not convert to a schema type (reported by ``CustomOp._convert``)."""


# -- converters per schema type ----------------------------------------------------------------
# Each takes a value and returns it converted to what a kernel gets, or raises _Mismatch.
# Python's bool is an int and numpy's float64 a float, so the type tests follow PyTorch's.

def _tensor(v):
    if v is None or isinstance(v, Tensor):      # None: PyTorch's undefined tensor
        return v
    raise _Mismatch


def _tensor_element(v):
    if isinstance(v, Tensor):
        return v
    raise _Mismatch


def _one_element(v: Tensor, integral: bool):
    if v.numel() != 1 or (integral and v.dtype.is_floating_point):
        raise _Mismatch
    return v.item()


def _int(v):
    if isinstance(v, Tensor):
        return int(_one_element(v, integral=True))
    if isinstance(v, (float, complex, str)):
        raise _Mismatch
    try:
        return operator.index(v)            # int, bool, numpy integers
    except TypeError:
        raise _Mismatch from None


def _float(v):
    if isinstance(v, Tensor):
        return float(_one_element(v, integral=False))
    if isinstance(v, (int, float, np.integer, np.floating, np.bool_)):
        return float(v)
    raise _Mismatch


def _bool(v):
    if isinstance(v, Tensor):
        return bool(_one_element(v, integral=False))
    if isinstance(v, (int, float, complex, np.integer, np.floating, np.bool_)):
        return bool(v)
    raise _Mismatch


def _number(v):
    t = type(v)
    if t is int or t is float or t is bool or t is complex:
        return v
    # Subclasses (numpy's float64 is a float) become the Python number, as in PyTorch; other
    # numpy scalars are no Python numbers, and PyTorch rejects them too.
    for kind in (bool, int, float, complex):
        if isinstance(v, kind):
            return kind(v)
    raise _Mismatch


def _str(v):
    if isinstance(v, str):
        return v
    raise _Mismatch


def _scalar_type(v):
    if isinstance(v, _dtype.dtype):
        return v
    raise _Mismatch


def _device(v):
    if isinstance(v, device):
        return v
    if isinstance(v, str):
        return device(v)            # RuntimeError for an unknown device string, as PyTorch
    raise _Mismatch


def _unchecked(v):
    return v


# base type -> (converter, PyTorch's name of the type in messages)
_BASE = {
    "Tensor": (_tensor, "Tensor"), "int": (_int, "int"), "SymInt": (_int, "int"),
    "float": (_float, "float"), "bool": (_bool, "bool"), "str": (_str, "str"),
    "Scalar": (_number, "number"), "complex": (_number, "complex"),
    "ScalarType": (_scalar_type, "ScalarType"), "Device": (_device, "Device"),
}
# Enum defaults written by name in schema text.
_ENUM_DEFAULTS = {
    "ScalarType": {"float": _dtype.float32, "double": _dtype.float64, "half": _dtype.float16,
                   "bfloat16": _dtype.bfloat16,
                   "long": _dtype.int64, "int": _dtype.int32, "short": _dtype.int16,
                   "char": _dtype.int8, "byte": _dtype.uint8, "bool": _dtype.bool_},
    "MemoryFormat": {"contiguous_format": contiguous_format, "channels_last": channels_last,
                     "preserve_format": preserve_format},
}


def _optional(conv):
    def optional(v):
        return None if v is None else conv(v)
    return optional


def _list(conv, size, broadcast):
    def as_list(v):
        if isinstance(v, (list, tuple)):        # sk.Size too
            return [conv(x) for x in v]
        if size is not None and broadcast and isinstance(v, int):
            return [conv(v)] * size             # int[2] k=3 -> [3, 3]
        raise _Mismatch
    return as_list


def _converter(type_text: str):
    """``(converter, type name)`` for a schema type such as ``"int[2]?"`` or ``"Tensor?[]"``."""
    base, suffix = re.fullmatch(r"([A-Za-z_]\w*)(.*)", type_text).groups()
    conv, name = _BASE.get(base, (_unchecked, base))
    if base == "Tensor" and suffix.startswith("["):
        conv = _tensor_element          # list elements are tensors, never None
    for part in re.findall(r"\?|\[\d*\]", suffix):
        if part == "?":
            conv, name = _optional(conv), f"Optional[{name}]"
        else:
            size = int(part[1:-1]) if len(part) > 2 else None
            conv = _list(conv, size, base in ("int", "SymInt"))
            name = f"List[{name}]"
    return conv, name
