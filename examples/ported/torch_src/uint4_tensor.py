"""A 4-bit unsigned integer tensor packed two values per byte.

After the subclass_zoo's ``uint4_tensor.py``. ``UInt4Tensor(packed)`` wraps a uint8 tensor whose
last dimension holds two 4-bit values per byte (high nibble first); the wrapper's public shape
has that last dimension doubled. The wrapper reports dtype int64 as a placeholder (there is no
4-bit dtype to report, and uint8 would make ``.to(torch.uint8)`` a no-op). ``__torch_dispatch__`` supports:

- ``view`` (via the packed tensor's ``reshape``; ``-1`` resolved with ``infer_size``),
- ``_to_copy`` to uint8 (unpacks: the only way values come out),
- ``unbind`` of the last dimension (promotes to uint8 first: half a byte cannot be a tensor),
- ``select`` / ``slice`` (on the last dimension only at even boundaries),

and refuses everything else.
"""

import torch
import torch._prims_common as utils

aten = torch.ops.aten


def packed_size(size):
    assert size[-1] % 2 == 0, f"{tuple(size)}: last dim not divisible by two"
    return (*size[:-1], size[-1] // 2)


def unpacked_size(size):
    return (*size[:-1], size[-1] * 2)


def fill_defaults(args, n, defaults_tail):
    """Pad ``args`` to ``n`` entries from the tail of defaults: handlers are not passed the
    defaulted trailing arguments."""
    if n - len(defaults_tail) > len(args):
        raise RuntimeError("not enough defaults to fill arguments")
    out = list(args)
    for i in range(len(args), n):
        out.append(defaults_tail[i - n + len(defaults_tail)])
    return out


def unpack(packed):
    high = (packed >> 4).to(torch.uint8)
    low = (packed & 0xF).to(torch.uint8)
    return torch.stack([high, low], dim=-1)


class UInt4Tensor(torch.Tensor):
    @staticmethod
    def __new__(cls, packed):
        assert packed.dtype is torch.uint8
        return torch.Tensor._make_wrapper_subclass(cls, unpacked_size(packed.shape),
                                                   dtype=torch.int64)

    def __init__(self, packed):
        self.packed = packed

    def tolist(self):
        return self.to(torch.uint8).tolist()

    def __repr__(self):
        return f"UInt4Tensor({self.tolist()})"

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args, kwargs=None):
        if func is aten.view.default:
            self, size = args
            size = utils.infer_size(size, self.numel())
            assert not kwargs
            return UInt4Tensor(self.packed.reshape(packed_size(size)))
        if func is aten._to_copy.default:
            (self,) = args
            if kwargs == {"dtype": torch.uint8}:
                return unpack(self.packed).view(self.shape)
            raise NotImplementedError(f"_to_copy to {str(kwargs.get('dtype')).split('.')[-1]}")
        if func is aten.unbind.int:
            self, dim = fill_defaults(args, 2, [0])
            dim = utils.canonicalize_dim(self.dim(), dim)
            if dim != self.dim() - 1:
                raise NotImplementedError(f"unbind dim={dim}")
            return aten._to_copy.default(self, dtype=torch.uint8).unbind(dim)
        if func is aten.select.int:
            self, dim, index = args
            dim = utils.canonicalize_dim(self.dim(), dim)
            if dim == self.dim() - 1:
                raise NotImplementedError(f"select dim={dim}")
            return UInt4Tensor(aten.select.int(self.packed, dim, index))
        if func is aten.slice.Tensor:
            self, dim, start, end, step = fill_defaults(args, 5, [0, None, None, 1])
            dim = utils.canonicalize_dim(self.dim(), dim)
            if dim == self.dim() - 1:
                if step != 1:
                    raise NotImplementedError(f"slice step={step}")
                assert start % 2 == 0, start
                assert end >= self.shape[dim] or end % 2 == 0, end
                return UInt4Tensor(aten.slice.Tensor(self.packed, dim, start // 2, end // 2, 1))
            return UInt4Tensor(aten.slice.Tensor(self.packed, dim, start, end, step))
        raise NotImplementedError(f"{func.__name__}")


def show(name, t):
    print(name, type(t).__name__, tuple(t.shape), str(t.dtype).split(".")[-1], t.tolist())


def main():
    x = UInt4Tensor(torch.tensor([[0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]] * 3,
                                 dtype=torch.uint8))
    print("shape:", tuple(x.shape), "packed:", tuple(x.packed.shape))
    show("x", x)
    show("x.to(uint8)", x.to(torch.uint8))
    show("x[0:1, :]", x[0:1, :])
    show("x[:, 2:6]", x[:, 2:6])
    show("x[1]", x[1])
    show("x.view(6, 8)", x.view(6, 8))
    show("x.view(-1, 4)", x.view(-1, 4))
    show("x.view(2, -1)", x.view(2, -1))
    show("x[1].view(2, 8)", x[1].view(2, 8))
    parts = x[2].unbind(-1)
    print("x[2].unbind(-1):", len(parts), type(parts[0]).__name__, [p.item() for p in parts])
    print("repr:", repr(x[0:1, 4:]))
    for bad in (lambda: x[:, 1:3], lambda: x[:, ::2], lambda: x.to(torch.int32),
                lambda: x.unbind(0), lambda: x + 1):
        try:
            bad()
        except (NotImplementedError, AssertionError) as e:
            print(type(e).__name__, e)


if __name__ == "__main__":
    main()
