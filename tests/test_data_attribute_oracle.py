"""``.data`` (get and set) and ``detach_()`` against torch: the op a mode sees, version counters,
``_base``, classes and errors."""

from __future__ import annotations

import pytest
from oracle import Wrapper

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def _recorder(lib):
    seen = []
    base = TorchDispatchMode if lib is torch else sk.DispatchMode

    class Recorder(base):
        def handle(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

        __torch_dispatch__ = __tensor_dispatch__ = handle

    return Recorder(), seen


@pytest.mark.parametrize("under_mode", [False, True])
@pytest.mark.parametrize("make", ["plain", "view", "inference"])
def test_data_is_a_fresh_counter_alias_and_dispatches_detach_under_modes(make, under_mode):
    def program(lib):
        if make == "inference":
            with lib.inference_mode():
                x = lib.ones(2, 3)
        else:
            x = lib.ones(2, 3).add_(1)
            x = x[0] if make == "view" else x
        mode, seen = _recorder(lib)
        if under_mode:
            with mode:
                d = x.data
        else:
            d = x.data
        d.add_(1)                                   # writes through, bumps only d's counter
        version = None if make == "inference" else x._version
        return (seen, d._version, d._base is None, d.is_inference(), version, x.tolist())

    assert program(sk) == program(torch)


def test_data_of_subclasses_keeps_the_class():
    class Direct(sk.Tensor):
        pass

    assert type(sk.make_subclass(Direct, sk.ones(2)).data) is Direct
    w = Wrapper.wrap(sk.ones(2))
    assert type(w.data) is Wrapper and (w.data + 1).elem.tolist() == [2.0, 2.0]


def test_data_setter_takes_storage_layout_and_dtype_keeps_counter():
    def program(lib):
        x = lib.ones(3)
        x.add_(1)
        y = lib.arange(6).view(2, 3).t()
        x.data = y
        out = [x.tolist(), x.dtype is y.dtype, x.stride(), x._version, x.data_ptr() == y.data_ptr()]
        y.add_(1)                                   # shares y's storage from now on
        out.append(x.tolist())
        try:
            x.data = 3
        except TypeError as e:
            out.append(str(e))
        return out

    assert program(sk) == program(torch)


def test_detach_in_place_refuses_views_and_does_not_bump():
    for lib in (sk, torch):
        x = lib.ones(3, requires_grad=True)
        assert x.detach_() is x and not x.requires_grad and x._version == 0
        with pytest.raises(RuntimeError, match="Can't detach views in-place"):
            lib.ones(4)[1:].detach_()
