"""Numpy fast paths of the formulas a small model's backward runs most (``mm``, ``addmm``,
``mul``, ``mean``; registered with ``formulas.fast_formula``).

A backward through a Linear layer runs ``AddmmBackward0``: a transpose and a product for each
matrix gradient, a sum and a view for the bias. Run as op calls on a small model these cost
several times their numpy arithmetic (a tiny MLP's training step spent a sixth of its time
there). When nothing could see those calls (grad mode off, no mode or trace, the ops' built-in
kernels, plain float32/float64 cpu operands) the paths below make the same numpy calls on the
same arrays, into outputs made as the kernels make theirs (``mul``'s calls its kernel itself):
the same bits, sizes, strides and views. Any other call returns None and the formula in
``core.py`` runs.
"""

from __future__ import annotations

import numpy as np

import subclass_kit as sk

from ..formulas import fast_formula
from .core import _column_major

_fp = sk.fast_path
_empty, _array, _unobserved = _fp.empty, _fp.array, _fp.unobserved
_quiet, _unquiet = _fp.quiet, _fp.unquiet
_Tensor = sk.Tensor
_CPU = sk.device("cpu")
_FLOATS = frozenset((sk.float32, sk.float64))
_grad_enabled = sk.is_grad_enabled
_view = sk.ops.view.default
# the ops each formula calls, whose kernels a fast path stands in for
_PRODUCT_OPS = (sk.ops.mm.default, sk.ops.t.default)
_ADDMM_OPS = _PRODUCT_OPS + (sk.ops.sum.dim_IntList, sk.ops.view.default)


def _plain(t, dtype) -> bool:
    """``t`` a non-inference ``sk.Tensor`` (not a subclass) on cpu of ``dtype``."""
    return (t.__class__ is _Tensor and t._dtype is dtype and t._storage.device is _CPU
            and not t._inference)


def _covered(grad, ops) -> bool:
    """A matrix ``grad`` of a float dtype, plain, with grad mode off and ``ops`` unobserved."""
    return (not _grad_enabled() and _unobserved(ops) and _plain(grad, grad._dtype)
            and grad._dtype in _FLOATS and len(grad._layout.sizes) == 2)


def _products_covered(ctx, dtype, needs, names) -> bool:
    """``needs``: whether mat1 and mat2 (argument ``names``) need gradients. ``core.py``'s
    ``_mat1_grad``/``_mat2_grad`` take a transposed path for a column-major input: not
    covered."""
    (mat1, mat2), metas = names, ctx._metas
    if needs[0] and (not _plain(getattr(ctx, mat2), dtype) or _column_major(metas[mat1])):
        return False
    if needs[1] and (not _plain(getattr(ctx, mat1), dtype) or _column_major(metas[mat2])):
        return False
    return True


def _products(grad, g, ctx, needs, names) -> tuple:
    """``grad @ mat2.T`` and ``mat1.T @ grad`` (None where not needed): the ``mm`` of the
    formula's transposed view, into a fresh contiguous output as ``mm``'s kernel makes it."""
    mat1_grad = mat2_grad = None
    d = grad._dtype
    if needs[0]:
        mat2 = getattr(ctx, names[1])
        mat1_grad = _empty((g.shape[0], mat2._layout.sizes[0]), d)
        np.matmul(g, _array(mat2).T, out=_array(mat1_grad))
    if needs[1]:
        mat1 = getattr(ctx, names[0])
        mat2_grad = _empty((mat1._layout.sizes[1], g.shape[1]), d)
        np.matmul(_array(mat1).T, g, out=_array(mat2_grad))
    return mat1_grad, mat2_grad


_MM_NAMES = ("self", "mat2")
_ADDMM_NAMES = ("mat1", "mat2")


@fast_formula("mm.default")
def _mm(ctx, grad):
    needs = ctx.needs_input_grad
    if not (_covered(grad, _PRODUCT_OPS) and _products_covered(ctx, grad._dtype, needs,
                                                                _MM_NAMES)):
        return None
    return _products(grad, _array(grad), ctx, needs, _MM_NAMES)


@fast_formula("addmm.default")
def _addmm(ctx, grad):
    needs = ctx.needs_input_grad
    if (ctx.alpha != 1 or ctx.beta != 1 or not _covered(grad, _ADDMM_OPS)
            or not _products_covered(ctx, grad._dtype, needs[1:], _ADDMM_NAMES)):
        return None
    g = _array(grad)
    bias = None
    if needs[0]:
        # the engine's ``sum_to``: a bias of the product's shape takes ``grad`` itself, one of
        # its last dim ``grad.sum(0, keepdim=True)`` viewed as that dim; others the formula
        meta, sizes = ctx._metas["self"], grad._layout.sizes
        if meta.dtype is not grad._dtype:
            return None
        if meta.shape == sizes:
            bias = grad
        elif meta.shape == sizes[1:]:
            summed = _empty((1, sizes[1]), grad._dtype)
            token = _quiet()
            try:
                np.add.reduce(g, axis=(0,), dtype=g.dtype, out=_array(summed), keepdims=True)
            finally:
                _unquiet(token)
            bias = _view(summed, meta.shape)
        else:
            return None
    mat1_grad, mat2_grad = _products(grad, g, ctx, needs[1:], _ADDMM_NAMES)
    return bias, mat1_grad, mat2_grad


_MUL_OPS = (sk.ops.mul.Tensor,)
_MEAN_OPS = (sk.ops.div.Tensor, sk.ops.expand.default)
# the built-in kernel, called only while ``_unobserved(_MUL_OPS)``: it is still registered then
_mul_kernel = sk.get_kernel(sk.ops.mul.Tensor, "cpu")


@fast_formula("mul.Tensor")
def _mul(ctx, grad):
    """``grad * other`` and ``grad * self`` by ``mul``'s own cpu kernel (the formula's op
    calls without their dispatch), for tensor operands of the gradient's shape and dtype: no
    ``sum_to`` and no cast left for ``finish_grads``."""
    d, sizes = grad._dtype, grad._layout.sizes
    if _grad_enabled() or not _unobserved(_MUL_OPS) or not _plain(grad, d):
        return None
    metas = ctx._metas
    for name in ("self", "other"):
        meta = metas.get(name)
        if meta is None or meta.shape != sizes or meta.dtype is not d:
            return None
    needs = ctx.needs_input_grad
    other = ctx.other if needs[0] else grad
    self = ctx.self if needs[1] else grad
    if not (_plain(other, d) and _plain(self, d)):
        return None
    return (_mul_kernel(grad, other) if needs[0] else None,
            _mul_kernel(grad, self) if needs[1] else None)


@fast_formula("mean.default")
def _mean(ctx, grad):
    """``grad.expand(shape) / numel`` for a 0-d float ``grad``: ``div``'s kernel writes the
    quotient of the broadcast element by the count into a fresh contiguous output."""
    meta = ctx._metas["self"]
    d = grad._dtype
    if (_grad_enabled() or not _unobserved(_MEAN_OPS) or d not in _FLOATS or meta.dtype is not d
            or not _plain(grad, d) or grad._layout.sizes or not ctx.needs_input_grad[0]):
        return None
    count = 1
    for s in meta.shape:
        count *= s
    out = _empty(meta.shape, d)
    token = _quiet()
    try:
        np.divide(_array(grad), count, out=_array(out))
    finally:
        _unquiet(token)
    return (out,)
