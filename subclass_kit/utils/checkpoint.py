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

import warnings


__all__ = ["checkpoint", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not save the tensors the first run saved (PyTorch's
    ``torch.utils.checkpoint.CheckpointError``)."""


class _StopRecomputation(Exception):
    pass


def _identity(x):
    return x


class _Frame:
    """One ``checkpoint`` call: its function, inputs and recomputed tensors."""

    def __init__(self, fn, args, kwargs, outer, rng_state):
        import subclass_kit as sk
        self.fn, self.kwargs = fn, kwargs
        self.pack, self.unpack = outer
        # The inputs are saved as the autograd graph saves tensors (PyTorch saves them in a
        # node, _NoopSaveInputs): through the hooks outside, and unpacked with their history,
        # so a recomputation inside another one's (nested checkpoints) differentiates them.
        saved = sk.autograd.graph.SavedTensor
        self.args = [saved(a) if _is_tensor(a) and not a.is_inference() else a for a in args]
        self.rng_state = rng_state
        self.count = 0          # tensors saved by the first run
        self.recomputed: dict = {}      # position -> packed tensor

    def recompute(self):
        import subclass_kit as sk
        saved_tensors_hooks = sk.autograd.graph.saved_tensors_hooks   # loads the autograd mode
        saved_tensor = sk.autograd.graph.SavedTensor
        args = [a.unpack() if isinstance(a, saved_tensor) else a for a in self.args]
        position = [0]

        def pack(x):
            i = position[0]
            position[0] += 1
            if i >= self.count:
                raise CheckpointError(
                    "sk.utils.checkpoint: trying to save more tensors during recomputation "
                    "than during the original forward pass.")
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
            with saved_tensors_hooks(pack, _identity), sk.enable_grad():
                self.fn(*args, **self.kwargs)
        except _StopRecomputation:
            pass
        finally:
            if saved is not None:
                sk.set_rng_state(saved)
        if position[0] != self.count:
            raise CheckpointError(
                "sk.utils.checkpoint: recomputation saved fewer tensors than the original "
                f"forward pass ({position[0]} instead of {self.count}): the function must run "
                "the same ops when called again.")

    def get(self, i):
        if i not in self.recomputed:
            self.recompute()
        return self.unpack(self.recomputed.pop(i))


def _is_tensor(x) -> bool:
    import subclass_kit as sk
    return isinstance(x, sk.Tensor)


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state: bool = True,
               **kwargs):
    """``function(*args, **kwargs)`` without keeping its saved tensors: they are recomputed in
    the backward (module docstring). Returns what ``function`` returns.

    ``use_reentrant``: only ``False`` (the variant PyTorch recommends) is implemented; None
    warns as PyTorch does and runs the non-reentrant variant (PyTorch's default there is the
    reentrant one: see docs "Differences from PyTorch"). Raises NotImplementedError for
    ``use_reentrant=True``; the recomputation raises ``CheckpointError`` when ``function``
    saves different tensors the second time.
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
    frame = _Frame(function, args, kwargs, outer,
                   sk.get_rng_state() if preserve_rng_state else None)

    def pack(_x):
        frame.count += 1
        return frame.count - 1

    pack.user_hooks = outer

    with graph.saved_tensors_hooks(pack, frame.get):
        return function(*args, **kwargs)
