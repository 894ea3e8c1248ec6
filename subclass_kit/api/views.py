"""View and copy methods of ``Tensor`` (PyTorch names, argument forms and stride rules).

Views share the input's Storage and version counter and get ``_base`` (SEMANTICS.md §1.2, §3.1).
``reshape``/``flatten`` view when strides allow, else copy; ``contiguous()`` of a contiguous
tensor and ``to()`` with nothing to change return ``self``.
"""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from .._argcheck import check_int, type_error
from ..registry import ops
from ..storage import device as _device
from ..tensor import Tensor, contiguous_format, preserve_format
from ._register import method, prop, size_args


@method("view")
def view(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        return ops.view.dtype(self, dt.to_dtype(shape[0]))
    return ops.view.default(self, size_args(shape))


@method("view_as")
def view_as(self, other):
    return ops.view_as.default(self, other)


@method("reshape")
def reshape(self, *shape):
    return ops.reshape.default(self, size_args(shape))


@method("reshape_as")
def reshape_as(self, other):
    return ops.reshape.default(self, list(other.shape))


@method("as_strided")
def as_strided(self, size, stride, storage_offset=None):
    return ops.as_strided.default(self, tuple(size), tuple(stride), storage_offset)


@method("transpose", "swapdims", "swapaxes", op=ops.transpose)
def transpose(self, dim0, dim1):
    return ops.transpose.int(self, dim0, dim1)


@method("t", op=ops.t)
def t(self):
    return ops.t.default(self)


@prop("T")
def T(self):
    """Dims reversed (``permute``); warns unless 2-D, as PyTorch."""
    n = self.dim()
    if n == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                      "these cases.", UserWarning, stacklevel=3)
    elif n != 2:
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                      "shape is deprecated and it will throw an error in a future release. "
                      "Consider `x.mT` to transpose batches of matrices or "
                      "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions "
                      "of a tensor.", UserWarning, stacklevel=3)
    return ops.permute.default(self, list(range(n - 1, -1, -1)))


@prop("mT")
def mT(self):
    """The last two dims swapped; a 0-d tensor is returned itself (with a deprecation warning),
    a 1-d one raises RuntimeError, as PyTorch."""
    if self.dim() == 0:
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                      "these cases.", UserWarning, stacklevel=3)
        return self
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return ops.transpose.int(self, -2, -1)


@method("permute")
def permute(self, *dims):
    return ops.permute.default(self, size_args(dims))


@method("expand")
def expand(self, *sizes):
    return ops.expand.default(self, size_args(sizes))


@method("expand_as")
def expand_as(self, other):
    return ops.expand_as.default(self, other)


# squeeze's default: every dim (an explicit None is refused, as PyTorch does).
_ALL_DIMS = object()


@method("squeeze")
def squeeze(self, dim=_ALL_DIMS):
    if dim is _ALL_DIMS:
        dims = list(range(self.dim()))
    elif dim is None:   # x.squeeze(None): PyTorch's parser refuses it
        raise type_error("squeeze", "dim", "int", dim, 1)
    elif isinstance(dim, (tuple, list)):
        dims = list(dim)
    elif isinstance(dim, (tuple, list)):
        dims = list(dim)
    else:
        dims = [dim]
    return ops.squeeze.dims(self, dims)


@method("unsqueeze")
def unsqueeze(self, dim):
    return ops.unsqueeze.default(self, dim)


@method("select")
def select(self, dim, index):
    if index.__class__ is not int:
        index = check_int("select", "index", index, 2)
    return ops.select.int(self, dim, index)


@method("narrow")
def narrow(self, dim, start, length):
    if start.__class__ is not int:
        start = _tensor_or_int("narrow", "start", start, 2)
    if length.__class__ is not int:
        length = check_int("narrow", "length", length, 3)
    return ops.narrow.default(self, dim, start, length)


def _tensor_or_int(fn, name, value, pos):
    """``narrow``'s start: an int or a 0-d integer tensor (PyTorch's ``Tensor start``)."""
    if isinstance(value, Tensor) and value.dim() == 0 and not value.dtype.is_floating_point:
        return int(value.item())
    return check_int(fn, name, value, pos)


@method("diagonal")
def diagonal(self, offset=0, dim1=0, dim2=1):
    return ops.diagonal.default(self, offset, dim1, dim2)


@method("unfold")
def unfold(self, dimension, size, step):
    if size.__class__ is not int or step.__class__ is not int:
        size, step = check_int("unfold", "size", size, 2), check_int("unfold", "step", step, 3)
    return ops.unfold.default(self, dimension, size, step)


@method("split")
def split(self, split_size_or_sections, dim=0):
    if isinstance(split_size_or_sections, (list, tuple)):
        return tuple(ops.split_with_sizes.default(self, list(split_size_or_sections), dim))
    if split_size_or_sections.__class__ is not int:
        split_size_or_sections = check_int("split", "split_size", split_size_or_sections, 1)
    return tuple(ops.split.Tensor(self, split_size_or_sections, dim))


@method("split_with_sizes")
def split_with_sizes(self, split_sizes, dim=0):
    return tuple(ops.split_with_sizes.default(self, list(split_sizes), dim))


@method("chunk")
def chunk(self, chunks, dim=0):
    return tuple(ops.chunk.default(self, chunks, dim))


@method("unbind")
def unbind(self, dim=0):
    return tuple(ops.unbind.int(self, dim))


@method("flatten")
def flatten(self, start_dim=0, end_dim=-1):
    return ops.flatten.using_ints(self, start_dim, end_dim)


@method("unflatten")
def unflatten(self, dim, sizes):
    return ops.unflatten.int(self, dim, list(sizes))


@method("movedim", "moveaxis")
def movedim(self, source, destination):
    src = list(source) if isinstance(source, (list, tuple)) else [source]
    dst = list(destination) if isinstance(destination, (list, tuple)) else [destination]
    return ops.movedim.intlist(self, src, dst)


@method("detach")
def detach(self):
    return ops.detach.default(self)


@method("alias")
def alias(self):
    return ops.alias.default(self)


@method("contiguous")
def contiguous(self, memory_format=contiguous_format):
    return ops.contiguous.default(self, memory_format=memory_format)


@method("clone")
def clone(self, *, memory_format=None):
    """A copy with ``self``'s strides when dense (``memory_format`` None means
    ``preserve_format``, which handlers then do not see, as in PyTorch)."""
    if memory_format is None:
        return ops.clone.default(self)
    return ops.clone.default(self, memory_format=memory_format)


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    for a in args:
        if isinstance(a, dt.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, _device)):
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return dtype, device


@method("to")
def to(self, *args, copy=False, non_blocking=False, memory_format=None, **kwargs):
    """Cast and/or move: ``to(dtype)``, ``to(device)``, ``to(other)``, ``to(memory_format=)``.
    Returns ``self`` when nothing changes and ``copy`` is False."""
    dtype, device = _parse_to(args, kwargs)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    dtype = None if dtype is None else dt.to_dtype(dtype)
    device = None if device is None else _device(device)
    same_dtype = dtype is None or dtype is self.dtype
    same_device = device is None or device is self.device
    same_format = memory_format is None or memory_format is preserve_format or \
        self.is_contiguous(memory_format=memory_format)
    if same_dtype and same_device and same_format and not copy:
        return self
    return ops._to_copy.default(self, dtype=dtype, device=device, memory_format=memory_format)


def _caster(dtype):
    def cast(self, memory_format=None):
        return to(self, dtype, memory_format=memory_format)
    return cast


for _name, _d in (("float", dt.float32), ("double", dt.float64), ("half", dt.float16),
                  ("bfloat16", dt.bfloat16),
                  ("long", dt.int64), ("int", dt.int32), ("short", dt.int16),
                  ("char", dt.int8), ("byte", dt.uint8), ("bool", dt.bool_)):
    method(_name)(_caster(_d))


@method("cpu")
def cpu(self):
    return to(self, "cpu")


@method("type_as")
def type_as(self, other):
    return to(self, other.dtype)


# -- in-place metadata ops ------------------------------------------------------------------------
@method("t_")
def t_(self):
    return ops.t_.default(self)


@method("transpose_", "swapdims_", "swapaxes_")
def transpose_(self, dim0, dim1):
    return ops.transpose_.default(self, dim0, dim1)


@method("unsqueeze_")
def unsqueeze_(self, dim):
    return ops.unsqueeze_.default(self, dim)


@method("squeeze_")
def squeeze_(self, dim=_ALL_DIMS):
    if dim is None:     # as squeeze
        raise type_error("squeeze_", "dim", "int", dim, 1)
    dims = list(range(self.dim())) if dim is _ALL_DIMS else (
        list(dim) if isinstance(dim, (list, tuple)) else [dim])
    return ops.squeeze_.dims(self, dims)


@method("as_strided_")
def as_strided_(self, size, stride, storage_offset=None):
    return ops.as_strided_.default(self, tuple(size), tuple(stride), storage_offset)


@method("resize_")
def resize_(self, *size, memory_format=None):
    return ops.resize_.default(self, size_args(size), memory_format=memory_format)


@method("resize_as_")
def resize_as_(self, the_template, memory_format=None):
    """Resize in place to ``the_template``'s shape (contiguous, or ``memory_format``); bumps
    ``_version`` only when the shape changes. RuntimeError "cannot resize variables that
    require grad" for a tensor requiring grad (PyTorch's ``resize_as_``)."""
    return ops.resize_as_.default(self, the_template, memory_format=memory_format)


@method("set_")
def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """``set_(tensor)``, ``set_(storage[, offset, size, stride])`` or ``set_()`` (empty).

    Raises TypeError, before anything changes, for a ``storage_offset`` that is not an int or a
    ``size`` / ``stride`` element that is not (bool and float included), as PyTorch's argument
    parser does; RuntimeError for bad layouts (PyTorch's kernel texts)."""
    from ..storage import Storage
    if source is None:
        source = Storage(0, self.device)
        return ops.set_.source_Storage_storage_offset(self, source, 0, [0], [1])
    if isinstance(source, Tensor):
        return ops.set_.source_Tensor(self, source)
    if not isinstance(source, Storage):
        raise TypeError(f"set_(): source must be a Tensor or a Storage, got "
                        f"{type(source).__name__}")
    if isinstance(storage_offset, bool) or not hasattr(storage_offset, "__index__"):
        raise TypeError(f"set_(): argument 'storage_offset' (position 2) must be int, not "
                        f"{type(storage_offset).__name__}")
    if size is None:
        size = [source.nbytes() // self.element_size()]
    size = _int_list(size, "size", 3)
    stride = _int_list(stride, "stride", 4) if stride else []
    return ops.set_.source_Storage_storage_offset(self, source, storage_offset.__index__(),
                                                  size, stride)


def _int_list(values, name, pos) -> list:
    """``values`` as a list of ints; TypeError naming ``name`` for anything else (a float size
    would otherwise become part of the tensor's shape)."""
    if not isinstance(values, (tuple, list)):
        raise TypeError(f"set_(): argument '{name}' (position {pos}) must be tuple of ints, not "
                        f"{type(values).__name__}")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"set_(): argument '{name}' (position {pos}) must be tuple of ints, "
                            f"but found element of type {type(v).__name__} at pos {i}")
    return [v.__index__() for v in values]


# -- functional counterparts (SEMANTICS.md §6.5) ---------------------------------------------------
@method("slice_scatter")
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` (same strides and offset) whose ``input[start:end:step]`` region along
    ``dim`` holds ``src``. ``src`` must have exactly the slice's shape (RuntimeError
    "expected src to have a size equal to the slice of self. ..."); its dtype is cast.

    >>> sk.slice_scatter(sk.zeros(4), sk.ones(2), 0, 1, 3).tolist()
    [0.0, 1.0, 1.0, 0.0]
    """
    return ops.slice_scatter.default(input, src, dim, start, end, step)


@method("select_scatter")
def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``input.select(dim, index)`` replaced by ``src`` (same shape).

    >>> sk.select_scatter(sk.zeros(2, 2), sk.ones(2), 0, 1).tolist()
    [[0.0, 0.0], [1.0, 1.0]]
    """
    return ops.select_scatter.default(input, src, dim, index)


@method("diagonal_scatter")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``.

    >>> sk.diagonal_scatter(sk.zeros(2, 2), sk.ones(2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return ops.diagonal_scatter.default(input, src, offset, dim1, dim2)


@method("as_strided_scatter")
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` (and of its whole storage) with the ``as_strided(size, stride,
    storage_offset)`` region replaced by ``src``; the region is bounds-checked like
    ``as_strided``.

    >>> sk.as_strided_scatter(sk.zeros(4), sk.ones(2), (2,), (2,)).tolist()
    [1.0, 0.0, 1.0, 0.0]
    """
    return ops.as_strided_scatter.default(input, src, list(size), list(stride), storage_offset)
