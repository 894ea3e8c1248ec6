"""``sk.DisableTensorDispatch`` against PyTorch's ``torch._C._DisableTorchDispatch`` (also
``torch.utils._mode_utils.no_dispatch``): dispatch goes off when the guard is made and comes
back when it is deleted or exited, once; the same program gives the same trace in both
libraries, including guards deleted out of order and an instance entered twice."""

from __future__ import annotations

import contextlib
import io
import runpy

import pytest

import subclass_kit as sk


def _program(lib, mode_base, guard_cls, log):
    """Ops under a recording mode with guards made, entered and deleted in several orders;
    ``log`` gets a marker per step and each op the mode sees."""
    x = lib.ones(2)

    class Seen(mode_base):
        def handle(self, func, types, args=(), kwargs=None):
            log.append("op")
            return func(*args, **(kwargs or {}))

        __torch_dispatch__ = __tensor_dispatch__ = handle

    def step(name):
        log.append(name)
        x + 1

    with Seen():
        step("plain")
        g = guard_cls()
        step("made")
        del g
        step("deleted")
        with guard_cls() as h:
            log.append(h)
            step("in with")
        step("after with")
        g = guard_cls()
        g.__enter__()
        g.__exit__(None, None, None)
        step("exited")
        with g:
            step("entered again")
        del g
        step("deleted after exit")
        g1, g2 = guard_cls(), guard_cls()
        del g1
        step("first deleted")       # g1 restores what it saw: dispatch on
        del g2
        step("second deleted")      # g2 restores what it saw: dispatch off
        g3 = guard_cls()
        del g3
        step("still off")
    return log


def test_guard_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode
    sk_base = sk.DispatchMode
    start = sk._state.tls.no_dispatch
    try:
        ours = _program(sk, sk_base, sk.DisableTensorDispatch, [])
    finally:
        sk._state.tls.no_dispatch = start
    with torch._C._PreserveDispatchKeyGuard():   # the program leaves dispatch off
        theirs = _program(torch, TorchDispatchMode, torch._C._DisableTorchDispatch, [])
    assert ours == theirs
    assert ours == [
        "plain", "op", "made", "deleted", "op", None, "in with", "after with", "op", "exited",
        "op", "entered again", "op", "deleted after exit", "op", "first deleted", "op",
        "second deleted", "still off"]
    after = []
    _program_tail(torch, TorchDispatchMode, after)      # torch's dispatch is back on
    assert after == ["op", "op"]     # ones, add


def _program_tail(lib, mode_base, log):
    class Seen(mode_base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append("op")
            return func(*args, **(kwargs or {}))

    with Seen():
        lib.ones(2) + 1


_ZOO_NO_DISPATCH = '''
import contextlib
import torch


class Loud(torch.Tensor):
    @staticmethod
    def __new__(cls, e):
        return torch.Tensor._make_subclass(cls, e)

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        print("handler:", func.__name__)
        with no_dispatch():
            return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def no_dispatch():
    guard = torch._C._DisableTorchDispatch()
    try:
        yield
    finally:
        del guard


x = Loud(torch.ones(2))
print(type(x + 1).__name__)
with no_dispatch():
    print(type(x * 2).__name__)
print(type(x - 1).__name__)
'''


def test_the_zoos_guard_idiom_ports(tmp_path):
    from subclass_kit.port import port_source
    out, warnings = port_source(_ZOO_NO_DISPATCH)
    assert warnings == []
    assert "guard = sk.DisableTensorDispatch()" in out
    path = tmp_path / "zoo_no_dispatch.py"
    path.write_text(out)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(str(path))
    assert buf.getvalue() == ("handler: add.Tensor\nTensor\nTensor\nhandler: sub.Tensor\n"
                              "Tensor\n")
    assert not sk._state.tls.no_dispatch
