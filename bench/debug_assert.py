"""Cost of the debug-assert mode: the eager chain of ``eager.py`` (~1000 small ops on 64-float
tensors, where per-op overhead dominates) under ``DebugAssertMode()`` and
``DebugAssertMode(check_data=True)``, against the same chain unchecked.

Targets: checked <= 2x unchecked, with ``check_data`` <= 5x. The ratio is ours vs ours: in
run.py's table the torch column stays empty and the ratio column of these rows reads
"checked / unchecked" (said in the notes). Run it with
``python bench/run.py --only debug_assert``, or on its own: ``python bench/debug_assert.py``
prints ``run()``'s figures.

Timing uses process CPU time (min over interleaved rounds): on a shared machine wall-clock
medians move by 2x between runs, CPU-time minima by a few percent.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path[:0] = [HERE, os.path.dirname(HERE)]

from eager import N_OPS, _check, _inputs, chain  # noqa: E402
from harness import SK, TORCH, Case, Result, Skip  # noqa: E402

DEFAULT_ROUNDS = 15
TARGETS = {"checked": 2.0, "check_data": 5.0}


def _contexts():
    try:
        import subclass_kit as sk
        from subclass_kit.modes import DebugAssertMode
    except ImportError as e:
        raise Skip(f"subclass_kit / modes not importable ({e})") from None

    class NoOp(sk.DispatchMode):
        pass

    return sk, {
        "unchecked": contextlib.nullcontext,
        "noop_mode": NoOp,
        "checked": DebugAssertMode,
        "check_data": lambda: DebugAssertMode(check_data=True),
    }


def measure(rounds: int | None = None) -> dict:
    """us/op of the chain in each context (min CPU time over interleaved rounds), and the
    checked/unchecked ratios. Raises Skip when a piece is missing."""
    rounds = rounds or DEFAULT_ROUNDS
    sk, contexts = _contexts()
    xn, wn = _inputs()
    x, w = sk.tensor(xn), sk.tensor(wn)
    best = {}
    for name, ctx in contexts.items():      # warm up, and check the chain computes right
        with ctx() as mode:
            try:
                _check(chain(x, w), xn, wn)
            except (AttributeError, NotImplementedError) as e:
                raise Skip(f"missing piece: {type(e).__name__}: {e}") from None
        if getattr(mode, "violations", None):
            raise RuntimeError(f"the eager chain breaks debug asserts: {mode.violations[:3]}")
        best[name] = float("inf")
    for _ in range(rounds):
        for name, ctx in contexts.items():
            with ctx():
                t0 = time.process_time()
                chain(x, w)
                best[name] = min(best[name], time.process_time() - t0)
    us = {name: t / N_OPS * 1e6 for name, t in best.items()}
    base = us["unchecked"]
    return {"us_per_op": us,
            "ratio": {name: us[name] / base for name in ("noop_mode", "checked", "check_data")},
            "targets": dict(TARGETS)}


def run(repeats: int | None = None) -> dict:
    """The figures as a dict (standalone entry point)."""
    return measure(repeats)


class SelfRatio(Result):
    """A row whose ratio column is checked / unchecked subclass_kit (not sk / torch)."""

    unchecked: float = 0.0

    def ratio(self, num: str = SK, den: str = TORCH):
        a = self.values.get(SK)
        return None if a is None or not self.unchecked else a / self.unchecked


def debug_assert_overhead(repeats=None) -> list:
    """Rows for bench/run.py: checked and check_data, each against unchecked."""
    figures = measure(repeats)
    us, ratio = figures["us_per_op"], figures["ratio"]
    rows = []
    for name in ("checked", "check_data"):
        r = SelfRatio(f"eager_chain_debug_assert_{name}", "us/op", target=TARGETS[name])
        r.values[SK] = us[name]
        r.unchecked = us["unchecked"]
        r.notes.append(f"ratio column = {name} / unchecked subclass_kit ({us['unchecked']:.3g} "
                       f"us/op), not sk/torch; a no-op mode alone: {ratio['noop_mode']:.2f}x, "
                       f"the checker's own cost: {us[name] - us['noop_mode']:.2f} us/op")
        rows.append(r)
    return rows


CASES = [
    Case("debug_assert", debug_assert_overhead,
         "eager chain under DebugAssertMode / check_data=True vs unchecked (same library)"),
]


if __name__ == "__main__":
    figures = run()
    for name, value in figures["us_per_op"].items():
        print(f"{name:12} {value:7.2f} us/op")
    us = figures["us_per_op"]
    print(f"{'own cost':12} {us['checked'] - us['noop_mode']:7.2f} us/op checked, "
          f"{us['check_data'] - us['noop_mode']:.2f} with check_data (over the no-op mode)")
    for name, value in figures["ratio"].items():
        target = figures["targets"].get(name)
        verdict = "" if target is None else f"  (target <= {target:g}: " \
                                           f"{'ok' if value <= target else 'MISSED'})"
        print(f"{name:12} {value:7.2f}x unchecked{verdict}")
