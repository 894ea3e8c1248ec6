"""``sk.enable_reentrant_dispatch`` against ``torch.overrides.enable_reentrant_dispatch``: inside
a subclass's dispatch handler, ops run below autograd and the version/view layer (no version
bump, untracked views, nothing recorded); inside the context manager they run as top-level
calls; after it, below again. Outside any handler it changes nothing."""

from __future__ import annotations

import pytest

import subclass_kit as sk


def _facts(L):
    """What ops on plain tensors do here: a bump, a tracked view, a recorded op."""
    buf = L.zeros(3)
    buf.add_(1)
    view = buf[1:]
    q = L.ones(2, requires_grad=True)
    return [buf._version, view._base is buf, (q * 2).grad_fn is not None]


def _subclass(L, seen, reentrant):
    def handler(cls, func, types, args=(), kwargs=None):
        seen.append(("inside", _facts(L)))
        if reentrant:
            with L.overrides.enable_reentrant_dispatch() if L.__name__ == "torch" \
                    else L.enable_reentrant_dispatch():
                seen.append(("reentrant", _facts(L)))
        seen.append(("after", _facts(L)))
        plain = [a.elem if isinstance(a, cls) else a for a in args]
        return func(*plain, **(kwargs or {}))

    if L.__name__ == "torch":
        return type("W", (L.Tensor,), {
            "__new__": staticmethod(lambda c, e: L.Tensor._make_subclass(c, e, False)),
            "__init__": lambda self, e: setattr(self, "elem", e),
            "__torch_function__": L._C._disabled_torch_function_impl,
            "__torch_dispatch__": classmethod(handler)})
    return type("W", (L.Tensor,), {
        "__new__": staticmethod(lambda c, e: L.make_subclass(c, e)),
        "__init__": lambda self, e: setattr(self, "elem", e),
        "__tensor_dispatch__": classmethod(handler)})


def _program(L, reentrant):
    seen = []
    W = _subclass(L, seen, reentrant)
    w = W(L.ones(3))
    out = w + 1
    return seen[:3], type(out).__name__, _facts(L)


@pytest.mark.parametrize("reentrant", [False, True])
def test_handler_ops_as_torch(torch, reentrant):
    import torch.overrides  # noqa: F401
    assert _program(sk, reentrant) == _program(torch, reentrant)


def test_outside_a_handler_nothing_changes():
    before = _facts(sk)
    with sk.enable_reentrant_dispatch():
        assert _facts(sk) == before
    assert not sk.is_below_autograd()
