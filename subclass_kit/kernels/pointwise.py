"""Pointwise ops: one rule (broadcasting, type promotion, TensorIterator output layout) and a
numpy fill per op; in-place and out= overloads derive from the functional op
(see ``_common.register_inplace`` / ``register_out``). See Note [One rule per op].

Promotion follows PyTorch's ``result_type`` (``_dtype.result_type``); ops that always produce a
float ("float" kind: true division, exp, sin, ...) turn integral results into the default dtype.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from ..layout import broadcast_shapes, contiguous_strides
from ..registry import ops
from ..tensor import Tensor
from ._common import (Spec, common_device, elementwise_strides, register_inplace, register_out,
                      register_rule, type_name)

_CONTIG = {}


def _contig(sizes):
    s = _CONTIG.get(sizes)
    if s is None:
        s = _CONTIG[sizes] = contiguous_strides(sizes)
    return s


def _operands(args):
    tensors, scalars = [], []
    for a in args:
        if isinstance(a, Tensor):
            tensors.append(a)
        elif a is not None:
            if not isinstance(a, (bool, int, float)):
                raise TypeError(f"expected a Tensor or a Python number, got {type(a).__name__}")
            scalars.append(a)
    return tensors, scalars


def _promote(tensors, scalars):
    first = tensors[0]._dtype
    if not scalars and all(t._dtype is first for t in tensors):
        return first
    dims, zeros = [], []
    for t in tensors:
        (dims if t._layout.sizes else zeros).append(t._dtype)
    return dt.result_type(dims, zeros, scalars)


def _broadcast_spec(tensors):
    """Output sizes and strides of a pointwise op over ``tensors``."""
    first = tensors[0]._layout
    sizes = first.sizes
    same = True
    for t in tensors:
        if t._layout.sizes != sizes:
            same = False
            break
    if not same:
        sizes = broadcast_shapes(*(t._layout.sizes for t in tensors))
    contig = _contig(sizes)
    if same and all(t._layout.strides == contig for t in tensors):
        return sizes, contig
    return sizes, elementwise_strides(sizes, [(t._layout.sizes, t._layout.strides)
                                              for t in tensors])


def _make_rule(kind):
    """kind: 'promote' (result_type), 'float' (integral -> default float), 'bool' (comparison:
    computes in the promoted dtype, returns bool), 'same' (self's dtype)."""

    def rule(*args, **kwargs):
        tensors, scalars = _operands(args)
        sizes, strides = _broadcast_spec(tensors)
        device = common_device(tensors) if len(tensors) > 1 else tensors[0]._storage.device
        if kind == "same":
            return Spec(sizes, strides, tensors[0]._dtype, device)
        common = _promote(tensors, scalars)
        if kind == "promote":
            return Spec(sizes, strides, common, device)
        if kind == "float":
            out = common if common.is_floating_point else dt.get_default_dtype()
            return Spec(sizes, strides, out, device)
        return Spec(sizes, strides, dt.bool_, device, common)

    return rule


def _arrays(args):
    return [a._array() if isinstance(a, Tensor) else a for a in args]


def _ufunc_fill(ufunc):
    def fill(outs, spec, *args, **kwargs):
        compute = (spec.compute or spec.dtype).numpy
        with np.errstate(all="ignore"):
            ufunc(*_arrays(args), out=outs[0], dtype=compute, casting="unsafe")
    return fill


def _expr_fill(fn):
    """A fill computed by a numpy expression ``fn(*arrays, dtype)`` then cast into the output."""
    def fill(outs, spec, *args, **kwargs):
        compute = (spec.compute or spec.dtype).numpy
        arrays = [np.asarray(a, dtype=compute) if not isinstance(a, str) else a
                  for a in _arrays(args)]
        with np.errstate(all="ignore"):
            res = fn(*arrays, **kwargs)
        np.copyto(outs[0], res, casting="unsafe")
    return fill


def _erf(x):
    # Numerical Recipes' erfc Chebyshev fit (fractional error < 1.2e-7): numpy has no erf.
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(x.dtype, copy=False)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + np.tanh(k * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _int_div_check(a, b):
    if isinstance(b, np.ndarray) and b.dtype.kind in "iub":
        if (b == 0).any():
            raise RuntimeError("ZeroDivisionError")
    elif isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b == 0:
        raise RuntimeError("ZeroDivisionError")


def _div_mode(a, b, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(a, b)
    if a.dtype.kind in "iub":
        _int_div_check(a, b)
    if rounding_mode == "trunc":
        if a.dtype.kind in "iu":
            q = np.floor_divide(a, b)
            fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
            return q + fix
        return np.trunc(np.true_divide(a, b))
    if rounding_mode == "floor":
        if a.dtype.kind in "iu":
            return np.floor_divide(a, b)
        return np.floor(np.true_divide(a, b))
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                       f"found '{rounding_mode}'")


def _remainder(a, b):
    if a.dtype.kind in "iu":
        _int_div_check(a, b)
    return np.remainder(a, b)


def _pow(a, b):
    if a.dtype.kind in "iu" and np.any(np.asarray(b) < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return np.power(a, b)


def _round(x):
    return np.round(x) if x.dtype.kind == "f" else x


def _add(a, b, alpha=1):
    return a + b * alpha if alpha != 1 else a + b


def _sub(a, b, alpha=1):
    return a - b * alpha if alpha != 1 else a - b


def _clamp(x, lo=None, hi=None):
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


def _relu(x):
    return np.maximum(x, 0) if x.dtype.kind != "b" else x


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _silu(x):
    return x / (1.0 + np.exp(-x))


# op -> (kind, fill)
_TABLE = {
    ops.abs: ("same", _ufunc_fill(np.absolute)),
    ops.neg: ("same", _ufunc_fill(np.negative)),
    ops.exp: ("float", _ufunc_fill(np.exp)),
    ops.log: ("float", _ufunc_fill(np.log)),
    ops.log1p: ("float", _ufunc_fill(np.log1p)),
    ops.sqrt: ("float", _ufunc_fill(np.sqrt)),
    ops.rsqrt: ("float", _expr_fill(_rsqrt)),
    ops.sin: ("float", _ufunc_fill(np.sin)),
    ops.cos: ("float", _ufunc_fill(np.cos)),
    ops.tanh: ("float", _ufunc_fill(np.tanh)),
    ops.sigmoid: ("float", _expr_fill(_sigmoid)),
    ops.relu: ("same", _expr_fill(_relu)),
    ops.reciprocal: ("float", _ufunc_fill(np.reciprocal)),
    ops.sign: ("same", _ufunc_fill(np.sign)),
    ops.floor: ("same", _expr_fill(lambda x: np.floor(x) if x.dtype.kind == "f" else x)),
    ops.ceil: ("same", _expr_fill(lambda x: np.ceil(x) if x.dtype.kind == "f" else x)),
    ops.round: ("same", _expr_fill(_round)),
    ops.logical_not: ("same", None),
    ops.bitwise_not: ("same", _ufunc_fill(np.invert)),
    ops.erf: ("float", _expr_fill(_erf)),
    ops.gelu: ("float", _expr_fill(_gelu)),
    ops.silu: ("float", _expr_fill(_silu)),
    ops.clamp: ("promote", _expr_fill(_clamp)),
    ops.add: ("promote", _expr_fill(_add)),
    ops.sub: ("promote", _expr_fill(_sub)),
    ops.mul: ("promote", _ufunc_fill(np.multiply)),
    ops.div: ("float", _ufunc_fill(np.true_divide)),
    ops.div.Tensor_mode: ("promote", _expr_fill(_div_mode)),
    ops.remainder: ("promote", _expr_fill(_remainder)),
    ops.pow: ("promote", _expr_fill(_pow)),
    ops.maximum: ("promote", _ufunc_fill(np.maximum)),
    ops.minimum: ("promote", _ufunc_fill(np.minimum)),
    ops.eq: ("bool", _ufunc_fill(np.equal)),
    ops.ne: ("bool", _ufunc_fill(np.not_equal)),
    ops.lt: ("bool", _ufunc_fill(np.less)),
    ops.le: ("bool", _ufunc_fill(np.less_equal)),
    ops.gt: ("bool", _ufunc_fill(np.greater)),
    ops.ge: ("bool", _ufunc_fill(np.greater_equal)),
    ops.logical_and: ("bool", _ufunc_fill(np.logical_and)),
    ops.logical_or: ("bool", _ufunc_fill(np.logical_or)),
    ops.bitwise_and: ("promote", _ufunc_fill(np.bitwise_and)),
    ops.bitwise_or: ("promote", _ufunc_fill(np.bitwise_or)),
    ops.bitwise_xor: ("promote", _ufunc_fill(np.bitwise_xor)),
}


def _fast_add_fill(outs, spec, a, b, alpha=1):
    compute = spec.dtype.numpy
    a = a._array() if isinstance(a, Tensor) else a
    b = b._array() if isinstance(b, Tensor) else b
    if alpha != 1:
        b = np.multiply(b, alpha, dtype=compute, casting="unsafe")
    np.add(a, b, out=outs[0], dtype=compute, casting="unsafe")


def _fast_sub_fill(outs, spec, a, b, alpha=1):
    compute = spec.dtype.numpy
    a = a._array() if isinstance(a, Tensor) else a
    b = b._array() if isinstance(b, Tensor) else b
    if alpha != 1:
        b = np.multiply(b, alpha, dtype=compute, casting="unsafe")
    np.subtract(a, b, out=outs[0], dtype=compute, casting="unsafe")


_TABLE[ops.add] = ("promote", _fast_add_fill)
_TABLE[ops.sub] = ("promote", _fast_sub_fill)


def _logical_not_rule(self):
    sizes, strides = _broadcast_spec([self])
    return Spec(sizes, strides, dt.bool_, self._storage.device)


def _logical_not_fill(outs, spec, self):
    np.logical_not(self._array(), out=outs[0])


def _checked(op, rule):
    """Argument checks PyTorch makes before computing, wrapped around the generic rule."""
    name = op.name

    def checked_rule(*args, **kwargs):
        spec = rule(*args, **kwargs)
        if name == "neg" and args[0]._dtype is dt.bool_:
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        if name == "sub" and spec.dtype is dt.bool_:
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead.")
        if name == "bitwise_not" and spec.dtype.is_floating_point:
            raise RuntimeError('"bitwise_not_cpu" not implemented for '
                               f"'{type_name(spec.dtype)}'")
        if name in ("bitwise_and", "bitwise_or", "bitwise_xor") and spec.dtype.is_floating_point:
            raise RuntimeError(f'"{name}_cpu" not implemented for '
                               f"'{type_name(spec.dtype)}'")
        if name in ("add", "sub"):
            alpha = kwargs.get("alpha", 1)
            if (isinstance(alpha, float) and not spec.dtype.is_floating_point):
                raise RuntimeError("For integral input tensors, argument alpha must not be a "
                                   "floating point number.")
        return spec

    return checked_rule


def _register_all():
    for op, (kind, fill) in _TABLE.items():
        rule = _make_rule(kind)
        if op is ops.logical_not:
            rule, fill = _logical_not_rule, _logical_not_fill
        if op.name in ("neg", "sub", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
                       "add"):
            rule = _checked(op, rule)
        register_rule(op, rule, fill)
        for overload in op._overloads.values():
            if overload.is_out and overload.functional_variant is op:
                register_out(overload, op)
        inplace = _inplace_of(op)
        if inplace is not None:
            register_inplace(inplace, op)


def _inplace_of(op):
    from ..registry import _lookup
    packet = _lookup(op.name + "_")
    if packet is None:
        return None
    return packet._overloads.get(op.overload)


def _where_rule(condition, self, other):
    if isinstance(condition, Tensor) and condition._dtype is not dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {type_name(condition._dtype)}")
    tensors, scalars = _operands((self, other))
    all_t = [condition] + tensors
    sizes, strides = _broadcast_spec(all_t)
    device = common_device(all_t)
    if not tensors:
        out = dt.result_type((), (), scalars)
    else:
        out = _promote(tensors, scalars)
    return Spec(sizes, strides, out, device)


def _where_fill(outs, spec, condition, self, other):
    a, b = _arrays((self, other))
    np.copyto(outs[0], np.where(condition._array(), a, b), casting="unsafe")


def _masked_fill_rule(self, mask, value):
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{type_name(mask._dtype)}")
    if isinstance(value, Tensor) and value._layout.sizes:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {len(value._layout.sizes)} dimension(s).")
    sizes = broadcast_shapes(self._layout.sizes, mask._layout.sizes)
    if sizes != self._layout.sizes:
        raise RuntimeError(f"output with shape {list(self._layout.sizes)} doesn't match the "
                           f"broadcast shape {list(sizes)}".replace("[", "[").replace("]", "]"))
    strides = elementwise_strides(sizes, [(self._layout.sizes, self._layout.strides)])
    return Spec(sizes, strides, self._dtype, common_device([self, mask]))


def _masked_fill_fill(outs, spec, self, mask, value):
    if isinstance(value, Tensor):
        value = value.item()
    out = outs[0]
    if out is not self._array() or True:
        np.copyto(out, self._array())
    np.copyto(out, np.asarray(value).astype(out.dtype) if not isinstance(value, bool)
              else value, where=np.broadcast_to(mask._array(), out.shape), casting="unsafe")


_register_all()
register_rule(ops.where, _where_rule, _where_fill)
register_out(ops.where.self_out, ops.where)
register_rule(ops.masked_fill, _masked_fill_rule, _masked_fill_fill)
register_out(ops.masked_fill.Scalar_out, ops.masked_fill)
register_inplace(ops.masked_fill_, ops.masked_fill)
