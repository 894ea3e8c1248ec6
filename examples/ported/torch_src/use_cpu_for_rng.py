"""Device-independent random numbers: a dispatch mode that runs random factories and
in-place random fills on the cpu generator and moves the result to the requested device,
so a program draws the same stream whatever device it targets.

(The zoo's version registers a BackendSelect py_impl under enable_python_dispatcher and needs
CUDA; here the target device is "meta" and the mode is an ordinary TorchDispatchMode.)"""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
FACTORIES = {aten.randn.default, aten.rand.default, aten.randint.low, aten.randperm.default}
FILLS = {aten.uniform_.default, aten.normal_.default, aten.bernoulli_.float}


class CpuRngMode(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in FACTORIES:
            device = kwargs.get("device") or torch.device("cpu")
            if device.type != "cpu":
                self.seen.append(f"{func.__name__} on cpu for {device.type}")
                kwargs["device"] = torch.device("cpu")
                return func(*args, **kwargs).to(device)
        if func in FILLS and args[0].device.type != "cpu":
            self.seen.append(f"{func.__name__} on cpu for {args[0].device.type}")
            target = args[0]
            scratch = torch.empty(target.shape, dtype=target.dtype)
            func(scratch, *args[1:], **kwargs)
            return target.copy_(scratch.to(target.device))
        return func(*args, **kwargs)


def show(name, t):
    print(name, tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type, t.stride())


def main():
    torch.manual_seed(0)
    ref = [torch.randn(4), torch.rand(2, 3), torch.randint(0, 10, (5,)), torch.randperm(6),
           torch.empty(3).uniform_(-1, 1), torch.empty(2).normal_(0, 2), torch.randn(3)]

    torch.manual_seed(0)
    with CpuRngMode() as mode:
        a = torch.randn(4, device="meta")
        b = torch.rand(2, 3, device="meta")
        c = torch.randint(0, 10, (5,), device="meta")
        d = torch.randperm(6, device="meta")
        e = torch.empty(3, device="meta").uniform_(-1, 1)
        f = torch.empty(2, device="meta").normal_(0, 2)
    after = torch.randn(3)
    for name, t in zip("abcdef", (a, b, c, d, e, f)):
        show(name, t)
    print("stream continues where cpu would be:", torch.equal(after, ref[-1]))
    for line in mode.seen:
        print(line)

    torch.manual_seed(0)
    with CpuRngMode():
        cpu_again = [torch.randn(4), torch.rand(2, 3)]
    print("cpu untouched:", [torch.equal(x, y) for x, y in zip(cpu_again, ref)])

    g = torch.Generator().manual_seed(1)
    with CpuRngMode():
        h = torch.randn(2, generator=g, device="meta")
    show("h", h)


if __name__ == "__main__":
    main()
