"""pytest plugin shipped with subclass_kit: test isolation, and ``pytest --debug-asserts``.

Registered as the ``pytest11`` entry point ``subclass_kit_debug_asserts`` (pyproject.toml), so an
installed subclass_kit takes part in every pytest run. This module imports only pytest and the
standard library: a run without ``--debug-asserts`` imports neither subclass_kit nor numpy
because of it.

Isolation (always on, but only once the session itself has imported subclass_kit: the plugin
looks in ``sys.modules`` and never imports it for this). After each phase of a test (setup,
call, teardown) this thread's mode stacks (``sk.mode_state()``: dispatch and function modes)
and grad switches (``sk.grad_state()``: grad mode, inference mode) must be what they were
before the test, plus what fixtures still alive set up (a module-scoped fixture may keep a mode
entered until the module ends). When they are not -- a mode entered and never exited, modes
exited out of order, ``sk.set_grad_enabled(False)`` called bare -- the plugin puts them back
(``sk.set_mode_state`` / ``sk.set_grad_state``), so the next test starts clean, and reports it
on the test that did it: the call phase fails, a setup or teardown phase errors, and a test
that already failed gets the description as an exception note.

``--debug-asserts``:

- each test's call phase runs inside ``DebugAssertMode(raise_on_violation=False)``; a test whose
  ops broke a rule fails after it ran, with the violations listed, each naming the line that
  called the op (so a ``pytest.raises(RuntimeError)`` in the test cannot swallow them).
  Fixture setup/teardown is not checked.
- ``--debug-asserts-data``: the same with ``check_data=True`` (implies ``--debug-asserts``).
- ``@pytest.mark.no_debug_asserts``: run that test without the mode (tests that inspect
  ``sk.get_mode_stack()``, count dispatched ops, or break rules on purpose). A module opts out
  with ``pytestmark = pytest.mark.no_debug_asserts``.
- At the end of the session the terminal summary shows a table of all violations (op, rule,
  argument, count, first line, tests). Under pytest-xdist (``pytest -n 2 --debug-asserts``) each
  worker sends its violations to the controller (``config.workeroutput``), whose summary lists
  them all.

The mode is the outermost dispatch mode of the test: modes a test enters sit inside it, so it
checks the ops they forward (see "Where the mode sits" in ``modes/debug_assert.py``).
"""

from __future__ import annotations

import sys

import pytest

MARKER = "no_debug_asserts"
WORKER_KEY = "subclass_kit_violations"   # config.workeroutput key (pytest-xdist)


def pytest_addoption(parser):
    group = parser.getgroup("subclass_kit", "subclass_kit debug asserts")
    group.addoption("--debug-asserts", action="store_true", default=False,
                    help="run every test under subclass_kit.modes.DebugAssertMode (schema "
                         "checks of every op); opt a test out with "
                         "@pytest.mark.no_debug_asserts")
    group.addoption("--debug-asserts-data", action="store_true", default=False,
                    help="like --debug-asserts, and also compare the data of arguments not "
                         "annotated mutable (check_data=True)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARKER}: run this test without DebugAssertMode under --debug-asserts "
                   "(tests that inspect the mode stack, count ops, or break rules on purpose)")
    data = config.getoption("--debug-asserts-data")
    debug = bool(config.getoption("--debug-asserts") or data)
    config.pluginmanager.register(SubclassKitSession(config, debug, data),
                                  "subclass_kit_session")


# -- the thread state a test must leave as it found it --------------------------------------------
def _core():
    """subclass_kit if the session imported it (completely), else None."""
    sk = sys.modules.get("subclass_kit")
    return sk if sk is not None and hasattr(sk, "set_mode_state") else None


def _state():
    """(ModeState, GradState) of this thread, or None while subclass_kit is not imported (the
    state is then a fresh thread's: nothing can have changed it)."""
    sk = _core()
    return None if sk is None else (sk.mode_state(), sk.grad_state())


def _fresh(sk):
    return sk.ModeState((), ()), sk.GradState(True, False)


def _same_modes(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _same(a, b) -> bool:
    return (_same_modes(a[0].dispatch_modes, b[0].dispatch_modes)
            and _same_modes(a[0].function_modes, b[0].function_modes) and a[1] == b[1])


def _short(mode) -> str:
    try:
        text = repr(mode)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the report
        text = f"<{type(mode).__qualname__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(before, after) -> list:
    """What changed between two states, one line per stack or switch."""
    lines = []
    for kind, old, new in (("dispatch", before[0].dispatch_modes, after[0].dispatch_modes),
                           ("function", before[0].function_modes, after[0].function_modes)):
        if _same_modes(old, new):
            continue
        text = (f"{kind} mode stack: [{', '.join(map(_short, old))}] before, "
                f"[{', '.join(map(_short, new))}] after")
        if _same_modes(old, new[:len(old)]):
            text += f" (entered and not exited: {', '.join(map(_short, new[len(old):]))})"
        lines.append(text)
    for name, old, new in (("grad mode", before[1][0], after[1][0]),
                           ("inference mode", before[1][1], after[1][1])):
        if old != new:
            lines.append(f"{name}: {'on' if old else 'off'} before, {'on' if new else 'off'} "
                         "after")
    return lines


class SubclassKitSession:
    """Keeps each test's thread state isolated; with ``debug``, runs test calls under
    ``DebugAssertMode`` and collects violations for the summary."""

    def __init__(self, config, debug: bool = False, check_data: bool = False):
        self.config = config
        self.debug = debug
        self.check_data = check_data
        self.violations: list = []   # (test node id, Violation)
        self.base = None             # the state before the first test (None: fresh)
        self.started = False
        # [(fixturedef, state after its setup)] for fixtures whose setup changed the state and
        # that are not finalized yet, in setup order: the last one's state is the expected one.
        self.alive: list = []

    # -- isolation ------------------------------------------------------------------------------
    def _expected(self):
        return self.alive[-1][1] if self.alive else self.base

    def _restore(self, expected):
        """Put ``expected`` back when the state differs from it; the description of what
        differed (an empty list when nothing did)."""
        sk = _core()
        if sk is None:
            return []
        now = _state()
        expected = expected if expected is not None else _fresh(sk)
        if _same(now, expected):
            return []
        sk.set_mode_state(expected[0])
        sk.set_grad_state(expected[1])
        return _describe(expected, now)

    def _leak(self, phase, exc=None):
        """After ``phase``: restore the expected state; the report of what the test left
        changed (None when nothing), also added as a note to ``exc``, the phase's own
        exception."""
        lines = self._restore(self._expected())
        if not lines:
            return None
        text = (f"subclass_kit: the test's {phase} changed this thread's state and did not put "
                "it back (the plugin restored it for the next test):\n"
                + "\n".join(f"  - {line}" for line in lines))
        if exc is not None and hasattr(exc, "add_note"):   # Python 3.11+
            exc.add_note(text)
        return text

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item):
        if not self.started:
            self.started = True
            self.base = _state()
        return self._phase("setup", (yield from self._run()))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        return self._phase("teardown", (yield from self._run()))

    @staticmethod
    def _run():
        try:
            return (yield), None
        except BaseException as exc:  # noqa: BLE001 - re-raised by _phase
            return None, exc

    def _phase(self, phase, outcome):
        result, exc = outcome
        leak = self._leak(phase, exc)
        if exc is not None:
            raise exc
        if leak:
            pytest.fail(leak, pytrace=False)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        before = _state()
        result = yield
        after = _state()
        if after is not None and not _same(after, before if before is not None
                                           else _fresh(_core())):
            self.alive.append((fixturedef, after))
        return result

    def pytest_fixture_post_finalizer(self, fixturedef, request):
        for i in range(len(self.alive) - 1, -1, -1):
            if self.alive[i][0] is fixturedef:
                del self.alive[i:]
                break

    # -- the call phase: isolation and debug asserts ---------------------------------------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):
        mode = None
        if self.debug and item.get_closest_marker(MARKER) is None:
            from subclass_kit.modes.debug_assert import DebugAssertMode
            mode = DebugAssertMode(raise_on_violation=False, check_data=self.check_data)
            mode.__enter__()
        result, exc = yield from self._run()
        found = []
        if mode is not None:
            _drop(mode)
            found = mode.violations
            self.violations.extend((item.nodeid, v) for v in found)
        leak = self._leak("call", exc)
        if exc is not None:
            raise exc
        if found or leak:
            pytest.fail("\n".join(filter(None, (found and _violations_text(found), leak))),
                        pytrace=False)
        return result

    # -- the summary (pytest-xdist: workers send their violations to the controller) -------------
    def pytest_sessionfinish(self, session):
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None and self.violations:
            workeroutput[WORKER_KEY] = [
                [nodeid, v.op, v.rule, v.argument, v.message, v.where]
                for nodeid, v in self.violations]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        rows = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if rows:
            from subclass_kit.modes.debug_assert import Violation
            self.violations.extend((row[0], Violation(*row[1:])) for row in rows)

    def pytest_report_header(self, config):
        if self.debug:
            return (f"subclass_kit debug asserts: on (check_data={self.check_data}; "
                    f"opt out with @pytest.mark.{MARKER})")
        return None

    def pytest_terminal_summary(self, terminalreporter):
        if not self.debug:
            return
        tr = terminalreporter
        tr.section("subclass_kit debug asserts")
        if not self.violations:
            tr.write_line("DebugAssertMode: no violations")
            return
        from subclass_kit.modes.debug_assert import format_violations
        # by test id: the same report whatever order the tests (or xdist workers) ran in
        found = sorted(self.violations, key=lambda pair: pair[0])
        tests: dict = {}
        for nodeid, v in found:
            tests.setdefault((v.op, v.rule, v.argument), {}).setdefault(nodeid, v.where)
        tr.write_line(format_violations([v for _, v in found]))
        tr.write_line("")
        for (op, rule, arg), ids in tests.items():
            shown = ", ".join(list(ids)[:3]) + (" ..." if len(ids) > 3 else "")
            label = f"output {arg}" if isinstance(arg, int) else arg
            where = next((w for w in ids.values() if w), "")
            at = f" (first at {where})" if where else ""
            tr.write_line(f"{op} [{rule}] {label}: {len(ids)} test(s){at}: {shown}")


def _drop(mode):
    """Take the debug-assert mode off the stack: popped when it is on top, else (the test left
    modes above it, or exited it) cut out, so the isolation check sees only the test's own
    changes."""
    sk = _core()
    stack = sk.mode_state()
    if stack.dispatch_modes and stack.dispatch_modes[-1] is mode:
        mode.__exit__(None, None, None)
    elif any(m is mode for m in stack.dispatch_modes):
        sk.set_mode_state(stack._replace(
            dispatch_modes=tuple(m for m in stack.dispatch_modes if m is not mode)))


def _violations_text(found) -> str:
    lines = "\n".join(f"  - {v.message}" for v in found[:20])
    more = len(found) - 20
    return (f"DebugAssertMode: {len(found)} violation(s) in this test:\n{lines}"
            + (f"\n  ... and {more} more" if more > 0 else ""))
