"""A wrapper that runs autograd on the tensor inside it: ``enable_reentrant_dispatch``.

After the subclass_zoo's ``inner_autograd_tensor.py``. Ops inside ``__torch_dispatch__`` run
below autograd and the version/view layer, so a handler cannot normally record gradients of
the tensors it unwraps. ``enable_reentrant_dispatch()`` lets its ops dispatch as top-level
calls: here the outer tensor does not require grad, the inner one does, and every op on the
outer tensor is recorded on the inner one. Mixing in another tensor that requires grad is an
error the handler raises itself.

The PyTorch original is ``examples/ported/torch_src/inner_autograd_tensor.py``;
``examples/ported/inner_autograd_tensor.py`` is what ``subclass-kit port`` makes of it,
unedited, and ``tests/test_port.py`` checks that both print the same lines.
"""

import torch
from torch.overrides import enable_reentrant_dispatch
from torch.utils._pytree import tree_map


class InnerAutogradTensor(torch.Tensor):
    """Shares ``elem``'s storage and does not require grad; ``elem`` keeps its autograd."""

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_subclass(cls, elem, False)

    def __init__(self, elem):
        self.elem = elem

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(t):
            if isinstance(t, cls):
                return t.elem
            if isinstance(t, torch.Tensor) and t.requires_grad:
                raise RuntimeError("Bad mixup of autograd level")
            return t

        def wrap(t):
            if isinstance(t, torch.Tensor) and not isinstance(t, cls) and t.requires_grad:
                return cls(t)
            return t

        with enable_reentrant_dispatch():
            return tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {})))


def show(name, t):
    inner = t.elem if isinstance(t, InnerAutogradTensor) else t
    node = inner.grad_fn.name() if inner.grad_fn is not None else None
    values = [round(v, 4) for v in inner.detach().reshape(-1).tolist()]
    print(f"{name}: {type(t).__name__} {values} requires_grad={t.requires_grad} "
          f"inner node={node}")


def main():
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = InnerAutogradTensor(x)
    z = InnerAutogradTensor(x)
    show("y", y)
    r = y * z + y.exp()
    show("r", r)
    s = r.sum()
    show("s", s)
    s.elem.backward()
    print("x.grad:", [round(v, 4) for v in x.grad.tolist()])

    # views of the wrapper are recorded on the inner tensor too (in-place ops are not: the
    # handler would write the storage both share, and return a new wrapper)
    t = InnerAutogradTensor(x * 1)
    head = t[:2]
    show("t[:2]", head)
    t = t * 3
    show("t * 3", t)
    x.grad = None
    (t.sum() + head.sum()).elem.backward()
    print("x.grad:", [round(v, 4) for v in x.grad.tolist()])

    plain = torch.ones(3)
    show("r + plain", r + plain)
    try:
        y + torch.ones(3, requires_grad=True)
    except RuntimeError as e:
        print("RuntimeError:", e)


if __name__ == "__main__":
    main()
