"""The meta device (SEMANTICS.md §7): storages without data, shared by views; printing;
data-access and device-mixing errors; what works on meta that cannot be checked there.

Texts are PyTorch's, with ``torch.`` printed as ``sk.``; where torch is installed the same facts
are checked against it directly.
"""

from __future__ import annotations

import pytest
from oracle import normalize_message

import subclass_kit as sk


def meta(*shape, **kw):
    return sk.empty(*shape, device="meta", **kw)


# -- storage ---------------------------------------------------------------------------------------
def test_factory_has_storage_of_right_size_but_no_data():
    m = meta(2, 3)
    s = m.untyped_storage()
    assert s.nbytes() == 24
    assert s.device.type == "meta" and m.device.type == "meta" and m.is_meta
    assert m.data_ptr() == 0 and s.data_ptr() == 0
    assert m.untyped_storage() is s


@pytest.mark.parametrize("dtype,shape,nbytes", [
    (sk.float64, (3,), 24), (sk.int8, (2, 5), 10), (sk.bool, (), 1), (sk.float16, (0, 4), 0)])
def test_storage_nbytes_follows_dtype(dtype, shape, nbytes):
    assert meta(*shape, dtype=dtype).untyped_storage().nbytes() == nbytes


def test_resize_grows_nbytes():
    m = meta(0)
    m.resize_(10)
    assert m.untyped_storage().nbytes() == 40
    assert m.shape == (10,) and m.stride() == (1,)


def test_resize_grows_storage_shared_with_views():
    m = meta(4)
    v = m[1:]
    m.resize_(3, 4)
    assert v.untyped_storage() is m.untyped_storage()
    assert v.untyped_storage().nbytes() == 48


def test_views_share_storage_base_and_offset():
    m = meta(3, 4)
    v = m[1]
    assert v.untyped_storage() is m.untyped_storage()
    assert v._base is m and v._is_view()
    assert v.storage_offset() == 4 and v.shape == (4,)
    t = m.t()
    assert t.stride() == (1, 4) and t._base is m
    w = m[1:, ::2]
    assert w.storage_offset() == 4 and w.stride() == (4, 2) and w._base is m


def test_views_share_version_counter():
    m = meta(3, 4)
    v = m[0]
    m.add_(1)
    assert m._version == v._version == 1
    v.mul_(2)
    assert m._version == v._version == 2


def test_to_meta_keeps_metadata():
    x = sk.zeros(2, 3).t()
    m = x.to("meta")
    assert m.device.type == "meta" and m.shape == (3, 2) and m.dtype is sk.float32
    assert m.stride() == x.stride()


def test_meta_copy_from_cpu_is_allowed():
    m = meta(2, 3)
    out = m.copy_(sk.ones(2, 3))
    assert out is m and m._version == 1


# -- printing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("make,text", [
    (lambda: meta(2, 3), "tensor(..., device='meta', size=(2, 3))"),
    (lambda: meta(()), "tensor(..., device='meta', size=())"),
    (lambda: meta(2, dtype=sk.bool), "tensor(..., device='meta', size=(2,), dtype=sk.bool)"),
    (lambda: meta(2, requires_grad=True),
     "tensor(..., device='meta', size=(2,), requires_grad=True)"),
    (lambda: meta(2, 2, dtype=sk.int64), "tensor(..., device='meta', size=(2, 2), dtype=sk.int64)"),
], ids=["2x3", "0d", "bool", "requires_grad", "int64"])
def test_repr(make, text):
    assert repr(make()) == text


@pytest.mark.parametrize("args,kw", [
    ((2, 3), {}), (((),), {}), ((2,), {"dtype": "bool"}), ((2,), {"requires_grad": True}),
    ((2, 2), {"dtype": "int64"}), ((4,), {"dtype": "float16"}), ((0, 3), {})])
def test_repr_matches_torch(args, kw, torch):
    tkw = dict(kw)
    skw = dict(kw)
    if "dtype" in kw:
        tkw["dtype"] = getattr(torch, kw["dtype"])
        skw["dtype"] = getattr(sk, kw["dtype"])
    theirs = torch.empty(*args, device="meta", **tkw)
    ours = sk.empty(*args, device="meta", **skw)
    assert repr(ours) == normalize_message(repr(theirs))


# -- data access -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,exc,text", [
    (lambda m: m.item(), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    (lambda m: bool(m), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    (lambda m: float(m), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    (lambda m: m.tolist(), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    (lambda m: m.to("cpu"), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    (lambda m: sk.zeros(1).copy_(m), NotImplementedError,
     "Cannot copy out of meta tensor; no data!"),
    (lambda m: m.numpy(), TypeError,
     ("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
      "host memory first.")),
], ids=["item", "bool", "float", "tolist", "to_cpu", "copy_from_meta", "numpy"])
def test_data_access_raises(fn, exc, text):
    m = meta(1)
    with pytest.raises(exc) as info:
        fn(m)
    assert str(info.value) == text


def test_if_meta_tensor_raises():
    with pytest.raises(RuntimeError, match=r"Tensor\.item\(\) cannot be called on meta"):
        if meta(1):
            pass


def test_nonzero_is_data_dependent():
    with pytest.raises(NotImplementedError):
        meta(3).nonzero()


# -- devices -------------------------------------------------------------------------------------------
def test_meta_plus_cpu_raises():
    with pytest.raises(RuntimeError) as info:
        meta(2) + sk.zeros(2)
    assert str(info.value) == "Tensor on device cpu is not on the expected device meta!"


def test_cpu_plus_meta_raises():
    with pytest.raises(RuntimeError) as info:
        sk.zeros(2) + meta(2)
    assert str(info.value) == "Tensor on device meta is not on the expected device cpu!"


@pytest.mark.parametrize("order", ["meta_first", "cpu_first"])
def test_zero_dim_cpu_operand_is_allowed(order):
    scalar = sk.tensor(2.0)
    out = meta(2, 3) * scalar if order == "meta_first" else scalar * meta(2, 3)
    assert out.device.type == "meta" and out.shape == (2, 3) and out.dtype is sk.float32


def test_zero_dim_cpu_operand_matches_torch(torch):
    theirs = torch.tensor(2.0) * torch.empty(2, 3, device="meta")
    ours = sk.tensor(2.0) * meta(2, 3)
    assert theirs.device.type == ours.device.type == "meta"


# -- what meta does and does not check -------------------------------------------------------------
def test_value_checks_are_skipped():
    """Index values are not known on meta: an out-of-range index_select succeeds."""
    out = meta(3, 4).index_select(0, sk.empty(2, dtype=sk.int64, device="meta"))
    assert out.shape == (2, 4) and out.device.type == "meta"


def test_python_int_index_out_of_range_still_raises():
    with pytest.raises(IndexError) as info:
        meta(2, 3)[5]
    assert str(info.value) == "index 5 is out of bounds for dimension 0 with size 2"


def test_shape_errors_match_cpu_text():
    """One rule per op: meta raises the cpu text (PyTorch's meta kernels word it differently)."""
    with pytest.raises(RuntimeError) as cpu:
        sk.zeros(2, 3) + sk.zeros(4)
    with pytest.raises(RuntimeError) as m:
        meta(2, 3) + meta(4)
    assert str(m.value) == str(cpu.value)


def test_as_strided_is_bounds_checked_on_meta():
    """Documented difference: PyTorch skips the storage bounds check on meta, we do not."""
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
        meta(4).as_strided((3, 3), (3, 3))


@pytest.mark.parametrize("fn,dtype", [
    (lambda: meta(3, dtype=sk.int32) + 1.5, sk.float32),
    (lambda: meta(3, dtype=sk.int32).sum(), sk.int64),
    (lambda: meta(3, dtype=sk.uint8) + meta(3, dtype=sk.int8), sk.int16),
    (lambda: meta(3, dtype=sk.bool) + 1, sk.int64),
    (lambda: (meta(3) > 0), sk.bool),
], ids=["int32+float", "int32.sum", "uint8+int8", "bool+int", "float>int"])
def test_promotion_on_meta(fn, dtype):
    out = fn()
    assert out.dtype is dtype and out.device.type == "meta"


def test_meta_ops_match_cpu_metadata():
    x = meta(2, 3, 4)
    for fn in (lambda t: t.transpose(0, 2) + 1, lambda t: t.sum(1, keepdim=True),
               lambda t: t.permute(2, 0, 1).contiguous(), lambda t: t @ t.transpose(1, 2),
               lambda t: t.reshape(6, 4)[::2]):
        m, c = fn(x), fn(sk.zeros(2, 3, 4))
        assert (m.shape, m.stride(), m.storage_offset(), m.dtype) == (
            c.shape, c.stride(), c.storage_offset(), c.dtype)
