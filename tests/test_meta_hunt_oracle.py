"""Meta-device shape inference against torch 2.13 (the oracle): each program runs on
``device="meta"`` in both libraries and the results are compared (sizes, strides, storage offset,
dtype, device, ``_version``, ``_base``, ``nbytes``) or the exceptions (class and text).

- storage-size overflow: a fresh storage past the int64 byte range raises PyTorch's
  "Storage size calculation overflowed" (and an expanded view "numel: integer multiplication
  overflow"), so shape inference of a too-large model fails as the real run would;
"""

from __future__ import annotations

import pytest
from oracle import normalize_message

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

META = {"device": "meta"}


def observe(t):
    """What we compare about a result (a tensor, a sequence of them, or a plain value)."""
    if isinstance(t, (list, tuple)):
        return [observe(x) for x in t]
    if not hasattr(t, "untyped_storage"):
        return t
    return {"sizes": tuple(t.shape), "strides": tuple(t.stride()), "offset": t.storage_offset(),
            "dtype": str(t.dtype).split(".")[-1], "device": t.device.type,
            "version": t._version, "is_view": t._is_view(), "has_base": t._base is not None,
            "nbytes": t.untyped_storage().nbytes()}


def run(L, program):
    """``program(L)``'s observation, or ``("raised", class name, text)``."""
    try:
        return observe(program(L))
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        return ("raised", type(e).__name__, normalize_message(str(e)))


def same(program):
    ours, theirs = run(sk, program), run(torch, program)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"
    return ours


# -- storage-size overflow -----------------------------------------------------------------------
def _empty(L, *size, **kw):
    return L.empty(*size, **META, **kw)


OVERFLOW = {
    "empty f32 2**61": lambda L: _empty(L, 2 ** 61),
    "empty f32 2**61-1 (fits)": lambda L: _empty(L, 2 ** 61 - 1),
    "empty u8 2**63-1 (fits)": lambda L: _empty(L, 2 ** 63 - 1, dtype=L.uint8),
    "empty f64 2**60": lambda L: _empty(L, 2 ** 60, dtype=L.float64),
    "empty 2-d": lambda L: _empty(L, 2 ** 40, 2 ** 30),
    "empty product overflows before the 0": lambda L: _empty(L, 2 ** 32, 2 ** 32, 0),
    "empty 0 first (fits)": lambda L: _empty(L, 2 ** 61, 0, 2 ** 61),
    "zeros": lambda L: L.zeros(2 ** 62, 2, **META),
    "full": lambda L: L.full((2 ** 62, 2), 1.0, **META),
    "arange": lambda L: L.arange(2 ** 62, **META),
    "empty channels_last": lambda L: _empty(L, 2 ** 30, 2 ** 30, 2, 2,
                                            memory_format=L.channels_last),
    "matmul output": lambda L: _empty(L, 2 ** 31, 4) @ _empty(L, 4, 2 ** 31),
    "bmm output": lambda L: L.bmm(_empty(L, 2, 2 ** 31, 4), _empty(L, 2, 4, 2 ** 30)),
    "cat output": lambda L: L.cat([_empty(L, 2 ** 61 - 1), _empty(L, 2 ** 61 - 1)]),
    "contiguous of an expand": lambda L: _empty(L, 2 ** 31, 1).expand(2 ** 31, 2 ** 31)
    .contiguous(),
    "pointwise of an expand": lambda L: _empty(L, 2 ** 31, 1).expand(2 ** 31, 2 ** 31) * 2,
    "expand numel overflow": lambda L: _empty(L, 1, 1).expand(2 ** 62, 2 ** 62),
    "expand numel 2**63": lambda L: _empty(L, 1).expand(2 ** 62, 2),
    "expand numel 2**63-1 (fits)": lambda L: _empty(L, 1).expand(2 ** 63 - 1),
    "expand view reshaped (fits)": lambda L: _empty(L, 1).expand(2 ** 62).view(2 ** 31, 2 ** 31),
}


@pytest.mark.parametrize("name", sorted(OVERFLOW))
def test_storage_size_overflow_matches_torch_meta(name):
    same(OVERFLOW[name])


# Factories whose torch meta kernel wraps the byte count around (``randn`` reports nbytes
# -2**63) or skips the check (``empty_strided``); torch's cpu kernels raise before allocating,
# and we raise that on both devices (one rule per op).
META_WRAPS = {
    "randn": lambda L, dev: L.randn(2 ** 61, device=dev),
    "rand 2-d": lambda L, dev: L.rand(2 ** 61, 2, device=dev),
    "empty_strided": lambda L, dev: L.empty_strided((2 ** 62,), (4,), device=dev),
}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", sorted(META_WRAPS))
def test_factory_overflow_raises_as_torch_cpu(name, device):
    program = META_WRAPS[name]
    with pytest.raises(RuntimeError) as theirs:
        program(torch, "cpu")
    with pytest.raises(RuntimeError) as ours:
        program(sk, device)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("size", [2 ** 62, 2 ** 61, [2 ** 31, 2 ** 31]])
def test_resize_past_int64_bytes_raises_as_torch_cpu(device, size):
    """torch's cpu ``resize_`` raises before allocating; its meta kernel wraps the byte count
    around (nbytes 0). One rule per op: both devices raise the cpu error, nothing changes."""
    with pytest.raises(RuntimeError) as theirs:
        torch.empty(0).resize_(size)
    x = sk.empty(3, device=device)
    with pytest.raises(RuntimeError) as ours:
        x.resize_(size)
    assert str(ours.value) == str(theirs.value)
    assert x.shape == (3,) and x._version == 0 and x.untyped_storage().nbytes() == 12
