"""Weights-only quantization (modes/quantization.py): codes and scales against a numpy reference
written from torchao's formulas, int8 against torch's fake_quantize_per_channel_affine, round-trip
bounds, the packed layout's bytes on meta, F.linear through the subclass, and quantize_ on zoo
models."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit import zoo
from subclass_kit.modes.quantization import QuantizedTensor, quantize_, quantize_weight
from subclass_kit.zoo.summary import stored_nbytes

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis (the test extra) is missing")
st = hypothesis.strategies
EPS = np.finfo(np.float32).eps


def reference(w: np.ndarray, scheme: str, group: int, dtype=np.float32):
    """(codes as unpacked ints, scale, zero point or None, dequantized) from torchao's
    choose_qparams_affine / quantize_affine / dequantize_affine formulas."""
    out, n = w.shape
    g = w.astype(np.float32).reshape(out, n // group, group)
    if scheme == "int8":
        scale = np.maximum(np.abs(g).max(-1) / 127.5, EPS).astype(dtype).astype(np.float32)
        q = np.clip(np.rint(g * (1 / scale)[..., None]), -128, 127)
        return q.reshape(out, n), scale, None, (q * scale[..., None]).reshape(out, n)
    lo, hi = g.min(-1), g.max(-1)
    scale32 = np.maximum((hi - lo) / 15, EPS)
    scale = scale32.astype(dtype).astype(np.float32)
    zero = (lo + 8 * scale32).astype(dtype).astype(np.float32)
    q = np.clip(np.rint((g - (zero - 8 * scale)[..., None]) / scale[..., None]), 0, 15)
    deq = (q - 8) * scale[..., None] + zero[..., None]
    return q.reshape(out, n), scale, zero, deq.reshape(out, n)


def unpack(qt: QuantizedTensor) -> np.ndarray:
    data = qt.qdata.numpy()
    if qt.scheme == "int8":
        return data.astype(np.float32)
    return np.stack([data & 0xF, data >> 4], axis=-1).reshape(data.shape[0], -1)


@st.composite
def weights(draw):
    group = draw(st.sampled_from([2, 4, 8, 32]))
    out, groups = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    scale = draw(st.sampled_from([1e-3, 1.0, 50.0]))
    w = np.random.default_rng(seed).normal(0, scale, (out, groups * group)).astype(np.float32)
    if draw(st.booleans()):
        w[0, :group] = 0.0        # a constant group: the scale falls back to eps
    return w, group


@hypothesis.given(weights(), st.sampled_from(["int8", "int4"]),
                  st.sampled_from(["float32", "float16"]))
def test_codes_scales_and_values_match_the_reference(case, scheme, dtype_name):
    w, group = case
    dtype = getattr(sk, dtype_name)
    qt = quantize_weight(sk.from_numpy(w).to(dtype), scheme, group)
    w_in = sk.from_numpy(w).to(dtype).to(sk.float32).numpy()
    codes, scale, zero, deq = reference(w_in, scheme, group, getattr(np, dtype_name))
    np.testing.assert_array_equal(unpack(qt), codes)
    np.testing.assert_array_equal(qt.scale.to(sk.float32).numpy(), scale)
    assert qt.scale.dtype == dtype and tuple(qt.shape) == w.shape and qt.dtype == dtype
    if zero is not None:
        np.testing.assert_array_equal(qt.zero_point.to(sk.float32).numpy(), zero)
    got = qt.dequantize(sk.float32).numpy()
    np.testing.assert_allclose(got, deq, rtol=1e-6, atol=1e-30)
    # Round trip: within half a step of the input, plus what storing the scale and zero point
    # in the weight dtype moved them (values at the clipping edges move with them).
    exact_scale, exact_zero = reference(w_in, scheme, group, np.float32)[1:3]
    slack = 128 * np.abs(scale - exact_scale)
    if zero is not None:
        slack = slack + 2 * np.abs(zero - exact_zero)
    bound = np.repeat(scale / 2 + slack, group, axis=1) + 2 * EPS * np.abs(w_in) + 1e-7
    assert (np.abs(got - w_in) <= bound).all()


def test_int8_matches_torch_fake_quantize(torch):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 64)).astype(np.float32)
    group = 16
    qt = quantize_weight(sk.from_numpy(w), "int8", group)
    scale = torch.from_numpy(qt.scale.numpy().reshape(-1).copy())
    theirs = torch.fake_quantize_per_channel_affine(
        torch.from_numpy(w.reshape(-1, group).copy()), scale,
        torch.zeros(scale.shape, dtype=torch.int32), 0, -128, 127)
    np.testing.assert_array_equal(qt.dequantize().numpy(), theirs.numpy().reshape(w.shape))


@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_meta_and_cpu_build_the_same_layout(scheme):
    cpu = quantize_weight(sk.randn(6, 64, dtype=sk.float16), scheme, 16)
    meta = quantize_weight(sk.empty(6, 64, dtype=sk.float16, device="meta"), scheme, 16)
    for name in ("qdata", "scale", "zero_point"):
        a, b = getattr(cpu, name), getattr(meta, name)
        assert (a is None) == (b is None)
        if a is not None:
            assert (tuple(a.shape), a.dtype) == (tuple(b.shape), b.dtype)
    assert stored_nbytes(cpu) == stored_nbytes(meta)


def test_int4_packs_two_values_per_byte_low_nibble_first():
    w = sk.from_numpy(np.array([[-1.0, 0.0, 0.5, 1.0] * 2], dtype=np.float32))
    qt = quantize_weight(w, "int4", 4)
    assert qt.qdata.dtype == sk.uint8 and tuple(qt.qdata.shape) == (1, 4)
    codes = reference(w.numpy(), "int4", 4)[0][0].astype(np.uint8)
    np.testing.assert_array_equal(qt.qdata.numpy()[0], codes[0::2] | (codes[1::2] << 4))


@pytest.mark.parametrize("scheme,dtype", [("int8", sk.float32), ("int4", sk.float16)])
def test_meta_layout_bytes(scheme, dtype):
    out, n, group = 96, 512, 128
    qt = quantize_weight(sk.empty(out, n, dtype=dtype, device="meta"), scheme, group)
    data = out * n if scheme == "int8" else out * n // 2
    params = (1 if scheme == "int8" else 2) * out * (n // group) * dtype.itemsize
    assert stored_nbytes(qt) == data + params
    assert qt.device.type == "meta" and qt.dtype == dtype and tuple(qt.shape) == (out, n)
    y = sk.nn.functional.linear(sk.empty(2, 7, n, dtype=dtype, device="meta"), qt)
    assert tuple(y.shape) == (2, 7, out) and y.dtype == dtype and type(y) is sk.Tensor


@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_linear_and_matmul_dequantize_to_the_activation_dtype(torch, scheme):
    rng = np.random.default_rng(1)
    w = rng.normal(size=(5, 64)).astype(np.float32)
    x = rng.normal(size=(3, 4, 64)).astype(np.float32)
    b = rng.normal(size=(5,)).astype(np.float32)
    qt = quantize_weight(sk.from_numpy(w), scheme, 32)
    deq = qt.dequantize().numpy()
    ours = sk.nn.functional.linear(sk.from_numpy(x), qt, sk.from_numpy(b)).numpy()
    theirs = torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(deq),
                                        torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    t = qt.t()
    assert isinstance(t, QuantizedTensor) and t.transposed and tuple(t.shape) == (64, 5)
    assert t.untyped_storage() is qt.untyped_storage()
    np.testing.assert_allclose((sk.from_numpy(x) @ t).numpy(), x @ deq.T, rtol=1e-5, atol=1e-5)


def test_writes_and_other_views_raise():
    qt = quantize_weight(sk.empty(4, 8, device="meta"), "int8", 8)
    with pytest.raises(NotImplementedError, match="read-only"):
        qt.add_(1)
    with pytest.raises(NotImplementedError, match="view op"):
        qt[0]


def test_bad_arguments():
    w = sk.empty(4, 96, device="meta")
    with pytest.raises(ValueError, match=r"layer\.weight has in_features=96, not divisible by "
                                         r"group_size=64"):
        quantize_weight(w, "int8", 64, name="layer.weight")
    with pytest.raises(ValueError, match="scheme"):
        quantize_weight(w, "int3")
    with pytest.raises(ValueError, match="even"):
        quantize_weight(w, "int4", 3)
    with pytest.raises(TypeError, match="floating"):
        quantize_weight(sk.empty(4, 96, dtype=sk.int32, device="meta"), "int8", 32)


def test_quantize_model_replaces_linear_weights_only():
    model = zoo.get_model("llama-2-7b", num_hidden_layers=2)
    before = {n: p for n, p in model.named_parameters()}
    names = quantize_(model, "int4", 128)
    after = dict(model.named_parameters())
    assert set(names) == {n for n in before if n.endswith("proj.weight")} | {"lm_head.weight"}
    expected = 0
    for name, p in after.items():
        if name in names:
            assert isinstance(p, QuantizedTensor) and p.shape == before[name].shape
            out, n = p.shape
            expected += out * n // 2 + 2 * out * (n // 128) * 4
        else:
            assert p is before[name]        # embeddings and norms untouched
            expected += p.numel() * 4
    summary = zoo.summarize(model, model.example_inputs(seq=8))
    assert summary.parameter_bytes == expected
    assert summary.parameters == sum(p.numel() for p in before.values())
    assert summary.output_shapes == [[1, 8, 32000]]


def test_quantize_gpt2_conv1d_and_keeps_the_tied_head():
    model = zoo.get_model("gpt2", n_layer=1)
    names = quantize_(model, "int8", 64)
    assert names == ["transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.weight",
                     "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_proj.weight"]
    w = model.transformer.h[0].attn.c_attn.weight
    assert isinstance(w, QuantizedTensor) and w.transposed and tuple(w.shape) == (768, 2304)
    assert model.lm_head.weight is model.transformer.wte.weight
    assert zoo.summarize(model, model.example_inputs(seq=4)).output_shapes == [[1, 4, 50257]]


def test_quantize_model_names_the_layer_that_does_not_fit():
    model = zoo.get_model("gpt2", n_layer=1)
    with pytest.raises(ValueError, match=r"transformer\.h\.0\.attn\.c_attn\.weight has "
                                         r"in_features=768"):
        quantize_(model, "int8", 512)
    assert not any(isinstance(p, QuantizedTensor) for p in model.parameters())
