"""Combining a custom Parameter class with a wrapper tensor subclass that a mode produces.

After the subclass_zoo's ``custom_parameter.py``. ``TaggedParameter`` is an ``nn.Parameter``
subclass that only adds Python-level data and methods (a ``tag``, ``describe()``), no
``__torch_dispatch__``. ``ModeTensor`` is a wrapper subclass that ``WrappingMode`` (a
``TorchDispatchMode``) creates for every tensor an op returns while the mode is active; the
wrapper keeps the real tensor in ``elem`` and the mode in ``mode``.

To make ``TaggedParameter(mode_tensor)`` work, a third class inherits from both
(``ModeParameter(ModeTensor, TaggedParameter)``, ModeTensor first so its methods win) and
``TaggedParameter.__new__`` redirects to it when given a ModeTensor.
"""

import subclass_kit as sk
import subclass_kit.nn as nn
from subclass_kit import DispatchMode, get_mode_stack, is_traceable_wrapper_subclass
from subclass_kit.pytree import tree_map_only


class TaggedParameter(nn.Parameter):
    def __new__(cls, data, tag="untagged"):
        if isinstance(data, ModeTensor):
            return ModeParameter(data.elem, data.mode, tag)
        p = super().__new__(cls, data)
        p.tag = tag
        return p

    def describe(self):
        return f"{type(self).__name__}[{self.tag}] {tuple(self.shape)}"


class ModeTensor(sk.Tensor):
    def __new__(cls, elem, mode, *extra):
        r = sk.make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=elem.device,
            requires_grad=elem.requires_grad,
        )
        r.elem = elem
        r.mode = mode
        return r

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{func.__name__}: ModeTensor needs WrappingMode active")

    def __tensor_flatten__(self):
        return ["elem"], self.mode

    @staticmethod
    def __tensor_unflatten__(inner, mode, outer_size, outer_stride):
        return ModeTensor(inner["elem"], mode)


class WrappingMode(DispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.__name__)
        unwrap = lambda t: t.elem
        args, kwargs = tree_map_only(ModeTensor, unwrap, (args, kwargs or {}))
        out = func(*args, **kwargs)
        return tree_map_only(sk.Tensor, lambda t: ModeTensor(t, self), out)


class ModeParameter(ModeTensor, TaggedParameter):
    def __new__(cls, elem, mode, tag="untagged"):
        p = ModeTensor.__new__(cls, elem, mode)
        p.tag = tag
        return p

    def __init__(self, *args, **kwargs):
        pass


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = TaggedParameter(sk.ones(3, 4), tag="shard0")
        self.bias = nn.Parameter(sk.zeros(3))


def report(model):
    for name, p in model.named_parameters():
        print(" ", name, type(p).__name__, isinstance(p, nn.Parameter),
              isinstance(p, TaggedParameter), isinstance(p, ModeTensor), p.requires_grad,
              tuple(p.shape), str(p.dtype).split(".")[-1])


def main():
    sk.manual_seed(0)
    plain = Model()
    print("without the mode:")
    report(plain)
    print(" ", plain.weight.describe())
    print("  weight values:", plain.weight.tolist()[0])
    print("  mro:", [c.__name__ for c in ModeParameter.__mro__][:4])

    with WrappingMode() as mode:
        print("modes on the stack:", len(get_mode_stack()))
        model = Model()
        print("inside the mode:")
        report(model)
        w = model.weight
        print(" ", w.describe())
        print("  wrapper of:", type(w.elem).__name__, w.elem.tolist()[0], w.mode is mode)
        print("  traceable wrapper:", is_traceable_wrapper_subclass(w))
        y = model.weight @ sk.ones(4) + model.bias
        print("  y:", type(y).__name__, tuple(y.shape), y.elem.tolist())
        print("  ops seen:", mode.ops)
        print("  buffers of y:", y.__tensor_flatten__()[0])

    print("modes after exit:", len(get_mode_stack()))
    try:
        model.weight + 1
    except NotImplementedError as e:
        print("NotImplementedError:", e)


if __name__ == "__main__":
    main()
