"""Bounds fuzzer for the ops that take a raw layout: ``as_strided``, ``as_strided_``, ``set_`` and
``empty_strided`` (SEMANTICS.md §1.5).

For random sizes / strides / offsets (negative ones included), on cpu and meta:

- an accepted layout stays inside the storage: ``(offset + sum((size-1)*stride) + 1) * itemsize``
  <= ``nbytes`` (``set_`` grows the storage first, as PyTorch's cpu kernel does);
- a rejected one raises RuntimeError with PyTorch's cpu text, and leaves the tensor (and its
  ``_version``) unchanged; our meta kernels make the same checks (documented difference: torch's
  meta skips them);
- data is never read outside the storage: the storage sits inside a larger numpy buffer filled
  with a sentinel, and no accepted view ever shows the sentinel.
"""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch gives the expected accept/reject and texts")
hypothesis = pytest.importorskip("hypothesis", reason="hypothesis generates the layouts")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=250, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
SENTINEL = 77  # fits every dtype; real values are 0..N-1
N = 10  # elements of the storage under test


def _rare(draw, n) -> bool:
    """True about once in ``n + 1`` draws. (Not ``== 0``: hypothesis favours small values.)"""
    return draw(st.integers(0, n)) == n // 2


@st.composite
def raw_layouts(draw, max_ndim=3):
    ndim = draw(st.integers(0, max_ndim))
    size = st.integers(-2, 5) if _rare(draw, 9) else st.integers(0, 5)
    stride = st.integers(-2, 6) if _rare(draw, 9) else st.integers(0, 6)
    sizes = [draw(size) for _ in range(ndim)]
    strides = [draw(stride) for _ in range(ndim)]
    if _rare(draw, 12):
        strides = strides[:-1] if strides else [1]
    offset = draw(st.one_of(st.none(), st.integers(-2, N + 2)))
    return sizes, strides, offset


def _run(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - compared below
        return None, e


def _check_same_error(ours, theirs):
    assert ours is not None, f"torch raised {theirs!r}, we did not"
    assert type(ours) is type(theirs) or type(ours).__name__ == type(theirs).__name__, \
        (ours, theirs)
    assert str(ours) == str(theirs), (ours, theirs)


def _reach_bytes(t) -> int:
    if t.numel() == 0:
        return 0
    last = t.storage_offset() + sum((s - 1) * st_ for s, st_ in zip(t.shape, t.stride()))
    return (last + 1) * t.element_size()


def _guarded(dtype):
    """An sk tensor of N elements whose storage sits inside a sentinel-filled numpy buffer."""
    big = np.full(3 * N, SENTINEL, dtype=dtype)
    inner = big[N:2 * N]
    inner[...] = np.arange(N)
    return sk.from_numpy(inner), big


def _expected(dtype, sizes, strides, offset, inplace=False):
    base = torch.from_numpy(np.arange(N).astype(dtype))
    if inplace:
        return _run(lambda: base.as_strided_(sizes, strides, offset))
    return _run(lambda: base.as_strided(sizes, strides, offset))


@FUZZ
@given(layout=raw_layouts(), dtype=st.sampled_from(["float32", "int64", "int16", "uint8"]),
       device=st.sampled_from(["cpu", "cpu", "meta"]))
def test_as_strided_fuzz(layout, dtype, device):
    sizes, strides, offset = layout
    t_out, t_err = _expected(dtype, sizes, strides, offset)
    if device == "cpu":
        x, big = _guarded(dtype)
    else:
        x, big = sk.empty(N, dtype=getattr(sk, dtype), device="meta"), None
    out, err = _run(lambda: x.as_strided(sizes, strides, offset))
    if t_err is not None:
        _check_same_error(err, t_err)
        return
    assert err is None, f"we raised {err!r}, torch accepted"
    assert tuple(out.shape) == tuple(t_out.shape) and out.stride() == t_out.stride()
    assert out.storage_offset() == t_out.storage_offset()
    assert _reach_bytes(out) <= out.untyped_storage().nbytes() == x.untyped_storage().nbytes()
    assert out._base is x and out.untyped_storage() is x.untyped_storage()
    if device == "cpu" and out.numel():
        values = np.asarray(out.tolist())
        assert not (values == SENTINEL).any()
        np.testing.assert_array_equal(values, t_out.numpy())
        assert (big[:N] == SENTINEL).all() and (big[2 * N:] == SENTINEL).all()


@FUZZ
@given(layout=raw_layouts(), dtype=st.sampled_from(["float32", "int32"]),
       device=st.sampled_from(["cpu", "meta"]))
def test_as_strided_inplace_fuzz(layout, dtype, device):
    sizes, strides, offset = layout
    t_out, t_err = _expected(dtype, sizes, strides, offset, inplace=True)
    x = sk.tensor(np.arange(N).astype(dtype), device=device)
    before = (tuple(x.shape), x.stride(), x.storage_offset())
    out, err = _run(lambda: x.as_strided_(sizes, strides, offset))
    if t_err is not None:
        _check_same_error(err, t_err)
        assert (tuple(x.shape), x.stride(), x.storage_offset()) == before and x._version == 0
        return
    assert err is None and out is x and x._version == 1
    assert (tuple(x.shape), x.stride(), x.storage_offset()) == \
        (tuple(t_out.shape), t_out.stride(), t_out.storage_offset())
    assert _reach_bytes(x) <= x.untyped_storage().nbytes()
    if device == "cpu" and x.numel():
        np.testing.assert_array_equal(np.asarray(x.tolist()), t_out.numpy())


@FUZZ
@given(layout=raw_layouts(), n_storage=st.integers(0, 12), contiguous=st.booleans(),
       device=st.sampled_from(["cpu", "meta"]))
def test_set_fuzz(layout, n_storage, contiguous, device):
    sizes, strides, offset = layout
    offset = 0 if offset is None else offset
    strides = [] if contiguous else strides
    src = torch.arange(float(n_storage))
    theirs = torch.empty(0)
    _, t_err = _run(lambda: theirs.set_(src.untyped_storage(), offset, sizes, strides))
    storage = sk.arange(float(n_storage)).to(device).untyped_storage() if device == "cpu" \
        else sk.empty(n_storage, device="meta").untyped_storage()
    ours = sk.empty(0, device=device)
    out, err = _run(lambda: ours.set_(storage, offset, sizes, strides))
    if t_err is not None:
        _check_same_error(err, t_err)
        assert ours._version == 0 and tuple(ours.shape) == (0,)
        assert ours.untyped_storage() is not storage and storage.nbytes() == n_storage * 4
        return
    assert err is None, f"we raised {err!r}, torch accepted"
    assert out is ours and ours._version == theirs._version
    assert ours.untyped_storage() is storage
    assert (tuple(ours.shape), ours.stride(), ours.storage_offset()) == \
        (tuple(theirs.shape), theirs.stride(), theirs.storage_offset())
    assert storage.nbytes() == theirs.untyped_storage().nbytes()  # grown like PyTorch
    assert _reach_bytes(ours) <= storage.nbytes()
    if device == "cpu" and ours.numel():
        kept = min(n_storage, storage.nbytes() // 4)
        flat = np.asarray(sk.empty(0).set_(storage, 0, [kept]).tolist())
        np.testing.assert_array_equal(flat, np.arange(float(kept)))


@FUZZ
@given(layout=raw_layouts(), dtype=st.sampled_from(["float32", "int16"]),
       device=st.sampled_from(["cpu", "meta"]))
def test_empty_strided_fuzz(layout, dtype, device):
    sizes, strides, _ = layout
    t_out, t_err = _run(lambda: torch.empty_strided(sizes, strides, dtype=getattr(torch, dtype)))
    out, err = _run(lambda: sk.empty_strided(sizes, strides, dtype=getattr(sk, dtype),
                                             device=device))
    if t_err is not None:
        _check_same_error(err, t_err)
        return
    assert err is None, f"we raised {err!r}, torch accepted"
    assert (tuple(out.shape), out.stride(), out.storage_offset()) == \
        (tuple(t_out.shape), t_out.stride(), 0)
    assert out.untyped_storage().nbytes() == t_out.untyped_storage().nbytes()
    assert _reach_bytes(out) <= out.untyped_storage().nbytes()
    assert out.device.type == device


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_semantics_examples(device):
    x = sk.empty(10, device=device)
    with pytest.raises(RuntimeError, match=r"^setStorage: sizes \[3, 3\], strides \[3, 3\], "
                                           r"storage offset 0, and itemsize 4 requiring a "
                                           r"storage size of 52 are out of bounds for storage "
                                           r"of size 40$"):
        x.as_strided((3, 3), (3, 3))
    assert x.as_strided((0,), (1,), 20).storage_offset() == 20
    with pytest.raises(RuntimeError, match=r"Negative strides are not supported at the moment, "
                                           r"got strides: \[-1\]"):
        x.as_strided((3,), (-1,))
    with pytest.raises(RuntimeError, match="^Tensor: invalid storage offset -1$"):
        x.as_strided((3,), (1,), -1)
    with pytest.raises(RuntimeError, match="^mismatch in length of strides and shape$"):
        x.as_strided((3, 3), (3,))
    with pytest.raises(RuntimeError, match=r"overflowed with sizes=\[-3\] and strides=\[1\]"):
        x.as_strided((-3,), (1,))
    # omitted offset = the input's current offset
    y = sk.arange(10.).to(device)[2:]
    assert y.as_strided((2,), (1,)).storage_offset() == 2
    # set_ grows a shared storage instead of raising
    s = sk.empty(10, device=device).untyped_storage()
    t = sk.empty(0, device=device).set_(s, 8, (2, 2), (2, 1))
    assert s.nbytes() == 48 and t.untyped_storage() is s and t._version == 1
