"""A complex tensor stored as two real tensors (real and imaginary parts), portable variant.

Same as ``complex_tensor.py`` except that the wrapper reports the parts' real dtype (float32)
instead of ``complex64``, which subclass_kit does not have.


After the subclass_zoo's ``complex_tensor.py`` (which runs it under ``torch.compile``; that part
is left out here). ``ComplexTensor(re, im)`` is a wrapper subclass whose public dtype is
that of its parts; the data are the float32 tensors ``re`` and ``im``. ``__torch_dispatch__``
implements ``mm``, ``add``, ``mul``, ``neg`` and the transpose ``t`` on the pair and refuses
everything else. ``__tensor_flatten__`` / ``__tensor_unflatten__`` describe it to tracing tools.
"""

import subclass_kit as sk
from subclass_kit import return_and_correct_aliasing

aten = sk.ops


class ComplexTensor(sk.Tensor):
    @staticmethod
    def __new__(cls, re, im):
        assert re.shape == im.shape and re.dtype == im.dtype == sk.float32
        return sk.make_wrapper_subclass(
            cls, re.size(), strides=re.stride(), storage_offset=re.storage_offset(),
            dtype=re.dtype, device=re.device, requires_grad=False)

    def __init__(self, re, im):
        self.re = re
        self.im = im

    __tensor_function__ = sk.disabled_tensor_function

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten.mm.default:
            x, y = args
            return cls(x.re @ y.re - x.im @ y.im, x.re @ y.im + x.im @ y.re)
        if func is aten.mul.Tensor:
            x, y = args
            return cls(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re)
        if func is aten.add.Tensor:
            x, y = args
            return cls(x.re + y.re, x.im + y.im)
        if func is aten.neg.default:
            (x,) = args
            return cls(-x.re, -x.im)
        if func is aten.t.default:
            (x,) = args
            return return_and_correct_aliasing(func, args, kwargs, cls(x.re.t(), x.im.t()))
        raise NotImplementedError(f"ComplexTensor: {func.__name__}")

    def __tensor_flatten__(self):
        return ["re", "im"], None

    @staticmethod
    def __tensor_unflatten__(inner_tensors, meta, outer_size, outer_stride):
        assert meta is None
        return ComplexTensor(inner_tensors["re"], inner_tensors["im"])

    def __repr__(self):
        return f"ComplexTensor(real={self.re.tolist()}, imag={self.im.tolist()})"


def main():
    x = ComplexTensor(sk.tensor([[1.0]]), sk.tensor([[2.0]]))
    y = ComplexTensor(sk.tensor([[3.0]]), sk.tensor([[4.0]]))
    print("dtype:", str(x.dtype).split(".")[-1], tuple(x.shape))
    print("x @ y:", x @ y)    # (1 + 2i) * (3 + 4i) = -5 + 10i
    a = ComplexTensor(sk.tensor([[1.0, 0.0], [2.0, 1.0]]), sk.tensor([[0.0, 1.0], [1.0, -1.0]]))
    print("a * a:", a * a)
    print("a + a.t():", a + a.t())
    print("-a:", -a)
    print("a.t() is a view:", a.t()._is_view(), a.t()._base is a)
    names, meta = a.__tensor_flatten__()
    b = ComplexTensor.__tensor_unflatten__({n: getattr(a, n) * 2 for n in names}, meta,
                                           a.size(), a.stride())
    print("unflattened:", b)
    try:
        a.sum()
    except NotImplementedError as e:
        print("NotImplementedError:", e)


if __name__ == "__main__":
    main()
