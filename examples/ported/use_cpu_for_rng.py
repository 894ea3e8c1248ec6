"""Device-independent random numbers: a dispatch mode that runs random factories and
in-place random fills on the cpu generator and moves the result to the requested device,
so a program draws the same stream whatever device it targets.

(The zoo's version registers a BackendSelect py_impl under enable_python_dispatcher and needs
CUDA; here the target device is "meta" and the mode is an ordinary TorchDispatchMode.)"""
import subclass_kit as sk
from subclass_kit import DispatchMode

aten = sk.ops
FACTORIES = {aten.randn.default, aten.rand.default, aten.randint.low, aten.randperm.default}
FILLS = {aten.uniform_.default, aten.normal_.default, aten.bernoulli_.float}


class CpuRngMode(DispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in FACTORIES:
            device = kwargs.get("device") or sk.device("cpu")
            if device.type != "cpu":
                self.seen.append(f"{func.__name__} on cpu for {device.type}")
                kwargs["device"] = sk.device("cpu")
                return func(*args, **kwargs).to(device)
        if func in FILLS and args[0].device.type != "cpu":
            self.seen.append(f"{func.__name__} on cpu for {args[0].device.type}")
            target = args[0]
            scratch = sk.empty(target.shape, dtype=target.dtype)
            func(scratch, *args[1:], **kwargs)
            return target.copy_(scratch.to(target.device))
        return func(*args, **kwargs)


def show(name, t):
    print(name, tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type, t.stride())


def main():
    sk.manual_seed(0)
    ref = [sk.randn(4), sk.rand(2, 3), sk.randint(0, 10, (5,)), sk.randperm(6),
           sk.empty(3).uniform_(-1, 1), sk.empty(2).normal_(0, 2), sk.randn(3)]

    sk.manual_seed(0)
    with CpuRngMode() as mode:
        a = sk.randn(4, device="meta")
        b = sk.rand(2, 3, device="meta")
        c = sk.randint(0, 10, (5,), device="meta")
        d = sk.randperm(6, device="meta")
        e = sk.empty(3, device="meta").uniform_(-1, 1)
        f = sk.empty(2, device="meta").normal_(0, 2)
    after = sk.randn(3)
    for name, t in zip("abcdef", (a, b, c, d, e, f)):
        show(name, t)
    print("stream continues where cpu would be:", sk.equal(after, ref[-1]))
    for line in mode.seen:
        print(line)

    sk.manual_seed(0)
    with CpuRngMode():
        cpu_again = [sk.randn(4), sk.rand(2, 3)]
    print("cpu untouched:", [sk.equal(x, y) for x, y in zip(cpu_again, ref)])

    g = sk.Generator().manual_seed(1)
    with CpuRngMode():
        h = sk.randn(2, generator=g, device="meta")
    show("h", h)


if __name__ == "__main__":
    main()
