"""Per-op check plans of the debug-assert mode (``modes/debug_assert.py`` holds the rules, the
mode and the report; this module makes checking an op cheap).

A :class:`Plan` is read once per op from its schema and tags: which argument positions hold
tensors the op reads or writes, what each return must alias, which rules the op's tags switch
off. :func:`compile_filter` turns a plan into the op's *filter*: straight-line Python, one local
per snapshot value, generated once per op and cached by the mode.

What a check costs: the filter snapshots each plain-Tensor argument into locals -- its
``_storage``, ``_layout`` and ``_vc`` (version counter) and the counter's value, the slots that
``untyped_storage()``, ``size()``/``stride()``/``storage_offset()`` and ``_version`` read: no
accessor calls, no allocation -- runs the op, then tests identities: same Storage, the same
layout object (layouts are immutable), the version moved by exactly the expected bump, the
output is a new Tensor with a fresh Storage (or, for a view, its input's), no extra reference
to it. When every test passes the op is clean and the filter returns its result; otherwise it
hands its snapshots to the mode's general checks, which apply every rule exactly and write the
messages. So the filter only has to be conservative: whatever it lets through, the rules would
have let through. Tensor subclass arguments (whose accessors may be overridden) and TensorList
arguments take the general checks from the start (the filter answers ``SLOW`` before running
the op), outputs that are tuples or lists after it. With ``check_data`` the filter also copies
the bytes of each argument the op must not write and compares them after the op.
"""

from __future__ import annotations

import linecache
import sys

import subclass_kit as sk

__all__ = ["Plan", "compile_filter", "state", "data_of", "crowded_outputs", "item_refs", "SLOW",
           "FRESH_REFS", "FRESH_ITEM_REFS", "MUT", "VIEW", "FRESH", "OTHER"]

_Tensor = sk.Tensor
_getrefcount = sys.getrefcount
# The implementation behind Tensor.numpy, called without the function level so that function
# modes do not see the checker's reads (a public_api callable exposes it as __wrapped_impl__).
_numpy_impl = getattr(_Tensor.numpy, "__wrapped_impl__", None) or _Tensor.numpy

# What a return must be: the mutated argument, a view of an input, a fresh tensor, not a Tensor.
MUT, VIEW, FRESH, OTHER = 0, 1, 2, 3
SLOW = object()   # a filter's answer before running the op: take the general checks


class Plan:
    """What the checks need to know about one op, from its schema and ``exempt`` (the rules
    its tags switch off, Note [Debug-assert allow-lists])."""

    __slots__ = ("name", "schema_text", "reads", "writes", "lists", "mutates", "arg_names",
                 "returns", "single", "simple", "count_refs", "exempt", "swaps", "bump_if")

    def __init__(self, op, exempt: frozenset):
        schema = op.schema
        self.name = f"{schema.name}.{op.overload}"
        self.schema_text = str(schema)
        args = schema.arguments
        # (position, name) of single Tensor arguments the op only reads / writes; TensorLists
        # as (position, name, written).
        self.reads = tuple((i, a.name) for i, a in enumerate(args) if a.is_tensor
                           and not a.is_write)
        self.writes = tuple((i, a.name) for i, a in enumerate(args) if a.is_tensor and a.is_write)
        self.lists = tuple((i, a.name, a.is_write) for i, a in enumerate(args)
                           if a.is_tensor_list)
        self.mutates = bool(self.writes) or any(w for *_, w in self.lists)
        self.arg_names = tuple(a.name for a in args)
        views = {ri: ai for ai, ri in schema.view_pairs}
        rets = []   # (kind, argument position it aliases or None, is a list) per return
        for ri, r in enumerate(schema.returns):
            if not r.type.startswith("Tensor"):
                rets.append((OTHER, None, False))
            elif r.alias is not None and r.alias.is_write:
                ai = next((i for i, a in enumerate(args) if a.alias is not None
                           and a.alias.alias_sets & r.alias.alias_sets), None)
                rets.append((MUT, ai, r.is_tensor_list))
            elif ri in views:
                rets.append((VIEW, views[ri], r.is_tensor_list))
            else:
                rets.append((FRESH, None, r.is_tensor_list))
        self.returns = tuple(rets)
        self.single = len(schema.returns) == 1 and not schema.returns_tuple
        # The kind of a single non-list return (the filter tests it inline), OTHER for the
        # rest, None when there is no Tensor return. A view qualifies when its input is the
        # first Tensor argument the op reads.
        if not any(k != OTHER for k, _, _ in rets):
            self.simple = None
        elif self.single and not rets[0][2] and (
                rets[0][0] != VIEW or (self.reads and rets[0][1] == self.reads[0][0])):
            self.simple = rets[0][0]
        else:
            self.simple = OTHER
        self.exempt = exempt
        # Reference counts matter for out-of-place returns (fresh and views) only.
        self.count_refs = "output_not_fresh" not in exempt and any(
            k in (FRESH, VIEW) for k, _, _ in rets)
        self.swaps = "input_replaced" in exempt
        self.bump_if = getattr(op, "bump_if", None)


# -- snapshots -----------------------------------------------------------------------------------
def state(t):
    """(Storage, layout, version) of a tensor; the version is None without a counter (inference
    tensors). A plain Tensor's are its state slots, a subclass's come from its accessors."""
    if type(t) is _Tensor:
        vc = t._vc
        return t._storage, t._layout, vc and vc[0]
    try:
        v = t._version
    except RuntimeError:  # inference tensors have no counter
        v = None
    return t.untyped_storage(), (tuple(t.size()), t.stride(), t.storage_offset()), v


def data_of(t):
    """The bytes of ``t``'s elements, a tuple of them for a wrapper's inner tensors, or None
    when there is no data (meta, data-less wrappers without ``__tensor_flatten__``)."""
    if type(t) is _Tensor:
        if t.is_meta:
            return None
        return _numpy_impl(t, force=True).tobytes()
    if sk.is_traceable_wrapper_subclass(t):
        names, _ = t.__tensor_flatten__()
        inner = tuple(getattr(t, n) for n in names)
        return tuple(data_of(x) if isinstance(x, _Tensor) else None for x in inner)
    if t.is_meta or t.data_ptr() == 0:
        return None
    return _numpy_impl(t.data, force=True).tobytes()


# -- reference counts ----------------------------------------------------------------------------
class _Probe:
    pass


def item_refs(seq, k):
    """References to element ``k`` of a tuple/list output (the container's plus ours)."""
    return _getrefcount(seq[k])


def _calibrate():
    # The checker's frame shape: one local holds a fresh output and asks for its count.
    out = _Probe()
    single = _getrefcount(out)
    seq = (_Probe(),)
    return single, item_refs(seq, 0)


FRESH_REFS, FRESH_ITEM_REFS = _calibrate()


def crowded_outputs(plan, out):
    """(return index, element index or -1) of tuple/list outputs with extra references."""
    found = None
    if not isinstance(out, (tuple, list)):
        return found
    for ri, (kind, _, is_list) in enumerate(plan.returns):
        if kind == MUT or kind == OTHER or ri >= len(out):
            continue
        if is_list:
            seq = out[ri]
            if isinstance(seq, (list, tuple)):
                for k in range(len(seq)):
                    if item_refs(seq, k) > FRESH_ITEM_REFS:
                        found = (found or []) + [(ri, k)]
        elif item_refs(out, ri) > FRESH_ITEM_REFS:
            found = (found or []) + [(ri, -1)]
    return found


# -- the filter ----------------------------------------------------------------------------------
def _always_slow(mode, func, types, args, kwargs):
    return SLOW


def compile_filter(plan, check_data: bool, post):
    """The op's filter ``fast(mode, func, types, args, kwargs)`` (see the module docstring).
    When something moved it returns ``post(mode, plan, types, args, kwargs, records, out,
    bump, crowded, None, data)``, the mode's general checks; ops taking TensorLists get a
    filter that always answers ``SLOW``."""
    if plan.lists:
        return _always_slow
    tensors = [(i, name, False) for i, name in plan.reads] + [
        (i, name, True) for i, name in plan.writes]
    code = ["n = len(args)"]
    same, recs = ["not crowded"], []
    for j, (i, name, written) in enumerate(tensors):
        code += [f"a{j} = args[{i}] if n > {i} else kwargs.get({name!r}) if kwargs else None",
                 f"if type(a{j}) is Tensor:",
                 f"    s{j}, l{j}, c{j} = a{j}._storage, a{j}._layout, a{j}._vc",
                 f"    v{j} = c{j} and c{j}[0]",
                 f"elif isinstance(a{j}, Tensor):",
                 "    return SLOW",
                 "else:",
                 f"    a{j} = s{j} = l{j} = c{j} = v{j} = None"]
        layout = "" if written else f"a{j}._layout is l{j} and "
        version = f"v{j} + bump" if written else f"v{j}"
        same.append(f"(a{j} is None or a{j}._storage is s{j} and {layout}a{j}._vc is c{j} "
                    f"and (c{j} is None or c{j}[0] == {version}))")
        recs.append(f"((a{j}, {name!r}, {written}, s{j}, l{j}, v{j}), "
                    f"{'None' if written or not check_data else f'd{j}'})")
    if check_data:   # arguments not written and not sharing a written argument's Storage
        for j, (_, _, written) in enumerate(tensors):
            if not written:
                apart = "".join(f" and s{j} is not s{w}" for w, t in enumerate(tensors) if t[2])
                code.append(f"d{j} = data(a{j}) if a{j} is not None{apart} else None")
                same.append(f"(d{j} is None or data(a{j}) == d{j})")
    code.append("bump = 1 if bump_if(*args, **(kwargs or {})) else 0"
                if plan.writes and plan.bump_if else "bump = 1")
    code.append("out = func(*args, **kwargs) if kwargs else func(*args)")
    code.append(_count_refs(plan))
    same.append(_output_test(plan, tensors))
    code += ["if (" + " and\n        ".join(same) + "):",
             "    return out",
             f"recs = [r for r in ({''.join(r + ', ' for r in recs)}) if r[0][0] is not None]",
             "return post(mode, plan, types, args, kwargs or {}, [r[0] for r in recs], out, "
             "bump, crowded, None, {k: r[1] for k, r in enumerate(recs) if r[1] is not None})"]
    source = "def fast(mode, func, types, args, kwargs):\n" + "".join(
        f"    {line}\n" for line in code)
    namespace = {"Tensor": _Tensor, "SLOW": SLOW, "getrefcount": _getrefcount,
                 "FRESH_REFS": FRESH_REFS, "crowded_of": crowded_outputs, "bump_if": plan.bump_if,
                 "plan": plan, "post": post, "data": data_of,
                 "__name__": __name__}   # frames of the filter count as this module's
    filename = f"<debug-assert filter {plan.name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own code)
    return namespace["fast"]


def _count_refs(plan) -> str:
    # Before the filter binds the output anywhere else (FRESH_REFS: one local, our argument).
    if not plan.count_refs:
        return "crowded = None"
    if plan.simple == FRESH or plan.simple == VIEW:
        return "crowded = getrefcount(out) > FRESH_REFS"
    return f"crowded = crowded_of(plan, {'(out,)' if plan.single else 'out'})"


def _output_test(plan, tensors) -> str:
    """The filter's test of a single return; "False" (the general checks) for the rest."""
    kind, exempt = plan.simple, plan.exempt
    new = "type(out) is Tensor" + "".join(f" and out is not a{j}" for j in range(len(tensors)))
    if kind is None:
        return "True"
    if kind == FRESH and "output_not_fresh" not in exempt:
        if "output_aliases_input" in exempt or not tensors:
            return new
        return new + " and (st := out._storage) is not s0" + "".join(
            f" and st is not s{j}" for j in range(1, len(tensors)))
    if kind == VIEW:   # its input is a0 (Plan.simple)
        return new + " and out._storage is s0"
    if kind == MUT and plan.returns[0][1] is not None:
        i = plan.returns[0][1]
        j = next((j for j, t in enumerate(tensors) if t[0] == i), None)
        if j is not None:
            return f"out is a{j}"
        return f"out is (args[{i}] if n > {i} else (kwargs or {{}}).get({plan.arg_names[i]!r}))"
    return "False"
