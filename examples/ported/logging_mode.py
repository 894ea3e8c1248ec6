"""A logging dispatch mode: every ATen op of a program, one line each, with short tensor ids.

The subclass_zoo's ``logging_mode.py`` in miniature: a ``TorchDispatchMode`` sees every op after
autograd and composites (``x.t()``, ``y * 2``, ``z.add_(1)``), runs it, and writes
``$3: f32[3, 2] = mul.Tensor($2, 2)``. Inputs get ids the first time they are seen, and the
op's schema says which arguments it writes (``func._schema``, ``alias_info.is_write``).

The PyTorch original is ``examples/ported/torch_src/logging_mode.py``;
``examples/ported/logging_mode.py`` is what ``subclass-kit port`` makes of it, unedited, and
``tests/test_port.py`` checks that both print the same lines.
"""

import subclass_kit as sk
from subclass_kit import DispatchMode
from subclass_kit.pytree import tree_map

DTYPE_ABBRS = {
    sk.float64: "f64",
    sk.float32: "f32",
    sk.int64: "i64",
    sk.bool: "b8",
}


class Lit:
    """A string that prints without quotes inside lists."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class LoggingMode(DispatchMode):
    """Runs each op unchanged and appends ``"$out: dtype[shape] = op($in, ...)"`` to ``logs``."""

    def __init__(self):
        super().__init__()
        self.ids = {}        # id(tensor) -> short id
        self.alive = []      # keeps the logged tensors alive, so ids are never reused
        self.logs = []

    def _shortid(self, t):
        if id(t) not in self.ids:
            self.ids[id(t)] = len(self.ids)
            self.alive.append(t)
        return self.ids[id(t)]

    def _fmt(self, a, with_type=False):
        if isinstance(a, sk.Tensor):
            typed = f": {DTYPE_ABBRS[a.dtype]}{list(a.shape)}" if with_type else ""
            return Lit(f"${self._shortid(a)}{typed}")
        return Lit(repr(a))

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # Name the inputs before running the op, so ids count in program order.
        fmt_args = [str(tree_map(self._fmt, a)) for a in args]
        fmt_args += [f"{k}={tree_map(self._fmt, v)}" for k, v in kwargs.items()]
        out = func(*args, **kwargs)
        fmt_out = str(tree_map(lambda t: self._fmt(t, with_type=True), out))
        written = [a.name for a in func.schema.arguments
                   if a.alias is not None and a.alias.is_write]
        note = f"  # writes {', '.join(written)}" if written else ""
        self.logs.append(f"{fmt_out} = {func.__name__}({', '.join(fmt_args)}){note}")
        return out


def main():
    x = sk.arange(6.0).view(2, 3)
    with LoggingMode() as mode:
        y = x.t()                     # a view
        z = y * 2
        z.add_(1)                     # in place: the schema says it writes self
        w = z[0]                      # select
        s = sk.mm(x, z)
        r = sk.neg(s).add(50).relu().div(4)
        parts = x.split(2, dim=1)     # a list of views
        e = w.unsqueeze(0)
    for line in mode.logs:
        print(line)
    print("z", z.tolist(), tuple(z.shape), z.stride(), z._version, z._is_view())
    print("s", s.tolist(), s.stride(), "r", r.tolist())
    print("parts", [(p.tolist(), p.stride(), p.storage_offset()) for p in parts])
    print("e", e.tolist(), e.stride(), e._base is z)

if __name__ == "__main__":
    main()
