"""A ``Parameter``-like direct subclass that keeps its class through ops.

The idea
    Sometimes a tensor should simply *be* a tensor with a label: a model parameter, a tensor
    tagged with units or a role. No data changes hands and kernels need no help; the class
    just has to survive ops, so that ``p.t()``, ``p * 2`` and ``p[0]`` are ``Parameter`` too.

How it works
    A *direct* ("is-a") subclass: ``sk.make_subclass(cls, data, requires_grad)`` makes an
    instance of ``Parameter`` that aliases ``data`` -- same Storage, same version counter, its
    own sizes and strides -- and is a leaf with ``requires_grad`` set (PyTorch's
    ``_make_subclass``, which ``nn.Parameter.__new__`` calls). Kernels run on it directly.

    The class survives ops through the *function level*: a Tensor subclass takes part in
    ``__tensor_function__`` unless it opts out, and the default handler runs the function and
    converts Tensor results to the subclass. ``FrozenParameter`` shows the opt-out:
    ``__tensor_function__ = sk.disabled_tensor_function`` makes results plain tensors, which is
    what PyTorch's real ``nn.Parameter`` does (a ``Parameter * 2`` is a ``Tensor`` there).

Tradeoffs
    + Zero cost per op beyond the function-level check; storage, views and versions are the
      plain tensor's (no wrapper, no unwrapping).
    + No ``__tensor_dispatch__`` needed: the data is real, kernels run on it.
    - It cannot change *what* ops compute (a wrapper subclass can); and keeping the class
      through every op is not always right: ``p * 2`` is not a parameter of any model, which
      is why PyTorch's ``Parameter`` opts out.
"""

from __future__ import annotations

import subclass_kit as sk


class Parameter(sk.Tensor):
    """A tensor marked as a module parameter; ``requires_grad`` defaults to True."""

    def __new__(cls, data: sk.Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = sk.empty(0)
        return sk.make_subclass(cls, data, requires_grad)

    def __repr__(self):
        # As nn.Parameter: the plain tensor's repr under a header (a subclass would print
        # its class name in place of ``tensor``).
        return f"{type(self).__name__} containing:\n{self.as_subclass(sk.Tensor)!r}"


class FrozenParameter(Parameter):
    """A Parameter that opts out of the function level: results of ops are plain tensors
    (PyTorch's ``nn.Parameter`` behaviour)."""

    __tensor_function__ = sk.disabled_tensor_function
