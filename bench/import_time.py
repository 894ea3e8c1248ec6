"""``import subclass_kit`` cost: wall time and peak RSS of a fresh interpreter (subprocesses).

Side by side: ``import numpy`` (sk's only heavy dependency, so a floor) and ``import torch``.
RSS is the child's peak resident set (Linux ``VmHWM``, interpreter included). Each number is
the median over ``repeats`` fresh processes; the time is measured inside the child around the
import statement only (interpreter start-up excluded).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from harness import NUMPY, SK, TORCH, Case, Result, Skip, measure

DEFAULT_REPEATS = 5
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import json, time
t0 = time.perf_counter()
import {module}
dt = time.perf_counter() - t0
# VmHWM: this process's peak RSS (getrusage's ru_maxrss would include the parent's at fork).
with open("/proc/self/status") as f:
    hwm_kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps({{"seconds": dt, "rss_mb": hwm_kb / 1024}}))
"""


def _child(module: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(module=module)], env=env,
                          check=False, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        if "ModuleNotFoundError" in last or "ImportError" in last:
            raise Skip(last)
        raise RuntimeError(f"import {module} failed: {proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _medians(module: str, repeats: int) -> dict:
    runs = [_child(module) for _ in range(repeats)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def import_cost(repeats=None) -> list:
    repeats = repeats or DEFAULT_REPEATS
    wall = Result("import_time", "ms")
    rss = Result("import_rss", "MB")
    for impl, module in ((SK, "subclass_kit"), (TORCH, "torch"), (NUMPY, "numpy")):
        cache = {}

        def get(key, impl=impl, module=module, cache=cache):
            if not cache:
                cache.update(_medians(module, repeats))
            return cache[key]

        measure(wall, impl, lambda get=get: get("seconds") * 1e3)
        if impl in wall.values:
            rss.values[impl] = get("rss_mb")
        else:
            rss.notes.extend(n for n in wall.notes if n.startswith(impl))
    return [wall, rss]


CASES = [Case("import", import_cost, "import wall time and peak RSS, sk vs torch vs numpy")]
