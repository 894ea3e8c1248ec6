"""``sk.count_nonzero``, ``nansum``, ``nanmean``, ``aminmax``, ``isclose``, ``allclose``,
``equal``, ``cummax``, ``cummin``, ``logcumsumexp``, ``median``, ``nanmedian``, ``kthvalue`` (and their ``Tensor`` methods) with PyTorch's signatures; rules in
``kernels/reductions_more.py``, ``kernels/sorting.py`` and ``decompositions_reductions.py``."""

from __future__ import annotations

from .. import return_types
from .._argcheck import check_int, check_tensor
from ..function import public_api
from ..tensor import Tensor
from ..registry import ops
from .reductions import _call, _dim_list, _export

__all__ = ["allclose", "aminmax", "count_nonzero", "cummax", "cummin", "equal", "isclose",
           "kthvalue", "logcumsumexp", "median", "nanmean", "nanmedian", "nansum"]


def count_nonzero(input, dim=None):
    """int64 count of nonzero elements over ``dim`` (an int, a list, or all dims)."""
    if dim is None or isinstance(dim, int):
        if dim is None:
            return ops.count_nonzero.default(input)
        return ops.count_nonzero.default(input, dim)
    return ops.count_nonzero.dim_IntList(input, list(dim))


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as 0; integral/bool inputs sum into int64."""
    op = ops.nansum.out if out is not None else ops.nansum
    return _call(op, input, _dim_list(dim), keepdim=keepdim, dtype=dtype, out=out)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements; floating inputs only."""
    op = ops.nanmean.out if out is not None else ops.nanmean
    return _call(op, input, _dim_list(dim), keepdim=keepdim, dtype=dtype, out=out)


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """``sk.return_types.aminmax(min, max)`` over ``dim`` (all dims by default)."""
    kwargs = {}
    if dim is not None:
        kwargs["dim"] = dim
    if keepdim:
        kwargs["keepdim"] = True
    if out is not None:
        res = ops.aminmax.out(input, min=out[0], max=out[1], **kwargs)
        return return_types.aminmax_out(*res)
    return return_types.aminmax(*ops.aminmax.default(input, **kwargs))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (bool), same dtypes only."""
    return ops.isclose.default(input, other, rtol, atol, equal_nan)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``isclose(...).all()`` as a Python bool."""
    return ops.allclose.default(input, other, rtol, atol, equal_nan)


def equal(input, other):
    """True when sizes and every element are equal."""
    return ops.equal.default(input, other)


def _cum_extreme(name, input, dim, out):
    from .reductions import _int_dim
    _int_dim(name, dim)
    packet = getattr(ops, name)
    if out is not None:
        res = packet.out(input, dim, values=out[0], indices=out[1])
        return getattr(return_types, name + "_out")(*res)
    return getattr(return_types, name)(*packet(input, dim))


def cummax(input, dim, *, out=None):
    """``sk.return_types.cummax(values, indices)``: running maximum along ``dim`` and the index
    of its last occurrence (NaN propagates)."""
    return _cum_extreme("cummax", input, dim, out)


def cummin(input, dim, *, out=None):
    """``sk.return_types.cummin(values, indices)``; see ``cummax``."""
    return _cum_extreme("cummin", input, dim, out)


def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input), dim))`` computed stably; floating inputs only."""
    from .reductions import _int_dim
    _int_dim("logcumsumexp", dim)
    if out is not None:
        return ops.logcumsumexp.out(input, dim, out=out)
    return ops.logcumsumexp.default(input, dim)


_NO_DIM = object()


def _median(name, input, dim, keepdim, out):
    packet = getattr(ops, name)
    if dim is _NO_DIM:
        if out is not None or keepdim:
            raise TypeError(f"{name}() missing 1 required positional arguments: \"dim\"")
        return packet(input)
    dim = check_int(name, "dim", dim, 2)
    if out is not None:
        res = _call(packet.dim_values, input, dim, keepdim=keepdim, values=out[0],
                    indices=out[1])
        return getattr(return_types, name + "_out")(*res)
    return getattr(return_types, name)(*_call(packet.dim, input, dim, keepdim=keepdim))


def median(input, dim=_NO_DIM, keepdim=False, *, out=None):
    """``median(x)``: the lower median (NaN if any element is NaN); ``median(x, dim)``:
    ``sk.return_types.median(values, indices)``."""
    return _median("median", input, dim, keepdim, out)


def nanmedian(input, dim=_NO_DIM, keepdim=False, *, out=None):
    """Like ``median``, ignoring NaN (NaN only where every element is NaN)."""
    return _median("nanmedian", input, dim, keepdim, out)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """``sk.return_types.kthvalue(values, indices)``: the ``k``-th smallest along ``dim``."""
    k = check_int("kthvalue", "k", k, 2)
    if out is not None:
        res = _call(ops.kthvalue.values, input, k, dim, keepdim=keepdim, values=out[0],
                    indices=out[1])
        return return_types.kthvalue_out(*res)
    args = (k,) if dim == -1 and not keepdim else (k, dim)
    return return_types.kthvalue(*_call(ops.kthvalue, input, *args, keepdim=keepdim))


def is_set_to(self, tensor):
    """``Tensor.is_set_to``: True when ``tensor`` has this tensor's storage, storage offset,
    sizes and strides (``is_set_to.default``; NotImplementedError on meta, as PyTorch)."""
    check_tensor("is_set_to", "tensor", tensor, 1)
    return ops.is_set_to.default(self, tensor)


Tensor.is_set_to = public_api(is_set_to)

_PUBLIC = {}
for _fn in (count_nonzero, nansum, nanmean, aminmax, isclose, allclose, equal, cummax, cummin,
            logcumsumexp, median, nanmedian, kthvalue):
    _PUBLIC[_fn.__name__] = _export(_fn)
globals().update(_PUBLIC)
