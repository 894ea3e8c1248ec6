"""What a fast path outside the core needs: to know that nothing would see the op calls it
stands in for, and to make their results as their kernels do.

A mode may compute with numpy what a few op calls would give (the autograd engine's numpy
formulas, ``modes/autograd/derivatives/fast.py``) while ``unobserved(ops)`` holds: no dispatch
mode, function mode or dispatch trace is active on any thread, and none of ``ops`` has had a
kernel registered since ``import subclass_kit`` (``sk.library.impl``, ``register_kernel``).
The caller checks the rest itself: operands of exactly ``sk.Tensor`` (no subclass handler) on
cpu, not inference tensors (their kernels bump versions, ``kernels/inference_versions.py``),
and grad mode off, or the calls would be recorded. Results must match the calls' own bit for
bit, with their sizes, strides, dtypes and version counters.
"""

from __future__ import annotations

from ._state import flags
from .grad_mode import _anomaly
from .kernels._iter_layout import alloc, contig
from .kernels._scalars import quiet, unquiet
from .storage import CPU
from .tensor import Tensor

# ``quiet`` / ``unquiet``: ``token = quiet()`` ... ``unquiet(token)`` turns numpy's
# floating-point warnings off in between, as around every float kernel's arithmetic (PyTorch
# never warns of inf or nan).
__all__ = ["unobserved", "empty", "array", "quiet", "unquiet", "anomaly"]

# ``anomaly``: anomaly detection's switches, the list ``[enabled, check_nan]`` itself (read
# only: ``sk.set_anomaly_enabled`` writes it). The autograd mode reads ``anomaly[0]`` for every
# node it makes, where a call of ``sk.is_anomaly_enabled()`` would cost ten times as much.
anomaly = _anomaly


def unobserved(ops) -> bool:
    """True when calls of ``ops`` (an iterable of ``OpOverload`` objects, not packets) made now
    on plain cpu tensors would run their built-in cpu kernels with nothing else seeing them
    (see the module docstring). One global read, then one attribute read per op; raises
    AttributeError for an item that is not an ``OpOverload``.

    PyTorch has no such query: its formulas are C++ that calls ATen, and a mode sees them only
    through the dispatcher. Here a fast path may skip the calls only while this holds, so that
    what a mode, trace or replaced kernel sees of a backward stays PyTorch's op stream."""
    if flags.interceptors:
        return False
    for op in ops:
        if op._replaced:
            return False
    return True


def empty(sizes: tuple, dtype):
    """A fresh contiguous cpu tensor of ``sizes`` (a tuple of non-negative ints) and ``dtype``
    (an ``sk.dtype``; float32 and float64 are the ones whose numpy array is the storage
    itself), uninitialised, made as every cpu kernel makes its output (PyTorch's
    ``at::empty``): row-major strides, its own version counter at 0, a resizable storage, an
    inference tensor inside inference mode. Write it through ``array(t)``. Raises RuntimeError
    "Storage size calculation overflowed ..." when its bytes pass the int64 range."""
    return alloc(sizes, contig(sizes), dtype, CPU)


# ``array(t)``: the numpy view of a cpu tensor's elements (shares memory; the tensor's sizes,
# strides and numpy dtype; float32 for a bfloat16 tensor, whose values live in a float32
# shadow), without ``Tensor.numpy``'s checks (``requires_grad``, subclasses): for a kernel's
# operands and outputs, as a PyTorch kernel reads ``data_ptr``. Raises RuntimeError for a
# tensor with no data (a wrapper subclass's). The tensor's own method itself, not a wrapper
# around it: a fast path reads several arrays per call.
array = Tensor._array
