"""The op registry: ``OpOverload`` objects with parsed schemas, kernel tables, and dispatch.

``sk.ops.<name>`` is the default overload of an op; other overloads hang off it by name
(``sk.ops.add.out``, ``sk.ops.view.dtype``). Custom ops live in namespaces
(``sk.ops.mylib.scale``). Calling an op runs the dispatcher (PyTorch's Python key, then the
backend kernel):

1. composite ops (no kernel of their own) run their decomposition, so every mode sees only the
   primitives they lower to (PyTorch's CompositeImplicitAutograd);
2. dispatch modes, innermost first (Note [Mode runs below itself]), then ``__tensor_dispatch__``
   of subclass arguments (NEP 18 order: subclasses before superclasses, else left to right);
3. the kernel of the arguments' device, from the table ``op._kernels``.

Note [Version counters]
    The version bump and view tracking (PyTorch's ADInplaceOrView layer) happen where an op is
    *resolved*: after the kernel, or after a subclass handler, ran. Modes only forward, so a
    mode that calls ``func`` sees the bump when ``func`` returns. Ops called inside a subclass
    handler run "below" (``tls.below``): they neither bump nor track views, as in PyTorch.
    A mutated argument is bumped exactly once per op, only if the op succeeded; an in-place op
    on an inference tensor outside inference mode raises *before* the kernel runs.
"""

from __future__ import annotations

from typing import NamedTuple

from ._state import flags, tls
from .schema import OpSchema, parse_schema

__all__ = ["OpOverload", "ops", "define", "register_kernel", "get_kernel", "register_decomposition",
           "dispatch_trace", "DispatchEvent", "is_below_autograd"]

# Tensor subclasses that override __tensor_dispatch__ (filled by Tensor.__init_subclass__).
DISPATCH_TYPES: set = set()
# Set by tensor.py: the Tensor class, for error texts and isinstance checks on the slow path.
_tensor_cls = [None]


class OpOverload:
    """One operator overload: callable, with ``name``, ``overload``, ``schema`` and the derived
    schema facts ``is_view``, ``is_inplace``, ``is_out``, ``mutated_args``,
    ``functional_variant`` (an ``OpOverload`` or None). Kernels: ``op._kernels[device_type]``;
    composite ops have ``op.decomposition`` instead.
    """

    def __init__(self, schema: OpSchema, namespace: str = ""):
        self.schema = schema
        self.name = schema.name
        self.overload = schema.overload or "default"
        self.namespace = namespace
        self._kernels: dict = {}
        self.decomposition = None
        self.is_view = schema.is_view
        self.is_inplace = schema.is_inplace
        self.is_out = schema.is_out
        self.mutated_args = schema.mutated_args
        self.is_mutable = schema.is_mutable
        self.tags: set = set()
        # Where to find mutated tensors: positional index or keyword name.
        self._mutated = tuple((i, a.name) for i, a in enumerate(schema.arguments) if a.is_write)
        self._list_positions = tuple(i for i, a in enumerate(schema.arguments)
                                     if a.is_tensor_list)
        self._has_lists = bool(self._list_positions)
        first = None
        for i, a in enumerate(schema.arguments):
            if a.is_tensor or a.is_tensor_list:
                first = i
                break
        self._device_arg = first
        self._view_input = schema.view_pairs[0][0] if schema.view_pairs else None
        self._self_only = (len(self._mutated) == 1 and self._mutated[0][0] == 0
                           and schema.arguments[0].is_tensor)
        self._view_multi = schema.is_multi_output_view
        # Optional predicate over the call's arguments: bump mutated args only when it holds
        # (``resize_`` bumps only when the size changes, SEMANTICS.md §2.2).
        self.bump_if = None
        # Custom ops (sk.library): their kernels may call other ops, so they run "below"
        # (Note [Version counters]) and the dispatcher tracks their view outputs.
        self._custom = False
        # Forward name printed by view+in-place errors ("Output 0 of Unbind ...").
        self._view_name = None
        if self.is_view and schema.base_name not in ("detach", "lift_fresh"):
            from .inplace_checks import forward_name
            self._view_name = forward_name(schema.base_name)

    # -- naming -----------------------------------------------------------------------------
    @property
    def qualified_name(self) -> str:
        return self.schema.qualified_name

    def __repr__(self):
        ns = self.namespace or "sk.ops"
        return f"{ns}.{self.schema.base_name}.{self.overload}" if self.namespace else \
            f"sk.ops.{self.name}.{self.overload}"

    __str__ = __repr__

    @property
    def __name__(self):
        return f"{self.schema.base_name}.{self.overload}"

    @property
    def functional_variant(self):
        target = self.schema.functional_variant
        if target is None:
            return None
        name, _, overload = target.partition(".")
        packet = _lookup(name)
        if packet is None:
            return None
        if overload and overload in packet._overloads:
            return packet._overloads[overload]
        # out= overloads name only the op: pick the overload taking the same other arguments
        # (``div.Tensor_mode_out`` -> ``div.Tensor_mode``, not ``div.Tensor``).
        own = [(a.name, a.type) for a in self.schema.arguments if not a.is_write]
        fallback = None
        for op in packet._overloads.values():
            if not op.is_mutable:
                if [(a.name, a.type) for a in op.schema.arguments] == own:
                    return op
                fallback = fallback or op
        return fallback

    @property
    def default(self):
        return self._overloads.get("default", self)

    def overloads(self) -> list:
        return list(self._overloads)

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self.decomposition is not None:
            return self.decomposition(*args, **kwargs)
        if tls.dispatch_modes or tls.trace is not None:
            return dispatch(self, args, kwargs)
        for a in args:
            if type(a) in DISPATCH_TYPES:
                return dispatch(self, args, kwargs)
        if kwargs:
            for a in kwargs.values():
                if type(a) in DISPATCH_TYPES:
                    return dispatch(self, args, kwargs)
        if self._has_lists and _overloaded_types(self, args, kwargs):
            return dispatch(self, args, kwargs)
        return self._resolve_kernel(args, kwargs)

    def _device_type(self, args, kwargs) -> str:
        i = self._device_arg
        if i is not None:
            a = args[i] if i < len(args) else kwargs.get(self.schema.arguments[i].name)
            if isinstance(a, (list, tuple)):
                a = a[0] if a else None
            if a is not None and hasattr(a, "_storage"):
                return a._storage.device.type
        for a in args:
            if hasattr(a, "_storage"):
                return a._storage.device.type
            if isinstance(a, (list, tuple)) and a and hasattr(a[0], "_storage"):
                return a[0]._storage.device.type
        dev = kwargs.get("device")
        if dev is None:
            return "cpu"
        return dev if isinstance(dev, str) and ":" not in dev else _device_type_of(dev)

    def _find_kernel(self, args, kwargs):
        device = self._device_type(args, kwargs)
        kernel = self._kernels.get(device)
        if kernel is None:
            raise _missing_kernel(self, device)
        return kernel

    def _resolve_kernel(self, args, kwargs):
        """Run the kernel, with the version bump of Note [Version counters]."""
        try:
            kernel = self._kernels[args[self._device_arg]._storage.device.type]
        except (AttributeError, IndexError, TypeError, KeyError):
            kernel = self._find_kernel(args, kwargs)
        if self._custom:
            return _run_below(self, kernel, args, kwargs)
        if not self._mutated:
            if self._view_name is None:
                return kernel(*args, **kwargs)
            out = kernel(*args, **kwargs)
            _record_view_op(self, out)
            return out
        if tls.below or (self.bump_if is not None and not self.bump_if(*args, **kwargs)):
            return kernel(*args, **kwargs)
        if self._self_only and args:
            # The common in-place case, inlined: one mutated tensor, ``self``.
            self_arg = args[0]
            vc = self_arg._vc
            if vc is None and not tls.inference:
                raise RuntimeError(_INFERENCE_INPLACE)
            if flags.requires_grad_seen and tls.grad_enabled:
                check_inplace(self, (self_arg,), args, kwargs)
            out = kernel(*args, **kwargs)
            if vc is not None:
                vc[0] += 1
            return out
        mutated = self._mutated_tensors(args, kwargs)
        _check_inference_write(self, mutated, args, kwargs)
        out = kernel(*args, **kwargs)
        _bump(mutated)
        return out

    def _mutated_tensors(self, args, kwargs) -> list:
        found = []
        for i, name in self._mutated:
            t = args[i] if i < len(args) else kwargs.get(name)
            if t is None:
                continue
            if isinstance(t, (list, tuple)):
                found.extend(t)
            else:
                found.append(t)
        return found


def _run_below(op, kernel, args, kwargs):
    """Run a handler or custom kernel below the version/view layer, then do that layer's work
    for it: bump mutated arguments once and track view outputs (Note [Version counters])."""
    below = tls.below
    mutated = op._mutated_tensors(args, kwargs) if op._mutated else ()
    if mutated and op.bump_if is not None and not op.bump_if(*args, **kwargs):
        mutated = ()
    if mutated and not below:
        _check_inference_write(op, mutated, args, kwargs)
    tls.below = True
    try:
        res = kernel(*args, **kwargs)
    finally:
        tls.below = below
    if res is not NotImplemented and not below:
        if mutated:
            _bump(mutated)
        if op.is_view:
            _track_view_outputs(op, args, kwargs, res)
            if op._view_name is not None:
                _record_view_op(op, res)
    return res


def _device_type_of(dev) -> str:
    return getattr(dev, "type", None) or str(dev).split(":")[0]


def _missing_kernel(op, device):
    if device == "meta":
        return NotImplementedError(
            f"{op.name}: attempted to run this operator with Meta tensors, but there was no fake "
            "impl or Meta kernel registered.")
    return NotImplementedError(f"{op.name}: no kernel registered for device '{device}'")


def check_inplace(op, mutated, args, kwargs):
    from .inplace_checks import check_inplace as check
    global check_inplace
    check_inplace = check
    return check(op, mutated, args, kwargs)


_INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")


def _check_inference_write(op, mutated, args=(), kwargs=None):
    """Checks before a mutating kernel runs: inference tensors outside inference mode, then the
    autograd admission rules for views and leaves (``inplace_checks.check_inplace``)."""
    if not tls.inference:
        for t in mutated:
            if t._vc is None:
                raise RuntimeError(_INFERENCE_INPLACE)
    if flags.requires_grad_seen and tls.grad_enabled:
        check_inplace(op, mutated, args, kwargs)


def _record_view_op(op, out):
    if isinstance(out, (list, tuple)):
        for i, o in enumerate(out):
            if o._base is not None:
                o._view_op = (op._view_name, i)
    elif out._base is not None:
        out._view_op = (op._view_name, 0)


def _bump(mutated):
    """+1 on each distinct version counter among ``mutated`` (aliases share one counter)."""
    seen = []
    for t in mutated:
        vc = t._vc
        if vc is not None and not any(vc is s for s in seen):
            vc[0] += 1
            seen.append(vc)


# -- the slow path: modes and subclasses -------------------------------------------------------
def _overloaded_types(op, args, kwargs) -> tuple:
    """Types of arguments overriding __tensor_dispatch__, each once, subclasses first."""
    found = []
    for a in _iter_tensors(args, kwargs):
        t = type(a)
        if t in DISPATCH_TYPES and t not in found:
            found.append(t)
    return _order_types(found)


def _iter_tensors(args, kwargs):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, (list, tuple)):
                yield from a
            else:
                yield a


def _order_types(found: list) -> tuple:
    """NEP 18: a subclass goes before its parent class; otherwise left to right."""
    ordered = []
    for t in found:
        for i, seen in enumerate(ordered):
            if issubclass(t, seen):
                ordered.insert(i, t)
                break
        else:
            ordered.append(t)
    return tuple(ordered)


def _handler_name(h) -> str:
    if isinstance(h, type):
        return f"tensor subclass {h!r}"
    return f"mode object {h!r}"


def dispatch(op, args, kwargs):
    """The slow path of ``OpOverload.__call__``: modes, then subclass handlers, then kernel."""
    kwargs = kwargs or {}
    trace = tls.trace
    if tls.no_dispatch:
        return _kernel(op, args, kwargs, trace)
    types = _overloaded_types(op, args, kwargs)
    stack = tls.dispatch_modes
    tried = []
    for i in range(len(stack) - 1, -1, -1):
        mode = stack[i]
        tls.dispatch_modes = stack[:i]
        if trace is not None:
            trace(DispatchEvent("mode", op, mode, tls.depth))
        tls.depth += 1
        try:
            res = mode.__tensor_dispatch__(op, types, args, kwargs)
        finally:
            tls.dispatch_modes = stack
            tls.depth -= 1
        if res is not NotImplemented:
            return res
        if trace is not None:
            trace(DispatchEvent("declined", op, mode, tls.depth))
        tried.append(mode)
    if not types:
        if tried:
            raise _all_declined(op, tried, "__tensor_dispatch__")
        return _kernel(op, args, kwargs, trace)
    for t in types:
        handler = _SubclassHandler(t, types)
        handler.op = op
        if trace is not None:
            trace(DispatchEvent("subclass", op, t, tls.depth))
        tls.depth += 1
        try:
            res = _run_below(op, handler, args, kwargs)
        finally:
            tls.depth -= 1
        if res is not NotImplemented:
            return res
        if trace is not None:
            trace(DispatchEvent("declined", op, t, tls.depth))
        tried.append(t)
    raise _all_declined(op, tried, "__tensor_dispatch__")


class DispatchEvent(NamedTuple):
    """One step of dispatching an op, reported to ``sk.dispatch_trace`` callbacks.

    ``kind``: "mode" (a mode's handler is called), "subclass" (a subclass's
    ``__tensor_dispatch__`` is called), "declined" (that handler returned NotImplemented),
    "kernel" (the kernel of device ``handler`` runs). ``depth``: nesting of handlers.
    """

    kind: str
    op: object
    handler: object
    depth: int


def _kernel(op, args, kwargs, trace):
    if trace is not None:
        trace(DispatchEvent("kernel", op, op._device_type(args, kwargs), tls.depth))
    return op._resolve_kernel(args, kwargs)


class dispatch_trace:
    """Report every dispatch step of every op to ``callback(DispatchEvent)`` while active
    (a dispatch trace; PyTorch has this only in debug builds). All ops take the slow path."""

    def __init__(self, callback):
        self.callback = callback

    def __enter__(self):
        self._prev = tls.trace
        tls.trace = self.callback
        return self

    def __exit__(self, *exc):
        tls.trace = self._prev
        return False


def is_below_autograd() -> bool:
    """True while ops run below the version/view layer (inside a subclass ``__tensor_dispatch__``
    or a custom kernel): they neither bump versions nor track views (Note [Version counters])."""
    return tls.below


class _SubclassHandler:
    """Calls ``t.__tensor_dispatch__`` with the kernel calling convention of ``_run_below``."""

    __slots__ = ("op", "t", "types")

    def __init__(self, t, types):
        self.t = t
        self.types = types

    def __call__(self, *args, **kwargs):
        depth = tls.handler_depth
        n = depth.get(self.t, 0)
        if n >= _MAX_HANDLER_DEPTH:
            raise RuntimeError(
                f"{self.t.__name__}.__tensor_dispatch__ re-entered itself {n} times (last op: "
                f"{self.op!r}): the handler calls ops on {self.t.__name__} arguments, which "
                "dispatch back to the same handler forever. Unwrap the inner tensors first "
                "(sk.pytree.tree_map_only) or run the op under sk.no_dispatch().")
        depth[self.t] = n + 1
        try:
            return self.t.__tensor_dispatch__(self.op, self.types, args, kwargs)
        finally:
            depth[self.t] = n


# Nesting of one subclass's handler deeper than this is taken as runaway recursion.
_MAX_HANDLER_DEPTH = 64


def _all_declined(op, tried, protocol):
    lines = "\n".join(f"  - {_handler_name(h)}" for h in tried)
    return TypeError(f"Multiple dispatch failed for '{op!r}'; all {protocol} handlers returned "
                     f"NotImplemented:\n\n{lines}\n")


_VIEW_RETURNED_INPUT = (
    "View operation returned a tensor that is the same as the input base tensor.  This is no "
    "longer allowed; you must explicitly create a new tensor (e.g., using .detach()). As a user, "
    "you could have made a mistake implementing __tensor_dispatch__ or a Python operator "
    "decomposition or meta registration; if that's not the case, please report a bug to "
    "subclass_kit or the backend you are using.")


def _track_view_outputs(op, args, kwargs, res):
    """Record outputs of a view op resolved by a subclass handler as views of its input."""
    i = op._view_input
    base = args[i] if i < len(args) else kwargs.get(op.schema.arguments[i].name)
    outs = res if isinstance(res, (list, tuple)) else (res,)
    for out in outs:
        if out is base:
            raise RuntimeError(_VIEW_RETURNED_INPUT)
        if hasattr(out, "_storage") and hasattr(base, "_storage"):
            if "not_a_view_for_autograd" in op.tags:
                # detach: shares the version counter, but is no view (no _base), as on cpu
                if not base._inference:
                    out._vc = base._vc
                continue
            out._set_view_of(base, multi_output=op._view_multi)


# -- registration --------------------------------------------------------------------------------
class _Namespace:
    """``sk.ops`` and custom-op namespaces: attribute access gives the default overload."""

    def __init__(self, name: str):
        self._name = name
        self._packets: dict = {}

    def __getattr__(self, attr):
        # Only reached for names that are not ops: registered ops are instance attributes
        # (``_publish``), so ``sk.ops.add`` costs a plain attribute lookup on the hot path.
        raise AttributeError(f"'{self._name}' has no op named '{attr}'")

    def _publish(self, name, packet):
        self._packets[name] = packet
        self.__dict__[name] = packet

    def __dir__(self):
        return list(self._packets)

    def __iter__(self):
        """Every overload of every op in this namespace (not sub-namespaces)."""
        for packet in list(self._packets.values()):
            if isinstance(packet, OpOverload):
                yield from packet._overloads.values()

    def __repr__(self):
        return f"<op namespace '{self._name}'>"


ops = _Namespace("sk.ops")


def _lookup(name: str):
    if "::" in name:
        ns, _, base = name.partition("::")
        space = ops._packets.get(ns)
        return None if space is None else space._packets.get(base)
    return ops._packets.get(name)


def define(schema_text: str) -> OpOverload:
    """Register an op from its schema string; returns the new ``OpOverload``.

    A name with ``ns::`` goes into ``sk.ops.ns``. Raises ValueError for a malformed schema and
    RuntimeError when the overload already exists.
    """
    schema = parse_schema(schema_text)
    if "::" in schema.name:
        ns_name, _, base = schema.name.partition("::")
        space = ops._packets.get(ns_name)
        if space is None:
            space = _Namespace(f"sk.ops.{ns_name}")
            ops._publish(ns_name, space)
        namespace = f"sk.ops.{ns_name}"
    else:
        space, base, namespace = ops, schema.name, ""
    op = OpOverload(schema, namespace)
    packet = space._packets.get(base)
    if packet is None:
        op._overloads = {op.overload: op}
        space._publish(base, op)
    else:
        if op.overload in packet._overloads:
            raise RuntimeError(f"op {schema.qualified_name} is already defined")
        op._overloads = packet._overloads
        packet._overloads[op.overload] = op
        if op.overload == "default":
            # The default overload becomes the packet entry; keep the others reachable.
            space._publish(base, op)
            packet = op
    for ov_name, ov in op._overloads.items():
        for holder in op._overloads.values():
            if ov_name not in holder.__dict__ and not hasattr(type(holder), ov_name):
                holder.__dict__[ov_name] = ov
    return op


def register_kernel(op: OpOverload, device: str):
    """Decorator: ``@register_kernel(sk.ops.add, "cpu")`` registers a kernel for a device."""
    def deco(fn):
        op._kernels[device] = fn
        return fn
    return deco


def register_decomposition(op: OpOverload):
    """Decorator: make ``op`` composite, running ``fn`` (written with ``sk.ops``) when called."""
    def deco(fn):
        op.decomposition = fn
        return fn
    return deco


def get_kernel(op: OpOverload, device: str):
    """The kernel of ``op`` for ``device`` ("cpu" or "meta"). Raises NotImplementedError."""
    kernel = op._kernels.get(device)
    if kernel is None:
        raise _missing_kernel(op, device)
    return kernel


def _define_builtin_ops():
    from . import op_table
    for text in op_table.ALL + op_table.derived_schemas():
        op = define(text)
        if text in op_table.INPLACE_VIEWS:
            op.tags.add("inplace_view")
    # Schema exceptions that the debug-assert mode and functionalization read (PyTorch keeps
    # the same lists in its autograd codegen, SEMANTICS.md §8).
    for op in ops.set_._overloads.values():
        op.tags.add("swaps_storage")
    ops._unsafe_view.tags.add("unsafe_alias")
    ops.lift_fresh.tags.add("returns_input")
    ops.detach.tags.add("not_a_view_for_autograd")


_define_builtin_ops()
