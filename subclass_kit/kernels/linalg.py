"""Matrix products: ``mm``, ``bmm``, ``addmm``, ``dot``, ``mv`` (one rule + a numpy fill each).

The rules check, in PyTorch's order, ranks, then sizes, then dtypes, with PyTorch's CPU texts
("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "expected m1 and m2 to have the same
dtype, but got: float != double"). Outputs are always fresh and contiguous. Meta tensors run the
same rule, so they raise the CPU texts too (PyTorch's meta kernels word some differently,
SEMANTICS.md §7). ``matmul``/``linear`` are composites in ``decompositions_nn.py``.

Note [Half accumulates in float]
    PyTorch's CPU gemm for float16 accumulates in float32 and rounds once at the end; numpy's
    float16 matmul would accumulate (and round) in float16. The fills upcast half to float32.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import contiguous_strides, format_size
from ..registry import ops, register_kernel, overload_of
from ..storage import CPU, META
from ._common import (
    Spec,
    check_out_device_first,
    common_device,
    register_rule,
    resize_out,
    type_name,
    type_string,
)
from ._iter_layout import alloc, contig

# C++ spellings of scalar types, as ``c10::ScalarType`` prints through ``caffe2::TypeMeta``.
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool"}


def cpp_name(dtype) -> str:
    """The C++ name PyTorch prints for a dtype in some checks ("float", "long int")."""
    return _CPP_NAMES[dtype.name]


def _not_implemented(kernel: str, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{type_name(dtype)}\'')


def _spec(sizes, dtype, tensors) -> Spec:
    sizes = tuple(sizes)
    return Spec(sizes, contiguous_strides(sizes), dtype, common_device(tensors))


def _compute_array(t):
    """The numpy operand of a product: float16 goes up to float32 (Note [Half accumulates...])."""
    a = t._array()
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _store(out, value):
    np.copyto(out, value, casting="unsafe")


# The fast paths below serve the calls a model makes (a Linear, attention's batched products):
# cpu operands of one float32/float64 dtype whose sizes fit. Such a call passes every check of
# the rule, and its fill is one matmul (and a bias add) straight into a fresh contiguous output,
# so these skip the rule's Spec and the fill's dtype and overlap tests. Any other call gets None
# and takes the full path (its checks, its errors, float16's float32 accumulation).
_FAST_PRODUCT = frozenset((dt.float32, dt.float64))


def _product_out(a, b):
    """A fresh output for ``a @ b`` (2-D or 3-D, batch sizes equal) or None, see above."""
    d = a._dtype
    if d is not b._dtype or d not in _FAST_PRODUCT or a._storage.device is not CPU or (
            b._storage.device is not CPU):
        return None
    s1, s2 = a._layout.sizes, b._layout.sizes
    n = len(s1)
    if n != len(s2) or not (n == 2 or (n == 3 and s1[0] == s2[0])) or s1[-1] != s2[-2]:
        return None
    sizes = s1[:-1] + s2[-1:]
    return alloc(sizes, contig(sizes), d, CPU)


def _fast_product(self, mat2, rank):
    """mm (``rank`` 2) and bmm (3); other ranks take the rule, which raises their errors."""
    if len(self._layout.sizes) != rank:
        return None
    out = _product_out(self, mat2)
    if out is not None:
        np.matmul(self._array(), mat2._array(), out=out._np)
    return out


def _fast_mm(self, mat2):
    return _fast_product(self, mat2, 2)


def _fast_bmm(self, mat2):
    return _fast_product(self, mat2, 3)


def _fast_addmm(self, mat1, mat2):
    """``addmm(bias, x, w)`` with the bias of the product's shape or of its last dim."""
    s1, s2 = mat1._layout.sizes, mat2._layout.sizes
    if (self._dtype is not mat1._dtype or self._storage.device is not CPU or len(s1) != 2
            or len(s2) != 2):
        return None
    sizes = self._layout.sizes
    if sizes != s2[1:] and sizes != (s1[0], s2[1]):
        return None
    out = _product_out(mat1, mat2)
    if out is not None:
        o = out._np
        np.matmul(mat1._array(), mat2._array(), out=o)
        np.add(o, self._array(), out=o)
    return out


# -- mm ------------------------------------------------------------------------------------------
def _mm_rule(self, mat2):
    if self.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    (n, k), (k2, m) = self._layout.sizes, mat2._layout.sizes
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CPP_NAMES[self._dtype.name]} != {_CPP_NAMES[mat2._dtype.name]}")
    if self._dtype is dt.bool_:
        raise _not_implemented("addmm_impl_cpu_", self._dtype)
    return _spec((n, m), self._dtype, (self, mat2))


def _product_into(out, a, b):
    """``out = a @ b``: straight into ``out`` when the dtypes agree (numpy's matmul copies an
    operand the output overlaps), else through a temporary and a cast."""
    if out.dtype == a.dtype == b.dtype:
        np.matmul(a, b, out=out)
    else:
        _store(out, np.matmul(a, b))


def _mm_fill(outs, spec, self, mat2):
    _product_into(outs[0], _compute_array(self), _compute_array(mat2))


# -- bmm -----------------------------------------------------------------------------------------
def _bmm_rule(self, mat2):
    if self.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    (b, n, k), (b2, k2, m) = self._layout.sizes, mat2._layout.sizes
    if (b2, k2) != (b, k):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {k}] but got: [{b2}, {k2}].")
    if self._dtype is dt.bool_:
        raise _not_implemented("bmm", self._dtype)
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {type_name(self._dtype)} but found "
                           f"{type_name(mat2._dtype)}")
    return _spec((b, n, m), self._dtype, (self, mat2))


def _bmm_fill(outs, spec, self, mat2):
    _product_into(outs[0], _compute_array(self), _compute_array(mat2))


# -- addmm ---------------------------------------------------------------------------------------
def expand_error(sizes, target) -> RuntimeError:
    """``expand``'s error when ``sizes`` does not broadcast to ``target`` (two spaces intended)."""
    lead = len(target) - len(sizes)
    for i in range(len(sizes) - 1, -1, -1):
        if sizes[i] != 1 and sizes[i] != target[lead + i]:
            return RuntimeError(
                f"The expanded size of the tensor ({target[lead + i]}) must match the existing "
                f"size ({sizes[i]}) at non-singleton dimension {lead + i}.  Target sizes: "
                f"{format_size(target)}.  Tensor sizes: {format_size(sizes)}")
    return RuntimeError("expand: shapes do not broadcast")


def _check_expands(self, target):
    """addmm expands ``self`` to the product's shape (PyTorch's ``expand_size``)."""
    sizes = self._layout.sizes
    if sizes == target or (len(sizes) == 1 and sizes[0] == target[-1]):
        return      # (the bias of a Linear)
    if len(sizes) > len(target):
        raise RuntimeError(
            f"expand({type_string(self._dtype)}{{{format_size(sizes)}}}, "
            f"size={format_size(target)}): the number of sizes provided ({len(target)}) must be "
            f"greater or equal to the number of dimensions in the tensor ({len(sizes)})")
    lead = len(target) - len(sizes)
    for i, s in enumerate(sizes):
        if s != 1 and s != target[lead + i]:
            raise expand_error(sizes, target)


def _addmm_rule(self, mat1, mat2, *, beta=1, alpha=1):
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{type_name(self._dtype)} and {type_name(mat2._dtype)}")
    if mat1._dtype is not mat2._dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{type_name(mat1._dtype)} and {type_name(mat2._dtype)}")
    s1, s2 = mat1._layout.sizes, mat2._layout.sizes
    if len(s1) != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {len(s1)}-D tensor")
    if len(s2) != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {len(s2)}-D tensor")
    (n, k), (k2, m) = s1, s2
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    _check_expands(self, (n, m))
    if mat1._dtype is dt.bool_:
        raise _not_implemented("addmm_impl_cpu_", mat1._dtype)
    return _spec((n, m), mat1._dtype, (self, mat1, mat2))


def _scalar_for(dtype, value):
    # Integral outputs truncate float alpha/beta (PyTorch converts the Scalar to the dtype).
    return value if dtype.is_floating_point else int(value)


def _addmm_fill(outs, spec, self, mat1, mat2, *, beta=1, alpha=1):
    out = outs[0]
    if alpha == 1 and beta == 1:
        a, b, c = mat1._array(), mat2._array(), self._array()
        if (out.dtype == a.dtype == b.dtype == c.dtype and a.dtype != np.float16
                and out.flags.c_contiguous and not np.may_share_memory(out, c)):
            # The common Linear call: the product written straight into the output (numpy's
            # matmul copies an operand the output overlaps), then the bias added in place:
            # the same two roundings as below, no temporaries.
            np.matmul(a, b, out=out)
            np.add(out, c, out=out)
            return
    beta, alpha = _scalar_for(spec.dtype, beta), _scalar_for(spec.dtype, alpha)
    a, b = _compute_array(mat1), _compute_array(mat2)
    prod = np.matmul(a, b)
    if alpha != 1:
        prod = prod * np.asarray(alpha, prod.dtype)
    if beta != 0:
        # beta == 0 ignores self entirely: nan/inf in self do not propagate (BLAS semantics).
        base = _compute_array(self)
        prod = prod + (base if beta == 1 else base * np.asarray(beta, base.dtype))
    _store(outs[0], np.broadcast_to(prod, spec.sizes))


# -- dot / mv ------------------------------------------------------------------------------------
def _dot_rule(self, tensor):
    if self.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {tensor.ndim}D "
                           "tensors")
    if self._dtype is not tensor._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{type_name(self._dtype)} and {type_name(tensor._dtype)}")
    n, n2 = self._layout.sizes[0], tensor._layout.sizes[0]
    if n != n2:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{n2}] to "
                           f"have the same number of elements, but got {n} and {n2} elements "
                           "respectively")
    if self._dtype is dt.bool_:
        raise _not_implemented("dot", self._dtype)
    return _spec((), self._dtype, (self, tensor))


def _dot_fill(outs, spec, self, tensor):
    _store(outs[0], np.dot(_compute_array(self), _compute_array(tensor)))


def _mv_rule(self, vec):
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self.ndim}, {vec.ndim}")
    (n, k), k2 = self._layout.sizes, vec._layout.sizes[0]
    if k != k2:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({k2})")
    if self._dtype is not vec._dtype:
        # addmv's check lists (result, mat, vec) dtypes; the result takes vec's dtype.
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{type_name(vec._dtype)}, {type_name(self._dtype)}, and "
                           f"{type_name(vec._dtype)}")
    if self._dtype is dt.bool_:
        raise _not_implemented("addmv_impl_cpu", self._dtype)
    return _spec((n,), self._dtype, (self, vec))


def _mv_fill(outs, spec, self, vec):
    _store(outs[0], np.matmul(_compute_array(self), _compute_array(vec)))


register_rule(ops.mm, _mm_rule, _mm_fill, fast=_fast_mm)
register_rule(ops.bmm, _bmm_rule, _bmm_fill, fast=_fast_bmm)
register_rule(ops.addmm, _addmm_rule, _addmm_fill, fast=_fast_addmm)
register_rule(ops.dot, _dot_rule, _dot_fill)
register_rule(ops.mv, _mv_rule, _mv_fill)


def _register_exact_out(op_out, functional):
    """out= of a product: ``out`` must have the result dtype exactly (no casting, PyTorch)."""
    # packets: the overloads their calls run
    op_out, functional = overload_of(op_out), overload_of(functional)

    def kernel(self, mat2, *, out):
        check_out_device_first(self, out)
        spec = functional.rule(self, mat2)
        if out._dtype is not spec.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES[spec.dtype.name]}, "
                               f"but got {_CPP_NAMES[out._dtype.name]} instead")
        resize_out(out, spec, functional.name)
        if out._storage.device is not META:
            functional.fill([out._array()], spec, self, mat2)
        return out

    register_kernel(op_out, "cpu")(kernel)
    register_kernel(op_out, "meta")(kernel)


_register_exact_out(ops.mm.out, ops.mm)
_register_exact_out(ops.bmm.out, ops.bmm)


# -- baddbmm -------------------------------------------------------------------------------------
def _baddbmm_rule(self, batch1, batch2, *, beta=1, alpha=1):
    """``beta * self + alpha * (batch1 @ batch2)`` (PyTorch's ``baddbmm`` meta: ``self``
    expands to ``[b, n, m]`` first, then the dtype and the bmm checks)."""
    from ..layout import wrap_dim
    sizes1, sizes2 = batch1._layout.sizes, batch2._layout.sizes
    target = []
    for t, sizes, d in ((batch1, sizes1, 0), (batch1, sizes1, 1), (batch2, sizes2, 2)):
        target.append(sizes[wrap_dim(d, len(sizes))])
    _check_expands(self, tuple(target))
    if self._dtype is not batch1._dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {cpp_name(self._dtype)}, "
                           f"batch1: {cpp_name(batch1._dtype)}, batch2: "
                           f"{cpp_name(batch2._dtype)}")
    spec = _bmm_rule(batch1, batch2)
    return spec._replace(device=common_device((self, batch1, batch2)))


def _baddbmm_fill(outs, spec, self, batch1, batch2, *, beta=1, alpha=1):
    _addmm_fill(outs, spec, self, batch1, batch2, beta=beta, alpha=alpha)


def _baddbmm_inplace(self, batch1, batch2, *, beta=1, alpha=1):
    spec = _baddbmm_rule(self, batch1, batch2, beta=beta, alpha=alpha)
    if self._layout.sizes != spec.sizes:
        raise RuntimeError(f"Bad in-place call: input tensor size {format_size(self._layout.sizes)}"
                           f" and output tensor size {format_size(spec.sizes)} should match")
    if self._storage.device is not META:
        _baddbmm_fill([self._array()], spec, self, batch1, batch2, beta=beta, alpha=alpha)
    return self


def _baddbmm_out(self, batch1, batch2, *, beta=1, alpha=1, out):
    check_out_device_first(self, out)
    spec = _baddbmm_rule(self, batch1, batch2, beta=beta, alpha=alpha)
    if out._dtype is not spec.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES[spec.dtype.name]}, "
                           f"but got {_CPP_NAMES[out._dtype.name]} instead")
    resize_out(out, spec, "baddbmm")
    if out._storage.device is not META:
        _baddbmm_fill([out._array()], spec, self, batch1, batch2, beta=beta, alpha=alpha)
    return out


register_rule(ops.baddbmm, _baddbmm_rule, _baddbmm_fill)
for _device in ("cpu", "meta"):
    register_kernel(ops.baddbmm_, _device)(_baddbmm_inplace)
    register_kernel(ops.baddbmm.out, _device)(_baddbmm_out)
