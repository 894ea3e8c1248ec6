"""``Tensor.as_subclass`` against PyTorch: what handlers and modes see, and what comes back.

PyTorch's ``as_subclass`` wraps ``self.alias()`` with dispatch modes turned off: a plain tensor
dispatches nothing a mode sees; a tensor whose class has a dispatch handler sends
``alias.default`` to that handler, and the result is the Python object the handler returned
(it must be an instance of ``cls``), else RuntimeError.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import subclass_kit as sk  # noqa: E402


def _classes(m, returns):
    """(S, C, log): S a direct subclass whose handler logs ``(op name, argument classes)`` and
    answers ``alias`` per ``returns``; C a plain subclass."""
    log = []
    no_dispatch = torch.utils._mode_utils.no_dispatch if m is torch else sk.no_dispatch

    def handle(cls, func, args, kwargs):
        name = str(func).split(".", 1)[1] if m is torch else str(func).split(".", 2)[2]
        log.append((name, [type(a).__name__ for a in args]))
        with no_dispatch():
            out = func(*args, **(kwargs or {}))
        if returns == "plain" or name != "alias.default":
            return out
        if returns == "same_class":
            return (torch.Tensor._make_subclass if m is torch else sk.make_subclass)(cls, out)
        return "not a tensor"

    if m is torch:
        class S(torch.Tensor):
            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                return handle(cls, func, args, kwargs)

        class C(torch.Tensor):
            pass
    else:
        class S(sk.Tensor):
            @classmethod
            def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
                return handle(cls, func, args, kwargs)

        class C(sk.Tensor):
            pass
    return S, C, log


def _mode(m, log):
    if m is torch:
        class Rec(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                log.append(("mode", str(func).split(".", 1)[1]))
                return func(*args, **(kwargs or {}))
    else:
        class Rec(sk.DispatchMode):
            def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
                log.append(("mode", str(func).split(".", 2)[2]))
                return func(*args, **(kwargs or {}))
    return Rec()


def _facts(m, returns, target):
    S, C, log = _classes(m, returns)
    x = (torch.Tensor._make_subclass if m is torch else sk.make_subclass)(
        S, m.tensor([1.0, 2.0]))
    cls = {"Tensor": m.Tensor, "C": C, "S": S}[target]
    with _mode(m, log):
        try:
            out = x.as_subclass(cls)
        except RuntimeError as e:
            return log, ("RuntimeError", str(e))
    return log, (type(out).__name__, tuple(out.shape), out._base is x,
                 out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())


@pytest.mark.parametrize("returns", ["plain", "same_class", "not_tensor"])
@pytest.mark.parametrize("target", ["Tensor", "C", "S"])
def test_as_subclass_of_a_handled_tensor_goes_through_its_handler(returns, target):
    theirs = _facts(torch, returns, target)
    ours = _facts(sk, returns, target)
    assert ours == theirs
    assert ours[0] == [("alias.default", ["S"])]      # the handler sees it, the mode does not


def test_as_subclass_of_a_plain_tensor_dispatches_nothing():
    for m in (torch, sk):
        _, C, log = _classes(m, "plain")
        x = m.tensor([1.0, 2.0], requires_grad=True)
        with _mode(m, log):
            out = x.as_subclass(C)
        assert log == []
        assert type(out) is C and out._base is x and out.requires_grad
        assert type(out.grad_fn).__name__ == "AliasBackward0"
