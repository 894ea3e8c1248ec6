"""Pointwise ops: one rule per op (broadcasting, type promotion, TensorIterator's output layout,
PyTorch's argument checks) and a numpy compute; the ``name_`` and ``name.out`` overloads reuse
the rule. See Note [One rule per op].

Order of checks, as in PyTorch (TensorIterator, then the op's meta function, then the kernel's
dtype dispatch):

1. op-specific argument checks (``neg`` of bool, ``sub`` with bool, negative integer powers);
2. for in-place, no internal overlap (expanded ``self``); broadcasting ("The size of tensor a
   ..."), for in-place the output shape ("output with shape [2] doesn't match the broadcast
   shape [2, 2]"), then the cast of the result type to ``self``/``out`` ("result type Float
   can't be cast to the desired output type Long");
3. checks that need the common dtype (``alpha``), then dtypes the kernel does not implement
   (NotImplementedError ``"abs_cpu" not implemented for 'Bool'``);
4. the numpy compute: inputs are cast to the compute dtype (Python numbers are "wrapped
   numbers", converted with C's wrap-around like PyTorch's static_cast), the result is cast to
   the output. float16 expressions run in float32 and round once (PyTorch's ``opmath_t``).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import format_size
from ..registry import _lookup, ops, register_kernel, overload_of
from ..storage import CPU, META, round_to_bfloat16
from ..tensor import Tensor
from . import _pointwise_fns as fns
from ._gelu import gelu_into, gelu_reduced_into
from ._common import (Spec, check_no_internal_overlap, check_no_partial_overlap,
                      check_out_device_first, common_device, resize_out, type_name)
from ._iter_layout import alloc, contig, layout_of, layout_of_pairs
from ._loop_order import write_in_loop_order
from ._scalars import cpp_name, quiet, unquiet, wrap_scalar

__all__ = ["alloc", "pointwise_spec"]

_INTEGRAL = frozenset(d for d in dt.ALL_DTYPES if not d.is_floating_point)
_FLOATING = frozenset(d for d in dt.ALL_DTYPES if d.is_floating_point)
_BOOL = frozenset([dt.bool_])
_F32 = np.dtype(np.float32)
_BF16 = dt.bfloat16
_F16 = dt.float16
_INT64_LIMIT = 2 ** 63


# -- operands, layout, promotion -------------------------------------------------------------
# The layout of a wrapped number: a 0-d operand (no dims to order by).
_WRAPPED_NUMBER = ((), ())


def _split(args):
    """Tensor operands and Python-number operands ("wrapped numbers") of a pointwise call."""
    tensors, scalars = [], []
    for a in args:
        if isinstance(a, Tensor):
            tensors.append(a)
        elif a is not None:
            if not isinstance(a, (bool, int, float)):
                if isinstance(a, (np.bool_, np.number)):
                    a = a.item()
                else:
                    raise TypeError(f"expected a Tensor or a Python number, got "
                                    f"{type(a).__name__}")
            if type(a) is int and not -2 ** 63 <= a < 2 ** 64:
                raise OverflowError("int too big to convert" if a > 0 else
                                    "can't convert negative int to unsigned")
            scalars.append(a)
    return tensors, scalars


def _common_dtype(tensors, scalars):
    first = tensors[0]._dtype if tensors else None
    if not scalars:
        for t in tensors:
            if t._dtype is not first:
                break
        else:
            return first
    dims, zeros = [], []
    for t in tensors:
        (dims if t._layout.sizes else zeros).append(t._dtype)
    return dt.result_type(dims, zeros, scalars)


def _device(tensors):
    if len(tensors) == 1:
        return tensors[0]._storage.device
    dev = tensors[0]._storage.device
    for t in tensors:
        if t._storage.device is not dev:
            return common_device(tensors)
    return dev


class _Info:
    """How one pointwise op computes: ``kind`` picks the result dtype ("promote": result_type;
    "float": integral results become the default float; "bool": comparisons; "same": self's
    dtype), ``kname``/``unsupported`` give the NotImplementedError of PyTorch's dtype dispatch,
    ``check`` runs first, ``post`` once the common dtype is known, ``data_check`` (values,
    e.g. integer division by zero) before an out= tensor is resized, ``fn(out, *operands,
    **kw)`` computes, ``opmath``: float16 runs in float32, ``fast``: the no-kwargs fast path
    applies. ``out_check``: how an out= dtype is checked: "cast" (result castable to it),
    "found" (equal: "Found dtype Long but expected Float"), "autogen" (equal, PyTorch's
    generated out= wrapper: "Expected out tensor to have dtype float, ..." and a contiguous
    resize), or a callable ``(result dtype, out dtype, *args)`` raising the op's own error
    when the dtypes differ. ``wrapped``: whether a Python number in a Tensor position is an
    operand of PyTorch's TensorIterator (a wrapped 0-d tensor, as for ``add``/``eq``: it then
    skips the iterator's fast setup, see ``_iter_layout.layout_of``) or a parameter of a
    Scalar overload (``pow.Tensor_Scalar``); ``_register`` replaces it by those positions.
    ``bfloat16_fn``: computes bfloat16 results instead of ``fn`` when PyTorch's kernel rounds
    intermediate results to bfloat16 (``fn`` sees float32 arrays and rounds once), or takes
    another path for it; ``float16_fn`` likewise for float16.
    ``exact_numbers``: a bfloat16 computation uses a wrapped number's exact value (PyTorch's
    ``mul``/``div`` kernels read ``original_scalar_value``); otherwise the number, and
    ``alpha``, are first rounded to bfloat16, as TensorIterator casts them."""

    __slots__ = ("bfloat16_fn", "cast_name", "check", "data_check", "exact_numbers", "fast",
                 "float16_fn", "fn", "kind", "kname", "name", "opmath", "out_check", "post", "unsupported",
                 "wrapped")

    def __init__(self, name, kind, fn, kname=None, unsupported=frozenset(), check=None,
                 post=None, opmath=False, cast_name=type_name, out_check=None,
                 data_check=None, fast=True, wrapped=True, bfloat16_fn=None,
                 float16_fn=None, exact_numbers=False):
        self.wrapped, self.bfloat16_fn, self.float16_fn = wrapped, bfloat16_fn, float16_fn
        self.exact_numbers = exact_numbers
        self.name, self.kind, self.fn = name, kind, fn
        self.kname, self.unsupported = kname or f"{name}_cpu", unsupported
        self.check, self.post, self.opmath = check, post, opmath
        # clamp's Scalar overloads word their dtype errors differently.
        self.cast_name = cast_name
        self.out_check = out_check or ("found" if kind == "same" else "cast")
        self.data_check, self.fast = data_check, fast


def pointwise_spec(info, args, kwargs):
    """(sizes, strides, common dtype, result dtype, device) of a pointwise call."""
    tensors, scalars = _split(args)
    device = _device(tensors)
    common = _common_dtype(tensors, scalars)
    kind = info.kind
    if kind.__class__ is not str:
        kind = kind(kwargs)
    if kind == "promote":
        out = common
    elif kind == "float":
        if not common.is_floating_point:
            common = dt.get_default_dtype()
        out = common
    elif kind == "bool":
        out = dt.bool_
    else:
        out = common = tensors[0]._dtype
    wrapped = False
    if scalars:
        for i in info.wrapped:
            if i < len(args) and args[i] is not None and not isinstance(args[i], Tensor):
                wrapped = True
                break
    sizes, strides = layout_of(tensors, common if kind != "same" else None, wrapped=wrapped)
    return sizes, strides, common, out, device


def _dispatch_check(info, common, args, kwargs):
    if info.post is not None:
        info.post(common, *args, **kwargs)
    if common in info.unsupported:
        kname = info.kname if isinstance(info.kname, str) else info.kname(*args, **kwargs)
        raise NotImplementedError(f'"{kname}" not implemented for \'{type_name(common)}\'')


def _make_rule(info):
    check = info.check

    def rule(*args, **kwargs):
        if check is not None:
            check(*args, **kwargs)
        sizes, strides, common, out, device = pointwise_spec(info, args, kwargs)
        if info.post is not None or common in info.unsupported:
            _dispatch_check(info, common, args, kwargs)
        return Spec(sizes, strides, out, device, common)

    return rule


# -- allocation and the numpy fill ----------------------------------------------------------
def _make_fill(info):
    opmath = info.opmath

    def fill(outs, spec, *args, **kwargs):
        fn = info.fn
        common = spec.compute or spec.dtype
        # ``mul``/``div`` read a Python number given as ``other`` at its exact value in
        # bfloat16 and float16 (PyTorch's ``iter.is_scalar(2)``: ``original_scalar_value``);
        # one given first, and any for other ops, is cast to the dtype like an operand
        exact = info.exact_numbers and len(args) > 1 and not isinstance(args[1], Tensor)
        rounds_numbers = common is dt.bfloat16 and not exact
        if common is dt.bfloat16:
            if info.bfloat16_fn is not None:
                fn = info.bfloat16_fn
            alpha = kwargs.get("alpha")
            if rounds_numbers and alpha is not None and alpha.__class__ is not bool:
                kwargs = {**kwargs, "alpha": float(round_to_bfloat16(alpha))}
        elif common is dt.float16 and info.float16_fn is not None:
            fn = info.float16_fn
        cn = common.numpy
        if common is dt.float16 and (opmath or exact):
            cn = _F32                   # float32 arithmetic, rounded once
        operands = []
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                arr = a._array()
                if arr.dtype != cn:
                    arr = arr.astype(cn)
                operands.append(arr)
            elif a is None:
                operands.append(None)
            elif exact and i == 1:
                operands.append(wrap_scalar(a, cn))
            elif common is dt.bfloat16:
                operands.append(float(round_to_bfloat16(a)))
            else:
                operands.append(wrap_scalar(a, common.numpy))
        out = outs[0]
        natural = _F32 if (cn is _F32 and spec.dtype is dt.float16) else spec.dtype.numpy
        target = out if out.dtype == natural else np.empty(out.shape, natural)
        if cn.kind == "f":
            token = quiet()
            try:
                fn(target, *operands, **kwargs)
            finally:
                unquiet(token)
        else:
            fn(target, *operands, **kwargs)
        if target is not out:
            np.copyto(out, target, casting="unsafe")

    return fill


def _fast_dtypes(info) -> frozenset:
    """dtypes for which a call on tensors of that one dtype (or a float tensor and a Python
    number), without keyword arguments, passes every check and computes in that dtype."""
    ok = _FLOATING if info.kind == "float" else frozenset(dt.ALL_DTYPES)
    ok = ok - info.unsupported
    if not info.fast:
        return frozenset()
    if info.check is not None or info.post is not None:
        ok = ok - _BOOL
    if info.opmath:
        ok = ok - {dt.float16}
    if info.bfloat16_fn is not None:
        ok = ok - {dt.bfloat16}
    if info.float16_fn is not None:
        ok = ok - {dt.float16}
    return ok if info.kind.__class__ is str else frozenset()


def _fast_operands(args, d, sizes, target):
    """The numpy operands of an in-place fast-path call on ``target``, or None when the call
    needs the full rule (also when an operand other than ``target`` itself shares its storage:
    the full path checks for partial overlap)."""
    arrays = []
    for a in args:
        if isinstance(a, Tensor):
            la = a._layout
            if (a._dtype is not d or la.sizes != sizes or a._storage.device is not CPU
                    or (a._storage is target._storage and a is not target)):
                return None
            arrays.append(a._array())
        elif d.is_floating_point and d is not _BF16 and (a.__class__ is float or (
                a.__class__ is int and -_INT64_LIMIT <= a < _INT64_LIMIT)):
            arrays.append(a)
        else:
            return None
    return arrays


def _register(op, info):
    """cpu + meta kernels of the functional op, its in-place ``name_`` and ``out=`` overloads."""
    op = overload_of(op)  # packet: the overload it calls
    if info.wrapped is True:
        info.wrapped = tuple(i for i, a in enumerate(op.schema.arguments) if a.is_tensor)
    elif info.wrapped is False:
        info.wrapped = ()
    wrapped_other = 1 in info.wrapped
    rule = _make_rule(info)
    fill = _make_fill(info)
    fast = _fast_dtypes(info)
    fn = info.fn
    ufunc = getattr(fn, "ufunc", None)
    out_bool = info.kind == "bool"

    def cpu_kernel(*args, **kwargs):
        a = args[0]
        if not kwargs and len(args) <= 2 and isinstance(a, Tensor):
            # Fast path: cpu operands of one dtype in ``fast`` (and Python numbers on float
            # tensors). Such calls pass every check but broadcasting, so the rule reduces
            # to TensorIterator's output layout (memoised); numpy broadcasts the same way.
            d = a._dtype
            la = a._layout
            if d in fast and a._storage.device is CPU:
                arrays = None
                if len(args) == 1:
                    arrays = (a._array(),)
                    lb = la
                else:
                    b = args[1]
                    if isinstance(b, Tensor):
                        if b._dtype is d and b._storage.device is CPU:
                            arrays = (a._array(), b._array())
                            lb = b._layout
                    elif d.is_floating_point and (b.__class__ is float or (
                            b.__class__ is int and -_INT64_LIMIT <= b < _INT64_LIMIT)) and (
                            d is not _BF16 or info.exact_numbers) and (
                            d is not _F16 or not info.exact_numbers):
                        arrays = (a._array(), b)
                        lb = None if wrapped_other else la
                if arrays is not None:
                    sizes = la.sizes
                    strides = contig(sizes)
                    if lb is None:
                        # A wrapped number: a 0-d operand, so no fast setup. Only a contiguous
                        # ``a`` with no size-0 dim certainly keeps contiguous strides.
                        if la.strides != strides or 0 in sizes:
                            sizes, strides = layout_of_pairs(((sizes, la.strides),
                                                              _WRAPPED_NUMBER))
                    elif la.strides != strides or lb.sizes != sizes or lb.strides != strides:
                        sizes, strides = layout_of_pairs(((sizes, la.strides),
                                                           (lb.sizes, lb.strides)))
                    out = alloc(sizes, strides, dt.bool_ if out_bool else d, CPU)
                    if d.is_floating_point:
                        token = quiet()
                        try:
                            if ufunc is not None:
                                ufunc(*arrays, out=out._np)
                            else:
                                fn(out._np, *arrays)
                        finally:
                            unquiet(token)
                    else:
                        fn(out._np, *arrays)
                    return out
        spec = rule(*args, **kwargs)
        out = alloc(spec.sizes, spec.strides, spec.dtype, spec.device)
        if spec.device is not META:
            fill([out._np], spec, *args, **kwargs)
        return out

    def meta_kernel(*args, **kwargs):
        spec = rule(*args, **kwargs)
        return alloc(spec.sizes, spec.strides, spec.dtype, spec.device)

    register_kernel(op, "cpu")(cpu_kernel)
    register_kernel(op, "meta")(meta_kernel)
    op.rule, op.fill, op.info = rule, fill, info

    inplace = _lookup(op.name + "_")
    inplace = inplace._overloads.get(op.overload) if inplace is not None else None
    if inplace is not None:
        _register_inplace(inplace, info, fill, fast if not out_bool else frozenset())
    for overload in op._overloads.values():
        if overload.is_out and overload.functional_variant is op:
            _register_out(overload, info, fill)


def _chunk_fill(fill, spec, kwargs):
    """``fill`` as ``write_in_loop_order``'s compute: one wave of elements, as a 1-D result."""
    def compute(result, args):
        fill([result], spec._replace(sizes=result.shape, strides=(1,)), *args, **kwargs)
    return compute


def _register_inplace(op_, info, fill, fast):
    check = info.check
    fn = info.fn
    ufunc = getattr(fn, "ufunc", None)

    def kernel(self, *args, **kwargs):
        d = self._dtype
        if not kwargs and d in fast:
            sizes = self._layout.sizes
            if self._layout.strides == contig(sizes) and self._storage.device is CPU:
                arrays = _fast_operands(args, d, sizes, self)
                if arrays is not None:
                    target = self._array()
                    if d.is_floating_point:
                        token = quiet()
                        try:
                            if ufunc is not None:
                                ufunc(target, *arrays, out=target)
                            else:
                                fn(target, target, *arrays)
                        finally:
                            unquiet(token)
                    else:
                        fn(target, target, *arrays)
                    return self
        if check is not None:
            check(self, *args, **kwargs)
        check_no_internal_overlap(self)
        check_no_partial_overlap(self, args)
        sizes, strides, common, out, device = pointwise_spec(info, (self,) + args, kwargs)
        if sizes != self._layout.sizes:
            raise RuntimeError(f"output with shape {format_size(self._layout.sizes)} doesn't "
                               f"match the broadcast shape {format_size(sizes)}")
        if out is not self._dtype and not dt.can_cast(out, self._dtype):
            raise RuntimeError(f"result type {type_name(out)} can't be cast to the desired "
                               f"output type {info.cast_name(self._dtype)}")
        if info.post is not None or common in info.unsupported:
            _dispatch_check(info, common, (self,) + args, kwargs)
        if self._storage.device is not META:
            spec = Spec(sizes, strides, out, device, common)
            if not write_in_loop_order(self, (self,) + args, _chunk_fill(fill, spec, kwargs)):
                fill([self._array()], spec, self, *args, **kwargs)
        return self

    register_kernel(op_, "cpu")(kernel)
    register_kernel(op_, "meta")(kernel)


def _register_out(op_out, info, fill):
    op_out = overload_of(op_out)  # packet: the overload it calls
    check = info.check

    def kernel(*args, out, **kwargs):
        check_out_device_first(args[0], out)
        check_no_partial_overlap(out, args)
        if check is not None:
            check(*args, **kwargs)
        sizes, strides, common, res, device = pointwise_spec(info, args, kwargs)
        kind = info.out_check
        if kind == "autogen":
            strides = contig(sizes)
        spec = Spec(sizes, strides, res, device, common)
        if res is not out._dtype:
            if kind.__class__ is not str:  # the op's own message
                kind(res, out._dtype, *args)
            if kind == "found":
                raise RuntimeError(f"Found dtype {type_name(out._dtype)} but expected "
                                   f"{type_name(res)}")
            if kind == "autogen":
                raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(res)}, but "
                                   f"got {cpp_name(out._dtype)} instead")
            if not dt.can_cast(res, out._dtype):
                raise RuntimeError(f"result type {type_name(res)} can't be cast to the desired "
                                   f"output type {type_name(out._dtype)}")
        if info.post is not None or common in info.unsupported:
            _dispatch_check(info, common, args, kwargs)
        if info.data_check is not None and device is not META and 0 not in spec.sizes:
            # (values are checked as the kernel computes them: none for an empty result)
            info.data_check(common, *args, **kwargs)
        resize_out(out, spec, op_out.name)
        check_no_internal_overlap(out)
        if out._storage.device is not META and not write_in_loop_order(
                out, args, _chunk_fill(fill, spec, kwargs)):
            fill([out._array()], spec, *args, **kwargs)
        return out

    register_kernel(op_out, "cpu")(kernel)
    register_kernel(op_out, "meta")(kernel)


# -- the table -------------------------------------------------------------------------------
_NOT_BOOL, _NOT_FLOAT, _FLOAT_ONLY = _BOOL, _FLOATING, _INTEGRAL

_INFOS = {
    ops.abs: _Info("abs", "same", fns.uf(np.absolute), unsupported=_NOT_BOOL),
    ops.neg: _Info("neg", "same", fns.uf(np.negative), check=fns.check_neg),
    ops.exp: _Info("exp", "float", fns.uf(np.exp)),
    ops.log: _Info("log", "float", fns.uf(np.log)),
    ops.log1p: _Info("log1p", "float", fns.uf(np.log1p)),
    ops.sqrt: _Info("sqrt", "float", fns.uf(np.sqrt)),
    ops.rsqrt: _Info("rsqrt", "float", fns.rsqrt, opmath=True),
    ops.sin: _Info("sin", "float", fns.uf(np.sin)),
    ops.cos: _Info("cos", "float", fns.uf(np.cos)),
    ops.tanh: _Info("tanh", "float", fns.uf(np.tanh)),
    ops.sigmoid: _Info("sigmoid", "float", fns.sigmoid, opmath=True),
    ops.relu: _Info("relu", "same", fns.relu, check=fns.check_relu, out_check="autogen",
                    bfloat16_fn=fns.relu_bfloat16),
    ops.reciprocal: _Info("reciprocal", "float", fns.uf(np.reciprocal)),
    ops.sign: _Info("sign", "same", fns.sign),
    ops.floor: _Info("floor", "same", fns.integral_identity(np.floor), "floor_vml_cpu",
                     _NOT_BOOL),
    ops.ceil: _Info("ceil", "same", fns.integral_identity(np.ceil), "ceil_vml_cpu", _NOT_BOOL),
    ops.round: _Info("round", "same", fns.integral_identity(np.rint), "round_vml_cpu",
                     _NOT_BOOL),
    ops.logical_not: _Info("logical_not", "bool", fns.uf(np.logical_not)),
    ops.bitwise_not: _Info("bitwise_not", "same", fns.uf(np.invert), unsupported=_NOT_FLOAT),
    ops.erf: _Info("erf", "float", fns.expr(fns.erf), opmath=True),
    ops.gelu: _Info("gelu", "same", gelu_into, "GeluKernelImpl", _FLOAT_ONLY,
                    fns.check_gelu, opmath=True, bfloat16_fn=gelu_reduced_into,
                    float16_fn=gelu_reduced_into),
    ops.silu: _Info("silu", "same", fns.silu, unsupported=_FLOAT_ONLY, opmath=True),
    ops.clamp: _Info("clamp", "promote", fns.clamp, fns.clamp_kname, _NOT_BOOL,
                     fns.check_clamp, fns.post_clamp, cast_name=cpp_name, out_check="found",
                     fast=False, bfloat16_fn=fns.clamp_bfloat16),
    ops.clamp.Tensor: _Info("clamp", "promote", fns.clamp, check=fns.check_clamp,
                            bfloat16_fn=fns.clamp_bfloat16,
                            post=fns.post_clamp_tensor, fast=False),
    ops.add: _Info("add", "promote", fns.add, post=fns.post_alpha),
    ops.sub: _Info("sub", "promote", fns.sub, check=fns.check_sub, post=fns.post_alpha),
    ops.mul: _Info("mul", "promote", fns.uf(np.multiply), exact_numbers=True),
    ops.div: _Info("div", "float", fns.uf(np.true_divide), exact_numbers=True),
    ops.div.Tensor_mode: _Info("div", fns.div_mode_kind, fns.div_mode, fns.div_mode_kname,
                               _NOT_BOOL, fns.check_div_mode, opmath=True, exact_numbers=True,
                               data_check=fns.int_zero_data_check),
    ops.remainder: _Info("remainder", "promote", fns.remainder, unsupported=_NOT_BOOL,
                         bfloat16_fn=fns.remainder_bfloat16,
                         opmath=True, data_check=fns.int_zero_data_check),
    ops.pow: _Info("pow", "promote", fns.pow, check=fns.check_pow, post=fns.post_pow,
                   opmath=True, wrapped=False),   # numbers: pow's Scalar overloads (unary)
    ops.maximum: _Info("maximum", "promote", fns.uf(np.maximum)),
    ops.minimum: _Info("minimum", "promote", fns.uf(np.minimum)),
    ops.eq: _Info("eq", "bool", fns.uf(np.equal)),
    ops.ne: _Info("ne", "bool", fns.uf(np.not_equal)),
    ops.lt: _Info("lt", "bool", fns.uf(np.less)),
    ops.le: _Info("le", "bool", fns.uf(np.less_equal)),
    ops.gt: _Info("gt", "bool", fns.uf(np.greater)),
    ops.ge: _Info("ge", "bool", fns.uf(np.greater_equal)),
    ops.logical_and: _Info("logical_and", "bool", fns.uf(np.logical_and)),
    ops.logical_or: _Info("logical_or", "bool", fns.uf(np.logical_or)),
    ops.bitwise_and: _Info("bitwise_and", "promote", fns.uf(np.bitwise_and),
                           unsupported=_NOT_FLOAT),
    ops.bitwise_or: _Info("bitwise_or", "promote", fns.uf(np.bitwise_or),
                          unsupported=_NOT_FLOAT),
    ops.bitwise_xor: _Info("bitwise_xor", "promote", fns.uf(np.bitwise_xor),
                           unsupported=_NOT_FLOAT),
}

for _op, _info in _INFOS.items():
    _register(_op, _info)

def register_autogen_out(op_out, functional):
    """The ``out=`` kernels (cpu and meta) of an op whose ``out=`` PyTorch generates ("run the
    functional op, then copy into ``out``": ``__lshift__.Scalar_out``, ``rsub.Scalar_out``,
    ``remainder.Scalar_Tensor_out``...), from ``functional``'s ``rule`` and ``fill``: the
    functional op's errors first, then "Expected out tensor to have dtype long int, but got int
    instead", then the device; a resized ``out`` is contiguous. (PyTorch resizes ``out`` before
    the dtype check; here no error leaves ``out`` changed.)"""
    op_out, functional = overload_of(op_out), overload_of(functional)

    def kernel(*args, out, **kwargs):
        spec = functional.rule(*args, **kwargs)
        if out._dtype is not spec.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(spec.dtype)}, but "
                               f"got {cpp_name(out._dtype)} instead")
        if out._storage.device is not spec.device:
            raise RuntimeError(f"Expected out tensor to have device {spec.device.type}, but "
                               f"got {out._storage.device.type} instead")
        resize_out(out, Spec(spec.sizes, contig(spec.sizes), spec.dtype, spec.device),
                   op_out.name)
        if out._storage.device is not META:
            functional.fill([out._array()], spec, *args, **kwargs)
        return out

    register_kernel(op_out, "cpu")(kernel)
    register_kernel(op_out, "meta")(kernel)


# where and masked_fill register on import (they reuse this module's helpers).
from . import where as _where  # noqa: F401
