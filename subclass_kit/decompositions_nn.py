"""Composite linear-algebra and nn ops: ``matmul``, ``linear``, ``softmax``, ``log_softmax``,
``layer_norm``, ``einsum`` (PyTorch's CompositeImplicitAutograd versions, op for op).

They are written with ``sk.ops`` so every mode sees the primitives they lower to, in PyTorch's
order (SEMANTICS.md §5.1): ``matmul(2D, 2D)`` -> ``mm``; ``F.linear(x, w)`` -> ``t, mm``; with a
bias ``t, addmm``; a batched ``matmul`` folds into ``view, mm, _unsafe_view`` when the big
operand's batch dims are contiguous, else ``expand, reshape, bmm, _unsafe_view``.

One deviation: PyTorch squeezes with ``squeeze_.dim``/``squeeze.dim`` (one int); our op table
has only the ``dims`` (int list) overloads, so the stream shows ``squeeze_.dims``/``squeeze.dims``.

einsum follows ATen's ``einsum``: parse, take diagonals for repeated labels, unsqueeze and permute
every operand to ``output dims + contraction dims``, then contract left to right (or along
``path``) with ``sumproduct_pair`` (permute, reshape, ``bmm``, view, permute). So it runs on meta
tensors and under every mode with no kernel of its own, and output strides match PyTorch's
(``einsum("ij->ji", x)`` is a permuted view).
"""

from __future__ import annotations

from ._state import tls
from .layout import broadcast_shapes
from .registry import ops, register_decomposition
from .tensor import Tensor


def _prod(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


# -- matmul --------------------------------------------------------------------------------------
def _should_fold(tensor1, tensor2) -> bool:
    """PyTorch's ``should_fold``: fold the bigger operand's batch into mm rows when free."""
    larger = tensor1.ndim >= tensor2.ndim
    t1 = tensor1 if larger else ops.transpose.int(tensor2, -2, -1)
    dim_t2 = tensor2.ndim if larger else tensor1.ndim
    if not (t1.ndim >= 3 and dim_t2 <= 2):
        return False
    small_requires_grad = tensor2.requires_grad if larger else tensor1.requires_grad
    if small_requires_grad:
        return True
    if tensor1.ndim == 2:
        return False
    if t1._layout.numel() == 0:
        return True
    sizes, strides = t1._layout.sizes, t1._layout.strides
    return all(strides[i] == strides[i + 1] * sizes[i + 1] for i in range(t1.ndim - 2))


def _matmul_folded(tensor1, tensor2):
    transpose = tensor2.ndim > tensor1.ndim
    if transpose:
        t1 = ops.transpose.int(tensor2, -2, -1)
        t2 = ops.t.default(tensor1) if tensor1.ndim == 2 else tensor1
    else:
        t1, t2 = tensor1, tensor2
    sizes1 = t1._layout.sizes
    output_shape = list(sizes1[:-1])
    t1_folded = ops.reshape.default(t1, [_prod(output_shape), sizes1[-1]])
    if t2.ndim == 2:
        output_shape.append(t2._layout.sizes[1])
        output = ops._unsafe_view.default(ops.mm.default(t1_folded, t2), output_shape)
        return ops.contiguous.default(ops.transpose.int(output, -2, -1)) if transpose else output
    return ops._unsafe_view.default(ops.mv.default(t1_folded, t2), output_shape)


def _matmul_batched(tensor1, tensor2):
    d1, d2 = tensor1.ndim, tensor2.ndim
    s1, s2 = tensor1._layout.sizes, tensor2._layout.sizes
    n = s1[-2] if d1 > 1 else 1
    m1 = s1[-1]
    m2 = s2[-2] if d2 > 1 else s2[0]
    p = s2[-1] if d2 > 1 else 1
    batch = list(broadcast_shapes(s1[:max(d1 - 2, 0)], s2[:max(d2 - 2, 0)]))
    count = _prod(batch)
    t1 = ops.reshape.default(ops.expand.default(tensor1, batch + [n, m1]), [count, n, m1])
    vector_rhs = d2 == 1
    t2 = ops.expand.default(tensor2, batch + ([m2] if vector_rhs else [m2, p]))
    if vector_rhs:
        t2 = ops.unsqueeze.default(ops.reshape.default(t2, [count, m2]), 2)
    else:
        t2 = ops.reshape.default(t2, [count, m2, p])
    output_shape = batch + ([n] if d1 > 1 else []) + ([p] if d2 > 1 else [])
    out = ops.bmm.default(t1, t2)
    if vector_rhs:
        out = ops.squeeze.dims(out, [-1])
    return ops._unsafe_view.default(out, output_shape)


@register_decomposition(ops.matmul)
def matmul(self, other):
    d1, d2 = self.ndim, other.ndim
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        return ops.dot.default(self, other)
    if d1 == 2 and d2 == 1:
        return ops.mv.default(self, other)
    if d1 == 1 and d2 == 2:
        return ops.squeeze_.dims(ops.mm.default(ops.unsqueeze.default(self, 0), other), [0])
    if d1 == 2 and d2 == 2:
        return ops.mm.default(self, other)
    if d1 == 3 and d2 == 3:
        b1, b2 = self._layout.sizes[0], other._layout.sizes[0]
        # PyTorch squeezes a broadcast batch of one, so that the other operand is folded as
        # for 2-D @ 3-D, when the squeezed operand requires grad or is subclass-like (a
        # dispatch mode is active): the op stream shows the squeeze (``squeeze.dims`` here,
        # the only overload: docs/differences.md)
        if b1 != b2 and b1 == 1 and (self.requires_grad or _subclass_like(self)):
            return matmul(ops.squeeze.dims(self, [0]), other)
        if b1 != b2 and b2 == 1 and (other.requires_grad or _subclass_like(other)):
            return matmul(self, ops.squeeze.dims(other, [0]))
    if _should_fold(self, other):
        return _matmul_folded(self, other)
    return _matmul_batched(self, other)


# -- linear --------------------------------------------------------------------------------------
def _flatten_nd_linear(input, weight, bias):
    sizes = input._layout.sizes
    flat = ops.reshape.default(input, [_prod(sizes[:-1]), sizes[-1]])
    result = ops.addmm.default(bias, flat, ops.t.default(weight))
    return ops.view.default(result, list(sizes[:-1]) + [result._layout.sizes[1]])


def _subclass_like(t) -> bool:
    # PyTorch's isTensorSubclassLike: a subclass, or any dispatch mode active.
    return type(t) is not Tensor or bool(tls.dispatch_modes)


@register_decomposition(ops.linear)
def linear(input, weight, bias=None):
    di, dw = input.ndim, weight.ndim
    if di == 0 or dw == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{di}D and {dw}D")
    if di == 2 and bias is not None:
        return ops.addmm.default(bias, input, ops.t.default(weight))
    # Fused path for contiguous input and a bias that is 1-d once squeezed (PyTorch squeezes
    # only when the bias is not 1-d already: the op shows in the stream).
    if bias is not None and input.is_contiguous() and (
            bias.ndim == 1 or ops.squeeze.dims(bias, list(range(bias.ndim))).ndim == 1):
        return _flatten_nd_linear(input, weight, bias)
    output = ops.matmul.default(input, ops.t.default(weight))
    if bias is not None:
        if _subclass_like(bias):
            return ops.add.Tensor(output, bias)
        output = ops.add_.Tensor(output, bias)
    return output


# -- softmax / log_softmax / layer_norm ----------------------------------------------------------
def _converted(self, dtype):
    if dtype is None or dtype is self._dtype:
        return self
    return ops._to_copy.default(self, dtype=dtype)


@register_decomposition(ops.softmax)
def softmax(self, dim, dtype=None):
    return ops._softmax.default(_converted(self, dtype), dim, False)


@register_decomposition(ops.log_softmax)
def log_softmax(self, dim, dtype=None):
    return ops._log_softmax.default(_converted(self, dtype), dim, False)


@register_decomposition(ops.layer_norm)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return ops.native_layer_norm.default(input, list(normalized_shape), weight, bias, eps)[0]


# -- einsum --------------------------------------------------------------------------------------
_ELLIPSIS = "..."


def _parse_operand_labels(lhs: str, num_ops: int) -> list:
    labels = [[]]
    seen_ellipsis = False
    i = 0
    while i < len(lhs):
        c = lhs[i]
        if c == " ":
            pass
        elif c == ".":
            op = len(labels) - 1
            if seen_ellipsis:
                raise RuntimeError(f"einsum(): found '.' for operand {op} for which an ellipsis "
                                   "was already found")
            if lhs[i:i + 3] != _ELLIPSIS:
                raise RuntimeError(f"einsum(): found '.' for operand {op} that is not part of "
                                   "any ellipsis")
            labels[-1].append(_ELLIPSIS)
            seen_ellipsis = True
            i += 2
        elif c == ",":
            labels.append([])
            if len(labels) > num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in "
                                   "the equation")
            seen_ellipsis = False
        elif c.isascii() and c.isalpha():
            labels[-1].append(c)
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
        i += 1
    if len(labels) != num_ops:
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    return labels


def _einsum_plan(equation, operands):
    """Parse ``equation``; return per-operand labels, label -> permuted index, the number of
    output dims, the total permuted dims, the ellipsis start index and width."""
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    op_labels = _parse_operand_labels(lhs, len(operands))
    counts: dict = {}
    ell_num_dim = 0
    for i, (t, labels) in enumerate(zip(operands, op_labels)):
        nlabels = sum(1 for s in labels if s != _ELLIPSIS)
        has_ellipsis = nlabels != len(labels)
        for s in labels:
            if s != _ELLIPSIS:
                counts[s] = counts.get(s, 0) + 1
        if has_ellipsis:
            if nlabels > t.ndim:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({nlabels}) is more than the number of dimensions "
                                   f"({t.ndim}) for operand {i}")
            ell_num_dim = max(ell_num_dim, t.ndim - nlabels)
        elif nlabels != t.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlabels}) "
                               f"does not match the number of dimensions ({t.ndim}) for operand "
                               f"{i} and no ellipsis was given")
    perm: dict = {}
    perm_index, ell_index, ell_in_output = 0, 0, False
    if arrow < 0:
        perm_index, ell_in_output = ell_num_dim, True
        for s in sorted(counts):
            if counts[s] == 1:
                perm[s] = perm_index
                perm_index += 1
    else:
        rhs = equation[arrow + 2:]
        i = 0
        while i < len(rhs):
            c = rhs[i]
            if c == ".":
                if ell_in_output:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) "
                                       "was already found")
                if rhs[i:i + 3] != _ELLIPSIS:
                    raise RuntimeError("einsum(): found '.' for output that is not part of any "
                                       "ellipsis (...)")
                ell_index, ell_in_output = perm_index, True
                perm_index += ell_num_dim
                i += 2
            elif c != " ":
                if not (c.isascii() and c.isalpha()):
                    raise RuntimeError(f"einsum(): invalid subscript given at index "
                                       f"{len(lhs) + 2 + i} in the equation string, subscripts "
                                       "must be in [a-zA-Z]")
                if c in perm or c not in counts:
                    why = ("appears more than once in the output" if c in perm
                           else "does not appear in the equation for any input operand")
                    raise RuntimeError(f"einsum(): output subscript {c} {why}")
                perm[c] = perm_index
                perm_index += 1
            i += 1
    out_num_dim = perm_index
    if not ell_in_output:
        ell_index = perm_index
        perm_index += ell_num_dim
    for s in sorted(counts):
        if s not in perm:
            perm[s] = perm_index
            perm_index += 1
    return op_labels, perm, out_num_dim, perm_index, ell_index, ell_num_dim


def _align_operand(i, op, labels, perm, total, ell_index, ell_num_dim, label_size, ell_sizes,
                   dim_counts):
    """Diagonals for repeated labels, then unsqueeze + permute to the common dim order."""
    permutation = [-1] * total
    dim = 0
    for s in labels:
        if s == _ELLIPSIS:
            covered = op.ndim - (len(labels) - 1)
            for j in range(ell_num_dim - covered, ell_num_dim):
                size = op._layout.sizes[dim]
                if size != 1:
                    if ell_sizes[j] != 1 and ell_sizes[j] != size:
                        raise RuntimeError(
                            f"einsum(): dimension {j} covered by ellipsis in operand {i}has size "
                            f"{size} which does not broadcast with previously seen ellipsis with "
                            f"size {ell_sizes[j]} for the respective dimension")
                    ell_sizes[j] = size
                    dim_counts[ell_index + j] += 1
                permutation[ell_index + j] = dim
                dim += 1
        elif permutation[perm[s]] == -1:
            size = op._layout.sizes[dim]
            if size != 1:
                if label_size.get(s, 1) != 1 and label_size[s] != size:
                    raise RuntimeError(
                        f"einsum(): subscript {s} has size {size} for operand {i} which does not "
                        f"broadcast with previously seen size {label_size[s]}")
                label_size[s] = size
                dim_counts[perm[s]] += 1
            permutation[perm[s]] = dim
            dim += 1
        else:
            prev = permutation[perm[s]]
            a, b = op._layout.sizes[dim], op._layout.sizes[prev]
            if a != b:
                raise RuntimeError(f"einsum(): subscript {s} is repeated for operand {i} but the "
                                   f"sizes don't match, {a} != {b}")
            op = ops.movedim.intlist(ops.diagonal.default(op, 0, prev, dim), [-1], [prev])
    for k, val in enumerate(permutation):
        if val == -1:
            op = ops.unsqueeze.default(op, dim)
            permutation[k] = dim
            dim += 1
    return ops.permute.default(op, permutation)


def _sumproduct_pair(left, right, sum_dims):
    """ATen's ``sumproduct_pair`` (keepdim=True): multiply and sum ``sum_dims`` with one bmm."""
    if not sum_dims:
        return ops.mul.Tensor(left, right)
    ndim = left.ndim
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(ndim):
        sl, sr = left._layout.sizes[i] != 1, right._layout.sizes[i] != 1
        if i in sum_dims:
            if sl and sr:
                if left._layout.sizes[i] != right._layout.sizes[i]:
                    raise RuntimeError("non-broadcast dimensions must match")
                sum_size *= left._layout.sizes[i]
            elif sl:
                left = ops.sum.dim_IntList(left, [i], True)
            elif sr:
                right = ops.sum.dim_IntList(right, [i], True)
        elif sl and sr:
            if left._layout.sizes[i] != right._layout.sizes[i]:
                raise RuntimeError("non-broadcast dimensions must match")
            lro.append(i)
            lro_size *= left._layout.sizes[i]
        elif sl:
            lo.append(i)
            lo_size *= left._layout.sizes[i]
        else:
            ro.append(i)
            ro_size *= right._layout.sizes[i]
    out_size = ([left._layout.sizes[d] for d in lro] + [left._layout.sizes[d] for d in lo]
                + [1] * len(sum_dims) + [right._layout.sizes[d] for d in ro])
    lperm = lro + lo + list(sum_dims) + ro
    rperm = lro + list(sum_dims) + ro + lo
    operm = [-1] * len(out_size)
    for pos, d in enumerate(lro + lo + list(sum_dims) + ro):
        operm[d] = pos
    left = ops.reshape.default(ops.permute.default(left, lperm), [lro_size, lo_size, sum_size])
    right = ops.reshape.default(ops.permute.default(right, rperm), [lro_size, sum_size, ro_size])
    return ops.permute.default(ops.view.default(ops.bmm.default(left, right), out_size), operm)


def _contract(a, b, out_num_dim, total, dim_counts):
    sum_dims, a_sum, b_sum = [], [], []
    for dim in range(out_num_dim, total):
        if a._layout.sizes[dim] != 1 and b._layout.sizes[dim] != 1:
            dim_counts[dim] -= 1
            if dim_counts[dim] == 1:
                sum_dims.append(dim)
                dim_counts[dim] = 0
        elif dim_counts[dim] == 1:
            if a._layout.sizes[dim] != 1:
                a_sum.append(dim)
                dim_counts[dim] = 0
            elif b._layout.sizes[dim] != 1:
                b_sum.append(dim)
                dim_counts[dim] = 0
    if a_sum:
        a = ops.sum.dim_IntList(a, a_sum, True)
    if b_sum:
        b = ops.sum.dim_IntList(b, b_sum, True)
    return _sumproduct_pair(a, b, sum_dims)


@register_decomposition(ops.einsum)
def einsum(equation, tensors, *, path=None):
    operands = list(tensors)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    op_labels, perm, out_num_dim, total, ell_index, ell_num_dim = _einsum_plan(equation,
                                                                               operands)
    label_size: dict = {}
    ell_sizes = [1] * ell_num_dim
    dim_counts = [0] * total
    aligned = [_align_operand(i, op, labels, perm, total, ell_index, ell_num_dim, label_size,
                              ell_sizes, dim_counts)
               for i, (op, labels) in enumerate(zip(operands, op_labels))]
    steps = list(path) if path is not None else []
    while len(aligned) > 1:
        i, j = 0, 1
        if path is not None:
            i, j = sorted(steps[:2])
            steps = steps[2:]
        a, b = aligned[i], aligned[j]
        del aligned[j]
        del aligned[i]
        result = _contract(a, b, out_num_dim, total, dim_counts)
        if path is not None:
            aligned.append(result)
        else:
            aligned.insert(0, result)
    result = aligned[0]
    if total > out_num_dim:
        if len(operands) > 1:
            return ops.view.default(result, list(result._layout.sizes[:out_num_dim]))
        return ops.sum.dim_IntList(result, list(range(out_num_dim, total)))
    return result
