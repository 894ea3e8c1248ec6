"""Numpy fast paths of the formulas a small model's backward runs most (``mm``, ``addmm``,
``mul``, ``tanh``, ``mean``; registered with ``formulas.fast_formula``).

A backward through a Linear layer runs ``AddmmBackward0``: a transpose and a product for each
matrix gradient, a sum and a view for the bias. Run as op calls on a small model these cost
several times their numpy arithmetic (a tiny MLP's training step spent a sixth of its time
there). When nothing could see those calls (grad mode off, no mode or trace, the ops' built-in
kernels, plain float32/float64 cpu operands) the paths below make the same numpy calls on the
same arrays, into outputs made as the kernels make theirs (``mul`` and ``tanh`` call their
ops' cpu kernels themselves): the same bits, sizes, strides and views. Each reads the node's
saved tensors with ``SavedTensor.peek``: no ``ctx``, and no alias of a saved output, which
only a mode could see. Any other call returns None and the formula in ``core.py`` runs, with
the node's usual ``ctx`` and its errors."""

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


def _served(grad, ops) -> bool:
    """What every path here needs: ``grad`` defined and plain, grad mode off (no
    ``create_graph``) and ``ops`` unobserved."""
    return (grad is not None and not _grad_enabled() and _plain(grad, grad._dtype)
            and _unobserved(ops))


def _covered(grad, ops) -> bool:
    """``_served``, for a matrix ``grad`` of a float dtype."""
    return _served(grad, ops) and grad._dtype in _FLOATS and len(grad._layout.sizes) == 2


def _operands(node, needs, names, dtype):
    """The saved ``mat1`` and ``mat2`` (argument ``names``) a product's gradients read: the
    other operand of each input that ``needs`` a gradient (None for the rest), or None when
    the formula must run: an operand not plain, or one it would unpack with an error or a
    hook, or a column-major input (``core.py``'s ``_mat1_grad``/``_mat2_grad`` take a
    transposed path for it)."""
    (name1, name2), saved, metas = names, node._saved, node._metas
    mat1 = mat2 = None
    if needs[0]:
        mat2 = saved[name2].peek()
        if mat2 is None or not _plain(mat2, dtype) or _column_major(metas[name1]):
            return None
    if needs[1]:
        mat1 = saved[name1].peek()
        if mat1 is None or not _plain(mat1, dtype) or _column_major(metas[name2]):
            return None
    return mat1, mat2


def _products(grad, g, operands) -> tuple:
    """``grad @ mat2.T`` and ``mat1.T @ grad`` (None where an operand is None): the ``mm`` of
    the formula's transposed view, into a fresh contiguous output as ``mm``'s kernel makes
    it."""
    mat1, mat2 = operands
    mat1_grad = mat2_grad = None
    d = grad._dtype
    if mat2 is not None:
        mat1_grad = _empty((g.shape[0], mat2._layout.sizes[0]), d)
        np.matmul(g, _array(mat2).T, out=_array(mat1_grad))
    if mat1 is not None:
        mat2_grad = _empty((mat1._layout.sizes[1], g.shape[1]), d)
        np.matmul(_array(mat1).T, g, out=_array(mat2_grad))
    return mat1_grad, mat2_grad


_MM_NAMES = ("self", "mat2")
_ADDMM_NAMES = ("mat1", "mat2")


@fast_formula("mm.default")
def _mm(node, grads):
    grad = grads[0]
    if not _covered(grad, _PRODUCT_OPS):
        return None
    operands = _operands(node, node._needs, _MM_NAMES, grad._dtype)
    if operands is None:
        return None
    return _products(grad, _array(grad), operands)


@fast_formula("addmm.default")
def _addmm(node, grads):
    grad = grads[0]
    values = node._values
    if (values.get("alpha", 1) != 1 or values.get("beta", 1) != 1
            or not _covered(grad, _ADDMM_OPS)):
        return None
    needs = node._needs
    operands = _operands(node, needs[1:], _ADDMM_NAMES, grad._dtype)
    if operands is None:
        return None
    g = _array(grad)
    bias = None
    if needs[0]:
        # the engine's ``sum_to``: a bias of the product's shape takes ``grad`` itself, one of
        # its last dim ``grad.sum(0, keepdim=True)`` viewed as that dim; others the formula
        meta, sizes = node._metas["self"], grad._layout.sizes
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
    mat1_grad, mat2_grad = _products(grad, g, operands)
    return bias, mat1_grad, mat2_grad


# The built-in kernels, called only while ``_unobserved`` holds for their ops: they are still
# the registered ones then. A saved output is read without ``unpack``'s alias: ``detach`` is
# among the ops a path stands in for.
_detach = sk.ops.detach.default
_MUL_OPS = (sk.ops.mul.Tensor,)
_mul_kernel = sk.get_kernel(sk.ops.mul.Tensor, "cpu")
_TANH_OPS = (sk.ops.tanh_backward.default, _detach)
_tanh_backward_kernel = sk.get_kernel(sk.ops.tanh_backward.default, "cpu")
_MEAN_OPS = (sk.ops.div.Tensor, sk.ops.expand.default)


def _pointwise_grad(grad, node, names, ops) -> bool:
    """``_served``, with every argument in ``names`` recorded with the gradient's shape and
    dtype: the formula's gradients then need no ``sum_to`` and no cast."""
    if not _served(grad, ops):
        return False
    d, sizes = grad._dtype, grad._layout.sizes
    metas = node._metas
    for name in names:
        meta = metas.get(name)
        if meta is None or meta.shape != sizes or meta.dtype is not d:
            return False
    return True


@fast_formula("mul.Tensor")
def _mul(node, grads):
    """``grad * other`` and ``grad * self`` by ``mul``'s own cpu kernel (the formula's op
    calls without their dispatch), for tensor operands of the gradient's shape and dtype."""
    grad = grads[0]
    if not _pointwise_grad(grad, node, ("self", "other"), _MUL_OPS):
        return None
    needs, saved, d = node._needs, node._saved, grad._dtype
    other = saved["other"].peek() if needs[0] else grad
    self = saved["self"].peek() if needs[1] else grad
    if other is None or self is None or not (_plain(other, d) and _plain(self, d)):
        return None
    # in the formula's order: other's gradient first
    b = _mul_kernel(grad, self) if needs[1] else None
    return (_mul_kernel(grad, other) if needs[0] else None), b


@fast_formula("tanh.default")
def _tanh(node, grads):
    """``tanh_backward(grad, result)`` by its own cpu kernel, on the saved output itself."""
    grad = grads[0]
    if not _pointwise_grad(grad, node, ("self",), _TANH_OPS):
        return None
    results = node._results
    y = results[0].peek() if results else None
    if y is None or not _plain(y, grad._dtype):
        return None
    return (_tanh_backward_kernel(grad, y),)


@fast_formula("mean.default")
def _mean(node, grads):
    """``grad.expand(shape) / numel`` for a 0-d float ``grad``: ``div``'s kernel writes the
    quotient of the broadcast element by the count into a fresh contiguous output."""
    grad = grads[0]
    meta = node._metas["self"]
    if not (_served(grad, _MEAN_OPS) and grad._dtype in _FLOATS and meta.dtype is grad._dtype
            and not grad._layout.sizes and node._needs[0]):
        return None
    d = grad._dtype
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
