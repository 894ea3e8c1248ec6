"""Tests of the Parameter-like direct subclass example (parameter_tensor.py)."""

import pytest
from parameter_tensor import FrozenParameter, Parameter

import subclass_kit as sk


def test_is_the_data_with_its_own_metadata():
    data = sk.arange(6.0).view(2, 3)
    p = Parameter(data)
    assert isinstance(p, Parameter) and isinstance(p, sk.Tensor)
    assert p.requires_grad and p.is_leaf and not data.requires_grad
    assert p.untyped_storage() is data.untyped_storage() and p.data_ptr() == data.data_ptr()
    assert p.tolist() == data.tolist()
    assert not Parameter(sk.ones(2), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")


def test_keeps_class_through_ops():
    p = Parameter(sk.arange(6.0).view(2, 3), requires_grad=False)
    for out in (p + 1, p * 2, p.t(), p[0], p.reshape(6), p.split(1)[0], sk.relu(p),
                p.detach(), p.sum()):
        assert type(out) is Parameter, out
    assert (p.t() * 2).tolist() == [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]]


def test_shares_version_counter_with_data():
    data = sk.zeros(3)
    p = Parameter(data, requires_grad=False)
    p.add_(1)
    assert data._version == 1 and p._version == 1 and data.tolist() == [1.0, 1.0, 1.0]
    v = p[1:]
    v.mul_(5)
    assert data.tolist() == [1.0, 5.0, 5.0] and p._version == 2


def test_opting_out_gives_plain_tensors():
    f = FrozenParameter(sk.ones(2, 2), requires_grad=False)
    assert type(f) is FrozenParameter
    assert type(f + 1) is sk.Tensor and type(f.t()) is sk.Tensor


def test_make_subclass_rejects_non_tensor_classes():
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        sk.make_subclass(dict, sk.ones(1))
