"""``sk._check`` and its siblings against ``torch._check*``: the error class and message for every
kind of condition and message, the message called only on failure, ``_check_is_size``'s bounds
and FutureWarning, and the port of a program that uses them."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import subclass_kit as sk  # noqa: E402
from subclass_kit.port import port_source  # noqa: E402

NAMES = ["_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented"]
CONDITIONS = {"true": lambda m: True, "false": lambda m: False, "int": lambda m: 1,
              "none": lambda m: None, "tensor": lambda m: m.tensor(True)}
MESSAGES = {"none": None, "text": lambda: "bad size", "number": lambda: 42,
            "object": lambda: ValueError("inner"), "not_callable": "a string"}


def _outcome(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(*args, **kwargs)
            result = None
        except Exception as e:  # noqa: BLE001 (the class is what is compared)
            result = (type(e).__name__, str(e))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


@given(st.sampled_from(NAMES), st.sampled_from(sorted(CONDITIONS)),
       st.sampled_from(sorted(MESSAGES)))
def test_check_matches_torch(name, cond, message):
    msg = MESSAGES[message]
    ours = _outcome(getattr(sk, name), CONDITIONS[cond](sk), msg)
    theirs = _outcome(getattr(torch, name), CONDITIONS[cond](torch), msg)
    assert ours == theirs


@pytest.mark.parametrize("error", [RuntimeError, KeyError, UserWarning, int])
def test_check_with_matches_torch(error):
    for cond in (True, False):
        ours = _outcome(sk._check_with, error, cond, lambda: "m")
        assert ours == _outcome(torch._check_with, error, cond, lambda: "m")


def test_default_message_and_classes():
    classes = [RuntimeError, IndexError, ValueError, TypeError, NotImplementedError]
    for name, cls in zip(NAMES, classes):
        with pytest.raises(cls, match=r"^Expected cond to be True, but got False\. \(Could this "
                           r"error message be improved\? If so, please report an enhancement "
                           r"request to PyTorch\.\)$"):
            getattr(sk, name)(False)


def test_message_is_called_only_on_failure():
    calls = []
    sk._check(True, lambda: calls.append(1))
    assert calls == []
    with pytest.raises(RuntimeError, match="^None$"):
        sk._check(False, lambda: calls.append(1))
    assert calls == [1]


@pytest.mark.parametrize("args,kwargs", [((3,), {}), ((0,), {}), ((-1,), {}),
                                         ((5,), {"max": 3}), ((3,), {"max": 3}),
                                         ((-2, lambda: "neg"), {"max": 4}), ((2.5,), {})])
def test_check_is_size_matches_torch(args, kwargs):
    ours = _outcome(sk._check_is_size, *args, **kwargs)
    assert ours == _outcome(torch._check_is_size, *args, **kwargs)
    assert ours[1] and ours[1][0][0] == "FutureWarning"


def test_check_is_size_of_a_tensor_raises_type_error():
    assert _outcome(sk._check_is_size, sk.tensor(3))[0] == \
        _outcome(torch._check_is_size, torch.tensor(3))[0]


def test_port_renames_the_checks():
    source = ("import torch\n"
              "from torch import _check_index\n"
              "torch._check(x > 0, lambda: 'x')\n"
              "torch._check_value(True)\n"
              "torch._check_is_size(n, max=4)\n"
              "_check_index(True)\n")
    text, port_warnings = port_source(source)
    assert port_warnings == []
    assert "sk._check(x > 0, lambda: 'x')" in text
    assert "sk._check_value(True)" in text and "sk._check_is_size(n, max=4)" in text
    assert "from subclass_kit import _check_index" in text
    assert "torch" not in text.replace("import subclass_kit as sk", "")
