"""Grad mode and the inference flag: thread-local switches read by the core.

``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` follow ``torch.autograd.grad_mode``: context
managers that also work as decorators, thread-local, restoring the previous state exactly on exit
(also on exceptions). As in PyTorch, ``with ...`` binds ``None``, ``no_grad`` / ``enable_grad``
also decorate without parentheses (``@sk.no_grad``), and a decorated generator function runs its
body under the mode only while it executes, never between yields.

The inference flag is the switch behind ``sk.inference_mode`` (implemented in
``modes/inference.py`` on top of :func:`grad_state` / :func:`set_grad_state`): while it is on,
new tensors are inference tensors (no version counter, untracked views) -- see
``tensor.make_tensor``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from typing import NamedTuple

from ._state import tls

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "GradState",
           "grad_state", "set_grad_state", "is_inference_mode_enabled",
           "DecoratorContextManager", "set_anomaly_enabled", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


class GradState(NamedTuple):
    """A snapshot of the thread's autograd switches."""

    grad_enabled: bool
    inference: bool


# The four possible states, built once: ``GradState(a, b)`` runs the NamedTuple's Python-level
# ``__new__`` (~0.4 us), and the switches are saved and restored around every inference
# forward. Both switches only ever hold bools (every writer in this module stores a bool;
# ``set_grad_state`` coerces), so the current state is one of these four.
_GRAD_INF = GradState(True, True)
_GRAD = GradState(True, False)
_INF = GradState(False, True)
_NEITHER = GradState(False, False)


def grad_state() -> GradState:
    """The current (grad_enabled, inference) switches of this thread."""
    st = tls.__dict__       # this thread's state: one thread-local lookup for both reads
    # Branches, not ``table[grad][inference]``: indexing with a bool takes CPython's generic
    # subscript path, and set_grad_state (same lines) runs twice per ``with inference_mode()``.
    if st["grad_enabled"]:
        return _GRAD_INF if st["inference"] else _GRAD
    return _INF if st["inference"] else _NEITHER


def set_grad_state(state: GradState) -> GradState:
    """Set both switches of this thread to ``state``'s, each coerced with ``bool()``; returns
    the previous state (a ``GradState``). The extension API: modes such as ``sk.inference_mode``
    save and restore the switches with it. If coercing either value raises, neither switch
    changes."""
    # The four states ``grad_state`` returns (what modes save and restore) by identity: a
    # NamedTuple field read is a generic attribute lookup, and inference mode's enter and exit
    # run this twice per ``with``. Others: ``True if x else False`` is ``bool(x)`` (same
    # __bool__/__len__ protocol, same errors) without the call; both values are coerced before
    # anything is written.
    if state is _INF:
        grad_enabled, inference = False, True
    elif state is _GRAD:
        grad_enabled, inference = True, False
    else:
        grad_enabled = True if state.grad_enabled else False
        inference = True if state.inference else False
    st = tls.__dict__       # this thread's state: one thread-local lookup for all four accesses
    # grad_state()'s lookup, inlined: a call would cost as much as the lookup itself.
    if st["grad_enabled"]:
        prev = _GRAD_INF if st["inference"] else _GRAD
    else:
        prev = _INF if st["inference"] else _NEITHER
    if inference and _inference_versions_pending:
        _install_inference_versions()
    st["grad_enabled"] = grad_enabled
    st["inference"] = inference
    return prev


# Inference tensors are only ever made with the inference switch on, and this module is its
# only writer: the kernels that give their results PyTorch's versions (Note [Versions of
# outputs computed from inference tensors]) are installed the first time it turns on, so a
# program that never uses inference mode does not pay for their wrappers.
_inference_versions_pending = True
_install_lock = threading.Lock()


def _install_inference_versions():
    global _inference_versions_pending
    with _install_lock:
        if _inference_versions_pending:
            importlib.import_module("subclass_kit.kernels.inference_versions").install()
            _inference_versions_pending = False


def is_grad_enabled() -> bool:
    """Whether grad mode is on in this thread (PyTorch's ``torch.is_grad_enabled``)."""
    return tls.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether inference mode is on in this thread (``torch.is_inference_mode_enabled``)."""
    return tls.inference


# Anomaly detection's two switches, (enabled, check_nan): process-wide like PyTorch's
# ``AnomalyMode`` (not per thread). Read by the autograd mode, which records where each node
# was made while it is on and checks the backward (``sk.autograd.detect_anomaly``).
_anomaly = [False, True]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for the process (PyTorch's
    ``torch.set_anomaly_enabled``; ``sk.autograd.detect_anomaly`` and ``set_detect_anomaly``
    are the context managers). TypeError, PyTorch's text, for a non-bool argument."""
    for pos, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan)), 1):
        if not isinstance(value, bool):
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {pos}) must be "
                            f"bool, not {type(value).__name__}")
    _anomaly[:] = [enabled, check_nan]        # in place: ``sk.fast_path.anomaly`` is this list


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (``torch.is_anomaly_enabled``)."""
    return _anomaly[0]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks the backward's gradients for NaN
    (``torch.is_anomaly_check_nan_enabled``; True by default)."""
    return _anomaly[1]


def _wrap_generator(make_ctx, fn):
    """Wrap generator function ``fn`` so that its body runs under a fresh ``make_ctx()`` at
    every resume (first ``next``, ``send``, ``throw``, ``close``) and the mode is switched back
    before each value goes to the caller (PyTorch's ``torch.utils._contextlib._wrap_generator``)."""

    @functools.wraps(fn)
    def generator_context(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with make_ctx():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_ctx():  # the generator's cleanup runs under the mode too
                        gen.close()
                    raise
                except BaseException as exc:  # noqa: BLE001 - thrown in by the caller: forward it
                    with make_ctx():
                        response = gen.throw(exc)
                else:
                    with make_ctx():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_context


class DecoratorContextManager:
    """Base for context managers that also decorate functions (and generator functions): each
    decorated call runs under a fresh ``clone()``, so recursion nests correctly, and a generator
    is under the mode only while its body runs (PyTorch's ``_DecoratorContextManager``).
    Subclasses implement ``__enter__``/``__exit__`` and, when their constructor takes arguments,
    ``clone``."""

    def clone(self):
        return self.__class__()

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")

        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self.clone, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


class _NoParamDecoratorContextManager(DecoratorContextManager):
    """Also decorates without parentheses: ``cls(fn)`` is ``cls()(fn)`` (PyTorch's
    ``_NoParamDecoratorContextManager``)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable grad mode in this thread (``with sk.no_grad():``, ``@sk.no_grad()`` or
    ``@sk.no_grad``)."""

    def __enter__(self):
        self._prev = tls.grad_enabled
        tls.grad_enabled = False

    def __exit__(self, *exc):
        tls.grad_enabled = self._prev
        return False


class enable_grad(_NoParamDecoratorContextManager):
    """Enable grad mode in this thread (inside ``no_grad`` too); also ``@sk.enable_grad``."""

    def __enter__(self):
        self._prev = tls.grad_enabled
        tls.grad_enabled = True

    def __exit__(self, *exc):
        tls.grad_enabled = self._prev
        return False


class set_grad_enabled(DecoratorContextManager):
    """Set grad mode to ``mode``: takes effect immediately (like PyTorch, also as a plain call)
    and is restored when used as a context manager. Used as a decorator, the previous state comes
    back at once and only the decorated calls run under ``mode`` (PyTorch's ``__call__``)."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not "
                            f"{type(mode).__name__}")
        self._prev = tls.grad_enabled
        self.mode = mode
        tls.grad_enabled = mode

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        tls.grad_enabled = self._prev
        return super().__call__(fn)

    def __enter__(self):
        tls.grad_enabled = self.mode

    def __exit__(self, *exc):
        tls.grad_enabled = self._prev
        return False


def inference_mode(mode: bool = True):
    """Inference mode (PyTorch's ``torch.inference_mode``): a context manager and decorator.

    Inside, grad mode is off and new tensors are inference tensors: no version counter, views
    untracked, cheaper ops. ``inference_mode(False)`` inside turns grad on and inference off.
    Like PyTorch, a callable ``mode`` is decorated directly (``@sk.inference_mode`` without
    parentheses). Implemented by ``modes.InferenceMode`` (imported on first use).
    """
    # The implementation lives in modes/ (built on the public API); imported on first use so
    # the core never needs the modes package to build, then kept. Entering the mode must cost
    # no more than ``no_grad`` (a serving loop enters it once per forward): ``InferenceMode``
    # is built by its ``__new__`` alone, so calling that directly (a plain Python call) gives
    # the same object as the class call, without ``type.__call__``'s overhead.
    global _InferenceMode, _new_inference_mode
    if _new_inference_mode is None:
        _InferenceMode = importlib.import_module("subclass_kit.modes.inference").InferenceMode
        _new_inference_mode = _InferenceMode.__new__    # set last: the test above reads it
    return _new_inference_mode(_InferenceMode, mode)


_InferenceMode = None
_new_inference_mode = None
