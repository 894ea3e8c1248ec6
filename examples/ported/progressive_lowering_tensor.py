"""Progressive lowering: a subclass that handles some ops at the torch-function level
(before decomposition) and lets everything else fall through to __torch_dispatch__."""
import subclass_kit as sk
from subclass_kit.pytree import tree_map
from subclass_kit import DisableTensorDispatch

SEEN = []


class LoweringTensor(sk.Tensor):
    HIGH_LEVEL = {sk.Tensor.relu, sk.nn.functional.gelu, sk.Tensor.softmax}

    @staticmethod
    def __new__(cls, t):
        return sk.make_subclass(cls, t, t.requires_grad)

    @classmethod
    def lift(cls, t):
        if isinstance(t, sk.Tensor) and not isinstance(t, cls):
            return cls(t)
        return t

    @classmethod
    def __tensor_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in cls.HIGH_LEVEL:
            SEEN.append(("function", func.__name__))
            with sk.DisableTensorFunction():
                with DisableTensorDispatch():
                    return tree_map(cls.lift, func(*args, **kwargs))
        with sk.DisableTensorFunction():
            return func(*args, **kwargs)

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        SEEN.append(("dispatch", func.__name__))
        with DisableTensorDispatch():
            out = func(*args, **kwargs)
        return tree_map(cls.lift, out)


def plain(t):
    with DisableTensorDispatch():
        return sk.make_subclass(sk.Tensor, t)


def main():
    x = LoweringTensor(sk.tensor([-1.0, 0.5, 2.0, -3.0]))
    print("type", type(x).__name__, plain(x).tolist())
    y = x.add(2).relu()
    print("y", type(y).__name__, plain(y).tolist())
    z = sk.nn.functional.gelu(x * 2)
    print("z", type(z).__name__, [round(v, 4) for v in plain(z).tolist()])
    s = x.view(2, 2).softmax(-1)
    print("s", type(s).__name__, [[round(v, 4) for v in r] for r in plain(s).tolist()])
    m = sk.mm(x.view(2, 2), x.view(2, 2).t())
    print("m", type(m).__name__, plain(m).tolist(), m.stride())
    for kind, name in SEEN:
        print(kind, name)


if __name__ == "__main__":
    main()
