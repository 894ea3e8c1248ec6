"""What an in-place or out= op returns when a subclass handler answered it, against torch
2.13: the mutated argument itself (PyTorch's ADInplaceOrView layer, above the Python key,
returns ``self`` / ``out``), whatever the handler returned; so chained in-place calls keep
mutating the same object. A mode calling the op still gets the handler's own result
(``DebugAssertMode`` reports ``inplace_not_self`` from there)."""

from __future__ import annotations

import pytest

import subclass_kit as sk
from subclass_kit.pytree import tree_map

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def _lib(L):
    if L is torch:
        return (TorchDispatchMode, "__torch_dispatch__", torch.Tensor._make_subclass,
                torch.Tensor._make_wrapper_subclass,
                {"__torch_function__": torch._C._disabled_torch_function_impl})
    return (sk.DispatchMode, "__tensor_dispatch__", sk.make_subclass, sk.make_wrapper_subclass,
            {"__tensor_function__": sk.disabled_tensor_function})


def _rewrapping(L, wrapper):
    """A subclass whose handler re-wraps every output in a new instance (no
    ``return_and_correct_aliasing``)."""
    _, attr, make, make_wrapper, no_tf = _lib(L)

    def new(cls, elem):
        r = make_wrapper(cls, elem.shape, dtype=elem.dtype) if wrapper else make(cls, elem)
        r.elem = elem
        return r

    def handle(cls, func, types, args=(), kwargs=None):
        un = lambda t: t.elem if isinstance(t, cls) else t  # noqa: E731
        out = func(*tree_map(un, args), **tree_map(un, kwargs or {}))
        return tree_map(lambda t: cls(t) if isinstance(t, L.Tensor) else t, out)
    return type("W", (L.Tensor,), {"__new__": staticmethod(new), attr: classmethod(handle),
                                   **no_tf})


def _values(t):
    return (t.elem if hasattr(t, "elem") else t).tolist()


def _subclass_program(L, wrapper):
    W = _rewrapping(L, wrapper)
    w = W(L.zeros(2))
    o = W(L.zeros(2))
    same = [w.add_(1) is w, w.mul_(2) is w, L.add(w, w, out=w) is w,
            L.add(W(L.ones(2)), 1, out=o) is o]
    w.mul_(3).add_(1)           # both on w
    return same, _values(w), _values(o)


@pytest.mark.no_debug_asserts  # the handler's mistake is the point (inplace_not_self)
@pytest.mark.parametrize("wrapper", [False, True], ids=["make_subclass", "wrapper"])
def test_subclass_inplace_returns_the_mutated_argument(wrapper):
    ours, theirs = _subclass_program(sk, wrapper), _subclass_program(torch, wrapper)
    assert ours == theirs
    assert ours[0] == [True] * 4


@pytest.mark.no_debug_asserts  # enters its own DebugAssertMode
def test_debug_assert_still_sees_the_handlers_result():
    from subclass_kit.modes import DebugAssertMode
    from subclass_kit.modes.debug_assert import DebugAssertError
    W = _rewrapping(sk, True)
    w = W(sk.zeros(2))
    with pytest.raises(DebugAssertError, match="inplace_not_self"):
        with DebugAssertMode():
            w.add_(1)
