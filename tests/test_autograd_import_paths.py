"""PyTorch's import paths of ``torch.autograd`` work under ``subclass_kit`` (a port renames
``torch`` and nothing else), in a fresh interpreter where they are the first import: each
path gives the autograd mode's own module (``subclass_kit.modes.autograd``), never a second
copy of its file, and ``import subclass_kit`` alone still imports no mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys
{first}
import subclass_kit as sk
import subclass_kit.modes.autograd as real
import subclass_kit.autograd.graph, subclass_kit.autograd.function, subclass_kit.autograd.grad_mode
import subclass_kit.autograd.gradcheck     # the package's ``gradcheck`` stays the function
modules = {{id(m): m for m in list(sys.modules.values())}}.values()   # an alias: same object
files = [getattr(m, "__file__", None) for m in modules]
files = [f for f in files if f and "autograd" in f]
print(json.dumps({{
    "same": [sk.autograd is real, sys.modules["subclass_kit.autograd"] is real,
             sys.modules["subclass_kit.autograd.graph"] is real.graph,
             sys.modules["subclass_kit.autograd.function"] is real.function,
             real.Function is real.function.Function,
             sk.autograd.gradcheck is sys.modules["subclass_kit.autograd.gradcheck"].gradcheck],
    "spec": [real.__spec__.name, real.graph.__spec__.name],
    "duplicates": sorted({{f for f in files if files.count(f) > 1}}),
    "grad_mode": [sk.autograd.no_grad is sk.no_grad,
                  sk.autograd.grad_mode.set_grad_enabled is sk.set_grad_enabled,
                  sk.autograd.inference_mode is sk.inference_mode],
    "installed": sk.autograd._LAYER is not None,
}}))
"""

FIRST = [
    "from subclass_kit.autograd import Function",
    "from subclass_kit.autograd.graph import saved_tensors_hooks",
    "import subclass_kit.autograd",
    "import subclass_kit.autograd.function as function",
    "from subclass_kit.autograd.grad_mode import no_grad",
    "from subclass_kit.autograd.functional import jacobian",
    "import subclass_kit as sk0; sk0.autograd.grad",
]


def _child(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("first", FIRST)
def test_first_import_gives_the_real_modules(first):
    proc = _child(_CHILD.format(first=first))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert all(got["same"]), got
    assert got["spec"] == ["subclass_kit.modes.autograd", "subclass_kit.modes.autograd.graph"]
    assert got["duplicates"] == []
    assert all(got["grad_mode"]) and got["installed"]


def test_missing_names_raise_as_for_any_module():
    proc = _child("import subclass_kit.autograd.forward_ad")
    assert "ModuleNotFoundError: No module named 'subclass_kit.autograd.forward_ad'" in proc.stderr
    proc = _child("from subclass_kit.autograd import no_such_name")
    assert "ImportError: cannot import name 'no_such_name'" in proc.stderr


def test_the_core_alone_imports_no_mode():
    proc = _child("import sys, subclass_kit; print(sorted(m for m in sys.modules if 'modes' in m))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
