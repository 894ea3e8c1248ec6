"""Trivial tensors: subclasses that behave exactly like the tensor they hold.

After the subclass_zoo's ``trivial_tensors.py``. Two recipes for the same thing:

- ``ViaInheritance`` ("is-a"): the subclass *is* the data (``Tensor.__new__(cls, elem)``
  aliases ``elem``); its ``__torch_dispatch__`` makes a super call, which runs the op on
  the plain tensor, and re-wraps every tensor output.
- ``ViaComposition`` ("has-a"): the subclass is also an alias of ``elem`` but additionally
  keeps ``elem`` in an attribute; its handler unwraps, calls ``func`` and re-wraps.

Both share a ``BaseTensor`` that lets ``__new__`` take an ``elem`` (and an optional
``requires_grad``) and disables ``__torch_function__``.
"""

import gc
import weakref

import subclass_kit as sk
from subclass_kit import Tensor
from subclass_kit.pytree import tree_map


class BaseTensor(Tensor):
    @staticmethod
    def __new__(cls, elem, *, requires_grad=None):
        if requires_grad is None:
            return super().__new__(cls, elem)
        return sk.make_subclass(cls, elem, requires_grad)

    def __init__(self, elem, *, requires_grad=None):
        super().__init__()

    __tensor_function__ = sk.disabled_tensor_function


class ViaInheritance(BaseTensor):
    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        out = super().__tensor_dispatch__(func, types, args, kwargs)
        return tree_map(lambda t: cls(t) if isinstance(t, Tensor) and not isinstance(t, cls) else t,
                        out)


class ViaComposition(BaseTensor):
    def __init__(self, elem, *, requires_grad=None):
        super().__init__(elem)
        self.elem = elem

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        unwrap = lambda t: t.elem if isinstance(t, cls) else t
        wrap = lambda t: cls(t) if isinstance(t, Tensor) and not isinstance(t, cls) else t
        return tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs)))


def values(t):
    # .tolist() refuses tensor subclasses that have a dispatch handler: go by items.
    if t.dim() == 0:
        return t.item()
    return [values(t[i]) for i in range(t.shape[0])]


def show(name, t):
    print(name, type(t).__name__, str(t.dtype).split(".")[-1], values(t), tuple(t.shape), t.stride(),
          t.storage_offset(), t._version, t._is_view())


def run(T):
    print("==", T.__name__)
    # No reference cycle: the subclass dies as soon as its last reference goes, gc off.
    died = []
    gc.disable()
    try:
        r = T(sk.empty(2))
        w = weakref.ref(r, lambda _: died.append(1))
        print("alive before del:", died == [])
        del r
        print("died at del:", died == [1])
    finally:
        gc.enable()

    # No copy: the subclass shares the memory of the tensor it was made from.
    inner = sk.arange(6.0).view(2, 3)
    outer = T(inner)
    print("same data_ptr:", inner.data_ptr() == outer.data_ptr())
    print("is a Tensor:", isinstance(outer, Tensor), "is plain:", type(outer) is Tensor)
    show("outer", outer)

    a = T(sk.tensor(1.0))
    b = T(sk.tensor(2.0))
    s = a + b
    show("a + b", s)
    print("equal to T(3):", bool((s == T(sk.tensor(3.0))).all()))
    show("outer * 2", outer * 2)
    show("outer.sum(1)", outer.sum(1))
    show("outer.t()", outer.t())
    show("outer[1]", outer[1])
    mx = outer.max(dim=1)
    print("max types:", type(mx).__name__, type(mx.values).__name__, type(mx.indices).__name__,
          values(mx.values), values(mx.indices))
    parts = outer.unbind(0)
    print("unbind:", type(parts).__name__, [type(p).__name__ for p in parts],
          [values(p) for p in parts])

    # In place: returns the same object; the write reaches the inner tensor.
    before = outer._version
    res = outer.add_(1)
    print("add_ returns self:", res is outer, "version", before, "->", outer._version)
    print("inner sees the write:", inner.tolist())
    out = T(sk.zeros(3))
    r = sk.add(T(sk.ones(3)), T(sk.ones(3)), out=out)
    print("out= returns out:", r is out, values(out), out._version)
    show("clone", outer.clone())
    show("to(float64)", outer.to(sk.float64))
    show("float < 3", outer < 3)
    print("item:", T(sk.tensor(4.5)).item())

    # requires_grad through the BaseTensor constructor.
    g = T(sk.tensor([1.0, 2.0, 3.0]), requires_grad=True)
    print("requires_grad:", g.requires_grad, "is_leaf:", g.is_leaf, type(g).__name__)
    loss = (g * g).sum()
    print("loss:", type(loss).__name__, loss.item(), type(loss.grad_fn).__name__)
    loss.backward()
    print("grad:", type(g.grad).__name__, values(g.grad))
    v = g.detach()
    print("detach:", type(v).__name__, v.requires_grad, v._is_view(), values(v))


for T in (ViaInheritance, ViaComposition):
    run(T)
