"""``sk.utils.checkpoint``: activation checkpointing (PyTorch's ``torch.utils.checkpoint``,
non-reentrant variant; Chen et al., 2016, "Training Deep Nets with Sublinear Memory Cost").

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn(*args)`` keeping none of the tensors
its ops save for backward: a ``saved_tensors_hooks`` pack hook stores only a position. When
the backward first needs one of them, ``fn`` runs again on the same inputs (grad mode on, the
RNG state of the first run restored) and the tensors it saves are kept, each dropped as soon
as the backward has used it. The recomputation stops once every needed tensor is back
(PyTorch's ``early_stop=True``). Gradients are those of ``fn(*args)`` without checkpointing.

The inputs are kept for the recomputation; they and the recomputed tensors are stored through
the ``saved_tensors_hooks`` active around the ``checkpoint`` call (so ``modes.MemTracker``
counts them as saved activations).
"""

from __future__ import annotations

import contextlib
import warnings


__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not save the tensors the first run saved (PyTorch's
    ``torch.utils.checkpoint.CheckpointError``)."""


class _StopRecomputation(Exception):
    pass


def _identity(x):
    return x


class _Frame:
    """One ``checkpoint`` call: its function, inputs and recomputed tensors."""

    def __init__(self, fn, args, kwargs, outer, rng_state, recompute_context):
        import subclass_kit as sk
        self.fn, self.kwargs = fn, kwargs
        self.recompute_context = recompute_context
        self.task = None        # the backward (graph task id) that recomputed last
        self.pack, self.unpack = outer
        # The inputs are saved as the autograd graph saves tensors (PyTorch saves them in a
        # node, _NoopSaveInputs): through the hooks outside, and unpacked with their history,
        # so a recomputation inside another one's (nested checkpoints) differentiates them.
        saved = sk.autograd.graph.SavedTensor
        self.args = [saved(a) if _is_tensor(a) and not a.is_inference() else a for a in args]
        self.rng_state = rng_state
        self.count = 0          # tensors saved by the first run
        self.metas: list = []   # their (shape, dtype, device)
        self.recomputed: dict | None = None    # position -> packed tensor, this backward

    def recompute(self):
        import subclass_kit as sk
        saved_tensors_hooks = sk.autograd.graph.saved_tensors_hooks   # loads the autograd mode
        saved_tensor = sk.autograd.graph.SavedTensor
        args = [a.unpack() if isinstance(a, saved_tensor) else a for a in self.args]
        position = [0]
        changed = []            # (position, metadata) of those whose shape, dtype, device differ

        def pack(x):
            i = position[0]
            position[0] += 1
            if i >= self.count:
                raise CheckpointError(
                    "sk.utils.checkpoint: trying to save more tensors during recomputation "
                    "than during the original forward pass.")
            if _meta(x) != self.metas[i]:
                changed.append((i, _meta(x)))
            x = x.detach() if x.requires_grad else x
            self.recomputed[i] = self.pack(x)
            if position[0] == self.count:
                raise _StopRecomputation
            # kept by the recomputation's own graph too: a backward the function runs
            # (a gradient it computes) unpacks it during the recomputation, as in PyTorch
            return x

        pack.user_hooks = (self.pack, self.unpack)

        saved = sk.get_rng_state() if self.rng_state is not None else None
        try:
            if self.rng_state is not None:
                sk.set_rng_state(self.rng_state)
            with sk.enable_grad(), self.recompute_context, saved_tensors_hooks(pack, _identity):
                self.fn(*args, **self.kwargs)
        except _StopRecomputation:
            pass
        finally:
            if saved is not None:
                sk.set_rng_state(saved)
        if position[0] != self.count:
            raise CheckpointError(
                "sk.utils.checkpoint: A different number of tensors was saved during the original "
                f"forward and recomputation.\nNumber of tensors saved during forward: "
                f"{self.count}\nNumber of tensors saved during recomputation: {position[0]}.")
        if changed:
            def show(m):
                return f"{{'shape': {m[0]!r}, 'dtype': {m[1]!r}, 'device': {m[2]!r}}}"
            raise CheckpointError(
                "sk.utils.checkpoint: Recomputed values for the following tensors have different "
                "metadata than during the forward pass.\n" + "".join(
                    f"tensor at position {i}:\nsaved metadata: {show(self.metas[i])}\n"
                    f"recomputed metadata: {show(m)}\n"
                    for i, m in changed))

    def get(self, i):
        """Saved tensor ``i``, recomputed once per backward (each time outside one); each is
        given once per backward (CheckpointError for a second unpack, as PyTorch)."""
        import subclass_kit as sk
        task = sk.autograd.engine.current_graph_task_id()
        if task != self.task or task == -1:
            self.task, self.recomputed = task, None
        if self.recomputed is None:
            self.recomputed = {}
            self.recompute()
        elif i not in self.recomputed:
            raise CheckpointError(
                "sk.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                "unpacked once. If you are calling ctx.saved_tensors in backward, make sure to "
                "do so only once. Otherwise please open an issue with details on your use case.")
        return self.unpack(self.recomputed.pop(i))


def _meta(x) -> tuple:
    return (x.shape, x.dtype, x.device)


def _is_tensor(x) -> bool:
    import subclass_kit as sk
    return isinstance(x, sk.Tensor)


def noop_context_fn():
    """The default ``context_fn`` of ``checkpoint``: no context around either run."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               preserve_rng_state: bool = True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its saved tensors: they are recomputed in
    the backward (module docstring). Returns what ``function`` returns.

    ``use_reentrant``: only ``False`` (the variant PyTorch recommends) is implemented; None
    warns as PyTorch does and runs the non-reentrant variant (PyTorch's default there is the
    reentrant one: see docs "Differences from PyTorch"). Raises NotImplementedError for
    ``use_reentrant=True``; the recomputation raises ``CheckpointError`` when ``function``
    saves different tensors the second time. ``context_fn()`` returns two context managers:
    the forward runs inside the first, the recomputation inside the second (PyTorch's); one
    that suppresses an exception of the forward makes ``checkpoint`` raise RuntimeError.
    """
    import subclass_kit as sk
    graph = sk.autograd.graph       # the autograd mode, loaded on first use (never at import)

    if use_reentrant is None:
        warnings.warn(
            "sk.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended (and the only variant implemented).",
            stacklevel=2)
    elif use_reentrant:
        raise NotImplementedError("sk.utils.checkpoint: use_reentrant=True is not implemented; "
                                  "pass use_reentrant=False")
    outer = graph.top_saved_tensors_hooks() or (_identity, _identity)
    # inside another checkpoint (its forward or its recomputation), the recomputed tensors go
    # to the hooks outside the outermost one: a checkpoint's own hooks count positions
    outer = getattr(outer[0], "user_hooks", outer)
    forward_context, recompute_context = context_fn()
    frame = _Frame(function, args, kwargs, outer,
                   sk.get_rng_state() if preserve_rng_state else None, recompute_context)

    def pack(x):
        frame.count += 1
        frame.metas.append(_meta(x))
        return frame.count - 1

    pack.user_hooks = outer

    suppressed = True
    with graph.saved_tensors_hooks(pack, frame.get), forward_context:
        out = function(*args, **kwargs)
        suppressed = False
    if suppressed:          # the forward raised and forward_context swallowed the exception
        raise RuntimeError(
            "sk.utils.checkpoint: the forward context provided by context_fn suppressed an "
            "exception raised during the checkpointed forward. This is not supported because "
            "checkpoint cannot return a value for a failed forward.")
    return out


def checkpoint_sequential(functions, segments: int, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list of callables or an ``nn.Sequential``) one after the other on
    ``input``, checkpointing each of the first ``segments - 1`` chunks of
    ``len(functions) // segments`` of them; the rest runs as usual (PyTorch's
    ``checkpoint_sequential``). ``use_reentrant`` and ``kwargs`` (``preserve_rng_state``) go to
    ``checkpoint``."""
    import subclass_kit as sk
    if isinstance(functions, sk.nn.Sequential):
        functions = list(functions.children())
    functions = list(functions)

    def chain(part):
        def run(x):
            for f in part:
                x = f(x)
            return x
        return run

    size = len(functions) // segments
    done = 0
    for start in range(0, size * (segments - 1), size):
        input = checkpoint(chain(functions[start:start + size]), input,
                           use_reentrant=use_reentrant, **kwargs)
        done = start + size
    return chain(functions[done:])(input)
