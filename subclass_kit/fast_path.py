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

import numpy as np

from ._state import flags
from .kernels._iter_layout import alloc, contig
from .kernels._scalars import quiet, unquiet
from .storage import CPU

# ``quiet`` / ``unquiet``: ``token = quiet()`` ... ``unquiet(token)`` turns numpy's
# floating-point warnings off in between, as around every float kernel's arithmetic (PyTorch
# never warns of inf or nan).
__all__ = ["unobserved", "empty", "array", "quiet", "unquiet"]


def unobserved(ops) -> bool:
    """True when calls of ``ops`` (``OpOverload`` objects) made now on plain cpu tensors would
    run their built-in cpu kernels with nothing else seeing them (see the module docstring).
    One global read, then one attribute read per op."""
    if flags.interceptors:
        return False
    for op in ops:
        if op._replaced:
            return False
    return True


def empty(sizes: tuple, dtype):
    """A fresh contiguous cpu tensor of ``sizes`` (a tuple of ints) and ``dtype`` (float32 or
    float64: dtypes whose numpy array is the storage itself), uninitialised, made as every cpu
    kernel makes its output: its own version counter at 0, a resizable storage (an inference
    tensor inside inference mode). Write it through ``array(t)``."""
    return alloc(sizes, contig(sizes), dtype, CPU)


def array(t) -> np.ndarray:
    """The numpy view of a cpu tensor's elements (shares memory), without ``Tensor.numpy``'s
    checks (``requires_grad``, subclasses): for a kernel's operands and outputs."""
    return t._array()
