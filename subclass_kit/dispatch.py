"""The slow path of dispatch and the version/view layer (PyTorch's Python key and
ADInplaceOrView).

``OpOverload.__call__`` (registry.py) takes the fast path straight to a kernel when no mode is
active and no argument is a subclass overriding ``__tensor_dispatch__``; otherwise it calls
:func:`dispatch` here: dispatch modes innermost first (Note [Mode runs below itself]), then the
subclass handlers in NEP 18 order, then the kernel.

Note [Version counters]
    The version bump and view tracking (PyTorch's ADInplaceOrView layer) happen where an op is
    *resolved*: after the kernel, or after a subclass handler, ran. Modes only forward, so a
    mode that calls ``func`` sees the bump when ``func`` returns. Ops called inside a subclass
    handler run "below" (``tls.below``): they neither bump nor track views, as in PyTorch.
    A mutated argument is bumped exactly once per op, only if the op succeeded; an in-place op
    on an inference tensor outside inference mode raises *before* the kernel runs.
"""

from __future__ import annotations

from numbers import Number
from typing import NamedTuple

from ._state import count_interceptor, flags, tls

__all__ = ["dispatch", "dispatch_trace", "DispatchEvent", "is_below_autograd", "below_autograd",
           "enable_reentrant_dispatch", "DISPATCH_TYPES"]

# Tensor subclasses that override __tensor_dispatch__ (filled by Tensor.__init_subclass__).
DISPATCH_TYPES: set = set()


def _run_below(op, kernel, args, kwargs):
    """Run a handler or custom kernel below the version/view layer, then do that layer's work
    for it: bump mutated arguments once and track view outputs (Note [Version counters])."""
    below = tls.below
    mutated = op._mutated_tensors(args, kwargs) if op._mutated else ()
    if mutated and op.bump_if is not None and not op.bump_if(*args, **kwargs):
        mutated = ()
    if mutated and not below:
        _check_inference_write(op, mutated, args, kwargs)
    st = tls.__dict__
    autograd_off = st["autograd_off"]
    st["below"] = st["autograd_off"] = True
    try:
        res = kernel(*args, **kwargs)
    finally:
        st["below"] = below
        st["autograd_off"] = autograd_off
    if res is not NotImplemented and not below:
        if mutated:
            _bump(mutated)
        if op.is_view:
            _track_view_outputs(op, args, kwargs, res)
            if op._view_name is not None:
                _record_view_op(op, res)
    return res


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
            if getattr(t, "_vc", 0) is None:
                raise RuntimeError(_INFERENCE_INPLACE)
    for t in mutated:
        if not hasattr(t, "_storage"):
            # out=3.0: PyTorch's argument parser rejects it before any kernel runs.
            raise TypeError(f"{op.schema.base_name}(): argument 'out' must be Tensor, not "
                            f"{type(t).__name__}")
    if flags.requires_grad_seen and tls.grad_enabled and not tls.autograd_off:
        # only when no autograd layer took the call: it checks above modes and handlers, and
        # what they call below it is not checked (PyTorch: autograd is excluded there)
        check_inplace(op, mutated, args, kwargs)


def _record_view_op(op, out):
    if isinstance(out, (list, tuple)):
        for i, o in enumerate(out):
            if o._base is not None:
                o._view_op = (op._view_name, i)
    elif out._base is not None:
        out._view_op = (op._view_name, 0)


def _bump(mutated):
    """+1 on the version counter of each of ``mutated`` (one entry per mutated argument): a
    counter shared by two mutated arguments moves by 2, as PyTorch's ``increment_version`` per
    argument does. Thread-safe without a lock: CPython switches threads only at calls and
    backward jumps, never inside ``vc[0] += 1`` (tests/test_thread_state.py pins this)."""
    for t in mutated:
        vc = t._vc
        if vc is not None:
            vc[0] += 1


# -- the slow path: modes and subclasses -------------------------------------------------------
def single_type(args, registry) -> tuple | None:
    """The common case of finding the overriding types among ``args``: ``(t,)`` when exactly
    one type of ``registry`` (``DISPATCH_TYPES`` or ``FUNCTION_TYPES``) occurs, ``()`` when
    none does, None when the general, ordering search is needed (two types, or one inside a
    list or tuple)."""
    found = ()
    for a in args:
        t = type(a)
        if t in registry:
            if not found:
                found = (t,)
            elif t not in found:
                return None
        elif t is list or t is tuple:
            for x in a:
                if type(x) in registry:
                    return None
    return found


def _overloaded_types(op, args, kwargs) -> tuple:
    """Types of arguments overriding __tensor_dispatch__, each once, subclasses first."""
    found = []
    for a in args:
        t = type(a)
        if t in DISPATCH_TYPES:
            if t not in found:
                found.append(t)
        elif t is list or t is tuple:
            _collect(a, found)
    if kwargs:
        for a in kwargs.values():
            t = type(a)
            if t in DISPATCH_TYPES:
                if t not in found:
                    found.append(t)
            elif t is list or t is tuple:
                _collect(a, found)
    if not found:
        return ()
    return _order_types(found) if len(found) > 1 else tuple(found)


def _collect(items, found):
    for x in items:
        t = type(x)
        if t in DISPATCH_TYPES and t not in found:
            found.append(t)


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


def dispatch(op, args, kwargs, types=None):
    """The slow path of ``OpOverload.__call__``: modes, then subclass handlers, then kernel.
    ``types``: the overriding argument types when the caller already knows them (``()`` for
    plain operands), else None."""
    if kwargs is None:
        kwargs = {}
    # This thread's state as a dict: one thread-local lookup instead of one per access.
    st = tls.__dict__
    trace = st["trace"]
    if st["no_dispatch"]:
        return _kernel(op, args, kwargs, trace)
    # PyTorch's handler boundary shows only non-default arguments (``drop_defaults``).
    trail = op._trail_from
    if trail is not None and len(args) > trail and _is_default(
            args[-1], op._pos_defaults[len(args) - 1]):
        args = _drop_trailing(op, args)
    if kwargs and op._kw_defaults:
        kwargs = _drop_keywords(op, kwargs)
    if types is None:
        if not DISPATCH_TYPES:      # no class overrides __tensor_dispatch__ (the common case)
            types = ()
        else:
            types = None if kwargs else single_type(args, DISPATCH_TYPES)
            if types is None:
                types = _overloaded_types(op, args, kwargs)
    stack = st["dispatch_modes"]
    tried = None
    # Handlers run below the autograd layer, as in PyTorch (their ops are not recorded), even
    # when the call reached them without passing it (the layer installed since; grad mode
    # off); ``enable_reentrant_dispatch`` lifts this.
    autograd_off = st["autograd_off"]
    if stack:
        # Modes innermost first, each running with itself and the modes above it cut from the
        # stack (Note [Mode runs below itself]).
        i = len(stack)
        while i:
            i -= 1
            mode = stack[i]
            st["dispatch_modes"] = stack[:i]
            st["mode_handlers"] += 1
            st["autograd_off"] = True
            if trace is None:
                try:
                    res = mode.__tensor_dispatch__(op, types, args, kwargs)
                finally:
                    st["dispatch_modes"] = stack
                    st["mode_handlers"] -= 1
                    st["autograd_off"] = autograd_off
            else:
                trace(DispatchEvent("mode", op, mode, tls.depth))
                tls.depth += 1
                try:
                    res = mode.__tensor_dispatch__(op, types, args, kwargs)
                finally:
                    st["dispatch_modes"] = stack
                    st["mode_handlers"] -= 1
                    st["autograd_off"] = autograd_off
                    tls.depth -= 1
            if res is not NotImplemented:
                if res.__class__ is not _tensor or not op._one_tensor_return:
                    check_returns(op, res)
                return res
            tried = _declined(op, mode, tried, trace)
    if not types:
        if tried:
            raise _all_declined(op, tried, "__tensor_dispatch__")
        return _kernel(op, args, kwargs, trace)
    # Subclass handlers, below the version/view layer (``_run_below`` written out).
    below = st["below"]
    all_mutated = op._mutated_tensors(args, kwargs) if op._mutated else ()
    depth = st["handler_depth"]
    for t in types:
        if trace is not None:
            trace(DispatchEvent("subclass", op, t, tls.depth))
            tls.depth += 1
        try:
            mutated = all_mutated
            if mutated and op.bump_if is not None and not op.bump_if(*args, **kwargs):
                mutated = ()
            if mutated and not below:
                _check_inference_write(op, mutated, args, kwargs)
            n = depth.get(t, 0)
            if n >= _MAX_HANDLER_DEPTH:
                raise _runaway(t, n, op)
            depth[t] = n + 1
            st["below"] = st["autograd_off"] = True
            try:
                res = t.__tensor_dispatch__(op, types, args, kwargs)
            finally:
                depth[t] = n
                st["below"] = below
                st["autograd_off"] = autograd_off
        finally:
            if trace is not None:
                tls.depth -= 1
        if res is not NotImplemented:
            if res.__class__ is not _tensor or not op._one_tensor_return:
                check_returns(op, res)
            if not below:
                if mutated:
                    _bump(mutated)
                if op.is_view:
                    _track_view_outputs(op, args, kwargs, res)
                    if op._view_name is not None:
                        _record_view_op(op, res)
                if op._mutated and not st["mode_handlers"]:
                    return _mutated_returned(op, args, kwargs, res)
            return res
        tried = _declined(op, t, tried, trace)
    raise _all_declined(op, tried, "__tensor_dispatch__")


_tensor = None      # tensor.Tensor, bound by the first check_returns (tensor.py imports us)


def _mutated_returned(op, args, kwargs, res):
    """What an in-place or out= op answered by a subclass handler returns to a caller above
    it: the argument each ``Tensor(a!)`` return aliases, whatever the handler returned
    (PyTorch's ADInplaceOrView layer, above the Python key, returns ``self`` / ``out``). A
    mode calling the op gets the handler's own result (``DebugAssertMode`` checks it); a
    mode's own answer is returned as is (docs/differences.md)."""
    at = _MUTATED_RETURNS.get(op)
    if at is None:
        schema = op.schema
        at = _MUTATED_RETURNS[op] = tuple(
            (ri, ai, arg.name) for ri, ret in enumerate(schema.returns)
            if ret.alias is not None and ret.alias.is_write and not ret.is_tensor_list
            for ai, arg in enumerate(schema.arguments)
            if arg.alias is not None and arg.alias.alias_sets & ret.alias.alias_sets)
    if not at:
        return res
    if op._one_tensor_return:
        ai, name = at[0][1], at[0][2]
        arg = args[ai] if ai < len(args) else kwargs.get(name)
        return res if arg is None else arg
    if not isinstance(res, (tuple, list)):
        return res
    out = list(res)
    for ri, ai, name in at:
        arg = args[ai] if ai < len(args) else kwargs.get(name)
        if arg is not None and ri < len(out):
            out[ri] = arg
    return tuple(out)


_MUTATED_RETURNS: dict = {}     # op -> ((return index, argument index, name), ...)


def check_returns(op, res):
    """Check a handler's result against ``op``'s declared returns, as PyTorch casts it back
    to the schema's types at the Python-handler boundary: a ``Tensor`` return takes a Tensor
    or None, else RuntimeError "Unable to cast 1.0 to Tensor"; a ``Tensor[]`` return a list or
    tuple of Tensors; a ``Scalar`` a number ("Cannot cast ... to number"); several returns a
    sequence of that many values, each checked. Other return types are not checked.
    Called only after a mode or subclass handler answered (the slow path)."""
    global _tensor
    if _tensor is None:
        from .tensor import Tensor
        _tensor = Tensor
    returns = op.schema.returns
    if len(returns) == 1 and not op.schema.returns_tuple:
        _check_return(returns[0].type, res)
        return
    if not returns:
        return
    if not isinstance(res, (list, tuple)):
        raise RuntimeError(f"Object of type '{type(res).__name__}' is not an instance of "
                           f"'sequence' (the result of a handler of {op!r}, which returns "
                           f"{len(returns)} values)")
    if len(res) != len(returns):
        raise RuntimeError(f"a handler of {op!r} returned {len(res)} values; its schema "
                           f"declares {len(returns)}: {op.schema}")
    for ret, value in zip(returns, res):
        _check_return(ret.type, value)


def _check_return(rtype: str, value):
    if rtype == "Tensor":
        if value is not None and not isinstance(value, _tensor):
            raise RuntimeError(f"Unable to cast {_text(value)} to Tensor")
    elif rtype == "Tensor[]":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, _tensor)
                                                           for v in value):
            raise RuntimeError(f"Unable to cast Python instance of type {type(value)} to "
                               "Tensor[]")
    elif rtype == "Scalar":
        if isinstance(value, _tensor) or not isinstance(value, Number):
            raise RuntimeError(f"Cannot cast {_text(value)} to number")


def _text(value) -> str:
    """``str(value)`` with dispatch off (PyTorch formats in C++, where no handler runs: a
    tensor's repr must not re-enter the handler that returned it)."""
    from .mode import no_dispatch
    try:
        with no_dispatch():
            return str(value)
    except Exception:       # a wrapper without data: its repr needs its handler
        return object.__repr__(value)


def drop_defaults(op, args, kwargs):
    """``(args, kwargs)`` without what PyTorch's Python-handler boundary drops: trailing
    positional arguments equal to their schema defaults (``topk(x, 2, -1, True, True)`` is
    shown as ``topk(x, 2)``) and keyword-only arguments equal to theirs (``x.to(sk.uint8)`` is
    ``_to_copy(x, dtype=uint8)``, not ``..., device=None, memory_format=None``). Values are
    compared by type and value (numbers, bools, strings, None, int lists), never by calling
    ``==`` on a Tensor. (``dispatch`` runs the two halves inline.)"""
    trail = op._trail_from
    if trail is not None and len(args) > trail:
        args = _drop_trailing(op, args)
    if kwargs and op._kw_defaults:
        kwargs = _drop_keywords(op, kwargs)
    return args, kwargs


def _drop_trailing(op, args):
    n, trail, defaults = len(args), op._trail_from, op._pos_defaults
    while n > trail and _is_default(args[n - 1], defaults[n - 1]):
        n -= 1
    return args[:n]


def _drop_keywords(op, kwargs):
    kw_defaults = op._kw_defaults
    for name, value in kwargs.items():
        if name in kw_defaults and _is_default(value, kw_defaults[name]):
            return {k: v for k, v in kwargs.items()
                    if k not in kw_defaults or not _is_default(v, kw_defaults[k])}
    return kwargs


_PLAIN = frozenset({int, float, bool, str})


def _is_default(value, default) -> bool:
    if value is default:
        return True
    t = value.__class__
    if t is default.__class__:
        return t in _PLAIN and value == default or t is list and _same_ints(value, default)
    return t is tuple and default.__class__ is list and _same_ints(value, default)


def _same_ints(value, default) -> bool:
    return len(value) == len(default) and all(
        type(v) is type(d) and v == d for v, d in zip(value, default))


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
        count_interceptor(1)
        return self

    def __exit__(self, *exc):
        tls.trace = self._prev
        count_interceptor(-1)
        return False


class below_autograd:
    """Run the block below the version/view layer (PyTorch's
    ``AutoDispatchBelowADInplaceOrView``), as inside an out= kernel: ops still dispatch (modes
    see them) but neither bump versions, track views nor run autograd's checks."""

    def __enter__(self):
        self._prev = tls.below
        tls.below = True
        return self

    def __exit__(self, *exc):
        tls.below = self._prev
        return False


class enable_reentrant_dispatch:
    """PyTorch's ``torch.overrides.enable_reentrant_dispatch``: inside a subclass's or a mode's
    handler, the block's ops run as a call from outside any dispatch does: through the autograd
    layer (recorded when a tensor requires grad) and the version/view layer (versions bump,
    views are tracked). Without it those ops run below both, as in PyTorch. Outside a handler it
    changes nothing. (PyTorch restores the dispatch state it saved on entering Python
    dispatch; here that is the state of a top-level call.)"""

    def __enter__(self):
        st = tls.__dict__
        self._prev = st["below"], st["autograd_off"]
        st["below"] = st["autograd_off"] = False

    def __exit__(self, *exc):
        st = tls.__dict__
        st["below"], st["autograd_off"] = self._prev
        return False


def is_below_autograd() -> bool:
    """True while ops run below the version/view layer (inside a subclass ``__tensor_dispatch__``
    or a custom kernel): they neither bump versions nor track views (Note [Version counters])."""
    return tls.below


def _runaway(t, n, op):
    return RuntimeError(
        f"{t.__name__}.__tensor_dispatch__ re-entered itself {n} times (last op: {op!r}): the "
        f"handler calls ops on {t.__name__} arguments, which dispatch back to the same handler "
        "forever. Unwrap the inner tensors first (sk.pytree.tree_map_only) or run the op under "
        "sk.no_dispatch().")


# Nesting of one subclass's handler deeper than this is taken as runaway recursion.
_MAX_HANDLER_DEPTH = 64


def _declined(op, handler, tried, trace):
    """Note that ``handler`` returned NotImplemented: report it to the trace and add it to
    ``tried`` (None until a first handler declines: no list on the common path)."""
    if trace is not None:
        trace(DispatchEvent("declined", op, handler, tls.depth))
    if tried is None:
        return [handler]
    tried.append(handler)
    return tried


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


# A wrapper made inside inference mode is an inference tensor: it cannot take a normal base's
# version counter (PyTorch raises this from its view tracking, issue #112024).
_INFERENCE_VC = "Cannot set version_counter for inference tensor"


def _track_view_outputs(op, args, kwargs, res):
    """Record the outputs of a view op resolved by a subclass handler or a custom kernel as
    views: each return annotated ``Tensor(a)`` (or ``Tensor(a)[]``) becomes a view of the
    argument sharing its alias set (``op._view_outputs``); other returns are left alone, so
    ``(Tensor(a) x, Tensor(b) y) -> (Tensor(a), Tensor(b))`` gives views of ``x`` and of ``y``
    and a fresh ``Tensor`` return next to a view stays fresh (PyTorch tracks each return by its
    own annotation)."""
    if "returns_input" in op.tags:
        return      # lift_fresh: an alias in its schema, but no view for autograd (PyTorch)
    single = len(op.schema.returns) == 1
    for ai, ri, is_list in op._view_outputs:
        base = args[ai] if ai < len(args) else kwargs.get(op.schema.arguments[ai].name)
        out = res if single else res[ri]
        for o in (out if isinstance(out, (list, tuple)) else (out,)):
            _track_view_output(op, base, o, is_list)


def _track_view_output(op, base, out, multi_output):
    if out is base:
        raise RuntimeError(_VIEW_RETURNED_INPUT)
    if hasattr(out, "_storage") and hasattr(base, "_storage"):
        if base._inference or (tls.inference and "alias_in_autograd" in op.tags):
            return      # untracked: views of inference tensors, view(dtype) in the mode
        if out._inference:
            raise RuntimeError(_INFERENCE_VC)
        if "not_a_view_for_autograd" in op.tags:
            # detach, view(dtype): share the version counter, but are no views (no _base)
            out._vc = base._vc
            return
        out._set_view_of(base, multi_output=multi_output)


# -- registration --------------------------------------------------------------------------------
