"""``sk.optim.lr_scheduler``: PyTorch's learning-rate schedulers ``StepLR``, ``LambdaLR`` and
``CosineAnnealingLR`` (the recursive forms of ``torch.optim.lr_scheduler``, so a run's learning
rates equal PyTorch's step for step)."""

from __future__ import annotations

import math
from typing import Callable

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "LambdaLR", "CosineAnnealingLR"]


class LRScheduler:
    """Base class: sets each group's ``initial_lr`` (or requires it when resuming with
    ``last_epoch >= 0``: KeyError, as PyTorch) and takes the initial step, so that after
    construction ``last_epoch == 0`` and ``get_last_lr()`` is the starting rate."""

    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                               "resuming scheduler with last_epoch >= 0.")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The learning rates the last ``step`` set, one per param group."""
        return self._last_lr

    def step(self) -> None:
        """Advance one epoch and write the new rates into the optimizer's groups."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)

    def _lrs(self) -> list:
        return [group["lr"] for group in self.optimizer.param_groups]


class StepLR(LRScheduler):
    """Multiply each group's rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]


class LambdaLR(LRScheduler):
    """Rate = initial rate x ``lr_lambda(epoch)`` (one function, or one per group). Raises
    ValueError for a list of the wrong length."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable | list, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_max`` epochs (SGDR
    without restarts), in PyTorch's recursive form."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial:
            return self._lrs()
        t, eta = self.T_max, self.eta_min
        if self._step_count == 1 and self.last_epoch > 0:
            return [eta + (base - eta) * (1 + math.cos(self.last_epoch * math.pi / t)) / 2
                    for base in self.base_lrs]
        if (self.last_epoch - 1 - t) % (2 * t) == 0:
            return [lr + (base - eta) * (1 - math.cos(math.pi / t)) / 2
                    for base, lr in zip(self.base_lrs, self._lrs())]
        return [(1 + math.cos(math.pi * self.last_epoch / t))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / t)) * (lr - eta) + eta
                for lr in self._lrs()]
