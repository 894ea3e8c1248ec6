"""Tests of the logging wrapper example (logging_tensor.py)."""

import pytest
from logging_tensor import LoggingTensor

import subclass_kit as sk


def test_logs_each_op_with_shapes_and_keeps_values():
    x = sk.arange(6.0).view(2, 3)
    w = LoggingTensor.wrap(x.clone())
    y = (w.t() + 1).reshape(6)
    assert isinstance(y, LoggingTensor)
    assert y.elem.tolist() == (x.t() + 1).reshape(6).tolist()
    assert w.log == [
        "sk.ops.t.default(float32[2, 3]) -> float32[3, 2]",
        "sk.ops.add.Tensor(float32[3, 2], 1) -> float32[3, 2]",
        ("sk.ops.clone.default(float32[3, 2], memory_format=sk.contiguous_format) "
         "-> float32[3, 2]"),
        "sk.ops._unsafe_view.default(float32[3, 2], [6]) -> float32[6]",
    ]


def test_views_alias_and_inplace_returns_self():
    w = LoggingTensor.wrap(sk.zeros(2, 3))
    row = w[0]
    assert isinstance(row, LoggingTensor) and row._base is w
    assert row.untyped_storage() is w.untyped_storage()
    assert w.add_(1) is w
    assert w._version == 1 and row._version == 1
    assert row.elem.tolist() == [1.0, 1.0, 1.0]
    w.t_()
    assert w.shape == (3, 2) and w.stride() == (1, 3) and w.elem.shape == (3, 2)


def test_metadata_matches_the_wrapped_tensor():
    x = sk.arange(24.0).view(2, 3, 4).permute(2, 0, 1)
    w = LoggingTensor.wrap(x)
    for op in (lambda t: t.t() if t.dim() == 2 else t.transpose(0, 2), lambda t: t[1:],
               lambda t: t * 2, lambda t: t.contiguous(), lambda t: t.flatten(1)):
        got, want = op(w), op(x)
        assert got.shape == want.shape and got.stride() == want.stride()
        assert got.storage_offset() == want.storage_offset()
        assert got.elem.tolist() == want.tolist()


def test_traceable_wrapper_round_trip():
    w = LoggingTensor.wrap(sk.ones(2, 2))
    assert sk.is_traceable_wrapper_subclass(w)
    w2 = sk.transform_subclass(w, lambda name, t: t * 3)
    assert isinstance(w2, LoggingTensor) and w2.log is w.log
    assert w2.elem.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_errors_propagate_unchanged():
    w = LoggingTensor.wrap(sk.ones(2, 3))
    with pytest.raises(RuntimeError, match="must match the size"):
        w + sk.ones(4)
    assert w.log == [] and w._version == 0
