"""A logging wrapper: a tensor that writes down every op run on it.

The idea
    Wrap a tensor so that every op touching it is recorded -- the op, its argument shapes and
    its output shapes -- while results stay numerically identical to the unwrapped program.
    It is the "hello world" of wrapper subclasses (PyTorch's ``LoggingTensor`` in
    ``torch.testing._internal.logging_tensor``).

How it works
    ``LoggingTensor`` is a *wrapper* ("has-a") subclass. ``sk.make_wrapper_subclass`` builds a
    metadata-only tensor with the sizes, strides, offset and dtype of the real tensor, which
    lives in the attribute ``elem``. ``__tensor_dispatch__`` receives every op with a
    LoggingTensor argument after composite ops decomposed, so it sees ``view`` rather than
    ``reshape``. It:

    1. unwraps every LoggingTensor argument (``sk.pytree.tree_map_only``),
    2. runs the op on the plain tensors (below the version/view layer: Note [Version
       counters]; the wrapper itself gets the version bump and view tracking),
    3. logs one line to the log list shared by the arguments,
    4. rewraps tensor outputs and calls ``sk.return_and_correct_aliasing`` so view outputs
       share the input wrapper's Storage and in-place ops return the very object mutated.

    ``__tensor_function__ = sk.disabled_tensor_function`` skips the function level: results
    are built by the dispatch handler alone. ``__tensor_flatten__`` / ``__tensor_unflatten__``
    make it a *traceable* wrapper (``sk.transform_subclass`` can rebuild it).

Tradeoffs
    + Sees exactly the ops that touch the wrapped tensors (a mode sees all ops of a program,
      including unrelated ones), and composes with modes.
    + Values, sizes, strides, aliasing and versions are those of the plain program.
    - Factories inside the program are not logged (they have no LoggingTensor argument);
      ``modes.LoggingMode`` sees them.
    - One extra wrapper object and one unwrap/rewrap per op: roughly double the Python
      overhead of an op.
"""

from __future__ import annotations

import subclass_kit as sk


def _describe(value):
    if isinstance(value, sk.Tensor):
        return f"{value.dtype.name}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return repr(value)


class LoggingTensor(sk.Tensor):
    """A tensor that appends ``"op(args) -> outputs"`` lines to ``log`` for every op."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(elem: sk.Tensor, log: list | None = None) -> LoggingTensor:
        """Wrap ``elem``; ``log`` is the list to write to (a new one by default)."""
        w = sk.make_wrapper_subclass(LoggingTensor, elem.shape, elem.stride(),
                                     elem.storage_offset(), dtype=elem.dtype,
                                     device=elem.device, requires_grad=elem.requires_grad)
        w.elem = elem
        w.log = [] if log is None else log
        return w

    def __repr__(self):
        return f"LoggingTensor({self.elem!r})"

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        wrapped = [a for a in sk.pytree.tree_leaves((args, kwargs)) if isinstance(a, cls)]
        log = wrapped[0].log

        def unwrap(t):
            return t.elem

        out = func(*sk.pytree.tree_map_only(cls, unwrap, args),
                   **sk.pytree.tree_map_only(cls, unwrap, kwargs))
        call = ", ".join([_describe(a) for a in args]
                         + [f"{k}={_describe(v)}" for k, v in kwargs.items()])
        log.append(f"{func!r}({call}) -> {_describe(out)}")
        out = sk.pytree.tree_map_only(sk.Tensor, lambda t: cls.wrap(t, log), out)
        return sk.return_and_correct_aliasing(func, args, kwargs, out)

    def __tensor_flatten__(self):
        return ["elem"], self.log

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return LoggingTensor.wrap(inner["elem"], ctx)
