"""Reductions: ``sk.sum``/``Tensor.sum`` and friends with PyTorch's signatures.

``dim`` is an int or a tuple/list of ints (negative dims wrap), ``keepdim`` keeps reduced dims
as size 1, ``dtype=`` casts the input before reducing, ``out=`` writes into a given tensor.
``max``/``min`` with a ``dim`` return ``sk.return_types.max(values, indices)``; with a tensor
they are ``maximum``/``minimum``. Errors and dtype rules: see ``kernels/reductions.py``.

Example::

    >>> x = sk.tensor([[1., 5.], [3., 2.]])
    >>> x.sum(), x.sum(1).tolist(), x.max(0).indices.tolist()
    (tensor(11.), [6.0, 5.0], [1, 0])
"""

from __future__ import annotations

from .. import return_types
from .._argcheck import check_bool
from ..function import public_api
from ..registry import ops
from ..tensor import Tensor

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "logsumexp",
    "max",
    "mean",
    "min",
    "norm",
    "prod",
    "std",
    "sum",
    "var",
]

_builtin_max = max


def _export(fn):
    public = public_api(fn)
    setattr(Tensor, fn.__name__, public)
    return public


def _dim_list(dim):
    if dim is None:
        return None
    if isinstance(dim, int):
        return [dim]
    return list(dim)


def _int_dim(fname, dim):
    if isinstance(dim, bool) or not (isinstance(dim, int) or hasattr(dim, "__index__")):
        raise TypeError(f"{fname}(): argument 'dim' (position 1) must be int, not "
                        f"{type(dim).__name__}")


def _keepdim(fname, keepdim) -> bool:
    """A ``keepdim`` that is not a Python bool: numpy's bool, else PyTorch's TypeError."""
    check_bool(fname, "keepdim", keepdim)
    return bool(keepdim)


def _call(op, self, *args, dtype=None, out=None, keepdim=False, **kwargs):
    """Call ``op`` with only the non-default arguments, as PyTorch's bindings do."""
    args = list(args)
    if keepdim is not False and keepdim is not True:
        keepdim = _keepdim(op.name, keepdim)
    if keepdim:
        args.append(True)
    if dtype is not None:
        kwargs["dtype"] = dtype
    if out is not None:
        kwargs["out"] = out
    return op(self, *args, **kwargs)


class _NoDim:
    """``dim`` not given at all: ``x.sum()`` is op ``sum.default`` in PyTorch, ``x.sum(None)``
    is ``sum.dim_IntList(x, None)``; handlers see which."""

    def __repr__(self):
        return "None"


_NO_DIM = _NoDim()
_SUM_ALL, _MEAN_ALL = ops.sum.default, ops.mean.default   # (``.default`` is a property)


def sum(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    """Sum over ``dim`` (all dims by default: op ``sum.default``). Integral/bool inputs sum
    into int64 unless ``dtype`` is given; an empty reduction gives 0."""
    if dim is _NO_DIM:
        if out is None and keepdim is False:
            return _SUM_ALL(input) if dtype is None else _SUM_ALL(input, dtype=dtype)
        dim = None
    if out is None and dtype is None:  # _call's arguments, built directly (hot path)
        dims = _dim_list(dim)
        if keepdim is False:
            return ops.sum.dim_IntList(input, dims)
        if keepdim is not True:
            keepdim = _keepdim("sum", keepdim)
        return (ops.sum.dim_IntList(input, dims, True) if keepdim
                else ops.sum.dim_IntList(input, dims))
    op = ops.sum.IntList_out if out is not None else ops.sum.dim_IntList
    return _call(op, input, _dim_list(dim), keepdim=keepdim, dtype=dtype, out=out)


def mean(input, dim=_NO_DIM, keepdim=False, *, dtype=None, out=None):
    """Mean over ``dim`` (all dims by default: op ``mean.default``); the input (or ``dtype``)
    must be floating (RuntimeError "mean(): could not infer output dtype..."). An empty
    reduction gives nan."""
    if dim is _NO_DIM:
        if out is None and keepdim is False:
            return _MEAN_ALL(input) if dtype is None else _MEAN_ALL(input, dtype=dtype)
        dim = None
    op = ops.mean.out if out is not None else ops.mean.dim
    return _call(op, input, _dim_list(dim), keepdim=keepdim, dtype=dtype, out=out)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of all elements, or over one ``dim`` (an int). int/bool -> int64; empty -> 1."""
    if dim is None:
        if out is not None:
            return ops.copy_.default(out, _call(ops.prod, input, dtype=dtype))
        return _call(ops.prod, input, dtype=dtype)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"prod() received an invalid combination of arguments - got "
                        f"({type(dim).__name__}), but expected one of:\n"
                        " * (*, sk.dtype dtype = None)\n"
                        " * (int dim, bool keepdim = False, *, sk.dtype dtype = None)\n")
    op = ops.prod.int_out if out is not None else ops.prod.dim_int
    return _call(op, input, dim, keepdim=keepdim, dtype=dtype, out=out)


def _variance(op, op_out, input, dim, unbiased, keepdim, correction, out):
    if isinstance(dim, bool):  # var(unbiased)
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{op.name}() received an invalid combination of arguments: both "
                            "'unbiased' and 'correction' given")
        correction = 1 if unbiased else 0
    kwargs = {}
    if correction is not None:
        kwargs["correction"] = correction
    if keepdim is not False and keepdim is not True:
        keepdim = _keepdim(op.name, keepdim)
    if keepdim:
        kwargs["keepdim"] = True
    if out is not None:
        return op_out(input, _dim_list(dim), out=out, **kwargs)
    if dim is None:
        return op(input, **kwargs)
    return op(input, _dim_list(dim), **kwargs)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with Bessel's ``correction`` (default 1; ``unbiased=False`` is 0).
    Floating inputs only. Warns when ``N - correction <= 0`` (result inf or nan)."""
    return _variance(ops.var, ops.var.correction_out, input, dim, unbiased, keepdim,
                     correction, out)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation: ``sqrt(var(...))`` with the same arguments."""
    return _variance(ops.std, ops.std.correction_out, input, dim, unbiased, keepdim,
                     correction, out)


def amax(input, dim=(), keepdim=False, *, out=None):
    """Maximum over ``dim`` (all dims by default), NaN propagating. Empty reduced dims raise
    IndexError "amax(): Expected reduction dim 0 to have non-zero size."."""
    args = () if dim == () and not keepdim else (_dim_list(dim),)
    return _call(ops.amax.out if out is not None else ops.amax, input, *args, keepdim=keepdim,
                 out=out)


def amin(input, dim=(), keepdim=False, *, out=None):
    """Minimum over ``dim`` (all dims by default), NaN propagating."""
    args = () if dim == () and not keepdim else (_dim_list(dim),)
    return _call(ops.amin.out if out is not None else ops.amin, input, *args, keepdim=keepdim,
                 out=out)


def argmax(input, dim=None, keepdim=False, *, out=None):
    """int64 index of the (first) maximum, over the flattened tensor when ``dim`` is None.
    NaN counts as the maximum; bool inputs raise RuntimeError."""
    if dim is not None:
        _int_dim("argmax", dim)
    args = () if dim is None and not keepdim else (dim,)
    return _call(ops.argmax.out if out is not None else ops.argmax, input, *args,
                 keepdim=keepdim, out=out)


def argmin(input, dim=None, keepdim=False, *, out=None):
    """int64 index of the (first) minimum; see ``argmax``."""
    if dim is not None:
        _int_dim("argmin", dim)
    args = () if dim is None and not keepdim else (dim,)
    return _call(ops.argmin.out if out is not None else ops.argmin, input, *args,
                 keepdim=keepdim, out=out)


def _logical(op, input, dim, keepdim, out):
    if out is not None:
        return _call(op.dims_out, input, _dim_list(dim), keepdim=keepdim, out=out)
    if dim is None:
        return op(input) if not keepdim else op.dims(input, None, True)
    if isinstance(dim, int):
        return _call(op.dim, input, dim, keepdim=keepdim)
    return _call(op.dims, input, list(dim), keepdim=keepdim)


def all(input, dim=None, keepdim=False, *, out=None):
    """True where every element over ``dim`` is nonzero (bool; uint8 for uint8 inputs).
    ``dim=()`` reduces nothing."""
    return _logical(ops.all, input, dim, keepdim, out)


def any(input, dim=None, keepdim=False, *, out=None):
    """True where some element over ``dim`` is nonzero (bool; uint8 for uint8 inputs)."""
    return _logical(ops.any, input, dim, keepdim, out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input), dim))`` computed stably; integer inputs give the default float."""
    if dim is None or not isinstance(dim, (int, tuple, list)):
        raise TypeError(f"logsumexp(): argument 'dim' (position 1) must be tuple of ints, not "
                        f"{type(dim).__name__}")
    op = ops.logsumexp.out if out is not None else ops.logsumexp
    return _call(op, input, _dim_list(dim), keepdim=keepdim, out=out)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Vector p-norm over ``dim`` (all dims by default): ``p`` a number, ``inf``/``-inf``, or
    "fro" (= 2). Runs ``linalg_vector_norm``; floating inputs only."""
    if p == "fro" or p is None:
        p = 2
    elif isinstance(p, str):
        raise NotImplementedError(f"norm(p={p!r}) (matrix norms) is not supported")
    args = []
    if p != 2 or dim is not None:
        args.append(p)
    if dim is not None:
        args.append(_dim_list(dim))
    op = ops.linalg_vector_norm.out if out is not None else ops.linalg_vector_norm
    if keepdim and dim is None:
        args = [p, None]
    return _call(op, input, *args, keepdim=keepdim, dtype=dtype, out=out)


def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sum along ``dim`` (same shape, contiguous); int/bool -> int64."""
    _int_dim("cumsum", dim)
    op = ops.cumsum.out if out is not None else ops.cumsum
    return _call(op, input, dim, dtype=dtype, out=out)


def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative product along ``dim`` (same shape, contiguous); int/bool -> int64, float16
    accumulates in float32."""
    _int_dim("cumprod", dim)
    op = ops.cumprod.out if out is not None else ops.cumprod
    return _call(op, input, dim, dtype=dtype, out=out)


def _max_min(name, input, dim, keepdim, out):
    from . import math
    if isinstance(dim, Tensor):
        binary = math.maximum if name == "max" else math.minimum
        return binary(input, dim, out=out) if out is not None else binary(input, dim)
    rtype = getattr(return_types, name)
    packet = getattr(ops, name)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            "(keepdim=bool, ), but expected one of: (), (Tensor other), "
                            "(int dim, bool keepdim = False)")
        return packet(input) if out is None else ops.copy_.default(out, packet(input))
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(dim).__name__}), but expected one of: (), (Tensor other), "
                        "(int dim, bool keepdim = False)")
    if out is not None:
        values, indices = out
        names = [a.name for a in packet.dim._overloads[f"dim_{name}"].schema.arguments
                 if a.is_write]
        res = _call(packet.dim._overloads[f"dim_{name}"], input, dim, keepdim=keepdim,
                    **{names[0]: values, names[1]: indices})
        return getattr(return_types, name + "_out")(*res)
    return rtype(*_call(packet.dim, input, dim, keepdim=keepdim))


def max(input, dim=None, keepdim=False, *, out=None):
    """``max(x)``: the maximum (0-d; NaN propagates; empty raises RuntimeError);
    ``max(x, dim)``: ``sk.return_types.max(values, indices)``; ``max(x, other)``: ``maximum``."""
    return _max_min("max", input, dim, keepdim, out)


def min(input, dim=None, keepdim=False, *, out=None):
    """``min(x)``, ``min(x, dim)`` -> ``(values, indices)``, ``min(x, other)``; see ``max``."""
    return _max_min("min", input, dim, keepdim, out)


_PUBLIC = {}
for _fn in (sum, mean, prod, var, std, amax, amin, argmax, argmin, all, any, logsumexp, norm,
            cumsum, cumprod, max, min):
    _PUBLIC[_fn.__name__] = _export(_fn)
globals().update(_PUBLIC)
del _builtin_max
