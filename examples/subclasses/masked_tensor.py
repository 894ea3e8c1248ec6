"""A masked tensor: data plus a boolean mask of which elements are present.

The idea
    Missing values (padding, invalid sensor readings) are marked by a mask instead of a
    sentinel value. Elementwise ops combine masks (an output element is present only when all
    its inputs are), reductions skip missing elements (``sum`` of nothing is 0, ``mean`` divides
    by the number present, ``amax`` ignores them), and view ops move data and mask together.
    PyTorch's prototype ``torch.masked.MaskedTensor`` is this idea.

How it works
    ``MaskedTensor`` is a wrapper subclass with two inner tensors, ``data`` and ``mask``
    (bool, same shape). ``__tensor_dispatch__`` dispatches on the op's *kind*:

    - **view ops** (``func.is_view``) run on both ``data`` and ``mask`` and wrap again
      (``sk.return_and_correct_aliasing``: the result aliases the input wrapper);
    - **pointwise ops** (a fixed table, ``_POINTWISE``) run on ``data``; the output mask is
      the ``logical_and`` of the masks of MaskedTensor arguments, broadcast to the output;
      in-place pointwise ops update ``data`` in place and narrow ``mask`` in place;
    - **reductions** (``sum``, ``mean``, ``amax``, ``amin``) fill missing elements with the
      operation's identity in the data's dtype (0; the lowest / highest value: -inf / +inf for
      floats, the integer range's ends, False / True for bool) via ``sk.where`` and reduce,
      so the result has the dtype the plain reduction has; the output mask says whether any
      element was present (``any`` over the same dims); ``mean`` divides by the count of
      present elements;
    - **anything else** returns ``NotImplemented``, so the dispatcher raises TypeError naming
      the op: an op whose masked semantics are not defined must not silently treat missing
      values as data.

Tradeoffs
    + Semantics are explicit per kind of op, and unsupported ops fail loudly.
    - Ops compute on missing elements too (their results are then masked out): cheap with
      numpy, but a ``log`` of a missing negative value still computes a NaN.
    - The op table must be extended by hand for each new op (PyTorch's MaskedTensor keeps
      the same kind of lists).
"""

from __future__ import annotations

import numpy as np

import subclass_kit as sk

ops = sk.ops

_POINTWISE = {
    ops.abs.default, ops.neg.default, ops.exp.default, ops.log.default, ops.sqrt.default,
    ops.sin.default, ops.cos.default, ops.tanh.default, ops.sigmoid.default, ops.relu.default,
    ops.reciprocal.default, ops.clamp.default, ops.gelu.default, ops.round.default,
    ops.add.Tensor, ops.sub.Tensor, ops.mul.Tensor, ops.div.Tensor, ops.pow.Tensor_Tensor,
    ops.maximum.default, ops.minimum.default, ops.eq.Tensor, ops.ne.Tensor, ops.lt.Tensor,
    ops.le.Tensor, ops.gt.Tensor, ops.ge.Tensor, ops._to_copy.default, ops.clone.default,
    # a Python number on the right: ``m ** 2``, ``m > 0``, ``1 - m`` (PyTorch's overloads)
    ops.pow.Tensor_Scalar, ops.eq.Scalar, ops.ne.Scalar, ops.lt.Scalar, ops.le.Scalar,
    ops.gt.Scalar, ops.ge.Scalar, ops.rsub.Scalar,
}
# reduction -> does the fill value have to be the largest value (amin) or the lowest (amax)?
# None: the fill is 0 (sum, mean).
_REDUCTIONS = {ops.sum.default: None, ops.sum.dim_IntList: None, ops.mean.default: None,
               ops.mean.dim: None, ops.amax.default: False, ops.amin.default: True}


def _identity(func, dtype):
    """The value ``func`` ignores, as a Python number of ``dtype``'s kind, so ``sk.where``
    keeps the dtype (a float fill would promote integer data to float)."""
    largest = _REDUCTIONS[func]
    if largest is None:
        return False if dtype == sk.bool else 0
    if dtype.is_floating_point:
        return float("inf") if largest else float("-inf")
    if dtype == sk.bool:
        return largest
    info = np.iinfo(dtype.numpy)
    return int(info.max if largest else info.min)


def _bind(func, args, kwargs) -> dict:
    """Arguments by schema name, defaults filled in."""
    bound = {}
    for i, a in enumerate(func.schema.arguments):
        if i < len(args):
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        else:
            bound[a.name] = a.default_value
    return bound


class MaskedTensor(sk.Tensor):
    """``data`` where ``mask`` is True, missing elsewhere (see the module docstring)."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(data: sk.Tensor, mask: sk.Tensor) -> MaskedTensor:
        if mask.dtype != sk.bool or tuple(mask.shape) != tuple(data.shape):
            raise TypeError(f"MaskedTensor: mask must be a bool tensor of shape "
                            f"{list(data.shape)}, got {mask.dtype} {list(mask.shape)}")
        w = sk.make_wrapper_subclass(MaskedTensor, data.shape, data.stride(),
                                     data.storage_offset(), dtype=data.dtype,
                                     device=data.device)
        w.data_, w.mask = data, mask
        return w

    def to_dense(self, fill=0.0) -> sk.Tensor:
        """A plain tensor with missing elements replaced by ``fill``."""
        return sk.where(self.mask, self.data_, fill)

    def __repr__(self):
        return f"MaskedTensor(data={self.data_!r}, mask={self.mask!r})"

    def __tensor_flatten__(self):
        return ["data_", "mask"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return MaskedTensor.wrap(inner["data_"], inner["mask"])

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else None
        if func.is_view and isinstance(first, cls) and func is not ops.view.dtype:
            data = func(first.data_, *args[1:], **kwargs)
            mask = func(first.mask, *args[1:], **kwargs)
            if isinstance(data, (list, tuple)):
                out = [cls.wrap(d, m) for d, m in zip(data, mask)]
            else:
                out = cls.wrap(data, mask)
            return sk.return_and_correct_aliasing(func, args, kwargs, out)
        if func in _POINTWISE:
            return _pointwise(cls, func, args, kwargs)
        functional = func.functional_variant if func.is_inplace else None
        if functional in _POINTWISE and isinstance(first, cls):
            data_args = sk.pytree.tree_map_only(cls, lambda t: t.data_, args)
            func(*data_args, **kwargs)
            first.mask.copy_(_combined_mask(cls, args, first.shape))
            return first
        if func in _REDUCTIONS and isinstance(first, cls):
            return _reduce(cls, func, first, args, kwargs)
        return NotImplemented


def _combined_mask(cls, args, shape):
    masks = [a.mask for a in sk.pytree.tree_leaves(args) if isinstance(a, cls)]
    mask = masks[0]
    for m in masks[1:]:
        mask = ops.logical_and(mask, m)
    return ops.expand(mask, list(shape)).contiguous()


def _pointwise(cls, func, args, kwargs):
    data = func(*sk.pytree.tree_map_only(cls, lambda t: t.data_, args),
                **sk.pytree.tree_map_only(cls, lambda t: t.data_, kwargs))
    return cls.wrap(data, _combined_mask(cls, args, data.shape))


def _reduce(cls, func, x, args, kwargs):
    bound = _bind(func, args, kwargs)
    filled = sk.where(x.mask, x.data_, _identity(func, x.data_.dtype))
    data = func(filled, *args[1:], **kwargs)
    dim = bound.get("dim")
    dims = None if dim is None or list(dim) == [] else list(dim)
    present = ops.any.dims(x.mask, dims, bound.get("keepdim", False))
    if func is ops.mean.dim or func is ops.mean.default:
        count = ops.sum.dim_IntList(x.mask.to(data.dtype), dims, bound.get("keepdim", False))
        data = ops.sum.dim_IntList(filled, dims, bound.get("keepdim", False)) / count
    return cls.wrap(data, present)


def masked_tensor(data: sk.Tensor, mask: sk.Tensor) -> MaskedTensor:
    """``data`` with ``mask`` (True = present). Raises TypeError for a bad mask."""
    return MaskedTensor.wrap(data, mask)
