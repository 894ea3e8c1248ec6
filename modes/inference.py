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

# Entering the mode must cost no more than ``sk.no_grad`` as far as Python allows (a serving
# loop enters it once per forward): the two states it sets are built once, and
# ``set_grad_state`` is bound here.
_ON = sk.GradState(grad_enabled=False, inference=True)
_OFF = sk.GradState(grad_enabled=True, inference=False)
_set_grad_state = sk.set_grad_state
_object_new = object.__new__    # DecoratorContextManager defines no __new__: skips super()


class InferenceMode(sk.DecoratorContextManager):
    """Context manager and decorator: ``with InferenceMode():`` / ``@InferenceMode()``.

    ``mode=False`` disables inference mode (and enables grad) inside an enclosing one. As in
    PyTorch's ``torch.inference_mode``, a callable ``mode`` is decorated at once, so
    ``@InferenceMode`` works without parentheses, and ``with ... as r`` binds ``None``. Any
    other non-bool ``mode`` raises ``TypeError``. One instance may be entered again while it is
    active: each exit restores what the matching enter saved.
    """

    # The three attributes every construction sets live in slots (cheaper stores than a fresh
    # instance dict); DecoratorContextManager declares no __slots__, so instances still have a
    # __dict__ for anything else.
    __slots__ = ("mode", "_state", "_prev")

    # Built by ``__new__`` alone (no ``__init__``): one Python-level call per construction, and
    # ``sk.inference_mode`` calls it directly (see there).
    def __new__(cls, mode=True):
        if mode is True:
            state = _ON
        elif mode is False:
            state = _OFF
        elif callable(mode):
            return cls()(mode)
        else:
            raise TypeError(f"inference_mode(): argument 'mode' must be bool, not "
                            f"{type(mode).__name__}")
        self = _object_new(cls)
        self.mode = mode
        self._state = state
        # The states saved by the enters not yet exited, innermost first, as nested pairs
        # ``(saved, outer pairs)``: no list to allocate per construction.
        self._prev = None
        return self

    def __enter__(self):
        self._prev = (_set_grad_state(self._state), self._prev)

    def __exit__(self, exc_type, exc, tb):
        saved, self._prev = self._prev
        _set_grad_state(saved)
        return False

    def clone(self):
        return InferenceMode(self.mode)
