"""More shape ops: ``broadcast_to``, ``ravel``, ``atleast_1d/2d/3d``, ``hstack``, ``vstack``
(``row_stack``), ``dstack``, ``tensor_split``, ``hsplit``, ``vsplit``, ``dsplit``, ``fliplr``,
``flipud``, ``rot90``, ``trace``, ``take``, ``vdot``, ``diff``, as ``sk.<name>`` and, where
PyTorch has one, ``Tensor.<name>`` (same argument forms, same errors).

``rot90``, ``trace``, ``take`` and ``vdot`` are primitives (``kernels/shape_more.py``); the
others are composites (``decompositions.py``): ``broadcast_to`` -> ``expand``, ``ravel`` ->
``view`` (``clone`` first when not contiguous), ``*stack`` -> ``view``/``unsqueeze`` + ``cat``,
``*split`` -> ``slice``, ``fliplr``/``flipud`` -> ``flip``, ``diff`` -> ``cat`` + ``slice`` +
``sub``, so modes see what PyTorch's ``TorchDispatchMode`` sees.
"""

from __future__ import annotations

from ..function import public_api
from ..registry import ops
from ..tensor import Tensor
from ._register import size_args

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "diff", "dsplit", "dstack",
           "fliplr", "flipud", "hsplit", "hstack", "ravel", "rot90", "row_stack",
           "take", "tensor_split", "trace", "vdot", "vsplit", "vstack"]


def _export(fn, *method_names):
    public = public_api(fn)
    for name in method_names:
        setattr(Tensor, name, public)
    return public


def _tensors(name, tensors) -> list:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    return list(tensors)


def broadcast_to(input, size):
    """``input`` expanded to ``size`` (a view; -1 keeps a dim). RuntimeError as ``expand``."""
    return ops.broadcast_to.default(input, list(size_args((size,))))


def _broadcast_to_method(self, *size):
    return ops.broadcast_to.default(self, list(size_args(size)))


def ravel(input):
    """The flattened tensor: a view when ``input`` is contiguous, else a contiguous copy."""
    return ops.ravel.default(input)


def _atleast(op, name):
    def fn(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(op(t) for t in tensors[0])
        if len(tensors) == 1:
            return op(tensors[0])
        return tuple(op(t) for t in tensors)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Each tensor viewed with leading (and for 3-D, trailing) unit dims to at "
                  f"least {name[-2]} dims; one tensor in, one out; several (or a list) give a "
                  "tuple.")
    return fn


def hstack(tensors, *, out=None):
    """``cat`` along dim 1 (dim 0 for 1-D inputs) of the inputs made at least 1-D."""
    tensors = _tensors("hstack", tensors)
    return ops.hstack.default(tensors) if out is None else ops.hstack.out(tensors, out=out)


def vstack(tensors, *, out=None):
    """``cat`` along dim 0 of the inputs made at least 2-D (1-D -> ``(1, n)``)."""
    tensors = _tensors("vstack", tensors)
    return ops.vstack.default(tensors) if out is None else ops.vstack.out(tensors, out=out)


def dstack(tensors, *, out=None):
    """``cat`` along dim 2 of the inputs made at least 3-D."""
    tensors = _tensors("dstack", tensors)
    return ops.dstack.default(tensors) if out is None else ops.dstack.out(tensors, out=out)


def _split_arg(value, name):
    """An int (sections), a sequence of ints (indices) or a Tensor."""
    if isinstance(value, Tensor):
        return "tensor", value
    if isinstance(value, (list, tuple)):
        return "indices", list(size_args((tuple(value),)))
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name}(): argument 'indices_or_sections' must be int, tuple of ints "
                        f"or Tensor, not {type(value).__name__}")
    return "sections", value.__index__()


def tensor_split(input, indices_or_sections=None, dim=0, *, indices=None, sections=None,
                 tensor_indices_or_sections=None):
    """Views of ``input`` split along ``dim`` into ``sections`` near-equal parts (the first
    ``size % sections`` one longer) or at ``indices``; a tuple. A tensor argument must be a
    0-d or 1-D int64 cpu tensor."""
    for value in (indices, sections, tensor_indices_or_sections):
        if value is not None:
            indices_or_sections = value
    kind, value = _split_arg(indices_or_sections, "tensor_split")
    if kind == "tensor":
        return tuple(ops.tensor_split.tensor_indices_or_sections(input, value, dim))
    return tuple(getattr(ops.tensor_split, kind)(input, value, dim))


def _dsplit_like(name):
    packet = getattr(ops, name)

    def fn(input, indices_or_sections, *more):
        if more:
            indices_or_sections = (indices_or_sections,) + more
        kind, value = _split_arg(indices_or_sections, name)
        if kind == "sections":
            return tuple(packet.int(input, value))
        if kind == "tensor":
            raise TypeError(f"{name}(): argument 'indices' must be tuple of ints, not Tensor")
        return tuple(packet.array(input, value))
    fn.__name__ = fn.__qualname__ = name
    where = {"hsplit": "1 (0 for 1-D)", "vsplit": "0", "dsplit": "2"}[name]
    fn.__doc__ = (f"``tensor_split`` along dim {where}; an int must divide that dim's size. "
                  "A tuple of views.")
    return fn


def fliplr(input):
    """``flip(input, [1])``; RuntimeError "Input must be >= 2-d."."""
    return ops.fliplr.default(input)


def flipud(input):
    """``flip(input, [0])``; RuntimeError "Input must be >= 1-d."."""
    return ops.flipud.default(input)


def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by 90 degrees ``k`` times from ``dims[0]`` towards ``dims[1]`` (a
    copy; odd ``k`` gives a transposed layout, as PyTorch's flip + transpose)."""
    return ops.rot90.default(input, k, list(size_args((tuple(dims),))))


def trace(input):
    """Sum of the main diagonal of a 2-D tensor (0-d; integers to int64)."""
    return ops.trace.default(input)


def take(input, index, *, out=None):
    """``input`` read as 1-D at ``index`` (int64; negative wraps), shaped like ``index``."""
    return ops.take.default(input, index) if out is None else ops.take.out(input, index, out=out)


def vdot(input, other, *, out=None):
    """Dot product of two 1-D tensors of one dtype (real dtypes: no conjugation)."""
    return ops.vdot.default(input, other) if out is None else ops.vdot.out(input, other, out=out)


def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """``n``-th forward difference along ``dim`` after ``prepend``/``append`` are
    concatenated; ``n`` above the dim's size stops at an empty result."""
    if out is not None:
        return ops.diff.out(input, n, dim, prepend, append, out=out)
    return ops.diff.default(input, n, dim, prepend, append)


broadcast_to = _export(broadcast_to)
Tensor.broadcast_to = public_api(_broadcast_to_method)
ravel = _export(ravel, "ravel")
atleast_1d = _export(_atleast(ops.atleast_1d, "atleast_1d"))
atleast_2d = _export(_atleast(ops.atleast_2d, "atleast_2d"))
atleast_3d = _export(_atleast(ops.atleast_3d, "atleast_3d"))
hstack = _export(hstack)
vstack = _export(vstack)
row_stack = vstack
dstack = _export(dstack)
tensor_split = _export(tensor_split, "tensor_split")
hsplit = _export(_dsplit_like("hsplit"), "hsplit")
vsplit = _export(_dsplit_like("vsplit"), "vsplit")
dsplit = _export(_dsplit_like("dsplit"), "dsplit")
fliplr = _export(fliplr, "fliplr")
flipud = _export(flipud, "flipud")
rot90 = _export(rot90, "rot90")
trace = _export(trace, "trace")
take = _export(take, "take")
vdot = _export(vdot, "vdot")
diff = _export(diff, "diff")
