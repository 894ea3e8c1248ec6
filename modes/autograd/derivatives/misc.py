"""Derivative-table entries of the ops added for porting and functionalization: random
sampling (``bernoulli``, ``normal``, the generator overloads), the functional variants of the
in-place fills (``zero``, ``uniform``, ``normal_functional``), ``masked_select``, and the
non-differentiable marks of bit shifts, ``unique``, ``repeat_interleave``, resizing, ``set_``
and the metadata queries. Node names are PyTorch 2.13's (``BernoulliBackward1``,
``NormalBackward3``, ``MaskedSelectBackward0``, ...); where PyTorch records a
``torch::autograd::NotImplemented`` node, backward raises its "not implemented" error.
"""

from __future__ import annotations

import subclass_kit as sk
from ..formulas import derivative, non_differentiable

_NOT_IMPLEMENTED = "torch::autograd::NotImplemented"


def _zeros_like_meta(ctx, name):
    m = ctx.meta(name)
    return sk.zeros(m.shape, dtype=m.dtype, device=m.device)


# -- values that no longer depend on the input: zero gradients -------------------------------
@derivative("zero.default", "ZeroBackward0")
def _zero(ctx, grad):
    return sk.zeros_like(grad)


@derivative("uniform.default", "UniformBackward0")
def _uniform(ctx, grad):
    return sk.zeros_like(grad)


@derivative("bernoulli.default", "BernoulliBackward0")
def _bernoulli(ctx, grad):
    return sk.zeros_like(grad)


@derivative("bernoulli.Tensor", "BernoulliBackward1", inputs=("self", "p"))
def _bernoulli_tensor(ctx, grad):
    return sk.zeros_like(grad), _zeros_like_meta(ctx, "p")


@derivative("bernoulli_.float", "BernoulliBackward2")
def _bernoulli_float(ctx, grad):
    return sk.zeros_like(grad)


@derivative("normal.Tensor_float", "NormalBackward1", inputs=("mean",))
def _normal_tf(ctx, grad):
    return sk.zeros_like(grad)


@derivative("normal.float_Tensor", "NormalBackward2", inputs=("std",))
def _normal_ft(ctx, grad):
    return sk.zeros_like(grad)


@derivative("normal.Tensor_Tensor", "NormalBackward3", inputs=("mean", "std"))
def _normal_tt(ctx, grad):
    return sk.zeros_like(grad), sk.zeros_like(grad)


def _not_implemented(name: str):
    def formula(ctx, grad):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    formula.not_implemented = True      # its backward raises (no op stream to check)
    return formula


derivative("bernoulli.p", _NOT_IMPLEMENTED)(_not_implemented("bernoulli.p"))
derivative("normal_functional.default", _NOT_IMPLEMENTED)(_not_implemented("normal_functional"))


def _yaml_not_implemented(name: str):
    """derivatives.yaml's ``not_implemented("name")``: a named node whose backward raises."""
    def formula(ctx, *grads):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    formula.not_implemented = True
    return formula


# ``unique``'s values require grad (the inverse and the counts do not); the backward raises
derivative("_unique2.default", "Unique2Backward0", outputs=(True, False, False))(
    _yaml_not_implemented("_unique2"))
derivative("unique_dim.default", "UniqueDimBackward0", outputs=(True, False, False))(
    _yaml_not_implemented("unique_dim"))


def _broadcast(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(x if y == 1 else y for x, y in zip(a, b))


# -- masked_select -----------------------------------------------------------------------------
@derivative("masked_select.default", "MaskedSelectBackward0", save=("mask",))
def _masked_select(ctx, grad):
    """PyTorch's ``masked_select_backward``: scatter the gradient back where the (broadcast)
    mask is true, in the broadcast shape (the engine sums it to ``self``'s)."""
    meta = ctx.meta("self")
    mask = ctx.mask
    shape = _broadcast(tuple(meta.shape), tuple(mask.shape))
    zeros = sk.zeros(shape, dtype=grad.dtype, device=grad.device)
    return zeros.masked_scatter(mask.expand(shape), grad)


non_differentiable(
    "rand.generator", "randn.generator", "randint.low_generator", "randint.default",
    "arange.default", "arange.start", "eye.default", "ones.default", "zeros.default",
    "linspace.default", "logspace.default",
    "randperm.default",
    "randperm.generator", "multinomial.default", "normal.float_float",
    reason="a factory or an integer sample")
non_differentiable(
    "bitwise_left_shift.Tensor", "bitwise_left_shift.Tensor_Scalar",
    "bitwise_left_shift.Scalar_Tensor", "bitwise_right_shift.Tensor",
    "bitwise_right_shift.Tensor_Scalar", "bitwise_right_shift.Scalar_Tensor",
    "__lshift__.Tensor", "__lshift__.Scalar", "__rshift__.Tensor", "__rshift__.Scalar",
    "__ilshift__.Tensor", "__ilshift__.Scalar", "__irshift__.Tensor", "__irshift__.Scalar",
    "repeat_interleave.Tensor",
    reason="integer outputs")
non_differentiable(
    "resize_.default", "resize_as_.default", "resize.default", "set_.source_Storage_storage_offset",
    "set_.source_Tensor", "_local_scalar_dense.default", "sym_size.default", "sym_stride.default",
    "dim.default", "sym_numel.default", "sym_storage_offset.default", "is_contiguous.default",
    "is_set_to.default",
    reason="metadata, storage swaps and Python scalars carry no gradient")
