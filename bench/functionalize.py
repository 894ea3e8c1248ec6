"""Functionalization of the unbind program (issue 14's acceptance figures).

    for i, v in enumerate(x.unbind(1)):
        v.mul_(i + 1)                      # x of shape (8, N)

- ``functionalize_unbind_N`` (N = 1000, 4000): ``functionalize(f)(x)`` in seconds; torch's
  ``torch.func.functionalize`` alongside only at N = 1000 (it regenerates every output of the
  unbind after each mutation: quadratic, 13 s at N = 4000 here). The eager run of the same
  program (ours) is a note, and the ratio to it is checked against 5x.
- ``functionalize_unbind_growth``: the growth exponent log(t4000 / t1000) / log(4); target 1.1
  (linear), shown in the sk column.
- ``make_graph_functionalize_1000``: ``make_graph(functionalize(f))(x)`` at N = 1000, seconds;
  target: under 2 s (torch's make_fx takes 18 s at N = 100, so it is not run).
"""

from __future__ import annotations

import math

from harness import SK, TORCH, Case, Result, import_torch, measure, median_seconds

DEFAULT_REPEATS = 3


def _program(x):
    for i, v in enumerate(x.unbind(1)):
        v.mul_(i + 1)
    return x


def _sk_times(n, repeats):
    import subclass_kit as sk
    from subclass_kit.modes import functionalize
    f = functionalize(_program)
    func = median_seconds(lambda: f(sk.ones(8, n)), repeats, warmup=1)
    eager = median_seconds(lambda: _program(sk.ones(8, n)), repeats, warmup=1)
    return func, eager


def unbind(repeats=None) -> list:
    repeats = repeats or DEFAULT_REPEATS
    rows, times = [], {}
    for n in (1000, 4000):
        r = Result(f"functionalize_unbind_{n}", "s")
        func, eager = _sk_times(n, repeats)
        r.values[SK] = func
        times[n] = func
        ratio = func / eager
        r.notes.append(f"sk eager {eager:.3g} s; functionalized / eager = {ratio:.2f}x "
                       f"(target <= 5: {'ok' if ratio <= 5 else 'MISSED'})")
        if n == 1000:
            def torch_run():
                torch = import_torch()
                f = torch.func.functionalize(_program)
                return median_seconds(lambda: f(torch.ones(8, n)), 1, warmup=0)
            measure(r, TORCH, torch_run)
        else:
            r.notes.append("torch: not run (quadratic: 13.4 s here)")
        rows.append(r)
    growth = Result("functionalize_unbind_growth", "exponent")
    exponent = math.log(times[4000] / times[1000]) / math.log(4)
    growth.values[SK] = exponent
    growth.notes.append(f"target <= 1.1: {'ok' if exponent <= 1.1 else 'MISSED'} "
                        f"(torch: about 2)")
    rows.append(growth)
    return rows


def graph(repeats=None) -> list:
    import subclass_kit as sk
    from subclass_kit.modes import functionalize, make_graph
    r = Result("make_graph_functionalize_1000", "s")
    capture = make_graph(functionalize(_program))
    t = median_seconds(lambda: capture(sk.ones(8, 1000)), 1, warmup=0)
    r.values[SK] = t
    r.notes.append(f"target < 2 s: {'ok' if t < 2 else 'MISSED'}; torch make_fx not run "
                   f"(18 s at N = 100)")
    return [r]


CASES = [Case("functionalize_unbind", unbind,
              "functionalize the unbind program at N = 1000, 4000 (linear, <= 5x eager)"),
         Case("make_graph_functionalize", graph,
              "make_graph(functionalize(f)) of the unbind program at N = 1000 (< 2 s)")]
