"""Tests of the diagonal matrix example (diagonal_tensor.py)."""

import pytest
from diagonal_tensor import DiagonalTensor, diag_matrix

import subclass_kit as sk


def _d():
    return diag_matrix(sk.tensor([1.0, 2.0, 3.0]))


def test_presents_a_dense_matrix_but_stores_n_numbers():
    d = _d()
    assert d.shape == (3, 3) and d.stride() == (3, 1) and d.dtype == sk.float32
    assert d.to_dense().tolist() == [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]
    assert d.diag.untyped_storage().nbytes() == 3 * 4


def test_structure_preserving_rules():
    d = _d()
    for out, want in ((d + d, [2.0, 4.0, 6.0]), (d * 3, [3.0, 6.0, 9.0]),
                      (2 * d, [2.0, 4.0, 6.0]), (d @ d, [1.0, 4.0, 9.0]),
                      (-d, [-1.0, -2.0, -3.0]), (d - d, [0.0, 0.0, 0.0]),
                      (d * sk.ones(3, 3), [1.0, 2.0, 3.0])):
        assert isinstance(out, DiagonalTensor) and out.diag.tolist() == want


def test_matmul_with_dense_scales_rows_or_columns():
    d = _d()
    a = sk.arange(6.0).view(3, 2)
    assert (d @ a).tolist() == (d.to_dense() @ a).tolist()
    b = sk.arange(6.0).view(2, 3)
    assert (b @ d).tolist() == (b @ d.to_dense()).tolist()
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        d @ sk.ones(2, 2)


def test_transpose_is_an_aliasing_view():
    d = _d()
    t = d.t()
    assert isinstance(t, DiagonalTensor) and t._base is d
    assert t.untyped_storage() is d.untyped_storage() and t.diag is d.diag


@pytest.mark.no_debug_asserts  # views densify by design (docstring)
def test_fallback_densifies():
    d = _d()
    assert type(d + 1) is sk.Tensor
    assert (d + 1).tolist() == (d.to_dense() + 1).tolist()
    assert d[1].tolist() == [0.0, 2.0, 0.0]
    assert (d * sk.ones(3)).tolist() == d.to_dense().tolist()


def test_inplace_only_when_diagonal_stays_diagonal():
    d = _d()
    assert d.mul_(2) is d and d.diag.tolist() == [2.0, 4.0, 6.0] and d._version == 1
    d.add_(_d())
    assert d.diag.tolist() == [3.0, 6.0, 9.0]
    with pytest.raises(RuntimeError, match="would not be diagonal"):
        d.add_(1)
    assert d.diag.tolist() == [3.0, 6.0, 9.0] and d._version == 2
    with pytest.raises(ValueError, match="1-d"):
        diag_matrix(sk.ones(2, 2))
