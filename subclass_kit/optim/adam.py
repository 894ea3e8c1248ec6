"""``sk.optim.Adam`` / ``AdamW``: PyTorch's Adam (Kingma & Ba) and AdamW (Loshchilov & Hutter:
decoupled weight decay), the single-tensor update of ``torch.optim.adam`` done in place under
``no_grad``, with PyTorch's state names (``step`` a 0-d float tensor, ``exp_avg``,
``exp_avg_sq``, ``max_exp_avg_sq`` with amsgrad)."""

from __future__ import annotations

from ..api.creation import tensor, zeros_like
from ..grad_mode import no_grad
from ..registry import ops
from .._dtype import float32, float64, get_default_dtype
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    maximize=False, decoupled_weight_decay=False)``. Raises ValueError for a negative lr, eps or
    weight_decay, or a beta outside [0, 1) (PyTorch's texts)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused=None, decoupled_weight_decay: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _state(self, p, amsgrad: bool) -> dict:
        state = self.state[p]
        if not state:
            # PyTorch keeps ``step`` as a 0-d tensor of the scalar dtype (float64 only when
            # that is the default dtype).
            step_dtype = float64 if get_default_dtype() is float64 else float32
            state["step"] = tensor(0.0, dtype=step_dtype)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def step(self, closure=None):
        """One update of every parameter that has a ``.grad``; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
                amsgrad = group["amsgrad"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self._state(p, amsgrad)
                    grad = p.grad if not group["maximize"] else -p.grad
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    state["step"].add_(1)
                    if wd != 0:
                        if group["decoupled_weight_decay"]:
                            p.mul_(1 - lr * wd)
                        else:
                            grad = grad.add(p, alpha=wd)
                    exp_avg.lerp_(grad, 1 - beta1)
                    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                    step = state["step"].item()
                    bias_correction1 = 1 - beta1 ** step
                    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                    step_size = lr / bias_correction1
                    if amsgrad:
                        ops.maximum.out(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                        denom = (state["max_exp_avg_sq"].sqrt() / bias_correction2_sqrt).add_(eps)
                    else:
                        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                    p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (``weight_decay=1e-2`` by default): each step first
    scales the parameter by ``1 - lr * weight_decay``."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
