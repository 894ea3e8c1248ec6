"""Whole-process cost of ``subclass-kit shapes``: wall time and peak RSS, as a user's shell sees.

The issue-16 acceptance figures are for whole processes (``/usr/bin/time -f "%e s %M KB"``):
interpreter start-up, imports, the meta trace and the printing. Each command here runs in a
fresh interpreter (``sys.executable``, so no console-script wrapper in front of it), with
bytecode caching on (``PYTHONDONTWRITEBYTECODE`` cleared: an installed wheel has its ``.pyc``
files) and one untimed warm-up run that writes them; each figure is the median over
``repeats`` runs of the wall time, and the peak RSS of the child (``ru_maxrss`` of
``os.wait4``, taken by a small launcher process: see ``_LAUNCHER``). Wall time grows when
other processes share the cores: say so next to figures measured on a busy machine.

Rows: ``python -c "import numpy"`` (the floor: sk's one heavy dependency) in the numpy column;
``import subclass_kit`` and the sizing commands in the sk column, each with its target from
issue 16 where it has one (compared by ``cli_process_check`` below, not by the sk/torch ratio,
which has no torch twin here). A command whose option does not exist yet (exit status 2, a
usage error) is skipped with the reason.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

from harness import NUMPY, SK, Case, Result, Skip

DEFAULT_REPEATS = 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (row name, argv after the interpreter, target seconds, target MB) -- issue 16's acceptance.
COMMANDS = [
    ("import_subclass_kit", ["-c", "import subclass_kit"], None, None),
    ("shapes_llama70b_seq4096", ["-m", "subclass_kit.cli", "shapes", "llama-2-70b",
                                 "--seq", "4096"], 0.5, 60),
    ("shapes_llama7b_train_seq4096", ["-m", "subclass_kit.cli", "shapes", "llama-2-7b",
                                      "--train", "--seq", "4096"], 3.0, 100),
    ("shapes_mixtral_train_fsdp8", ["-m", "subclass_kit.cli", "shapes", "mixtral-8x7b",
                                    "--train", "--fsdp", "8"], 5.0, None),
]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# Linux counts a child's peak RSS from before its ``exec``: a child forked (or vforked) from
# this process starts at this process's RSS, over a gigabyte after the GPT cases. A small
# interpreter forks the command instead and reports its wall time and ``ru_maxrss``.
_LAUNCHER = """
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - t0, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def run_once(argv: list, env: dict) -> tuple:
    """(wall seconds, peak RSS in MB, exit status, stderr) of one fresh ``python argv``."""
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, *argv], env=env,
                          capture_output=True, check=True)
    wall, rss_kb, code = proc.stdout.split()
    return float(wall), int(rss_kb) / 1024, int(code), proc.stderr.decode(errors="replace")


def process_cost(argv: list, repeats: int) -> dict:
    """Median wall seconds and peak RSS (MB) of ``python argv`` over ``repeats`` timed runs,
    after one warm-up run. Raises Skip for a usage error (an option not written yet)."""
    env = _env()
    _, _, code, err = run_once(argv, env)
    if code == 2:
        raise Skip((err.strip().splitlines() or ["usage error"])[-1])
    if code != 0:
        raise RuntimeError(f"python {' '.join(argv)} exited with {code}:\n{err}")
    runs = [run_once(argv, env) for _ in range(repeats)]
    return {"seconds": statistics.median(r[0] for r in runs),
            "rss_mb": max(r[1] for r in runs)}


def cli_process(repeats=None) -> list:
    repeats = repeats or DEFAULT_REPEATS
    results = []
    floor = process_cost(["-c", "import numpy"], repeats)
    for name, argv, target_s, target_mb in COMMANDS:
        wall = Result(f"{name}_wall", "s")
        rss = Result(f"{name}_rss", "MB")
        wall.values[NUMPY], rss.values[NUMPY] = floor["seconds"], floor["rss_mb"]
        try:
            cost = process_cost(argv, repeats)
        except Skip as e:
            wall.notes.append(f"{SK}: skipped: {e}")
        else:
            wall.values[SK], rss.values[SK] = cost["seconds"], cost["rss_mb"]
            for result, target, value in ((wall, target_s, cost["seconds"]),
                                          (rss, target_mb, cost["rss_mb"])):
                if target is not None:
                    verdict = "ok" if value <= target else "MISSED"
                    result.notes.append(f"issue 16 target <= {target:g} {result.unit}: "
                                        f"{verdict}")
        results.extend([wall, rss])
    return results


CASES = [Case("cli_process", cli_process,
              "whole-process wall time and peak RSS of subclass-kit shapes (issue 16 targets), "
              "next to import numpy")]
