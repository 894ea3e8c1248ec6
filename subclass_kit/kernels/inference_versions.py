"""Versions of the outputs of cpu kernels run on inference tensors outside inference mode.

Note [Versions of outputs computed from inference tensors]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An inference tensor has no Autograd or ADInplaceOrView dispatch key. When every tensor argument
of an op is one and inference mode is off, PyTorch's dispatcher goes straight to the cpu kernel:
no autograd kernel runs, so no ``AutoDispatchBelowADInplaceOrView`` guard is set. Many cpu
kernels build their result from ATen calls: ``sum`` allocates and calls ``sum.IntList_out``,
``mean`` then ``div_``, rounding an integer tensor is a ``clone``. The result is a *normal*
tensor (made outside inference mode), so each such nested in-place or ``out=`` call passes the
ADInplaceOrView kernel and bumps its version counter: ``x.sum()._version`` is 1,
``x.mean()._version`` 2, ``(x + 1)._version`` 0. With one normal tensor argument the autograd
kernel runs, sets the guard, and every result stays at version 0.

Our kernels are numpy, not nested op calls, so this module reproduces the observable versions
(read off PyTorch 2.13 over the op sample table, ``tests/test_inference_versions_oracle.py``),
not the mechanism: ``BUMPS`` maps an overload to the number of such nested writes into each
output, a constant or a rule of the call. Each listed op's cpu kernel (or, for an op
differentiated through its decomposition, that decomposition on cpu tensors) is wrapped to add
them when every tensor argument is an inference tensor, inference mode is off, the op is not
run below autograd (inside a subclass handler: PyTorch's guard is set there) and no dispatch
mode is entered (under a ``TorchDispatchMode``, its handler included, PyTorch's results stay at
version 0 too). Meta kernels are left alone: PyTorch's meta kernels make no nested calls, except
``clone`` and ``_to_copy`` (``ANY_DEVICE``: an ``empty`` + ``copy_`` on every device).

Left out on purpose: ``zeros_like`` / ``ones_like`` / ``full_like`` / ``empty_like``. Their
``torch.ops.aten`` overloads give version 1, but the public ``torch.zeros_like`` ... run under
the guard (``torch/csrc/autograd/generated/variable_factories.h``) and give 0, and the public
functions are what programs call.
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._state import tls
from ..registry import ops
from ..storage import CPU
from ..tensor import Tensor

__all__ = ["BUMPS", "ANY_DEVICE", "install"]


# -- reading a call ------------------------------------------------------------------------------
def _integral(t) -> bool:
    """bool and the integer dtypes (where ``ceil``, ``isinf``, ... are copies or fills)."""
    return not t._dtype.is_floating_point


def _zero_d_or_empty(t) -> bool:
    return t._layout.ndim == 0 or t._layout.numel() == 0


def _flip_writes(t, dims=None) -> int:
    """``flip`` of a 0-d or empty tensor, or along no dim of size > 1, is a ``clone`` (one
    write), else a kernel (none)."""
    sizes = t._layout.sizes
    if _zero_d_or_empty(t):
        return 1
    if dims is None:
        return 0
    return 0 if any(sizes[d % len(sizes)] > 1 for d in dims) else 1


# -- rules: (out, *args, **kwargs) -> writes per output (an int for all, or a tuple) -------------
def _mixed_dtypes(out, tensors, dim=0):
    return 1 if len({t._dtype for t in tensors}) > 1 and out._layout.numel() else 0


def _empty_contraction(out, self, mat2):
    """A product over an empty inner dim is a ``zero_`` of the result."""
    return 1 if self._layout.sizes[-1] == 0 and out._layout.numel() else 0


def _std_var(out, self, dim=None, *, correction=None, keepdim=False):
    """A result of one element, or an empty input, is written through ``out=``; float16 and
    bfloat16 are computed in float32 and not."""
    if self._layout.numel() == 0:
        return 1
    if self._dtype in (dt.float16, dt.bfloat16):
        return 0
    return 1 if out._layout.numel() == 1 else 0


def _addmm(out, self, mat1, mat2, *, beta=1, alpha=1):
    """One write; an empty inner dim fills the result, then adds ``beta * self`` unless 0."""
    if _empty_contraction(out, mat1, mat2):
        return 2 if beta != 0 else 1
    return 1


def _min_max_dim(out, self, dim, keepdim=False):
    if self._layout.ndim == 0:
        return (1, 1)
    return (0, 0) if keepdim or self._layout.numel() == 0 else (2, 2)


def _aminmax(out, self, *, dim=None, keepdim=False):
    if dim is None or self._layout.ndim == 0:
        return (1, 1)
    return (0, 0) if keepdim else (2, 2)


def _mean(out, self, *args, dtype=None):
    # float16 / bfloat16 results are computed in float32 and copied back: one write, not two.
    return 1 if out._dtype in (dt.float16, dt.bfloat16) else 2


def _rot90(out, self, k=1, dims=(0, 1)):
    k %= 4
    if k == 0:
        return 1                                    # clone
    if k == 2:
        return _flip_writes(self, dims)             # flip
    return _flip_writes(self, dims[1:]) + 1         # flip, then transpose_


def _constant_pad_nd(out, self, pad, value=0):
    """A ``clone`` of the (narrowed) input, then a fill and a copy when it grows."""
    return 2 if any(p > 0 for p in pad) else 1


def _index_add(out, self, dim, index, source, *, alpha=1):
    fused = (alpha == 1 and index._dtype is dt.int64 and index._layout.numel()
             and self._layout.ndim)
    return 2 if fused else 1


def _native_layer_norm_backward(out, grad_out, input, normalized_shape, mean, rstd, weight,
                                bias, output_mask):
    # With no rows, the weight and bias gradients are ``zero_``-filled.
    empty = input._layout.numel() == 0 and math.prod(normalized_shape) > 0
    return (0, int(empty), int(empty))


def _bce(out, self, target, weight=None, reduction=1):
    if reduction == 0:
        return 1 if self._layout.numel() else 0
    return 2 if self._layout.ndim else 1


def _bce_backward(out, grad_output, self, target, weight=None, reduction=1):
    return (weight is not None) + (reduction == 1)


def _bce_with_logits(out, self, target, weight=None, pos_weight=None, reduction=1):
    # Unreduced, the loss is the result of four in-place ops (five with a weight).
    return 4 + (weight is not None) if reduction == 0 else 0


def _if(cond):
    """A rule: one write into the output when ``cond(out, *args, **kwargs)`` holds."""
    return lambda out, *args, **kwargs: 1 if cond(out, *args, **kwargs) else 0


_integral_self = _if(lambda out, self, *a, **k: _integral(self))

BUMPS: dict = {
    # ``empty`` + ``copy_``, on every device.
    "clone.default": 1,
    "_to_copy.default": 1,
    # A nested ``out=`` call (reductions, products, ``abs``, logical ops, copies of views...).
    **dict.fromkeys((
        "abs.default", "all.default", "all.dim", "all.dims", "any.default",
        "any.dim", "any.dims", "deg2rad.default",
        "dot.default", "embedding_dense_backward.default", "fill.Scalar", "fill.Tensor",
        "index_copy.default", "logical_and.default", "logical_not.default",
        "logical_or.default", "logical_xor.default", "logsumexp.default", "max.default",
        "min.default", "mv.default", "nan_to_num.default", "nansum.default",
        "new_full.default", "new_ones.default", "new_zeros.default",
        "nll_loss_backward.default", "nonzero.default", "norm.ScalarOpt_dim",
        "prod.default", "prod.dim_int", "rad2deg.default", "scatter.src", "scatter.value",
        "scatter_add.default", "sum.default", "sum.dim_IntList", "vdot.default",
        "alias_copy.default", "as_strided_copy.default", "detach_copy.default",
        "diagonal_copy.default", "expand_copy.default", "lift_fresh_copy.default",
        "permute_copy.default", "select_copy.int", "slice_copy.Tensor", "squeeze_copy.dims",
        "t_copy.default", "transpose_copy.int", "unfold_copy.default",
        "unsqueeze_copy.default", "view_copy.default", "split_copy.Tensor",
        "split_with_sizes_copy.default", "unbind_copy.int",
        "cummax.default", "cummin.default", "kthvalue.default", "median.dim",
        "nanmedian.dim", "sort.default", "sort.stable",
        "_scaled_dot_product_flash_attention_for_cpu_backward.default"), 1),
    # A fresh result filled, then written again (``zeros`` + ``*_scatter``, ``clone`` + fill...).
    **dict.fromkeys((
        "as_strided_scatter.default", "diag_embed.default", "diagonal_backward.default",
        "diagonal_scatter.default", "masked_fill.Scalar", "masked_fill.Tensor",
        "masked_scatter.default", "mse_loss_backward.default", "select_backward.default",
        "select_scatter.default", "slice_backward.default", "slice_scatter.default",
        ), 2),
    # Their kernels already ``clone`` the inference input (version 1): one write more.
    **dict.fromkeys(("index_put.default", "zero.default", "resize.default"), 1),
    "mean.default": _mean,
    "mean.dim": _mean,
    # Rounding and classifying integers: a ``clone`` or a fill.
    **dict.fromkeys(("ceil.default", "floor.default", "round.default", "trunc.default",
                     "isinf.default", "isfinite.default", "isposinf.default",
                     "isneginf.default"), _integral_self),
    "signbit.default": _if(lambda out, self: self._dtype in (dt.bool_, dt.uint8)),
    "count_nonzero.dim_IntList": _if(lambda out, self, dim: self._dtype is dt.bool_),
    "count_nonzero.default": _if(lambda out, self, dim=None: self._dtype is dt.bool_),
    "clamp_max.default": _if(lambda out, self, v: isinstance(v, float) and v != v),
    "clamp_min.default": _if(lambda out, self, v: isinstance(v, float) and v != v),
    "amax.default": _if(lambda out, self, *a: self._layout.numel() > 0),
    "amin.default": _if(lambda out, self, *a: self._layout.numel() > 0),
    # (float32 only: the NaN of an empty median is written by a ``fill_`` for that dtype.)
    **dict.fromkeys(("median.default", "nanmedian.default"), _if(
        lambda out, self: self._layout.numel() == 0 and self._dtype is dt.float32)),
    **dict.fromkeys(("cumsum.default", "cumprod.default"), _if(
        lambda out, self, *a, **k: _zero_d_or_empty(self))),
    "logcumsumexp.default": _if(lambda out, self, dim: self._layout.ndim == 0),
    "linalg_vector_norm.default": _if(
        lambda out, self, *a, **k: _zero_d_or_empty(self)),
    "topk.default": _if(lambda out, self, *a: self._layout.ndim == 0),
    "roll.default": _if(lambda out, self, *a: self._layout.numel() == 0),
    "flip.default": _if(lambda out, self, dims: not dims or _flip_writes(self, dims)),
    "diff.default": _if(lambda out, self, n=1, *a: n == 0),   # a clone, then one write
    "repeat.default": _if(lambda out, self, repeats: 0 not in repeats),
    "where.self": _if(lambda out, *a: not out._layout.is_contiguous()),
    "copy.default": lambda out, self, src, non_blocking=False: (
        2 if self._layout.numel() else 1),
    "baddbmm.default": _if(lambda out, self, b1, b2, *, beta=1, alpha=1: beta != 0),
    "pow.Tensor_Tensor": _if(lambda out, self, exponent: not isinstance(self, Tensor)),
    "pow.Scalar": 1,
    # pow.Tensor_Scalar_out: ``out.fill_(1)`` for the exponent 0, ``out.copy_(base)`` for 1
    "pow.Tensor_Scalar": _if(lambda out, self, exponent: exponent == 0 or exponent == 1),
    "addmm.default": _addmm,
    "bmm.default": _empty_contraction,
    "mm.default": _empty_contraction,
    "cat.default": _mixed_dtypes,
    "stack.default": _mixed_dtypes,
    "std.correction": _std_var,
    "var.correction": _std_var,
    "max.dim": _min_max_dim,
    "min.dim": _min_max_dim,
    "aminmax.default": _aminmax,
    "rot90.default": _rot90,
    "constant_pad_nd.default": _constant_pad_nd,
    "index_add.default": _index_add,
    "native_layer_norm_backward.default": _native_layer_norm_backward,
    "binary_cross_entropy.default": _bce,
    "binary_cross_entropy_backward.default": _bce_backward,
    "binary_cross_entropy_with_logits.default": _bce_with_logits,
    "mse_loss.default": lambda out, self, target, reduction=1: 2 if reduction else 0,
    "_unique2.default": lambda out, self, sorted=True, return_inverse=False,
    return_counts=False: (int(self._layout.numel() > 0), int(return_inverse),
                          int(return_counts and self._layout.numel() > 0)),
    "unique_dim.default": lambda out, self, *a: (0, 0, int(self._layout.numel() > 0)),
}


ANY_DEVICE = frozenset({"clone.default", "_to_copy.default"})


# -- applying them -------------------------------------------------------------------------------
def _all_inference(args, kwargs) -> bool:
    """Whether every tensor argument (in lists too) is an inference tensor, and there is one.
    Returns at the first normal tensor: the common call pays one test."""
    seen = False
    for a in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(a, Tensor):
            if not a._inference:
                return False
            seen = True
        elif isinstance(a, (list, tuple)):
            for t in a:
                if isinstance(t, Tensor):
                    if not t._inference:
                        return False
                    seen = True
    return seen


def _unguarded() -> bool:
    """Inference mode off, not below autograd, and no dispatch mode entered on this thread (its
    handler running included): under a mode PyTorch's nested writes do not bump either
    (observed: ``x.sum()._version`` is 0 under any ``TorchDispatchMode``)."""
    st = tls.__dict__
    return not (st["inference"] or st["below"] or st["dispatch_modes"] or st["mode_handlers"])


def _add_writes(out, writes, any_device):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for i, o in enumerate(outs):
        n = writes if isinstance(writes, int) else writes[i]
        if n and isinstance(o, Tensor) and o._vc is not None and o._base is None and (
                any_device or o._storage.device is CPU):
            o._vc[0] += n


def _wrap(fn, rule, any_device=False):
    def with_inference_versions(*args, **kwargs):
        out = fn(*args, **kwargs)
        try:
            if not args[0]._inference:      # the common call: a normal ``self``
                return out
        except (IndexError, AttributeError):
            pass
        # The mode test first: inside inference mode (where inference tensors mostly meet
        # kernels) it answers at once, where scanning the arguments would not.
        if _unguarded() and _all_inference(args, kwargs):
            _add_writes(out, rule(out, *args, **kwargs) if callable(rule) else rule,
                        any_device)
        return out
    with_inference_versions.__wrapped__ = fn
    if hasattr(fn, "rule"):             # read off some kernels by other modules
        with_inference_versions.rule = fn.rule
    return with_inference_versions


def install():
    """Wrap the cpu kernels of ``BUMPS``. Called once, by ``grad_mode.set_grad_state`` the first
    time the inference switch turns on (no inference tensor exists before): a program that never
    enters inference mode runs the kernels unwrapped. Raises KeyError for a listed op without a
    cpu kernel or decomposition (a stale table)."""
    for qualified, rule in BUMPS.items():
        name, _, overload = qualified.partition(".")
        op = getattr(ops, name)._overloads[overload]
        any_device = qualified in ANY_DEVICE
        if op.decomposition is not None:
            op.decomposition = _wrap(op.decomposition, rule)
        else:
            for device in (("cpu", "meta") if any_device else ("cpu",)):
                op._kernels[device] = _wrap(op._kernels[device], rule, any_device)
