"""Functional counterparts of the view ops, used by functionalization (SEMANTICS.md §6.5).

- ``X_scatter(self, src, *view_args)``: a fresh tensor equal to ``self`` except that the region
  ``self.X(*view_args)`` holds ``src`` (exactly the view's shape; dtype is cast). The output
  keeps ``self``'s sizes, strides and storage offset over a copy of its whole storage (PyTorch's
  ``clone_preserve_strides``); an ``self`` with internal overlap (expanded) is cloned densely.
- ``select_backward``, ``slice_backward``, ``diagonal_backward(grad_output, input_sizes,
  *view_args)``: zeros of ``input_sizes`` with ``grad_output`` written into the view's region
  (PyTorch's backward ops of those views, which its autograd formulas call).
- ``<view>_copy(self, *view_args)``: the view's values in a fresh contiguous tensor, no aliasing.
  Each kernel is derived from the view op's kernel (view, then materialise), so the errors are
  the view's. ``view_copy`` of a non-viewable layout copies like ``reshape`` (as PyTorch does).
"""

from __future__ import annotations

import numpy as np

from ..layout import Layout, broadcast_shapes, contiguous_strides, format_size, infer_size
from ..registry import ops, register_kernel, overload_of
from ..storage import META, Storage
from ..tensor import make_tensor
from ._common import Spec, new_tensor, register_rule
from .views import diagonal_layout, select_layout, slice_layout


def _both(op, fn):
    op = overload_of(op)  # packet: the overload it calls
    register_kernel(op, "cpu")(fn)
    register_kernel(op, "meta")(fn)
    return fn


def _kernel(op, t):
    return op._kernels[t._storage.device.type]


def _materialize(view):
    """A fresh contiguous copy of ``view`` (same dtype and device)."""
    sizes = view._layout.sizes
    out = new_tensor(Spec(sizes, contiguous_strides(sizes), view._dtype, view._storage.device))
    if view._storage.device is not META:
        np.copyto(out._array(), view._array())
    return out


# -- *_scatter ------------------------------------------------------------------------------------
def clone_preserve_strides(self):
    """A copy of ``self`` with its sizes, strides and offset over a copy of its storage."""
    if self._layout.has_internal_overlap():
        return _kernel(ops.clone.default, self)(self)
    src = self._storage
    if src._shadow is not None:
        src._drop_shadow()      # the words of a bfloat16 storage, up to date
    if src._buffer is None or src._buffer.nbytes != src._nbytes:
        storage = Storage(src._nbytes, src.device)
        if storage._buffer is not None:
            storage._buffer[:] = src._bytes()[:src._nbytes]
    else:
        # One numpy copy of the (C-contiguous) buffer: functionalization runs a scatter per
        # mutation, so this copy is its per-mutation cost.
        storage = Storage._over(src._buffer.copy(), src.device)
    return make_tensor(storage, self._layout, self._dtype)


def _scatter_kernel(view_op):
    def kernel(self, src, *args, **kwargs):
        out = clone_preserve_strides(self)
        region = _kernel(view_op, out)(out, *args, **kwargs)
        if region._layout.sizes != src._layout.sizes:
            raise RuntimeError(
                f"expected src to have a size equal to the slice of self. src size = "
                f"{format_size(src._layout.sizes)}, slice size = "
                f"{format_size(region._layout.sizes)}")
        if out._storage.device is not META:
            if src._storage.device is META:
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            np.copyto(region._array(), src._array(), casting="unsafe")
        return out
    kernel.__name__ = f"{view_op.name}_scatter"
    return kernel


_SCATTERS = {ops.slice_scatter.default: ops.slice.Tensor,
             ops.select_scatter.default: ops.select.int,
             ops.diagonal_scatter.default: ops.diagonal.default,
             ops.as_strided_scatter.default: ops.as_strided.default}
for _op, _view in _SCATTERS.items():
    _both(_op, _scatter_kernel(_view))


# -- select_backward / slice_backward / diagonal_backward ---------------------------------------
def _view_backward(view_layout):
    """The rule and fill of a view's backward op (PyTorch's ``select_backward``...): zeros of
    ``input_sizes`` (contiguous, ``grad_output``'s dtype and device) with ``grad_output``
    written through ``view_layout(zeros_layout, *view_args)``. The checks are PyTorch's, in its
    order: ``zeros``' negative size, the view's (IndexError/RuntimeError), then ``copy_``'s
    broadcast of ``grad_output`` to the view's shape."""
    def rule(grad_output, input_sizes, *view_args):
        sizes = tuple(input_sizes)
        if any(s < 0 for s in sizes):
            raise RuntimeError("zeros: Dimension size must be non-negative.")
        strides = contiguous_strides(sizes)
        region = view_layout(Layout(sizes, strides, 0), *view_args)
        shape = broadcast_shapes(region.sizes, grad_output._layout.sizes)
        if shape != region.sizes:
            raise RuntimeError(f"output with shape {format_size(region.sizes)} doesn't match "
                               f"the broadcast shape {format_size(shape)}")
        return Spec(sizes, strides, grad_output._dtype, grad_output._storage.device)

    def fill(outs, spec, grad_output, input_sizes, *view_args):
        out = outs[0]
        out[...] = 0
        region = view_layout(Layout(spec.sizes, spec.strides, 0), *view_args)
        if 0 in region.sizes:
            return
        item = out.itemsize
        view = np.ndarray(region.sizes, out.dtype, out, region.offset * item,
                          tuple(st * item for st in region.strides))
        np.copyto(view, grad_output._array())
    return rule, fill


register_rule(ops.select_backward, *_view_backward(select_layout))
register_rule(ops.slice_backward, *_view_backward(slice_layout))
register_rule(ops.diagonal_backward, *_view_backward(diagonal_layout))


# -- <view>_copy ----------------------------------------------------------------------------------
def _copy_kernel(view_op):
    def kernel(self, *args, **kwargs):
        res = _kernel(view_op, self)(self, *args, **kwargs)
        if isinstance(res, (list, tuple)):
            return [_materialize(v) for v in res]
        return _materialize(res)
    kernel.__name__ = f"{view_op.name}_copy"
    return kernel


def view_copy(self, size):
    """``view`` as a copy; a layout ``view`` rejects is copied like ``reshape`` instead."""
    shape = infer_size(tuple(size), self._layout.numel())
    out = new_tensor(Spec(shape, contiguous_strides(shape), self._dtype, self._storage.device))
    if self._storage.device is not META:
        np.copyto(out._array(), np.reshape(self._array(), shape))
    return out


def copy_op_of(view_op):
    """The ``<view>_copy`` overload matching a view op overload, or None."""
    from ..registry import _lookup
    packet = _lookup(view_op.name + "_copy")
    return None if packet is None else packet._overloads.get(view_op.overload)


def _register_copies():
    for op in list(ops):
        # The cheap tests first: ``is_view`` parses a schema not parsed yet (Note [Lazy
        # schemas]), and only ops with a ``<name>_copy`` counterpart need it.
        copy_op = copy_op_of(op)
        if copy_op is None or op.decomposition is not None or not op._kernels:
            continue
        if not (op.is_view or op.name == "lift_fresh"):
            continue
        _both(copy_op, view_copy if copy_op is ops.view_copy.default else _copy_kernel(op))


_register_copies()

__all__ = ["clone_preserve_strides", "copy_op_of", "view_copy"]


# -- functional variants of in-place fills and resize_ -------------------------------------------
# ``zero``, ``uniform``, ``normal_functional``, ``resize``, ``bernoulli.Tensor``: what
# functionalization runs for ``zero_``, ``uniform_``, ``normal_``, ``resize_``, ``bernoulli_.Tensor`` (PyTorch's ops of the same names). Each is the
# in-place kernel on ``clone(self)``, so checks, errors and random streams are the in-place
# op's: a functionalized random fill draws the same numbers as the eager one.
def _on_copy(inplace_op):
    inplace_op = overload_of(inplace_op)    # a packet: the overload its call runs

    def kernel(self, *args, **kwargs):
        out = _kernel(ops.clone.default, self)(self)
        _kernel(inplace_op, out)(out, *args, **kwargs)
        return out
    kernel.__name__ = inplace_op.name[:-1]
    return kernel


_both(ops.zero, _on_copy(ops.zero_))
_both(ops.uniform, _on_copy(ops.uniform_))
_both(ops.normal_functional, _on_copy(ops.normal_))
_both(ops.resize, _on_copy(ops.resize_))
_both(ops.bernoulli.Tensor, _on_copy(ops.bernoulli_.Tensor))
