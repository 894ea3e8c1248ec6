"""Index accumulation, blends and sorting: ``index_add``, ``scatter_add``, ``index_copy``,
``masked_scatter``, ``lerp``, ``addcmul``, ``addcdiv``, ``baddbmm``, ``sort``, ``argsort``,
``topk``, as ``sk.<name>`` and ``Tensor.<name>``, with the ``Tensor.<name>_`` in-place forms
and ``out=`` where PyTorch has them (same argument forms, same errors).

Kernels: ``kernels/index_ops.py``, ``kernels/pointwise_ternary.py``, ``kernels/linalg.py``
(``baddbmm``), ``kernels/sorting.py``; ``argsort`` is a composite of ``sort``.
"""

from __future__ import annotations

from .. import return_types
from .._argcheck import check_bool
from ..function import public_api
from ..registry import ops
from ..tensor import Tensor

__all__ = ["addcdiv", "addcmul", "argsort", "baddbmm", "index_add", "index_copy", "lerp",
           "masked_scatter", "scatter_add", "sort", "topk"]


def _export(fn, *method_names):
    public = public_api(fn)
    for name in method_names:
        setattr(Tensor, name, public)
    return public


# -- index accumulation --------------------------------------------------------------------------
def index_add(input, dim, index, source, *, alpha=1, out=None):
    """A copy of ``input`` with ``alpha * source`` added at the positions ``index`` (1-D or
    0-d, int64/int32) along ``dim``; duplicate indices accumulate. ``source`` has ``input``'s
    dtype and shape except ``source.size(dim) == len(index)``. Raises RuntimeError "index 5 is
    out of bounds for dimension 0 with size 3", "index_add_(): self (Float) and source
    (Double) must have the same scalar type"; ``out`` must have the result dtype exactly."""
    if out is not None:
        return ops.index_add.out(input, dim, index, source, alpha=alpha, out=out)
    return ops.index_add.default(input, dim, index, source, alpha=alpha)


def index_add_(self, dim, index, source, *, alpha=1):
    """In-place ``index_add``; bumps ``self._version`` (nothing is written when it raises)."""
    return ops.index_add_.default(self, dim, index, source, alpha=alpha)


def scatter_add(input, dim, index, src, *, out=None):
    """A copy of ``input`` with ``out[i][index[i][j]] += src[i][j]`` (dim 1); duplicate
    indices accumulate. Same checks as ``scatter`` (``src`` of ``input``'s dtype)."""
    if out is not None:
        return ops.scatter_add.out(input, dim, index, src, out=out)
    return ops.scatter_add.default(input, dim, index, src)


def scatter_add_(self, dim, index, src):
    """In-place ``scatter_add``; bumps ``self._version``."""
    return ops.scatter_add_.default(self, dim, index, src)


def index_copy(input, dim, index, source, *, out=None):
    """A copy of ``input`` with the slices ``index`` (int64, 1-D or 0-d) along ``dim`` replaced
    by ``source``'s; with duplicate indices the last one wins. Raises IndexError
    "index_copy_(): index 5 is out of bounds for dimension 0 with size 3"."""
    if out is not None:
        return ops.index_copy.out(input, dim, index, source, out=out)
    return ops.index_copy.default(input, dim, index, source)


def index_copy_(self, dim, index, source):
    """In-place ``index_copy``; bumps ``self._version``."""
    return ops.index_copy_.default(self, dim, index, source)


def masked_scatter(input, mask, source, *, out=None):
    """``input`` (broadcast with the bool ``mask``) with the ``True`` positions filled, in
    row-major order, from the first elements of ``source`` (same dtype, any shape). Raises
    RuntimeError "Number of elements of source < number of ones in mask"."""
    if out is not None:
        return ops.masked_scatter.out(input, mask, source, out=out)
    return ops.masked_scatter.default(input, mask, source)


def masked_scatter_(self, mask, source):
    """In-place ``masked_scatter``: ``mask`` broadcasts to ``self``'s shape."""
    return ops.masked_scatter_.default(self, mask, source)


index_add = _export(index_add, "index_add")
scatter_add = _export(scatter_add, "scatter_add")
index_copy = _export(index_copy, "index_copy")
masked_scatter = _export(masked_scatter, "masked_scatter")
for _fn in (index_add_, scatter_add_, index_copy_, masked_scatter_):
    _export(_fn, _fn.__name__)


# -- blends --------------------------------------------------------------------------------------
def _lerp_op(weight, inplace=False, out=False):
    packet = ops.lerp_ if inplace else ops.lerp
    name = "Tensor" if isinstance(weight, Tensor) else "Scalar"
    return packet._overloads[name + ("_out" if out else "")]


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)`` (floating dtypes; ``end`` and a weight tensor with
    dims share ``input``'s dtype; ``weight`` a number or a tensor, all broadcast)."""
    if out is not None:
        return _lerp_op(weight, out=True)(input, end, weight, out=out)
    return _lerp_op(weight)(input, end, weight)


def lerp_(self, end, weight):
    """In-place ``lerp``: the broadcast shape must be ``self``'s."""
    return _lerp_op(weight, inplace=True)(self, end, weight)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2`` (broadcast, promoted; not bool)."""
    if out is not None:
        return ops.addcmul.out(input, tensor1, tensor2, value=value, out=out)
    return ops.addcmul.default(input, tensor1, tensor2, value=value)


def addcmul_(self, tensor1, tensor2, *, value=1):
    return ops.addcmul_.default(self, tensor1, tensor2, value=value)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2``; RuntimeError when both ``tensor1`` and
    ``tensor2`` are integral ("Integer division with addcdiv is no longer supported, ...")."""
    if out is not None:
        return ops.addcdiv.out(input, tensor1, tensor2, value=value, out=out)
    return ops.addcdiv.default(input, tensor1, tensor2, value=value)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    return ops.addcdiv_.default(self, tensor1, tensor2, value=value)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (batch1 @ batch2)`` for ``(b, n, k) @ (b, k, m)``; ``input``
    broadcasts to ``(b, n, m)`` and is ignored when ``beta == 0``; one dtype for all."""
    if out is not None:
        return ops.baddbmm.out(input, batch1, batch2, beta=beta, alpha=alpha, out=out)
    return ops.baddbmm.default(input, batch1, batch2, beta=beta, alpha=alpha)


def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    return ops.baddbmm_.default(self, batch1, batch2, beta=beta, alpha=alpha)


lerp = _export(lerp, "lerp")
addcmul = _export(addcmul, "addcmul")
addcdiv = _export(addcdiv, "addcdiv")
baddbmm = _export(baddbmm, "baddbmm")
for _fn in (lerp_, addcmul_, addcdiv_, baddbmm_):
    _export(_fn, _fn.__name__)


# -- sorting -------------------------------------------------------------------------------------
_UNSET = object()


def sort(input, dim=-1, descending=False, *, stable=_UNSET, out=None):
    """``sk.return_types.sort(values, indices)`` along ``dim`` (int64 indices; NaN sorts
    last, first when ``descending``). Passing ``stable`` (as PyTorch's parser) picks
    ``sort.stable``; both give PyTorch's stable order (docs/differences.md for
    ``stable=False``). ``out``: a (values, indices) pair of the result dtypes exactly.
    Raises TypeError for a ``descending`` or ``stable`` that is not a bool (PyTorch's parser)."""
    check_bool("sort", "descending", descending)
    if stable is not _UNSET and stable is not None:
        check_bool("sort", "stable", stable)
    if stable is _UNSET:
        if out is not None:
            values, indices = out
            return return_types.sort_out(*ops.sort.values(
                input, dim, descending, values=values, indices=indices))
        return return_types.sort(*ops.sort.default(input, dim, descending))
    if out is not None:
        values, indices = out
        return return_types.sort_out(*ops.sort.values_stable(
            input, stable=stable, dim=dim, descending=descending, values=values,
            indices=indices))
    return return_types.sort(*ops.sort.stable(input, stable=stable, dim=dim,
                                              descending=descending))


def argsort(input, dim=-1, descending=False, *, stable=_UNSET):
    """The ``indices`` of ``sort`` (a composite: modes see ``sort`` / ``sort.stable``). Raises
    TypeError for a ``descending`` or ``stable`` that is not a bool (PyTorch's parser)."""
    check_bool("argsort", "descending", descending)
    if stable is not _UNSET:
        check_bool("argsort", "stable", stable)
    if stable is _UNSET:
        return ops.argsort.default(input, dim, descending)
    return ops.argsort.stable(input, stable=stable, dim=dim, descending=descending)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """``sk.return_types.topk(values, indices)``: the ``k`` largest (``largest=False``:
    smallest) elements along ``dim``, in sorted order. Raises RuntimeError "selected index k
    out of range" unless ``0 <= k <= input.size(dim)``, and for bool inputs. Tied values come
    in index order and ``sorted=False`` returns them sorted (docs/differences.md)."""
    if out is not None:
        values, indices = out
        return return_types.topk_out(*ops.topk.values(input, k, dim, largest, sorted,
                                                      values=values, indices=indices))
    return return_types.topk(*ops.topk.default(input, k, dim, largest, sorted))


sort = _export(sort, "sort")
argsort = _export(argsort, "argsort")
topk = _export(topk, "topk")
