"""``sk.nn.utils``: gradient clipping (PyTorch's ``torch.nn.utils.clip_grad_norm_`` /
``clip_grad_value_``), in place on ``.grad`` under ``no_grad``."""

from __future__ import annotations

from ..api.creation import tensor as _tensor
from ..api.linalg import stack
from ..grad_mode import no_grad
from ..registry import ops
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm"]


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type``-norm of the norms of ``tensors`` (a 0-d float32 zero when there are
    none). Raises RuntimeError for a non-finite total with ``error_if_nonfinite``."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    if not tensors:
        return _tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        norms = [ops.linalg_vector_norm.default(g, norm_type) for g in tensors]
        total = ops.linalg_vector_norm.default(stack(norms), norm_type)
    if error_if_nonfinite and (bool(total.isnan()) or bool(total.isinf())):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total ``norm_type``-norm
    is at most ``max_norm`` (coefficient ``max_norm / (total + 1e-6)`` clamped to 1, as
    PyTorch). Returns the total norm before clipping (0-d tensor)."""
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if grads:
        with no_grad():
            coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
            for g in grads:
                g.mul_(coef)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
