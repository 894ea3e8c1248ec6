"""The pytest plugin (``pytest_subclass_kit.py``), each case a pytest run in a subprocess on a
small project in ``tmp_path``: ``--debug-asserts`` and its report (each violation naming the
line that called the op; under pytest-xdist too), test isolation (a test that leaks a mode or a
grad switch fails, and the next one starts clean), a run without the flag importing neither
numpy nor subclass_kit, and a project with its own ``modes`` module next to ours.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The tests below run their own pytest sessions; this one's checker has nothing to see.
pytestmark = pytest.mark.no_debug_asserts


def _entry_point_installed() -> bool:
    from importlib.metadata import entry_points
    return any(ep.value == "pytest_subclass_kit" for ep in entry_points(group="pytest11"))


def _write(root: Path, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _run_pytest(tmp_path, *flags, launcher=None, installed_only=False, env=None):
    """pytest on ``tmp_path`` (cwd there). The plugin comes from the installed entry point, or
    (not installed) from this checkout through ``-p`` and PYTHONPATH; ``installed_only`` runs
    as a user's project would, with nothing of this checkout on the path."""
    env = dict(os.environ, **(env or {}))
    plugin = []
    if not installed_only and not _entry_point_installed():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        plugin = ["-p", "pytest_subclass_kit"]
    cmd = launcher or [sys.executable, "-m", "pytest"]
    return subprocess.run([*cmd, "-p", "no:cacheprovider", "-o", "addopts=", "-rA", *plugin,
                           *flags], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def _outcomes(out: str) -> dict:
    """{test name: PASSED / FAILED / ERROR ...} from the ``-rA`` short summary (an error at
    setup or teardown wins over the call's outcome)."""
    found = {}
    for line in out.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL") and "::" in rest:
            name = rest.split("::", 1)[1].split(" ", 1)[0]
            if found.get(name) != "ERROR":
                found[name] = word
    return found


# -- --debug-asserts ---------------------------------------------------------------------------
PLUGIN_TESTS = '''
import pytest
import subclass_kit as sk

identity = sk.library.define("plugcase::identity(Tensor self) -> Tensor")
sk.library.impl(identity, "cpu")(lambda self: self)   # a buggy kernel: returns its input


def test_clean():
    assert (sk.ones(2) + 1).tolist() == [2.0, 2.0]


def test_bad():
    identity(sk.ones(2))


def test_bad_but_swallowed():
    with pytest.raises(RuntimeError):
        identity(sk.ones(2))
        raise RuntimeError("the test's own error")


@pytest.mark.no_debug_asserts
def test_opted_out():
    identity(sk.ones(2))
    assert sk.get_mode_stack() == []
'''
BAD_LINE = PLUGIN_TESTS.splitlines().index("    identity(sk.ones(2))") + 1   # test_bad's call


def _plugin_case(tmp_path, *flags):
    _write(tmp_path, {"test_plugin_case.py": PLUGIN_TESTS})
    return _run_pytest(tmp_path, *flags)


def test_plugin_runs_tests_under_the_mode(tmp_path):
    proc = _plugin_case(tmp_path, "--debug-asserts")
    out = proc.stdout
    assert proc.returncode == 1, out
    assert _outcomes(out) == {"test_clean": "PASSED", "test_bad": "FAILED",
                              "test_bad_but_swallowed": "FAILED", "test_opted_out": "PASSED"}
    assert "subclass_kit debug asserts" in out and "output_not_fresh" in out
    # each violation names the line of the test that called the op, in the test's failure and
    # in the summary (per-test rows label an output index as the table does)
    assert f"plugcase::identity.default at test_plugin_case.py:{BAD_LINE}: output 0" in out
    assert (f"plugcase::identity.default [output_not_fresh] output 0: 2 test(s) (first at "
            f"test_plugin_case.py:{BAD_LINE})") in out


def test_plugin_is_off_without_the_flag(tmp_path):
    proc = _plugin_case(tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "4 passed" in proc.stdout
    assert "subclass_kit debug asserts" not in proc.stdout


def test_xdist_workers_report_violations_to_the_controller(tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is a test extra")
    proc = _plugin_case(tmp_path, "-n", "2", "--debug-asserts")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "2 failed, 2 passed" in out
    summary = out[out.index("= subclass_kit debug asserts ="):]
    assert "plugcase::identity.default  output_not_fresh  output 0  2" in summary
    assert ("plugcase::identity.default [output_not_fresh] output 0: 2 test(s) (first at "
            f"test_plugin_case.py:{BAD_LINE}): test_plugin_case.py::test_bad, "
            "test_plugin_case.py::test_bad_but_swallowed") in summary


# -- isolation ---------------------------------------------------------------------------------
ISOLATION_CONFTEST = '''
import pytest
import subclass_kit as sk


class Leak(sk.DispatchMode):
    def __repr__(self):
        return "Leak()"


def stack():
    """The dispatch modes, the plugin's checker aside (under --debug-asserts)."""
    return [m for m in sk.get_mode_stack() if type(m).__name__ != "DebugAssertMode"]


@pytest.fixture
def clean():
    """The state every test starts with."""
    assert stack() == [] and sk.get_function_mode_stack() == []
    assert sk.is_grad_enabled() and not sk.is_inference_mode_enabled()
'''

ISOLATION_TESTS = '''
import pytest
import subclass_kit as sk
from conftest import Leak, stack


def test_leaks_a_mode(clean):
    Leak().__enter__()


def test_after_a_leaked_mode(clean):
    pass


def test_exits_out_of_order(clean):
    a, b = Leak(), Leak()
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)


def test_after_exiting_out_of_order(clean):
    pass


def test_raises_inside_a_pushed_mode(clean):
    Leak().__enter__()
    raise ValueError("the test's own error")


def test_after_raising_inside_a_mode(clean):
    with pytest.raises(ValueError):
        with Leak():
            raise ValueError("inside a with block: the mode exits")


def test_leaks_a_function_mode(clean):
    sk.FunctionMode().__enter__()


def test_after_a_leaked_function_mode(clean):
    pass


def test_switches_grad_off(clean):
    sk.set_grad_enabled(False)


def test_after_grad_off(clean):
    pass


def test_enters_inference_mode(clean):
    sk.inference_mode().__enter__()


def test_after_inference_mode(clean):
    pass


@pytest.fixture
def leaky_fixture():
    Leak().__enter__()
    yield


def test_uses_a_leaky_fixture(clean, leaky_fixture):
    pass


def test_after_a_leaky_fixture(clean):
    pass


@pytest.fixture(scope="module")
def module_mode():
    with Leak() as mode:      # entered for the whole module: not a leak
        yield mode


@pytest.fixture
def function_mode():
    with Leak() as mode:
        yield mode


def test_module_fixture_keeps_its_mode(module_mode, function_mode):
    assert stack() == [module_mode, function_mode]


def test_module_fixture_still_there(module_mode):
    assert stack() == [module_mode]
'''

ISOLATION_AFTER = '''
def test_next_module_starts_clean(clean):
    pass
'''

ISOLATION_OUTCOMES = {
    "test_leaks_a_mode": "FAILED", "test_after_a_leaked_mode": "PASSED",
    "test_exits_out_of_order": "FAILED", "test_after_exiting_out_of_order": "PASSED",
    "test_raises_inside_a_pushed_mode": "FAILED", "test_after_raising_inside_a_mode": "PASSED",
    "test_leaks_a_function_mode": "FAILED", "test_after_a_leaked_function_mode": "PASSED",
    "test_switches_grad_off": "FAILED", "test_after_grad_off": "PASSED",
    "test_enters_inference_mode": "FAILED", "test_after_inference_mode": "PASSED",
    "test_uses_a_leaky_fixture": "ERROR", "test_after_a_leaky_fixture": "PASSED",
    "test_module_fixture_keeps_its_mode": "PASSED", "test_module_fixture_still_there": "PASSED",
    "test_next_module_starts_clean": "PASSED",
}


@pytest.mark.parametrize("flags", [(), ("--debug-asserts",)], ids=["plain", "debug_asserts"])
def test_a_leaking_test_fails_and_the_next_starts_clean(tmp_path, flags):
    _write(tmp_path, {"conftest.py": ISOLATION_CONFTEST, "test_a_isolation.py": ISOLATION_TESTS,
                      "test_b_after.py": ISOLATION_AFTER})
    proc = _run_pytest(tmp_path, *flags)
    out = proc.stdout
    assert _outcomes(out) == ISOLATION_OUTCOMES, out
    restored = "did not put it back (the plugin restored it for the next test)"
    # every leak reported once, on its own test (as a note when the test failed on its own:
    # exception notes are Python 3.11+)
    # counted in the reports, not in the short summary (whose lines repeat the messages' first
    # lines in some pytest versions)
    body = out.split("short test summary info")[0]
    assert body.count(restored) == (7 if sys.version_info >= (3, 11) else 5), out
    assert "dispatch mode stack: [] before, [Leak()] after (entered and not exited: Leak())" in out
    assert "(entered and not exited: Leak(), Leak())" in out           # out of order
    assert "ValueError: the test's own error" in out                   # the test's own error...
    assert "grad mode: on before, off after" in out
    assert "inference mode: off before, on after" in out
    assert "ERROR at teardown of test_uses_a_leaky_fixture" in out
    assert "the test's teardown changed" in out


def test_isolation_without_subclass_kit_is_a_no_op(tmp_path):
    """A session that never imports subclass_kit: the plugin neither imports it nor numpy (so a
    project that merely has us installed pays nothing), with the entry point or ``-p``."""
    _write(tmp_path, {
        "conftest.py": '''
            import sys

            def pytest_unconfigure(config):
                heavy = sorted(m for m in ("numpy", "subclass_kit") if m in sys.modules)
                print(f"HEAVY MODULES: {heavy}")
            ''',
        "test_light.py": '''
            def test_plugin_loaded(pytestconfig):
                assert pytestconfig.getoption("--debug-asserts") is False
            ''',
    })
    runs = [_run_pytest(tmp_path, "-s", "-p", "pytest_subclass_kit",
                        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                             "PYTHONPATH": os.pathsep.join(
                                 filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})]
    if _entry_point_installed():
        runs.append(_run_pytest(tmp_path, "-s"))
    for proc in runs:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "HEAVY MODULES: []" in proc.stdout, proc.stdout


def test_plugin_module_imports_only_pytest_and_the_standard_library():
    tree = ast.parse((ROOT / "pytest_subclass_kit.py").read_text(encoding="utf-8"))
    top = []
    for node in tree.body:   # module level only: function bodies import when they run
        if isinstance(node, ast.Import):
            top += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            top.append((node.module or "").split(".")[0])
    assert set(top) <= {"__future__", "pytest", *sys.stdlib_module_names}, top


# -- a user's project with its own ``modes`` -------------------------------------------------------
USER_TEST = '''
import modes

import subclass_kit as sk
import subclass_kit.modes
from subclass_kit.modes import DebugAssertMode


def test_their_modes_and_ours():
    assert modes.WHOSE == "theirs"
    assert subclass_kit.modes is not modes and DebugAssertMode.__module__.startswith("subclass_kit")
    assert (sk.ones(2) * 2).tolist() == [2.0, 2.0]
'''


def _launchers():
    script = Path(sys.executable).with_name("pytest")
    return [pytest.param([sys.executable, "-m", "pytest"], id="python_-m_pytest"),
            pytest.param([str(script)], id="pytest", marks=pytest.mark.skipif(
                not script.exists(), reason="no pytest script next to this interpreter"))]


@pytest.mark.skipif(not _entry_point_installed(), reason="needs subclass_kit installed "
                    "(pip install . or pip install -e .): the case is a project that uses it")
@pytest.mark.parametrize("layout", ["modes.py", "modes/__init__.py"], ids=["module", "package"])
@pytest.mark.parametrize("launcher", _launchers())
def test_a_project_with_its_own_modes_module(tmp_path, layout, launcher):
    _write(tmp_path, {layout: 'WHOSE = "theirs"\n', "test_user.py": USER_TEST})
    for flags in ((), ("--debug-asserts",)):
        proc = _run_pytest(tmp_path, *flags, launcher=launcher, installed_only=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert _outcomes(proc.stdout) == {"test_their_modes_and_ours": "PASSED"}, proc.stdout
