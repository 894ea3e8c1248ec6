"""Mode base classes and the mode stacks.

Note [Mode runs below itself]
    While a mode's handler runs, that mode and every mode above it are cut from the stack, so
    ops the handler calls go to the next mode down, then to subclass hooks, then to kernels
    (PyTorch's ``_pop_mode_temporarily``; autodidax's "interpreter below is current").
    ``with self:`` inside a handler pushes the mode again (re-entrancy is then the mode's own
    business). The full stack comes back when the handler returns or raises.

Modes are context managers on thread-local stacks (``_state.tls``). Exiting a mode that is not
the innermost raises RuntimeError naming both modes (PyTorch silently pops the wrong one: a
documented difference).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

from ._state import count_interceptor, tls

__all__ = ["DispatchMode", "FunctionMode", "get_mode_stack", "get_function_mode_stack",
           "ModeState", "mode_state", "set_mode_state", "no_dispatch", "DisableTensorDispatch"]


def check_hook_names(cls, names: tuple) -> None:
    """Raise TypeError when ``cls`` defines a PyTorch hook name (``__torch_dispatch__``) but not
    the subclass_kit one it maps to in ``names`` (``(torch_name, our_name)`` pairs): the hook
    would silently never run."""
    for torch_name, our_name in names:
        if torch_name in cls.__dict__ and our_name not in cls.__dict__:
            raise TypeError(
                f"{cls.__qualname__} defines {torch_name}, which subclass_kit never calls: "
                f"rename it to {our_name} (same signature: func, types, args=(), kwargs=None)")


class _Mode:
    _stack_name = ""
    _hook_names: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        check_hook_names(cls, cls._hook_names)

    def __enter__(self):
        getattr(tls, self._stack_name).append(self)
        count_interceptor(1)
        return self

    def __exit__(self, exc_type, exc, tb):
        stack = getattr(tls, self._stack_name)
        if not stack or stack[-1] is not self:
            top = stack[-1] if stack else None
            raise RuntimeError(
                f"mode {self!r} exited out of order: the innermost active mode is {top!r}; "
                "exit modes in the reverse order of entering them")
        stack.pop()
        count_interceptor(-1)
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        """A new, not yet entered ``cls(*args, **kwargs)``, with PyTorch's UserWarning that
        ``push()`` is no longer needed: ``with M.push():`` and ``with M().push():`` both enter
        a fresh mode for the block and leave the stack as it was (``TorchDispatchMode.push``;
        called on an instance it still makes a new one, with no arguments). To enter a mode
        without a ``with`` block, call ``mode.__enter__()`` and later ``mode.__exit__(None,
        None, None)``."""
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", UserWarning, stacklevel=2)
        return cls(*args, **kwargs)


class DispatchMode(_Mode):
    """Base for modes that see every ``sk.ops`` call after composites decomposed.

    Override ``__tensor_dispatch__(self, func, types, args=(), kwargs=None)``; return
    ``NotImplemented`` to pass the op to the next handler. See Note [Mode runs below itself].
    """

    _stack_name = "dispatch_modes"
    _hook_names = (("__torch_dispatch__", "__tensor_dispatch__"),)

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class FunctionMode(_Mode):
    """Base for modes that see public API calls (``Tensor`` methods and ``sk.*`` functions).

    Override ``__tensor_function__(self, func, types, args=(), kwargs=None)``.
    """

    _stack_name = "function_modes"
    _hook_names = (("__torch_function__", "__tensor_function__"),)

    def __tensor_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def get_mode_stack() -> list:
    """The active dispatch modes of this thread, outermost first (a copy)."""
    return list(tls.dispatch_modes)


def get_function_mode_stack() -> list:
    """The active function modes of this thread, outermost first (a copy)."""
    return list(tls.function_modes)


class ModeState(NamedTuple):
    """A snapshot of this thread's two mode stacks, outermost first (see :func:`mode_state`)."""

    dispatch_modes: tuple
    function_modes: tuple


def mode_state() -> ModeState:
    """This thread's dispatch and function mode stacks, as a snapshot that
    :func:`set_mode_state` puts back (test harnesses: the pytest plugin takes one before each
    test).

        >>> before = sk.mode_state()
        >>> leaked = sk.DispatchMode().__enter__()   # entered and never exited
        >>> sk.get_mode_stack()[-1] is leaked
        True
        >>> _ = sk.set_mode_state(before)
        >>> leaked in sk.get_mode_stack(), sk.mode_state() == before
        (False, True)
    """
    return ModeState(tuple(tls.dispatch_modes), tuple(tls.function_modes))


def set_mode_state(state: ModeState) -> ModeState:
    """Make ``state`` (from :func:`mode_state`) this thread's mode stacks again; returns the
    stacks it replaced. No mode's ``__enter__`` / ``__exit__`` runs: this repairs the stacks
    after code that entered a mode without leaving it, or left modes out of order (the pytest
    plugin calls it after such a test). Call it outside mode handlers: a handler runs on a cut
    stack that is put back when it returns (Note [Mode runs below itself])."""
    prev = mode_state()
    dispatch_modes, function_modes = tuple(state.dispatch_modes), tuple(state.function_modes)
    tls.dispatch_modes = list(dispatch_modes)
    tls.function_modes = list(function_modes)
    delta = (len(dispatch_modes) + len(function_modes)
             - len(prev.dispatch_modes) - len(prev.function_modes))
    if delta:
        count_interceptor(delta)   # modes on the stacks are counted as interceptors
    return prev


class no_dispatch:
    """Run ops straight on their kernels: no dispatch modes, no subclass handlers (PyTorch's
    ``_DisableTorchDispatch``). Version bumps and view tracking still happen. The mode stack
    itself is untouched (``get_mode_stack()`` still lists it; modes entered inside stay on it
    after the block), and one instance may be nested in itself."""

    def __init__(self):
        self._prev: list = []

    def __enter__(self):
        self._prev.append(tls.no_dispatch)
        tls.no_dispatch = True
        return self

    def __exit__(self, *exc):
        tls.no_dispatch = self._prev.pop()
        return False


class DisableTensorDispatch:
    """A guard that turns dispatch off when it is *made* and back on when it is *deleted*
    (PyTorch's ``torch._C._DisableTorchDispatch``, which ``torch.utils._mode_utils.no_dispatch``
    also names): ``guard = sk.DisableTensorDispatch()`` ... ``del guard``. While it lives, ops
    run as under :class:`no_dispatch`.

    As PyTorch's RAII guard: construction saves the current setting and turns dispatch off;
    deletion (``__del__``) or ``__exit__``, whichever comes first, puts the saved setting back,
    once. So ``with sk.DisableTensorDispatch():`` is :class:`no_dispatch` (``__enter__`` returns
    None, as PyTorch's), entering an instance again does nothing, and guards deleted out of
    order restore what each saw when made, as PyTorch's do. Prefer ``with sk.no_dispatch():``
    in new code."""

    __slots__ = ("_prev", "_active")

    def __init__(self):
        self._prev = tls.no_dispatch
        self._active = True
        tls.no_dispatch = True

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self._restore()
        return False

    def __del__(self):
        try:
            self._restore()
        except Exception:       # interpreter shutdown: the state may be gone already
            pass

    def _restore(self):
        if self._active:
            self._active = False
            tls.no_dispatch = self._prev
