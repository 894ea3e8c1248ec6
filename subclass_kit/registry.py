"""The op registry: ``OpOverload`` objects with parsed schemas, kernel tables, and the fast path.

``sk.ops.<name>`` is an ``OpOverloadPacket`` (PyTorch's structure): its overloads hang off it by
name (``sk.ops.add.Tensor``, ``sk.ops.view.dtype``), and calling it runs its default (else
first-defined) overload. Custom ops live in namespaces (``sk.ops.mylib.scale``). Calling an op
binds its arguments to the schema as PyTorch does (``OpOverload._bind``: schema names work as
keywords, bad calls raise RuntimeError), then runs the dispatcher (PyTorch's Python key, then
the backend kernel):

1. composite ops (no kernel of their own) run their decomposition, so every mode sees only the
   primitives they lower to (PyTorch's CompositeImplicitAutograd);
2. dispatch modes, innermost first (Note [Mode runs below itself]), then ``__tensor_dispatch__``
   of subclass arguments (NEP 18 order: subclasses before superclasses, else left to right);
3. the kernel of the arguments' device, from the table ``op._kernels``.

The slow path (modes, subclass handlers) and the version/view layer live in ``dispatch.py``
(Note [Version counters]).
"""

from __future__ import annotations

from ._state import flags, tls
from .dispatch import (DISPATCH_TYPES, _INFERENCE_INPLACE, _bump, _check_inference_write,
                       _overloaded_types, _record_view_op, _run_below, check_inplace, dispatch)
from .packets import OpOverloadPacket, _Namespace, overload_of
from .schema import OpSchema, parse_schema

__all__ = ["OpOverload", "OpOverloadPacket", "ops", "define", "register_kernel", "get_kernel",
           "register_decomposition", "set_autograd_layer", "redispatch_below_autograd",
           "overload_of"]


# Note [Autograd layer]
#     PyTorch runs autograd above the Python key: modes and subclass handlers see the ops
#     autograd forwards (and those its backward runs), never the other way round. Here the
#     autograd engine (``subclass_kit.modes.autograd``) installs one callable with
#     ``set_autograd_layer(layer)``; ``OpOverload.__call__`` hands every op to it, after the
#     decomposition of a composite op (so composites are differentiated through their
#     primitives, PyTorch's CompositeImplicitAutograd) and before modes, handlers and kernels.
#     ``layer(op, args, kwargs)`` records what it needs and runs the op with
#     ``redispatch_below_autograd``, below itself: that op, and every op a mode or handler
#     calls for it, skips the layer. ``op_method``'s direct kernel path (function.py) steps
#     aside while a layer is installed. The layer is installed lazily, when a tensor first
#     requires grad (``Tensor.requires_grad_``), so until then the eager path pays one read of
#     ``flags.autograd``. The tensor fields the layer owns: ``_grad_fn``, ``_output_nr``,
#     ``_requires_grad``, ``_view_version`` (the version at which a view's ``grad_fn`` was
#     last set; ``Tensor.grad_fn`` asks the layer's ``view_grad_fn`` to regenerate a stale one).


def set_autograd_layer(layer) -> None:
    """Install ``layer(op, args, kwargs)`` as the autograd layer of every op call, above modes
    and subclass handlers (Note [Autograd layer]); ``None`` uninstalls it."""
    flags.autograd = layer


def redispatch_below_autograd(op, args: tuple, kwargs: dict):
    """Run ``op`` below the autograd layer: modes, subclass handlers and the kernel, with the
    version/view layer, as if no autograd layer were installed (nested ops too). PyTorch's
    ``at::AutoDispatchBelowADInplaceOrView`` redispatch, for modes built on the extension API.

    ``op``: an ``OpOverload`` (or packet); ``args`` / ``kwargs``: its call. Returns and raises
    what ``op(*args, **kwargs)`` does (its schema's binding errors and the kernel's). A plain
    op whose call nothing can intercept (no mode, trace or subclass operand, positional
    arguments in schema form) runs its kernel directly: the same result, one call frame."""
    st = tls.__dict__
    prev = st["autograd_off"]
    st["autograd_off"] = True
    try:
        if (not kwargs and not flags.interceptors and isinstance(op, OpOverload) and op._plain
                and op._device_arg == 0
                and op.decomposition is None and not op._has_lists
                and len(args) < len(op._arity_ok) and op._arity_ok[len(args)]):
            # __call__'s plain-kernel path, without re-checking what the call above did
            # (the layer's calls are bound already; an unbound one takes op() below)
            for a in args:
                if type(a) in DISPATCH_TYPES:
                    break
            else:
                try:
                    kernel = op._kernels[args[0]._storage.device.type]
                except (AttributeError, IndexError, TypeError, KeyError):
                    return op(*args)
                out = kernel(*args)
                if op._view_name is not None:
                    _record_view_op(op, out)
                return out
        return op(*args, **kwargs)
    finally:
        st["autograd_off"] = prev


class OpOverload:
    """One operator overload: callable, with ``name``, ``overload``, ``schema`` and the derived
    schema facts ``is_view``, ``is_inplace``, ``is_out``, ``mutated_args``,
    ``functional_variant`` (an ``OpOverload`` or None). Kernels: ``op._kernels[device_type]``;
    composite ops have ``op.decomposition`` instead.
    """

    def __init__(self, schema: OpSchema, namespace: str = ""):
        self._init_table(schema.name, schema.overload or "default", namespace)
        self._derive(schema)

    # A kernel registered after ``import subclass_kit`` (``sk.library.impl``, ``register_kernel``)
    # sets it: ``fast_path.unobserved`` then keeps fast paths from standing in for the op.
    _replaced = False

    def _init_table(self, name: str, overload: str, namespace: str):
        """The fields that exist before the schema is parsed (Note [Lazy schemas] in
        ``_builtin_ops.py``): names, the
        kernel table and what kernel modules set at import."""
        self.name = name
        self.overload = overload
        self.namespace = namespace
        self._kernels: dict = {}
        self.decomposition = None
        self.tags: set = set()
        # Optional predicate over the call's arguments: bump mutated args only when it holds
        # (``resize_`` bumps only when the size changes, SEMANTICS.md §2.2).
        self.bump_if = None
        # Custom ops (sk.library): their kernels may call other ops, so they run "below"
        # (Note [Version counters]) and the dispatcher tracks their view outputs.
        self._custom = False

    def _derive(self, schema: OpSchema):
        """The schema and the facts the call paths read from it, as instance attributes."""
        self.schema = schema
        self.is_view = schema.is_view
        self.is_inplace = schema.is_inplace
        self.is_out = schema.is_out
        self.mutated_args = schema.mutated_args
        self.is_mutable = schema.is_mutable
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
        # What handlers are not shown (``dispatch.drop_defaults``, PyTorch's rule): trailing
        # positional arguments from ``_trail_from`` on, and keyword-only ones, equal to their
        # schema defaults.
        trail = len(schema.positional)
        while trail and schema.positional[trail - 1].default is not None:
            trail -= 1
        # None when no positional argument has a default (no ``len(args)`` on the slow path)
        self._trail_from = trail if trail < len(schema.positional) else None
        self._pos_defaults = ((None,) * trail      # (read from ``trail`` on only)
                              + tuple(a.default_value for a in schema.positional[trail:]))
        self._kw_defaults = {a.name: a.default_value for a in schema.kwarg_only
                             if a.default is not None}
        # One plain Tensor return: a handler's Tensor result needs no check_returns.
        self._one_tensor_return = (len(schema.returns) == 1 and not schema.returns_tuple
                                   and schema.returns[0].type == "Tensor")
        # (argument index, return index, list return?) for each return that is a view: of the
        # first argument sharing its alias set. What the dispatcher tracks for views resolved
        # by a subclass handler or a custom kernel (``dispatch._track_view_outputs``).
        views: dict = {}
        for ai, ri in schema.view_pairs:
            views.setdefault(ri, ai)
        self._view_outputs = tuple((ai, ri, schema.returns[ri].is_tensor_list)
                                   for ri, ai in sorted(views.items()))
        self._self_only = (len(self._mutated) == 1 and self._mutated[0][0] == 0
                           and schema.arguments[0].is_tensor)
        # What ``__call__`` reads to tell a canonical call from one ``_bind`` must handle: the
        # keyword-only names, the required ones, and per count of positional arguments whether
        # it is valid with keywords (``_arity_kw``) or without (``_arity_ok``: never, when a
        # keyword-only argument is required). A count past the end is too many.
        n_pos = len(schema.positional)
        min_pos = sum(1 for a in schema.positional if a.default is None)
        self._max_pos = n_pos
        self._kwonly = frozenset(a.name for a in schema.kwarg_only)
        self._kw_required = frozenset(a.name for a in schema.kwarg_only if a.default is None)
        self._arity_kw = tuple(n >= min_pos for n in range(n_pos + 1))
        self._arity_ok = tuple(n >= min_pos and not self._kw_required for n in range(n_pos + 1))
        # Neither mutating nor custom (``custom_op.CustomOp``): the kernel runs with no version
        # layer around it.
        self._plain = not self._mutated
        # Forward name printed by view+in-place errors ("Output 0 of Unbind ...").
        self._view_name = None
        if self.is_view and schema.base_name not in ("detach", "lift_fresh"):
            from .inplace_checks import forward_name
            self._view_name = forward_name(schema.base_name)
        # An attribute dict of its own, not one sharing the class's keys. ``define`` writes
        # overload names into ``__dict__``, so CPython 3.11 reads ``op.x`` by a key-index hint
        # (LOAD_ATTR_WITH_HINT), and that misses on every shared-key dict: the ops whose
        # attributes happened to fit the shared keys paid a generic lookup per read in __call__.
        self.__dict__ = dict(self.__dict__)

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
        # out= overloads name only the op: pick the overload taking the same other arguments
        # (``div.Tensor_mode_out`` -> ``div.Tensor_mode``, not ``div.Tensor``).
        # An in-place op's mutated ``self`` is an argument of its functional variant too; its
        # overload name may be another's (``pow_.Scalar`` is ``pow.Tensor_Scalar``'s).
        own = [(a.name, a.type) for a in self.schema.arguments
               if not (a.is_write and (self.is_out or a.name != "self"))]
        if overload and overload in packet._overloads:
            named = packet._overloads[overload]
            if self.is_out or [(a.name, a.type) for a in named.schema.arguments] == own:
                return named
        fallback = None
        for op in packet._overloads.values():
            if not op.is_mutable:
                if [(a.name, a.type) for a in op.schema.arguments] == own:
                    return op
                fallback = fallback or op
        # An in-place op whose arguments match no overload has no functional variant of that
        # name (``normal_``'s is ``normal_functional``); an out= op takes the closest one.
        return fallback if self.is_out else None

    @property
    def default(self):
        return self._overloads.get("default", self)

    # ``overloadpacket`` / ``_overloadpacket`` (PyTorch's names): the ``OpOverloadPacket``
    # ``sk.ops.<name>`` names, set as instance attributes by ``_add_overload`` (a lazy op
    # answers without parsing its schema).

    @property
    def _schema(self):
        """PyTorch's spelling of ``schema`` (an ``OpSchema`` here, a ``FunctionSchema`` there:
        ``str()`` of both gives the schema text)."""
        return self.schema

    @property
    def _overloadname(self) -> str:
        return self.overload

    # No ``__getattr__``: defining one makes CPython 3.11 stop specialising *every* attribute
    # read on overloads, which the dispatch paths do per call. The packet has one
    # (``OpOverloadPacket.__getattr__``: the unknown-overload error).

    def overloads(self) -> list:
        return list(self._overloads)

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, /, *args, **kwargs):
        # Calls not already in canonical form (a schema name given by keyword, a wrong count)
        # are bound to the schema first, before decompositions, modes and kernels: ``_bind``.
        try:
            if kwargs:
                if not (kwargs.keys() <= self._kwonly and self._arity_kw[len(args)]
                        and (not self._kw_required or kwargs.keys() >= self._kw_required)):
                    args, kwargs = self._bind(args, kwargs)
            elif not self._arity_ok[len(args)]:
                args, kwargs = self._bind(args, kwargs)     # raises: an argument is missing
        except IndexError:                                  # more positionals than the schema's
            args, kwargs = self._bind(args, kwargs)         # raises
        if self.decomposition is not None:
            return self.decomposition(*args, **kwargs)
        if flags.autograd is not None and tls.grad_enabled and not tls.autograd_off:
            # Note [Autograd layer]; with grad mode off it would only run the op below itself
            return flags.autograd(self, args, kwargs)
        if flags.interceptors:
            st = tls.__dict__       # one thread-local lookup for both reads
            if st["dispatch_modes"] or st["trace"] is not None:
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
        if self._plain:
            # _resolve_kernel's first branch, inlined: one frame less on the hot path.
            # (Factories have no tensor argument: no exception to catch for them.)
            if self._device_arg is None:
                kernel = self._find_kernel(args, kwargs)
            else:
                try:
                    kernel = self._kernels[args[self._device_arg]._storage.device.type]
                except (AttributeError, IndexError, TypeError, KeyError):
                    kernel = self._find_kernel(args, kwargs)
            out = kernel(*args, **kwargs) if kwargs else kernel(*args)
            if self._view_name is not None:
                _record_view_op(self, out)
            return out
        return self._resolve_kernel(args, kwargs)

    def _bind(self, args, kwargs):
        """Bind a call to the schema as PyTorch does before any mode sees it; returns the
        canonical ``(args, kwargs)``: every argument before the keyword-only ones is positional
        (a default fills a gap before one given by keyword), keyword-only ones stay keywords.

        Raises RuntimeError (PyTorch's ``createStackForSchema`` checks, in its order) for too
        many arguments, a keyword-only argument given by position, a missing required argument,
        an unknown keyword and an argument given both by position and by keyword.
        """
        arguments = self.schema.arguments
        if len(args) + len(kwargs) > len(arguments):
            raise RuntimeError(
                f"{self!r}() expected at most {len(arguments)} argument(s) but received "
                f"{len(args) + len(kwargs)} argument(s). Declaration: {self.schema}")
        if len(args) > self._max_pos:
            raise RuntimeError(
                f"{self!r}() takes {self._max_pos} positional argument(s) but {len(args)} "
                f"was/were given. Declaration: {self.schema}")
        positional = list(args)
        skipped = []            # defaulted positionals not given (yet): a gap if one follows
        bound_kwargs = {}
        consumed = 0
        for a in arguments[len(args):]:
            if a.name in kwargs:
                consumed += 1
                if a.kwarg_only:
                    bound_kwargs[a.name] = kwargs[a.name]
                    continue
                positional.extend(_default(d) for d in skipped)
                skipped.clear()
                positional.append(kwargs[a.name])
            elif a.default is None:
                raise RuntimeError(f"{self!r}() is missing value for argument '{a.name}'. "
                                   f"Declaration: {self.schema}")
            elif not a.kwarg_only:
                skipped.append(a)
        if consumed != len(kwargs):
            raise RuntimeError(self._keyword_error(kwargs))
        return tuple(positional), bound_kwargs

    def _keyword_error(self, kwargs) -> str:
        """The message for keywords ``_bind`` did not consume: an unknown name, else one that
        was also given by position."""
        names = [a.name for a in self.schema.arguments]
        for key in kwargs:
            if key not in names:
                return (f"Unknown keyword argument '{key}' for operator '{self!r}'. "
                        f"Schema: {self.schema}")
        for name in names:
            if name in kwargs:
                return (f"Argument '{name}' specified both as positional and keyword "
                        f"argument. Schema: {self.schema}")
        return ""

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
        # "default": a custom kernel for every device (sk.library.impl(op, "default")).
        kernel = self._kernels.get(device) or self._kernels.get("default")
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
            if flags.requires_grad_seen and tls.grad_enabled and not tls.autograd_off:
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


def _default(arg):
    """The value of ``arg``'s schema default (a fresh list for list defaults)."""
    value = arg.default_value
    return list(value) if isinstance(value, list) else value


def _device_type_of(dev) -> str:
    return getattr(dev, "type", None) or str(dev).split(":")[0]


def _missing_kernel(op, device):
    if device == "meta":
        return NotImplementedError(
            f"{op.name}: attempted to run this operator with Meta tensors, but there was no fake "
            "impl or Meta kernel registered.")
    return NotImplementedError(
        f"Could not run '{op.name}' with arguments from the '{device.upper()}' backend. This "
        "could be because the operator doesn't exist for this backend.")


ops = _Namespace("sk.ops")


def _lookup(name: str):
    if "::" in name:
        ns, _, base = name.partition("::")
        space = ops._packets.get(ns)
        return None if space is None else space._packets.get(base)
    return ops._packets.get(name)


def define(schema_text: str, cls=OpOverload) -> OpOverload:
    """Register an op from its schema string; returns the new ``cls`` (an ``OpOverload``;
    ``sk.library`` passes ``CustomOp``).

    A name with ``ns::`` goes into ``sk.ops.ns``. Raises ValueError for a malformed schema and
    for a namespace or op name that would shadow a name of ``sk.ops`` (a built-in op such as
    ``t``) or of the namespace object; RuntimeError when the overload already exists
    (PyTorch's message).
    """
    schema = parse_schema(schema_text)
    new_space = None
    if "::" in schema.name:
        ns_name, _, base = schema.name.partition("::")
        space = ops._packets.get(ns_name)
        if space is None:
            _check_free(ops, ns_name, "namespace")
            space = new_space = _Namespace(f"sk.ops.{ns_name}")
        elif not isinstance(space, _Namespace):
            # Built-in ops live in sk.ops itself (PyTorch's live in torch.ops.aten).
            raise ValueError(f"namespace '{ns_name}' is taken by the built-in op "
                             f"sk.ops.{ns_name}; choose another namespace")
        namespace = f"sk.ops.{ns_name}"
    else:
        space, base, namespace = ops, schema.name, ""
    if base not in space._packets:
        _check_free(space, base, "op name")
    if space is new_space:
        ops._publish(ns_name, space)    # only now: a name error leaves no empty namespace
    return _add_overload(space, base, cls(schema, namespace))


def _add_overload(space, base: str, op: OpOverload) -> OpOverload:
    """File ``op`` in the packet ``space.<base>`` (created and published by the first overload);
    every overload of the packet also names every other as an attribute."""
    packet = space._packets.get(base)
    if packet is None:
        packet = OpOverloadPacket(op.name, op.namespace, base)
        space._publish(base, packet)
    elif op.overload in packet._overloads:
        raise RuntimeError(
            f"Tried to register an operator ({op.schema}) with the same name and overload "
            "name multiple times. Each overload's schema should only be registered with a "
            "single call to def().")
    op._overloads = packet._overloads
    op.overloadpacket = op._overloadpacket = packet
    packet._add(op)
    # The earlier overloads already name each other: add the new one's name to each, and
    # theirs (and its own) to it.
    for holder in op._overloads.values():
        _name_overload(holder, op.overload, op)
        if holder is not op:
            _name_overload(op, holder.overload, holder)
    return op


def _name_overload(holder, ov_name: str, ov):
    if ov_name not in holder.__dict__ and not _class_has(type(holder), ov_name):
        holder.__dict__[ov_name] = ov


_CLASS_NAMES: dict = {}


def _class_has(cls, name: str) -> bool:
    """``hasattr(cls, name)`` from a cached name set: ``hasattr`` on a class formats an
    AttributeError for each miss, once per overload at import."""
    names = _CLASS_NAMES.get(cls)
    if names is None:
        names = _CLASS_NAMES[cls] = frozenset(dir(cls)) | frozenset(dir(type(cls)))
    return name in names


def _check_free(space, name: str, what: str):
    """Raise ValueError when ``name`` would shadow an attribute of ``space`` (``_packets``...):
    ops and namespaces are published as attributes."""
    if name in space.__dict__ or hasattr(type(space), name):
        raise ValueError(f"{what} '{name}' is reserved in {space!r}; choose another name")


def register_kernel(op: OpOverload, device: str):
    """Decorator: ``@register_kernel(sk.ops.add.Tensor, "cpu")`` registers a kernel for a
    device (a packet stands for the overload its call runs, ``overload_of``)."""
    op = overload_of(op)

    def deco(fn):
        op._kernels[device] = fn
        if flags.core_ready:
            op._replaced = True     # fast paths standing in for its kernel step aside
        return fn
    return deco


def register_decomposition(op: OpOverload):
    """Decorator: make ``op`` composite, running ``fn`` (written with ``sk.ops``) when called
    (a packet stands for the overload its call runs, ``overload_of``)."""
    op = overload_of(op)

    def deco(fn):
        op.decomposition = fn
        return fn
    return deco


def get_kernel(op: OpOverload, device: str):
    """The kernel of ``op`` for ``device`` ("cpu" or "meta"; a packet stands for the overload
    its call runs). Raises NotImplementedError."""
    op = overload_of(op)
    kernel = op._kernels.get(device) or op._kernels.get("default")
    if kernel is None:
        raise _missing_kernel(op, device)
    return kernel


# The built-in ops (Note [Lazy schemas]): imported last, the module uses the names above.
from ._builtin_ops import define_builtin_ops  # noqa: E402

define_builtin_ops()
