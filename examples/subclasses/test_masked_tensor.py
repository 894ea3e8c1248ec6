"""Tests of the masked tensor example (masked_tensor.py)."""

import math

import pytest
from masked_tensor import MaskedTensor, masked_tensor

import subclass_kit as sk


def _sample():
    data = sk.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = sk.tensor([[True, False, True], [False, False, True]])
    return masked_tensor(data, mask)


def test_pointwise_combines_masks_with_broadcasting():
    m = _sample()
    row = masked_tensor(sk.tensor([10.0, 20.0, 30.0]), sk.tensor([True, True, False]))
    out = m + row
    assert isinstance(out, MaskedTensor)
    assert out.mask.tolist() == [[True, False, False], [False, False, False]]
    assert out.to_dense().tolist()[0] == [11.0, 0.0, 0.0]
    scaled = (m * 2).exp()
    assert scaled.mask.tolist() == m.mask.tolist()
    assert (m > 2).to_dense(False).tolist() == [[False, False, True], [False, False, True]]


def test_reductions_skip_missing_elements():
    m = _sample()
    assert m.sum().to_dense().item() == 10.0
    assert m.sum(0).to_dense().tolist() == [1.0, 0.0, 9.0]
    assert m.sum(0).mask.tolist() == [True, False, True]
    assert m.mean(1).to_dense().tolist() == [2.0, 6.0]
    assert m.amax(1).to_dense().tolist() == [3.0, 6.0]
    assert m.mean().to_dense().item() == pytest.approx(10.0 / 3)
    empty = masked_tensor(sk.ones(2), sk.tensor([False, False]))
    assert empty.sum().mask.item() is False
    assert math.isnan(empty.mean().data_.item())


def test_views_move_data_and_mask_together():
    m = _sample()
    t = m.t()
    assert isinstance(t, MaskedTensor) and t._base is m
    assert t.untyped_storage() is m.untyped_storage()
    assert t.mask.tolist() == [[True, False], [False, False], [True, True]]
    assert m[1].to_dense(-1.0).tolist() == [-1.0, -1.0, 6.0]
    halves = m.split(1, 1)
    assert [h.mask.tolist() for h in halves] == [[[True], [False]], [[False], [False]],
                                                [[True], [True]]]


def test_inplace_updates_data_and_narrows_mask():
    m = _sample()
    other = masked_tensor(sk.ones(2, 3), sk.tensor([[True, True, False], [True, True, True]]))
    assert m.add_(other) is m and m._version == 1
    assert m.mask.tolist() == [[True, False, False], [False, False, True]]
    assert m.data_.tolist()[1][2] == 7.0


def test_unsupported_op_fails_loudly():
    m = _sample()
    with pytest.raises(TypeError, match="Multiple dispatch failed for 'sk.ops.cumsum"):
        m.cumsum(0)
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        masked_tensor(sk.ones(2), sk.ones(2))


def test_traceable():
    m = _sample()
    assert sk.is_traceable_wrapper_subclass(m)
    c = sk.transform_subclass(m, lambda name, t: t.clone())
    assert c.mask.tolist() == m.mask.tolist() and c.data_ is not m.data_
