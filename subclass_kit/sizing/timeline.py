"""Memory timelines: the format shared by the sizing features, and their downsampling.

A timeline is a list of points, one per moment of the traced run (after an op, or at a module
boundary), each a dict of bytes live at that moment::

    {"at": "layers.3: mm", "phase": "forward" | "backward" | "optimizer",
     "parameters": int, "gradients": int, "optimizer_states": int,
     "activations": int, "temporaries": int}

The categories are those of PyTorch's ``torch.distributed._tools.mem_tracker.MemTracker``
(parameters, buffers, gradients, optimizer states, activations, temporaries); a missing one
counts 0. The inference timeline
(``zoo.summarize(..., timeline=True)``) has only parameters and activations; the ``train``
section carries the training step's under ``"timeline"``. ``--plot`` draws one
(``sizing/plot.py``).
"""

from __future__ import annotations

__all__ = ["CATEGORIES", "MAX_POINTS", "total", "downsample"]

# The byte categories of a point, bottom to top in a stacked plot. "buffers" appears in the
# training timeline only (``modes.MemTracker``, as PyTorch's MemTracker has it); a point may
# carry more keys ("module", "node"...), which plots and sums ignore.
CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_states", "activations",
              "temporaries")

# A plot or a JSON file needs no more: a 2000-pixel-wide figure shows one point per column.
MAX_POINTS = 2000


def total(point: dict) -> int:
    """Bytes live at ``point``: the sum of its categories (absent ones count 0)."""
    return sum(point.get(c, 0) for c in CATEGORIES)


def downsample(points: list, limit: int = MAX_POINTS) -> list:
    """At most ``limit`` points of ``points``, evenly spaced, always keeping the first, the last
    and the point of the largest ``total`` (the first one if several tie), in their original
    order. ``points`` is not modified; a list no longer than ``limit`` is returned as a copy.

    Raises ValueError when ``limit`` is less than 3 (first, peak and last must fit).
    """
    if limit < 3:
        raise ValueError(f"downsample(): limit must be at least 3, got {limit}")
    n = len(points)
    if n <= limit:
        return list(points)
    peak = max(range(n), key=lambda i: total(points[i]))
    # limit - 1 evenly spaced indices from 0 to n - 1, plus the peak.
    step = (n - 1) / (limit - 2)
    keep = {round(i * step) for i in range(limit - 1)}
    keep.add(peak)
    return [points[i] for i in sorted(keep)]
