"""Autograd methods of ``Tensor`` (``backward``, ``retain_grad``, ``register_hook``, ...) and
``detach_``. The engine lives in ``subclass_kit.modes.autograd``; each method imports it on
first use (Note [Autograd layer] in registry.py), so the core never needs it to build itself.
"""

from __future__ import annotations

from ..function import public_api
from ..tensor import Tensor


def _engine():
    from ..modes import autograd
    autograd.install()
    return autograd


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of ``self`` into the ``.grad`` of the leaves (or of ``inputs``),
    PyTorch's ``Tensor.backward``. ``gradient`` defaults to 1 for a one-element tensor; other
    shapes raise RuntimeError "grad can be implicitly created only for scalar outputs"."""
    _engine()._tensor_backward(self, gradient, retain_graph, create_graph, inputs)


def retain_grad(self) -> None:
    """Keep the gradient of a non-leaf in ``.grad`` after backward (PyTorch's ``retain_grad``).
    Raises RuntimeError on a tensor that does not require grad."""
    _engine().retain_grad(self)


@property
def retains_grad(self) -> bool:
    return bool(self.__dict__.get("_retains_grad", False))


def register_hook(self, hook):
    """``hook(grad)`` runs when the gradient of ``self`` is computed; a non-None return replaces
    it. Returns a handle with ``remove()``. Raises RuntimeError on a tensor that does not
    require grad (PyTorch's text)."""
    return _engine().register_hook(self, hook)


def register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` runs after the gradient was accumulated into the ``.grad`` of this leaf.
    Raises RuntimeError on a non-leaf."""
    return _engine().register_post_accumulate_grad_hook(self, hook)


def detach_(self) -> "Tensor":
    """Detach in place: no longer requires grad (PyTorch's ``detach_``; no version bump,
    not dispatched). Raises RuntimeError on a view, as PyTorch does."""
    if self._base is not None:
        raise RuntimeError(
            "Can't detach views in-place. Use detach() instead. If you are using "
            "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
            "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
            "called on these gradients. To fix this error, please refer to the "
            "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
    self._requires_grad = False
    self._grad_fn = None
    return self


# ``backward`` takes part in the function level, as PyTorch's ``Tensor.backward`` does
# (``handle_torch_function``): a function mode sees the call, and the backward pass runs inside
# its handler, where the mode is off, so it sees none of the ops the formulas run.
backward = public_api(backward)

for _f in (backward, retain_grad, register_hook, register_post_accumulate_grad_hook, detach_):
    setattr(Tensor, _f.__name__, _f)
Tensor.retains_grad = retains_grad
