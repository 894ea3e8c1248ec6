"""Anomaly detection against torch: ``detect_anomaly`` / ``set_detect_anomaly`` and the
switches, the forward stack each node records, the warnings a failing backward gives (the
node's stack, then those of the nodes that induced it under ``create_graph``), the NaN check,
the version-check error's hint, and that nothing is recorded or checked while it is off."""

from __future__ import annotations

import warnings

import pytest

import subclass_kit as sk
from oracle import normalize_message


def _run(L, program):
    """(the program's result or its error, the warnings as (category, first line, the user
    lines of the stack they show))."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", program(L))
        except RuntimeError as e:
            result = ("RuntimeError", normalize_message(str(e)))
        finally:
            L.set_anomaly_enabled(False)
    seen = []
    for w in caught:
        text = str(w.message).split(" (Triggered internally")[0].strip("\n")
        head, *rest = text.split("\n")
        # the frames of this file: the user's calls (torch's own Python frames may follow)
        ours = [line.strip() for line in rest if line.strip().startswith(("y =", "(g,)", "z ="))]
        seen.append((w.category.__name__, head, ours))
    return result, seen


def _nan_sqrt(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()
        y.backward()


def _nan_unchecked(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly(check_nan=False):
        y = (x.sqrt() * 0).sum()
        y.backward()
    return str(x.grad.tolist())


def _modified(L):
    x = L.ones(2, requires_grad=True)
    with L.autograd.detect_anomaly(check_nan=False):
        y = x * 1
        z = y * y
        y.add_(1)
        z.sum().backward()


def _modified_off(L):
    x = L.ones(2, requires_grad=True)
    y = x * 1
    z = y * y
    y.add_(1)
    z.sum().backward()


def _second_order(L):
    """The failing node was made by a backward (create_graph): its stack, then its parent's."""
    x = L.tensor([1.0, 2.0], requires_grad=True)
    with L.autograd.detect_anomaly(check_nan=False):
        z = x * 1
        y = z ** 3
        (g,) = L.autograd.grad(y.sum(), z, create_graph=True)
        z.add_(1)
        g.sum().backward()


def _custom_function_raises(L):
    class Boom(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("boom in backward")

    x = L.ones(2, requires_grad=True)
    with L.autograd.detect_anomaly():
        y = Boom.apply(x).sum()
        y.backward()


def _made_outside_the_mode(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    y = (x.sqrt() * 0).sum()
    with L.autograd.detect_anomaly():
        y.backward()


def _switches(L):
    out = [L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()]
    with L.autograd.set_detect_anomaly(True, check_nan=False):
        out += [L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()]
        with L.autograd.detect_anomaly():
            out += [L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()]
        out += [L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()]
    L.autograd.set_detect_anomaly(True)
    out += [L.is_anomaly_enabled()]
    L.set_anomaly_enabled(False)
    return out + [L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled(),
                  callable(L.autograd.detect_anomaly())]


def _metadata(L):
    x = L.ones(2, requires_grad=True)
    plain = (x * 2).grad_fn.metadata
    with L.autograd.set_detect_anomaly(True):
        y = x * 2
    stack = y.grad_fn.metadata["traceback_"]
    return (sorted(plain), sorted(y.grad_fn.metadata), type(stack).__name__,
            "y = x * 2" in stack[-1])


PROGRAMS = [_nan_sqrt, _nan_unchecked, _modified, _modified_off, _second_order,
            _custom_function_raises, _made_outside_the_mode, _switches, _metadata]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_anomaly_mode_as_torch(torch, program):
    ours, theirs = _run(sk, program), _run(torch, program)
    assert ours == theirs


def test_set_anomaly_enabled_refuses_non_bools(torch):
    for args in [(1,), (True, 1), ("x",)]:
        with pytest.raises(TypeError) as e_ours:
            sk.set_anomaly_enabled(*args)
        with pytest.raises(TypeError) as e_theirs:
            torch.set_anomaly_enabled(*args)
        assert str(e_ours.value) == str(e_theirs.value)
    assert not sk.is_anomaly_enabled()
