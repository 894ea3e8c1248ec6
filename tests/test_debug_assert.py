"""DebugAssertMode on correct code: no false positives (every built-in op over the sample table,
cpu and meta, ``check_data=True``; subclasses, inference tensors, custom ops, other modes), the
records and messages (each naming the line that called the op). The buggy side lives in
``tests/faults/``; the pytest plugin is tested in ``test_pytest_plugin.py``.
"""

from __future__ import annotations

import inspect
import os

import pytest

import subclass_kit as sk
from oracle import Wrapper
from subclass_kit.modes import DebugAssertError, DebugAssertMode
from subclass_kit.modes.debug_assert import (
    EXEMPTIONS,
    RULES,
    Violation,
    exemptions,
    format_violations,
)

# The tests below push their own checker (and some break rules on purpose).
pytestmark = pytest.mark.no_debug_asserts


def _quiet():
    return DebugAssertMode(raise_on_violation=False, check_data=True)


def _rules(mode):
    return [(v.op, v.rule, v.argument) for v in mode.violations]


# -- every built-in op over the sample table -----------------------------------------------------
try:
    import samples as _samples
    _samples.table()
except Exception:  # noqa: BLE001  (the table is another file; a broken table skips the sweep)
    _samples = None

ALL_OPS = sorted(sk.ops, key=lambda op: f"{op.name}.{op.overload}")


def _out_samples(op, entry):
    """out= samples derived from the functional op: run it (unchecked) for the result dtype and
    shape, then pass an empty out tensor of that dtype and a transposed one of that shape."""
    functional = op.functional_variant
    names = [a.name for a in op.schema.arguments if a.is_write and a.kwarg_only]
    found = []
    for s in entry.samples:
        args, kwargs, _ = _samples.build(s, "sk", "cpu", functional)
        try:
            res = functional(*args, **kwargs)
        except Exception:  # noqa: BLE001  (the sample does not apply to this overload)
            continue
        results = [r for r in (res if isinstance(res, (tuple, list)) else (res,))
                   if isinstance(r, sk.Tensor)]
        if len(results) != len(names):
            continue
        per_out = [_samples.out_specs(r.dtype.name, tuple(r.shape)) for r in results]
        for k in range(max(len(p) for p in per_out)):
            specs = [p[min(k, len(p) - 1)] for p in per_out]
            new = _samples.S(*s.args, **s.kwargs, **dict(zip(names, specs)))
            new.meta = s.meta
            found.append(new)
    return found


def _op_samples(op):
    entry = _samples.entry_for(op)
    if entry is None:
        return []
    if op.is_out and entry.derived_from is not None:
        return _out_samples(op, entry)
    return list(entry.samples)


@pytest.mark.skipif(_samples is None, reason="tests/samples.py (the sample table) is missing")
@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: f"{op.name}.{op.overload}")
def test_builtin_op_has_no_violation(op):
    """Every sample of the op, on cpu and meta, under check_data=True: zero violations (a
    sample may raise: then the op had no result to check)."""
    todo = _op_samples(op)
    if not todo:
        pytest.skip(f"no sample for {op}")
    ran = 0
    for sample in todo:
        for device in ("cpu", "meta") if sample.meta is True else ("cpu",):
            args, kwargs, _ = _samples.build(sample, "sk", device, op)
            mode = _quiet()
            try:
                with mode:
                    op(*args, **kwargs)
                ran += 1
            except Exception:  # noqa: BLE001
                pass
            assert mode.violations == [], f"{op} {sample!r} on {device}: {mode.violations}"
    if not ran:
        pytest.skip(f"no sample of {op} runs here")


# -- public API flows ----------------------------------------------------------------------------
def _flow(device):
    x = sk.ones(2, 3, device=device)
    y = x * 2 + 1
    v = y.t()
    v.add_(1)
    w = y.view(3, 2)
    parts = y.split(1)
    z = y[0]
    z.mul_(2)
    y.unsqueeze_(0)
    y.squeeze_(0)
    y.resize_(2, 3)                    # same size: no bump
    y.resize_(6)                       # bump
    y.transpose_(0, 0)
    r = v.reshape(6)                   # clone + _unsafe_view (transposed input)
    d = y.detach()
    c = sk.cat([x, x]) if hasattr(sk, "cat") else x
    o = sk.empty(0, device=device)
    sk.ops.add.out(x, x, out=o)
    sk.ops.add.out(x, x, out=x)           # out aliases self
    x.set_(y.clone())
    return w, parts, r, d, c


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_public_api_flow_has_no_violation(device):
    with _quiet() as mode:
        _flow(device)
        sk.tensor([1.0, 2.0])          # lift_fresh returns its input: exempt by tag
    assert mode.violations == []


def test_inference_tensors_and_inference_mode():
    with _quiet() as mode:
        with sk.inference_mode():
            a = sk.ones(2, 3)
            a.add_(1)                  # inference tensor: no counter, nothing to compare
            b = a.t()
            c = sk.zeros(2, 3)
        d = a * 2                      # inference tensor used outside the mode
        e = c.view(6)
        f = a.detach()                 # inference tensor's detach outside: fresh counter
        n = sk.ones(3)
        with sk.inference_mode():
            n.add_(1)                  # a normal tensor still bumps inside the mode
    assert mode.violations == []
    assert n._version == 1
    del b, d, e, f


class Direct(sk.Tensor):
    """A direct subclass that logs and forwards."""

    seen: list = []

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(func)
        with sk.no_dispatch():
            return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_subclasses_have_no_violation(device):
    with _quiet() as mode:
        w = Wrapper.wrap(sk.ones(2, 3, device=device))
        w2 = w * 2
        v = w2.t()
        parts = w2.split(1)
        w2.add_(1)
        w2.t_()
        sk.ops.mul.out(w, w, out=Wrapper.wrap(sk.empty(2, 3, device=device)))
        p = sk.make_subclass(Direct, sk.ones(2, 3, device=device))
        q = p + 1
        p.mul_(2)
        r = p.view(6)
    assert mode.violations == [], _rules(mode)
    assert w2.shape == (3, 2) and v.untyped_storage() is w2.untyped_storage()
    del parts, q, r


def test_custom_ops_have_no_violation():
    lib = sk.library
    scale = lib.define("dacheck::scale(Tensor self, float k) -> Tensor")
    lib.impl(scale, "cpu")(lambda self, k: self * k)
    lib.impl(scale, "meta")(lambda self, k: sk.empty(self.shape, device="meta"))
    first = lib.define("dacheck::first(Tensor(a) self) -> Tensor(a)")
    lib.impl(first, "cpu")(lambda self: self.select(0, 0))
    lib.impl(first, "meta")(lambda self: self.select(0, 0))
    halves = lib.define("dacheck::halves(Tensor(a -> *) self) -> Tensor(a)[]")
    lib.impl(halves, "cpu")(lambda self: list(self.split(1)))
    lib.impl(halves, "meta")(lambda self: list(self.split(1)))
    bump = lib.define("dacheck::bump_(Tensor(a!) self) -> Tensor(a!)")
    lib.impl(bump, "cpu")(lambda self: self.add_(1))
    lib.impl(bump, "meta")(lambda self: self)
    put = lib.define("dacheck::put.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    lib.impl(put, "cpu")(lambda self, *, out: out.copy_(self))
    lib.impl(put, "meta")(lambda self, *, out: out)
    for device in ("cpu", "meta"):
        x = sk.ones(2, 3, device=device)
        with _quiet() as mode:
            scale(x, 2.0)
            first(x)
            halves(x)
            bump(x)
            put(x, out=sk.empty(2, 3, device=device))
        assert mode.violations == [], (device, _rules(mode))
        assert x._version == 1


def test_checker_inside_a_subclass_handler_skips_versions_below_autograd():
    class Inner(Wrapper):
        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            # Below autograd nothing bumps: the checker must not expect it to.
            assert sk.is_below_autograd()
            with _quiet() as inner:
                out = Wrapper.__tensor_dispatch__.__func__(cls, func, types, args, kwargs)
            found.extend(inner.violations)
            return out

    found = []
    w = sk.make_wrapper_subclass(Inner, (2,))
    w.elem = sk.ones(2)
    w.add_(1)
    assert found == []


def test_modes_stack_inside_and_outside():
    class Noop(sk.DispatchMode):
        pass

    x = sk.ones(2, 3)
    with Noop():
        with _quiet() as inner:
            _ = (x + 1).t().sum(0) if hasattr(sk.Tensor, "sum") else (x + 1).t()
    with _quiet() as outer:
        with Noop():
            _ = (x + 1).t()
    assert inner.violations == [] and outer.violations == []


def test_version_rule_follows_bump_if_of_resize():
    x = sk.ones(2, 3)
    with DebugAssertMode() as mode:
        x.resize_(2, 3)
        x.resize_(3, 3)
    assert x._version == 1 and mode.violations == []


# -- the compiled filters (check_data=False) -----------------------------------------------------
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_flows_have_no_violation_without_check_data(device):
    """The filters without data copies (tests/faults checks that they catch every fault)."""
    with DebugAssertMode(raise_on_violation=False) as mode:
        _flow(device)
        w = Wrapper.wrap(sk.ones(2, 3, device=device))
        (w * 2).t().add_(1)
        with sk.inference_mode():
            a = sk.ones(2, 3, device=device)
            a.add_(1)
        (a * 2).view(6)
    assert mode.violations == [], _rules(mode)


def test_filter_reads_keyword_tensors_and_missing_kwargs():
    lib = sk.library
    shift = lib.define("dacheck::shift(Tensor self, *, Tensor other) -> Tensor")
    lib.impl(shift, "cpu")(lambda self, *, other: self + other)
    bad = lib.define("dacheck::bad_shift(Tensor self, *, Tensor other) -> Tensor")
    lib.impl(bad, "cpu")(lambda self, *, other: self + other.t_())   # moves other's strides
    x, y = sk.ones(2, 2), sk.ones(2, 2)
    with DebugAssertMode(raise_on_violation=False) as mode:
        shift(x, other=y)
        bad(x, other=y)
    assert _rules(mode) == [("dacheck::bad_shift.default", "input_metadata", "other")]
    direct = DebugAssertMode()   # handlers may be called with kwargs=None
    out = direct.__tensor_dispatch__(sk.ops.add.Tensor, (), (x, x), None)
    assert out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert direct.__tensor_dispatch__(sk.ops.add_.Tensor, (), (x, x), None) is x
    assert x._version == 1 and direct.violations == []


# -- records, messages, report -------------------------------------------------------------------
class _CloneIsInput(sk.DispatchMode):
    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        if func is sk.ops.clone.default:
            return args[0]
        return func(*args, **(kwargs or {}))


def test_records_and_error():
    x = sk.ones(2)
    with _CloneIsInput():
        with DebugAssertMode(raise_on_violation=False) as mode:
            x.clone()
            x.clone()
    assert len(mode.violations) == 2
    v = mode.violations[0]
    assert isinstance(v, Violation)
    assert (v.op, v.rule, v.argument) == ("clone.default", "output_not_fresh", 0)
    assert "clone.default" in v.message and "output 0" in v.message and "Fix:" in v.message
    with _CloneIsInput():
        with pytest.raises(DebugAssertError, match=r"\[output_not_fresh\] clone.default") as e:
            with DebugAssertMode():
                x.clone()
    assert isinstance(e.value, RuntimeError) and e.value.violations[0].rule == "output_not_fresh"
    assert sk.get_mode_stack() == []


def test_violation_names_the_line_that_called_the_op():
    x = sk.ones(2)
    with _CloneIsInput():
        with DebugAssertMode(raise_on_violation=False) as mode:
            line = inspect.currentframe().f_lineno + 1
            x.clone()
        with pytest.raises(DebugAssertError) as info:
            with DebugAssertMode():
                raising_line = inspect.currentframe().f_lineno + 1
                x.clone()
    (v,) = mode.violations
    here = os.path.relpath(__file__) if __file__.startswith(os.getcwd()) else __file__
    assert v.where == f"{here}:{line}"
    assert f"clone.default at {here}:{line}: output 0" in v.message
    assert f"at {here}:{raising_line}:" in str(info.value)
    assert f"{here}:{line}" in format_violations(mode.violations)   # the "first at" column


def test_report_prints_a_table(capsys):
    x = sk.ones(2)
    with _CloneIsInput():
        with DebugAssertMode(raise_on_violation=False) as mode:
            x.clone()
            x.clone()
    text = mode.report()
    out = capsys.readouterr().out
    assert text in out
    header, _, row = text.splitlines()[:3]
    assert header.split()[:4] == ["op", "rule", "argument", "count"]
    assert row.split()[:5] == ["clone.default", "output_not_fresh", "output", "0", "2"]
    assert DebugAssertMode().report() == "DebugAssertMode: no violations"


def test_fix_texts_name_the_remedies():
    from faults.buggy import ForgetfulWrapper
    w = ForgetfulWrapper.wrap(sk.ones(2, 3))
    with pytest.raises(DebugAssertError, match="sk.return_and_correct_aliasing"):
        with DebugAssertMode():
            w.t()
    from faults.buggy import sneaky
    with pytest.raises(DebugAssertError, match=r"declare the argument mutable in the schema: "
                                               r"Tensor\(a!\)"):
        with DebugAssertMode(check_data=True):
            sneaky(sk.ones(2), sk.ones(2))


def test_allow_lists_come_from_tags():
    assert set(RULES) >= {r for rules in EXEMPTIONS.values() for r in rules}
    assert exemptions(sk.ops.set_.source_Tensor) == {"input_replaced"}
    assert exemptions(sk.ops._unsafe_view.default) == {"output_aliases_input"}
    assert exemptions(sk.ops.lift_fresh.default) == {"output_not_fresh"}
    assert exemptions(sk.ops.add.Tensor) == frozenset()
    # a packet has no tags of its own: naming it is an error, not an empty allow-list
    with pytest.raises(TypeError, match=r"packet sk\.ops\._unsafe_view.*default"):
        exemptions(sk.ops._unsafe_view)
