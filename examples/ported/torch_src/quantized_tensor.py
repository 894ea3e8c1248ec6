"""A quantized tensor: int8 values and a scale that read as float32.

After the subclass_zoo's ``quantized_tensor.py``, without autograd. ``QuantizedTensor`` is a
*wrapper* subclass (``_make_wrapper_subclass``): the wrapper carries the public metadata (float32,
the sizes and strides of the data) and no data; the int8 tensor lives in ``int_data`` and the
scale in ``scale``. ``__torch_dispatch__`` routes each op:

- view ops (``t``, ``select``, ``slice``, ``transpose``, ``view``) apply to ``int_data`` and stay
  quantized; ``return_and_correct_aliasing`` makes the result a view of the wrapper;
- ``mm`` of two quantized tensors is a "custom kernel": an integer matmul, scaled once;
- in-place ops on quantized tensors are refused (``torch.Tag.inplace_view`` and writes);
- everything else dequantizes and runs in float32.

The PyTorch original is ``examples/ported/torch_src/quantized_tensor.py``;
``examples/ported/quantized_tensor.py`` is what ``subclass-kit port`` makes of it, unedited, and
``tests/test_port.py`` checks that both print the same lines.
"""

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import return_and_correct_aliasing

aten = torch.ops.aten
VIEW_OPS = {aten.t.default, aten.select.int, aten.slice.Tensor, aten.transpose.int,
            aten.view.default}


class QuantizedTensor(torch.Tensor):
    """Reads as ``int_data * scale`` (float32)."""

    @staticmethod
    def __new__(cls, int_data, scale):
        return torch.Tensor._make_wrapper_subclass(
            cls, int_data.size(), strides=int_data.stride(),
            storage_offset=int_data.storage_offset(), dtype=torch.float32,
            device=int_data.device)

    def __init__(self, int_data, scale):
        self.int_data = int_data
        self.scale = scale

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def quantize(cls, t, scale):
        return cls(torch.clamp(torch.round(t / scale), -128, 127).to(torch.int8), scale)

    def dequantize(self):
        return self.int_data.to(torch.float32) * self.scale

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in VIEW_OPS and isinstance(args[0], cls):
            out = cls(func(args[0].int_data, *args[1:], **kwargs), args[0].scale)
            return return_and_correct_aliasing(func, args, kwargs, out)
        writes = any(a.alias_info is not None and a.alias_info.is_write
                     for a in func._schema.arguments)
        if writes or torch.Tag.inplace_view in func.tags:
            raise NotImplementedError(f"{func.__name__}: QuantizedTensor is read-only")
        if func is aten.mm.default and all(isinstance(a, cls) for a in args):
            a, b = args
            acc = torch.mm(a.int_data.to(torch.int32), b.int_data.to(torch.int32))
            return acc.to(torch.float32) * (a.scale * b.scale)
        args, kwargs = pytree.tree_map_only(cls, cls.dequantize, (args, kwargs))
        return func(*args, **kwargs)


def show(name, t):
    if isinstance(t, QuantizedTensor):
        print(name, "int8", t.int_data.tolist(), "scale", t.scale, "reads",
              t.dequantize().tolist())
    else:
        print(name, type(t).__name__, str(t.dtype).split(".")[-1], t.tolist())
    print("   ", tuple(t.shape), t.stride(), t.storage_offset(), t._version, t._is_view())


def main():
    w = torch.tensor([[0.5, -1.0, 0.25], [2.0, 0.0, -0.75]])
    q = QuantizedTensor.quantize(w, 1 / 64)
    show("q", q)
    show("q.t()", q.t())
    show("q[1]", q[1])
    show("q[:, 1:]", q[:, 1:])
    print("view of q:", q.t()._base is q)
    show("q.t() @ q (int8 kernel)", torch.mm(q.t(), q))
    show("q + 1 (dequantized)", q + 1)
    show("relu(q)", torch.relu(q))
    try:
        q.add_(1)
    except NotImplementedError as e:
        print("NotImplementedError:", e)
    try:
        q.t_()
    except NotImplementedError as e:
        print("NotImplementedError:", e)
    show("q after the refused writes", q)


if __name__ == "__main__":
    main()
