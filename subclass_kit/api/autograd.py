"""Autograd methods of ``Tensor`` (``backward``, ``retain_grad``, ``register_hook``, ...) and
``detach_``. The engine lives in ``subclass_kit.modes.autograd``; each method imports it on
first use (Note [Autograd layer] in registry.py), so the core never needs it to build itself.
"""

from __future__ import annotations

import warnings

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


_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If "
    "you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. "
    "See github.com/pytorch/pytorch/pull/30531 for more information.")
# the names PyTorch's messages give a dtype: c10 TypeMeta's and ScalarType's
_TYPE_META_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                    "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
                    "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                    "bool": "bool"}


def _get_grad(self):
    """The gradient accumulated by backward (None until then). Reading it on a non-leaf that
    does not ``retain_grad()`` and has none warns (UserWarning, PyTorch's text)."""
    g = self._grad
    if g is None and self.grad_fn is not None and not self.__dict__.get("_retains_grad"):
        warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
    return g


def _set_grad(self, grad):
    """Assign ``.grad``: None, or a Tensor of this tensor's dtype, device type and size
    (TypeError / RuntimeError with PyTorch's texts otherwise)."""
    if grad is not None:
        if not isinstance(grad, Tensor):
            raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(grad).__name__}")
        if grad is self:
            raise RuntimeError("can't assign Variable as its own grad")
        if grad.dtype != self.dtype:
            raise RuntimeError(
                f"attempting to assign a gradient with dtype '{_TYPE_META_NAMES[grad.dtype.name]}'"
                f" to a tensor with grad_dtype '{self.dtype.legacy_name[:-len('Tensor')]}'. The "
                "gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). "
                "You can set the tensor's grad_dtype attribute with a specific dtype, or None to "
                "allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor "
                "and its gradient may break downstream systems that assume they match.")
        if grad.device.type != self.device.type:
            raise RuntimeError(
                f"attempting to assign a gradient with device type '{grad.device.type}' to a "
                f"tensor with device type '{self.device.type}'. Please ensure that the gradient "
                "and the tensor are on the same device")
        if tuple(grad.shape) != tuple(self.shape):
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of "
                f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                "the same size")
    self._grad = grad


def _del_grad(self):
    self._grad = None


def _output_nr(self) -> int:
    """Which output of ``grad_fn`` this tensor is (0 for a leaf), PyTorch's ``output_nr``."""
    return self._output_nr if self.grad_fn is not None else 0


def _refuse_delete(message):
    def deleter(self):
        raise RuntimeError(message)
    return deleter


# ``backward`` takes part in the function level, as PyTorch's ``Tensor.backward`` does
# (``handle_torch_function``): a function mode sees the call, and the backward pass runs inside
# its handler, where the mode is off, so it sees none of the ops the formulas run.
backward = public_api(backward)

for _f in (backward, retain_grad, register_hook, register_post_accumulate_grad_hook, detach_):
    setattr(Tensor, _f.__name__, _f)
Tensor.retains_grad = retains_grad
Tensor.grad = property(_get_grad, _set_grad, _del_grad)
Tensor.output_nr = property(_output_nr)
# deleting these raises RuntimeError with PyTorch's texts
Tensor.requires_grad = Tensor.requires_grad.deleter(
    _refuse_delete("requires_grad must be a bool"))
Tensor.data = Tensor.data.deleter(
    _refuse_delete("Deleting tensor data is not allowed. Delete tensor instead!"))
