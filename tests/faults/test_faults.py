"""The fault-injection catalogue: every buggy piece of ``buggy.py`` is reported as exactly the
rule it breaks (the set of rules reported equals ``{fault.rule}``), on every device it supports,
with ``check_data=True`` so that no other rule may fire; and the documented opt-outs report
nothing.

These tests break rules on purpose, so they run without the plugin's own mode.
"""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from faults.buggy import CATALOGUE, OPT_OUTS, Fault
from subclass_kit.modes import DebugAssertError, DebugAssertMode
from subclass_kit.modes.debug_assert import RULES

pytestmark = pytest.mark.no_debug_asserts

CASES = [(f, d) for f in CATALOGUE for d in f.devices]


def _run(fault: Fault, device: str, **mode_kw) -> DebugAssertMode:
    outside = fault.outside() if fault.outside is not None else contextlib.nullcontext()
    mode = DebugAssertMode(raise_on_violation=False, check_data=fault.check_data, **mode_kw)
    with outside:
        with mode:
            fault.run(device)
    return mode


def test_catalogue_covers_every_rule_and_has_twenty_faults():
    assert len(CATALOGUE) >= 20
    assert {f.rule for f in CATALOGUE} == set(RULES)


@pytest.mark.parametrize("fault,device", CASES, ids=[f"{f.name}-{d}" for f, d in CASES])
def test_fault_is_caught_by_exactly_its_rule(fault, device):
    mode = _run(fault, device)
    assert {v.rule for v in mode.violations} == {fault.rule}, mode.violations


@pytest.mark.parametrize("fault,device", CASES, ids=[f"{f.name}-{d}" for f, d in CASES])
def test_fault_raises_with_a_message_naming_op_rule_and_fix(fault, device):
    outside = fault.outside() if fault.outside is not None else contextlib.nullcontext()
    with pytest.raises(DebugAssertError) as info:
        with outside:
            with DebugAssertMode(check_data=fault.check_data):
                fault.run(device)
    err = info.value
    assert isinstance(err, RuntimeError)
    v = err.violations[0]
    assert v.rule == fault.rule
    text = str(err)
    assert f"[{fault.rule}]" in text and v.op in text and "Fix:" in text
    where = v.argument if isinstance(v.argument, str) else f"output {v.argument}"
    assert where in text


# Without check_data the mode runs other compiled filters (no data copies): each fault must
# still reach the general checks and be reported as its rule.
QUICK = [(f, d) for f, d in CASES if f.rule != "unexpected_mutation"]


@pytest.mark.parametrize("fault,device", QUICK, ids=[f"{f.name}-{d}" for f, d in QUICK])
def test_fault_is_caught_without_check_data(fault, device):
    mode = _run(dataclasses.replace(fault, check_data=False), device)
    assert {v.rule for v in mode.violations} == {fault.rule}, mode.violations


@pytest.mark.parametrize("fault", OPT_OUTS, ids=[f.name for f in OPT_OUTS])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_documented_opt_outs_report_nothing(fault, device):
    assert _run(fault, device).violations == []


def test_unexpected_mutation_needs_check_data():
    fault = next(f for f in CATALOGUE if f.rule == "unexpected_mutation")
    quiet = Fault(fault.name, fault.rule, fault.run, fault.devices, fault.outside,
                  check_data=False)
    assert _run(quiet, "cpu").violations == []


def test_meta_view_kernel_bug_is_meta_only():
    from faults.buggy import meta_view_alloc, _t
    with DebugAssertMode(check_data=True) as mode:
        meta_view_alloc(_t("cpu"))
    assert mode.violations == []


def test_checker_outside_a_mode_checks_the_kernels_it_calls_not_its_results():
    # CloneReturnsInput answers clone itself: a checker OUTSIDE it never sees that result...
    from faults.buggy import CloneReturnsInput, _t, identity
    x = _t("cpu")
    with DebugAssertMode(raise_on_violation=False) as outer:
        with CloneReturnsInput():
            assert x.clone() is x
    assert outer.violations == []

    # ...but it does see the ops such a mode calls (here a buggy kernel).
    class CallsIdentity(CloneReturnsInput):
        def bug(self, func, args, kwargs):
            return identity(args[0])

    with DebugAssertMode(raise_on_violation=False) as outer:
        with CallsIdentity():
            x.clone()
    assert [(v.op, v.rule) for v in outer.violations] == [("faults::identity.default",
                                                           "output_not_fresh")]
