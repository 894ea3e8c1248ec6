"""Type promotion against torch: ``promote_types`` and ``can_cast`` for every dtype pair,
``result_type`` for every pair of operands among dimensioned tensors, 0-d tensors and Python
numbers (bool, int, float), the dtype ops actually return, and the default dtype's effect."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle of these tests")

import subclass_kit as sk

NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64")
PAIRS = list(itertools.product(NAMES, NAMES))
NUMBERS = (True, 0, -3, 2 ** 40, 1.5, float("inf"))


def _sk(name):
    return getattr(sk, name)


def _torch(name):
    return getattr(torch, name)


def _name(d):
    return str(d).replace("torch.", "").replace("sk.", "")


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_and_can_cast(a, b):
    assert _name(sk.promote_types(_sk(a), _sk(b))) == _name(torch.promote_types(_torch(a),
                                                                                _torch(b)))
    assert sk.can_cast(_sk(a), _sk(b)) == torch.can_cast(_torch(a), _torch(b))


def _operand(kind, name, lib):
    if kind == "tensor":
        return lib.zeros(2, dtype=getattr(lib, name))
    return lib.zeros((), dtype=getattr(lib, name))


@pytest.mark.parametrize("a,b", PAIRS)
def test_result_type_tensor_combinations(a, b):
    for ka, kb in itertools.product(("tensor", "0d"), repeat=2):
        want = torch.result_type(_operand(ka, a, torch), _operand(kb, b, torch))
        got = sk.result_type(_operand(ka, a, sk), _operand(kb, b, sk))
        assert _name(got) == _name(want), (ka, a, kb, b)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("number", NUMBERS, ids=repr)
def test_result_type_with_numbers(name, number):
    for kind in ("tensor", "0d"):
        want = torch.result_type(_operand(kind, name, torch), number)
        assert _name(sk.result_type(_operand(kind, name, sk), number)) == _name(want)
        want = torch.result_type(number, _operand(kind, name, torch))
        assert _name(sk.result_type(number, _operand(kind, name, sk))) == _name(want)


@pytest.mark.parametrize("x,y", list(itertools.product(NUMBERS, NUMBERS)), ids=repr)
def test_result_type_of_two_numbers(x, y):
    assert _name(sk.result_type(x, y)) == _name(torch.result_type(x, y))


@pytest.mark.parametrize("a,b", PAIRS)
def test_ops_return_the_promoted_dtype(a, b):
    """The dtype of real results (arithmetic, true division, comparison) on all operand kinds."""
    for ka, kb in (("tensor", "tensor"), ("tensor", "0d"), ("0d", "tensor")):
        xs, ys = _operand(ka, a, sk), _operand(kb, b, sk)
        xt, yt = _operand(ka, a, torch), _operand(kb, b, torch)
        assert _name((xs * ys).dtype) == _name((xt * yt).dtype)
        assert _name((xs / ys).dtype) == _name((xt / yt).dtype)
        assert _name(sk.maximum(xs, ys).dtype) == _name(torch.maximum(xt, yt).dtype)
        assert (xs == ys).dtype is sk.bool


def test_default_dtype_drives_float_numbers_and_true_division():
    x = sk.tensor([1, 2])
    previous = sk.get_default_dtype()
    try:
        sk.set_default_dtype(sk.float64)
        assert (x * 1.5).dtype is sk.float64 and (x / 2).dtype is sk.float64
        assert sk.result_type(2, 2.5) is sk.float64
        assert (sk.ones(2, dtype=sk.float16) * 2.5).dtype is sk.float16
        assert x.exp().dtype is sk.float64
    finally:
        sk.set_default_dtype(previous)
    assert (x * 1.5).dtype is sk.float32


def test_result_type_rejects_non_numbers():
    with pytest.raises(TypeError):
        sk.result_type(sk.ones(2), "a")
