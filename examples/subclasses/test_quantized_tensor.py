"""Tests of the int8 quantized tensor example (quantized_tensor.py)."""

import numpy as np
import pytest
from quantized_tensor import QuantizedTensor

import subclass_kit as sk


def _close(a, b, tol):
    return np.allclose(np.asarray(a), np.asarray(b), atol=tol)


def test_quantize_round_trip_within_half_a_step():
    sk.manual_seed(0)
    x = sk.randn(4, 5)
    q = QuantizedTensor.quantize(x)
    assert q.dtype == sk.float32 and q.int_data.dtype == sk.int8
    assert q.shape == x.shape and q.stride() == x.stride()
    assert q.int_data.abs().amax().item() == 127
    assert _close(q.dequantize().tolist(), x.tolist(), q.scale / 2 + 1e-6)
    assert q.int_data.untyped_storage().nbytes() * 4 == x.untyped_storage().nbytes()


def test_compute_ops_dequantize():
    sk.manual_seed(1)
    x, w = sk.randn(3, 4), sk.randn(4, 2)
    q = QuantizedTensor.quantize(x)
    out = q @ w
    assert type(out) is sk.Tensor and out.dtype == sk.float32
    assert _close(out.tolist(), (q.dequantize() @ w).tolist(), 1e-5)
    assert _close((q + q).tolist(), (2 * q.dequantize()).tolist(), 1e-6)


def test_views_stay_quantized_and_alias():
    q = QuantizedTensor.quantize(sk.arange(12.0).view(3, 4))
    for v in (q.t(), q[1], q[:, ::2], q.view(4, 3), q.split(1)[2]):
        assert isinstance(v, QuantizedTensor) and v.scale == q.scale
        assert v.untyped_storage() is q.untyped_storage() and v._base is q
    c = q.clone()
    assert isinstance(c, QuantizedTensor) and c._base is None
    assert q.t().dequantize().tolist() == q.dequantize().t().tolist()


def test_writes_requantize_with_own_scale_and_saturate():
    q = QuantizedTensor.quantize(sk.tensor([1.0, -1.0, 0.5]))
    assert q.add_(0.25) is q and q._version == 1
    assert _close(q.dequantize().tolist(), [1.0, -0.75, 0.75], q.scale + 1e-6)  # 2 roundings
    assert q.int_data.tolist()[0] == 127      # 1.25 saturates at 127 * scale
    row = q[1:]
    row.fill_(0.0)
    assert q.dequantize().tolist()[1:] == [0.0, 0.0]


def test_item_dequantizes():
    q = QuantizedTensor.quantize(sk.tensor([0.5, -1.0]))
    assert q[1].item() == -1.0 and abs(q[0].item() - 0.5) <= q.scale / 2


def test_bad_codes_rejected():
    with pytest.raises(TypeError, match="int8"):
        QuantizedTensor.wrap(sk.ones(2), 1.0)


def test_traceable():
    q = QuantizedTensor.quantize(sk.ones(2, 2))
    assert sk.is_traceable_wrapper_subclass(q)
    r = sk.transform_subclass(q, lambda name, t: t.clone())
    assert r.scale == q.scale and r.int_data.tolist() == q.int_data.tolist()
