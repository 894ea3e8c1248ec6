"""``torch.autograd.grad_mode``'s names (``subclass_kit.autograd.grad_mode``): the core's
grad-mode switches, which the engine and every mode read."""

from __future__ import annotations

from subclass_kit import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["enable_grad", "inference_mode", "no_grad", "set_grad_enabled"]
