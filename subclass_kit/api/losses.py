"""Losses and the other ``sk.nn.functional`` helpers a training loop needs, written as PyTorch
writes them, so a dispatch mode sees PyTorch's op stream: ``cross_entropy`` is ``_log_softmax``
+ ``nll_loss_forward`` (plus PyTorch's label-smoothing ops), ``l1_loss`` is ``sub`` + ``abs`` +
``mean``; ``nll_loss``, ``mse_loss``, ``binary_cross_entropy(_with_logits)``, ``softplus`` and
``pad`` reach the primitives of ``kernels/losses.py``.

``reduction`` is "none", "mean" or "sum" (ValueError otherwise, as PyTorch).
"""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from ..registry import ops
from ..tensor import Tensor
from .creation import zeros

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "one_hot", "pad", "normalize", "softplus"]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction: str) -> int:
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _nll_nd(input, target, weight, reduction: int, ignore_index: int):
    """PyTorch's ``nll_loss_nd``: (N, C) or (C,) inputs go straight to ``nll_loss_forward``;
    (N, C, d1, ...) inputs are moved to (N * d1 * ..., C) first (PyTorch uses
    ``nll_loss2d`` for 4-d inputs: same values, another op stream)."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() != 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if input.dim() <= 2:
        return ops.nll_loss_forward.default(input, target, weight, reduction, ignore_index)[0]
    c = input.shape[1]
    flat = input.movedim(1, -1).reshape(-1, c)
    out = ops.nll_loss_forward.default(flat, target.reshape(-1), weight, reduction, ignore_index)[0]
    if reduction == 0:
        return out.view(target.shape)
    return out


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of ``target`` class indices (int64, shape (N,) or (N, d1...))
    under log-probabilities ``input`` ((N, C), (C,) or (N, C, d1, ...)); ``weight`` (C,)
    rescales classes, ``ignore_index`` targets contribute nothing. "mean" divides by the
    total weight of the counted targets. Raises as PyTorch's ``nll_loss``."""
    return _nll_nd(input, target, weight, _reduction(reduction), ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` ((N, C), (C,) or (N, C, d1, ...)) and ``target``:
    class indices (int64) or class probabilities (floating, same shape as ``input``), with
    PyTorch's ``weight``, ``ignore_index``, ``reduction`` and ``label_smoothing`` (a float in
    [0, 1]; RuntimeError otherwise)."""
    red = _reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    log_probs = input.log_softmax(class_dim)
    n_classes = input.shape[class_dim]
    wshape = [1] * input.dim()
    if weight is not None:
        wshape[class_dim] = weight.shape[0]
    if target.dtype.is_floating_point:
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        terms = log_probs * target
        if weight is not None:
            terms = terms * weight.view(wshape)
        if red == 0:
            return -terms.sum(class_dim)
        if red == 2:
            return -terms.sum()
        return -terms.sum() / (input.numel() / n_classes)
    nll = _nll_nd(log_probs, target, weight, red, ignore_index)
    if label_smoothing == 0:
        return nll
    if weight is not None:
        smooth = -(log_probs * weight.view(wshape)).sum(class_dim)
    else:
        smooth = -log_probs.sum(class_dim)
    ignore = target == ignore_index
    smooth.masked_fill_(ignore, 0.0)
    if red == 1:
        if weight is not None:
            kept = target[~ignore].flatten()
            ret = smooth.sum() / weight.gather(0, kept).sum()
        else:
            ret = smooth.sum() / (~ignore).sum()
    elif red == 2:
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - label_smoothing) * nll + ret * (label_smoothing / n_classes)


def _broadcast_pair(input, target, name: str, stacklevel: int = 3):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.",
                      stacklevel=stacklevel)
        from ..layout import broadcast_shapes
        shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
        return input.expand(shape), target.expand(shape)
    return input, target


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(input - target)^2`` (broadcast, with PyTorch's warning when the
    shapes differ), reduced; with ``weight`` (same shape as ``input``) the weighted form."""
    input, target = _broadcast_pair(input, target, "mse_loss")
    red = _reduction(reduction)
    if weight is None:
        return ops.mse_loss.default(input, target, red)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    errors = (input - target).pow(2) * weight
    return errors if red == 0 else errors.sum() if red == 2 else errors.sum() / weight.sum()


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|input - target|`` (broadcast as ``mse_loss``), reduced."""
    input, target = _broadcast_pair(input, target, "l1_loss")
    red = _reduction(reduction)
    errors = (input - target).abs()
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        errors = errors * weight
        return errors if red == 0 else errors.sum() if red == 2 else errors.sum() / weight.sum()
    return errors if red == 0 else errors.sum() if red == 2 else errors.mean()


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``-w (y log x + (1 - y) log(1 - x))`` for probabilities ``input`` in [0, 1] (logs
    clamped at -100, as PyTorch). Raises ValueError when ``target``'s size differs from
    ``input``'s, RuntimeError for an input outside [0, 1]."""
    red = _reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    if weight is not None:
        from ..layout import broadcast_shapes
        weight = weight.expand(broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    return ops.binary_cross_entropy.default(input, target, weight, red)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits (PyTorch's
    log-sigmoid form), with ``weight`` and ``pos_weight``. Raises ValueError for a target of
    another size."""
    red = _reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    return ops.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight, red)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of shape ``tensor.shape + (num_classes,)`` with a 1 at each index
    (``num_classes=-1``: max + 1). Raises RuntimeError for a non-int64 input, negative or too
    large class values, or an empty input without ``num_classes`` (PyTorch's texts)."""
    if tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return zeros(list(tensor.shape) + [num_classes], dtype=dt.int64, device=tensor.device)
    lo, hi = ops.aminmax.default(tensor)
    lo, hi = lo.item(), hi.item()
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = zeros(list(tensor.shape) + [num_classes], dtype=dt.int64, device=tensor.device)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


def pad(input: Tensor, pad: list, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims by ``pad = (left_last, right_last, left_prev, ...)`` (negative
    entries crop) with ``value`` (``constant_pad_nd``; a float, as in PyTorch's schema, so a
    value the dtype cannot hold raises RuntimeError). Other modes raise NotImplementedError."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.dim()}")
    if mode != "constant":
        raise NotImplementedError(f"pad(mode={mode!r}) is not implemented in subclass_kit; "
                                  "only mode='constant' is")
    # ``value`` is a ``float?`` in PyTorch's ``pad`` schema: an int fill arrives as a float
    # (``-1`` into uint8 then raises, 2**53 + 1 becomes 2**53)
    return ops.constant_pad_nd.default(input, list(pad), 0.0 if value is None else float(value))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p over dim, eps)`` (PyTorch's ``F.normalize``)."""
    denom = ops.linalg_vector_norm.default(input, p, [dim], True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    return ops.div.out(input, denom, out=out)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""
    return ops.softplus.default(input, beta, threshold)
