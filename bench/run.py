"""Benchmarks: subclass_kit next to torch and numpy, in one run, on one thread.

    python bench/run.py                      # every case, a table with sk/torch ratios
    python bench/run.py --only eager_chain   # one case, or a family (a FAMILIES name)
    python bench/run.py --json               # the results as JSON on stdout
    python bench/run.py --list               # the registered cases

Each number is a median over repeats (``--repeats`` overrides every case's default) of the
process's CPU time, which other processes on the machine do not inflate. Figures compared with
each other in one row (inference vs normal, the libraries' training steps) are sampled in
alternating rounds (``harness.interleaved_samples``) and their ratio is the median of the
per-round ratios, which a drift of the machine moves less. A case
whose pieces are missing (torch not installed, an op not written yet) prints
"skipped: reason" instead of failing. To add a benchmark: put a module in bench/ with a
``CASES`` list of ``harness.Case`` and add its name to ``FAMILIES`` below.
"""

from __future__ import annotations

# One thread for every library, set before numpy (or torch) is first imported.
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/ modules import each other by name; the checkout's subclass_kit wins over an install.
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from harness import IMPLS, Skip  # noqa: E402

# Benchmark family modules, in the order they run.
FAMILIES = ["eager", "inference", "debug_assert", "gpt2_meta", "meta_mode", "functionalize",
            "autograd", "training", "import_time", "cli_process"]


def load_cases(out=sys.stdout) -> list:
    """(family, Case) for every case; a family whose module fails to import is reported."""
    found = []
    for family in FAMILIES:
        try:
            module = importlib.import_module(family)
        except ImportError as e:
            print(f"{family}: skipped: {e}", file=out)
            continue
        found.extend((family, case) for case in module.CASES)
    return found


def _fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def print_table(results: list, out=sys.stdout) -> None:
    header = ["case", "unit", *IMPLS, "sk/torch", "target"]
    rows = []
    for r in results:
        ratio = r.ratio()
        if r.target is None:
            target = ""
        elif ratio is None:
            target = f"<= {r.target:g}"
        else:
            target = f"<= {r.target:g} {'ok' if ratio <= r.target else 'MISSED'}"
        rows.append([r.case, r.unit, *(_fmt(r.values.get(i)) for i in IMPLS),
                     "-" if ratio is None else f"{ratio:.2f}x", target])
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        cells = (str(c).ljust(w) for c, w in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip(), file=out)
    for r in results:
        for note in r.notes:
            print(f"{r.case}: {note}", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this case or family (repeatable)")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--repeats", type=int, default=None, help="samples per measurement")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)

    # With --json, stdout carries only the JSON document; progress goes to stderr.
    log = sys.stderr if args.json else sys.stdout
    cases = load_cases(log)
    if args.list:
        for family, case in cases:
            print(f"{case.name:24} [{family}] {case.help}")
        return 0
    if args.only:
        known = {c.name for _, c in cases} | set(FAMILIES)
        unknown = [n for n in args.only if n not in known]
        if unknown:
            parser.error(f"unknown case(s) {unknown}; known: {sorted(known)}")
        cases = [(f, c) for f, c in cases if f in args.only or c.name in args.only]

    print(f"python {platform.python_version()}, {platform.machine()}, 1 thread", file=log)
    results, skipped, failed = [], [], []
    for _family, case in cases:
        print(f"running {case.name} ...", file=log, flush=True)
        try:
            results.extend(case.fn(args.repeats))
        except (Skip, ImportError) as e:
            skipped.append({"case": case.name, "reason": str(e)})
            print(f"{case.name}: skipped: {e}", file=log)
        except Exception as e:  # noqa: BLE001  (report and go on with the other cases)
            failed.append({"case": case.name, "error": f"{type(e).__name__}: {e}"})
            print(f"{case.name}: FAILED: {type(e).__name__}: {e}", file=log)

    if args.json:
        json.dump({"python": platform.python_version(), "threads": 1,
                   "results": [r.as_dict() for r in results],
                   "skipped": skipped, "failed": failed}, sys.stdout, indent=2)
        print()
    else:
        print()
        print_table(results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
