"""Python meta kernels: a dispatch mode that fills in meta-device support for ops that
have none, by catching NotImplementedError on meta inputs and computing the output
metadata in Python."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

torch.library.define("demo::pairwise_sq", "(Tensor a, Tensor b) -> Tensor")


@torch.library.impl("demo::pairwise_sq", "cpu")
def pairwise_sq_cpu(a, b):
    return (a.unsqueeze(1) - b.unsqueeze(0)).pow(2).sum(-1)


torch.library.define("demo::split_halves", "(Tensor x) -> (Tensor, Tensor)")


@torch.library.impl("demo::split_halves", "cpu")
def split_halves_cpu(x):
    n = x.shape[0] // 2
    return x[:n].clone(), x[n:].clone()


aten = torch.ops.aten
META_TABLE = {}


def meta_impl(op):
    def register(fn):
        META_TABLE[op] = fn
        return fn
    return register


@meta_impl(torch.ops.demo.pairwise_sq.default)
def pairwise_sq_meta(a, b):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "pairwise_sq wants 2-d inputs")
    torch._check(a.shape[1] == b.shape[1], lambda: "feature sizes differ")
    return a.new_empty((a.shape[0], b.shape[0]))


@meta_impl(torch.ops.demo.split_halves.default)
def split_halves_meta(x):
    n = x.shape[0] // 2
    return x.new_empty((n,) + tuple(x.shape[1:])), x.new_empty((x.shape[0] - n,) + tuple(x.shape[1:]))


@meta_impl(aten.is_set_to.default)
def is_set_to_meta(a, b):
    return (a.untyped_storage() is b.untyped_storage() and a.shape == b.shape
            and a.stride() == b.stride() and a.storage_offset() == b.storage_offset())


class PythonMetaMode(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.filled = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        on_meta = any(isinstance(t, torch.Tensor) and t.is_meta for t in flat)
        if not on_meta:
            return func(*args, **kwargs)
        try:
            return func(*args, **kwargs)
        except NotImplementedError:
            if func not in META_TABLE:
                raise
        self.filled.append(func.__name__)
        return META_TABLE[func](*args, **kwargs)


def describe(t):
    return (tuple(t.shape), str(t.dtype).split(".")[-1], t.stride(), t.device.type)


def main():
    a = torch.arange(6.0).view(3, 2)
    b = torch.ones(4, 2)
    print("cpu", torch.ops.demo.pairwise_sq(a, b).tolist())
    ma, mb = a.to("meta"), b.to("meta")
    try:
        torch.ops.demo.pairwise_sq(ma, mb)
    except NotImplementedError as e:
        print("no meta kernel:", type(e).__name__)
    with PythonMetaMode() as mode:
        out = torch.ops.demo.pairwise_sq(ma, mb)
        print("meta", describe(out))
        lo, hi = torch.ops.demo.split_halves(torch.empty(5, 3, device="meta"))
        print("halves", describe(lo), describe(hi))
        print("is_set_to", ma.is_set_to(ma), ma.is_set_to(ma.view(3, 2)), ma.is_set_to(mb))
        y = (out * 2).sum(0)
        print("downstream", describe(y))
        try:
            torch.ops.demo.pairwise_sq(ma, torch.empty(4, 3, device="meta"))
        except RuntimeError as e:
            print("RuntimeError:", e)
        print("cpu inside", torch.ops.demo.pairwise_sq(a, b).sum().item())
    print("filled", mode.filled)


if __name__ == "__main__":
    main()
