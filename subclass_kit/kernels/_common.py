"""Shared pieces of the kernels: output allocation, device checks, TensorIterator's output
layout, and the registration helper that turns one meta rule into a cpu and a meta kernel.

Note [One rule per op]
    Every op has exactly one *rule*: a pure function from the arguments to the output
    ``Spec`` (sizes, strides, dtype, device), doing all validation (broadcasting, dim wrapping,
    promotion, every shape error). The meta kernel is ``rule`` + an empty meta tensor; the cpu
    kernel is ``rule`` + a fresh storage + a numpy ``fill``. So meta and cpu agree on metadata
    and raise the same errors by construction.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..layout import Layout, contiguous_strides, format_size
from ..dispatch import below_autograd
from ..registry import ops, register_kernel, overload_of
from ..storage import CPU, META
from ..storage import device as _device
from ..tensor import Tensor
from ._iter_layout import alloc


class Spec(NamedTuple):
    """What a rule returns for one output: sizes, strides, dtype, device."""

    sizes: tuple
    strides: tuple
    dtype: object
    device: object
    compute: object = None  # dtype the math runs in, when it differs from ``dtype``


def device_of(spec) -> _device:
    return spec if isinstance(spec, _device) else _device(spec or "cpu")


def new_tensor(spec: Spec) -> Tensor:
    """A fresh tensor with a storage just large enough for ``spec`` (uninitialised on cpu)."""
    return alloc(spec.sizes, spec.strides, spec.dtype, spec.device)


def empty_like_spec(sizes, dtype, device) -> Spec:
    return Spec(tuple(sizes), contiguous_strides(sizes), dtype, device)


def common_device(tensors) -> _device:
    """The device of an op's tensor operands. A 0-d cpu tensor may join any device (PyTorch).

    Raises RuntimeError "Tensor on device cpu is not on the expected device meta!".
    """
    dev = None
    for t in tensors:
        d = t._storage.device
        if dev is None:
            dev = d
        elif d is not dev:
            if d is CPU and not t._layout.sizes:
                continue
            if dev is CPU and dev_is_scalar_only(tensors, dev):
                dev = d
                continue
            raise RuntimeError(f"Tensor on device {d.type} is not on the expected device "
                               f"{dev.type}!")
    return dev or CPU


def dev_is_scalar_only(tensors, dev) -> bool:
    return all(not t._layout.sizes for t in tensors if t._storage.device is dev)


def both_devices(op):
    """Decorator: one function as both the cpu and the meta kernel of ``op`` (kernels that
    only touch metadata: views, in-place view ops, factories that check their own device)."""
    op = overload_of(op)  # packet: the overload it calls
    def deco(fn):
        register_kernel(op, "cpu")(fn)
        register_kernel(op, "meta")(fn)
        return fn
    return deco


def check_no_internal_overlap(t: Tensor):
    """In-place writes into an expanded tensor are ambiguous (PyTorch's assert_no_internal_overlap)."""
    if t._layout.has_internal_overlap():
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to "
            "a single memory location. Please clone() the tensor before performing the "
            "operation.")


PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation.")


def check_no_partial_overlap(out: Tensor, inputs):
    """Refuse a write into ``out`` from an input that shares only part of its memory, or the
    same bytes in another element order (PyTorch's ``assert_no_partial_overlap`` as
    TensorIterator and ``copy_`` run it before writing). ``inputs``: the op's arguments; only
    tensors on ``out``'s storage are examined. Raises RuntimeError."""
    storage = out._storage
    for t in inputs:
        if isinstance(t, Tensor) and t._storage is storage and t is not out:
            if overlap_status(out, t) == "partial":
                raise RuntimeError(PARTIAL_OVERLAP)


def check_no_overlap(out: Tensor, t: Tensor):
    """Refuse a write into ``out`` from ``t`` sharing any of its memory, ``out`` itself
    included (PyTorch's ``assert_no_overlap``: ``index_put_`` values and indices, ``cat``
    inputs). Raises RuntimeError."""
    if t._storage is out._storage and overlap_status(out, t) is not None:
        raise RuntimeError(PARTIAL_OVERLAP)


def overlap_status(a: Tensor, b: Tensor):
    """PyTorch's ``get_overlap_status`` for two tensors on one storage: "full" (the same bytes
    in the same order), "partial", or None (disjoint, empty, or not dense: "too hard to
    tell", which PyTorch lets pass)."""
    la, lb = a._layout, b._layout
    na, nb = la.numel(), lb.numel()
    if not na or not nb:
        return None
    if not (la.is_non_overlapping_and_dense() and lb.is_non_overlapping_and_dense()):
        return None
    ia, ib = a._dtype.itemsize, b._dtype.itemsize
    a_begin, b_begin = la.offset * ia, lb.offset * ib
    a_end, b_end = a_begin + na * ia, b_begin + nb * ib
    if a_begin == b_begin and a_end == b_end:
        return "full" if la.strides == lb.strides else "partial"
    return "partial" if a_begin < b_end and b_begin < a_end else None


def cross_device_error(src, dst) -> RuntimeError:
    """PyTorch's error for an ``out=`` tensor on another device than the result (the
    ``check_copy_devices`` of its out= wrapper, which its meta kernels run, so every cpu/meta
    mix reports it): "Attempting to copy from device cpu to device meta, but cross-device
    copies are not allowed!"."""
    return RuntimeError(f"Attempting to copy from device {src.type} to device {dst.type}, but "
                        "cross-device copies are not allowed!")


def check_out_device_first(first, out: Tensor):
    """PyTorch's out= wrapper checks, before the op's own checks, that ``out`` is on the device
    of the op's first argument when that is a tensor (a 0-d cpu tensor included).

    Raises the :func:`cross_device_error`.
    """
    if isinstance(first, Tensor) and first._storage.device is not out._storage.device:
        raise cross_device_error(first._storage.device, out._storage.device)


def register_pair_kernels(op, out_op, rule, fill, out_specs, check_input=None):
    """cpu and meta kernels of an op returning (values, indices) -- sort, topk, max.dim,
    cummax, median... -- and of its out= overload.

    ``rule(self, *args, **kw)`` gives the two Specs; ``fill(outs, specs, self, *args, **kw)``
    writes the cpu outputs; ``check_input(self)`` runs after ``rule`` in the functional kernel.
    ``out_specs(self, args, kwargs, values, indices)`` runs the out= checks in the op's PyTorch
    order and returns the specs; both outputs are resized only after all of them passed."""
    # packets: the overloads their calls run
    op, out_op = overload_of(op), overload_of(out_op)
    names = tuple(a.name for a in out_op.schema.arguments if a.is_write)

    def kernel(*args, **kwargs):
        specs = rule(*args, **kwargs)
        if check_input is not None:
            check_input(args[0])
        outs = tuple(alloc(s.sizes, s.strides, s.dtype, s.device) for s in specs)
        if specs[0].device is not META:
            fill([o._array() for o in outs], specs, *args, **kwargs)
        return outs

    def out_kernel(self, *args, **kwargs):
        values, indices = kwargs.pop(names[0]), kwargs.pop(names[1])
        specs = out_specs(self, args, kwargs, values, indices)
        for o, s in zip((values, indices), specs):
            resize_out(o, s, op.name)
        if self._storage.device is not META:
            fill([values._array(), indices._array()], specs, self, *args, **kwargs)
        return values, indices

    for device in ("cpu", "meta"):
        register_kernel(op, device)(kernel)
        register_kernel(out_op, device)(out_kernel)
    op.rule, op.fill = rule, fill


def fill_scalar_pair(outs, arr) -> bool:
    """For a 0-d ``arr``, write the (values, indices) outputs of a dim-wise reduction, sort or
    scan -- the element itself and index 0, as PyTorch's kernels for a scalar input -- and
    return True; return False (writing nothing) for any other ``arr``."""
    if arr.ndim:
        return False
    np.copyto(outs[0], arr)
    np.copyto(outs[1], 0)
    return True


def resize_out(out: Tensor, spec: Spec, op_name: str):
    """Make ``out`` (an out= argument) hold ``spec``'s shape, as PyTorch's ``resize_output``.

    Raises RuntimeError when the result dtype cannot be cast to ``out``'s dtype, or when
    ``out`` is on another device (:func:`cross_device_error`).
    """
    if resize_output_check(out, spec, stacklevel=5):
        resize_storage_for(out, Layout(tuple(spec.sizes), spec.strides, out._layout.offset))


def resize_output_check(out: Tensor, spec: Spec, stacklevel: int = 3) -> bool:
    """PyTorch's ``resize_output_check``: whether ``out`` must be resized to ``spec``'s sizes.

    Raises what :func:`resize_out` raises; warns (at ``stacklevel``) when an ``out`` with
    elements is resized. Composites then resize with the dispatched ``ops.resize_``.
    """
    from .._dtype import can_cast
    if not can_cast(spec.dtype, out._dtype):
        raise RuntimeError(f"result type {_type_name(spec.dtype)} can't be cast to the desired "
                           f"output type {_type_name(out._dtype)}")
    if out._storage.device is not spec.device:
        raise cross_device_error(spec.device, out._storage.device)
    if tuple(out._layout.sizes) == tuple(spec.sizes):
        return False
    if out._layout.numel() != 0:
        import warnings
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{format_size(out._layout.sizes)}, which does not match the required output "
            f"shape {format_size(spec.sizes)}. This behavior is deprecated, and in a future "
            "PyTorch release outputs will not be resized unless they have zero elements. You "
            "can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
            "with t.resize_(0).", UserWarning, stacklevel=stacklevel)
    return True


def resize_output(out: Tensor, spec: Spec, stacklevel: int = 3):
    """PyTorch's ``resize_output`` for composite out= paths (``matmul(out=)``, ``stack(out=)``).

    The checks and warning of :func:`resize_output_check`, then, when the shape differs, a
    dispatched ``ops.resize_`` (modes and graphs see it, so a captured graph replays it), run
    below the version layer as inside PyTorch's out= kernels: the caller's ``copy_`` is the one
    version bump, and autograd's checks (``resize_`` of a tensor requiring grad) do not apply.
    """
    if not resize_output_check(out, spec, stacklevel=stacklevel + 1):
        return
    with below_autograd():
        ops.resize_.default(out, list(spec.sizes))


def resize_storage_for(t: Tensor, layout: Layout):
    """Give ``t`` the layout, growing its (shared) storage if needed (PyTorch's resize_)."""
    need = layout.storage_extent() * t._dtype.itemsize
    if need > t._storage._nbytes:
        t._storage.resize_(need)
    t._set_layout(layout)


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
               "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _type_name(d) -> str:
    return _TYPE_NAMES[d.name]


def type_string(d) -> str:
    """PyTorch's ``toString`` of a cpu tensor type in error texts: ``sk.FloatTensor``, but
    ``CPUBoolType`` and ``CPUBFloat16Type`` for the dtypes without a legacy tensor class."""
    if d.name in ("bool", "bfloat16"):
        return f"CPU{_TYPE_NAMES[d.name]}Type"
    return f"sk.{d.legacy_name}"


def type_name(d) -> str:
    """PyTorch's scalar type name of a dtype (``Float``, ``Long``...), for error texts."""
    return _TYPE_NAMES[d.name]


def register_rule(op, rule, fill, fast=None):
    """Register cpu and meta kernels for a functional op from its rule and numpy fill.

    ``rule(*args, **kwargs) -> Spec`` (or a tuple of Specs, None for an output not computed);
    ``fill(outs, spec, *args, **kwargs)`` writes numpy results into the output arrays (a list,
    one per Spec, None for a None Spec). See Note [One rule per op].

    ``fast(*args)``, optional: the cpu kernel of the op's most common call (positional
    arguments only), returning the output, or None to go through ``rule`` and ``fill``. It
    must give the very result ``rule`` + ``fill`` give, and may return None for any call.
    """
    op = overload_of(op)  # packet: the overload it calls

    def meta_kernel(*args, **kwargs):
        spec = rule(*args, **kwargs)
        if type(spec) is Spec:
            return new_tensor(spec)
        return tuple(None if s is None else new_tensor(s) for s in spec)

    def cpu_kernel(*args, **kwargs):
        spec = rule(*args, **kwargs)
        if type(spec) is Spec:
            out = new_tensor(spec)
            if spec.device is META:
                return out
            fill([out._array()], spec, *args, **kwargs)
            return out
        # a None Spec is an output the op does not compute (PyTorch's undefined tensor, None
        # in Python: native_layer_norm_backward's masked-out gradients); its array is None
        outs = tuple(None if s is None else new_tensor(s) for s in spec)
        first = next((s for s in spec if s is not None), None)
        if first is not None and first.device is not META:
            fill([None if o is None else o._array() for o in outs], spec, *args, **kwargs)
        return outs

    if fast is not None:
        general = cpu_kernel

        def cpu_kernel(*args, **kwargs):
            if not kwargs:
                out = fast(*args)
                if out is not None:
                    return out
            return general(*args, **kwargs)

    meta_kernel.rule = cpu_kernel.rule = rule
    register_kernel(op, "meta")(meta_kernel)
    register_kernel(op, "cpu")(cpu_kernel)
    op.rule = rule
    op.fill = fill


def register_out(op_out, functional_op):
    """Register the ``out=`` overload of a functional op registered with ``register_rule``."""
    # packets: the overloads their calls run
    op_out, functional_op = overload_of(op_out), overload_of(functional_op)

    def kernel(*args, out, **kwargs):
        spec = functional_op.rule(*args, **kwargs)
        resize_out(out, spec, functional_op.name)
        if out._storage.device is not META:
            functional_op.fill([out._array()], spec, *args, **kwargs)
        return out

    register_kernel(op_out, "cpu")(kernel)
    register_kernel(op_out, "meta")(kernel)


def register_inplace(op_, functional_op):
    """Register ``name_`` from the functional op: the result must keep ``self``'s shape and be
    castable to its dtype; the fill writes straight into ``self``."""
    # packets: the overloads their calls run
    op_, functional_op = overload_of(op_), overload_of(functional_op)

    def kernel(self, *args, **kwargs):
        spec = functional_op.rule(self, *args, **kwargs)
        if tuple(spec.sizes) != self._layout.sizes:
            raise RuntimeError(f"output with shape {format_size(self._layout.sizes)} doesn't "
                               f"match the broadcast shape {format_size(spec.sizes)}")
        from .._dtype import can_cast
        if not can_cast(spec.dtype, self._dtype):
            raise RuntimeError(f"result type {_type_name(spec.dtype)} can't be cast to the "
                               f"desired output type {_type_name(self._dtype)}")
        check_no_internal_overlap(self)
        if self._storage.device is not META:
            functional_op.fill([self._array()], spec, self, *args, **kwargs)
        return self

    register_kernel(op_, "cpu")(kernel)
    register_kernel(op_, "meta")(kernel)
