"""``torch.autograd.grad_mode``'s names (``subclass_kit.autograd.grad_mode``): the core's
grad-mode switches, which the engine and every mode read; ``enforce_grad_layout_policy``
(``layout_contract.py``); ``set_multithreading_enabled``."""

from __future__ import annotations

import subclass_kit as sk
from subclass_kit import enable_grad, inference_mode, no_grad, set_grad_enabled

from .layout_contract import enforce_grad_layout_policy

__all__ = ["enable_grad", "inference_mode", "no_grad", "set_grad_enabled",
           "enforce_grad_layout_policy", "set_multithreading_enabled"]

_multithreading = [True]


class set_multithreading_enabled(sk.DecoratorContextManager):
    """PyTorch's switch for running the backward of different devices on their own threads
    (``torch.autograd.set_multithreading_enabled``): set at once, restored on exit. The engine
    here runs every backward on the calling thread (one device with data, cpu), so only the
    switch itself is kept, for code that sets and reads it back
    (``is_multithreading_enabled``)."""

    def __init__(self, mode: bool) -> None:
        self.prev = _multithreading[0]
        _multithreading[0] = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _multithreading[0] = self.prev

    def clone(self):
        return self.__class__(self.mode)


def is_multithreading_enabled() -> bool:
    """The switch ``set_multithreading_enabled`` sets (True by default)."""
    return _multithreading[0]
