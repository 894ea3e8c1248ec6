"""Random number generators: ``sk.Generator`` (PyTorch's ``torch.Generator``) and the default
generator behind ``sk.manual_seed``.

A Generator wraps a numpy ``Generator`` (PCG64) seeded with a 64-bit seed. The API is
PyTorch's -- ``manual_seed`` (returns the generator), ``seed`` (a fresh non-deterministic
seed), ``initial_seed``, ``get_state`` / ``set_state`` (a ``uint8`` tensor), ``device`` -- and so
is the reproducibility contract: the same seed or state gives the same values, each draw
advances the state. The values themselves are numpy's stream, not PyTorch's (Mersenne
Twister and its own transforms), a documented difference (docs/differences.md).

Leaf module: it imports nothing of the package at module level (``get_state`` builds its tensor
through a function-level import).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Generator", "default_generator"]

_DEFAULT_SEED = 67280421310721   # PyTorch's default_rng_seed_val
_MASK = 2 ** 64 - 1
# get_state(): a fixed little-endian layout of numpy's PCG64 state -- no pickle, so set_state
# of a tensor from elsewhere cannot run code: state(16) inc(16) has_uint32(1) uinteger(4)
# seed(8).
_STATE_BYTES = 45


class Generator:
    """A random number generator (``torch.Generator``). ``device`` must be cpu.

    Methods follow PyTorch: ``manual_seed(seed) -> self`` (RuntimeError for a non-int seed,
    ValueError "Overflow when unpacking long long" beyond 64 bits; negative seeds wrap to
    unsigned as PyTorch's), ``seed() -> int``, ``initial_seed() -> int``, ``get_state() ->
    uint8 tensor`` and ``set_state(tensor) -> self`` (TypeError for a non-uint8 tensor,
    RuntimeError for a wrong size)."""

    __slots__ = ("_rng", "_seed", "__weakref__")

    def __init__(self, device="cpu"):
        dev = getattr(device, "type", device)
        if dev != "cpu":
            raise RuntimeError(f"{str(dev).upper()} device type not an accelerator.")
        self._seed = _DEFAULT_SEED
        self._rng = None

    @property
    def _np(self):
        """The numpy Generator, made on first use from the seed: ``import subclass_kit`` does
        not import ``numpy.random`` (and the ``secrets``/``hashlib`` it pulls in) until a random
        op or a state read needs it. Drawing starts from the same state either way."""
        rng = self._rng
        if rng is None:
            rng = self._rng = np.random.default_rng(self._seed)
        return rng

    @property
    def device(self):
        from .storage import device
        return device("cpu")

    def manual_seed(self, seed) -> "Generator":
        if isinstance(seed, bool) or not hasattr(seed, "__index__"):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = seed.__index__()
        if not -2 ** 63 <= seed <= _MASK:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed & _MASK
        self._rng = None            # seeded from ``_seed`` on first use (``_np``)
        return self

    def seed(self) -> int:
        """Seed with fresh OS entropy; return that seed."""
        s = int(np.random.SeedSequence().entropy) & _MASK
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """The state as a fresh 1-d ``uint8`` tensor (numpy's PCG64 state and the seed)."""
        from .tensor import from_numpy
        st = self._np.bit_generator.state
        raw = (st["state"]["state"].to_bytes(16, "little")
               + st["state"]["inc"].to_bytes(16, "little")
               + bytes([st["has_uint32"]]) + int(st["uinteger"]).to_bytes(4, "little")
               + self._seed.to_bytes(8, "little"))
        return from_numpy(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state) -> "Generator":
        """Restore a state from :meth:`get_state`."""
        arr = getattr(new_state, "_array", None)
        if arr is None or new_state.dtype.name != "uint8":
            raise TypeError("RNG state must be a sk.ByteTensor")
        raw = np.ascontiguousarray(new_state._array()).tobytes()
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but "
                               f"found the input RNG state size to be {len(raw)}")
        bitgen = np.random.PCG64()
        bitgen.state = {"bit_generator": "PCG64",
                        "state": {"state": int.from_bytes(raw[0:16], "little"),
                                  "inc": int.from_bytes(raw[16:32], "little")},
                        "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
        self._rng = np.random.Generator(bitgen)
        self._seed = int.from_bytes(raw[37:45], "little")
        return self

    def __repr__(self):
        return f"<sk.Generator object at {id(self):#x}>"


default_generator = Generator()


def checked_generator(generator):
    """``generator`` (the default one for None). Raises TypeError for anything else, as
    PyTorch's parser for a ``Generator?`` argument. Its numpy Generator is made only when
    values are drawn (``._np``): a meta tensor draws none."""
    if generator is None:
        return default_generator
    if isinstance(generator, Generator):
        return generator
    raise TypeError(f"expected a sk.Generator, got {type(generator).__name__}")


def numpy_generator(generator):
    """The numpy Generator behind ``generator`` (see ``checked_generator``)."""
    return checked_generator(generator)._np
