"""Devices and ``Storage``: the untyped byte buffer shared by a tensor and all its views.

``Storage`` is the only object that holds data: a flat numpy ``uint8`` array on ``cpu``, no
array at all on ``meta`` (PyTorch's meta storages have ``nbytes`` but a null data pointer,
SEMANTICS.md §7). See Note [Views share Storage].

Note [Views share Storage]
    Every view op returns a tensor whose ``untyped_storage()`` is the *same object* as its
    input's, on cpu and on meta alike. ``resize_`` swaps the numpy buffer inside the Storage, so
    all views see the grown storage; tensors cache their numpy view keyed by buffer identity.

Note [Storage dtype and compute dtype]
    A dtype's ``storage_numpy`` is what its elements are in memory, its ``numpy`` what kernels
    compute in. They differ for ``bfloat16`` only: 2-byte words (the upper half of a float32)
    computed in float32, as PyTorch's CPU kernels convert each ``c10::BFloat16`` to float and
    round back on store. The conversion lives here, in one place: the first read of a cpu
    storage as bfloat16 decodes its words into a float32 *shadow* (one float32 per 2-byte
    word, ``Storage._shadow``), which every bfloat16 tensor over the storage reads and writes
    through ``Tensor._array()`` (so views stay views and kernels need no bfloat16 code). Values
    a kernel stores there are rounded to bfloat16 -- round to nearest even, overflow to inf,
    NaN to the quiet NaN ``0x7FC0`` (``c10::round_to_nearest_even``) unless it already is a
    bfloat16 NaN, so values read and never written keep their words -- whenever a bfloat16
    tensor of the storage is next read (``_sync_shadow``), so every read sees bfloat16 values,
    exactly as if each store had rounded. Anything reading the bytes themselves (``_bytes()``,
    a tensor of another dtype over the same storage, ``resize_``) first writes the rounded
    words back and drops the shadow (``_drop_shadow``). While a shadow exists the float32
    array, not the words, holds the values, and the storage takes 6 bytes per element. A read
    of a shadow holding only bfloat16 values (lower halves zero) skips the rounding.
    Where PyTorch's bfloat16 kernel rounds intermediate results too (``logit``, ``xlogy``,
    the binary cross entropies, ``logsumexp``...), that kernel calls ``round_to_bfloat16``
    (pointwise ops through ``_Info.bfloat16_fn``); Python numbers are rounded to bfloat16
    before the op except by ``mul`` / ``div`` (``_Info.exact_numbers``), as PyTorch's.
"""

from __future__ import annotations

import sys

import numpy as np

_new = object.__new__
_LOW_HALF = 0 if sys.byteorder == "little" else 1   # the uint16 holding a float32's low bits

__all__ = ["device", "Storage", "round_bfloat16_bits", "round_to_bfloat16"]


def round_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    """The bfloat16 words (``uint16``) nearest to float32 values given by their bit patterns
    (``uint32``, any shape): PyTorch's ``c10::round_to_nearest_even`` -- add ``0x7FFF`` plus
    the lowest kept bit, keep the upper 16 bits (ties go to even, values beyond the largest
    bfloat16 become inf) -- with a NaN mapped to the quiet NaN ``0x7FC0``, unless it already
    is a bfloat16 word (lower 16 bits zero: kept, so rounding a read value never changes it)."""
    shape = np.shape(bits)
    bits = np.asarray(bits, dtype=np.uint32).reshape(-1)    # arrays: no scalar overflow warnings
    rounded = (bits >> 16) & 1
    rounded += 0x7FFF
    rounded += bits             # wraps around only for NaNs, replaced below
    words = (rounded >> 16).astype(np.uint16)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    if nan.any():
        nan_bits = bits[nan]
        words[nan] = np.where(nan_bits & 0xFFFF, 0x7FC0, nan_bits >> 16)
    return words.reshape(shape)


def round_to_bfloat16(values) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (still float32): what storing and
    reloading a ``c10::BFloat16`` does, for kernels whose PyTorch version rounds an
    intermediate result (``Vectorized<BFloat16>`` arithmetic rounds after every operation)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    return (round_bfloat16_bits(bits).astype(np.uint32) << 16).view(np.float32)


class device:
    """A device: ``sk.device("cpu")`` or ``sk.device("meta")`` (PyTorch's ``torch.device``).

    Compares equal to its type string. Raises RuntimeError for unknown device strings.
    """

    __slots__ = ("type",)
    _instances: dict = {}

    def __new__(cls, spec="cpu"):
        if spec.__class__ is str:
            inst = cls._instances.get(spec)     # "cpu" / "meta" once made: the common call
            if inst is not None:
                return inst
        elif isinstance(spec, device):
            return spec
        if not isinstance(spec, str):
            raise TypeError(f"device() expects a string like 'cpu' or 'meta', got "
                            f"{type(spec).__name__}")
        kind = spec.split(":")[0]
        if kind not in ("cpu", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, meta device type at start of device string: {spec}")
        inst = cls._instances.get(kind)
        if inst is None:
            inst = object.__new__(cls)
            inst.type = kind
            cls._instances[kind] = inst
        return inst

    @property
    def index(self):
        return None

    def __eq__(self, other):
        if isinstance(other, str):
            return self.type == other
        return self is other

    def __hash__(self):
        return hash(self.type)

    def __repr__(self):
        return f"device(type='{self.type}')"

    def __str__(self):
        return self.type

    def __reduce__(self):
        return (device, (self.type,))


CPU = device("cpu")
META = device("meta")


class _ExternalBuffer:
    """Exposes foreign memory (a numpy array) as a flat byte array, keeping the owner alive."""

    def __init__(self, owner, ptr, nbytes, readonly):
        self.owner = owner
        self.__array_interface__ = {"data": (ptr, readonly), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


class Storage:
    """Untyped bytes of one device (PyTorch's ``UntypedStorage``).

    ``nbytes()``: size in bytes; ``data_ptr()``: address of byte 0 (0 on meta);
    ``resize_(nbytes)``: grow or shrink in place, keeping the leading bytes.

    On cpu ``_buffer`` is a C-contiguous numpy array of any dtype (kernels allocate outputs as
    typed arrays: one ``np.empty``); its bytes as a flat ``uint8`` array are ``_bytes()``.
    """

    __slots__ = ("_buffer", "_nbytes", "device", "_resizable", "_dataless", "_shadow",
                 "__weakref__")

    def __init__(self, nbytes: int, device=CPU, *, _buffer=None, resizable: bool = True,
                 dataless: bool = False):
        if nbytes < 0:
            raise RuntimeError(f"Storage size must be non-negative, got {nbytes}")
        self.device = device
        self._nbytes = int(nbytes)
        self._resizable = resizable
        # Wrapper subclasses carry geometry only: no bytes even on cpu (SEMANTICS.md §5.3).
        self._dataless = dataless
        self._shadow = None     # Note [Storage dtype and compute dtype]
        if _buffer is not None:
            self._buffer = _buffer
        elif device is CPU and not dataless:
            self._buffer = np.empty(self._nbytes, np.uint8)
        else:
            self._buffer = None

    @classmethod
    def _over(cls, buffer: np.ndarray, device=CPU) -> "Storage":
        """A resizable storage owning ``buffer`` (a fresh C-contiguous array), without the
        argument checks of ``__init__`` (the allocation hot path)."""
        s = _new(cls)
        s._buffer = buffer
        s._nbytes = buffer.nbytes
        s.device = device
        s._resizable = True
        s._dataless = False
        s._shadow = None
        return s

    def _bytes(self) -> np.ndarray:
        """The storage's bytes as a flat ``uint8`` array (shares memory). Meta: None."""
        if self._shadow is not None:
            self._drop_shadow()
        return self._raw_bytes()

    def _raw_bytes(self) -> np.ndarray:
        buf = self._buffer
        if buf is None or buf.dtype == np.uint8 and buf.ndim == 1:
            return buf
        return buf.reshape(-1).view(np.uint8)

    # -- Note [Storage dtype and compute dtype] ----------------------------------------------
    def _sync_shadow(self) -> np.ndarray:
        """The float32 shadow of this storage's 2-byte words, every value rounded to bfloat16:
        decoded on first use, else the values stored since the last read rounded in place."""
        shadow = self._shadow
        if shadow is None:
            words = self._raw_bytes()[:self._nbytes - self._nbytes % 2].view(np.uint16)
            shadow = (words.astype(np.uint32) << 16).view(np.float32)
            self._shadow = shadow
            # A new buffer object (same memory): tensors of other dtypes over this storage
            # miss their cached numpy view and write the words back before reading them.
            self._buffer = self._buffer.view()
        else:
            # Values still bfloat16 (lower halves all zero: one pass, no temporary) are kept.
            bits = shadow.view(np.uint32)
            if bits.view(np.uint16)[_LOW_HALF::2].any():
                np.copyto(bits, round_bfloat16_bits(bits).astype(np.uint32) << 16)
        return shadow

    def _data(self, shadow: bool) -> np.ndarray:
        """The array a tensor's numpy view is built on: the synced float32 shadow
        (``shadow=True``, bfloat16) or the buffer with the shadow written back."""
        if shadow:
            return self._sync_shadow()
        if self._shadow is not None:
            self._drop_shadow()
        return self._buffer

    def _drop_shadow(self):
        """Write the shadow back as rounded 2-byte words and forget it."""
        shadow = self._shadow
        self._shadow = None
        words = self._raw_bytes()[:2 * shadow.size].view(np.uint16)
        words[...] = round_bfloat16_bits(shadow.view(np.uint32))

    @classmethod
    def _from_array(cls, arr: np.ndarray, span: int) -> "Storage":
        """A storage over the memory of ``arr`` starting at its first element (no copy)."""
        ptr = arr.__array_interface__["data"][0]
        ext = _ExternalBuffer(arr, ptr, span, not arr.flags.writeable)
        return cls(span, CPU, _buffer=np.asarray(ext), resizable=False)

    def nbytes(self) -> int:
        return self._nbytes

    size = nbytes
    __len__ = nbytes

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        if self._dataless:
            raise RuntimeError("Attempted to access the data pointer on an invalid python "
                               "storage.")
        if self._buffer is None or not self._nbytes:   # PyTorch allocates nothing for 0 bytes
            return 0
        return self._buffer.__array_interface__["data"][0]

    @property
    def is_meta(self) -> bool:
        return self.device is META

    def resize_(self, nbytes: int) -> "Storage":
        """Resize to ``nbytes`` bytes; the common prefix keeps its data. Raises RuntimeError
        for storages over external memory (``from_numpy``), as PyTorch does."""
        nbytes = int(nbytes)
        if nbytes == self._nbytes:
            return self
        if not self._resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        if nbytes < 0:
            raise RuntimeError(f"Storage size must be non-negative, got {nbytes}")
        if self._buffer is not None:
            new = np.zeros(nbytes, np.uint8)
            keep = min(nbytes, self._nbytes)
            new[:keep] = self._bytes()[:keep]   # writes a bfloat16 shadow back first
            self._buffer = new
        self._nbytes = nbytes
        return self

    def tolist(self) -> list:
        if self._buffer is None:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return self._bytes().tolist()

    def __repr__(self):
        return f"Storage(nbytes={self._nbytes}, device='{self.device.type}')"
