"""``sk.grad_state()`` / ``sk.set_grad_state()``, the extension API behind ``sk.inference_mode``
(PyTorch has no public counterpart: its modes set the two switches from C++): what
``set_grad_state`` returns, how it coerces, and that a failed call changes nothing."""

import contextlib
import threading

import pytest

import subclass_kit as sk

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@contextlib.contextmanager
def from_state(start):
    """Run the body from switches ``start``; the default (grad on, inference off) comes back
    after it, whatever it did (the pytest plugin checks every test leaves the state as found)."""
    sk.set_grad_state(sk.GradState(*start))
    try:
        yield
    finally:
        sk.set_grad_state(sk.GradState(grad_enabled=True, inference=False))


def switches():
    return (sk.is_grad_enabled(), sk.is_inference_mode_enabled())


# Values of any truthiness: bool() decides, as for ``if value:``.
VALUES = st.one_of(st.booleans(), st.integers(-2, 2), st.none(), st.text(max_size=2),
                   st.lists(st.integers(), max_size=2), st.floats(allow_nan=True))


@hypothesis.given(start=st.tuples(st.booleans(), st.booleans()),
                  grad_enabled=VALUES, inference=VALUES)
def test_set_grad_state_returns_previous_and_coerces(start, grad_enabled, inference):
    with from_state(start):
        check_set(start, grad_enabled, inference)


def check_set(start, grad_enabled, inference):
    before = sk.grad_state()
    assert type(before) is sk.GradState and tuple(before) == start == switches()
    prev = sk.set_grad_state(sk.GradState(grad_enabled, inference))
    assert type(prev) is sk.GradState and prev == before
    assert prev.grad_enabled is start[0] and prev.inference is start[1]
    now = sk.grad_state()
    assert now.grad_enabled is bool(grad_enabled) and now.inference is bool(inference)
    assert switches() == (bool(grad_enabled), bool(inference))
    # the returned state restores the one before exactly
    assert sk.set_grad_state(prev) == now
    assert switches() == start


class Unjudgeable:
    def __bool__(self):
        raise ValueError("no truth value")


@pytest.mark.parametrize("position", [0, 1])
@hypothesis.given(start=st.tuples(st.booleans(), st.booleans()), other=st.booleans())
def test_set_grad_state_that_cannot_coerce_changes_nothing(position, start, other):
    values = [other, other]
    values[position] = Unjudgeable()
    with from_state(start):
        with pytest.raises(ValueError, match="no truth value"):
            sk.set_grad_state(sk.GradState(*values))
        assert switches() == start


def test_grad_state_is_per_thread():
    seen = []
    with from_state((False, True)):
        t = threading.Thread(target=lambda: seen.append((sk.grad_state(), sk.set_grad_state(
            sk.GradState(False, False)), sk.grad_state())))
        t.start()
        t.join()
        assert sk.grad_state() == (False, True)
    assert seen == [((True, False), (True, False), (False, False))]
