"""Module hooks: PyTorch's ``nn.Module`` hook API and ``torch.utils.hooks.BackwardHook``.

``ModuleHooks`` is the part of ``Module`` that registers and runs hooks: forward pre-hooks and
forward hooks, the full backward hooks and backward pre-hooks, and the legacy
``register_backward_hook``; the ``register_module_*`` functions add hooks that run for every
module, before the module's own.

Full backward hooks follow PyTorch's design: an identity ``autograd.Function``
(``BackwardHookFunction``, its node ``BackwardHookFunctionBackward``) is applied to the
module's tensor arguments and to its tensor outputs. A post-hook on the outputs' node
collects ``grad_output`` (and runs the backward pre-hooks, which may replace it); a post-hook
on the inputs' node runs the backward hooks with ``grad_input`` (None where an argument is
not a tensor or needs no gradient), which may replace it. So ``forward`` receives, and the
caller gets back, views of the tensors, and modifying those views in place raises
(autograd's rule for views made in a custom Function).
"""

from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict
from typing import Callable

from ..grad_mode import is_grad_enabled
from ..tensor import Tensor

__all__ = ["RemovableHandle", "BackwardHook", "ModuleHooks",
           "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook"]

# Hooks run around the forward of every module (PyTorch's global module hooks, what
# ``torch.utils.module_tracker`` and ``FlopCounterMode`` use): id -> (hook, with_kwargs).
_global_forward_pre_hooks: dict = OrderedDict()
_global_forward_hooks: dict = OrderedDict()
# id -> hook; whether the global backward hooks are full ones (None: neither kind yet)
_global_backward_pre_hooks: dict = OrderedDict()
_global_backward_hooks: dict = OrderedDict()
_global_is_full_backward_hook: bool | None = None

_MIXED = ("Cannot use both regular backward hooks and full backward hooks {}. Please use only "
          "one of them.")


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook (PyTorch's
    ``torch.utils.hooks.RemovableHandle``). Usable as a context manager."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _register_hook(hooks: dict, hook, prepend: bool, extra=None, plain=False) -> RemovableHandle:
    """File ``hook`` (as ``(hook, extra)``, or alone if ``plain``) under a new handle's id,
    first if ``prepend``."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook if plain else (hook, extra)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, args)`` runs before the forward of every module, before the module's own
    pre-hooks; a non-None result replaces the arguments (PyTorch's
    ``torch.nn.modules.module.register_module_forward_pre_hook``). ``remove()`` the handle."""
    return _register_hook(_global_forward_pre_hooks, hook, False, False)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False) -> RemovableHandle:
    """``hook(module, args, output)`` (or ``(module, args, kwargs, output)`` with
    ``with_kwargs``) runs after the forward of every module, before the module's own forward
    hooks; a non-None result replaces the output (PyTorch's
    ``torch.nn.modules.module.register_module_forward_hook``)."""
    return _register_hook(_global_forward_hooks, hook, False, with_kwargs)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_output)`` for every module, before the module's own backward
    pre-hooks (PyTorch's ``register_module_full_backward_pre_hook``; see
    ``Module.register_full_backward_pre_hook``)."""
    return _register_hook(_global_backward_pre_hooks, hook, False, plain=True)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_input, grad_output)`` for every module, before the module's own
    backward hooks (PyTorch's ``register_module_full_backward_hook``; see
    ``Module.register_full_backward_hook``). RuntimeError if a global legacy backward hook
    was registered (as PyTorch)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError(_MIXED.format("as a global Module hook"))
    _global_is_full_backward_hook = True
    return _register_hook(_global_backward_hooks, hook, False, plain=True)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """The legacy global backward hook (PyTorch's deprecated ``register_module_backward_hook``;
    see ``Module.register_backward_hook``). RuntimeError if a global full backward hook was
    registered (as PyTorch)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError(_MIXED.format("as a global Module hook"))
    _global_is_full_backward_hook = False
    return _register_hook(_global_backward_hooks, hook, False, plain=True)


_HOOK_FUNCTION = []     # [BackwardHookFunction], made on first use (sk.autograd is a mode)


def _backward_hook_function():
    if not _HOOK_FUNCTION:
        from subclass_kit.autograd import Function

        class BackwardHookFunction(Function):
            """Identity on tensors; its node carries a module's backward hooks."""

            @staticmethod
            def forward(ctx, *args):
                ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
                return args

            @staticmethod
            def backward(ctx, *grads):
                return grads
        _HOOK_FUNCTION.append(BackwardHookFunction)
    return _HOOK_FUNCTION[0]


def _pack(indices, values, size) -> tuple:
    """A ``size``-tuple with ``values`` at ``indices`` and None elsewhere."""
    res = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


def _select(grads, idx, slots) -> tuple:
    """The entries at ``idx`` (the tensors) of ``grads``, only those of ``slots`` if given."""
    per_tensor = [grads[i] for i in idx]
    return tuple(per_tensor if slots is None else [per_tensor[k] for k in slots])


class BackwardHook:
    """A module's full backward hooks and backward pre-hooks for one call (PyTorch's
    ``torch.utils.hooks.BackwardHook``): ``setup_input_hook(args)`` and
    ``setup_output_hook(result)`` return the arguments and the result with their tensors
    passed through ``BackwardHookFunction``, whose nodes run the hooks."""

    def __init__(self, module, user_hooks: list, user_pre_hooks: list):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = self.n_inputs = -1
        self.output_tensors_index = self.input_tensors_index = None
        self._output_slots = None

    def _apply_on_tensors(self, on_node, args):
        """``args`` with its tensors through the identity function, and their positions; or
        ``args`` unchanged and None when none requires grad (or grad mode is off).
        ``on_node(node, slots)``: ``slots`` lists the tensors (by rank among them) the node
        has a gradient slot for, None for all of them."""
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        needs = [k for k, t in enumerate(tensors) if t.requires_grad]
        new = _backward_hook_function().apply(*tensors)
        if len(new) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input "
                               "Tensors.")
        nodes = [t.grad_fn for t in new if t.grad_fn is not None
                 and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        if not nodes:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue "
                               "with a code sample to reproduce this.")
        # Our custom Function's node has edges for the tensors requiring grad only (PyTorch's
        # has one per tensor): map between its gradients and one per tensor.
        on_node(nodes[0], None if len(nodes[0].next_functions) == len(tensors) else needs)
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args):
        def on_node(node, slots):
            # PyTorch's node passes a no-grad tensor the zeros its non-differentiable output
            # got (materialised): what its hooks see as that tensor's grad_input
            zeros = {k: (t.shape, t.dtype, t.device) for k, t in enumerate(
                a for a in args if isinstance(a, Tensor)) if slots is not None and k not in slots}
            node.register_hook(lambda grad_input, _: self._input_hook(grad_input, slots, zeros))
        res, self.input_tensors_index = self._apply_on_tensors(on_node, args)
        self.n_inputs = len(args)
        return res

    def _input_hook(self, grad_input, slots, zeros):
        if self.grad_outputs is None:
            return None     # the gradient reached the inputs without passing the outputs
        if slots is not None:
            from ..api.creation import zeros as _zeros
            per_tensor = dict(zip(slots, grad_input))
            grad_input = [per_tensor[k] if k in per_tensor else _zeros(
                zeros[k][0], dtype=zeros[k][1], device=zeros[k][2])
                for k in range(len(self.input_tensors_index))]
        res = _pack(self.input_tensors_index, grad_input, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return _select(res, self.input_tensors_index, slots)

    def _output_hook(self, _, grad_output):
        self.grad_outputs = _pack(self.output_tensors_index, grad_output, self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            new = pre_hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(new)}, but expected "
                                   f"{len(self.grad_outputs)}")
            self.grad_outputs = new
        grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            # no input requires grad: the backward hooks run now, with no grad_input
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to "
                "module outputs since no inputs require gradients. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.",
                stacklevel=5)
            none = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, none, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(g is None for g in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return _select(grad_outputs, self.output_tensors_index, self._output_slots)

    def setup_output_hook(self, result):
        def on_node(node, slots):
            self._output_slots = slots
            node.register_hook(self._output_hook)
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, self.output_tensors_index = self._apply_on_tensors(on_node, args)
        self.n_outputs = len(args)
        return res if is_tuple else res[0]


class _WrappedHook:
    """A legacy backward hook as a node post-hook: ``hook(module, grad_input, grad_output)``,
    the module held weakly (PyTorch's ``_WrappedHook``)."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = weakref.ref(module)

    def __call__(self, grad_input, grad_output):
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, grad_input, grad_output)


def _call_hooked(module, args, kwargs):
    """``module(*args, **kwargs)`` with its hooks and the global ones (PyTorch's
    ``_call_impl``)."""
    full, legacy = module._get_backward_hooks()
    pre_bw = [*_global_backward_pre_hooks.values(), *module._backward_pre_hooks.values()]
    for hook, with_kwargs in [*_global_forward_pre_hooks.values(),
                              *module._forward_pre_hooks.values()]:
        if with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    bw_hook = None
    if full or pre_bw:
        bw_hook = BackwardHook(module, full, pre_bw)
        args = bw_hook.setup_input_hook(args)
    out = module.forward(*args, **kwargs)
    for hook, with_kwargs in [*_global_forward_hooks.values(), *module._forward_hooks.values()]:
        result = hook(module, args, kwargs, out) if with_kwargs else hook(module, args, out)
        if result is not None:
            out = result
    if bw_hook is not None:
        if not isinstance(out, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor "
                          f"or a tuple of Tensors but received {type(out)}", stacklevel=3)
        out = bw_hook.setup_output_hook(out)
    if legacy:
        var = out
        while not isinstance(var, Tensor):
            var = next(v for v in var.values() if isinstance(v, Tensor)) \
                if isinstance(var, dict) else var[0]
        node = var.grad_fn
        if node is not None:
            for hook in legacy:
                node.register_hook(_WrappedHook(hook, module))
            _warn_legacy(args, out, node)
    return out


def _warn_legacy(inputs, result, node) -> None:
    """PyTorch's FutureWarnings for a legacy backward hook that will miss gradients."""
    tail = "Please use register_full_backward_hook to get the documented behavior."
    result = (result,) if isinstance(result, Tensor) else result
    inputs = (inputs,) if isinstance(inputs, Tensor) else inputs
    for what, seq, part in (("return", result, "grad_output"), ("take as input", inputs,
                                                                 "grad_input")):
        if not (isinstance(seq, tuple) and all(isinstance(t, Tensor) for t in seq)):
            warnings.warn(f"Using non-full backward hooks on a Module that does not {what} a "
                          "single Tensor or a tuple of Tensors is deprecated and will be "
                          f"removed in future versions. This hook will be missing some of the "
                          f"{part}. {tail}", FutureWarning, stacklevel=4)
            return
    out_nodes = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_nodes or (len(out_nodes) == 1 and node not in out_nodes):
        warnings.warn("Using a non-full backward hook when outputs are nested in python data "
                      "structure is deprecated and will be removed in future versions. This "
                      "hook will be missing some grad_output.", FutureWarning, stacklevel=4)
    elif len(out_nodes) > 1:
        warnings.warn("Using a non-full backward hook when outputs are generated by different "
                      "autograd Nodes is deprecated and will be removed in future versions. "
                      f"This hook will be missing some grad_output. {tail}", FutureWarning,
                      stacklevel=4)
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != {
            n for n, _ in node.next_functions}:
        warnings.warn("Using a non-full backward hook when the forward contains multiple "
                      "autograd Nodes is deprecated and will be removed in future versions. "
                      f"This hook will be missing some grad_input. {tail}", FutureWarning,
                      stacklevel=4)


class ModuleHooks:
    """The hook methods of ``Module`` (PyTorch's). The hooks live in the module's ordered
    dicts ``_forward_pre_hooks``, ``_forward_hooks`` (id -> (hook, with_kwargs)),
    ``_backward_pre_hooks``, ``_backward_hooks`` (id -> hook) and ``_is_full_backward_hook``
    says which kind ``_backward_hooks`` holds."""

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``(module, args, kwargs)`` with ``with_kwargs``) runs
        before ``forward``; a non-None result replaces the arguments."""
        return _register_hook(self._forward_pre_hooks, hook, prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (or ``(module, args, kwargs, output)``) runs after
        ``forward``; a non-None result replaces the output."""
        return _register_hook(self._forward_hooks, hook, prepend, with_kwargs)

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients of the module's outputs are
        known, before its backward hooks; ``grad_output`` is a tuple with one entry per output
        (None for a non-tensor one); a non-None result (as many entries) replaces it. Global
        pre-hooks run first; ``prepend`` puts this one before the module's others. As PyTorch's
        ``register_full_backward_pre_hook``; RuntimeError (PyTorch's text) for a result of
        another length."""
        return _register_hook(self._backward_pre_hooks, hook, prepend, plain=True)

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the module's
        positional arguments are computed (or, when none requires grad, of its outputs, with a
        warning and all-None ``grad_input``); ``grad_input`` has None for an argument that is not
        a tensor or needs no gradient; a non-None result (as many entries) replaces it. Global
        hooks run first; ``prepend`` puts this one before the module's others. The forward gets,
        and the caller gets back, views of the tensors: modifying them in place raises. As
        PyTorch's ``register_full_backward_hook``. RuntimeError if the module has a legacy
        backward hook, or for a result of another length (PyTorch's texts)."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(_MIXED.format("on a single Module"))
        self._is_full_backward_hook = True
        return _register_hook(self._backward_hooks, hook, prepend, plain=True)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The legacy backward hook (PyTorch's deprecated ``register_backward_hook``):
        ``hook(module, grad_input, grad_output)`` runs as a hook of the node that made the
        module's (first) output, so it sees that node's gradients; FutureWarning when those
        may not be the module's. RuntimeError if the module has a full backward hook."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(_MIXED.format("on a single Module"))
        self._is_full_backward_hook = False
        return _register_hook(self._backward_hooks, hook, False, plain=True)

    def _get_backward_hooks(self) -> tuple:
        """``(full backward hooks, legacy backward hooks)``, the global ones first."""
        full, legacy = [], []
        for is_full, hooks in ((_global_is_full_backward_hook, _global_backward_hooks),
                               (self._is_full_backward_hook, self._backward_hooks)):
            if is_full is not None:
                (full if is_full else legacy).extend(hooks.values())
        return full, legacy
