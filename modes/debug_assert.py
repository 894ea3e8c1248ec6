"""The debug-assert mode: check every op against its schema (PyTorch's DEBUG-build asserts and
``SchemaCheckMode``, SEMANTICS.md §8), for plain tensors, subclasses, meta, inference tensors,
custom ops and under other modes.

    with DebugAssertMode():                       # raises DebugAssertError on the first bad op
        model(x)
    with DebugAssertMode(raise_on_violation=False, check_data=True) as m:
        model(x)
    m.report()                                    # a table of m.violations

For each op the mode snapshots its tensor arguments (object, Storage, sizes/strides/offset,
``_version``, and with ``check_data`` the bytes), calls ``func`` -- which goes to the modes below,
then subclass handlers, then the kernel, and bumps versions where the op resolves (Note [Version
counters]) -- and compares. Rules (``RULES``; a violation names the op, the argument or output
index, the rule and the fix):

- ``input_replaced``: an argument's Storage object was swapped, or an element of a TensorList
  argument was replaced;
- ``input_metadata``: sizes/strides/offset of an argument not annotated mutable changed;
- ``output_not_fresh``: an out-of-place output is one of the inputs, or someone else holds a
  reference to it (``sys.getrefcount``: the Python analogue of PyTorch's use-count check);
- ``output_aliases_input``: an out-of-place output shares a Storage with an input or with
  another output;
- ``view_not_aliased``: an output of a view op (every element, for multi-output views) does not
  share its input's Storage (meta tensors too: their views share Storage);
- ``inplace_not_self``: an in-place / out= op did not return the argument it mutated;
- ``version_not_bumped``: a mutated argument's ``_version`` did not move by exactly one (none
  when ``op.bump_if`` says so: ``resize_`` to the same size), or an argument not mutated moved;
  skipped for tensors without a counter (inference tensors) and below autograd
  (``sk.is_below_autograd()``), where nothing bumps;
- ``unexpected_mutation`` (``check_data=True``): the data of an argument not annotated mutable
  changed. Meta tensors have no data; wrapper subclasses are compared through the inner tensors
  of ``__tensor_flatten__`` (wrappers without it are skipped).

Arguments sharing a Storage with a mutated argument (``add(x, 1, out=x)``, a view of ``self``)
may legitimately move and change; the mode lets them. Every exemption comes from the schema or
from an op tag, in one table: Note [Debug-assert allow-lists].

Note [Debug-assert allow-lists]
    ``EXEMPTIONS`` maps op tags (set by the registry, PyTorch's lists in its autograd codegen)
    to the rules they switch off:

    - ``swaps_storage`` (``set_``): ``input_replaced`` for the arguments the op writes;
    - ``unsafe_alias`` (``_unsafe_view``): ``output_aliases_input``: out-of-place by schema,
      but reuses the fresh storage of its input by design;
    - ``returns_input`` (``lift_fresh``): ``output_not_fresh``: returns its argument.

    Anything else follows from alias annotations: ``Tensor(a!)`` allows data, metadata and
    version changes of that argument, ``Tensor(a) -> Tensor(a)`` requires shared storage. Code
    that keeps references to outputs on purpose (a logging mode storing results, a subclass
    caching them) sets the class attribute ``keeps_output_references = True`` on the mode (when
    it sits below the checker in ``sk.get_mode_stack()``) or on the subclass (a type in
    ``types`` or the output's type): the reference half of ``output_not_fresh`` is then skipped.

Where the mode sits (Note [Mode runs below itself]): a mode checks the ops it *receives*, and
what comes back from the handlers below it.

- Entered INSIDE another mode (``with Other(): with DebugAssertMode():``) it sees every op first
  and its ``func`` call goes to ``Other``: it checks what ``Other`` returns (and, through it,
  subclass handlers and kernels).
- Entered OUTSIDE (``with DebugAssertMode(): with Other():``) ``Other`` sees the op first and the
  ops that ``Other``'s handler calls reach the checker: it checks the kernels ``Other`` calls,
  not ``Other``'s own results.
- Ops called inside a subclass handler or a custom kernel run with the checker off the stack
  (the handler runs below every mode that forwarded to it); the checker checks what the
  handler returns for the op it was given, which is what wrapper subclasses get wrong.
- A mode entered after the checker that declines (``NotImplemented``, e.g. for subclass
  arguments) passes the op down to the checker, whose ``func`` call then runs the subclass
  handler with neither mode on the stack: enter the checker inside such a mode instead.

``pytest --debug-asserts`` runs every test under this mode (``modes/pytest_plugin.py``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import subclass_kit as sk

__all__ = ["DebugAssertMode", "DebugAssertError", "Violation", "RULES", "EXEMPTIONS",
           "exemptions"]

RULES = ("input_replaced", "input_metadata", "output_not_fresh", "output_aliases_input",
         "view_not_aliased", "inplace_not_self", "version_not_bumped", "unexpected_mutation")

# Note [Debug-assert allow-lists]: op tag -> rules it switches off.
EXEMPTIONS = {
    "swaps_storage": frozenset({"input_replaced"}),
    "unsafe_alias": frozenset({"output_aliases_input"}),
    "returns_input": frozenset({"output_not_fresh"}),
}

_FIX = {
    "input_replaced": "write into the argument's existing Storage (e.g. copy_) instead of "
                      "giving it another one; only ops tagged 'swaps_storage' (set_) may",
    "input_metadata": "declare the argument mutable in the schema: Tensor(a!) (an in-place "
                      "metadata op), or leave its sizes/strides/offset alone",
    "output_not_fresh": "return a new tensor (clone() or a new view), not an input, and keep no "
                        "reference to it; a mode or subclass that keeps references on purpose "
                        "sets keeps_output_references = True on its class",
    "output_aliases_input": "return a fresh tensor (clone()); if the output is meant to alias "
                            "the input, say so in the schema: Tensor(a) self -> Tensor(a)",
    "view_not_aliased": "wrap your result with sk.return_and_correct_aliasing (wrapper "
                        "subclasses), or build the output as a view of the input so it shares "
                        "its Storage",
    "inplace_not_self": "return the mutated argument itself: wrap your result with "
                        "sk.return_and_correct_aliasing, or `return self`",
    "version_not_bumped": "let the op resolve through func(*args) (the dispatcher bumps "
                          "mutated arguments once); if the op writes this argument, declare it "
                          "mutable in the schema: Tensor(a!)",
    "unexpected_mutation": "declare the argument mutable in the schema: Tensor(a!), or write "
                           "into a copy",
}

_Tensor = sk.Tensor
_getrefcount = sys.getrefcount
_is_below_autograd = sk.is_below_autograd
# The implementation behind Tensor.numpy, called without the function level so that function
# modes do not see the checker's reads (a public_api callable exposes it as __wrapped_impl__).
_numpy_impl = getattr(_Tensor.numpy, "__wrapped_impl__", None) or _Tensor.numpy


class DebugAssertError(RuntimeError):
    """A schema violation found by :class:`DebugAssertMode`; ``.violations`` lists them."""

    def __init__(self, violations):
        self.violations = list(violations)
        super().__init__("\n".join(v.message for v in self.violations))


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``op`` ("add.Tensor", "mylib::scale.default"), ``rule`` (one of
    ``RULES``), ``argument`` (an argument name such as "self" or "tensors[1]", or the index of
    an output as an int) and ``message`` (names all of these and the fix)."""

    op: str
    rule: str
    argument: object
    message: str

    def __str__(self):
        return self.message


def exemptions(op) -> frozenset:
    """The rules that ``op``'s tags switch off (Note [Debug-assert allow-lists])."""
    out = frozenset()
    for tag in getattr(op, "tags", ()):
        out |= EXEMPTIONS.get(tag, frozenset())
    return out


# -- per-op facts, computed once from the schema ---------------------------------------------------
_MUT, _VIEW, _FRESH, _OTHER = 0, 1, 2, 3


class _Facts:
    """What the checker needs to know about one op, read from its schema and tags once."""

    __slots__ = ("name", "schema_text", "inputs", "arg_names", "returns", "single", "simple",
                 "count_refs", "exempt", "swaps", "bump_if", "writes")

    def __init__(self, op):
        schema = op.schema
        self.name = f"{schema.name}.{op.overload}"
        self.schema_text = str(schema)
        # (position, name, is a list, written by the op)
        self.inputs = tuple((i, a.name, a.is_tensor_list, a.is_write)
                            for i, a in enumerate(schema.arguments)
                            if a.is_tensor or a.is_tensor_list)
        self.arg_names = tuple(a.name for a in schema.arguments)
        self.writes = any(w for *_, w in self.inputs)
        views = {ri: ai for ai, ri in schema.view_pairs}
        rets = []
        for ri, r in enumerate(schema.returns):
            if not r.type.startswith("Tensor"):
                rets.append((_OTHER, None, False))
            elif r.alias is not None and r.alias.is_write:
                ai = next((i for i, a in enumerate(schema.arguments) if a.alias is not None
                           and a.alias.alias_sets & r.alias.alias_sets), None)
                rets.append((_MUT, ai, r.is_tensor_list))
            elif ri in views:
                rets.append((_VIEW, views[ri], r.is_tensor_list))
            else:
                rets.append((_FRESH, None, r.is_tensor_list))
        self.returns = tuple(rets)
        self.single = len(schema.returns) == 1 and not schema.returns_tuple
        # The kind of a single non-list return (the handler's fast path), _OTHER for the rest,
        # None when there is no Tensor return at all.
        if not any(k != _OTHER for k, _, _ in rets):
            self.simple = None
        elif self.single and not rets[0][2] and (
                rets[0][0] != _VIEW or rets[0][1] == self.inputs[0][0]):
            self.simple = rets[0][0]
        else:
            self.simple = _OTHER
        self.exempt = exemptions(op)
        # Reference counts matter for out-of-place returns (fresh and views) only.
        self.count_refs = "output_not_fresh" not in self.exempt and any(
            k in (_FRESH, _VIEW) for k, _, _ in rets)
        self.swaps = "input_replaced" in self.exempt
        self.bump_if = getattr(op, "bump_if", None)


_FACTS: dict = {}   # op -> _Facts, filled on first sight (custom ops included)


# -- reference counts ----------------------------------------------------------------------------
class _Probe:
    pass


def _item_refs(seq, k):
    """References to element ``k`` of a tuple/list output (the container's plus ours)."""
    return _getrefcount(seq[k])


def _calibrate():
    # The handler's frame shape: one local holds a fresh output and asks for its count.
    out = _Probe()
    single = _getrefcount(out)
    seq = (_Probe(),)
    return single, _item_refs(seq, 0)


_FRESH_REFS, _FRESH_ITEM_REFS = _calibrate()


# -- data snapshots ------------------------------------------------------------------------------
def _data(t):
    """The bytes of ``t``'s elements, a tuple of them for a wrapper's inner tensors, or None
    when there is no data (meta, data-less wrappers without ``__tensor_flatten__``)."""
    if type(t) is _Tensor:
        if t.is_meta:
            return None
        return _numpy_impl(t, force=True).tobytes()
    if sk.is_traceable_wrapper_subclass(t):
        names, _ = t.__tensor_flatten__()
        inner = tuple(getattr(t, n) for n in names)
        return tuple(_data(x) if isinstance(x, _Tensor) else None for x in inner)
    if t.is_meta or t.data_ptr() == 0:
        return None
    return _numpy_impl(t.data, force=True).tobytes()


def _version(t):
    try:
        return t._version
    except RuntimeError:  # inference tensors have no counter
        return None


class DebugAssertMode(sk.DispatchMode):
    """Check every op that passes through against its schema (see the module docstring).

    ``raise_on_violation``: raise :class:`DebugAssertError` after an op breaks a rule (the op
    has run); otherwise append :class:`Violation` records to ``self.violations`` (recorded in
    both cases). ``check_data``: also compare the data of arguments not annotated mutable
    (copies each such argument's bytes before the op).
    """

    def __init__(self, raise_on_violation: bool = True, check_data: bool = False):
        self.raise_on_violation = raise_on_violation
        self.check_data = check_data
        self.violations: list = []

    def __repr__(self):
        return (f"DebugAssertMode(raise_on_violation={self.raise_on_violation}, "
                f"check_data={self.check_data})")

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        # The hot path: plain loops, no pytree, facts from the schema cached per op.
        if kwargs is None:
            kwargs = {}
        facts = _FACTS.get(func)
        if facts is None:
            facts = _FACTS[func] = _Facts(func)
        # Snapshot per tensor argument: (tensor, label, written, storage, version, sizes,
        # strides, offset); metadata only for arguments not written (None otherwise).
        n = len(args)
        snaps = []
        lists = None
        for i, name, is_list, writes in facts.inputs:
            a = args[i] if i < n else kwargs.get(name)
            if is_list:
                if a is not None:
                    lists = _snapshot_list(name, a, writes, snaps, lists)
            elif isinstance(a, _Tensor):
                try:
                    v = a._version
                except RuntimeError:  # inference tensors have no counter
                    v = None
                if writes:
                    snaps.append((a, name, True, a.untyped_storage(), v, None, None, None))
                else:
                    snaps.append((a, name, False, a.untyped_storage(), v, a.size(), a.stride(),
                                  a.storage_offset()))
        bump = 1
        mutated = ()
        if facts.writes:
            mutated = [(r[0], r[3]) for r in snaps if r[2]]
            if facts.bump_if is not None and not facts.bump_if(*args, **kwargs):
                bump = 0
        data = _snapshot_data(snaps, mutated) if self.check_data else None

        out = func(*args, **kwargs)

        # Reference counts first, before this frame binds the outputs anywhere else.
        if not facts.count_refs:
            crowded = None
        elif facts.simple == _FRESH or facts.simple == _VIEW:
            crowded = _getrefcount(out) > _FRESH_REFS
        else:
            crowded = _crowded(facts, (out,) if facts.single else out)
        found = []
        versions = not _is_below_autograd()
        swaps = facts.swaps
        for rec in snaps:
            t, label, writes, storage, v, sizes, strides, offset = rec
            if t.untyped_storage() is not storage and not (writes and swaps):
                found.append(("input_replaced", label,
                              f"argument '{label}' has another Storage after the op"))
            if writes:
                if v is not None and versions and t._version - v != bump:
                    found.append(_not_bumped(rec, t, bump))
                continue
            if (t.stride() != strides or t.storage_offset() != offset or t.size() != sizes) and (
                    not _written(t, mutated)):
                found.append(_metadata_changed(rec, t))
            if v is not None and versions and t._version != v:
                moved = t._version - v
                if not (moved == bump and _shares_written(storage, mutated)):
                    found.append(_not_bumped(rec, t, 0))
        if lists:
            _check_lists(lists, found)
        if data:
            _check_data(snaps, data, found)
        kind = facts.simple
        if kind == _FRESH and type(out) is _Tensor:
            # The common cases inlined: one plain Tensor returned by an out-of-place op (fresh
            # storage) or by a view op (its input's storage); the rest goes the long way.
            storage = out.untyped_storage()
            for rec in snaps:
                if rec[0] is out or rec[3] is storage:
                    _check_outputs(facts, args, kwargs, snaps, out, found)
                    break
        elif kind == _VIEW and type(out) is _Tensor and len(snaps) == 1 and (
                snaps[0][0] is not out and out.untyped_storage() is snaps[0][3]):
            pass
        elif kind is not None:
            _check_outputs(facts, args, kwargs, snaps, out, found)
        if crowded:
            if crowded is True:
                crowded = ((0, -1),)
            _check_crowded(facts, types, out, crowded, snaps, found)
        if found:
            self._report(facts, found)
        return out

    def _report(self, facts, found):
        records = [Violation(facts.name, rule, argument, _message(facts, rule, what))
                   for rule, argument, what in found]
        self.violations.extend(records)
        if self.raise_on_violation:
            raise DebugAssertError(records)

    def report(self, file=None) -> str:
        """Print (to ``file``, default stdout) and return a table of the violations: one row per
        (op, rule, argument) with its count and first message."""
        text = format_violations(self.violations)
        print(text, file=file if file is not None else sys.stdout)
        return text


# -- the checks (plain functions: the handler is the hot path) -------------------------------------
def _snapshot_list(name, lst, writes, snaps, lists):
    items = tuple(lst)
    for k, t in enumerate(items):
        if isinstance(t, _Tensor):
            label = f"{name}[{k}]"
            if writes:
                snaps.append((t, label, True, t.untyped_storage(), _version(t), None, None, None))
            else:
                snaps.append((t, label, False, t.untyped_storage(), _version(t), t.size(),
                              t.stride(), t.storage_offset()))
    return (lists or []) + [(name, lst, items)]


def _snapshot_data(snaps, mutated):
    """{snapshot index: bytes} of arguments not written and not sharing a written Storage."""
    mut_storages = [s for _, s in mutated]
    data = {}
    for j, rec in enumerate(snaps):
        if not rec[2] and rec[3] not in mut_storages:
            d = _data(rec[0])
            if d is not None:
                data[j] = d
    return data


def _not_bumped(rec, t, expected):
    label, moved = rec[1], t._version - rec[4]
    if rec[2]:
        what = (f"argument '{label}' is annotated mutable (Tensor(a!)) but its _version moved "
                f"by {moved}, expected {expected}")
    else:
        what = f"argument '{label}' is not annotated mutable but its _version moved by {moved}"
    return ("version_not_bumped", label, what)


def _metadata_changed(rec, t):
    label, sizes, strides, offset = rec[1], rec[5], rec[6], rec[7]
    return ("input_metadata", label,
            f"argument '{label}' is not annotated mutable but its metadata changed: size "
            f"{tuple(sizes)} -> {tuple(t.shape)}, stride {strides} -> {t.stride()}, offset "
            f"{offset} -> {t.storage_offset()}")


def _written(t, mutated) -> bool:
    return any(m is t for m, _ in mutated)


def _shares_written(storage, mutated) -> bool:
    return any(s is storage for _, s in mutated)


def _check_lists(lists, found):
    for name, lst, items in lists:
        if len(lst) != len(items) or any(x is not y for x, y in zip(lst, items)):
            found.append(("input_replaced", name,
                          f"elements of the TensorList argument '{name}' were replaced"))


def _check_data(snaps, data, found):
    for j, before in data.items():
        t, label = snaps[j][0], snaps[j][1]
        if _data(t) != before:
            found.append(("unexpected_mutation", label,
                          f"argument '{label}' is not annotated mutable but its data changed"))


def _is_input(o, snaps) -> bool:
    return any(rec[0] is o for rec in snaps)


def _arg(facts, args, kwargs, ai):
    return args[ai] if ai < len(args) else kwargs.get(facts.arg_names[ai])


def _check_outputs(facts, args, kwargs, snaps, out, found):
    outs = (out,) if facts.single else out
    if not isinstance(outs, (tuple, list)):
        return
    exempt = facts.exempt
    seen = None  # [(storage, where)] of fresh outputs
    for ri, (kind, ai, is_list) in enumerate(facts.returns):
        if kind == _OTHER or ri >= len(outs):
            continue
        res = outs[ri]
        if kind == _MUT:
            if ai is not None and res is not _arg(facts, args, kwargs, ai):
                found.append(("inplace_not_self", ri,
                              f"output {ri} is not the mutated argument "
                              f"'{facts.arg_names[ai]}'"))
            continue
        items = res if is_list and isinstance(res, (list, tuple)) else (res,)
        base = _arg(facts, args, kwargs, ai) if kind == _VIEW else None
        for k, o in enumerate(items):
            if not isinstance(o, _Tensor):
                continue
            if _is_input(o, snaps):
                if "output_not_fresh" not in exempt:
                    found.append(("output_not_fresh", ri,
                                  f"{_where(ri, k, is_list)} is one of the op's inputs"))
                continue
            storage = o.untyped_storage()
            if kind == _VIEW:
                if isinstance(base, _Tensor) and storage is not base.untyped_storage():
                    found.append(("view_not_aliased", ri,
                                  f"{_where(ri, k, is_list)} of a view op does not share the "
                                  f"Storage of '{facts.arg_names[ai]}'"))
                continue
            if "output_aliases_input" in exempt:
                continue
            for rec in snaps:
                if rec[3] is storage:
                    found.append(("output_aliases_input", ri,
                                  f"{_where(ri, k, is_list)} of an out-of-place op shares the "
                                  f"Storage of argument '{rec[1]}'"))
                    break
            else:
                if seen is None:
                    seen = [(storage, ri, k, is_list)]
                    continue
                for s, rj, kj, lj in seen:
                    if s is storage:
                        found.append(("output_aliases_input", ri,
                                      f"{_where(ri, k, is_list)} shares a Storage with "
                                      f"{_where(rj, kj, lj)}"))
                        break
                else:
                    seen.append((storage, ri, k, is_list))


def _where(ri, k, is_list) -> str:
    return f"output {ri}[{k}]" if is_list else f"output {ri}"


def _crowded(facts, out):
    """(return index, element index or -1) of tuple/list outputs with extra references."""
    crowded = None
    if not isinstance(out, (tuple, list)):
        return crowded
    for ri, (kind, _, is_list) in enumerate(facts.returns):
        if kind == _MUT or kind == _OTHER or ri >= len(out):
            continue
        if is_list:
            seq = out[ri]
            if isinstance(seq, (list, tuple)):
                for k in range(len(seq)):
                    if _item_refs(seq, k) > _FRESH_ITEM_REFS:
                        crowded = (crowded or []) + [(ri, k)]
        elif _item_refs(out, ri) > _FRESH_ITEM_REFS:
            crowded = (crowded or []) + [(ri, -1)]
    return crowded


def _check_crowded(facts, types, out, crowded, snaps, found):
    outs = (out,) if facts.single else out
    for ri, k in crowded:
        o = outs[ri] if k < 0 else outs[ri][k]
        if not isinstance(o, _Tensor) or _is_input(o, snaps):
            continue  # not a tensor, or already reported as an input
        if _duplicated(outs, o) or _keeps_references(types, o):
            continue
        found.append(("output_not_fresh", ri,
                      f"{_where(ri, k, k >= 0)} is referenced elsewhere (a kernel, handler or "
                      "mode kept a reference to it)"))


def _message(facts, rule, what) -> str:
    return (f"DebugAssertMode [{rule}] {facts.name}: {what}. Fix: {_FIX[rule]}. "
            f"(schema: {facts.schema_text})")


def _duplicated(outs, o) -> bool:
    n = 0
    for r in outs:
        for x in (r if isinstance(r, (list, tuple)) else (r,)):
            n += x is o
    return n > 1


def _keeps_references(types, o) -> bool:
    """The documented opt-out: ``keeps_output_references = True`` on a subclass taking part in
    the op, on the output's class, or on a mode below the checker."""
    if getattr(type(o), "keeps_output_references", False):
        return True
    for t in types:
        if getattr(t, "keeps_output_references", False):
            return True
    return any(getattr(m, "keeps_output_references", False) for m in sk.get_mode_stack())


def format_violations(violations) -> str:
    """A table of violations grouped by (op, rule, argument), with counts."""
    if not violations:
        return "DebugAssertMode: no violations"
    groups: dict = {}
    for v in violations:
        key = (v.op, v.rule, v.argument)
        if key not in groups:
            groups[key] = [0, v.message]
        groups[key][0] += 1
    rows = [("op", "rule", "argument", "count", "message")]
    for (op, rule, arg), (count, msg) in groups.items():
        label = f"output {arg}" if isinstance(arg, int) else str(arg)
        what = msg.split(": ", 1)[-1].split(". Fix: ")[0]
        rows.append((op, rule, label, str(count), what))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 7)
    return "\n".join(lines)
