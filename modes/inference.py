"""Inference mode (PyTorch's ``torch.inference_mode``, RFC pytorch/rfcs#17).

Built on the public switches ``sk.grad_state()`` / ``sk.set_grad_state()``. Entering turns grad
mode off and the inference flag on; the core then makes every new tensor an *inference tensor*:
no version counter is allocated, views of it are not tracked, and ops on it skip that
bookkeeping entirely (``tensor.make_tensor`` / ``make_view``). ``InferenceMode(False)`` inside
turns grad on and inference off. Exiting restores the previous switches exactly.

The mode intercepts no op: it costs nothing per op, it only removes work.
"""

from __future__ import annotations

import subclass_kit as sk

__all__ = ["InferenceMode"]


class InferenceMode(sk.DecoratorContextManager):
    """Context manager and decorator: ``with InferenceMode():`` / ``@InferenceMode()``.

    ``mode=False`` disables inference mode (and enables grad) inside an enclosing one. As in
    PyTorch's ``torch.inference_mode``, a callable ``mode`` is decorated at once, so
    ``@InferenceMode`` works without parentheses, and ``with ... as r`` binds ``None``.
    """

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): argument 'mode' must be bool, not "
                            f"{type(mode).__name__}")
        self.mode = mode
        self._state = sk.GradState(grad_enabled=not mode, inference=mode)
        self._prev = []

    def __enter__(self):
        self._prev.append(sk.set_grad_state(self._state))

    def __exit__(self, *exc):
        sk.set_grad_state(self._prev.pop())
        return False

    def clone(self):
        return InferenceMode(self.mode)
