"""Thread-local dispatch state: the two mode stacks and the grad / inference / below flags.

One object per thread (``threading.local``); each flag has exactly one owner module that
changes it through a context manager. See Note [Mode runs below itself] in ``mode.py`` and
Note [Version counters] in ``dispatch.py``.
"""

from __future__ import annotations

import threading


class _TLS(threading.local):
    def __init__(self):
        # Innermost mode last. A handler runs with the list cut below its own mode.
        self.dispatch_modes = []
        self.function_modes = []
        # How many dispatch-mode handlers are running (their modes are cut from the stack
        # while they run): with the stack, whether the thread is under a dispatch mode.
        self.mode_handlers = 0
        # True while a subclass __tensor_dispatch__ handler or a custom-op kernel runs:
        # ops called there are "below autograd": no version bumps, no view tracking
        # (PyTorch's AutoDispatchBelowADInplaceOrView).
        self.below = False
        # True while Tensor.__tensor_function__'s default runs the wrapped function, and
        # inside sk.DisableTensorFunctionSubclass(): subclass handlers are skipped.
        self.function_subclass_disabled = False
        # sk.DisableTensorFunction(): function modes and subclass handlers are both skipped.
        self.function_disabled = False
        # sk.no_dispatch(): ops go straight to kernels (no modes, no subclass handlers).
        self.no_dispatch = False
        # Nesting depth of each subclass's __tensor_dispatch__ (runaway-recursion guard).
        self.handler_depth = {}
        # sk.dispatch_trace(callback): every op goes through the slow path and reports there.
        self.trace = None
        self.depth = 0
        self.grad_enabled = True
        self.inference = False
        # True while the autograd layer runs an op below itself (Note [Autograd layer]): the
        # op, and any op a mode or handler calls for it, is not recorded again.
        self.autograd_off = False
        # This thread's share of ``flags.interceptors``, handed back when the thread dies.
        self.held = _Held()



class _ProcessFlags:
    """Process-wide facts that let hot paths skip work.

    - ``requires_grad_seen``: some tensor has had ``requires_grad`` set; until then the
      in-place admission checks (which only matter for tensors requiring grad) are skipped;
    - ``interceptors``: how many modes and dispatch traces are active, over all threads. While
      it is 0 the hot paths skip reading this thread's mode stacks and trace (three
      thread-local reads per op); when it is not, they read them;
    - ``autograd``: the autograd layer once installed (Note [Autograd layer]);
    - ``core_ready``: ``import subclass_kit`` has finished: a kernel registered from then on
      replaces a built-in one (``OpOverload._replaced``, read by ``fast_path.unobserved``).
    """

    requires_grad_seen = False
    interceptors = 0
    # The installed autograd layer (Note [Autograd layer] in registry.py), or None: set when a
    # tensor first requires grad, so until then the eager path pays this one read.
    autograd = None
    core_ready = False


flags = _ProcessFlags()
_interceptors_lock = threading.Lock()


class _Held:
    """How many of ``flags.interceptors`` this thread holds (modes and traces it entered and has
    not left). A thread that dies inside a mode never exits it: its thread-local state is then
    dropped, and with it this object, whose ``__del__`` takes its count back out of the
    process-wide total (else the hot paths would read thread-locals forever)."""

    __slots__ = ("n",)

    def __init__(self):
        self.n = 0

    def __del__(self):
        if self.n:
            with _interceptors_lock:
                flags.interceptors -= self.n
            self.n = 0


def count_interceptor(delta: int):
    """Add ``delta`` (+1 on entering a mode or trace, -1 on leaving) to ``flags.interceptors``
    and to this thread's share of it."""
    held = tls.held
    with _interceptors_lock:
        flags.interceptors += delta
        held.n += delta


tls = _TLS()
