"""Loss primitives and their backward ops, as PyTorch's CPU kernels compute them:
``nll_loss_forward`` / ``nll_loss_backward``, ``mse_loss`` / ``mse_loss_backward``,
``binary_cross_entropy`` / ``binary_cross_entropy_backward``,
``binary_cross_entropy_with_logits``, ``softplus`` / ``softplus_backward`` and
``constant_pad_nd``.

``reduction`` is PyTorch's enum: 0 none, 1 mean, 2 sum. One rule per op (Note [One rule per
op]); elementwise losses take TensorIterator's output layout (``layout_of``), reduced results are
0-d. Data-dependent checks (target range, input in [0, 1]) run in the fill, so meta tensors skip
them as in PyTorch. The functional API (``F.cross_entropy``, ``F.nll_loss``, ...) is in
``api/losses.py``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from ..layout import broadcast_shapes, contiguous_strides, format_size
from ..registry import ops
from ..storage import round_to_bfloat16
from ._common import Spec, common_device, register_rule
from ._iter_layout import layout_of
from ._scalars import checked_scalar, quiet, unquiet

NONE, MEAN, SUM = 0, 1, 2
_BCE_EPS = 1e-12


def _reduced(loss: np.ndarray, reduction: int):
    if reduction == MEAN:
        return loss.mean() if loss.size else np.array(np.nan, loss.dtype)
    if reduction == SUM:
        return loss.sum()
    return loss


def _pointwise_spec(tensors, reduction, dtype=None) -> Spec:
    device = common_device(tensors)
    dtype = dtype or tensors[0]._dtype
    sizes = broadcast_shapes(*(t._layout.sizes for t in tensors))
    if reduction != NONE:
        return Spec((), (), dtype, device)
    if all(t._layout.sizes == sizes for t in tensors):
        sizes, strides = layout_of(tensors)
    else:
        strides = contiguous_strides(sizes)
    return Spec(sizes, strides, dtype, device)


def _store(out: np.ndarray, value) -> None:
    np.copyto(out, np.broadcast_to(np.asarray(value), out.shape), casting="unsafe")


# -- nll_loss ------------------------------------------------------------------------------------
def _nll_check(self, target, weight):
    sizes, target_sizes = self._layout.sizes, target._layout.sizes
    if not 0 < len(sizes) <= 2:
        raise RuntimeError("input tensor should be 1D or 2D")
    if len(target_sizes) > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    no_batch = len(sizes) == 1 and not target_sizes
    if not no_batch and sizes[0] != target_sizes[0]:
        raise RuntimeError(f"size mismatch (got input: {list(sizes)}, target: "
                           f"{list(target_sizes)})")
    n_classes = sizes[-1]
    if weight is not None and weight._layout.sizes != (n_classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                           "classes or no classes but got weight tensor of shape: "
                           f"{list(weight._layout.sizes)}")
    if target._dtype not in _TARGET_DTYPES:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{target._dtype.legacy_name.replace('Tensor', '')}")


_TARGET_DTYPES = (dt.int64, dt.uint8)


def _nll_rule(self, target, weight, reduction, ignore_index):
    _nll_check(self, target, weight)
    device = common_device((self, target) if weight is None else (self, target, weight))
    dtype = self._dtype
    if reduction == NONE and len(self._layout.sizes) == 2:
        out_sizes = self._layout.sizes[:1]
        return Spec(out_sizes, (1,), dtype, device), Spec((), (), dtype, device)
    return Spec((), (), dtype, device), Spec((), (), dtype, device)


def _nll_terms(self, target, weight, ignore_index):
    """(picked log-probabilities, per-sample weights with ignored samples at 0, targets, which
    samples are kept: not ``ignore_index``)."""
    x = self._array().reshape(-1, self._layout.sizes[-1])
    t = target._array().reshape(-1).astype(np.int64)
    keep = t != ignore_index
    bad = keep & ((t < 0) | (t >= x.shape[1]))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    safe = np.where(keep, t, 0)
    w = weight._array()[safe] if weight is not None else np.ones(len(t), x.dtype)
    w = np.where(keep, w, 0).astype(x.dtype)
    return x[np.arange(len(t)), safe], w, safe, keep


def _nll_plain_targets(self, target, weight, ignore_index):
    """The targets of the common case -- a 2-D input of 1 to 2**24 samples computing in float32
    or float64 (bfloat16 too: its float32 shadow), no weight, every target in range and none
    equal to ``ignore_index`` (then every sample weighs exactly 1 and the total weight is the
    sample count) -- or None for ``_nll_terms``' path."""
    x = self._array()
    if weight is not None or x.ndim != 2 or x.dtype not in _PLAIN:
        return None
    n, c = x.shape
    if not 0 < n < 2**24:
        return None
    t = target._array()
    lo, hi = int(np.minimum.reduce(t)), int(np.maximum.reduce(t))
    if lo < 0 or hi >= c or lo <= ignore_index <= hi:
        return None
    return t


_PLAIN = (np.dtype(np.float32), np.dtype(np.float64))


def _nll_fill(outs, spec, self, target, weight, reduction, ignore_index):
    t = _nll_plain_targets(self, target, weight, ignore_index)
    if t is not None:
        # Weights all 1: -(w * picked) is -picked (negated before the sum, as a signed zero
        # sums to +0.0).
        x = self._array()
        if reduction == NONE:
            np.negative(x[np.arange(len(t)), t], out=outs[0])
            outs[1][...] = 0
            return
        loss = x[np.arange(len(t)), t]
        token = quiet()
        try:
            loss = _cascade_sum(np.negative(loss, out=loss))
            outs[0][...] = loss / x.dtype.type(len(t)) if reduction == MEAN else loss
        finally:
            unquiet(token)
        outs[1][...] = len(t)
        return
    picked, w, _, keep = _nll_terms(self, target, weight, ignore_index)
    token = quiet()     # an ignored -inf is 0 * -inf: nan, not a warning (PyTorch never warns)
    try:
        loss = -(w * picked)
        if reduction == NONE:
            _store(outs[0], loss)
            _store(outs[1], 0)
            return
        if picked.dtype in _PLAIN:
            # PyTorch's 2-D kernel skips ignored samples, in the sums and in their cascade
            kept = np.nonzero(keep)[0]
            index = None if len(kept) == len(loss) else kept
            total = (_cascade_sum(w[kept], index) if weight is not None
                     else picked.dtype.type(len(kept)))
            summed = _cascade_sum(loss[kept], index)
        else:
            total, summed = w.sum(), loss.sum()
        if reduction == MEAN and not len(loss):
            # PyTorch fills an empty batch's mean with a (positive) quiet NaN; an all-ignored
            # batch's 0/0 is the division's own NaN
            _store(outs[0], np.nan)
        else:
            _store(outs[0], summed / total if reduction == MEAN else summed)
    finally:
        unquiet(token)
    _store(outs[1], total)


# PyTorch's nll_loss forward (``nll_loss_out_frame``) sums a batch in a cascade: a sample is
# subtracted from partial sum 0, and after a sample whose batch index ends in j zero "digits"
# of 2**level_power (index 0: all), partial sums 0..j-1 are each added into the next and reset;
# the eight partial sums are added in order at the end. Each partial sum is a plain sequential
# sum, so the order decides the last bits (subtracting x is adding -x, exactly).
_CASCADE_LEVELS = 8


def _cascade_sum(values: np.ndarray, batch_index=None):
    """The cascaded sum of ``values`` (1-D float32/float64, in batch order) whose samples have
    batch indices ``batch_index`` (increasing ints; None: ``0 .. len(values) - 1``): PyTorch's
    rounding, bit for bit. A numpy scalar of ``values``' dtype."""
    if batch_index is None and len(values) < 2**28:
        return _cascade_sum_dense(values)
    if batch_index is None:
        batch_index = np.arange(len(values))
    n = int(batch_index[-1]) + 1 if len(batch_index) else 1
    level_power = max(4, (n - 1).bit_length() // _CASCADE_LEVELS)
    mask = (1 << level_power) - 1
    # depth: how many partial sums a sample's index flushes (its trailing zero "digits")
    depth = np.zeros(len(batch_index), np.int64)
    zeros = np.ones(len(batch_index), bool)
    for j in range(_CASCADE_LEVELS - 1):
        zeros &= ((batch_index >> (j * level_power)) & mask) == 0
        depth += zeros
    total = values.dtype.type(0)
    stream = values
    for j in range(_CASCADE_LEVELS):
        # partial sum j takes ``stream`` in order and flushes after each item of depth > j
        ends = np.nonzero(depth > j)[0] if j < _CASCADE_LEVELS - 1 else np.zeros(0, np.int64)
        starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64) if len(ends) else ends
        flushed = _sequential_sums(stream, starts, ends + 1 - starts)
        rest = int(ends[-1]) + 1 if len(ends) else 0
        total = total + _sequential_sum(stream[rest:])  # partial sums 0..7 added in order
        stream, depth = flushed, depth[ends]
    return total


def _cascade_sum_dense(values: np.ndarray):
    """``_cascade_sum`` of samples 0 .. n-1, n < 2**28 (digits of 16): sample 0 is flushed
    to the last partial sum at once; after it, partial sum j holds what is left of level j
    once its full blocks of 16 (aligned from the level's first item) were flushed up as
    block sums."""
    zero = values.dtype.type(0)
    if not len(values):
        return zero
    last = zero + values[0]
    total = zero
    items = values[1:]
    for _ in range(_CASCADE_LEVELS - 1):
        blocks = len(items) // 16
        total = total + _sequential_sum(items[16 * blocks:])
        if blocks:
            rows = np.zeros((blocks, 17), values.dtype)
            rows[:, 1:] = items[:16 * blocks].reshape(blocks, 16)
            items = np.add.accumulate(rows, axis=1)[:, -1]
        else:
            items = items[:0]
    return total + last


def _sequential_sum(values: np.ndarray):
    """``((0 + v0) + v1) + ...`` in order (numpy's sums are pairwise)."""
    acc = np.zeros(len(values) + 1, values.dtype)
    acc[1:] = values
    return np.add.accumulate(acc)[-1]


def _sequential_sums(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """For each segment ``values[start:start + length]``, ``((0 + v0) + v1) + ...`` in order
    (numpy's own sums are pairwise): segments of one length at a time, accumulated along a row
    that starts with +0.0."""
    out = np.zeros(len(starts), values.dtype)
    for length in np.unique(lengths):
        if length == 0:
            continue
        rows = np.nonzero(lengths == length)[0]
        block = np.zeros((len(rows), int(length) + 1), values.dtype)
        block[:, 1:] = values[starts[rows, None] + np.arange(length)]
        out[rows] = np.add.accumulate(block, axis=1)[:, -1]
    return out


def _nll_backward_rule(grad_output, self, target, weight, reduction, ignore_index,
                       total_weight):
    _nll_check(self, target, weight)
    gs = grad_output._layout.sizes
    if reduction == NONE and self.ndim == 2:
        n = self._layout.sizes[0]
        if not gs:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if len(gs) != 1 or gs[0] != n:
            raise RuntimeError(f"Expected a tensor of dimension 1 and tensor.size[0] == {n} but "
                               f"got: dimension {len(gs)} and tensor.size[0] = {gs[0]}")
    elif math.prod(gs) != 1:
        raise RuntimeError(f"Expected a single element grad_output tensor, but got: "
                           f"{format_size(gs)}")
    device = common_device([grad_output, self, target])
    return Spec(self._layout.sizes, contiguous_strides(self._layout.sizes), self._dtype, device)


def _nll_backward_fill(outs, spec, grad_output, self, target, weight, reduction, ignore_index,
                       total_weight):
    out = outs[0]
    t = _nll_plain_targets(self, target, weight, ignore_index)
    if t is not None and out.flags.c_contiguous:
        # Weights all 1: -w * g is g * -1 (which keeps a NaN's sign); the rest of the (fresh)
        # output is +0.0 as in PyTorch.
        out.fill(0)
        token = quiet()
        try:
            out.reshape(-1)[np.arange(0, out.size, out.shape[1]) + t] = (
                _nll_grad_scale(grad_output, reduction, total_weight) * -1)
        finally:
            unquiet(token)
        return
    _, w, safe, _ = _nll_terms(self, target, weight, ignore_index)
    token = quiet()     # a total weight of 0 (all ignored) divides to inf/nan without warning
    try:
        g = _nll_grad_scale(grad_output, reduction, total_weight)
        grad = np.zeros((len(safe), self._layout.sizes[-1]), out.dtype)
        # Ignored samples stay +0.0 (PyTorch writes only the others; -0 * g would give -0.0).
        keep = target._array().reshape(-1) != ignore_index
        grad[np.arange(len(safe))[keep], safe[keep]] = np.broadcast_to(-w * g, w.shape)[keep]
    finally:
        unquiet(token)
    _store(out, grad.reshape(out.shape))


def _nll_grad_scale(grad_output, reduction, total_weight):
    """The incoming gradient of each sample's loss before its weight: one per sample (none) or
    one for all (sum; mean: over the total weight)."""
    g = grad_output._array()
    if reduction == NONE:
        return g.reshape(-1)
    if reduction == MEAN:
        return g / total_weight._array()
    return g


# -- mse -----------------------------------------------------------------------------------------
def _mse_rule(self, target, reduction=MEAN):
    dtype = dt.promote_types(self._dtype, target._dtype)
    return _pointwise_spec([self, target], reduction, dtype)


def _mse_fill(outs, spec, self, target, reduction=MEAN):
    with np.errstate(all="ignore"):
        diff = self._array().astype(outs[0].dtype) - target._array().astype(outs[0].dtype)
        _store(outs[0], _reduced(diff * diff, reduction))


def _contiguous_like(self, *others) -> Spec:
    """PyTorch's backward kernels allocate ``zeros_like(self, LEGACY_CONTIGUOUS_MEMORY_FORMAT)``."""
    sizes = broadcast_shapes(self._layout.sizes, *(t._layout.sizes for t in others))
    return Spec(sizes, contiguous_strides(sizes), self._dtype,
                common_device([self, *others]))


def _mse_backward_rule(grad_output, self, target, reduction):
    return _contiguous_like(self, target)


def _mse_backward_fill(outs, spec, grad_output, self, target, reduction):
    x, y = self._array(), target._array()
    numel = int(np.prod(np.broadcast_shapes(x.shape, y.shape), dtype=np.int64))
    # C++ divides 2 by 0 to inf for an empty input; the result has no elements anyway.
    norm = (2.0 / numel if numel else np.inf) if reduction == MEAN else 2.0
    with np.errstate(all="ignore"):
        _store(outs[0], norm * (x - y) * grad_output._array())


# -- binary cross entropy ------------------------------------------------------------------------
def _bce_rule(self, target, weight=None, reduction=MEAN):
    tensors = [t for t in (self, target, weight) if t is not None]
    return _pointwise_spec(tensors, reduction)


def _rounding(spec):
    """bfloat16: PyTorch's binary cross entropy kernels compute in ``BFloat16`` arithmetic
    (every operation rounds), so ours round where theirs do; other dtypes: no-op."""
    return round_to_bfloat16 if spec.dtype is dt.bfloat16 else _same


def _same(a):
    return a


def _bce_fill(outs, spec, self, target, weight=None, reduction=MEAN):
    x, y = self._array(), target._array()
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if ((y < 0) | (y > 1)).any():
        raise RuntimeError("all elements of target should be between 0 and 1")
    r = _rounding(spec)
    with np.errstate(all="ignore"):
        # PyTorch clamps the logs at -100 so that x = 0 or 1 gives a finite loss.
        loss = r(r(r(y - 1) * np.maximum(r(np.log1p(-x)), -100))
                 - r(y * np.maximum(r(np.log(x)), -100)))
        if weight is not None:
            loss = r(loss * weight._array())
        _store(outs[0], _reduced(loss.astype(outs[0].dtype), reduction))


def _bce_backward_rule(grad_output, self, target, weight=None, reduction=MEAN):
    return _pointwise_spec([self, target], NONE)


def _bce_backward_fill(outs, spec, grad_output, self, target, weight=None, reduction=MEAN):
    x, y = self._array(), target._array()
    r = _rounding(spec)
    with np.errstate(all="ignore"):
        grad = r(r(grad_output._array() * r(x - y))
                 / np.maximum(r(r(1 - x) * x), r(_BCE_EPS)))
        if weight is not None:
            grad = r(grad * weight._array())
        if reduction == MEAN:
            grad = r(grad / max(x.size, 1))
        _store(outs[0], grad)


def _bce_logits_rule(self, target, weight=None, pos_weight=None, reduction=MEAN):
    # PyTorch computes ``(1 - target) * self`` first: broadcast errors name target first.
    tensors = [t for t in (target, self, weight, pos_weight) if t is not None]
    return _pointwise_spec(tensors, reduction, self._dtype)


def _bce_logits_fill(outs, spec, self, target, weight=None, pos_weight=None, reduction=MEAN):
    x, y = self._array(), target._array()
    r = _rounding(spec)     # PyTorch's composite: log_sigmoid, mul, add_, sub_, mul_
    with np.errstate(all="ignore"):
        log_sigmoid = r(np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))))
        if pos_weight is not None:
            log_weight = r(r(r(pos_weight._array() - 1) * y) + 1)
            log_sigmoid = r(log_weight * log_sigmoid)
        loss = r(r(r(1 - y) * x) - log_sigmoid)
        if weight is not None:
            loss = r(loss * weight._array())
        _store(outs[0], _reduced(loss.astype(outs[0].dtype), reduction))


# -- softplus ------------------------------------------------------------------------------------
def _softplus_rule(self, beta=1, threshold=20):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f'"softplus_cpu" not implemented for '
                                  f"'{self._dtype.legacy_name.replace('Tensor', '')}'")
    return _pointwise_spec([self], NONE)


def _softplus_fill(outs, spec, self, beta=1, threshold=20):
    x = self._array()
    with np.errstate(all="ignore"):
        xb = x * beta
        _store(outs[0], np.where(xb > threshold, x, np.log1p(np.exp(xb)) / beta))


def _softplus_backward_rule(grad_output, self, beta, threshold):
    return _pointwise_spec([grad_output, self], NONE)


def _softplus_backward_fill(outs, spec, grad_output, self, beta, threshold):
    x, g = self._array(), grad_output._array()
    with np.errstate(all="ignore"):
        z = np.exp(x * beta)
        _store(outs[0], np.where(x * beta > threshold, g, g * z / (z + 1)))


# -- constant_pad_nd -----------------------------------------------------------------------------
def _pad_sizes(self, pad) -> tuple:
    pad = list(pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    ndim = self.ndim
    if len(pad) > 2 * ndim:
        raise RuntimeError("Length of pad should be no more than twice the number of dimensions "
                           f"of the input. Pad length is {len(pad)}while the input has "
                           f"{ndim}dimensions.")
    sizes = list(self._layout.sizes)
    n_pad = len(pad) // 2
    # PyTorch narrows for the negative pads first, outer dim first, left side first.
    for i in range(n_pad):
        d = ndim - n_pad + i
        lo, hi = pad[2 * (n_pad - i - 1)], pad[2 * (n_pad - i - 1) + 1]
        for p in (lo, hi):
            if p < 0:
                if sizes[d] + p < 0:
                    raise RuntimeError("narrow(): length must be non-negative.")
                sizes[d] += p
        sizes[d] += max(lo, 0) + max(hi, 0)
    return tuple(sizes)


def _pad_rule(self, pad, value=0):
    sizes = _pad_sizes(self, pad)
    return Spec(sizes, contiguous_strides(sizes), self._dtype, self._storage.device)


def _pad_fill(outs, spec, self, pad, value=0):
    out = outs[0]
    out[...] = checked_scalar(value, self._dtype)   # c10's check: 300 into uint8 raises
    src, dst = [], []
    ndim = self.ndim
    for d in range(ndim):
        i = ndim - 1 - d
        lo, hi = (pad[2 * i], pad[2 * i + 1]) if 2 * i < len(pad) else (0, 0)
        n = self._layout.sizes[d]
        s0, s1 = max(-lo, 0), n - max(-hi, 0)
        src.append(slice(s0, max(s1, s0)))
        dst.append(slice(max(lo, 0), max(lo, 0) + max(s1 - s0, 0)))
    out[tuple(dst)] = self._array()[tuple(src)]


register_rule(ops.nll_loss_forward, _nll_rule, _nll_fill)
register_rule(ops.nll_loss_backward, _nll_backward_rule, _nll_backward_fill)
register_rule(ops.mse_loss, _mse_rule, _mse_fill)
register_rule(ops.mse_loss_backward, _mse_backward_rule, _mse_backward_fill)
register_rule(ops.binary_cross_entropy, _bce_rule, _bce_fill)
register_rule(ops.binary_cross_entropy_backward, _bce_backward_rule, _bce_backward_fill)
register_rule(ops.binary_cross_entropy_with_logits, _bce_logits_rule, _bce_logits_fill)
register_rule(ops.softplus, _softplus_rule, _softplus_fill)
register_rule(ops.softplus_backward, _softplus_backward_rule, _softplus_backward_fill)
register_rule(ops.constant_pad_nd, _pad_rule, _pad_fill)
