"""``repr`` of tensors in PyTorch's format (``torch/_tensor_str.py``), computed on the numpy
view of the data, so printing dispatches no op and no mode sees it.

- floats: 4 decimals (``tensor([0.5000, 1.0000])``); all-integral values print as ``1.``;
  scientific notation when the largest/smallest nonzero magnitude ratio exceeds 1000, the
  largest exceeds 1e8, or (non-integral) the smallest is below 1e-4; one width per tensor;
- ints and bools: ``str`` of each value, right-aligned (``tensor([ True, False])``);
- more than ``threshold`` (1000) elements: ``edgeitems`` (3) per end of each dim and ``...``;
- lines wrap at 80 columns, nested dims are indented under their bracket;
- suffixes: ``dtype=sk.int32`` unless the dtype is the default float, int64 or bool,
  ``size=(0, 3)`` for empty non-1-d tensors, ``device='meta', size=(2, 3)`` for meta tensors
  (SEMANTICS.md §7), ``requires_grad=True`` or ``grad_fn=<AddBackward0>``.

``sk.set_printoptions`` changes precision, threshold, edgeitems, linewidth and sci_mode.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtype as dt

__all__ = ["set_printoptions", "tensor_repr"]


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print (PyTorch's ``torch.set_printoptions``). ``profile``: "default",
    "short" (precision 2, threshold 1000, edgeitems 2) or "full" (no summarizing)."""
    if profile is not None:
        presets = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
                   "full": (4, math.inf, 3, 80)}
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = presets[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    """One width and one notation for every printed element (PyTorch's ``_Formatter``)."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not self.floating:
            for v in np.unique(values).tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        vals = values.astype(np.float64)
        nonzero = vals[np.isfinite(vals) & (vals != 0)]
        if nonzero.size == 0:
            return
        mags = np.abs(nonzero)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool((nonzero == np.ceil(nonzero)).all())
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode
        for v in np.unique(nonzero).tolist():
            if self.sci_mode:
                text = f"{v:.{p}e}"
            elif self.int_mode:
                text = f"{v:.0f}."
            else:
                text = f"{v:.{p}f}"
            self.max_width = max(self.max_width, len(text))

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{p}f}"
        else:
            text = str(value)
        return (self.max_width - len(text)) * " " + text


def _summarized(arr: np.ndarray, edge: int) -> np.ndarray:
    """The elements that will be printed (PyTorch's ``get_summarized_data``)."""
    if arr.ndim == 0:
        return arr.reshape(1)
    for axis in range(arr.ndim):
        if arr.shape[axis] > 2 * edge:
            idx = list(range(edge)) + list(range(arr.shape[axis] - edge, arr.shape[axis]))
            arr = np.take(arr, idx, axis=axis)
    return arr.reshape(-1)


def _vector_str(arr, indent, summarize, fmt) -> str:
    element_length = fmt.width() + 2
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * edge:
        data = ([fmt.format(v) for v in arr[:edge].tolist()] + [" ..."]
                + [fmt.format(v) for v in arr[-edge:].tolist()])
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(arr, indent, summarize, fmt) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    edge = PRINT_OPTS.edgeitems
    n = arr.shape[0]
    if summarize and n > 2 * edge:
        slices = ([_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(edge)]
                  + ["..."]
                  + [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(n - edge, n)])
    else:
        slices = [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text, suffixes, indent) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        # Wrap where PyTorch wraps: its dtype suffix says "torch." where ours says "sk.".
        width = len(suffix) + (3 if suffix.startswith("dtype=sk.") else 0)
        if last_line_len + width + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _grad_suffix(t) -> list:
    try:
        fn = t.grad_fn          # a stale view's node is regenerated first, as PyTorch prints it
    except RuntimeError:        # ... or refused (a no_grad view modified in place under no_grad)
        return ["grad_fn=<Invalid>"]
    if fn is not None:
        name = fn.name() if callable(getattr(fn, "name", None)) else type(fn).__name__
        return [f"grad_fn=<{name}>"]
    if t.requires_grad:
        return ["requires_grad=True"]
    return []


def tensor_repr(t, plain: bool = False) -> str:
    """``repr(t)`` in PyTorch's format; see the module docstring. A subclass instance prints
    its class name instead of ``tensor`` (``Sub([0., 1.])``), as PyTorch's ``_str_intern``,
    unless ``plain`` (``nn.Parameter``'s body is the plain tensor's repr); a subclass instance
    that is a parameter prints inside ``Parameter(...)``, as there."""
    from .tensor import Tensor      # tensor.py imports this module lazily
    prefix = "tensor(" if plain or type(t) is Tensor else f"{type(t).__name__}("
    indent = len(prefix)
    suffixes = []
    sizes = tuple(t._layout.sizes)
    storage = t._storage
    if storage.device.type != "cpu":
        suffixes.append(f"device='{storage.device.type}'")
    if storage._buffer is None:  # meta, or a data-less wrapper subclass
        suffixes.append(f"size={sizes}")
        if t._dtype is not dt.get_default_dtype():
            suffixes.append(f"dtype=sk.{t._dtype.name}")
        body = "..."
    elif t._layout.numel() == 0:
        if len(sizes) != 1:
            suffixes.append(f"size={sizes}")
        if t._dtype is not dt.get_default_dtype():
            suffixes.append(f"dtype=sk.{t._dtype.name}")
        body = "[]"
    else:
        arr = t._array()
        summarize = arr.size > PRINT_OPTS.threshold
        shown = _summarized(arr, PRINT_OPTS.edgeitems) if summarize else arr.reshape(-1)
        body = _tensor_str(arr, indent, summarize, _Formatter(shown))
        if t._dtype not in (dt.get_default_dtype(), dt.int64, dt.bool_):
            suffixes.append(f"dtype=sk.{t._dtype.name}")
    suffixes += _grad_suffix(t)
    out = _add_suffixes(prefix + body, suffixes, indent)
    if not plain and type(t) is not Tensor:
        from .nn.parameter import Parameter
        if type(t) is not Parameter and isinstance(t, Parameter):
            out = f"Parameter({out})"
    return out
