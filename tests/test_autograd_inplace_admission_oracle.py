"""Where autograd refuses an in-place or out= op, against torch 2.13: in its layer, above
dispatch modes and subclass handlers (PyTorch's VariableType ``check_inplace``), so a logging
mode or a wrapper subclass's handler sees nothing of the refused call, and the error (class
and text) is unchanged. The inference-tensor check stays below modes, as PyTorch's (a mode
sees that call). Inside a mode's handler autograd is excluded: no admission check there."""

from __future__ import annotations

import re

import pytest

import subclass_kit as sk
from subclass_kit.pytree import tree_map

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def _lib(L):
    """The library's mode base, handler attribute, subclass makers and no-tf attribute."""
    if L is torch:
        return (TorchDispatchMode, "__torch_dispatch__", torch.Tensor._make_subclass,
                torch.Tensor._make_wrapper_subclass,
                {"__torch_function__": torch._C._disabled_torch_function_impl})
    return (sk.DispatchMode, "__tensor_dispatch__", sk.make_subclass, sk.make_wrapper_subclass,
            {"__tensor_function__": sk.disabled_tensor_function})


def _mode(L, seen):
    base, attr, *_ = _lib(L)

    def handle(self, func, types, args=(), kwargs=None):
        seen.append(func.__name__)
        return func(*args, **(kwargs or {}))
    return type("Seen", (base,), {attr: handle})


def _subclass(L, seen, wrapper):
    """A subclass whose handler logs and runs the op on the wrapped tensors, re-wrapping the
    outputs: made with ``_make_subclass`` or, with ``wrapper``, ``_make_wrapper_subclass``."""
    _, attr, make, make_wrapper, no_tf = _lib(L)

    def new(cls, elem, requires_grad=False):
        if wrapper:
            r = make_wrapper(cls, elem.shape, dtype=elem.dtype, requires_grad=requires_grad)
        else:
            r = make(cls, elem, requires_grad)
        r.elem = elem
        return r

    def handle(cls, func, types, args=(), kwargs=None):
        seen.append(func.__name__)
        un = lambda t: t.elem if isinstance(t, cls) else t  # noqa: E731
        out = func(*tree_map(un, args), **tree_map(un, kwargs or {}))
        return tree_map(lambda t: cls(t) if isinstance(t, L.Tensor) else t, out)
    return type("Sub", (L.Tensor,), {"__new__": staticmethod(new), attr: classmethod(handle),
                                     **no_tf})


# Programs under a mode: ``mark`` separates the setup (whose ops a mode sees in both) from
# the refused call.
def leaf(L, mark):
    w = L.ones(2, requires_grad=True)
    mark()
    w.add_(1)


def leaf_copy(L, mark):
    w, src = L.ones(2, requires_grad=True), L.zeros(2)
    mark()
    w.copy_(src)


def leaf_zero(L, mark):
    w = L.ones(2, requires_grad=True)
    mark()
    w.zero_()


def view_of_leaf(L, mark):
    v = L.ones(3, requires_grad=True)[:2]
    mark()
    v.mul_(2)


def view_made_in_no_grad(L, mark):
    x = L.ones(3, requires_grad=True).exp()
    with L.no_grad():
        v = x[:1]
    mark()
    v.mul_(2)


def multi_output_view(L, mark):
    a, _ = L.ones(2, 2, requires_grad=True).exp().unbind()
    mark()
    a.add_(1)


def out_argument(L, mark):
    w, o = L.ones(2, requires_grad=True), L.zeros(2)
    mark()
    L.add(w, 1, out=o)


def resize(L, mark):
    x = L.ones(2, requires_grad=True).exp()
    mark()
    x.resize_(4)


def inference_tensor(L, mark):          # refused below modes, in both
    with L.inference_mode():
        t = L.ones(2)
    mark()
    t.add_(1)


def admitted(L, mark):                  # no refusal: the mode sees the op in both
    x = L.ones(2, requires_grad=True).exp()
    mark()
    x.add_(1)


MODE_PROGRAMS = [leaf, leaf_copy, leaf_zero, view_of_leaf, view_made_in_no_grad,
                 multi_output_view, out_argument, resize, inference_tensor, admitted]


def _norm(e: BaseException) -> tuple:
    return type(e).__name__, re.sub(r"\btorch\b", "sk", str(e))


def _under_mode(L, program):
    seen: list = []
    try:
        with _mode(L, seen)():
            program(L, lambda: seen.append("|"))
        err = None
    except RuntimeError as e:
        err = _norm(e)
    return seen, err


@pytest.mark.parametrize("program", MODE_PROGRAMS, ids=lambda p: p.__name__)
def test_mode_sees_what_torchs_sees(program):
    ours, theirs = _under_mode(sk, program), _under_mode(torch, program)
    assert ours == theirs
    if program not in (inference_tensor, admitted):
        assert ours[0][-1] == "|" and ours[1] is not None     # nothing after the mark


def _with_subclass(L, wrapper, case):
    seen: list = []
    Sub = _subclass(L, seen, wrapper)
    try:
        if case == "leaf":
            w = Sub(L.ones(2), True)
            seen.append("|")
            w.add_(1)
        elif case == "out":
            w, o = Sub(L.ones(2), True), Sub(L.zeros(2))
            seen.append("|")
            L.add(w, 1, out=o)
        else:                           # a view of a leaf subclass requiring grad
            v = Sub(L.ones(3), True)[:2]
            seen.append("|")
            v.mul_(2)
        err = None
    except RuntimeError as e:
        err = _norm(e)
    return seen, err


@pytest.mark.no_debug_asserts  # the handler re-wraps views without return_and_correct_aliasing
@pytest.mark.parametrize("wrapper", [False, True], ids=["make_subclass", "wrapper"])
@pytest.mark.parametrize("case", ["leaf", "out", "view"])
def test_subclass_handler_sees_nothing(wrapper, case):
    ours, theirs = _with_subclass(sk, wrapper, case), _with_subclass(torch, wrapper, case)
    assert ours == theirs
    assert ours[0][-1] == "|" and ours[1] is not None


def _inside_a_handler(L):
    """A leaf requiring grad modified in place by a mode's handler: autograd is excluded
    below its layer, so no admission check refuses it."""
    w = L.ones(2, requires_grad=True)
    base, attr, *_ = _lib(L)
    found = []

    def handle(self, func, types, args=(), kwargs=None):
        if func.__name__ == "mul.Tensor":
            w.add_(1)
            found.append(w.detach().tolist())
        return func(*args, **(kwargs or {}))
    with type("M", (base,), {attr: handle})():
        L.ones(2) * 2
    return found


def test_no_check_inside_a_handler():
    assert _inside_a_handler(sk) == _inside_a_handler(torch) == [[2.0, 2.0]]
