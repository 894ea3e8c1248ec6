"""Grad mode and the inference flag: thread-local switches read by the core.

``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` follow ``torch.autograd.grad_mode``: context
managers that also work as decorators, thread-local, restoring the previous state exactly on exit
(also on exceptions). The inference flag is the switch behind ``sk.inference_mode`` (implemented
in ``modes/inference.py`` on top of :func:`grad_state` / :func:`set_grad_state`): while it is on,
new tensors are inference tensors (no version counter, untracked views) -- see
``tensor.make_tensor``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import NamedTuple

from ._state import tls

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "GradState",
           "grad_state", "set_grad_state", "is_inference_mode_enabled",
           "DecoratorContextManager"]


class GradState(NamedTuple):
    """A snapshot of the thread's autograd switches."""

    grad_enabled: bool
    inference: bool


def grad_state() -> GradState:
    """The current (grad_enabled, inference) switches of this thread."""
    return GradState(tls.grad_enabled, tls.inference)


def set_grad_state(state: GradState) -> GradState:
    """Set both switches; returns the previous state (for the extension API: modes use this)."""
    prev = GradState(tls.grad_enabled, tls.inference)
    tls.grad_enabled = bool(state.grad_enabled)
    tls.inference = bool(state.inference)
    return prev


def is_grad_enabled() -> bool:
    """Whether grad mode is on in this thread (PyTorch's ``torch.is_grad_enabled``)."""
    return tls.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether inference mode is on in this thread (``torch.is_inference_mode_enabled``)."""
    return tls.inference


class DecoratorContextManager:
    """Base for context managers that also decorate functions (and generator functions): each
    decorated call runs under a fresh ``clone()``, so recursion and generators nest correctly
    (PyTorch's ``_DecoratorContextManager``). Subclasses implement ``__enter__``/``__exit__`` and,
    when their constructor takes arguments, ``clone``."""

    def clone(self):
        return self.__class__()

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen(*args, **kwargs):
                with self.clone():
                    yield from fn(*args, **kwargs)
            return gen

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(DecoratorContextManager):
    """Disable grad mode in this thread (``with sk.no_grad():`` or ``@sk.no_grad()``)."""

    def __enter__(self):
        self._prev = tls.grad_enabled
        tls.grad_enabled = False
        return self

    def __exit__(self, *exc):
        tls.grad_enabled = self._prev
        return False


class enable_grad(DecoratorContextManager):
    """Enable grad mode in this thread (inside ``no_grad`` too)."""

    def __enter__(self):
        self._prev = tls.grad_enabled
        tls.grad_enabled = True
        return self

    def __exit__(self, *exc):
        tls.grad_enabled = self._prev
        return False


class set_grad_enabled(DecoratorContextManager):
    """Set grad mode to ``mode``: takes effect immediately (like PyTorch, also as a plain call)
    and is restored when used as a context manager."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not "
                            f"{type(mode).__name__}")
        self._prev = tls.grad_enabled
        self.mode = mode
        tls.grad_enabled = mode

    def clone(self):
        return self.__class__(self.mode)

    def __enter__(self):
        tls.grad_enabled = self.mode
        return self

    def __exit__(self, *exc):
        tls.grad_enabled = self._prev
        return False


def inference_mode(mode: bool = True):
    """Inference mode (PyTorch's ``torch.inference_mode``): a context manager and decorator.

    Inside, grad mode is off and new tensors are inference tensors: no version counter, views
    untracked, cheaper ops. ``inference_mode(False)`` inside turns grad on and inference off.
    Implemented by ``modes.InferenceMode`` (imported on first use).
    """
    # The implementation lives in modes/ (built on the public API); imported on first use so
    # the core never needs the modes package to build.
    inference = importlib.import_module("modes.inference")
    return inference.InferenceMode(mode)
