"""Architecture checks (STYLE.md principles 14 and 15, "What to avoid" 3 and 6).

Static AST checks over the source tree, so they hold for code paths the other tests never run:

- the library (``subclass_kit/``, ``modes/``) never imports torch (the oracle is for tests only);
- the core never imports ``modes`` at module level (the arrow points modes -> subclass_kit);
- ``modes/*.py`` reach the core only through ``subclass_kit``'s public names;
- no library module passes the 600-line budget;
- ``docs/ARCHITECTURE.md`` mentions every ``modes/*.py`` file and indexes every ``Note [...]``;
- ``docs/walkthrough.py`` and the README's Python example run.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "subclass_kit"
MODES = ROOT / "modes"
DOCS = ROOT / "docs"
MAX_LINES = 600


def _py_files(*dirs: Path) -> list[Path]:
    # subclass_kit/modes is a link to the top-level modes/ (installed as subclass_kit.modes):
    # its files are the modes layer, listed once under MODES.
    return sorted(p for d in dirs if d.is_dir() for p in d.rglob("*.py")
                  if not p.is_relative_to(CORE / "modes"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(node: ast.AST, module_level_only: bool = False):
    """Yield (node, absolute module name or None, imported names) for every import in ``node``.

    With ``module_level_only``, imports inside function bodies (run only when called) are
    skipped; class bodies and ``if``/``try`` blocks at module level run at import and count.
    """
    for child in ast.iter_child_nodes(node):
        if module_level_only and isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield child, alias.name, None
        elif isinstance(child, ast.ImportFrom):
            module = child.module if child.level == 0 else None
            yield child, module, [a.name for a in child.names]
        yield from _imports(child, module_level_only)


def _is_pkg(module: str | None, pkg: str) -> bool:
    return module is not None and (module == pkg or module.startswith(pkg + "."))


LIBRARY_FILES = _py_files(CORE, MODES)
MODES_FILES = _py_files(MODES)


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=_rel)
def test_library_never_imports_torch(path):
    bad = [f"line {n.lineno}: {mod}" for n, mod, _ in _imports(_tree(path))
           if _is_pkg(mod, "torch")]
    assert not bad, f"{_rel(path)} imports torch (tests only may use the oracle): {bad}"


@pytest.mark.parametrize("path", _py_files(CORE), ids=_rel)
def test_core_never_imports_modes_at_module_level(path):
    bad = [f"line {n.lineno}: {mod}" for n, mod, names in _imports(_tree(path), True)
           if _is_pkg(mod, "modes") or _is_pkg(mod, "subclass_kit.modes")
           or (mod is None and names and "modes" in names)
           or (mod == "subclass_kit" and names and "modes" in names)]
    assert not bad, (f"{_rel(path)} imports modes at module level; the core must build "
                     f"without it (import lazily inside the function that needs it): {bad}")


def _public_names() -> set[str]:
    """Names that ``subclass_kit/__init__.py`` binds explicitly, plus its star-imports'
    ``__all__`` and its own ``__all__`` (submodules merely imported are not public)."""
    tree = _tree(CORE / "__init__.py")
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    source = "." * node.level + (node.module or "")
                    mod = importlib.import_module(source, "subclass_kit")
                    names.update(getattr(mod, "__all__", ()))
                else:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    sk = importlib.import_module("subclass_kit")
    names.update(getattr(sk, "__all__", ()))
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("path", MODES_FILES, ids=_rel)
def test_modes_use_only_public_core_names(path):
    public = _public_names()
    bad = []
    for node, mod, names in _imports(_tree(path)):
        if mod is None or not _is_pkg(mod, "subclass_kit"):
            continue
        where = f"line {node.lineno}"
        if mod != "subclass_kit":
            bad.append(f"{where}: imports the private module {mod}")
        elif names is not None:
            bad.extend(f"{where}: '{n}' is not a public name of subclass_kit"
                       for n in names if n not in public)
    assert not bad, (f"{_rel(path)} must use only subclass_kit's public names "
                     f"(`import subclass_kit as sk` or `from subclass_kit import X`): {bad}")


def test_no_module_over_line_budget():
    offenders = []
    for path in LIBRARY_FILES:
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            offenders.append(f"{_rel(path)}: {n} lines")
    assert not offenders, (f"modules over {MAX_LINES} lines (split them by op family or "
                           f"concern): {offenders}")


@pytest.mark.parametrize("path", MODES_FILES, ids=_rel)
def test_architecture_doc_lists_every_mode_file(path):
    text = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert _rel(path) in text, f"docs/ARCHITECTURE.md does not mention {_rel(path)}"


# A Note is defined on a line of its own ("Note [Title]", optionally as a comment); "See Note
# [Title]" and mentions inside a sentence are citations.
_NOTE_DEF = re.compile(r"^\s*(?:#\s*)?Note \[([^\]]+)\]:?\s*$", re.MULTILINE)


def test_architecture_doc_indexes_every_note():
    text = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = [f"Note [{title}] ({_rel(path)})" for path in LIBRARY_FILES
               for title in _NOTE_DEF.findall(path.read_text(encoding="utf-8"))
               if f"Note [{title}]" not in text]
    assert not missing, f"add these to the Note index of docs/ARCHITECTURE.md: {missing}"


def test_walkthrough_runs():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(DOCS / "walkthrough.py")], cwd=ROOT, env=env,
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"docs/walkthrough.py failed:\n{proc.stdout}\n{proc.stderr}"
    assert "1. A strided tensor" in proc.stdout


def test_readme_python_example_runs(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    assert blocks, "README.md has no ```python example"
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert "op: sk.ops.mul.Tensor" in printed and "[40.0, 50.0, 60.0, 70.0]" in printed
