"""Tests of the lazily negated view example (negative_tensor.py)."""

import pytest
from negative_tensor import NegativeTensor, neg_view

import subclass_kit as sk


def test_reads_as_negation_without_computing_it():
    x = sk.arange(6.0).view(2, 3)
    n = neg_view(x)
    assert isinstance(n, NegativeTensor) and n.elem is x
    assert n.shape == x.shape and n.stride() == x.stride()
    assert n.resolve().tolist() == (-x).tolist()
    y = n + 1
    assert type(y) is sk.Tensor and y.tolist() == (1 - x).tolist()
    assert (n * n).tolist() == (x * x).tolist()


def test_views_stay_lazy_and_alias():
    x = sk.arange(6.0).view(2, 3)
    n = neg_view(x)
    for v in (n.t(), n[1], n[:, 1:], n.split(2, 1)[0], n.unsqueeze(0).expand(2, 2, 3)):
        assert isinstance(v, NegativeTensor)
        assert v.untyped_storage() is n.untyped_storage() and v._base is n
    assert n.t()[0].resolve().tolist() == [-0.0, -3.0]


def test_writes_go_through_negated():
    x = sk.zeros(2, 3)
    n = neg_view(x)
    assert n.add_(1) is n and n._version == 1
    assert x.tolist() == [[-1.0] * 3] * 2
    n[0].copy_(sk.full((3,), 5.0))
    assert x.tolist() == [[-5.0] * 3, [-1.0] * 3]
    out = neg_view(sk.zeros(3))
    sk.add(sk.ones(3), 1, out=out)
    assert out.elem.tolist() == [-2.0] * 3
    n.t_()
    assert n.shape == (3, 2) and n.elem.shape == (3, 2) and n.stride() == (1, 3)


def test_failed_op_leaves_everything_unchanged():
    x = sk.ones(2, 3)
    n = neg_view(x)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        n.add_(sk.ones(4, 2, 3))
    assert x.tolist() == [[1.0] * 3] * 2 and n._version == 0


def test_traceable():
    n = neg_view(sk.ones(2))
    m = sk.transform_subclass(n, lambda name, t: t * 2)
    assert m.resolve().tolist() == [-2.0, -2.0]
