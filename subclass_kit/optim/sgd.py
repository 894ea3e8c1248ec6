"""``sk.optim.SGD``: PyTorch's stochastic gradient descent (momentum, dampening, Nesterov,
weight decay, maximize), the single-tensor update of ``torch.optim.sgd`` done in place under
``no_grad``."""

from __future__ import annotations

from ..grad_mode import no_grad
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
    maximize=False)``. State per parameter: ``momentum_buffer`` (when momentum != 0). Raises
    ValueError for a negative lr/momentum/weight_decay or Nesterov without momentum."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, differentiable: bool = False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a ``.grad``; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, momentum = group["lr"], group["momentum"]
                dampening, wd = group["dampening"], group["weight_decay"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad if not group["maximize"] else -p.grad
                    if wd != 0:
                        grad = grad.add(p, alpha=wd)
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = grad.clone().detach()
                            state["momentum_buffer"] = buf
                        else:
                            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                        grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
                    p.add_(grad, alpha=-lr)
        return loss
