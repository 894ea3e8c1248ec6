"""Which ``sk.nn`` modules are running now, in the forward and in their backward.

What it is
    ``ModuleTracker`` is a context manager; while it is entered, ``tracker.parents`` is the set
    of the fully qualified names of the modules whose forward (or backward) is running, always
    with ``"Global"``. A module's name is its root's class name followed by the attribute path
    (``"MLP"``, ``"MLP.fc1"``, ``"GPT.layers.0.attn"``), given the first time the root runs.

Which PyTorch feature it mirrors
    ``torch.utils.module_tracker.ModuleTracker`` (what ``FlopCounterMode`` attributes ops
    with): global forward pre/post hooks (``sk.nn.module.register_module_forward_pre_hook``)
    add and remove the name; for the backward, a gradient hook on the module's outputs adds
    the name back when their gradients are ready and one on its inputs that require grad
    removes it when theirs are; when the backward finishes, ``parents`` returns to
    ``{"Global"}`` (an engine callback). As in PyTorch, a module whose inputs do not require
    grad (the first layer) stays in ``parents`` until the end of the backward.
"""

from __future__ import annotations

import weakref

import subclass_kit as sk

__all__ = ["ModuleTracker"]


def _grad_tensors(value) -> list:
    # PyTorch's tracker flattens the arguments the same way (``tree_flatten``)
    return [t for t in sk.pytree.tree_leaves(value)
            if isinstance(t, sk.Tensor) and t.requires_grad]


def _engine():
    return sk.autograd.engine


class _MultiGradHook:
    """``fn()`` once per backward, when the gradients of all ``tensors`` have been computed
    (PyTorch's ``register_multi_grad_hook(mode="all")``; a tensor that gets no gradient in
    this backward keeps it from firing)."""

    def __init__(self, tensors, fn):
        self.fn = fn
        self.need = len(tensors)
        self.seen: dict = {}           # graph task id -> gradients seen
        self.handles = [t.register_hook(self._hook) for t in tensors]

    def _hook(self, grad):
        task = _engine().current_graph_task_id()
        count = self.seen.get(task, 0) + 1
        if count == self.need:
            self.seen.pop(task, None)
            self.fn()
        else:
            self.seen[task] = count

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


class ModuleTracker:
    """Track the running modules (see the module docstring). ``parents``: the set of names;
    ``is_bw``: whether a backward is running. Not reentrant."""

    def __init__(self):
        self.parents = {"Global"}
        self._known: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen: weakref.WeakSet = weakref.WeakSet()
        self._hooks: list = []
        self._callback_task = None
        self._handles = ()

    @property
    def is_bw(self) -> bool:
        return _engine().current_graph_task_id() != -1

    def _name(self, mod) -> str:
        name = self._known.get(mod)
        if name is None:
            name = self._known[mod] = type(mod).__name__
        if mod not in self._seen:
            self._seen.add(mod)
            for child_name, child in mod.named_children():
                self._known[child] = f"{name}.{child_name}"
                self._name(child)
        return name

    def _reset_after_backward(self) -> None:
        # once per backward: the module stack is empty again when it ends
        task = _engine().current_graph_task_id()
        if self._callback_task == task:
            return
        self._callback_task = task

        def reset():
            self.parents = {"Global"}
            self._callback_task = None
        _engine().queue_callback(reset)

    def _enter(self, name: str, is_bw: bool):
        def fn():
            if is_bw:
                self._reset_after_backward()
            self.parents.add(name)
        return fn

    def _leave(self, name: str):
        def fn():
            self.parents.discard(name)
        return fn

    def _pre_hook(self, mod, args):
        name = self._name(mod)
        self.parents.add(name)
        tensors = _grad_tensors(args)
        if tensors:
            self._hooks.append(_MultiGradHook(tensors, self._leave(name)))

    def _post_hook(self, mod, args, output):
        name = self._name(mod)
        self.parents.discard(name)
        tensors = _grad_tensors(output)
        if tensors:
            self._hooks.append(_MultiGradHook(tensors, self._enter(name, True)))

    def __enter__(self):
        module = sk.nn.module
        self._handles = (module.register_module_forward_pre_hook(self._pre_hook),
                         module.register_module_forward_hook(self._post_hook))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = ()
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
