"""Pointwise math: ``sk.add``/``Tensor.add`` and friends, their in-place (``add_``) and
``out=`` forms, and the Python operators (``+ - * / // % ** & | ^ ~`` and comparisons).

Python numbers take part as PyTorch's "wrapped numbers" (lowest promotion priority): the kernels
accept them in tensor positions, so ``1.5 - int_tensor`` is float32 like ``int_tensor - 1.5``.
As in PyTorch's argument parser, only some functions accept a number where a tensor is expected
(``sk.add(2, t)``, ``sk.pow(2, t)``, ``sk.remainder(2, t)``); the others raise TypeError
("maximum(): argument 'other' (position 2) must be Tensor, not int").

Example::

    >>> x = sk.tensor([1, 2, 3])
    >>> (x / 2).dtype, (x // 2).tolist(), (x + 1.5).dtype
    (sk.float32, [0, 1, 1], sk.float32)
"""

from __future__ import annotations

import builtins

from .. import _dtype as dt
from .._argcheck import check_tensor, type_error
from ..function import op_method, public_api
from ..registry import _lookup, ops, overload_of
from ..tensor import Tensor

__all__ = []

_NUMBER = (bool, int, float)


def _need_tensor(fname, argname, pos, value):
    if not isinstance(value, Tensor):
        raise type_error(fname, argname, "Tensor", value, pos)


def _as_tensor(value):
    """A Python number where PyTorch's parser makes a tensor of it (``sk.add(2, 3)``)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, _NUMBER):
        return ops.scalar_tensor.default(value, dtype=dt.scalar_dtype(value) if not isinstance(
            value, float) else dt.get_default_dtype())
    raise TypeError(f"expected a Tensor or a number, got {type(value).__name__}")


def _out_overload(op):
    for ov in op._overloads.values():
        if ov.is_out and ov.functional_variant is op:
            return ov
    return None


def _export(name, fn, method=True, op=None, scalar_op=None):
    """Install ``fn`` as ``sk.<name>`` (and ``Tensor.<name>``). ``op``: ``fn(self, *args)`` is
    exactly ``op(self, *args)`` for tensor/number positional arguments (``scalar_op(self,
    *args)`` when the first of ``args`` is a Python number), so the method may take
    ``op_method``'s direct path to the kernel."""
    if op is not None and method:
        public = op_method(op, fn, name, scalar_op=scalar_op)
    else:
        public = public_api(fn)
        public.__name__ = public.__qualname__ = name
    if method:
        setattr(Tensor, name, public)
    globals()[name] = public
    __all__.append(name)
    return public


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or Python numbers)
    computes in (PyTorch's ``torch.result_type``): dimensioned tensors, then 0-d tensors, then
    numbers, a lower group counting only when its category (bool < int < float) is higher."""
    dims, zeros, scalars = [], [], []
    for a in (tensor1, tensor2):
        if isinstance(a, Tensor):
            (dims if a._layout.sizes else zeros).append(a._dtype)
        elif isinstance(a, _NUMBER):
            scalars.append(a)
        else:
            raise TypeError(f"result_type(): argument must be a Tensor or a Number, got "
                            f"{type(a).__name__}")
    return dt.result_type(dims, zeros, scalars)


__all__.append("result_type")


# -- unary -----------------------------------------------------------------------------------
def _unary(name):
    op = overload_of(_lookup(name))
    out_op = _out_overload(op)
    packet = _lookup(name + "_")
    inplace = packet._overloads.get(op.overload) if packet is not None else None

    def fn(input, *, out=None):
        _need_tensor(name, "input", 1, input)
        if out is None:
            return op(input)
        return out_op(input, out=out)

    fn.__doc__ = (f"Elementwise ``{name}`` (PyTorch's ``torch.{name}``): same dtype rules, "
                  "``out=`` writes into ``out`` (resized if needed), errors as PyTorch's.")
    _export(name, fn)
    if inplace is not None:
        def fn_(self):
            return inplace(self)
        fn_.__doc__ = f"In-place ``{name}``: writes into ``self`` (its dtype must hold the result)."
        _export(name + "_", fn_)


for _name in ("abs", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
              "sigmoid", "relu", "reciprocal", "sign", "floor", "ceil", "logical_not",
              "bitwise_not", "erf", "silu"):
    _unary(_name)
Tensor.negative = Tensor.neg
Tensor.negative_ = Tensor.neg_
Tensor.absolute = Tensor.abs
Tensor.absolute_ = Tensor.abs_


def _check_round_decimals(input, decimals):
    # PyTorch's round.decimals kernel has no integral or bool variant, even for decimals=0
    # (round.default returns integers unchanged): the kernel name says which one refused.
    if not input.dtype.is_floating_point:
        from ..kernels._common import type_name
        kernel = "round_vml_cpu" if decimals == 0 else "round_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{type_name(input.dtype)}'")


def round(input, *, decimals=None, out=None):
    """Round half to even (``torch.round``); ``decimals`` scales by ``10**decimals`` first.

    Raises NotImplementedError when ``decimals`` is given for an integer or bool tensor
    (PyTorch's ``round.decimals`` is floating-point only: '"round_cpu" not implemented for
    'Long''), on meta too; without ``decimals`` integers are returned unchanged.
    """
    _need_tensor("round", "input", 1, input)
    if decimals is not None:
        _check_round_decimals(input, decimals)
    if decimals:
        scale = 10.0 ** builtins.abs(decimals)
        # PyTorch scales, rounds and unscales float16 and bfloat16 in float32 (its opmath
        # type), rounding to the input dtype once at the end.
        x = (ops._to_copy.default(input, dtype=dt.float32)
             if input.dtype in (dt.float16, dt.bfloat16) else input)
        if decimals > 0:
            res = ops.div.Tensor(ops.round.default(ops.mul.Tensor(x, scale)), scale)
        else:
            res = ops.mul.Tensor(ops.round.default(ops.div.Tensor(x, scale)), scale)
        if x is not input:
            res = ops._to_copy.default(res, dtype=input.dtype)
        return res if out is None else ops.copy_.default(out, res)
    return ops.round.default(input) if out is None else ops.round.out(input, out=out)


def round_(self, *, decimals=None):
    """In-place ``round``; raises what :func:`round` raises."""
    if decimals is not None:
        _check_round_decimals(self, decimals)
    if decimals:
        return ops.copy_.default(self, round(self, decimals=decimals))
    return ops.round_.default(self)


_export("round", round)
_export("round_", round_)


def gelu(input, approximate="none"):
    """Gaussian error linear unit (``torch.nn.functional.gelu``); ``approximate`` is "none"
    (exact, with erf) or "tanh". Floating dtypes only (NotImplementedError otherwise)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if approximate == "none":
        return ops.gelu.default(input)
    return ops.gelu.default(input, approximate=approximate)


_export("gelu", gelu, method=False)


# -- binary ----------------------------------------------------------------------------------
def _binary(name, numbers_first=False, numbers_second=True):
    """``numbers_first``/``numbers_second``: whether a Python number is accepted there."""
    op = overload_of(_lookup(name))
    out_op = _out_overload(op)
    packet = _lookup(name + "_")
    # (``floor_divide``'s in-place overload is ``floor_divide_.Tensor``)
    inplace = (packet._overloads.get(op.overload) or packet._overloads.get("Tensor")
               if packet is not None else None)

    number_other, number_self = (_scalar_overload(op, n) for n in _SCALAR.get(name, ((), ())))

    def fn(input, other, *, out=None):
        if not numbers_first:
            if name in _COMPARISONS and not isinstance(input, Tensor):
                raise TypeError(_COMPARE_COMBO.format(name, type(input).__name__,
                                                      type(other).__name__))
            _need_tensor(name, "input", 1, input)
        elif not isinstance(input, Tensor) and not isinstance(other, Tensor):
            input = _as_tensor(input)
        if not numbers_second:
            _need_tensor(name, "other", 2, other)
        elif other is None:
            raise type_error(name, "other", "Tensor", other, 2)
        functional, with_out = op, out_op
        if number_other and other.__class__ in _NUMBER and isinstance(input, Tensor):
            functional, with_out = number_other
        elif number_self and input.__class__ in _NUMBER:
            functional, with_out = number_self
        if out is None:
            return functional(input, other)
        return with_out(input, other, out=out)

    fn.__doc__ = (f"Elementwise ``{name}`` with broadcasting and PyTorch's type promotion "
                  f"(``torch.{name}``); ``out=`` writes into ``out``.")
    _export(name, fn)
    if inplace is not None:
        inplace_number = packet._overloads.get("Scalar") if number_other else None

        def fn_(self, other):
            if not numbers_second:
                _need_tensor(name + "_", "other", 1, other)
            elif other is None:     # (op_method's slow path: not a number)
                raise type_error(name + "_", "other", "Tensor", other, 1)
            if inplace_number is not None and other.__class__ in _NUMBER:
                return inplace_number(self, other)
            return inplace(self, other)
        fn_.__doc__ = f"In-place ``{name}``: the result is cast to ``self``'s dtype if allowed."
        _export(name + "_", fn_, op=inplace if numbers_second else None,
                scalar_op=inplace_number)


# The Scalar overloads PyTorch's Python API picks for a Python number: name -> (overload for a
# number ``other``, for a number ``self``); ``()`` where there is none (``mul``: ``mul.Tensor``).
_SCALAR = {**{n: (("Scalar",), ()) for n in ("eq", "ne", "lt", "le", "gt", "ge", "fmod")},
           **{n: (("Scalar",), ("Scalar_Tensor",))
              for n in ("remainder", "bitwise_and", "bitwise_or", "bitwise_xor")}}


def _scalar_overload(op, names):
    """``(functional, out=)`` overloads of ``op``'s packet named ``names[0]`` (and
    ``names[0] + "_out"``), or None for ``()``."""
    if not names:
        return None
    overloads = op.overloadpacket._overloads
    return overloads[names[0]], overloads[names[0] + "_out"]


_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_COMPARE_COMBO = (
    "{}() received an invalid combination of arguments - got ({}, {}), but expected one of:\n"
    " * (Tensor input, Tensor other, *, Tensor out = None)\n"
    " * (Tensor input, Number other, *, Tensor out = None)\n")
for _name in _COMPARISONS:
    _binary(_name)
for _name in ("maximum", "minimum", "logical_and", "logical_or"):
    _binary(_name, numbers_second=False)
for _name in ("mul", "bitwise_and", "bitwise_or", "bitwise_xor", "remainder", "floor_divide"):
    _binary(_name, numbers_first=True)
Tensor.multiply = Tensor.mul
Tensor.multiply_ = Tensor.mul_
Tensor.greater, Tensor.greater_equal = Tensor.gt, Tensor.ge
Tensor.less, Tensor.less_equal, Tensor.not_equal = Tensor.lt, Tensor.le, Tensor.ne
Tensor.max_elementwise = Tensor.maximum


def _add_like(name):
    op = overload_of(_lookup(name))
    out_op = _out_overload(op)
    inplace = overload_of(_lookup(name + "_"))

    def fn(input, other, *, alpha=1, out=None):
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            input = _as_tensor(input)
        if out is not None:
            return out_op(input, other, alpha=alpha, out=out)
        if alpha == 1 and alpha.__class__ is int:
            return op(input, other)
        return op(input, other, alpha=alpha)

    def fn_(self, other, *, alpha=1):
        if alpha == 1 and alpha.__class__ is int:
            return inplace(self, other)
        return inplace(self, other, alpha=alpha)

    sign = "+" if name == "add" else "-"
    fn.__doc__ = (f"``input {sign} alpha * other`` with broadcasting and PyTorch's type "
                  "promotion. Raises RuntimeError for a float ``alpha`` with integral inputs "
                  "and (``sub``) for bool operands.")
    fn_.__doc__ = f"In-place ``self {sign}= alpha * other``."
    _export(name, fn)
    _export(name + "_", fn_, op=inplace)


_add_like("add")
_add_like("sub")
Tensor.subtract = Tensor.sub
Tensor.subtract_ = Tensor.sub_


# ``rounding_mode`` not given: PyTorch's argument parser picks ``div.Tensor``; given, even as
# None, ``div.Tensor_mode`` (its node is DivBackward2, and modes see that overload)
_NO_MODE = object()


def div(input, other, *, rounding_mode=_NO_MODE, out=None):
    """True division (integer inputs give the default float dtype), or ``rounding_mode``
    "trunc" / "floor" (integers stay integers; integer division by zero raises RuntimeError
    "ZeroDivisionError")."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = _as_tensor(input)
    if rounding_mode is _NO_MODE:
        if out is not None:
            return ops.div.out(input, other, out=out)
        return ops.div.Tensor(input, other)
    if out is not None:
        return ops.div.out_mode(input, other, rounding_mode=rounding_mode, out=out)
    return ops.div.Tensor_mode(input, other, rounding_mode=rounding_mode)


def div_(self, other, *, rounding_mode=_NO_MODE):
    """In-place ``div``; integer ``self`` needs a rounding mode (the result must fit)."""
    if rounding_mode is _NO_MODE:
        return ops.div_.Tensor(self, other)
    return ops.div_.Tensor_mode(self, other, rounding_mode=rounding_mode)


_export("div", div)
_export("div_", div_)
Tensor.divide = Tensor.true_divide = Tensor.div
Tensor.divide_ = Tensor.true_divide_ = Tensor.div_
divide = true_divide = div
__all__ += ["divide", "true_divide"]


def pow(input, exponent, *, out=None):
    """``input ** exponent``; either may be a number. Integer tensors to negative integer
    (Python) powers raise RuntimeError, negative tensor exponents give 0 / +-1 like PyTorch."""
    if not isinstance(input, Tensor):
        _need_tensor("pow", "exponent", 2, exponent)
        if out is not None:
            return ops.pow.Scalar_out(input, exponent, out=out)
        return ops.pow.Scalar(input, exponent)
    if exponent.__class__ in _NUMBER:
        if out is not None:
            return ops.pow.Tensor_Scalar_out(input, exponent, out=out)
        return ops.pow.Tensor_Scalar(input, exponent)
    if out is not None:
        return ops.pow.Tensor_Tensor_out(input, exponent, out=out)
    return ops.pow.Tensor_Tensor(input, exponent)


def pow_(self, exponent):
    """In-place ``pow``."""
    if exponent.__class__ in _NUMBER:
        return ops.pow_.Scalar(self, exponent)
    return ops.pow_.Tensor_Tensor(self, exponent)


_export("pow", pow, op=ops.pow.Tensor_Tensor, scalar_op=ops.pow.Tensor_Scalar)
_export("pow_", pow_, op=ops.pow_.Tensor_Tensor, scalar_op=ops.pow_.Scalar)


_CLAMP_COMBO = (
    "clamp() received an invalid combination of arguments - got ({}), but expected one of:\n"
    " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
    " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")


def _clamp_op(input, min, max):
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    if tensors and (isinstance(min, _NUMBER) or isinstance(max, _NUMBER)):
        names = ", ".join(type(a).__name__ for a in (input, min, max) if a is not None)
        raise TypeError(_CLAMP_COMBO.format(names))
    return ops.clamp.Tensor if tensors else ops.clamp.default


def clamp(input, min=None, max=None, *, out=None):
    """Clamp into ``[min, max]`` (numbers or tensors; either may be None, not both:
    RuntimeError). ``min > max`` gives ``max``; NaN propagates."""
    op = _clamp_op(input, min, max)
    if out is not None:
        return op._overloads[op.overload + "_out" if op.overload != "default" else "out"](
            input, min, max, out=out)
    return op(input, min, max)


def clamp_(self, min=None, max=None):
    """In-place ``clamp``."""
    op = _clamp_op(self, min, max)
    return ops.clamp_._overloads[op.overload](self, min, max)


_export("clamp", clamp)
_export("clamp_", clamp_)
Tensor.clip, Tensor.clip_ = Tensor.clamp, Tensor.clamp_
clip = clamp
__all__.append("clip")


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` else ``other``, broadcasting all three (numbers allowed
    for ``input``/``other``). ``where(condition)`` is ``nonzero(condition, as_tuple=True)``."""
    if input is None or other is None:
        if input is None and other is None:
            return tuple(ops.unbind.int(ops.nonzero.default(condition), 1))
        for pos, name, value in ((2, "input", input), (3, "other", other)):
            check_tensor("where", name, value, pos)
    if out is not None:
        # PyTorch's argument parser: the out= overload takes tensors only
        for pos, name, value in ((2, "input", input), (3, "other", other)):
            if not isinstance(value, Tensor):
                raise TypeError(f"where(): argument '{name}' (position {pos}) must be Tensor, "
                                f"not {type(value).__name__}")
        return ops.where.self_out(condition, input, other, out=out)
    return _where(condition, input, other)


def _where(condition, input, other):
    """``where.self`` of three tensors: a number becomes one as PyTorch's ``where.ScalarSelf``
    / ``ScalarOther`` / ``Scalar`` make it, ``scalar_tensor(number, dtype=, device=)`` in the
    result type (``other`` made first), the tensor argument converted to it (``_to_copy``),
    both on the tensor's device (the condition's for two numbers)."""
    num_in, num_other = _is_number(input), _is_number(other)
    if not (num_in or num_other) or not isinstance(condition, Tensor):
        return ops.where.self(condition, input, other)
    if num_in and num_other:
        d, device = result_type(input, other), condition.device
        other = ops.scalar_tensor.default(other, dtype=d, device=device)
        input = ops.scalar_tensor.default(input, dtype=d, device=device)
    elif num_other:
        if isinstance(input, Tensor):
            d = result_type(input, other)
            other = ops.scalar_tensor.default(other, dtype=d, device=input.device)
            if input.dtype is not d:
                input = ops._to_copy.default(input, dtype=d)
    elif isinstance(other, Tensor):
        d = result_type(other, input)
        input = ops.scalar_tensor.default(input, dtype=d, device=other.device)
        if other.dtype is not d:
            other = ops._to_copy.default(other, dtype=d)
    return ops.where.self(condition, input, other)


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float, complex)) and not isinstance(v, Tensor)


def _where_method(self, condition, other):
    if other is None:
        check_tensor("where", "other", other, 2)
    return _where(condition, self, other)


_export("where", where, method=False)
Tensor.where = public_api(_where_method)
Tensor.where.__name__ = Tensor.where.__qualname__ = "where"


def masked_fill(input, mask, value):
    """A copy of ``input`` (broadcast with ``mask``) with ``value`` where ``mask`` is True.
    ``value`` is a number or 0-d tensor that must fit ``input``'s dtype."""
    if isinstance(value, Tensor):
        return ops.masked_fill.Tensor(input, mask, value)
    return ops.masked_fill.Scalar(input, mask, value)


def masked_fill_(self, mask, value):
    """In-place ``masked_fill``; ``mask`` must broadcast to ``self``'s shape."""
    if isinstance(value, Tensor):
        return ops.masked_fill_.Tensor(self, mask, value)
    return ops.masked_fill_.Scalar(self, mask, value)


_export("masked_fill", masked_fill)
_export("masked_fill_", masked_fill_)


def zero_(self):
    """Fill with zeros in place."""
    return ops.zero_.default(self)


def fill_(self, value):
    """Fill with ``value`` (a number or 0-d tensor) in place."""
    if isinstance(value, Tensor):
        return ops.fill_.Tensor(self, value)
    return ops.fill_.Scalar(self, value)


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast) into ``self`` in place."""
    return ops.copy_.default(self, src)


_export("zero_", zero_)
_export("fill_", fill_)
_export("copy_", copy_)
