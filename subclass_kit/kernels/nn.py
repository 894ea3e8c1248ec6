"""Neural-network primitives: ``_softmax``, ``_log_softmax``, ``native_layer_norm``, ``embedding``,
and the backward ops PyTorch's derivative formulas call: ``_softmax_backward_data``,
``_log_softmax_backward_data``, ``native_layer_norm_backward``, ``embedding_dense_backward``.

One rule per op (Note [One rule per op]); outputs are fresh and contiguous, as PyTorch's CPU
kernels make them (softmax of a transposed or channels-last input is contiguous). float16
inputs compute in float32 and round once (PyTorch's ``opmath`` type). Data-dependent checks
(embedding's index range) run in the fill, so meta tensors skip them as in PyTorch.
The composites ``softmax``/``log_softmax``/``layer_norm`` live in ``decompositions_nn.py``.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..layout import contiguous_strides, format_size, wrap_dim
from ..registry import ops
from ..storage import round_to_bfloat16
from ._common import Spec, common_device, register_rule, type_name, type_string
from ._scalars import quiet, unquiet


def _opmath(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _fresh(sizes, dtype, device) -> Spec:
    sizes = tuple(sizes)
    return Spec(sizes, contiguous_strides(sizes), dtype, device)


# -- softmax -------------------------------------------------------------------------------------
def _softmax_rule_for(name):
    def rule(self, dim, half_to_float):
        ndim = self.ndim
        d = wrap_dim(dim, ndim)
        if half_to_float:
            raise RuntimeError("softmax with half to float conversion is not supported on CPU")
        if not self._dtype.is_floating_point:
            which = "lastdim_kernel_impl" if d == max(ndim - 1, 0) else "kernel_impl"
            raise NotImplementedError(
                f'"{name}_{which}" not implemented for \'{type_name(self._dtype)}\'')
        return _fresh(self._layout.sizes, self._dtype, self._storage.device)
    return rule


def _shifted(self, dim):
    """``x - max(x, dim)`` in the compute dtype, and the reduced axis (0-d works as 1-d)."""
    x = _opmath(self._array())
    d = wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        x = x.reshape(1)
    return x - np.max(x, axis=d, keepdims=True), d


def _softmax_fill(outs, spec, self, dim, half_to_float):
    out = outs[0]
    if out.size == 0:
        return
    x = self._array()
    if _in_place(out, x):
        _softmax_in_place(out, x, wrap_dim(dim, x.ndim))
        return
    with np.errstate(all="ignore"):
        shifted, d = _shifted(self, dim)
        e = np.exp(shifted)
        res = e / np.sum(e, axis=d, keepdims=True)
    np.copyto(outs[0], res.reshape(outs[0].shape), casting="unsafe")


def _log_softmax_fill(outs, spec, self, dim, half_to_float):
    out = outs[0]
    if out.size == 0:
        return
    x = self._array()
    if spec.dtype is not dt.bfloat16 and _in_place(out, x):
        _log_softmax_in_place(out, x, wrap_dim(dim, x.ndim))
        return
    with np.errstate(all="ignore"):
        shifted, d = _shifted(self, dim)
        total = np.sum(np.exp(shifted), axis=d, keepdims=True)
        if spec.dtype is dt.bfloat16 and d == shifted.ndim - 1:
            # PyTorch's bfloat16 last-dim kernel keeps the sum and its log in bfloat16 buffers
            total = round_to_bfloat16(np.log(round_to_bfloat16(total)))
        else:
            total = np.log(total)
        res = shifted - total
    np.copyto(outs[0], res.reshape(outs[0].shape), casting="unsafe")


def _in_place(out, x) -> bool:
    """Whether a softmax fill may compute straight into ``out``: a float32/float64 ``x`` of
    ``out``'s dtype, at least 1-d, and both C-contiguous (then every temporary of the general
    path has the same layout, and the in-place operations give bitwise its results)."""
    return (x.dtype is out.dtype and x.dtype in _IN_PLACE and x.ndim > 0
            and x.flags.c_contiguous and out.flags.c_contiguous)


_IN_PLACE = (np.dtype(np.float32), np.dtype(np.float64))


def _softmax_in_place(out, x, d):
    """``out = exp(x - max) / sum(exp(x - max))`` over axis ``d`` (``out`` fresh)."""
    token = quiet()
    try:
        np.subtract(x, np.maximum.reduce(x, axis=d, keepdims=True), out=out)
        np.exp(out, out=out)
        np.divide(out, np.add.reduce(out, axis=d, keepdims=True), out=out)
    finally:
        unquiet(token)


def _log_softmax_in_place(out, x, d):
    """``out = x - max - log(sum(exp(x - max)))`` over axis ``d``, ``out`` (fresh) holding
    ``x - max``: one temporary instead of four and no final copy."""
    token = quiet()
    try:
        np.subtract(x, np.maximum.reduce(x, axis=d, keepdims=True), out=out)
        total = np.add.reduce(np.exp(out), axis=d, keepdims=True)
        np.subtract(out, np.log(total, out=total), out=out)
    finally:
        unquiet(token)


# -- layer norm ----------------------------------------------------------------------------------
def _check_layer_norm_inputs(input, normalized_shape, weight, bias):
    shape = tuple(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if weight is not None and weight._layout.sizes != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {format_size(weight._layout.sizes)} and "
                           f"normalized_shape = {format_size(shape)}")
    if bias is not None and bias._layout.sizes != shape:
        raise RuntimeError(f"Expected bias to be of same shape as normalized_shape, but got "
                           f"bias of shape {format_size(bias._layout.sizes)} and "
                           f"normalized_shape = {format_size(shape)}")
    sizes = input._layout.sizes
    if len(sizes) < len(shape) or sizes[len(sizes) - len(shape):] != shape:
        expected = "".join(f", {s}" for s in shape)
        raise RuntimeError(f"Given normalized_shape={format_size(shape)}, expected input with "
                           f"shape [*{expected}], but got input of size{format_size(sizes)}")
    return shape


def _stats_dtype(input, weight, bias):
    """dtype of mean/rstd. A first parameter of another dtype than ``input`` means PyTorch's
    "mixed dtype" path: floating input, float32 parameters, float32 statistics."""
    params = [p for p in (weight, bias) if p is not None]
    if params and params[0]._dtype is not input._dtype:
        if not input._dtype.is_floating_point:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        for p in params:
            if p._dtype is not dt.float32:
                raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of "
                                   "Float")
        return dt.float32
    for p in params:
        if p._dtype is not input._dtype:
            raise RuntimeError(f"expected scalar type {type_name(input._dtype)} but found "
                               f"{type_name(p._dtype)}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(
            f'"LayerNormKernelImpl" not implemented for \'{type_name(input._dtype)}\'')
    return input._dtype


def _layer_norm_rule(input, normalized_shape, weight, bias, eps):
    shape = _check_layer_norm_inputs(input, normalized_shape, weight, bias)
    device = common_device([t for t in (input, weight, bias) if t is not None])
    stats = _stats_dtype(input, weight, bias)
    sizes = input._layout.sizes
    axis = len(sizes) - len(shape)
    stat_sizes = sizes[:axis] + (1,) * len(shape)
    return (_fresh(sizes, input._dtype, device), _fresh(stat_sizes, stats, device),
            _fresh(stat_sizes, stats, device))


def _layer_norm_fill(outs, spec, input, normalized_shape, weight, bias, eps):
    out, mean_out, rstd_out = outs
    sizes = spec[0].sizes
    axis = len(sizes) - len(tuple(normalized_shape))
    rows = int(np.prod(sizes[:axis], dtype=np.int64))
    cols = int(np.prod(sizes[axis:], dtype=np.int64))
    x = _opmath(input._array()).reshape(rows, cols)
    if cols == 0:
        # PyTorch: mean 0 and rstd nan for empty rows.
        mean_out[...] = 0
        rstd_out[...] = np.nan
        return
    if rows == 0:
        return
    with np.errstate(all="ignore"):
        # mean and biased variance as x.mean / np.mean compute them (a pairwise sum, then a
        # division), normalised, scaled and shifted in place: the same roundings in two
        # row-sized temporaries (the output itself when it has the compute dtype)
        mean = np.add.reduce(x, axis=1, keepdims=True)
        np.true_divide(mean, cols, out=mean, casting="unsafe")
        d = np.subtract(x, mean)
        y = out.reshape(rows, cols) if out.dtype == x.dtype else np.empty_like(d)
        np.multiply(d, d, out=y)
        var = np.add.reduce(y, axis=1, keepdims=True)
        np.true_divide(var, cols, out=var, casting="unsafe")
        rstd = 1.0 / np.sqrt(var + np.asarray(eps, x.dtype))
        np.multiply(d, rstd, out=y)
        y = y.reshape(sizes)
        if weight is not None:
            np.multiply(y, _opmath(weight._array()), out=y)
        if bias is not None:
            np.add(y, _opmath(bias._array()), out=y)
    if y.base is not out and y is not out:
        np.copyto(out, y, casting="unsafe")
    np.copyto(mean_out, mean.reshape(mean_out.shape), casting="unsafe")
    np.copyto(rstd_out, rstd.reshape(rstd_out.shape), casting="unsafe")


# -- embedding -----------------------------------------------------------------------------------
def _embedding_rule(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if indices._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"{type_string(indices._dtype)} instead (while checking "
                           f"arguments for embedding)")
    device = common_device([weight, indices])
    return _fresh(indices._layout.sizes + weight._layout.sizes[1:], weight._dtype, device)


def _embedding_fill(outs, spec, weight, indices, padding_idx=-1, scale_grad_by_freq=False,
                    sparse=False):
    idx = indices._array()
    if idx.size and (idx.min() < 0 or idx.max() >= weight._layout.sizes[0]):
        raise IndexError("index out of range in self")
    np.copyto(outs[0], np.take(weight._array(), idx, axis=0))


# -- backward ops ----------------------------------------------------------------------------------
def _softmax_backward_rule_for(name):
    def rule(grad_output, output, dim, input_dtype):
        gs, os_ = grad_output._layout.sizes, output._layout.sizes
        if gs != os_:
            raise RuntimeError(
                f"Expected tensor for argument #1 'grad' to have same size as tensor for argument "
                f"#2 'output'; but {format_size(gs)} does not equal {format_size(os_)} (while "
                f"checking arguments for {name}_backward)")
        d = wrap_dim(dim, output.ndim)
        gdt = grad_output._dtype
        # half_to_float (float32 grad of a float16 input) has no CPU kernel.
        if input_dtype is dt.float16 and gdt is dt.float32:
            raise RuntimeError("expected scalar type Float but found Half")
        if output._dtype is not gdt:
            raise RuntimeError(f"expected scalar type {type_name(gdt)} but found "
                               f"{type_name(output._dtype)}")
        if not gdt.is_floating_point:
            which = "lastdim_kernel_impl" if d == max(output.ndim - 1, 0) else "kernel_impl"
            raise NotImplementedError(
                f'"{name}_backward_{which}" not implemented for \'{type_name(gdt)}\'')
        return _fresh(gs, gdt, common_device([grad_output, output]))
    return rule


def _softmax_grad(g, y, d):
    # y = softmax(x): dx = y * (g - sum(g * y))
    return y * (g - np.sum(g * y, axis=d, keepdims=True))


def _log_softmax_grad(g, y, d):
    # y = log_softmax(x): dx = g - exp(y) * sum(g)
    return g - np.exp(y) * np.sum(g, axis=d, keepdims=True)


def _softmax_backward_fill_for(grad_input):
    """The fill of ``_softmax_backward_data`` / ``_log_softmax_backward_data``:
    ``grad_input(g, y, dim)`` on the grad and the forward output in opmath (0-d as 1-d)."""
    def fill(outs, spec, grad_output, output, dim, input_dtype):
        out = outs[0]
        if out.size == 0:
            return
        g, y = grad_output._array(), output._array()
        # softmax sums the temporary g * y, which has the operands' layout: C-contiguous ones
        # only; log_softmax sums g itself.
        if (g.dtype is out.dtype and y.dtype is out.dtype and out.dtype in _IN_PLACE
                and y.ndim and out.flags.c_contiguous and (grad_input is _log_softmax_grad or (
                    g.flags.c_contiguous and y.flags.c_contiguous))):
            _IN_PLACE_GRADS[grad_input](out, g, y, wrap_dim(dim, y.ndim))
            return
        g, y = _opmath(g), _opmath(y)
        d = wrap_dim(dim, y.ndim)
        if y.ndim == 0:
            g, y = g.reshape(1), y.reshape(1)
        with np.errstate(all="ignore"):
            res = grad_input(g, y, d)
        np.copyto(outs[0], res.reshape(outs[0].shape), casting="unsafe")
    return fill


def _layer_norm_backward_rule(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                              output_mask):
    shape = _check_layer_norm_inputs(input, normalized_shape, weight, bias)
    device = common_device([t for t in (grad_out, input, mean, rstd, weight, bias)
                            if t is not None])
    sizes = input._layout.sizes
    if grad_out._layout.sizes != sizes:
        # PyTorch reads grad_out as a buffer of input's numel without a check
        raise RuntimeError(f"native_layer_norm_backward: expected grad_out of the input's size "
                           f"{format_size(sizes)}, but got {format_size(grad_out._layout.sizes)}")
    axis = len(sizes) - len(shape)
    rows = int(np.prod(sizes[:axis], dtype=np.int64))
    cols = int(np.prod(shape, dtype=np.int64))
    for name, t in (("mean", mean), ("rstd", rstd)):
        n = int(np.prod(t._layout.sizes, dtype=np.int64))
        if n != rows:
            raise RuntimeError(f"native_layer_norm_backward: expected {name} with {rows} "
                               f"elements (one per normalized row), but got {n}")
    # PyTorch allocates the requested gradients like weight and bias: asking for one whose
    # parameter is None fails there, with this message.
    if (output_mask[1] and weight is None) or (output_mask[2] and bias is None):
        raise RuntimeError("tensor does not have a device")
    if rows and cols:
        # the kernel's checks: grad_out in the input's dtype, the statistics and parameters in
        # the parameter dtype (float32 for a reduced-precision input with float32 parameters)
        xdt = input._dtype
        if not xdt.is_floating_point:
            raise NotImplementedError(
                f'"LayerNormBackwardKernelImpl" not implemented for \'{type_name(xdt)}\'')
        params = [p for p in (weight, bias) if p is not None]
        pdt = dt.float32 if (xdt.itemsize == 2 and params and params[0]._dtype is not xdt) \
            else xdt
        checks = [(grad_out, xdt), (mean, pdt), (rstd, pdt), (weight, pdt)]
        if output_mask[2]:
            checks.append((bias, pdt))
        for t, want in checks:
            if t is not None and t._dtype is not want:
                raise RuntimeError(f"expected scalar type {type_name(want)} but found "
                                   f"{type_name(t._dtype)}")
    return (_fresh(sizes, input._dtype, device) if output_mask[0] else None,
            _fresh(shape, weight._dtype, device) if output_mask[1] else None,
            _fresh(shape, bias._dtype, device) if output_mask[2] else None)


def _layer_norm_backward_fill(outs, spec, grad_out, input, normalized_shape, mean, rstd, weight,
                              bias, output_mask):
    dx_out, dw_out, db_out = outs
    sizes = input._layout.sizes
    cols = int(np.prod(tuple(normalized_shape), dtype=np.int64))
    rows = int(np.prod(sizes, dtype=np.int64)) // cols if cols else 0
    if rows == 0:
        # PyTorch: zero parameter gradients when there are no rows (nothing to sum)
        for o in (dw_out, db_out):
            if o is not None:
                o[...] = 0
        return
    if cols == 0:
        return
    # opmath: float16 computes in float32 (bfloat16 arrays already are float32)
    x = _opmath(input._array()).reshape(rows, cols)
    dy = _opmath(grad_out._array()).reshape(rows, cols)
    mu = mean._array().reshape(rows, 1).astype(x.dtype, copy=False)
    rs = rstd._array().reshape(rows, 1).astype(x.dtype, copy=False)
    ones_row = np.ones(cols, x.dtype)
    scratch = np.empty_like(x)
    with np.errstate(all="ignore"):
        if dx_out is not None:
            # PyTorch's row formula: with dyg = dy * weight, db = sum(dyg), ds = sum(dyg * x),
            # dx = rstd * dyg + b * x + c, b = (db * mean - ds) * rstd^3 / N,
            # c = -b * mean - db * rstd / N (x_hat folded into b and c: no x_hat array).
            # Row sums as products with a ones vector / einsum (no product array).
            dyg = np.multiply(dy, _opmath(weight._array()).reshape(1, cols)) \
                if weight is not None else dy
            db = (dyg @ ones_row).reshape(rows, 1)
            ds = np.einsum("ij,ij->i", dyg, x).reshape(rows, 1)
            scale = x.dtype.type(1.0 / cols)
            b = (db * mu - ds) * (rs * rs * rs) * scale
            c = -b * mu - db * rs * scale
            direct = dx_out.dtype == x.dtype
            dx = dx_out.reshape(rows, cols) if direct else np.empty_like(x)
            np.multiply(dyg, rs, out=dx)
            np.multiply(x, b, out=scratch)
            dx += scratch
            dx += c
            if not direct:
                np.copyto(dx_out, dx.reshape(dx_out.shape), casting="unsafe")
        if dw_out is not None:
            # the column sums of dy * x_hat
            np.subtract(x, mu, out=scratch)
            scratch *= rs
            dw = np.einsum("ij,ij->j", scratch, dy)
            np.copyto(dw_out, dw.reshape(dw_out.shape), casting="unsafe")
        if db_out is not None:
            dbias = np.ones(rows, x.dtype) @ dy
            np.copyto(db_out, dbias.reshape(db_out.shape), casting="unsafe")


# The grads computed in ``out`` (float32/float64, the operands' dtype; fresh: these ops have no
# ``out=`` form): the same operations as ``_softmax_grad`` / ``_log_softmax_grad`` (bitwise their
# results but for the sign of a NaN made of two NaNs), no temporaries.
def _softmax_grad_in_place(out, g, y, d):
    token = quiet()
    try:
        total = np.add.reduce(np.multiply(g, y, out=out), axis=d, keepdims=True)
        np.multiply(y, np.subtract(g, total, out=out), out=out)
    finally:
        unquiet(token)


def _log_softmax_grad_in_place(out, g, y, d):
    token = quiet()
    try:
        total = np.add.reduce(g, axis=d, keepdims=True)
        np.multiply(np.exp(y, out=out), total, out=out)
        np.subtract(g, out, out=out)
    finally:
        unquiet(token)


_IN_PLACE_GRADS = {_softmax_grad: _softmax_grad_in_place,
                   _log_softmax_grad: _log_softmax_grad_in_place}


def _embedding_backward_rule(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    if indices._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"{type_string(indices._dtype)} instead (while checking "
                           f"arguments for embedding_backward)")
    n = int(np.prod(indices._layout.sizes, dtype=np.int64))
    sizes = grad_output._layout.sizes
    dim = sizes[-1] if sizes else 1
    numel = int(np.prod(sizes, dtype=np.int64))
    if n * dim != numel:
        raise RuntimeError(f"shape '[{n}, {dim}]' is invalid for input of size {numel}")
    return _fresh((num_weights, dim), grad_output._dtype,
                  common_device([grad_output, indices]))


def _embedding_backward_fill(outs, spec, grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    # Rows of grad_output summed into the rows they were read from (np.add.at accumulates
    # repeated indices); the padding row gets nothing; scale_grad_by_freq divides each row by
    # how often its index occurs. Out-of-range indices are undefined in PyTorch: dropped here.
    out = outs[0]
    dim = out.shape[1]
    idx = indices._array().reshape(-1).astype(np.int64)
    rows = _opmath(grad_output._array()).reshape(idx.size, dim)
    keep = (idx >= 0) & (idx < num_weights) & (idx != padding_idx)
    idx, rows = idx[keep], rows[keep]
    if scale_grad_by_freq and idx.size:
        counts = np.bincount(idx, minlength=num_weights)
        rows = rows / counts[idx][:, None]
    out[...] = 0
    if not idx.size:
        return
    # Each weight row is 0 + its gradient rows in index order, as PyTorch's loop (and
    # np.add.at) adds them. A stable sort groups the rows of one index in order; the groups go
    # into the rows of a (groups, 1 + longest, dim) array behind a zero slot and after their
    # own zeros, which np.add.accumulate over axis 1 adds in turn (a reduce would sum a
    # contiguous axis pairwise; add.at takes twice as long; a
    # very uneven index distribution, where the padding would outgrow the data, keeps it).
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    starts = np.flatnonzero(np.diff(sidx, prepend=-1))
    counts = np.diff(starts, append=sidx.size)
    longest = int(counts.max())
    if len(starts) * (longest + 1) > 4 * sidx.size + 64:
        acc = np.zeros(out.shape, dtype=rows.dtype)
        np.add.at(acc, idx, rows)
        np.copyto(out, acc, casting="unsafe")
        return
    slots = np.zeros((len(starts), longest + 1, dim), dtype=rows.dtype)
    rank = np.arange(sidx.size) - np.repeat(starts, counts)
    slots[np.repeat(np.arange(len(starts)), counts), rank + 1] = rows[order]
    out[sidx[starts]] = np.add.accumulate(slots, axis=1)[:, -1]


register_rule(ops._softmax_backward_data, _softmax_backward_rule_for("softmax"),
              _softmax_backward_fill_for(_softmax_grad))
register_rule(ops._log_softmax_backward_data, _softmax_backward_rule_for("log_softmax"),
              _softmax_backward_fill_for(_log_softmax_grad))
register_rule(ops.native_layer_norm_backward, _layer_norm_backward_rule,
              _layer_norm_backward_fill)
register_rule(ops.embedding_dense_backward, _embedding_backward_rule, _embedding_backward_fill)
register_rule(ops._softmax, _softmax_rule_for("softmax"), _softmax_fill)
register_rule(ops._log_softmax, _softmax_rule_for("log_softmax"), _log_softmax_fill)
register_rule(ops.native_layer_norm, _layer_norm_rule, _layer_norm_fill)
register_rule(ops.embedding, _embedding_rule, _embedding_fill)
