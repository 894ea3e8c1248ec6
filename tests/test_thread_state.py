"""Thread safety of the dispatch state (mode stacks, grad / inference mode, ``no_dispatch``,
``dispatch_trace``, ``flags.interceptors``) and of version counters shared across threads.

Threads meet at barriers and events, never sleeps; each test joins its threads with a timeout so
a deadlock fails instead of hanging. The torch comparisons check that a new thread starts from
the same state in both libraries (grad on, inference off, no modes).
"""

from __future__ import annotations

import sys
import threading

import pytest

import subclass_kit as sk
from subclass_kit._state import flags

JOIN = 10.0     # seconds: only reached on a deadlock


def _run_threads(targets):
    """Start one thread per target, join them all; re-raise the first exception a thread
    raised (an assert inside a thread must fail the test)."""
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                errors.append(e)
        return run

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for th in threads:
        th.start()
    for th in threads:
        th.join(JOIN)
        assert not th.is_alive(), "thread deadlocked"
    if errors:
        raise errors[0]


class Recorder(sk.DispatchMode):
    def __init__(self):
        self.ops = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append((threading.get_ident(), func))
        return func(*args, **(kwargs or {}))


class FnRecorder(sk.FunctionMode):
    def __init__(self):
        self.calls = []

    def __tensor_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(threading.get_ident())
        return func(*args, **(kwargs or {}))


def _state():
    return (sk.get_mode_stack(), sk.get_function_mode_stack(), sk.is_grad_enabled(),
            sk.is_inference_mode_enabled(), sk.is_below_autograd())


# -- a new thread starts from the default state, whatever its parent has on ------------------
def test_new_thread_starts_with_default_state_like_torch(torch):
    def torch_fresh():
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
        return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
                len(_get_current_dispatch_mode_stack()))

    seen = {}
    with torch.inference_mode(), torch.utils._python_dispatch.TorchDispatchMode():
        _run_threads([lambda: seen.setdefault("torch", torch_fresh())])
    rec = Recorder()
    with sk.inference_mode(), rec, FnRecorder(), sk.no_dispatch(), \
            sk.dispatch_trace(lambda e: None):
        _run_threads([
            lambda: seen.setdefault("sk", (sk.is_grad_enabled(), sk.is_inference_mode_enabled(),
                                           len(sk.get_mode_stack()))),
            lambda: seen.setdefault("sk_rest", (sk.get_function_mode_stack(),
                                                (sk.ones(2) + 1).tolist()))])
    assert seen["sk"] == seen["torch"] == (True, False, 0)
    # the new thread's op ran on its kernel: no function mode, no dispatch mode, no trace
    assert seen["sk_rest"] == ([], [2.0, 2.0])
    assert all(ident == threading.get_ident() for ident, _ in rec.ops)


def test_grad_mode_is_thread_local_like_torch(torch):
    for L in (torch, sk):
        go = threading.Event()
        done = threading.Event()
        seen = []

        def other():
            go.wait(JOIN)
            seen.append(L.is_grad_enabled())
            with L.no_grad():
                done.set()
                seen.append(L.is_grad_enabled())

        def main_side():
            with L.no_grad():
                go.set()
                done.wait(JOIN)
                seen.append(("main", L.is_grad_enabled()))

        _run_threads([other, main_side])
        assert sorted(map(str, seen)) == sorted(map(str, [True, False, ("main", False)]))
        assert L.is_grad_enabled()


# -- a mode of one thread never sees another thread's ops --------------------------------------
def test_modes_see_only_their_own_threads_ops():
    base0 = flags.interceptors      # --debug-asserts keeps a mode of its own in this thread
    barrier = threading.Barrier(2, timeout=JOIN)
    recs = [Recorder(), Recorder()]
    fns = [FnRecorder(), FnRecorder()]
    idents = [None, None]

    def work(i):
        def run():
            idents[i] = threading.get_ident()
            barrier.wait()
            with fns[i], recs[i]:
                barrier.wait()          # both threads are inside their modes now
                x = sk.ones(3)
                for _ in range(50):
                    x = x * 2 + i
                barrier.wait()
            assert _state() == ([], [], True, False, False)
        return run

    _run_threads([work(0), work(1)])
    for i in range(2):
        assert recs[i].ops and {ident for ident, _ in recs[i].ops} == {idents[i]}
        assert fns[i].calls and set(fns[i].calls) == {idents[i]}
    assert flags.interceptors == base0


def test_interceptor_count_exact_under_concurrent_enter_exit():
    base0 = flags.interceptors
    sys_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    barrier = threading.Barrier(4, timeout=JOIN)

    def churn():
        barrier.wait()
        for _ in range(300):
            with Recorder(), FnRecorder(), sk.dispatch_trace(lambda e: None):
                pass
            with Recorder():
                sk.ones(1).add_(1)

    try:
        _run_threads([churn] * 4)
    finally:
        sys.setswitchinterval(sys_interval)
    assert flags.interceptors == base0


def test_thread_dying_inside_modes_gives_its_interceptor_count_back():
    """A thread that ends inside a mode (never exits it) must not leave ``flags.interceptors``
    raised forever: the hot paths would read thread-locals on every op from then on."""
    base0 = flags.interceptors
    outer = Recorder()

    def die_inside():
        sk.FunctionMode().__enter__()
        Recorder().__enter__()
        sk.dispatch_trace(lambda e: None).__enter__()
        assert flags.interceptors == base0 + 4

    with outer:
        _run_threads([die_inside])
        assert flags.interceptors == base0 + 1
        sk.ones(1) + 1          # still intercepted in this thread
    assert flags.interceptors == base0
    assert outer.ops


def test_exception_in_a_thread_mode_leaves_other_thread_state():
    base0 = flags.interceptors
    entered = threading.Event()
    release = threading.Event()

    class Boom(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError("boom")

    def failing():
        with pytest.raises(ValueError):
            with Boom(), sk.no_grad():
                entered.set()
                release.wait(JOIN)
                sk.ones(1) + 1
        assert _state() == ([], [], True, False, False)

    def watcher():
        entered.wait(JOIN)
        assert _state() == ([], [], True, False, False)
        assert (sk.ones(2) + 1).tolist() == [2.0, 2.0]
        release.set()

    _run_threads([failing, watcher])
    assert flags.interceptors == base0


# -- version counters of views of one base mutated from several threads -----------------------
@pytest.mark.parametrize("how", ["add_", "setitem", "out"])
def test_concurrent_bumps_through_views_count_exactly(how):
    """``vc[0] += 1`` is three bytecodes; CPython checks for a thread switch only at calls and
    backward jumps, never between them, so no increment is lost even with a 1 us switch
    interval (a call inside the bump, e.g. ``vc[0] = f(vc[0]) + 1``, loses some: this test
    catches that)."""
    n_threads, n = 8, 4000
    base = sk.zeros(n_threads, 4)
    views = [base[i] for i in range(n_threads)]
    src = sk.ones(4)
    barrier = threading.Barrier(n_threads, timeout=JOIN)

    def work(v):
        def run():
            barrier.wait()
            for _ in range(n):
                if how == "add_":
                    v.add_(1)
                elif how == "setitem":
                    v[0:2] = 1.0
                else:
                    sk.add(v, src, out=v)
        return run

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        _run_threads([work(v) for v in views])
    finally:
        sys.setswitchinterval(interval)
    assert base._version == n_threads * n
    assert all(v._version == n_threads * n for v in views)


def test_set_mode_state_repairs_the_stacks_and_the_interceptor_count():
    """``sk.set_mode_state`` (what the pytest plugin calls after a test that leaked a mode) puts
    both stacks back without running any mode, and gives the interceptor count back."""
    base0 = flags.interceptors
    before = sk.mode_state()
    assert isinstance(before, sk.ModeState)
    a, b, f = Recorder(), Recorder(), sk.FunctionMode()
    a.__enter__()
    b.__enter__()
    f.__enter__()
    with pytest.raises(RuntimeError, match="exited out of order"):
        a.__exit__(None, None, None)
    now = sk.mode_state()
    assert now.dispatch_modes[-2:] == (a, b) and now.function_modes[-1:] == (f,)
    assert flags.interceptors == base0 + 3
    assert sk.set_mode_state(before) == now
    assert sk.mode_state() == before and flags.interceptors == base0
    sk.ones(1) + 1
    assert not a.ops and not b.ops
    sk.set_mode_state(now)                          # and forward again
    assert sk.get_mode_stack()[-2:] == [a, b] and flags.interceptors == base0 + 3
    sk.set_mode_state(before)
    assert flags.interceptors == base0
