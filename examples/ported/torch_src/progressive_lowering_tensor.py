"""Progressive lowering: a subclass that handles some ops at the torch-function level
(before decomposition) and lets everything else fall through to __torch_dispatch__."""
import torch
from torch.utils._pytree import tree_map
from torch.utils._mode_utils import no_dispatch

SEEN = []


class LoweringTensor(torch.Tensor):
    HIGH_LEVEL = {torch.Tensor.relu, torch.nn.functional.gelu, torch.Tensor.softmax}

    @staticmethod
    def __new__(cls, t):
        return torch.Tensor._make_subclass(cls, t, t.requires_grad)

    @classmethod
    def lift(cls, t):
        if isinstance(t, torch.Tensor) and not isinstance(t, cls):
            return cls(t)
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in cls.HIGH_LEVEL:
            SEEN.append(("function", func.__name__))
            with torch._C.DisableTorchFunction():
                with no_dispatch():
                    return tree_map(cls.lift, func(*args, **kwargs))
        with torch._C.DisableTorchFunction():
            return func(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        SEEN.append(("dispatch", func.__name__))
        with no_dispatch():
            out = func(*args, **kwargs)
        return tree_map(cls.lift, out)


def plain(t):
    with no_dispatch():
        return torch.Tensor._make_subclass(torch.Tensor, t)


def main():
    x = LoweringTensor(torch.tensor([-1.0, 0.5, 2.0, -3.0]))
    print("type", type(x).__name__, plain(x).tolist())
    y = x.add(2).relu()
    print("y", type(y).__name__, plain(y).tolist())
    z = torch.nn.functional.gelu(x * 2)
    print("z", type(z).__name__, [round(v, 4) for v in plain(z).tolist()])
    s = x.view(2, 2).softmax(-1)
    print("s", type(s).__name__, [[round(v, 4) for v in r] for r in plain(s).tolist()])
    m = torch.mm(x.view(2, 2), x.view(2, 2).t())
    print("m", type(m).__name__, plain(m).tolist(), m.stride())
    for kind, name in SEEN:
        print(kind, name)


if __name__ == "__main__":
    main()
