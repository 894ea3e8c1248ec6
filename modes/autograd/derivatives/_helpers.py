"""Helpers shared by the derivative modules: PyTorch's ``FunctionsManual.cpp`` building blocks
(``unsqueeze_multiple``, ``restore_reduced_dims``, ``scale_grad_by_count``,
``value_selecting_reduction_backward``, ``evenly_distribute_backward``) written with ``sk`` ops,
so a formula built from them is itself differentiable (double backward)."""

from __future__ import annotations

__all__ = ["wrap", "dims_of", "unsqueeze_multiple", "restore_reduced_dims", "scale_grad_by_count",
           "value_selecting_backward", "evenly_distribute_backward", "zeros", "maybe_multiply"]


def wrap(dim: int, ndim: int) -> int:
    """``dim`` wrapped into ``range(max(ndim, 1))`` (a 0-d tensor takes dims 0 and -1)."""
    n = max(ndim, 1)
    return dim + n if dim < 0 else dim


def dims_of(dim, ndim: int) -> list:
    """A reduction's ``int[1]? dim`` as sorted wrapped dims; ``None`` or ``[]`` is every dim
    (PyTorch's reductions read an empty list as a full reduction)."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    return sorted({wrap(d, ndim) for d in dim})


def unsqueeze_multiple(t, dims, ndim: int):
    """Put back the reduced ``dims`` (already wrapped to ``ndim``) as size-1 dims."""
    for d in sorted(dims):
        if d < ndim:
            t = t.unsqueeze(d)
    return t


def restore_reduced_dims(t, dim, keepdim: bool, ndim: int):
    """PyTorch's ``restore_reduced_dims``: the keepdim shape of a reduction output."""
    if keepdim or ndim == 0:
        return t
    return unsqueeze_multiple(t, dims_of(dim, ndim), ndim)


def scale_grad_by_count(grad, mask, dims):
    """``(grad / mask.sum(dims, keepdim)) * mask``: ties share the gradient evenly (amax/amin)."""
    return (grad / mask.sum(dims, keepdim=True)) * mask


def zeros(like_grad, shape):
    """Zeros of ``shape`` in ``like_grad``'s dtype and device (``grad.new_zeros``)."""
    return like_grad.new_zeros(list(shape))


def value_selecting_backward(grad, dim: int, indices, shape, keepdim: bool):
    """PyTorch's ``value_selecting_reduction_backward``: ``grad`` scattered at ``indices``
    along ``dim`` into zeros of the input's ``shape`` (max.dim, sort, topk, kthvalue...)."""
    if not keepdim and len(shape) > 0:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return zeros(grad, shape).scatter(dim, indices, grad)


def evenly_distribute_backward(grad, inp, value):
    """PyTorch's ``evenly_distribute_backward`` (max(), min(), median()): the gradient split
    evenly among the elements equal to ``value`` (NaN counting as equal to a NaN value)."""
    both_nan = inp.isnan().logical_and(value.isnan())
    mask = (inp == value).logical_or(both_nan)
    return mask * (grad / mask.sum())


def maybe_multiply(t, s):
    """PyTorch's ``maybe_multiply``: ``t`` when ``s == 1``, else ``t * s``."""
    return t if s == 1 else t * s
