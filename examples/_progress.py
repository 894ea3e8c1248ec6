"""A progress display for the training examples: tqdm's bar when tqdm is installed, else a
line every few steps (the examples need nothing beyond subclass_kit)."""

from __future__ import annotations

import sys
import time


def progress(steps: int, desc: str):
    """An iterator over ``range(steps)`` with ``.set_postfix(**values)``."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _Lines(steps, desc)
    return tqdm(range(steps), desc=desc, file=sys.stdout, dynamic_ncols=True,
                disable=not sys.stdout.isatty())


class _Lines:
    def __init__(self, steps: int, desc: str):
        self.steps, self.desc, self.values = steps, desc, {}
        self.every = max(1, steps // 10)
        self.start = time.perf_counter()

    def set_postfix(self, **values):
        self.values = values

    def __iter__(self):
        for i in range(self.steps):
            yield i
            if (i + 1) % self.every == 0 or i + 1 == self.steps:
                rate = (i + 1) / (time.perf_counter() - self.start)
                shown = " ".join(f"{k}={v}" for k, v in self.values.items())
                print(f"{self.desc}: step {i + 1}/{self.steps} ({rate:.1f} steps/s) {shown}",
                      flush=True)
