"""``sk.nn.Module``: PyTorch's ``torch.nn.Module`` (parameters, buffers, submodules, state dicts).

A module keeps three ordered dicts, as PyTorch's does: ``_parameters`` (``Parameter`` or None),
``_buffers`` (tensors or None; names in ``_non_persistent_buffers_set`` stay out of the state
dict) and ``_modules``. ``__setattr__`` files a value by its type, ``__getattr__`` looks the three
up; the iterators walk them in definition order and report a tensor reachable twice (tied
weights) once, under its first name. ``state_dict`` keys are PyTorch's (``"layers.0.weight"``),
and ``load_state_dict`` raises PyTorch's errors for missing or unexpected keys and shape
mismatches.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Callable, Iterator

from ..api.creation import empty as _empty
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import hooks as _hooks
from .hooks import (ModuleHooks, RemovableHandle, register_module_backward_hook,  # noqa: F401
                    register_module_forward_hook, register_module_forward_pre_hook,
                    register_module_full_backward_hook, register_module_full_backward_pre_hook)
from .parameter import Parameter

__all__ = ["Module", "RemovableHandle", "register_module_forward_hook",
           "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_backward_hook"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns (PyTorch's ``_IncompatibleKeys``, same repr)."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(value) -> str:
    """PyTorch's ``torch.typename`` in our spelling: ``sk.FloatTensor`` for a float32 tensor."""
    if isinstance(value, Tensor):
        return f"sk.{value.dtype.legacy_name}"
    return type(value).__name__


def _addindent(s: str, spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module(ModuleHooks):
    """Base class of all modules (PyTorch's ``nn.Module``): assign ``Parameter``s, buffers
    (``register_buffer``) and submodules as attributes in ``__init__`` after calling
    ``super().__init__()``, and define ``forward``; call the module to run it with its hooks.
    """

    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected argument; "
                            "Module.__init__() takes no arguments")
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", {})
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_backward_pre_hooks", OrderedDict())
        set_(self, "_backward_hooks", OrderedDict())
        set_(self, "_is_full_backward_hook", None)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    # -- calling (the hooks: hooks.py) ----------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _hooks._global_forward_pre_hooks
                or _hooks._global_forward_hooks or _hooks._global_backward_hooks
                or _hooks._global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return _hooks._call_hooked(self, args, kwargs)

    # -- attributes -------------------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if not isinstance(value, (Tensor, Module)) and name not in (params or ()) and name \
                not in (d.get("_modules") or ()) and name not in (d.get("_buffers") or ()):
            object.__setattr__(self, name, value)       # the common case: no store involved
        elif isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, "_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(sk.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, "_modules")
            d["_modules"][name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(sk.nn.Module or None expected)")
            d["_modules"][name] = value
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(sk.Tensor or None expected)")
            d["_buffers"][name] = value
        elif isinstance(value, Tensor) and hasattr(value, "_buffer_persistent"):
            self.register_buffer(name, value, persistent=value._buffer_persistent)
        else:
            object.__setattr__(self, name, value)

    def _drop(self, name: str, keep: str) -> None:
        d = self.__dict__   # the slot in ``keep`` stays: a reassigned name keeps its place
        d.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                d[store].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if name in d[store]:
                del d[store][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    def _check_new_name(self, kind: str, name, ok_store: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        d = self.__dict__     # hasattr(self, name) minus a costly failing __getattr__ per name:
        taken = hasattr(self, name) if hasattr(type(self), name) else name in d or any(
            name in d[store] for store in ("_parameters", "_buffers", "_modules"))
        if taken and name not in d[ok_store]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` as parameter ``name`` (None leaves the slot empty). Raises KeyError for
        a bad or taken name, TypeError for a non-Parameter, ValueError for a non-leaf."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_new_name("parameter", name, "_parameters")
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_typename(param)}' object to parameter "
                                f"'{name}' (sk.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(
                    f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                    f"must be created explicitly. To express '{name}' as a function of another "
                    "Tensor, compute the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: module state that is not a parameter (running statistics, masks).
        ``persistent=False`` keeps it out of ``state_dict``. Errors as ``register_parameter``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_new_name("buffer", name, "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module (PyTorch's ``add_module`` / ``register_module``)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_new_name("module", name, "_modules")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` (``""`` is self). Raises AttributeError."""
        mod = self
        for item in target.split(".") if target else ():
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    # -- iterators --------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator:
        """``(name, module)`` for self and every descendant, depth first in definition order;
        a module reachable twice is yielded once unless ``remove_duplicate=False``."""
        if memo is None:
            memo = set()
        stack = [(prefix, self)]    # depth first, no recursive ``yield from`` (a cost per level)
        while stack:
            prefix, module = stack.pop()
            if remove_duplicate:
                if id(module) in memo:
                    continue
                memo.add(id(module))
            yield prefix, module
            dot = prefix + "." if prefix else ""
            stack.extend(reversed([(dot + n, c) for n, c in module._modules.items()
                                   if c is not None]))

    def modules(self) -> Iterator:
        return (m for _, m in self.named_modules())

    def named_children(self) -> Iterator:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator:
        return (m for _, m in self.named_children())

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for mod_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator:
        """``(dotted name, Parameter)`` pairs, shared parameters once (PyTorch's order)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator:
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- state dicts ------------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ``OrderedDict`` of parameters and persistent buffers under dotted names
        (detached unless ``keep_vars``), with PyTorch's ``_metadata`` versions."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = {"version": self._version}
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` (in place under ``no_grad``, or by
        assignment with ``assign=True``). Returns ``(missing_keys, unexpected_keys)``; with
        ``strict`` either being non-empty, or any shape mismatch, raises PyTorch's
        ``RuntimeError("Error(s) in loading state_dict for Cls: ...")`` -- after copying what
        matched, as PyTorch does."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list = []
        unexpected: list = []
        errors: list = []
        for prefix, module in self.named_modules(remove_duplicate=False):
            # Keys are always collected (PyTorch passes strict=True here); ``strict`` only
            # decides whether they raise.
            module._load_from_state_dict(state_dict, prefix + "." if prefix else "", True,
                                         assign, missing, unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(self, state_dict, prefix, strict, assign, missing, unexpected,
                              errors) -> None:
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected '
                              "sk.Tensor or Tensor-like object from checkpoint but received "
                              f"{type(value)}")
                continue
            if param.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
                value = value[0]
            if value.shape != param.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{value.shape} from checkpoint, the shape in current model is "
                              f"{param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter) and not isinstance(value, Parameter):
                            value = Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as ex:  # noqa: BLE001 -- reported as PyTorch reports it
                errors.append(f'While copying the parameter named "{key}", whose dimensions '
                              f"in the model are {param.size()} and whose dimensions in the "
                              f"checkpoint are {value.size()}, an exception occurred : "
                              f"{ex.args}.")
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    first = key[len(prefix):].split(".", 1)[0]
                    if first not in self._modules and first not in local:
                        unexpected.append(key)

    # -- modes and conversions --------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (default) or to zeros in place."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn: Callable) -> "Module":
        """Call ``fn`` on every submodule (children first), then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable) -> "Module":
        for module in self.children():
            module._apply(fn)
        for name, p in self._parameters.items():
            if p is None:
                continue
            with no_grad():
                new = fn(p)
            if new.device == p.device and (type(new) is Tensor or (
                    type(new) is type(p) and not new._storage._dataless)):
                p.data = new            # same object, as PyTorch's set_data path
                if p.grad is not None:
                    p.grad.data = fn(p.grad)
            else:
                param = Parameter(new, p.requires_grad)
                if p.grad is not None:
                    param.grad = fn(p.grad)
                self._parameters[name] = param
        for name, b in self._buffers.items():
            if b is not None:
                self._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """``to(device)``, ``to(dtype)``, ``to(tensor)``, ``to(device, dtype)``: moves
        parameters and buffers; a dtype applies to floating-point ones only. Raises TypeError
        for a non-floating dtype, as PyTorch."""
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t):
            target = dtype if (dtype is not None and t.is_floating_point()) else t.dtype
            return t.to(device=device if device is not None else t.device, dtype=target)
        return self._apply(convert)

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.to("cpu"))

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Move to ``device`` with uninitialized storage (PyTorch's ``to_empty``)."""
        return self._apply(lambda t: _empty(t.shape, dtype=t.dtype, device=device))

    # -- repr -------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def zero_grads(params, set_to_none: bool = True) -> None:
    """``zero_grad`` of modules and optimizers: each ``.grad`` to None, or detached and zeroed
    in place (PyTorch's ``set_to_none=False`` path)."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            if p.grad.grad_fn is not None:
                p.grad.detach_()
            else:
                p.grad.requires_grad_(False)
            p.grad.zero_()


def _parse_to(args, kwargs):
    """PyTorch's ``torch._C._nn._parse_to`` for modules: (device, dtype)."""
    from .._dtype import dtype as _dtype_cls
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dtype_cls):
            dtype = a
        elif isinstance(a, bool):
            continue                    # non_blocking
        else:
            device = a
    return device, dtype
