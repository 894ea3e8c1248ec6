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
- ``version_not_bumped``: a mutated argument's ``_version`` did not move by exactly one per
  mutated argument sharing its counter (none when ``op.bump_if`` says so: ``resize_`` to the
  same size), or an argument not mutated moved otherwise;
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

What it costs: each op gets a check plan and a compiled filter on first sight
(``modes/debug_assert_plan.py``): straight-line tests of identities (same Storage, same layout
object, version moved by the expected bump, output fresh or aliased as the schema says) that
let a clean op through at a fraction of its own cost; anything they do not pass, and every
subclass or TensorList argument, goes through the general checks below, which apply each rule
and write the messages. On small tensors the checker's own work costs much less than having a
dispatch mode at all (``bench/debug_assert.py`` prints both).

``pytest --debug-asserts`` runs every test under this mode (``pytest_subclass_kit.py``, the
pytest plugin installed with the package). Each violation names the line that called the op
(``Violation.where``): the frame is looked up only when a violation is recorded.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import subclass_kit as sk

from .debug_assert_plan import (
    FRESH,
    FRESH_REFS,
    MUT,
    OTHER,
    SLOW,
    VIEW,
    Plan,
    compile_filter,
    crowded_outputs,
    data_of,
    state,
)

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


class DebugAssertError(RuntimeError):
    """A schema violation found by :class:`DebugAssertMode`; ``.violations`` lists them."""

    def __init__(self, violations):
        self.violations = list(violations)
        super().__init__("\n".join(v.message for v in self.violations))


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``op`` ("add.Tensor", "mylib::scale.default"), ``rule`` (one of
    ``RULES``), ``argument`` (an argument name such as "self" or "tensors[1]", or the index of
    an output as an int), ``message`` (names all of these and the fix) and ``where``
    ("tests/test_model.py:42": the line of the code that called the op, the first frame outside
    subclass_kit, its modes and pytest; "" when there is none)."""

    op: str
    rule: str
    argument: object
    message: str
    where: str = ""

    def __str__(self):
        return self.message


def exemptions(op) -> frozenset:
    """The rules that the tags of ``op`` (an ``sk.OpOverload``) switch off (Note [Debug-assert
    allow-lists]).

    Raises TypeError for an ``sk.OpOverloadPacket``: exemptions belong to overloads (their
    tags), and a packet has none (``sk.ops.add`` -> name one, such as ``sk.ops.add.Tensor``)."""
    if isinstance(op, sk.OpOverloadPacket):
        raise TypeError(f"exemptions(): op must be an OpOverload, got the packet {op}; name one "
                        f"of its overloads: {', '.join(op.overloads())}")
    out = frozenset()
    for tag in getattr(op, "tags", ()):
        out |= EXEMPTIONS.get(tag, frozenset())
    return out


# -- the mode ------------------------------------------------------------------------------------
_PLANS: dict = {}                  # op -> Plan, filled on first sight (custom ops included)
_FILTERS: dict = {}                # op -> its compiled filter
_FILTERS_DATA: dict = {}           # op -> its compiled filter with check_data
_NO_KWARGS: dict = {}


def _plan(op):
    plan = _PLANS.get(op)
    if plan is None:
        plan = _PLANS[op] = Plan(op, exemptions(op))
    return plan


def _filter(op, check_data: bool):
    fast = compile_filter(_plan(op), check_data, _post)
    (_FILTERS_DATA if check_data else _FILTERS)[op] = fast
    return fast


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
        # The op's compiled filter answers for plain tensors (modes/debug_assert_plan.py).
        check_data = self.check_data
        fast = (_FILTERS_DATA if check_data else _FILTERS).get(func) or _filter(func, check_data)
        out = fast(self, func, types, args, kwargs)
        if out is not SLOW:
            return out
        # The general path: subclasses, TensorLists. One record per tensor argument:
        # (tensor, label, written, storage, layout, version).
        if kwargs is None:
            kwargs = _NO_KWARGS
        plan = _plan(func)
        n = len(args)
        snaps = []
        for i, name in plan.reads:
            a = args[i] if i < n else kwargs.get(name)
            if isinstance(a, _Tensor):
                snaps.append((a, name, False, *state(a)))
        bump = 1
        if plan.mutates:
            for i, name in plan.writes:
                a = args[i] if i < n else kwargs.get(name)
                if isinstance(a, _Tensor):
                    snaps.append((a, name, True, *state(a)))
            if plan.bump_if is not None and not plan.bump_if(*args, **kwargs):
                bump = 0
        lists = _snapshot_lists(plan, args, kwargs, snaps) if plan.lists else None
        data = _snapshot_data(snaps) if check_data else None

        out = func(*args, **kwargs)

        # Reference counts first, before this frame binds the outputs anywhere else.
        if not plan.count_refs:
            crowded = None
        elif plan.simple == FRESH or plan.simple == VIEW:
            crowded = _getrefcount(out) > FRESH_REFS
        else:
            crowded = crowded_outputs(plan, (out,) if plan.single else out)
        return _post(self, plan, types, args, kwargs, snaps, out, bump, crowded, lists, data)

    def _report(self, plan, found):
        where = _caller()   # only here: a clean op never pays for the frame walk
        records = [Violation(plan.name, rule, argument, _message(plan, rule, what, where), where)
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


# -- the checks ----------------------------------------------------------------------------------
def _post(mode, plan, types, args, kwargs, snaps, out, bump, crowded, lists, data):
    """Every rule, after the op ran: ``snaps`` are the argument records taken before it,
    ``crowded`` the outputs with extra references (counted in the caller's frame), ``data``
    {record index: bytes} with check_data."""
    found = []
    for rec in snaps:
        _check_input(plan, rec, *state(rec[0]), bump, snaps, found)
    if lists:
        _check_lists(lists, found)
    if data:
        _check_data(snaps, data, found)
    if plan.simple is not None:
        _check_outputs(plan, args, kwargs, snaps, out, found)
    if crowded:
        if crowded is True:
            crowded = ((0, -1),)
        _check_crowded(plan, types, out, crowded, snaps, found)
    if found:
        mode._report(plan, found)
    return out


def _snapshot_lists(plan, args, kwargs, snaps):
    """Records of TensorList elements (into ``snaps``); (name, list, its items) per list."""
    lists = []
    n = len(args)
    for i, name, writes in plan.lists:
        lst = args[i] if i < n else kwargs.get(name)
        if lst is None:
            continue
        items = tuple(lst)
        for k, t in enumerate(items):
            if isinstance(t, _Tensor):
                snaps.append((t, f"{name}[{k}]", writes, *state(t)))
        lists.append((name, lst, items))
    return lists


def _snapshot_data(snaps):
    """{record index: bytes} of arguments not written and not sharing a written Storage."""
    found = {}
    for j, rec in enumerate(snaps):
        if not rec[2] and not _shares_written(rec[3], snaps):
            d = data_of(rec[0])
            if d is not None:
                found[j] = d
    return found


def _check_input(plan, rec, storage, layout, v, bump, snaps, found):
    """The rules for one argument (``storage``, ``layout``, ``v``: after the op; ``rec``: its
    snapshot)."""
    t, label, written, storage0, layout0, v0 = rec
    if storage is not storage0 and not (written and plan.swaps):
        found.append(("input_replaced", label,
                      f"argument '{label}' has another Storage after the op"))
    # Below autograd (inside a subclass handler or custom kernel) nothing bumps.
    moved = None if v0 is None or v is None or _is_below_autograd() else v - v0
    if written:
        if moved is not None and moved != bump:
            expected = _expected_move(t, bump, snaps)
            if moved != expected:
                found.append(("version_not_bumped", label,
                              f"argument '{label}' is annotated mutable (Tensor(a!)) but its "
                              f"_version moved by {moved}, expected {expected}"))
        return
    if layout is not layout0 and layout != layout0 and not _written(t, snaps):
        found.append(("input_metadata", label,
                      f"argument '{label}' is not annotated mutable but its metadata changed: "
                      f"size {tuple(layout0[0])} -> {tuple(layout[0])}, stride {layout0[1]} -> "
                      f"{layout[1]}, offset {layout0[2]} -> {layout[2]}"))
    # An argument sharing the Storage of a written one moves with it.
    if moved and not (_shares_written(storage0, snaps)
                      and moved == _expected_move(t, bump, snaps)):
        found.append(("version_not_bumped", label, f"argument '{label}' is not annotated "
                      f"mutable but its _version moved by {moved}"))


def _expected_move(t, bump, snaps) -> int:
    """How far ``t``'s version moves: ``bump`` once per written argument sharing its version
    counter (a view of another written argument, ``out=(x[0], x[1])``: Note [Version
    counters])."""
    vc = t._vc
    return bump * sum(1 for rec in snaps if rec[2] and rec[0]._vc is vc)


def _written(t, snaps) -> bool:
    return any(rec[2] and rec[0] is t for rec in snaps)


def _shares_written(storage, snaps) -> bool:
    return any(rec[2] and rec[3] is storage for rec in snaps)


def _check_lists(lists, found):
    for name, lst, items in lists:
        if len(lst) != len(items) or any(x is not y for x, y in zip(lst, items)):
            found.append(("input_replaced", name,
                          f"elements of the TensorList argument '{name}' were replaced"))


def _check_data(snaps, data, found):
    for j, before in data.items():
        t, label = snaps[j][0], snaps[j][1]
        if data_of(t) != before:
            found.append(("unexpected_mutation", label,
                          f"argument '{label}' is not annotated mutable but its data changed"))


def _is_input(o, snaps) -> bool:
    return any(rec[0] is o for rec in snaps)


def _arg(plan, args, kwargs, ai):
    return args[ai] if ai < len(args) else kwargs.get(plan.arg_names[ai])


def _check_outputs(plan, args, kwargs, snaps, out, found):
    outs = (out,) if plan.single else out
    if not isinstance(outs, (tuple, list)):
        return
    exempt = plan.exempt
    seen = None  # [(storage, where)] of fresh outputs
    for ri, (kind, ai, is_list) in enumerate(plan.returns):
        if kind == OTHER or ri >= len(outs):
            continue
        res = outs[ri]
        if kind == MUT:
            if ai is not None and res is not _arg(plan, args, kwargs, ai):
                found.append(("inplace_not_self", ri,
                              f"output {ri} is not the mutated argument "
                              f"'{plan.arg_names[ai]}'"))
            continue
        items = res if is_list and isinstance(res, (list, tuple)) else (res,)
        base = _arg(plan, args, kwargs, ai) if kind == VIEW else None
        for k, o in enumerate(items):
            if not isinstance(o, _Tensor):
                continue
            if _is_input(o, snaps):
                if "output_not_fresh" not in exempt:
                    found.append(("output_not_fresh", ri,
                                  f"{_where(ri, k, is_list)} is one of the op's inputs"))
                continue
            storage = o.untyped_storage()
            if kind == VIEW:
                if isinstance(base, _Tensor) and storage is not base.untyped_storage():
                    found.append(("view_not_aliased", ri,
                                  f"{_where(ri, k, is_list)} of a view op does not share the "
                                  f"Storage of '{plan.arg_names[ai]}'"))
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


def _check_crowded(plan, types, out, crowded, snaps, found):
    outs = (out,) if plan.single else out
    for ri, k in crowded:
        o = outs[ri] if k < 0 else outs[ri][k]
        if not isinstance(o, _Tensor) or _is_input(o, snaps):
            continue  # not a tensor, or already reported as an input
        if _duplicated(outs, o) or _keeps_references(types, o):
            continue
        found.append(("output_not_fresh", ri,
                      f"{_where(ri, k, k >= 0)} is referenced elsewhere (a kernel, handler or "
                      "mode kept a reference to it)"))


def _head(rule, op, where) -> str:
    return f"DebugAssertMode [{rule}] {op}" + (f" at {where}: " if where else ": ")


def _message(plan, rule, what, where="") -> str:
    return (f"{_head(rule, plan.name, where)}{what}. Fix: {_FIX[rule]}. "
            f"(schema: {plan.schema_text})")


# Frames of these modules are the checker's machinery, not the code that called the op:
# subclass_kit and its modes (also code they generate), pytest and pluggy. Files are matched by
# directory too (also through the modes/ link), for frames whose globals name no module.
_MACHINERY = ("subclass_kit", "_pytest", "pluggy", "pytest_subclass_kit")
_HERE = os.path.dirname(os.path.abspath(__file__))
_CORE = os.path.dirname(os.path.abspath(sk.__file__))
_INTERNAL = tuple(sorted({d + os.sep for p in (_HERE, _CORE) for d in (p, os.path.realpath(p))}))


def _is_machinery(frame) -> bool:
    module = frame.f_globals.get("__name__") or ""
    if module.partition(".")[0] in _MACHINERY:
        return True
    return frame.f_code.co_filename.startswith(_INTERNAL)


def _caller() -> str:
    """``file:line`` of the innermost frame outside subclass_kit, its modes and pytest (the
    user code that called the op), the file relative to the working directory when under it."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_machinery(frame):
            name = frame.f_code.co_filename
            try:
                cwd = os.getcwd() + os.sep
            except OSError:   # the working directory was removed
                cwd = None
            if cwd and name.startswith(cwd):
                name = name[len(cwd):]
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


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
            groups[key] = [0, v]
        groups[key][0] += 1
    rows = [("op", "rule", "argument", "count", "first at", "message")]
    for (op, rule, arg), (count, v) in groups.items():
        label = f"output {arg}" if isinstance(arg, int) else str(arg)
        where = getattr(v, "where", "")
        head = _head(rule, op, where)
        msg = v.message[len(head):] if v.message.startswith(head) else v.message
        rows.append((op, rule, label, str(count), where or "-", msg.split(". Fix: ")[0]))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 7)
    return "\n".join(lines)
