"""``torch.autograd.Variable``, kept by PyTorch for old code: every tensor is a ``Variable``
(``isinstance(t, Variable)``), and ``Variable(t, requires_grad=False)`` is ``t.detach()``
(same data and version counter, a new leaf) with ``requires_grad`` set."""

from __future__ import annotations

import warnings

import subclass_kit as sk

__all__ = ["Variable", "VariableMeta"]


class VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, sk.Tensor)


class Variable(metaclass=VariableMeta):
    """``Variable(data=None, requires_grad=False, volatile=False)``: ``data.detach()`` (an
    empty float tensor without ``data``), requiring grad if asked (RuntimeError for an integer
    dtype). TypeError when ``data`` is no tensor; ``volatile`` only warns, as in PyTorch,
    where it was removed."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with sk.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if data is None:
            data = sk.empty(0)
        if not isinstance(data, sk.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if not isinstance(requires_grad, (bool, int)):
            raise TypeError(f"'{type(requires_grad).__name__}' object cannot be interpreted as "
                            "an integer")
        out = data.detach()
        if requires_grad:
            if not out.dtype.is_floating_point:     # the factories' text, not requires_grad_'s
                raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                                   "gradients")
            out.requires_grad_(True)
        return out
