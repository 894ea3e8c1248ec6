"""Linear algebra and shape-combining API: ``sk.matmul``/``@``, ``mm``, ``bmm``, ``addmm``,
``dot``, ``mv``, ``einsum``, ``cat``/``concat``, ``stack``, ``gather``, ``scatter``,
``index_select``, ``tril``, ``triu``, ``nonzero``, ``softmax``, ``log_softmax``.

Each function is the PyTorch function of the same name (same argument forms, same errors) and,
where PyTorch has one, the ``Tensor`` method too. ``matmul``, ``einsum``, ``softmax`` and
``log_softmax`` are composites (``decompositions_nn.py``): modes see the primitives they lower to.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._state import tls
from ..function import public_api
from ..inplace_checks import any_requires_grad
from ..kernels._common import Spec, check_out_device_first, cross_device_error, resize_output
from ..kernels.linalg import cpp_name
from ..registry import ops
from ..tensor import Tensor

__all__ = [
    "addmm",
    "bmm",
    "cat",
    "concat",
    "concatenate",
    "dot",
    "einsum",
    "gather",
    "index_select",
    "log_softmax",
    "matmul",
    "mm",
    "mv",
    "nonzero",
    "scatter",
    "softmax",
    "stack",
    "tril",
    "triu",
]


def _export(fn, *method_names):
    """``public_api``-wrap ``fn``; install it as ``Tensor.<name>`` for each method name."""
    public = public_api(fn)
    for name in method_names:
        setattr(Tensor, name, public)
    return public


def _write_out(name, inputs, result, out):
    """Copy a composite's result into ``out``, resized like PyTorch's ``resize_output``: a
    dispatched ``ops.resize_`` when the shape differs (modes and graphs see it), then ``copy_``
    (one version bump). With grad on, an argument requiring grad raises first, before ``out``
    changes (PyTorch's autograd refuses out= ops)."""
    if tls.grad_enabled and any_requires_grad((inputs, out), None):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out._storage.device is not result._storage.device:   # before the dtype, as PyTorch
        raise cross_device_error(result._storage.device, out._storage.device)
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(result.dtype)}, but "
                           f"got {cpp_name(out.dtype)} instead")
    spec = Spec(tuple(result.shape), result.stride(), result.dtype, result.device)
    resize_output(out, spec, stacklevel=5)   # the warning names the caller of ``sk.matmul``
    return ops.copy_.default(out, result)


# -- products ------------------------------------------------------------------------------------
def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's rules: 1-D @ 1-D is ``dot``, 2-D @ 1-D ``mv``, 2-D @ 2-D
    ``mm``; batched operands broadcast their batch dims and run as one ``mm`` (folded) or
    ``bmm``. Raises RuntimeError for 0-d operands ("both arguments to matmul need to be at least
    1D, but they are 0D and 1D") and the primitives' shape/dtype errors.

    >>> (sk.ones(2, 3) @ sk.ones(3)).tolist()
    [3.0, 3.0]
    """
    if out is not None:   # PyTorch's mm.out checks the device before the shapes
        check_out_device_first(input, out)
    result = ops.matmul.default(input, other)
    return result if out is None else _write_out("matmul", (input, other), result, out)


def mm(input, mat2, *, out=None):
    """``(n, k) @ (k, m) -> (n, m)``; both 2-D with the same dtype (no promotion).

    Raises RuntimeError "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "expected m1
    and m2 to have the same dtype, but got: float != double"; ``out`` must have the result dtype.
    """
    if out is not None:
        return ops.mm.out(input, mat2, out=out)
    return ops.mm.default(input, mat2)


def bmm(input, mat2, *, out=None):
    """Batched ``(b, n, k) @ (b, k, m) -> (b, n, m)``, 3-D operands of one dtype, no broadcasting.

    Raises RuntimeError "Expected size for first two dimensions of batch2 tensor to be: [2, 3]
    but got: [2, 4]."
    """
    if out is not None:
        return ops.bmm.out(input, mat2, out=out)
    return ops.bmm.default(input, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product's shape and
    is ignored when ``beta == 0``. All three share one dtype."""
    if beta == 1 and alpha == 1:
        return ops.addmm.default(input, mat1, mat2)
    return ops.addmm.default(input, mat1, mat2, beta=beta, alpha=alpha)


def dot(input, tensor):
    """Inner product of two 1-D tensors of the same size and dtype (a 0-d result)."""
    return ops.dot.default(input, tensor)


def mv(input, vec):
    """``(n, k) @ (k,) -> (n,)``."""
    return ops.mv.default(input, vec)


matmul = _export(matmul, "matmul")
mm = _export(mm, "mm")
bmm = _export(bmm, "bmm")
addmm = _export(addmm, "addmm")
dot = _export(dot, "dot")
mv = _export(mv, "mv")


def _matmul_operator(self, other):
    # A TypeError (all handlers declined) becomes NotImplemented, as for the other binary
    # operators (api/math.py ``_binary_operator``).
    if not isinstance(other, Tensor):
        return NotImplemented
    try:
        return ops.matmul.default(self, other)
    except TypeError:
        return NotImplemented


def _rmatmul_operator(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    try:
        return ops.matmul.default(other, self)
    except TypeError:
        return NotImplemented


Tensor.__matmul__ = public_api(_matmul_operator)
Tensor.__rmatmul__ = public_api(_rmatmul_operator)
Tensor.__matmul__.__name__ = Tensor.__matmul__.__qualname__ = "__matmul__"
Tensor.__rmatmul__.__name__ = Tensor.__rmatmul__.__qualname__ = "__rmatmul__"


# -- einsum --------------------------------------------------------------------------------------
def _sublist_label(n) -> str:
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError(f"einsum(): subscript in subscript list is not within the valid range "
                     f"[0, 52), got {n}")


def _sublist_equation(args):
    operands = list(args[0:-1:2]) if len(args) % 2 else list(args[0::2])
    subscripts = args[1::2]
    lhs = ",".join("".join(_sublist_label(n) for n in sub) for sub in subscripts)
    if len(args) % 2:
        return lhs + "->" + "".join(_sublist_label(n) for n in args[-1]), operands
    return lhs, operands


def einsum(*args, path=None):
    """Einstein summation, ``sk.einsum("bij,bjk->bik", a, b)`` (operands may also come as one
    list, or in the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``). Labels are
    ``[a-zA-Z]``, ``...`` broadcasts. A composite (diagonal, permute, sum, bmm, view), so it
    works on meta tensors and under modes; errors use PyTorch's texts ("einsum(): subscript j
    has size 4 for operand 1 which does not broadcast with previously seen size 3").
    """
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    if path is None:
        return ops.einsum.default(equation, operands)
    return ops.einsum.default(equation, operands, path=list(path))


einsum = _export(einsum)


# -- cat / stack ---------------------------------------------------------------------------------
def cat(tensors, dim=0, *, axis=None, out=None):
    """Concatenate along ``dim``; dtypes promote; 1-d empty tensors are skipped (PyTorch's
    legacy rule); channels-last inputs give a channels-last result.

    Raises ValueError for an empty list, RuntimeError "Sizes of tensors must match except in
    dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list."
    """
    if axis is not None:
        dim = axis
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if out is not None:
        return ops.cat.out(list(tensors), dim, out=out)
    return ops.cat.default(list(tensors), dim)


def stack(tensors, dim=0, *, out=None):
    """Join equal-shaped tensors along a new dim ``dim`` (``cat`` then a view).

    Raises RuntimeError "stack expects each tensor to be equal size, but got [2] at entry 0 and
    [3] at entry 1".
    """
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"stack(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    result = ops.stack.default(list(tensors), dim)
    return result if out is None else _write_out("stack", tensors, result, out)


cat = _export(cat)
concat = concatenate = cat
stack = _export(stack)


# -- gather / scatter / index_select -------------------------------------------------------------
def gather(input, dim, index, *, sparse_grad=False):
    """``out[i][j] = input[i][index[i][j]]`` (dim 1); ``out`` has ``index``'s shape. ``index``
    is int64/int32 and no larger than ``input`` outside ``dim``; out-of-range values raise
    RuntimeError "index 5 is out of bounds for dimension 1 with size 3"."""
    return ops.gather.default(input, dim, index)


def _scatter_args(src, value):
    if value is not None:
        return ops.scatter.value, value
    if isinstance(src, Tensor):
        return ops.scatter.src, src
    return ops.scatter.value, src


def scatter(input, dim, index, src=None, value=None):
    """A copy of ``input`` with ``out[i][index[i][j]] = src[i][j]`` (dim 1); ``src`` may be a
    tensor (same dtype as ``input``) or a Python number (``value``)."""
    op, arg = _scatter_args(src, value)
    return op(input, dim, index, arg)


def scatter_(self, dim, index, src=None, value=None):
    """In-place ``scatter``; bumps ``self._version``."""
    op, arg = _scatter_args(src, value)
    inplace = ops.scatter_.src if op is ops.scatter.src else ops.scatter_.value
    return inplace(self, dim, index, arg)


def index_select(input, dim, index):
    """The slices of ``input`` at the positions ``index`` (1-D or 0-d, int64/int32) along
    ``dim``; out-of-range indices raise IndexError "index out of range in self"."""
    return ops.index_select.default(input, dim, index)


gather = _export(gather, "gather")
scatter = _export(scatter, "scatter")
Tensor.scatter_ = public_api(scatter_)
index_select = _export(index_select, "index_select")


# -- tril / triu / nonzero -----------------------------------------------------------------------
def tril(input, diagonal=0):
    """Zero the elements above the ``diagonal``-th diagonal of the last two dims (>= 2-D)."""
    return ops.tril.default(input, diagonal)


def triu(input, diagonal=0):
    """Zero the elements below the ``diagonal``-th diagonal of the last two dims (>= 2-D)."""
    return ops.triu.default(input, diagonal)


def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an int64 ``(n, ndim)`` tensor (column-major strides,
    as PyTorch's CPU kernel), or with ``as_tuple`` one 1-D tensor per dim. Raises
    NotImplementedError on meta tensors (the size depends on the data)."""
    if not as_tuple:
        return ops.nonzero.default(input)
    src = ops.unsqueeze.default(input, 0) if input.ndim == 0 else input
    return tuple(ops.unbind.int(ops.nonzero.default(src), 1))


tril = _export(tril, "tril")
triu = _export(triu, "triu")
nonzero = _export(nonzero, "nonzero")
Tensor.argwhere = nonzero


# -- softmax -------------------------------------------------------------------------------------
def _dtype_arg(dtype):
    return None if dtype is None else dt.to_dtype(dtype)


def softmax(input, dim, dtype=None):
    """``exp(x) / exp(x).sum(dim)`` along ``dim``, computed in ``dtype`` when given (the input
    is converted first). Floating inputs only (NotImplementedError otherwise, as PyTorch)."""
    dtype = _dtype_arg(dtype)
    if dtype is None:
        return ops.softmax.int(input, dim)
    return ops.softmax.int(input, dim, dtype)


def log_softmax(input, dim, dtype=None):
    """``x - log(exp(x).sum(dim))`` along ``dim``, in ``dtype`` when given."""
    dtype = _dtype_arg(dtype)
    if dtype is None:
        return ops.log_softmax.int(input, dim)
    return ops.log_softmax.int(input, dim, dtype)


softmax = _export(softmax, "softmax")
log_softmax = _export(log_softmax, "log_softmax")
