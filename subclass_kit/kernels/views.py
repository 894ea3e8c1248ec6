"""View ops: a layout rule plus the *same* Storage, identical on cpu and meta (no numpy work).

Stride rules: SEMANTICS.md §1.2 (PyTorch's ``TensorShape.cpp``). Every view returns a new tensor
object even when its metadata is unchanged. Bounds: ``as_strided`` and in-place metadata ops
check the layout against the storage on every device (Note [Views share Storage]); PyTorch
skips the check on meta, we do not (documented difference).
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._state import tls
from ..layout import (
    Layout,
    _tuple_new,
    checked_numel,
    compute_storage_nbytes,
    compute_storage_nbytes_contiguous,
    contiguous_strides,
    format_size,
    resolve_negative_strides,
    view_shape,
    wrap_dim,
    wrap_dims,
)
from ..registry import ops
from ..tensor import make_tensor, make_view
from ._common import both_devices, type_name, type_string
from ._scalars import cpp_name


def check_bounds(layout: Layout, dtype, storage, symbolic: bool = False):
    """Raise RuntimeError when ``layout`` reaches outside ``storage`` (PyTorch's
    ``checkInBoundsForStorage``, SEMANTICS.md §1.5): "setStorage: sizes [3, 3], strides [3, 3],
    storage offset 0, and itemsize 4 requiring a storage size of 52 are out of bounds for
    storage of size 40". Layouts without elements are never checked; the offset's sign is
    checked by the caller, before this (PyTorch's order). Runs on meta too (see module doc)."""
    if symbolic:
        # PyTorch's SymInt overload (used by as_strided_): plain signed math, no overflow check.
        if 0 in layout.sizes:
            return
        nbytes = dtype.itemsize * (1 + sum(st * (sz - 1)
                                           for sz, st in zip(layout.sizes, layout.strides)))
    else:
        nbytes = compute_storage_nbytes(layout.sizes, layout.strides, dtype.itemsize)
    if nbytes == 0:
        return
    need = nbytes + layout.offset * dtype.itemsize
    if need > storage._nbytes:
        raise RuntimeError(
            f"setStorage: sizes {format_size(layout.sizes)}, strides "
            f"{format_size(layout.strides)}, storage offset {layout.offset}, and itemsize "
            f"{dtype.itemsize} requiring a storage size of {need} are out of bounds for storage "
            f"of size {storage._nbytes}")


def _check_offset(offset):
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")


def _view_layout(self, size) -> Layout:
    src = self._layout
    shape, strides = view_shape(src, size)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _tuple_new(Layout, (shape, strides, src.offset))


@both_devices(ops.view)
def view(self, size):
    return make_view(self, _view_layout(self, size))


def _dtype_alias(self, layout, dtype):
    """``view(dtype)`` output: PyTorch marks it non-differentiable, so it is no view for
    autograd (``_base`` None, ``_is_view()`` False) yet shares storage and version counter,
    like ``detach()``. The sharing is autograd's, so it is skipped inside inference mode (the
    output is an inference tensor, like any new tensor there), for an inference input (a normal
    tensor with a fresh counter outside the mode) and below a subclass handler (own counter)."""
    t = make_tensor(self._storage, layout, dtype)
    if not (tls.inference or self._inference or tls.below):
        t._vc = self._vc
    return t


@both_devices(ops.view.dtype)
def view_dtype(self, dtype):
    """Reinterpret the bytes as ``dtype``: same itemsize keeps the layout; a smaller one
    multiplies the last dim, a larger one divides it. PyTorch's checks, in its order."""
    dtype = dt.to_dtype(dtype)
    old, new = self._dtype.itemsize, dtype.itemsize
    layout = self._layout
    if old == new:
        return _dtype_alias(self, layout, dtype)
    names = f"{type_name(self._dtype)} as {type_name(dtype)} (different element sizes)"
    if not layout.sizes:
        raise RuntimeError(f"self.dim() cannot be 0 to view {names}")
    if new < old:
        ratio = old // new
        if layout.strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {names}, but got "
                               f"{layout.strides[-1]}")
        sizes = layout.sizes[:-1] + (layout.sizes[-1] * ratio,)
        strides = tuple(s * ratio for s in layout.strides[:-1]) + (1,)
        return _dtype_alias(self, Layout(sizes, strides, layout.offset * ratio), dtype)
    ratio = new // old
    if layout.sizes[-1] % ratio:
        raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {names}, but got "
                           f"{layout.sizes[-1]}")
    if layout.offset % ratio:
        raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to view {names}, "
                           f"but got {layout.offset}")
    if layout.strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 to view {names}, but got "
                           f"{layout.strides[-1]}")
    for d, s in enumerate(layout.strides[:-1]):
        if s % ratio:
            raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} to view {names}, "
                               f"but got {s}")
    sizes = layout.sizes[:-1] + (layout.sizes[-1] // ratio,)
    strides = tuple(s // ratio for s in layout.strides[:-1]) + (1,)
    return _dtype_alias(self, Layout(sizes, strides, layout.offset // ratio), dtype)


@both_devices(ops._unsafe_view)
def _unsafe_view(self, size):
    # Not a view in the schema: the output is a fresh tensor over the (fresh) input storage.
    # Of an inference tensor it is one too (PyTorch's kernel views and drops the view relation).
    out = make_tensor(self._storage, _view_layout(self, size), self._dtype)
    if self._inference and not out._inference:
        out._vc = None
        out._inference = True
    return out


def _as_strided_layout(self, size, stride, storage_offset, inplace=False):
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    for s in stride:
        if s < 0:
            raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                               f"got strides: {format_size(stride)}")
    offset = self._layout.offset if storage_offset is None else storage_offset
    layout = Layout(size, stride, offset)
    _check_offset(offset)
    check_bounds(layout, self._dtype, self._storage, symbolic=inplace)
    checked_numel(size)
    return layout


@both_devices(ops.as_strided)
def as_strided(self, size, stride, storage_offset=None):
    return make_view(self, _as_strided_layout(self, size, stride, storage_offset))


@both_devices(ops.transpose)
def transpose(self, dim0, dim1):
    n = len(self._layout.sizes)
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    return make_view(self, self._layout.transpose(d0, d1) if n else self._layout)


def _t_layout(self, name="t"):
    n = len(self._layout.sizes)
    if n > 2:
        raise RuntimeError(f"{name}() expects a tensor with <= 2 dimensions, but self is {n}D")
    return self._layout.transpose(0, 1) if n == 2 else self._layout


@both_devices(ops.t)
def t(self):
    return make_view(self, _t_layout(self))


def _permute_dims(self, dims):
    n = len(self._layout.sizes)
    dims = tuple(dims)
    if len(dims) != n:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{n} is not equal to len(dims) = {len(dims)}")
    wrapped = tuple(wrap_dim(d, n) for d in dims)
    if len(set(wrapped)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return wrapped


@both_devices(ops.permute)
def permute(self, dims):
    return make_view(self, self._layout.permute(_permute_dims(self, dims)))


def expand_sizes(self, size) -> tuple:
    """Validated target sizes of ``expand`` (-1 keeps a size). PyTorch's error texts."""
    size = tuple(size)
    old = self._layout.sizes
    if len(size) < len(old):
        raise RuntimeError(
            f"expand({type_string(self._dtype)}{{{format_size(old)}}}, size="
            f"{format_size(size)}): the number of sizes provided ({len(size)}) must be greater "
            f"or equal to the number of dimensions in the tensor ({len(old)})")
    lead = len(size) - len(old)
    out = list(size)
    # Last dim first, as PyTorch's infer_expand_geometry (the reported dim is the last bad one).
    for i in range(len(size) - 1, -1, -1):
        s = size[i]
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            continue
        cur = old[i - lead]
        if s == -1:
            out[i] = cur
        elif cur != s and cur != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {format_size(size)}.  Tensor "
                f"sizes: {format_size(old)}")
    return tuple(out)


@both_devices(ops.expand)
def expand(self, size, *, implicit=False):
    layout = self._layout.expand(expand_sizes(self, size))
    if math.prod(layout.sizes) >= 1 << 63:
        checked_numel(layout.sizes)  # PyTorch: "numel: integer multiplication overflow"
    return make_view(self, layout)


def _squeeze_dims(self, dim):
    n = len(self._layout.sizes)
    seen = set(wrap_dims(dim, n))     # a 0-d tensor checks the dims, then squeezes none
    return seen if n else set()


@both_devices(ops.squeeze.dims)
def squeeze(self, dim):
    return make_view(self, self._layout.squeeze(_squeeze_dims(self, dim)))


@both_devices(ops.unsqueeze)
def unsqueeze(self, dim):
    d = wrap_dim(dim, len(self._layout.sizes) + 1)
    return make_view(self, self._layout.unsqueeze(d))


def select_layout(layout: Layout, dim, index) -> Layout:
    """``select``'s output layout over ``layout``; PyTorch's IndexErrors (0-d input, dim or
    index out of range). Shared with ``select_backward``."""
    n = len(layout.sizes)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = layout.sizes[d]
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{format_size(layout.sizes)} at dimension {d}")
    return layout.select(d, index + size if index < 0 else index)


@both_devices(ops.select)
def select(self, dim, index):
    return make_view(self, select_layout(self._layout, dim, index))


def slice_bounds(size, start, end, step):
    """Clamp slice bounds the way PyTorch does; returns (start, end). RuntimeError on step <= 0
    (``x[::-1]`` raises ValueError before reaching the op)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


def slice_layout(layout: Layout, dim, start, end, step) -> Layout:
    """``slice``'s output layout over ``layout`` (bounds clamped by :func:`slice_bounds`);
    IndexError for a 0-d input or a bad dim. Shared with ``slice_backward``."""
    n = len(layout.sizes)
    if n == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    start, end = slice_bounds(layout.sizes[d], start, end, step)
    return layout.slice(d, start, end, step)


@both_devices(ops.slice)
def slice_(self, dim=0, start=None, end=None, step=1):
    return make_view(self, slice_layout(self._layout, dim, start, end, step))


def diagonal_layout(layout: Layout, offset, dim1, dim2) -> Layout:
    """``diagonal``'s output layout over ``layout``; IndexError for a bad dim, RuntimeError
    for identical dims. Shared with ``diagonal_backward``."""
    n = len(layout.sizes)
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return layout.diagonal(offset, d1, d2)


@both_devices(ops.diagonal)
def diagonal(self, offset=0, dim1=0, dim2=1):
    return make_view(self, diagonal_layout(self._layout, offset, dim1, dim2))


@both_devices(ops.unfold)
def unfold(self, dimension, size, step):
    n = len(self._layout.sizes)
    d = wrap_dim(dimension, n)
    cur = self._layout.sizes[d] if n else 1
    if size > cur:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {cur} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return make_view(self, self._layout.unfold(d, size, step))


def _split_sizes(total, split_size):
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got "
                           f"split_size={split_size}")
    if split_size == 0:
        if total != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {total}")
        return [0]
    count = max((total + split_size - 1) // split_size, 1)
    return [min(split_size, total - i * split_size) for i in range(count)]


def _split_views(self, sizes, d):
    views = []
    start = 0
    for s in sizes:
        views.append(make_view(self, self._layout.slice(d, start, start + s, 1),
                               multi_output=True))
        start += s
    return views


@both_devices(ops.split)
def split(self, split_size, dim=0):
    n = len(self._layout.sizes)
    if n == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, n)
    return _split_views(self, _split_sizes(self._layout.sizes[d], split_size), d)


@both_devices(ops.split_with_sizes)
def split_with_sizes(self, split_sizes, dim=0):
    n = len(self._layout.sizes)
    if n == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, n)
    total = self._layout.sizes[d]
    sizes = list(split_sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                           f"entries, but got split_sizes={format_size(sizes)}")
    if sum(sizes) != total:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {total} (input tensor's "
            f"size at dimension {dim}), but got split_sizes={format_size(sizes)}")
    return _split_views(self, sizes, d)


@both_devices(ops.unbind)
def unbind(self, dim=0):
    n = len(self._layout.sizes)
    if n == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, n)
    return [make_view(self, self._layout.select(d, i), multi_output=True)
            for i in range(self._layout.sizes[d])]


@both_devices(ops.alias)
def alias(self):
    return make_view(self, self._layout)


@both_devices(ops.lift_fresh)
def lift_fresh(self):
    return self


@both_devices(ops.detach)
def detach(self):
    # Not a view for autograd (no _base), but it shares storage and version counter.
    # An inference tensor's detach() outside the mode gets a fresh, enabled counter (PyTorch's
    # loophole, SEMANTICS.md §4.2); a normal tensor's detach() is normal even in the mode.
    t = make_tensor(self._storage, self._layout, self._dtype)
    if self._inference:
        t._inference = True
        t._vc = None if tls.inference else [0]
    else:
        t._inference = False
        t._vc = self._vc
    if self._np_buf is not None:    # same storage and layout: the same numpy view serves
        t._np, t._np_buf = self._np, self._np_buf
    return t


ops.detach.default.tags.add("not_a_view_for_autograd")
ops.view.dtype.tags.add("not_a_view_for_autograd")
# view(dtype) shares the counter at autograd's level, which inference mode and inference inputs
# skip (_dtype_alias); detach() at ADInplaceOrView's, which runs in inference mode too.
ops.view.dtype.tags.add("alias_in_autograd")
ops.lift_fresh.default.tags.add("returns_input")


# -- in-place metadata ops (PyTorch's inplace_view tag) -------------------------------------------
@both_devices(ops.t_)
def t_(self):
    self._set_layout(_t_layout(self, "t_"))
    return self


@both_devices(ops.transpose_)
def transpose_(self, dim0, dim1):
    n = len(self._layout.sizes)
    if n:
        self._set_layout(self._layout.transpose(wrap_dim(dim0, n), wrap_dim(dim1, n)))
    return self


@both_devices(ops.unsqueeze_)
def unsqueeze_(self, dim):
    d = wrap_dim(dim, len(self._layout.sizes) + 1)
    self._set_layout(self._layout.unsqueeze(d))
    return self


@both_devices(ops.squeeze_.dims)
def squeeze_(self, dim):
    self._set_layout(self._layout.squeeze(_squeeze_dims(self, dim)))
    return self


@both_devices(ops.as_strided_)
def as_strided_(self, size, stride, storage_offset=None):
    self._set_layout(_as_strided_layout(self, size, stride, storage_offset, inplace=True))
    return self


@both_devices(ops.resize_)
def resize_(self, size, *, memory_format=None):
    size = tuple(size)
    # PyTorch's autograd-level check: it runs under no_grad too, but not inside inference mode,
    # on inference tensors or below autograd (inside out= kernels and handlers). With grad on
    # and a new size, check_inplace raises it first.
    if self.requires_grad and not (tls.inference or self._inference or tls.below):
        raise RuntimeError("cannot resize variables that require grad")
    checked_numel(size)  # a negative size only passes next to a 0, as in PyTorch
    if size == self._layout.sizes:
        return self
    # PyTorch's resize_impl: "Storage size calculation overflowed with sizes=[...]" (its meta
    # kernel wraps around instead; one rule per op).
    compute_storage_nbytes_contiguous(size, self._dtype.itemsize, self._layout.offset)
    from ..layout import channels_last_strides
    from ..tensor import channels_last
    from ._common import resize_storage_for
    strides = (channels_last_strides(size) if memory_format is channels_last
               else contiguous_strides(size))
    resize_storage_for(self, Layout(size, strides, self._layout.offset))
    return self


def resize_changes(self, size, **kwargs) -> bool:
    """Whether ``resize_(size)`` bumps the version (only when the size changes, §2.2)."""
    return tuple(size) != self._layout.sizes


@both_devices(ops.resize_as_)
def resize_as_(self, the_template, *, memory_format=None):
    """``resize_(self, the_template.shape)``: contiguous strides (or ``memory_format``'s) when
    the size changes, as PyTorch's ``resize_as_``."""
    return resize_(self, the_template._layout.sizes, memory_format=memory_format)


@both_devices(ops.set_.source_Storage_storage_offset)
def set_storage(self, source, storage_offset, size, stride=()):
    """Point ``self`` at ``source`` with the given layout (contiguous when ``stride`` is
    empty). Like PyTorch's cpu kernel, a storage too small for the layout is *grown*; errors
    (PyTorch's texts) are raised before anything changes."""
    size = tuple(size)
    if stride and len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length "
                           f"({len(stride)})")
    if source.device is not self._storage.device:
        raise RuntimeError(f'Attempted to set the storage of a tensor on device '
                           f'"{self._storage.device.type}" to a storage on different device '
                           f'"{source.device.type}".  This is no longer allowed; the devices '
                           f'must match.')
    _check_offset(storage_offset)
    checked_numel(size)
    stride = tuple(stride) if stride else contiguous_strides(size)
    need = compute_storage_nbytes(size, stride, self._dtype.itemsize, storage_offset)
    stride = resolve_negative_strides(size, stride)
    if need > source._nbytes:
        source.resize_(need)
    self._storage = source
    self._set_layout(Layout(size, stride, storage_offset))
    return self


@both_devices(ops.set_.source_Tensor)
def set_tensor(self, source):
    if source._dtype is not self._dtype:
        raise RuntimeError(f"Could not set tensor of type {cpp_name(source._dtype)} to a tensor "
                           f"of type {cpp_name(self._dtype)}")
    self._storage = source._storage
    self._set_layout(source._layout)
    return self


ops.resize_.default.bump_if = resize_changes
ops.resize_as_.default.bump_if = lambda self, the_template, **kw: resize_changes(
    self, the_template._layout.sizes)

__all__ = ["check_bounds", "diagonal_layout", "expand_sizes", "select_layout", "slice_bounds",
           "slice_layout"]
