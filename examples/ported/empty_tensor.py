"""A tensor with metadata and no data: every op runs on ones and keeps only the result's shape.

After the subclass_zoo's ``empty_tensor.py``. ``EmptyTensor(t)`` is a *wrapper* subclass
(``_make_wrapper_subclass``) that copies ``t``'s sizes, strides, offset, dtype, layout and
device but keeps none of its values. Its ``__torch_dispatch__`` "inflates" each EmptyTensor
argument to a tensor of ones of the same metadata (built with dispatch disabled so it does not
come back here), runs the op through the base class's handler and "deflates" every tensor
result back to an EmptyTensor. So a program runs end to end and reports shapes, strides and
dtypes, with the values thrown away.
"""

import subclass_kit as sk
from subclass_kit import DisableTensorDispatch
from subclass_kit.pytree import tree_map


class EmptyTensor(sk.Tensor):
    @staticmethod
    def __new__(cls, elem):
        return sk.make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=elem.device,
            requires_grad=elem.requires_grad,
        )

    def __init__(self, elem):
        pass

    __tensor_function__ = sk.disabled_tensor_function

    def __repr__(self):
        return f"EmptyTensor(size={tuple(self.size())}, dtype={str(self.dtype).split('.')[-1]})"

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        def inflate(t):
            if isinstance(t, cls):
                with DisableTensorDispatch():
                    return sk.ones_like(t, device=t.device)
            return t

        def deflate(t):
            if isinstance(t, sk.Tensor) and not isinstance(t, cls):
                return cls(t)
            return t

        out = super().__tensor_dispatch__(func, types, tree_map(inflate, args),
                                         tree_map(inflate, kwargs))
        return tree_map(deflate, out)


def show(name, t):
    if isinstance(t, (tuple, list)):
        print(name, type(t).__name__, [(type(e).__name__, tuple(e.shape)) for e in t])
        return
    print(name, type(t).__name__, tuple(t.shape), t.stride(), t.storage_offset(),
          str(t.dtype).split(".")[-1], t.device.type, str(t.layout).split(".")[-1], t.requires_grad)


def main():
    x = EmptyTensor(sk.randn(4))
    y = EmptyTensor(sk.randn(4))
    show("x", x)
    print(repr(x))
    show("x + y", x + y)
    m = EmptyTensor(sk.randn(3, 4))
    w = EmptyTensor(sk.randn(4, 5, dtype=sk.float64))
    show("m", m)
    show("m.t()", m.t())
    show("m[1]", m[1])
    show("m[:, 1:3]", m[:, 1:3])
    show("m.float() @ w.float()", m @ w.float())
    show("m.sum(0)", m.sum(0))
    show("m.mean()", m.mean())
    show("m > 0", m > 0)
    show("m.to(int64)", m.to(sk.int64))
    show("m.view(2, 6)", m.view(2, 6))
    show("m.reshape(12)", m.reshape(12))
    show("m.unbind(1)", m.unbind(1))
    show("m.split(2)", m.split(2))
    show("torch.cat", sk.cat([m, m], dim=1))
    show("torch.stack", sk.stack([x, y]))
    show("softmax", sk.softmax(m, dim=-1))
    show("max(dim=1)", m.max(dim=1))
    print("ones everywhere:", (m * 0 + 1).__class__.__name__)
    t = EmptyTensor(sk.randn(2, 3).t())
    show("from a transposed tensor", t)
    show("t.contiguous()", t.contiguous())
    show("t + 1", t + 1)
    o = EmptyTensor(sk.randn(3, 2)[1:])
    show("from an offset view", o)
    r = EmptyTensor(sk.randn(2, 2, requires_grad=True))
    show("requires_grad", r)
    print("item of the sum:", x.sum().__class__.__name__)


if __name__ == "__main__":
    main()
