"""``register_multi_grad_hook`` (PyTorch's ``torch.autograd.graph.register_multi_grad_hook``):
one hook for several tensors, per backward.

- ``mode="all"``: ``fn(grads)`` once the running backward has computed the gradient of every
  one of ``tensors`` it will compute; ``grads`` has one entry per tensor, None for those the
  backward does not reach (their nodes are not run: ``engine.will_execute``).
- ``mode="any"``: ``fn(grad)`` with the first gradient of any of them, once per backward.

Built on tensor hooks (``Tensor.register_hook``), counted per graph task
(``current_graph_task_id``), so concurrent and nested backwards keep their own counts. Returns
a handle whose ``remove()`` removes every hook.
"""

from __future__ import annotations

import threading

__all__ = ["register_multi_grad_hook"]


class _MultiHandle:
    """The handles of the per-tensor hooks: ``remove()`` removes them all."""

    def __init__(self, handles: tuple):
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _node_of(t, grad_accumulator):
    """The node a backward runs for ``t``: a leaf's ``AccumulateGrad``, else its ``grad_fn``;
    AssertionError (PyTorch's) for a tensor with neither."""
    node = grad_accumulator(t) if t.requires_grad and t.grad_fn is None else t.grad_fn
    if node is None:
        raise AssertionError("Expected gradient function to be set")
    return node


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Register ``fn`` on ``tensors`` (a sequence of tensors requiring grad in ``mode="all"``;
    those not requiring grad are skipped in ``"any"``). ValueError for another ``mode``;
    RuntimeError, as ``register_hook``, for a tensor that does not require grad in "all"."""
    if mode not in ("any", "all"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    # (``graph`` re-exports this function: the engine and graph are imported on use)
    from .engine import current_graph_task_id, will_execute
    from .graph import grad_accumulator
    lock = threading.Lock()
    tensors = tuple(tensors)
    if mode == "any":
        fired: dict = {}

        def first_only(grad):
            task = current_graph_task_id()
            with lock:
                done, fired[task] = fired.get(task, False), True
            if not done:
                fn(grad)
        return _MultiHandle(tuple(t.register_hook(first_only) for t in tensors
                                  if t.requires_grad))

    nodes = [_node_of(t, grad_accumulator) for t in tensors]
    counts: dict = {}       # graph task id -> hooks fired in it
    buffers: dict = {}      # graph task id -> gradients so far
    expected: dict = {}     # graph task id -> hooks it will fire

    def hook_for(index):
        def collect(grad):
            task = current_graph_task_id()
            with lock:
                seen = counts.get(task, 0)
                if seen == 0:
                    expected[task] = sum(map(will_execute, nodes))
                    buffers[task] = [None] * len(tensors)
                counts[task] = seen + 1
                buffers[task][index] = grad
                complete = seen + 1 == expected[task]
                if complete:
                    grads = buffers.pop(task)
                    del counts[task], expected[task]
            if complete:
                fn(grads)
        return collect

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))
