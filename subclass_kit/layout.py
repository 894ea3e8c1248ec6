"""Strided layout: sizes, strides (in elements) and storage offset, with pure view math.

A ``Layout`` is an immutable value (the idea of tinygrad's ``View``); every view op is a method
returning a new ``Layout``, or ``None`` from :meth:`Layout.view` when the new shape is not
expressible over the same memory (PyTorch's ``computeStride`` returning nullopt). Stride rules
follow PyTorch 2.13 (``aten/src/ATen/native/TensorShape.cpp``); see SEMANTICS.md §1.2-1.4.

``Size`` (PyTorch's ``torch.Size``) is the shape type tensors report; ``layout`` and its one
value ``strided`` are PyTorch's ``torch.layout`` / ``torch.strided`` (``sk.layout``).

This module is stdlib only: it knows nothing about storage, dtypes or numpy.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "Layout",
    "Size",
    "broadcast_shapes",
    "channels_last_strides",
    "checked_numel",
    "compute_storage_nbytes",
    "compute_storage_nbytes_contiguous",
    "contiguous_strides",
    "format_size",
    "infer_size",
    "layout",
    "resolve_negative_strides",
    "strided",
    "wrap_dim",
    "wrap_dims",
]


class layout:
    """A memory layout (``torch.layout``). Only ``sk.strided`` exists: subclass_kit has no
    sparse or mkldnn tensors. Singletons; compare with ``is`` or ``==``. (Not :class:`Layout`,
    one tensor's sizes, strides and offset.)"""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"sk.{self.name}"

    def __reduce__(self):
        return "strided"


strided = layout("strided")


def format_size(sizes) -> str:
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def wrap_dim(dim: int, ndim: int, scalar_ok: bool = True) -> int:
    """Wrap a possibly negative ``dim`` into ``[0, ndim)``; 0-d tensors accept -1 and 0.

    Raises IndexError with PyTorch's text: "Dimension out of range (expected to be in range of
    [-2, 1], but got 2)", TypeError for a ``dim`` that is not an integer (float, bool).
    """
    n = ndim if ndim > 0 or not scalar_ok else 1
    if dim < -n or dim >= n or dim.__class__ is not int:
        if isinstance(dim, bool) or not hasattr(dim, "__index__"):
            # PyTorch's argument parser rejects the type before any range check.
            raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}")
        dim = dim.__index__()
        if -n <= dim < n:
            return dim + n if dim < 0 else dim
        if n == 0:
            raise IndexError(
                f"dimension specified as {dim} but tensor has no dimensions")
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim: int) -> tuple:
    """Each of ``dims`` wrapped by :func:`wrap_dim`, in the given order (PyTorch's
    ``dim_list_to_bitset``). Raises RuntimeError "dim 1 appears multiple times in the list of
    dims" for a repeated dim, and what ``wrap_dim`` raises."""
    seen = []
    for d in dims:
        w = wrap_dim(d, ndim)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return tuple(seen)


def contiguous_strides(sizes) -> tuple:
    """Row-major strides; a size-0 or size-1 dim counts as 1 (``empty(3,0,2)`` -> (2, 2, 1))."""
    strides = []
    acc = 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= max(1, s)
    return tuple(reversed(strides))


def channels_last_strides(sizes) -> tuple:
    """NHWC strides of a 4-d NCHW shape: (2,3,4,5) -> (60, 1, 15, 3). Sizes are not clamped
    to 1, as in PyTorch's ``get_channels_last_strides_2d``: (2,0,3,4) -> (0, 1, 0, 0)."""
    if len(sizes) != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    _, c, h, w = sizes
    return (h * w * c, 1, w * c, c)


_U64 = 1 << 64


def compute_storage_nbytes(sizes, strides, itemsize: int, offset: int = 0) -> int:
    """Bytes of storage a layout needs, PyTorch's ``computeStorageNbytes``: 0 as soon as a size
    is 0 (no check at all then), else ``(offset + 1 + sum((size-1)*stride)) * itemsize`` in
    unsigned 64-bit arithmetic, where a negative size or stride makes a term wrap around.

    Raises RuntimeError "Storage size calculation overflowed with sizes=[-3] and strides=[1]"
    when that overflows or exceeds the int64 range (``storage_max``).
    """
    total = (offset + 1) % _U64
    overflowed = False
    for size, stride in zip(sizes, strides):
        if size == 0:
            return 0
        term = (stride % _U64) * ((size - 1) % _U64)
        overflowed |= term >= _U64
        total += term % _U64
        overflowed |= total >= _U64
        total %= _U64
    total *= itemsize
    overflowed |= total >= 1 << 63
    if overflowed:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={format_size(sizes)} "
                           f"and strides={format_size(strides)}")
    return total


def compute_storage_nbytes_contiguous(sizes, itemsize: int, offset: int = 0) -> int:
    """Bytes of a fresh contiguous storage for ``sizes``, PyTorch's
    ``computeStorageNbytesContiguous``: ``(prod(sizes) + offset) * itemsize`` in unsigned 64-bit
    arithmetic, the product taken left to right (so ``[2**32, 2**32, 0]`` overflows before the
    0 is reached, while ``[0, 2**32, 2**32]`` does not).

    Raises RuntimeError "Storage size calculation overflowed with sizes=[2305843009213693952]"
    when a step overflows or the bytes exceed the int64 range (``storage_max``).
    """
    prod, overflowed = 1, False
    for size in sizes:
        prod *= size
        if prod >= _U64:
            overflowed, prod = True, prod % _U64
    total = (prod + offset) * itemsize
    if overflowed or total >= 1 << 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={format_size(sizes)}")
    return total


def resolve_negative_strides(sizes, strides) -> tuple:
    """Strides as PyTorch's ``TensorImpl::set_sizes_and_strides`` stores them: a negative stride
    (only reachable where it cannot matter: a dim of size <= 1, or no elements) becomes the
    row-major stride of its position, ``max(size[d+1], 1) * stride[d+1]``, or 1 for the last."""
    out = list(strides)
    for d in range(len(out) - 1, -1, -1):
        if out[d] < 0:
            out[d] = 1 if d == len(out) - 1 else max(sizes[d + 1], 1) * out[d + 1]
    return tuple(out)


def checked_numel(sizes) -> int:
    """Product of ``sizes`` as PyTorch's ``safe_compute_numel``: unsigned 64-bit, so a negative
    size only survives next to a 0. Raises RuntimeError "numel: integer multiplication
    overflow"."""
    prod, overflowed = 1, False
    for size in sizes:
        prod *= size % _U64
        overflowed |= prod >= _U64
        prod %= _U64
    if overflowed or prod >= 1 << 63:
        raise RuntimeError("numel: integer multiplication overflow")
    return prod


def infer_size(shape, numel: int) -> tuple:
    """Resolve one ``-1`` in ``shape`` against ``numel`` (PyTorch's ``infer_size``).

    Raises RuntimeError with PyTorch's texts for bad shapes.
    """
    shape = tuple(shape)
    infer = None
    prod = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise RuntimeError(
                f"invalid shape dimension {s} at index {i} of shape {format_size(shape)}")
        else:
            prod *= s
    if infer is None:
        if prod == numel:
            return shape
    elif prod != 0 and numel % prod == 0:
        return shape[:infer] + (numel // prod,) + shape[infer + 1:]
    elif prod == 0:
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape {format_size(shape)} because the "
            "unspecified dimension size -1 can be any value and is ambiguous")
    raise RuntimeError(f"shape '{format_size(shape)}' is invalid for input of size {numel}")


def broadcast_shapes(*shapes) -> tuple:
    """NumPy/PyTorch broadcasting of shapes. Raises RuntimeError naming the mismatching dim:
    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1".
    """
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        off = ndim - len(shape)
        for i in range(len(shape) - 1, -1, -1):  # last dim first, as PyTorch's infer_size
            s = shape[i]
            cur = out[off + i]
            if s != cur:
                if cur == 1:
                    out[off + i] = s
                elif s != 1:
                    raise RuntimeError(
                        f"The size of tensor a ({cur}) must match the size of tensor b ({s}) at "
                        f"non-singleton dimension {off + i}")
    return tuple(out)


class Size(tuple):
    """A tensor shape (PyTorch's ``torch.Size``): a tuple of ints with ``numel()``."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"sk.Size({list(self)})"

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out


class Layout(NamedTuple):
    """Sizes, strides (elements) and storage offset (elements) of a strided tensor."""

    sizes: tuple
    strides: tuple
    offset: int = 0

    @staticmethod
    def contiguous(sizes, offset: int = 0) -> Layout:
        sizes = tuple(sizes)
        return Layout(sizes, contiguous_strides(sizes), offset)

    # -- queries ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.sizes)

    def numel(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n

    def is_contiguous(self) -> bool:
        """PyTorch's rule: every dim of size != 1 has stride == product of later sizes; a
        tensor without elements is always contiguous."""
        if 0 in self.sizes:
            return True
        expected = 1
        for size, stride in zip(reversed(self.sizes), reversed(self.strides)):
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True

    def _is_dense_in_order(self, dims) -> bool:
        """Whether ``dims`` (innermost first) are packed densely: every dim of size != 1 has
        stride == product of the sizes before it in ``dims``."""
        expected = 1
        for d in dims:
            size, stride = self.sizes[d], self.strides[d]
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True

    def is_channels_last(self) -> bool:
        """Whether the layout is NHWC-dense (``is_contiguous(memory_format=channels_last)``).
        No shortcut for empty tensors, as in PyTorch: (0,2,3,4) contiguous is not NHWC."""
        return len(self.sizes) == 4 and self._is_dense_in_order((1, 3, 2, 0))

    def is_channels_last_3d(self) -> bool:
        """Whether a 5-d layout is NDHWC-dense (``channels_last_3d``)."""
        return len(self.sizes) == 5 and self._is_dense_in_order((1, 4, 3, 2, 0))

    def is_non_overlapping_and_dense(self) -> bool:
        """True when the elements tile a contiguous block in some dim order (any permutation).
        As PyTorch's TensorImpl: contiguous (so any empty tensor) or channels-last, else
        ``compute_non_overlapping_and_dense`` (dims of size < 2 ignored)."""
        if self.is_contiguous() or self.is_channels_last() or self.is_channels_last_3d():
            return True
        sizes, strides = self.sizes, self.strides
        if len(sizes) == 1:
            return sizes[0] < 2 or strides[0] == 1
        dims = sorted((d for d in range(len(sizes)) if sizes[d] >= 2), key=lambda d: strides[d])
        expected = 1
        for d in dims:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
        return True

    def has_internal_overlap(self) -> bool:
        """Whether two elements certainly share memory (PyTorch's ``has_internal_overlap`` ==
        ``MemOverlap::Yes``): not dense and some dim of size > 1 has stride 0."""
        if self.is_non_overlapping_and_dense():
            return False
        return any(st == 0 and sz > 1 for sz, st in zip(self.sizes, self.strides))

    def storage_extent(self) -> int:
        """Elements of storage needed from element 0: ``offset + sum((size-1)*stride) + 1``,
        or 0 when the layout has no element (PyTorch skips the bound check then)."""
        extent = 1
        for size, stride in zip(self.sizes, self.strides):
            if size == 0:
                return 0
            extent += (size - 1) * stride
        return self.offset + extent

    # -- view math -------------------------------------------------------------------------
    def permute(self, dims) -> Layout:
        return Layout(tuple(self.sizes[d] for d in dims), tuple(self.strides[d] for d in dims),
                      self.offset)

    def transpose(self, d0: int, d1: int) -> Layout:
        sizes, strides = list(self.sizes), list(self.strides)
        sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
        return Layout(tuple(sizes), tuple(strides), self.offset)

    def select(self, dim: int, index: int) -> Layout:
        return Layout(self.sizes[:dim] + self.sizes[dim + 1:],
                      self.strides[:dim] + self.strides[dim + 1:],
                      self.offset + index * self.strides[dim])

    def slice(self, dim: int, start: int, end: int, step: int) -> Layout:
        """``start``/``end`` already clamped into ``[0, size]`` with ``end >= start``."""
        length = (end - start + step - 1) // step
        sizes = self.sizes[:dim] + (length,) + self.sizes[dim + 1:]
        strides = self.strides[:dim] + (self.strides[dim] * step,) + self.strides[dim + 1:]
        return Layout(sizes, strides, self.offset + start * self.strides[dim])

    def unsqueeze(self, dim: int) -> Layout:
        if dim < len(self.sizes):
            stride = self.sizes[dim] * self.strides[dim]
        else:
            stride = 1
        return Layout(self.sizes[:dim] + (1,) + self.sizes[dim:],
                      self.strides[:dim] + (stride,) + self.strides[dim:], self.offset)

    def squeeze(self, dims) -> Layout:
        keep = [d for d in range(len(self.sizes)) if not (d in dims and self.sizes[d] == 1)]
        return Layout(tuple(self.sizes[d] for d in keep), tuple(self.strides[d] for d in keep),
                      self.offset)

    def expand(self, sizes) -> Layout:
        """``sizes`` already validated (same length or longer, -1 resolved). A broadcast dim
        gets stride 0; a new leading dim of size 1 gets ``size * stride`` of the dim after it
        (PyTorch's ``infer_expand_geometry``)."""
        sizes = tuple(sizes)
        lead = len(sizes) - len(self.sizes)
        strides = [0] * len(sizes)
        for i in range(len(sizes) - 1, -1, -1):
            if i >= lead:
                old, stride = self.sizes[i - lead], self.strides[i - lead]
            else:
                old = 1
                # (a 0-d input has no dim after: PyTorch reads a zero there)
                stride = sizes[i + 1] * strides[i + 1] if i + 1 < len(sizes) else 0
            strides[i] = stride if old == sizes[i] else 0
        return Layout(sizes, tuple(strides), self.offset)

    def diagonal(self, offset: int, d1: int, d2: int) -> Layout:
        n1, n2 = self.sizes[d1], self.sizes[d2]
        if offset >= 0:
            length = max(min(n1, n2 - offset), 0)
            start = offset * self.strides[d2]
        else:
            length = max(min(n1 + offset, n2), 0)
            start = -offset * self.strides[d1]
        keep = [d for d in range(len(self.sizes)) if d != d1 and d != d2]
        sizes = tuple(self.sizes[d] for d in keep) + (length,)
        strides = tuple(self.strides[d] for d in keep) + (self.strides[d1] + self.strides[d2],)
        return Layout(sizes, strides, self.offset + (start if length > 0 else 0))

    def unfold(self, dim: int, size: int, step: int) -> Layout:
        if len(self.sizes) == 0:
            return Layout((size,), (1,), self.offset)
        count = (self.sizes[dim] - size) // step + 1
        sizes = self.sizes[:dim] + (count,) + self.sizes[dim + 1:] + (size,)
        strides = (self.strides[:dim] + (self.strides[dim] * step,) + self.strides[dim + 1:]
                   + (self.strides[dim],))
        return Layout(sizes, strides, self.offset)

    def view(self, shape) -> Layout | None:
        """The layout of ``view(shape)`` over the same memory, or None when a group of merged
        dims is not memory-contiguous (PyTorch's ``computeStride``). ``shape`` has no -1.
        Memoised on (sizes, strides, shape): programs reshape the same few layouts."""
        shape = tuple(shape)
        key = (self.sizes, self.strides, shape)
        found = _VIEW_MEMO.get(key, _MISSING)
        if found is _MISSING:
            found = self._view_strides(shape)
            if len(_VIEW_MEMO) < 4096:
                _VIEW_MEMO[key] = found
        if found is None:
            return None
        return _tuple_new(Layout, (shape, found, self.offset))

    def _view_strides(self, shape):
        """Strides of ``view(shape)``, or None (the uncached body of :meth:`view`)."""
        layout = self._view_layout(shape)
        return None if layout is None else layout.strides

    def _view_layout(self, shape) -> Layout | None:
        old_sizes, old_strides = self.sizes, self.strides
        if len(old_sizes) == 0:
            return Layout(shape, (1,) * len(shape), self.offset)
        numel = self.numel()
        if numel == 0:
            if shape == old_sizes:
                return Layout(shape, old_strides, self.offset)
            return Layout(shape, contiguous_strides(shape), self.offset)
        new_strides = [0] * len(shape)
        view_d = len(shape) - 1
        chunk_base_stride = old_strides[-1]
        tensor_numel = 1
        view_numel = 1
        for tensor_d in range(len(old_sizes) - 1, -1, -1):
            tensor_numel *= old_sizes[tensor_d]
            if tensor_d == 0 or (old_sizes[tensor_d - 1] != 1 and
                                 old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
                while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                    new_strides[view_d] = view_numel * chunk_base_stride
                    view_numel *= shape[view_d]
                    view_d -= 1
                if view_numel != tensor_numel:
                    return None
                if tensor_d > 0:
                    chunk_base_stride = old_strides[tensor_d - 1]
                    tensor_numel = 1
                    view_numel = 1
        if view_d != -1:
            return None
        return Layout(shape, tuple(new_strides), self.offset)


_VIEW_MEMO: dict = {}
_MISSING = object()
_RESHAPES: dict = {}


def view_shape(layout: Layout, size) -> tuple:
    """``(shape, strides)`` of ``view(size)`` of ``layout``: ``size`` with its -1 resolved
    (``infer_size``'s errors), and the view's strides or None when no view exists (then
    ``reshape`` copies). Memoised on (sizes, strides, size)."""
    size = tuple(size)
    key = (layout.sizes, layout.strides, size)
    found = _RESHAPES.get(key)
    if found is None:
        shape = infer_size(size, layout.numel())
        view = layout.view(shape)
        found = (shape, None if view is None else view.strides)
        if len(_RESHAPES) < 4096:
            _RESHAPES[key] = found
    return found
# ``_tuple_new(Layout, (sizes, strides, offset))`` builds a Layout without the Python-level
# ``__new__`` of NamedTuple (hot paths, arguments already checked).
_tuple_new = tuple.__new__
