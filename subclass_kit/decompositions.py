"""Composite ops, written with ``sk.ops`` primitives so every mode sees what they lower to
(PyTorch's CompositeImplicitAutograd). Registered with ``@register_decomposition``.

Op streams users see (SEMANTICS.md §5.1): ``reshape``/``flatten`` -> ``view`` when the
strides allow it, else ``clone`` + ``_unsafe_view``; ``chunk`` -> ``split``; ``narrow`` ->
``slice``; ``movedim`` -> ``permute``; ``contiguous`` -> nothing (contiguous input) or
``clone``; ``view_as``/``expand_as`` -> ``view``/``expand``.
"""

from __future__ import annotations

from . import _dtype as dt
from .layout import format_size, infer_size, view_shape, wrap_dim
from .registry import ops, register_decomposition
from .kernels._common import type_name
from .tensor import Tensor, contiguous_format, preserve_format


@register_decomposition(ops.reshape)
def reshape(self, shape):
    shape, strides = view_shape(self._layout, shape)
    if strides is not None:
        return ops.view(self, shape)
    return ops._unsafe_view(ops.clone(self, memory_format=contiguous_format), shape)


@register_decomposition(ops.flatten)
def flatten(self, start_dim=0, end_dim=-1):
    n = len(self._layout.sizes)
    if n == 0:
        return ops.reshape(self, [1])
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    sizes = self._layout.sizes
    merged = 1
    for d in range(s, e + 1):
        merged *= sizes[d]
    return ops.reshape(self, list(sizes[:s]) + [merged] + list(sizes[e + 1:]))


@register_decomposition(ops.unflatten)
def unflatten(self, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one may be -1) with a ``view``; PyTorch's texts."""
    n = len(self._layout.sizes)
    d = wrap_dim(dim, n)
    sizes = list(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if n == 0:
        raise RuntimeError("unflatten got an unexpected error:\nDimension specified as 0 but "
                           "tensor has no dimensions")
    cur = self._layout.sizes[d]
    try:
        inferred = infer_size(sizes, cur)
    except RuntimeError as e:
        if "is invalid for input of size" not in str(e):
            raise RuntimeError(f"unflatten got an unexpected error:\n{e}") from None
        raise RuntimeError(f"unflatten: Provided sizes {format_size(sizes)} don't multiply up "
                           f"to the size of dim {d} ({cur}) in the input tensor") from None
    new = list(self._layout.sizes[:d]) + list(inferred) + list(self._layout.sizes[d + 1:])
    return ops.view(self, new)


@register_decomposition(ops.view_as)
def view_as(self, other):
    return ops.view(self, list(other._layout.sizes))


@register_decomposition(ops.expand_as)
def expand_as(self, other):
    return ops.expand(self, list(other._layout.sizes))


@register_decomposition(ops.narrow)
def narrow(self, dim, start, length):
    n = len(self._layout.sizes)
    if n == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = self._layout.sizes[d]
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return ops.slice(self, d, start, start + length, 1)


@register_decomposition(ops.chunk)
def chunk(self, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = len(self._layout.sizes)
    if n == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, n)
    size = self._layout.sizes[d]
    split_size = (size + chunks - 1) // chunks
    if split_size == 0 and size == 0:
        return ops.split_with_sizes(self, [0] * chunks, d)
    return ops.split(self, split_size, d)


@register_decomposition(ops.movedim)
def movedim(self, source, destination):
    n = len(self._layout.sizes)
    src, dst = list(source), list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} "
                           f"dims) should contain the same number of dims as destination "
                           f"({dst} dims)")
    source = [wrap_dim(s, n) for s in src]
    destination = [wrap_dim(s, n) for s in dst]
    if len(set(source)) != len(source):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(destination)) != len(destination):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    if n == 0:
        return ops.alias(self)
    order = [-1] * n
    for s, dst in zip(source, destination):
        order[dst] = s
    rest = iter(d for d in range(n) if d not in source)
    order = [o if o != -1 else next(rest) for o in order]
    return ops.permute(self, order)


@register_decomposition(ops.contiguous)
def contiguous(self, *, memory_format=contiguous_format):
    if self.is_contiguous(memory_format=memory_format):
        return self
    return ops.clone(self, memory_format=memory_format)


# -- sorting -------------------------------------------------------------------------------------
@register_decomposition(ops.argsort)
def argsort(self, dim=-1, descending=False):
    """The indices of ``sort`` (PyTorch's CompositeImplicitAutograd: modes see ``sort``)."""
    return ops.sort(self, dim, descending)[1]


@register_decomposition(ops.argsort.stable)
def argsort_stable(self, *, stable, dim=-1, descending=False):
    return ops.sort.stable(self, stable=stable, dim=dim, descending=descending)[1]


# -- tile, diag, outer, kron, meshgrid: PyTorch's CompositeImplicitAutograd bodies ----------------
@register_decomposition(ops.tile)
def tile(self, dims):
    """``repeat`` with ``dims`` padded by leading 1s to ``self.dim()`` (numpy's ``tile``)."""
    dims = list(dims)
    pad = len(self._layout.sizes) - len(dims)
    return ops.repeat(self, [1] * pad + dims if pad > 0 else dims)


@register_decomposition(ops.diag)
def diag(self, diagonal=0):
    """1-D -> ``diag_embed``, 2-D -> ``diagonal_copy``; other ranks raise RuntimeError."""
    ndim = len(self._layout.sizes)
    if ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {ndim}D")
    if ndim == 1:
        return ops.diag_embed(self, diagonal)
    return ops.diagonal_copy(self, diagonal)


def _check_1d(t, name, fn):
    if len(t._layout.sizes) != 1:
        raise RuntimeError(f"{fn}: Expected 1-D argument {name}, but got "
                           f"{len(t._layout.sizes)}-D")


@register_decomposition(ops.outer)
def outer(self, vec2):
    """``self.reshape(n, 1) * vec2`` for 1-D operands (type promotion of ``mul``)."""
    _check_1d(self, "self", "outer")
    _check_1d(vec2, "vec2", "outer")
    return ops.mul(ops.reshape(self, [self._layout.sizes[0], 1]), vec2)


@register_decomposition(ops.kron)
def kron(self, other):
    """Interleave unit dims into both operands (``_unsafe_view``), ``mul``, and merge pairs of
    dims (``_unsafe_view``), as PyTorch's ``KronImpl``: when the product of transposed operands
    is not viewable, the last step raises view's RuntimeError, as in PyTorch."""
    a_sizes, b_sizes = self._layout.sizes, other._layout.sizes
    n = max(len(a_sizes), len(b_sizes))
    a = (1,) * (n - len(a_sizes)) + tuple(a_sizes)
    b = (1,) * (n - len(b_sizes)) + tuple(b_sizes)
    a_shape = [s for x in a for s in (x, 1)]
    b_shape = [s for x in b for s in (1, x)]
    product = ops.mul(ops._unsafe_view(self, a_shape), ops._unsafe_view(other, b_shape))
    return ops._unsafe_view(product, [x * y for x, y in zip(a, b)])


@register_decomposition(ops.meshgrid)
def meshgrid(tensors):
    """``meshgrid.indexing`` with "ij", PyTorch's default."""
    return ops.meshgrid.indexing(tensors, indexing="ij")


@register_decomposition(ops.meshgrid.indexing)
def meshgrid_indexing(tensors, *, indexing):
    """One ``view`` + ``expand`` per 0-D or 1-D tensor; "xy" swaps the first two. Raises
    RuntimeError for an empty list, mixed dtypes or devices, another ``indexing``, or a tensor
    of more than one dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for a, b in zip(tensors, tensors[1:]):
        if a._dtype is not b._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if a._storage.device is not b._storage.device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    elif indexing != "xy" and indexing != "ij":
        raise RuntimeError(f'sk.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f"{indexing}")
    for t in tensors:
        if len(t._layout.sizes) > 1:
            raise RuntimeError(f"sk.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of size {format_size(t._layout.sizes)}")
    shape = [t._layout.numel() for t in tensors]
    grids = []
    for i, t in enumerate(tensors):
        view_shape = [1] * len(tensors)
        view_shape[i] = -1
        grids.append(ops.expand(ops.view(t, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return grids


# -- pointwise composites: PyTorch's CompositeImplicitAutograd bodies -----------------------------
@register_decomposition(ops.square)
def square(self):
    """``pow(self, 2)``: bool becomes int64, as PyTorch."""
    return ops.pow(self, 2)


@register_decomposition(ops.square_)
def square_(self):
    return ops.pow_(self, 2)


@register_decomposition(ops.square.out)
def square_out(self, *, out):
    return ops.pow.Tensor_Tensor_out(self, 2, out=out)


@register_decomposition(ops.fix)
def fix(self):
    return ops.trunc(self)


@register_decomposition(ops.fix_)
def fix_(self):
    return ops.trunc_(self)


@register_decomposition(ops.fix.out)
def fix_out(self, *, out):
    return ops.trunc.out(self, out=out)


@register_decomposition(ops.isfinite)
def isfinite(self):
    """Integral and bool: ``ones_like(bool)``; floating: ``(self == self) * (|self| != inf)``
    (PyTorch's op order: ``abs``, ``ne``, ``eq``, ``mul``)."""
    if not self._dtype.is_floating_point:
        return ops.ones_like(self, dtype=dt.bool_, memory_format=preserve_format)
    finite = ops.ne(ops.abs(self), float("inf"))
    return ops.mul(ops.eq(self, self), finite)


def _as_double(x):
    """``x.to(float64)`` (itself when already float64); a Python number becomes a float."""
    if isinstance(x, Tensor):
        return x if x._dtype is dt.float64 else ops._to_copy(x, dtype=dt.float64)
    return float(x)


@register_decomposition(ops.float_power)
def float_power(self, exponent):
    """``pow`` in float64 (complex is not supported here)."""
    return ops.pow(_as_double(self), _as_double(exponent))


@register_decomposition(ops.float_power_)
def float_power_(self, exponent):
    if self._dtype is not dt.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{type_name(self._dtype)} but the operation's result requires "
                           f"dtype Double")
    return ops.pow_(self, _as_double(exponent))


@register_decomposition(ops.float_power.Tensor_Tensor_out)
def float_power_out(self, exponent, *, out):
    if out._dtype is not dt.float64:
        raise RuntimeError(f"the output given to float_power has dtype {type_name(out._dtype)} "
                           f"but the operation's result requires dtype Double")
    return ops.pow.Tensor_Tensor_out(_as_double(self), _as_double(exponent), out=out)
