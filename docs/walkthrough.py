"""A walkthrough of subclass_kit, in the order a call travels: tensor -> op -> dispatch -> kernel.

Sections: 1. A strided tensor, 2. Views share storage, 3. The op registry and schemas,
4. A DispatchMode, 5. Meta tensors, 6. A custom op. Run it: ``python docs/walkthrough.py``.
Every section prints what it shows and asserts it, and the test suite runs this file
(tests/test_architecture.py), so the tour cannot drift from the code.
The style follows JAX's autodidax: read it top to bottom, next to docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import os
import sys

# Run from a checkout without installing: put the repository root first on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import subclass_kit as sk  # noqa: E402


def section(title: str) -> None:
    print(f"\n{title}\n{'-' * len(title)}")


# %% 1. A strided tensor
# A Tensor is a Storage (a flat byte buffer), a Layout (sizes, strides, storage offset) and a
# dtype. Element [i, j] lives at offset + i * stride[0] + j * stride[1], in elements.
section("1. A strided tensor")
x = sk.arange(12.0).view(3, 4)
print(x)
print("size", tuple(x.shape), "stride", x.stride(), "offset", x.storage_offset(),
      "dtype", x.dtype)
assert tuple(x.shape) == (3, 4) and x.stride() == (4, 1) and x.storage_offset() == 0
assert x.dtype == sk.float32                      # Python floats give the default dtype
assert x.untyped_storage().nbytes() == 12 * 4     # the Storage is untyped bytes
print("layout", x._layout)                        # an immutable Layout value

# %% 2. Views share storage
# View ops return a new Tensor over the *same* Storage object with a different Layout: no data
# moves (Note [Views share Storage]). A view shares its base's version counter, and every
# in-place write bumps it once (Note [Version counters]).
section("2. Views share storage")
t = x.t()                                         # transpose: swap sizes and strides
row = x.select(0, 1)                              # x[1]: drop dim 0, offset by one row
print("x.t() stride", t.stride(), "| x[1] offset", row.storage_offset())
assert t.stride() == (1, 4) and not t.is_contiguous()
assert row.storage_offset() == 4
assert t.untyped_storage() is x.untyped_storage() is row.untyped_storage()
assert t._base is x._base and t._is_view()        # _base is the root base, never a view

before = x._version
row.add_(100.0)                                   # write through the view...
print("after row.add_(100):", x.select(0, 1).tolist(), "version", x._version)
assert x.select(0, 1).tolist() == [104.0, 105.0, 106.0, 107.0]    # ...the base sees it
assert x._version == t._version == row._version == before + 1      # one shared counter

y = x.t().contiguous()                            # a copy: fresh Storage, own counter
assert y.untyped_storage() is not x.untyped_storage() and y._version == 0

# %% 3. The op registry and schemas
# Every primitive is an OpOverload object in sk.ops, with a schema in PyTorch's notation;
# sk.ops.add is the op's OpOverloadPacket, its overloads are sk.ops.add.Tensor, .out...
# Alias annotations say what an op does to memory: (a) marks a view of an input, (a!) a
# mutation. Modes and subclasses read these facts instead of keeping lists of op names.
section("3. The op registry and schemas")
for op in (sk.ops.transpose.int, sk.ops.add.Tensor, sk.ops.add_.Tensor):
    print(f"{op!s:24} {op.schema}")
    print(f"{'':24} is_view={op.is_view} is_inplace={op.is_inplace} "
          f"mutated_args={op.mutated_args}")
assert sk.ops.transpose.int.is_view and not sk.ops.transpose.int.is_inplace
assert sk.ops.add_.Tensor.is_inplace and sk.ops.add_.Tensor.mutated_args
assert not sk.ops.add.Tensor.is_view and not sk.ops.add.Tensor.mutated_args
assert sk.ops.add.overloads()[:2] == ["Tensor", "out"]
assert sk.ops.add.Tensor.overloadpacket is sk.ops.add
z = sk.ops.add(x, x)                  # a packet call runs its default (else first) overload
assert z.tolist() == (x + x).tolist()

# %% 4. A DispatchMode
# A mode is a context manager that sees every op call (func, types, args, kwargs) after
# composite ops decomposed. While its handler runs, the mode is off the stack, so calling
# func inside goes to the next mode down and finally to the kernel
# (Note [Mode runs below itself]).
section("4. A DispatchMode")


class LoggingMode(sk.DispatchMode):
    """Record the name of every op, then run it unchanged."""

    def __init__(self):
        self.log = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append(str(func))
        out = func(*args, **(kwargs or {}))       # runs below this mode: no recursion
        return out


a = sk.ones(2, 3)
with LoggingMode() as mode:
    b = (a * 2.0 + a).t()
    b.mul_(3.0)
print("\n".join(mode.log))
assert mode.log == ["sk.ops.mul.Tensor", "sk.ops.add.Tensor", "sk.ops.t.default",
                    "sk.ops.mul_.Tensor"]
assert b.tolist() == [[9.0, 9.0]] * 3
assert sk.get_mode_stack() == []                  # the mode left the stack on exit

# %% 5. Meta tensors
# A meta tensor has sizes, strides, dtype and a Storage with the right nbytes(), but no data.
# Meta and cpu kernels are built from one rule per op (Note [One rule per op]), so shapes and
# error messages agree, and as_strided is bounds-checked against the meta storage too.
section("5. Meta tensors")
w = sk.empty(1024, 4096, device="meta")
h = (w.t() * 2.0 + 1.0).view(4096, 2, 512)
print(h)
assert tuple(h.shape) == (4096, 2, 512) and h.device == "meta"
assert w.untyped_storage().nbytes() == 1024 * 4096 * 4
try:
    w.as_strided((2 * 1024 * 4096,), (1,))        # would read past the end of the storage
except RuntimeError as e:
    print("as_strided on meta:", str(e).split(" are ")[1])
else:
    raise AssertionError("as_strided out of bounds must raise on meta too")
try:
    w.tolist()                                    # no data to read
except NotImplementedError as e:                  # PyTorch's class and text
    print("data access on meta:", type(e).__name__)
else:
    raise AssertionError("reading a meta tensor's data must raise")

# %% 6. A custom op
# sk.library.define parses a schema string into a new OpOverload under sk.ops.<namespace>; it
# then dispatches like a built-in op: modes see it, and its kernels are registered per device.
section("6. A custom op")
scale = sk.library.define("walkthrough::scale(Tensor self, float k) -> Tensor")


@sk.library.impl(scale, "cpu")
def _scale_cpu(self, k):
    return self * k


@sk.library.impl(scale, "meta")
def _scale_meta(self, k):
    return sk.empty_like(self)                    # shapes only: no data on meta


assert scale is sk.ops.walkthrough.scale.default
print(scale.schema, "->", scale(sk.ones(3), 2.0).tolist())
assert scale(sk.ones(3), 2.0).tolist() == [2.0, 2.0, 2.0]
m = sk.empty(5, 7, device="meta")
with LoggingMode() as mode:
    out = scale(m, 2.0)
assert mode.log == ["sk.ops.walkthrough.scale.default"] and tuple(out.shape) == (5, 7)
print("a mode sees it as", mode.log[0])

print("\nwalkthrough: ok")
