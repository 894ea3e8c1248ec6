"""Tensor keeps its core state in ``__slots__``: every way of making a tensor must set each
slot (an unset slot raises AttributeError on first read, unlike the class defaults it
replaced), and a direct subclass's class swap must keep that state."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk

STATE_SLOTS = [s for s in sk.Tensor.__slots__ if s not in ("__dict__", "__weakref__", "_np")]


class Direct(sk.Tensor):
    pass


class Wrapper(sk.Tensor):
    @staticmethod
    def wrap(inner):
        w = sk.make_wrapper_subclass(Wrapper, inner.shape, dtype=inner.dtype)
        w.inner = inner
        return w

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.inner if isinstance(t, Wrapper) else t     # noqa: E731
        kwargs = kwargs or {}
        out = func(*sk.pytree.tree_map(unwrap, args), **sk.pytree.tree_map(unwrap, kwargs))
        out = sk.pytree.tree_map_only(sk.Tensor, Wrapper.wrap, out)
        return sk.return_and_correct_aliasing(func, args, kwargs, out)


def _under_inference(make):
    def run():
        with sk.inference_mode():
            return make()
    return run


PRODUCERS = {
    "factory": lambda: sk.ones(2, 3),
    "meta factory": lambda: sk.empty(2, 3, device="meta"),
    "from_numpy": lambda: sk.from_numpy(np.ones((2, 3), np.float32)),
    "op output": lambda: sk.ones(2, 3) * 2,
    "meta op output": lambda: sk.empty(2, 3, device="meta") + 1,
    "view": lambda: sk.ones(2, 3).t(),
    "view of a view": lambda: sk.ones(2, 3).t()[1],
    "multi-output view": lambda: sk.ones(4).split(2)[1],
    "detach": lambda: sk.ones(2).detach(),
    ".data": lambda: sk.ones(2).data,
    "inference factory": _under_inference(lambda: sk.ones(2)),
    "inference view": _under_inference(lambda: sk.ones(2, 2).t()),
    "make_subclass": lambda: sk.make_subclass(Direct, sk.ones(2)),
    "direct subclass op result": lambda: sk.make_subclass(Direct, sk.ones(2)) + 1,
    "direct subclass view": lambda: sk.make_subclass(Direct, sk.ones(2, 2)).t(),
    "as_subclass": lambda: sk.ones(2).as_subclass(Direct),
    "wrapper": lambda: Wrapper.wrap(sk.ones(2)),
    "wrapper op result": lambda: Wrapper.wrap(sk.ones(2)) * 3,
    "wrapper view (below autograd)": lambda: Wrapper.wrap(sk.ones(2, 2)).t(),
    "inference wrapper": _under_inference(lambda: Wrapper.wrap(sk.ones(2))),
}


@pytest.mark.parametrize("name", list(PRODUCERS))
def test_every_constructor_sets_every_state_slot(name):
    t = PRODUCERS[name]()
    for slot in STATE_SLOTS:
        getattr(t, slot)        # AttributeError when a constructor missed it
    assert (t._vc is None) == t._inference
    assert (t._base is not None) == t._is_view()
    if not t.is_meta and type(t) is not Wrapper:
        assert t.tolist() == t._array().tolist()


def test_class_swap_keeps_slot_state_and_instance_dict_apart():
    """A direct subclass result is a plain result whose class was swapped (function.result_as):
    the slots stay, and no user attribute of an input is carried over (PyTorch does not copy
    ``__dict__`` either)."""
    base = sk.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    x = sk.make_subclass(Direct, base)      # an alias sharing the counter, not a view
    x.tag = "input only"
    y = x.t()
    assert type(y) is Direct and y._base is x and y._vc is base._vc
    assert y.stride() == (1, 3) and "tag" not in y.__dict__
    y.mul_(2)
    assert base._version == 1 and base.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
