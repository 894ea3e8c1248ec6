"""Shared pieces of the benchmarks: the result record, timing, and optional torch.

run.py sets the thread-count variables before anything imports numpy; this module only reads
them. Every benchmark family module (``eager.py``, ``gpt2_meta.py``, ``import_time.py``) lists
its cases in ``CASES`` as ``Case(name, fn, help)``; ``fn(repeats)`` returns a list of Results.
A case whose pieces are missing raises ``Skip(reason)`` (or ImportError), and run.py prints
"skipped: reason" for it.

Timing: ``median_seconds(fn, repeats)`` samples one thunk; ``interleaved_samples(fns, repeats)``
samples several in alternating rounds, for figures compared with each other, and
``round_ratio(num, den)`` is the median of the per-round ratios of two of them.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

SK, TORCH, NUMPY = "subclass_kit", "torch", "numpy"
IMPLS = (SK, TORCH, NUMPY)


class Skip(Exception):
    """Raised by a case (or one implementation in it) that cannot run here."""


@dataclass
class Result:
    """One row of the table: a median per implementation, and the sk/torch ratio's target.

    The sk/torch ratio is ``values[SK] / values[TORCH]`` unless the case sets ``paired_ratio``:
    the median of per-round ratios of interleaved samples (``round_ratio``), which a drift of the
    machine between the rounds moves less than it moves the ratio of the two medians."""

    case: str
    unit: str
    values: dict = field(default_factory=dict)      # impl name -> median
    target: float | None = None                     # pass if sk/torch <= target
    notes: list = field(default_factory=list)       # e.g. "torch: skipped: not installed"
    paired_ratio: float | None = None               # sk/torch measured round by round

    def ratio(self, num: str = SK, den: str = TORCH) -> float | None:
        if (num, den) == (SK, TORCH) and self.paired_ratio is not None:
            return self.paired_ratio
        a, b = self.values.get(num), self.values.get(den)
        if a is None or not b:
            return None
        return a / b

    def as_dict(self) -> dict:
        r = self.ratio()
        return {"case": self.case, "unit": self.unit, "values": self.values,
                "ratio_sk_torch": r, "target": self.target,
                "meets_target": None if r is None or self.target is None else r <= self.target,
                "notes": self.notes}


class OwnRatio(Result):
    """A row whose ratio column is subclass_kit's own figure (its value: e.g. its
    inference/normal time, or a growth exponent), not sk/torch."""

    def ratio(self, num: str = SK, den: str = TORCH):
        return self.values.get(SK)


@dataclass
class Case:
    name: str
    fn: Callable[[int | None], list]
    help: str = ""


# This process's CPU time: everything runs on one thread, and unlike wall time it does not grow
# when other processes share the machine's two cores (wall-clock medians moved 2x between runs).
CLOCK = time.process_time


@contextmanager
def settled_heap():
    """Sampling with the collector's work kept out of the samples: one full collection, then
    what is alive (modules, models, inputs) goes to the permanent generation (``gc.freeze``)
    and each sample starts with ``collect_young()``. A full collection before every sample
    cost no real program pays between two steps, and it skewed the figures: it walks every
    object of torch and numpy (70-100 ms here), leaving the caches cold (torch's step of a
    small MLP measured 3x its steady time), and it empties CPython's free lists of tuples,
    lists, dicts and floats (a Python-heavy step measured 1.5x its steady time)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.collect()        # what the samples left in the old generation


def collect_young() -> None:
    """The collection before a sample: the young generations (what the last samples made), so
    no collection lands inside the sample; generation 2 (which clears the free lists) is left
    to the interpreter, as in a real program."""
    gc.collect(1)


def median_seconds(fn: Callable[[], object], repeats: int, warmup: int = 2) -> float:
    """Median CPU time of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    with settled_heap():
        for _ in range(repeats):
            collect_young()
            t0 = CLOCK()
            fn()
            samples.append(CLOCK() - t0)
    return statistics.median(samples)


def interleaved_samples(fns: dict, repeats: int, warmup: int = 2, rewarm: int = 0) -> dict:
    """``{name: [CPU seconds of fns[name]() per round]}``: ``warmup`` untimed calls of each
    thunk, then ``repeats`` rounds, each timing every thunk once, so a drift of the machine
    (and going first after another) hits every one alike; sample ``k`` of each comes from
    round ``k``. The order within a round alternates (forward, reversed, ...).

    ``rewarm`` untimed calls of a thunk come right before each of its timed calls: a sample
    then measures the thunk as in a loop of it, not cold just after another thunk filled the
    caches (without it, a torch training step taken right after subclass_kit's measured 1.2-1.5x
    its time in a loop of steps, numpy's small step 2.4x)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples = {name: [] for name in fns}
    order = list(fns.items())
    with settled_heap():
        for _ in range(repeats):
            order.reverse()
            for name, fn in order:
                for _ in range(rewarm):
                    fn()
                collect_young()
                t0 = CLOCK()
                fn()
                samples[name].append(CLOCK() - t0)
    return samples


def round_ratio(num: list, den: list) -> float:
    """Median of ``num[k] / den[k]`` over the rounds of ``interleaved_samples``: a round's
    samples are adjacent in time, so load from other processes mostly cancels (the ratio of
    the two medians moved by 10% between runs)."""
    return statistics.median(a / b for a, b in zip(num, den, strict=True))


def measure(result: Result, impl: str, thunk: Callable[[], float]) -> None:
    """Store ``thunk()`` as ``impl``'s value; a Skip/ImportError becomes a note instead."""
    try:
        result.values[impl] = thunk()
    except (Skip, ImportError) as e:
        result.notes.append(f"{impl}: skipped: {e}")


def import_torch():
    """torch, single-threaded, or Skip when the oracle is not installed."""
    try:
        import torch
    except ImportError as e:
        raise Skip(f"torch not installed ({e})") from None
    torch.set_num_threads(1)
    return torch
