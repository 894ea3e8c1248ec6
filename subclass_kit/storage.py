"""Devices and ``Storage``: the untyped byte buffer shared by a tensor and all its views.

``Storage`` is the only object that holds data: a flat numpy ``uint8`` array on ``cpu``, no
array at all on ``meta`` (PyTorch's meta storages have ``nbytes`` but a null data pointer,
SEMANTICS.md §7). See Note [Views share Storage].

Note [Views share Storage]
    Every view op returns a tensor whose ``untyped_storage()`` is the *same object* as its
    input's, on cpu and on meta alike. ``resize_`` swaps the numpy buffer inside the Storage, so
    all views see the grown storage; tensors cache their numpy view keyed by buffer identity.
"""

from __future__ import annotations

import numpy as np

_new = object.__new__

__all__ = ["device", "Storage"]


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

    __slots__ = ("_buffer", "_nbytes", "device", "_resizable", "_dataless", "__weakref__")

    def __init__(self, nbytes: int, device=CPU, *, _buffer=None, resizable: bool = True,
                 dataless: bool = False):
        if nbytes < 0:
            raise RuntimeError(f"Storage size must be non-negative, got {nbytes}")
        self.device = device
        self._nbytes = int(nbytes)
        self._resizable = resizable
        # Wrapper subclasses carry geometry only: no bytes even on cpu (SEMANTICS.md §5.3).
        self._dataless = dataless
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
        return s

    def _bytes(self) -> np.ndarray:
        """The storage's bytes as a flat ``uint8`` array (shares memory). Meta: None."""
        buf = self._buffer
        if buf is None or buf.dtype == np.uint8 and buf.ndim == 1:
            return buf
        return buf.reshape(-1).view(np.uint8)

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
            new[:keep] = self._bytes()[:keep]
            self._buffer = new
        self._nbytes = nbytes
        return self

    def tolist(self) -> list:
        if self._buffer is None:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return self._bytes().tolist()

    def __repr__(self):
        return f"Storage(nbytes={self._nbytes}, device='{self.device.type}')"
