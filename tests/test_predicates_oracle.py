"""Dtype and tensor predicates against torch: ``dtype.is_complex`` / ``is_signed`` /
``itemsize`` / ``to_real()`` / ``to_complex()``, ``sk.is_complex`` / ``is_floating_point`` /
``is_signed`` / ``is_nonzero`` and their methods (values, errors, the ops modes see)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import DTYPE_NAMES, SkOpLog, assert_same_error, to_torch, torch_op_log

import subclass_kit as sk

_SCALAR_TYPE = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                "int32": "Int", "int64": "Long"}


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_predicates_match_torch(name, torch):
    ours, theirs = getattr(sk, name), getattr(torch, name)
    assert ours.is_complex is theirs.is_complex is False
    assert ours.is_signed == theirs.is_signed
    assert ours.itemsize == theirs.itemsize
    assert ours.to_real() is ours
    assert str(theirs.to_real()) == f"torch.{name}"


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_to_complex_raises(name, torch):
    ours = getattr(sk, name)
    if name in _SCALAR_TYPE:      # PyTorch raises too: same class and text
        assert_same_error(ours.to_complex, getattr(torch, name).to_complex)
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for ") as e:
        ours.to_complex()
    if name not in _SCALAR_TYPE:  # PyTorch has complex64/128/32; we have none
        assert "no complex dtypes" in str(e.value)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_tensor_predicates_match_torch(name, torch):
    t = sk.zeros(2, dtype=getattr(sk, name))
    u = to_torch(t)
    for fn in ("is_complex", "is_floating_point", "is_signed"):
        assert getattr(sk, fn)(t) == getattr(torch, fn)(u), fn
        assert getattr(t, fn)() == getattr(u, fn)(), fn


@pytest.mark.parametrize("fn", ["is_complex", "is_floating_point", "is_signed", "is_nonzero"])
def test_predicates_refuse_non_tensors(fn, torch):
    assert_same_error(lambda: getattr(sk, fn)(3), lambda: getattr(torch, fn)(3))


@given(st.sampled_from(DTYPE_NAMES), st.one_of(
    st.integers(-3, 3), st.sampled_from([0.0, -0.0, 0.5, float("nan"), float("inf")])))
def test_is_nonzero_matches_torch(name, value):
    import torch
    t = sk.tensor([value]).to(getattr(sk, name))
    u = to_torch(t)
    assert sk.is_nonzero(t) == torch.is_nonzero(u) == t.is_nonzero() == u.is_nonzero()
    z = t.reshape(())
    assert sk.is_nonzero(z) == torch.is_nonzero(to_torch(z))


@pytest.mark.parametrize("shape", [(0,), (2,), (1, 0), (3, 1)])
def test_is_nonzero_errors_match_torch(shape, torch):
    t = sk.zeros(shape)
    assert_same_error(lambda: sk.is_nonzero(t), lambda: torch.is_nonzero(to_torch(t)))
    assert_same_error(t.is_nonzero, to_torch(t).is_nonzero)


def test_modes_see_what_torch_modes_see(torch):
    t = sk.tensor([2.0])
    u = to_torch(t)
    with SkOpLog() as ours:
        sk.is_nonzero(t), t.is_nonzero(), sk.is_complex(t), sk.is_signed(t), t.is_signed()
        sk.is_floating_point(t), t.is_complex()
    with torch_op_log() as theirs:
        torch.is_nonzero(u), u.is_nonzero(), torch.is_complex(u), torch.is_signed(u)
        u.is_signed(), torch.is_floating_point(u), u.is_complex()
    assert ours.ops == theirs.ops == ["_local_scalar_dense", "_local_scalar_dense"]
