"""A diagonal matrix that stores only its diagonal.

The idea
    An ``n x n`` diagonal matrix has ``n`` interesting numbers, not ``n*n``. ``DiagonalTensor``
    keeps just the diagonal and answers ops with *structure-aware* rules where the result is
    known to be diagonal or cheap (``D + D``, ``D * 3``, ``D @ D``, ``D @ A`` = row scaling,
    ``D.t()``), and falls back to the dense matrix only when it must. It is the smallest
    example of a *structured* tensor (like ``torch.sparse``, or a linear-operator library's
    ``DiagLinearOperator``).

How it works
    A wrapper subclass of shape ``(n, n)`` (contiguous strides) over the 1-d tensor ``diag``.
    ``__tensor_dispatch__`` looks the op up in ``_RULES`` (op -> rule function); a rule may
    return ``NotImplemented`` when its arguments do not fit (e.g. ``D * A`` with a broadcast
    shape), and then the fallback densifies every DiagonalTensor argument
    (``sk.eye(n) * diag``) and runs the op on plain tensors. ``t``/``transpose`` are view ops:
    the result is a DiagonalTensor over the same ``diag`` and ``sk.return_and_correct_aliasing``
    makes it share the input's Storage. Mutating ops are refused (RuntimeError) unless a rule
    keeps the matrix diagonal (``mul_`` by a number, ``add_`` of a DiagonalTensor).

    A rule declines (and the dense op raises PyTorch's error) when the dense op would fail:
    ``D @ A`` of two dtypes, ``D.transpose(0, 5)``.

Tradeoffs
    + O(n) memory and O(n) or O(n^2) ops instead of O(n^2) / O(n^3) (``D @ A`` scales rows).
    - Off-diagonal entries are *structural* zeros, never multiplied (as ``torch.sparse``
      treats unstored entries): ``D @ A`` and ``D * A`` with an inf or NaN in ``A`` have 0
      off the diagonal where the dense product has NaN (``0 * inf``).
    - Every op not in the table pays a densification: the table is the whole optimisation.
    - Other view ops (``D[0]``, ``D.view(-1)``) fall back to a dense temporary: their results
      are copies, not views, so writing to them does not reach ``D``.
"""

from __future__ import annotations

import subclass_kit as sk

ops = sk.ops


class DiagonalTensor(sk.Tensor):
    """An ``(n, n)`` diagonal matrix stored as its diagonal ``diag`` of shape ``(n,)``."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(diag: sk.Tensor) -> DiagonalTensor:
        if diag.dim() != 1:
            raise ValueError(f"DiagonalTensor: diag must be 1-d, got shape {list(diag.shape)}")
        n = diag.shape[0]
        w = sk.make_wrapper_subclass(DiagonalTensor, (n, n), dtype=diag.dtype,
                                     device=diag.device)
        w.diag = diag
        return w

    def to_dense(self) -> sk.Tensor:
        # Written onto the diagonal of zeros, not ``eye(n) * diag``: that gives NaN off the
        # diagonal for an inf or NaN on it (0 * inf), and -0.0 beside negative entries.
        n = self.diag.shape[0]
        out = sk.zeros(n, n, dtype=self.diag.dtype, device=self.diag.device)
        out.diagonal().copy_(self.diag)
        return out

    def __repr__(self):
        return f"DiagonalTensor(diag={self.diag!r})"

    def __tensor_flatten__(self):
        return ["diag"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return DiagonalTensor.wrap(inner["diag"])

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = _RULES.get(func)
        if rule is not None:
            out = rule(*args, **kwargs)
            if out is not NotImplemented:
                return sk.return_and_correct_aliasing(func, args, kwargs, out)
        if func.mutated_args:
            raise RuntimeError(f"DiagonalTensor does not support {func!r}: the result would "
                               "not be diagonal. Use .to_dense() first.")
        dense = sk.pytree.tree_map_only(cls, lambda t: t.to_dense(), (args, kwargs))
        return func(*dense[0], **dense[1])


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _same_diag_pair(a, b) -> bool:
    return isinstance(a, DiagonalTensor) and isinstance(b, DiagonalTensor) and \
        a.shape == b.shape


def _add(a, b, alpha=1):
    if _same_diag_pair(a, b):
        return DiagonalTensor.wrap(ops.add(a.diag, b.diag, alpha=alpha))
    return NotImplemented


def _sub(a, b, alpha=1):
    if _same_diag_pair(a, b):
        return DiagonalTensor.wrap(ops.sub(a.diag, b.diag, alpha=alpha))
    return NotImplemented


def _mul(a, b):
    if _same_diag_pair(a, b):
        return DiagonalTensor.wrap(a.diag * b.diag)
    d, other = (a, b) if isinstance(a, DiagonalTensor) else (b, a)
    if _is_number(other):
        return DiagonalTensor.wrap(d.diag * other)
    if isinstance(other, sk.Tensor) and other.shape == d.shape:
        return DiagonalTensor.wrap(d.diag * other.diagonal())   # zero off the diagonal
    return NotImplemented


def _mm(a, b):
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        return NotImplemented                  # the dense mm raises PyTorch's error
    if _same_diag_pair(a, b):
        return DiagonalTensor.wrap(a.diag * b.diag)
    if isinstance(a, DiagonalTensor):
        return b * a.diag.unsqueeze(1)         # scales the rows of b
    return a * b.diag                          # scales the columns of a


def _neg(a):
    return DiagonalTensor.wrap(ops.neg(a.diag))


def _transpose(a, *dims):
    if not all(-2 <= d < 2 for d in dims):
        return NotImplemented                   # the dense transpose raises the IndexError
    return DiagonalTensor.wrap(a.diag)          # symmetric: same diagonal, aliasing


def _mul_(a, b):
    if isinstance(a, DiagonalTensor) and _is_number(b):
        a.diag.mul_(b)
        return a
    return NotImplemented


def _add_(a, b, alpha=1):
    if _same_diag_pair(a, b):
        a.diag.add_(b.diag, alpha=alpha)
        return a
    return NotImplemented


_RULES = {
    ops.add.Tensor: _add, ops.sub.Tensor: _sub, ops.mul.Tensor: _mul, ops.mm.default: _mm,
    ops.neg.default: _neg, ops.t.default: _transpose, ops.transpose.int: _transpose,
    ops.mul_.Tensor: _mul_, ops.add_.Tensor: _add_,
}


def diag_matrix(diag: sk.Tensor) -> DiagonalTensor:
    """The diagonal matrix with ``diag`` on its diagonal (stores only ``diag``)."""
    return DiagonalTensor.wrap(diag)
