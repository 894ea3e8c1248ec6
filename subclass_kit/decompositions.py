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
        return ops.view.default(self, shape)
    return ops._unsafe_view.default(ops.clone.default(self, memory_format=contiguous_format), shape)


@register_decomposition(ops.flatten)
def flatten(self, start_dim=0, end_dim=-1):
    n = len(self._layout.sizes)
    if n == 0:
        return ops.reshape.default(self, [1])
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    sizes = self._layout.sizes
    merged = 1
    for d in range(s, e + 1):
        merged *= sizes[d]
    return ops.reshape.default(self, list(sizes[:s]) + [merged] + list(sizes[e + 1:]))


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
    return ops.view.default(self, new)


@register_decomposition(ops.view_as)
def view_as(self, other):
    return ops.view.default(self, list(other._layout.sizes))


@register_decomposition(ops.expand_as)
def expand_as(self, other):
    return ops.expand.default(self, list(other._layout.sizes))


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
    return ops.slice.Tensor(self, d, start, start + length, 1)


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
        return ops.split_with_sizes.default(self, [0] * chunks, d)
    return ops.split.Tensor(self, split_size, d)


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
        return ops.alias.default(self)
    order = [-1] * n
    for s, dst in zip(source, destination):
        order[dst] = s
    rest = iter(d for d in range(n) if d not in source)
    order = [o if o != -1 else next(rest) for o in order]
    return ops.permute.default(self, order)


@register_decomposition(ops.contiguous)
def contiguous(self, *, memory_format=contiguous_format):
    if self.is_contiguous(memory_format=memory_format):
        return self
    return ops.clone.default(self, memory_format=memory_format)


# -- sorting -------------------------------------------------------------------------------------
@register_decomposition(ops.argsort)
def argsort(self, dim=-1, descending=False):
    """The indices of ``sort`` (PyTorch's CompositeImplicitAutograd: modes see ``sort``)."""
    return ops.sort.default(self, dim, descending)[1]


@register_decomposition(ops.argsort.stable)
def argsort_stable(self, *, stable, dim=-1, descending=False):
    return ops.sort.stable(self, stable=stable, dim=dim, descending=descending)[1]


# -- tile, diag, outer, kron, meshgrid: PyTorch's CompositeImplicitAutograd bodies ----------------
@register_decomposition(ops.tile)
def tile(self, dims):
    """``repeat`` with ``dims`` padded by leading 1s to ``self.dim()`` (numpy's ``tile``)."""
    dims = list(dims)
    pad = len(self._layout.sizes) - len(dims)
    return ops.repeat.default(self, [1] * pad + dims if pad > 0 else dims)


@register_decomposition(ops.diag)
def diag(self, diagonal=0):
    """1-D -> ``diag_embed``, 2-D -> ``diagonal_copy``; other ranks raise RuntimeError."""
    ndim = len(self._layout.sizes)
    if ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {ndim}D")
    if ndim == 1:
        return ops.diag_embed.default(self, diagonal)
    return ops.diagonal_copy.default(self, diagonal)


def _check_1d(t, name, fn):
    if len(t._layout.sizes) != 1:
        raise RuntimeError(f"{fn}: Expected 1-D argument {name}, but got "
                           f"{len(t._layout.sizes)}-D")


@register_decomposition(ops.outer)
def outer(self, vec2):
    """``self.reshape(n, 1) * vec2`` for 1-D operands (type promotion of ``mul``)."""
    _check_1d(self, "self", "outer")
    _check_1d(vec2, "vec2", "outer")
    return ops.mul.Tensor(ops.reshape.default(self, [self._layout.sizes[0], 1]), vec2)


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
    product = ops.mul.Tensor(ops._unsafe_view.default(self, a_shape),
                             ops._unsafe_view.default(other, b_shape))
    return ops._unsafe_view.default(product, [x * y for x, y in zip(a, b)])


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
        grids.append(ops.expand.default(ops.view.default(t, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return grids


# -- broadcast_to, ravel, atleast_*d, h/v/dstack, tensor_split, h/v/dsplit, fliplr/ud, diff ------
# PyTorch's CompositeImplicitAutograd bodies, op for op (modes see the same stream).
@register_decomposition(ops.broadcast_to)
def broadcast_to(self, size):
    return ops.expand.default(self, list(size))


@register_decomposition(ops.ravel)
def ravel(self):
    return ops.view.default(ops.contiguous.default(self), [-1])


@register_decomposition(ops.atleast_1d)
def atleast_1d(self):
    return ops.reshape.default(self, [1]) if not self._layout.sizes else self


@register_decomposition(ops.atleast_2d)
def atleast_2d(self):
    ndim = len(self._layout.sizes)
    if ndim == 0:
        return ops.reshape.default(self, [1, 1])
    return ops.unsqueeze.default(self, 0) if ndim == 1 else self


@register_decomposition(ops.atleast_3d)
def atleast_3d(self):
    ndim = len(self._layout.sizes)
    if ndim == 0:
        return ops.reshape.default(self, [1, 1, 1])
    if ndim == 1:
        return ops.unsqueeze.default(ops.unsqueeze.default(self, 0), -1)
    return ops.unsqueeze.default(self, -1) if ndim == 2 else self


def _stack_pieces(name, tensors, lift):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return [lift(t) for t in tensors]


def _hstack_args(tensors):
    pieces = _stack_pieces("hstack", tensors, atleast_1d)
    return pieces, 0 if len(pieces[0]._layout.sizes) == 1 else 1


@register_decomposition(ops.hstack)
def hstack(tensors):
    pieces, dim = _hstack_args(tensors)
    return ops.cat.default(pieces, dim)


@register_decomposition(ops.hstack.out)
def hstack_out(tensors, *, out):
    pieces, dim = _hstack_args(tensors)
    return ops.cat.out(pieces, dim, out=out)


@register_decomposition(ops.vstack)
def vstack(tensors):
    return ops.cat.default(_stack_pieces("vstack", tensors, atleast_2d), 0)


@register_decomposition(ops.vstack.out)
def vstack_out(tensors, *, out):
    return ops.cat.out(_stack_pieces("vstack", tensors, atleast_2d), 0, out=out)


@register_decomposition(ops.dstack)
def dstack(tensors):
    return ops.cat.default(_stack_pieces("dstack", tensors, atleast_3d), 2)


@register_decomposition(ops.dstack.out)
def dstack_out(tensors, *, out):
    return ops.cat.out(_stack_pieces("dstack", tensors, atleast_3d), 2, out=out)


def _split_dim(self, dim) -> int:
    n = len(self._layout.sizes)
    if n == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    return wrap_dim(dim, n)


@register_decomposition(ops.tensor_split.sections)
def tensor_split_sections(self, sections, dim=0):
    d = _split_dim(self, dim)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    size = self._layout.sizes[d]
    small, extra = divmod(size, sections)
    pieces, start = [], 0
    for i in range(sections):
        n = small + 1 if i < extra else small
        pieces.append(ops.slice.Tensor(self, d, start, start + n))
        start += n
    return pieces


@register_decomposition(ops.tensor_split.indices)
def tensor_split_indices(self, indices, dim=0):
    d = _split_dim(self, dim)
    pieces, start = [], 0
    for end in indices:
        pieces.append(ops.slice.Tensor(self, d, start, end))
        start = end
    pieces.append(ops.slice.Tensor(self, d, start, self._layout.sizes[d]))
    return pieces


@register_decomposition(ops.tensor_split.tensor_indices_or_sections)
def tensor_split_tensor(self, tensor_indices_or_sections, dim=0):
    """0-d: ``item()`` sections; 1-D: the indices read from the (cpu, int64) data, no op."""
    _split_dim(self, dim)
    t = tensor_indices_or_sections
    if t._storage.device.type != "cpu":
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be on cpu, but "
                           f"it's on {t._storage.device.type}")
    if t._dtype.name != "int64":
        from .kernels._common import type_name
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of "
                           f"long, but got {type_name(t._dtype)}")
    ndim = len(t._layout.sizes)
    if ndim not in (0, 1):
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                           f"zero-dimensional or one-dimensional tensor, but got a tensor with "
                           f"{ndim} dims")
    if ndim == 0:
        return ops.tensor_split.sections(self, int(ops._local_scalar_dense.default(t)), dim)
    if t._storage._buffer is None and t._layout.numel():   # a wrapper subclass: no data
        raise RuntimeError(_NO_DATA)
    return ops.tensor_split.indices(self, [int(i) for i in t._array().tolist()], dim)


# PyTorch's text for reading the data pointer of a tensor without storage (wrapper subclasses).
_NO_DATA = (
    "The tensor has a non-zero number of elements, but its data is not allocated yet.\n"
    "If you're using torch.compile/export/fx, it is likely that we are erroneously tracing into "
    "a custom kernel. To fix this, please wrap the custom kernel into an opaque custom op. "
    "Please see the following for details: "
    "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html\n"
    "If you're using Caffe2, Caffe2 uses a lazy allocation, so you will need to call "
    "mutable_data() or raw_mutable_data() to actually allocate memory.")


def _dim_split(name, need, dim):
    def check(self):
        ndim = len(self._layout.sizes)
        if ndim < need:
            raise RuntimeError(f"sk.{name} requires a tensor with at least {need} dimension, but "
                               f"got a tensor with {ndim} dimensions!")
        return (0 if ndim == 1 else 1) if dim is None else dim

    def by_sections(self, sections):
        d = check(self)
        size = self._layout.sizes[d]
        if sections == 0 or size % sections != 0:
            raise RuntimeError(f"sk.{name} attempted to split along dimension {d}, but the size "
                               f"of the dimension {size} is not divisible by the split_size "
                               f"{sections}!")
        return ops.tensor_split.sections(self, sections, d)

    def by_indices(self, indices):
        return ops.tensor_split.indices(self, list(indices), check(self))

    packet = getattr(ops, name)
    register_decomposition(packet.int)(by_sections)
    register_decomposition(packet.array)(by_indices)


_dim_split("hsplit", 1, None)
_dim_split("vsplit", 2, 0)
_dim_split("dsplit", 3, 2)


@register_decomposition(ops.fliplr)
def fliplr(self):
    if len(self._layout.sizes) < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return ops.flip.default(self, [1])


@register_decomposition(ops.flipud)
def flipud(self):
    if len(self._layout.sizes) < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return ops.flip.default(self, [0])


def _diff_check(self, n, dim, prepend, append):
    ndim = len(self._layout.sizes)
    if ndim < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    for other in (prepend, append):
        if other is None:
            continue
        d = wrap_dim(dim, ndim)
        if len(other._layout.sizes) != ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for i, (a, b) in enumerate(zip(self._layout.sizes, other._layout.sizes)):
            if i != d and a != b:
                raise RuntimeError(
                    "diff expects the shape of tensor to prepend or append to match that of "
                    f"input except along the differencing dimension; input.size({i}) = {a}, "
                    f"but got tensor.size({i}) = {b}")


def _diff_input(self, n, dim, prepend, append):
    _diff_check(self, n, dim, prepend, append)
    if n == 0 or (prepend is None and append is None):
        return self
    pieces = ([prepend] if prepend is not None else []) + [self]
    return ops.cat.default(pieces + ([append] if append is not None else []), dim)


def _diff_step(result, dim, length, out=None):
    """``narrow(1) - narrow(0)`` (``logical_xor`` for bool, as PyTorch); the second narrow is
    taken first, as PyTorch's argument evaluation does."""
    lo = ops.narrow.default(result, dim, 0, length)
    hi = ops.narrow.default(result, dim, 1, length)
    if result._dtype.name == "bool":
        return (ops.logical_xor.default(hi, lo) if out is None
                else ops.logical_xor.out(hi, lo, out=out))
    return ops.sub.Tensor(hi, lo) if out is None else ops.sub.out(hi, lo, out=out)


def _diff_helper(self, n, dim):
    if n == 0:
        return ops.copy_.default(ops.zeros_like.default(self), self)
    size = self._layout.sizes[wrap_dim(dim, len(self._layout.sizes))]
    result, length = self, size - 1
    for _ in range(min(n, size)):
        result = _diff_step(result, dim, length)
        length -= 1
    return result


@register_decomposition(ops.diff)
def diff(self, n=1, dim=-1, prepend=None, append=None):
    return _diff_helper(_diff_input(self, n, dim, prepend, append), n, dim)


@register_decomposition(ops.diff.out)
def diff_out(self, n=1, dim=-1, prepend=None, append=None, *, out):
    a = _diff_input(self, n, dim, prepend, append)
    if n == 0:
        from .kernels._common import Spec, resize_output_check, type_name
        # PyTorch's ``diff_out`` resizes with a plain ``resize_`` (a version bump of its own).
        if resize_output_check(out, Spec(a._layout.sizes, (), out._dtype, out._storage.device),
                               stacklevel=5):
            ops.resize_.default(out, list(a._layout.sizes))
        if out._dtype is not a._dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {type_name(a._dtype)}, but "
                               f"got {type_name(out._dtype)} instead")
        return ops.copy_.default(out, a)
    size = a._layout.sizes[wrap_dim(dim, len(a._layout.sizes))]
    n = min(n, size)
    prev = _diff_helper(a, n - 1, dim) if n > 1 else a
    return _diff_step(prev, dim, size - n, out=out)


# -- pointwise composites: PyTorch's CompositeImplicitAutograd bodies -----------------------------
@register_decomposition(ops.square)
def square(self):
    """``pow(self, 2)``: bool becomes int64, as PyTorch."""
    return ops.pow.Tensor_Scalar(self, 2)


@register_decomposition(ops.square_)
def square_(self):
    return ops.pow_.Scalar(self, 2)


@register_decomposition(ops.square.out)
def square_out(self, *, out):
    return ops.pow.Tensor_Scalar_out(self, 2, out=out)


@register_decomposition(ops.fix)
def fix(self):
    return ops.trunc.default(self)


@register_decomposition(ops.fix_)
def fix_(self):
    return ops.trunc_.default(self)


@register_decomposition(ops.fix.out)
def fix_out(self, *, out):
    return ops.trunc.out(self, out=out)


@register_decomposition(ops.isfinite)
def isfinite(self):
    """Integral and bool: ``ones_like(bool)``; floating: ``(self == self) * (|self| != inf)``
    (PyTorch's op order: ``abs``, ``ne``, ``eq``, ``mul``)."""
    if not self._dtype.is_floating_point:
        return ops.ones_like.default(self, dtype=dt.bool_, memory_format=preserve_format)
    finite = ops.ne.Scalar(ops.abs.default(self), float("inf"))
    return ops.mul.Tensor(ops.eq.Tensor(self, self), finite)


def _as_double(x):
    """``x.to(float64)`` (itself when already float64); a Python number becomes a float."""
    if isinstance(x, Tensor):
        return x if x._dtype is dt.float64 else ops._to_copy.default(x, dtype=dt.float64)
    return float(x)


def _pow_overload(self, exponent):
    """The ``pow`` overload PyTorch's ``float_power`` calls: a number on either side is a
    Scalar (``pow.Tensor_Scalar`` / ``pow.Scalar``)."""
    if not isinstance(exponent, Tensor):
        return ops.pow.Tensor_Scalar
    if not isinstance(self, Tensor):
        return ops.pow.Scalar
    return ops.pow.Tensor_Tensor


@register_decomposition(ops.float_power)
def float_power(self, exponent):
    """``pow`` in float64 (complex is not supported here)."""
    return _pow_overload(self, exponent)(_as_double(self), _as_double(exponent))


@register_decomposition(ops.float_power_)
def float_power_(self, exponent):
    if self._dtype is not dt.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{type_name(self._dtype)} but the operation's result requires "
                           f"dtype Double")
    if not isinstance(exponent, Tensor):
        return ops.pow_.Scalar(self, _as_double(exponent))
    return ops.pow_.Tensor_Tensor(self, _as_double(exponent))


@register_decomposition(ops.float_power.Tensor_Tensor_out)
def float_power_out(self, exponent, *, out):
    if out._dtype is not dt.float64:
        raise RuntimeError(f"the output given to float_power has dtype {type_name(out._dtype)} "
                           f"but the operation's result requires dtype Double")
    functional = _pow_overload(self, exponent)
    out_op = functional.overloadpacket._overloads[functional.overload + "_out"]
    return out_op(_as_double(self), _as_double(exponent), out=out)
