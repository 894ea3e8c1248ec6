"""pytest plugin: ``pytest --debug-asserts`` runs every test under ``DebugAssertMode``.

Registered as the ``pytest11`` entry point ``subclass_kit_debug_asserts`` (pyproject.toml), so an
installed subclass_kit adds the options to every pytest run; without the flag it does nothing.

- ``--debug-asserts``: each test's call phase runs inside ``DebugAssertMode(raise_on_violation=
  False)``; a test whose ops broke a rule fails after it ran, with the violations listed (so a
  ``pytest.raises(RuntimeError)`` in the test cannot swallow them). Fixture setup/teardown is
  not checked.
- ``--debug-asserts-data``: the same with ``check_data=True`` (implies ``--debug-asserts``).
- ``@pytest.mark.no_debug_asserts``: run that test without the mode (tests that inspect
  ``sk.get_mode_stack()``, count dispatched ops, or break rules on purpose). A module opts out
  with ``pytestmark = pytest.mark.no_debug_asserts``.
- At the end of the session the terminal summary shows a table of all violations (op, rule,
  argument, count, tests).

The mode is the outermost dispatch mode of the test: modes a test enters sit inside it, so it
checks the ops they forward (see "Where the mode sits" in ``modes/debug_assert.py``).
"""

from __future__ import annotations

import pytest

MARKER = "no_debug_asserts"


def pytest_addoption(parser):
    group = parser.getgroup("subclass_kit", "subclass_kit debug asserts")
    group.addoption("--debug-asserts", action="store_true", default=False,
                    help="run every test under modes.DebugAssertMode (schema checks of every "
                         "op); opt a test out with @pytest.mark.no_debug_asserts")
    group.addoption("--debug-asserts-data", action="store_true", default=False,
                    help="like --debug-asserts, and also compare the data of arguments not "
                         "annotated mutable (check_data=True)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARKER}: run this test without DebugAssertMode under --debug-asserts "
                   "(tests that inspect the mode stack, count ops, or break rules on purpose)")
    data = config.getoption("--debug-asserts-data")
    if config.getoption("--debug-asserts") or data:
        config.pluginmanager.register(DebugAssertSession(check_data=data),
                                      "subclass_kit_debug_asserts_session")


class DebugAssertSession:
    """Runs test calls under the mode and collects violations for the summary."""

    def __init__(self, check_data: bool = False):
        self.check_data = check_data
        self.violations: list = []   # (test node id, Violation)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        if item.get_closest_marker(MARKER) is not None:
            return (yield)
        from subclass_kit.modes.debug_assert import DebugAssertMode
        mode = DebugAssertMode(raise_on_violation=False, check_data=self.check_data)
        mode.__enter__()
        try:
            result = yield
        finally:
            mode.__exit__(None, None, None)
            self.violations.extend((item.nodeid, v) for v in mode.violations)
        if mode.violations:
            lines = "\n".join(f"  - {v.message}" for v in mode.violations[:20])
            more = len(mode.violations) - 20
            pytest.fail(f"DebugAssertMode: {len(mode.violations)} violation(s) in this test:\n"
                        f"{lines}" + (f"\n  ... and {more} more" if more > 0 else ""),
                        pytrace=False)
        return result

    def pytest_report_header(self, config):
        return (f"subclass_kit debug asserts: on (check_data={self.check_data}; "
                f"opt out with @pytest.mark.{MARKER})")

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.section("subclass_kit debug asserts")
        if not self.violations:
            tr.write_line("DebugAssertMode: no violations")
            return
        from subclass_kit.modes.debug_assert import format_violations
        tests = {}
        for nodeid, v in self.violations:
            tests.setdefault((v.op, v.rule, v.argument), set()).add(nodeid)
        tr.write_line(format_violations([v for _, v in self.violations]))
        tr.write_line("")
        for (op, rule, arg), ids in tests.items():
            shown = ", ".join(sorted(ids)[:3]) + (" ..." if len(ids) > 3 else "")
            label = f"output {arg}" if isinstance(arg, int) else arg
            tr.write_line(f"{op} [{rule}] {label}: {len(ids)} test(s): {shown}")
