"""Sample inputs for every op overload in ``sk.ops``, in a form both libraries can build.

A sample is a call ``op(*args, **kwargs)`` whose tensor arguments are ``T`` specs (shape,
dtype, memory layout). ``build(sample, lib, device)`` turns it into real arguments for
subclass_kit (``lib="sk"``) or torch (``lib="torch"``) on ``"cpu"`` or ``"meta"``. The same
spec gives bit-identical storages in both libraries, so results can be compared exactly.

Layouts of ``T`` (all but ``contig`` are ``as_strided`` views of a flat storage):

- ``contig``: a fresh contiguous tensor (not a view);
- ``t``: dims stored in reverse order (a transpose for 2-d; falls back to ``step`` below 2-d);
- ``step``: every other element of the last dim (non-dense);
- ``offset``: contiguous, storage offset 3, storage longer than needed;
- ``expand``: dim 0 has stride 0 (an expanded tensor);
- ``cl``: channels-last (4-d only).

The table itself lives in ``samples_table.py`` (factories, views, copies) and
``samples_math.py`` (pointwise, reductions, linear algebra, nn, indexing, composites).
In-place (``name_``), ``out=`` and ``<view>_copy`` overloads without an entry of their own get one
derived from their functional op's entry (:func:`entry_for`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

import subclass_kit as sk

# -- argument specs ------------------------------------------------------------------------------
LAYOUTS = ("contig", "t", "step", "offset", "expand", "cl")


@dataclass(frozen=True)
class T:
    """A tensor spec. ``lo``/``hi`` bound the random values; ``values`` gives them explicitly
    (row-major logical order); ``name`` makes several arguments the same tensor object."""

    shape: tuple = ()
    dtype: str = "float32"
    layout: str = "contig"
    lo: float | None = None
    hi: float | None = None
    values: tuple | None = None
    name: str | None = None

    def __post_init__(self):
        assert self.layout in LAYOUTS, self.layout
        object.__setattr__(self, "shape", tuple(self.shape))
        if self.values is not None:
            object.__setattr__(self, "values", tuple(np.asarray(self.values).ravel().tolist()))

    def __repr__(self):
        short = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
                 "int64": "i64",
                 "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b"}
        lay = "" if self.layout == "contig" else ":" + self.layout
        return f"{short[self.dtype]}{list(self.shape)}{lay}"


@dataclass(frozen=True)
class D:
    """A dtype argument by name (``D("float64")``)."""

    name: str

    def __repr__(self):
        return self.name


@dataclass(frozen=True)
class MF:
    """A memory-format argument by name (``MF("channels_last")``)."""

    name: str

    def __repr__(self):
        return self.name


@dataclass(frozen=True)
class Gen:
    """A random generator seeded with ``seed`` (``sk.Generator`` / ``torch.Generator``)."""

    seed: int = 0

    def __repr__(self):
        return f"Generator({self.seed})"


@dataclass(frozen=True)
class StorageOf:
    """The ``untyped_storage()`` of a tensor built from ``spec``."""

    spec: T

    def __repr__(self):
        return f"storage({self.spec!r})"


@dataclass
class Sample:
    """One call. ``values=False``: compare metadata only (uninitialised or random memory).
    ``meta``: True (run on meta too and compare with cpu), False (skip: a value-dependent
    check such as an out-of-range index), or "raises" (data-dependent output: meta must raise
    NotImplementedError, as PyTorch's meta kernels do)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    values: bool = True
    meta: object = True
    rtol: float | None = None
    atol: float | None = None

    def __repr__(self):
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


def S(*args, _values=True, _meta=True, _rtol=None, _atol=None, **kwargs) -> Sample:
    """Shorthand: ``S(T((2, 3)), 1, keepdim=True)``."""
    return Sample(args, kwargs, _values, _meta, _rtol, _atol)


@dataclass
class Entry:
    """The samples of one op. ``errors`` must raise in torch (and identically in sk);
    ``samples`` must succeed in torch (checked, so the table stays honest). ``random``: compare
    metadata only. ``data_dependent``: output shape depends on values (meta raises)."""

    samples: list
    errors: list = field(default_factory=list)
    random: bool = False
    data_dependent: bool = False
    rtol: float | None = None
    atol: float | None = None
    derived_from: str | None = None   # qualified name of the entry this one was derived from


E = Entry


# -- building tensors ----------------------------------------------------------------------------
def _contig_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def storage_plan(spec: T):
    """(storage numel, strides, offset) realising ``spec.layout``."""
    shape, lay = spec.shape, spec.layout
    n = len(shape)
    if lay == "t" and n < 2:
        lay = "step"
    if lay in ("step", "expand") and n == 0:
        lay = "contig"
    if lay == "cl" and n != 4:
        raise ValueError(f"channels-last needs 4 dims, got {shape}")
    numel = int(np.prod(shape)) if shape else 1
    if lay == "contig":
        return numel, _contig_strides(shape), 0
    if lay == "offset":
        return numel + 5, _contig_strides(shape), 3
    if lay == "t":
        rev = tuple(reversed(shape))
        return numel, tuple(reversed(_contig_strides(rev))), 0
    if lay == "step":
        wide = shape[:-1] + (2 * shape[-1],)
        strides = _contig_strides(wide)
        return max(int(np.prod(wide)), 1), strides[:-1] + (2,), 0
    if lay == "expand":
        inner = _contig_strides(shape[1:])
        return max(int(np.prod(shape[1:])), 1), (0,) + inner, 0
    # channels-last (N, C, H, W) stored as (N, H, W, C)
    _, C, H, W = shape
    return numel, (H * W * C, 1, W * C, C), 0


def _numpy_name(dtype: str) -> str:
    """numpy has no bfloat16: its values are built as float32, then rounded (``make_tensor``)."""
    return "float32" if dtype == "bfloat16" else dtype


def _random_values(spec: T, n: int) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(repr((spec.shape, spec.dtype, spec.layout, spec.lo,
                                                 spec.hi)).encode()))
    d = _numpy_name(spec.dtype)
    if d == "bool":
        return rng.random(n) < 0.5
    if d.startswith(("int", "uint")):
        lo = -4 if spec.lo is None else int(spec.lo)
        hi = 5 if spec.hi is None else int(spec.hi) + 1
        if d == "uint8":
            lo = max(lo, 0)
        return rng.integers(lo, hi, n).astype(d)
    lo = -3.0 if spec.lo is None else spec.lo
    hi = 3.0 if spec.hi is None else spec.hi
    # Multiples of 1/8 are exact in every float dtype, so float16 inputs equal float32 ones.
    return (np.round(rng.uniform(lo, hi, n) * 8) / 8).astype(d)


def storage_array(spec: T) -> np.ndarray:
    """The flat storage contents of ``spec`` (numpy, its dtype)."""
    n, strides, offset = storage_plan(spec)
    flat = _random_values(spec, n)
    if spec.values is not None:
        item = flat.itemsize
        view = np.lib.stride_tricks.as_strided(flat[offset:], spec.shape,
                                               tuple(s * item for s in strides))
        view[...] = np.asarray(spec.values, dtype=_numpy_name(spec.dtype)).reshape(spec.shape)
    return flat


def logical_array(spec: T) -> np.ndarray:
    _, strides, offset = storage_plan(spec)
    flat = storage_array(spec)
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], spec.shape,
                                           tuple(s * item for s in strides)).copy()


def bfloat16_words(values: np.ndarray) -> np.ndarray:
    """float32 values as bfloat16 words (``int16``), rounded by torch (the oracle)."""
    import torch
    f32 = np.array(values, dtype=np.float32, order="C")     # keeps 0-d arrays 0-d
    return torch.from_numpy(f32).to(torch.bfloat16).view(torch.int16).numpy().copy()


def make_tensor(spec: T, lib: str, device: str = "cpu"):
    """Build ``spec`` as an sk or torch tensor on ``device``. A bfloat16 spec is built from the
    same words in both libraries: an int16 tensor viewed as bfloat16."""
    n, strides, offset = storage_plan(spec)
    if spec.dtype == "bfloat16" and device == "cpu":
        m = sk if lib == "sk" else __import__("torch")
        if spec.layout == "contig":
            words = m.from_numpy(bfloat16_words(logical_array(spec)))
            return words.clone(memory_format=m.contiguous_format).view(m.bfloat16)
        flat = m.from_numpy(bfloat16_words(storage_array(spec))).clone().view(m.bfloat16)
        return flat.as_strided(spec.shape, strides, offset)
    contig = spec.layout == "contig"
    if lib == "sk":
        dtype = getattr(sk, spec.dtype)
        if device == "meta":
            if contig:
                return sk.empty(spec.shape, dtype=dtype, device="meta")
            flat = sk.empty(n, dtype=dtype, device="meta")
        else:
            if contig:
                # as torch's side below: standard strides also for zero-size arrays
                arr = logical_array(spec)
                return sk.from_numpy(arr).clone(memory_format=sk.contiguous_format)
            flat = sk.from_numpy(storage_array(spec)).clone()
        return flat.as_strided(spec.shape, strides, offset)
    import torch
    dtype = getattr(torch, spec.dtype)
    if device == "meta":
        if contig:
            return torch.empty(spec.shape, dtype=dtype, device="meta")
        flat = torch.empty(n, dtype=dtype, device="meta")
    else:
        if contig:
            # torch.tensor keeps numpy's strides of zero-size arrays (all 0); clone makes them
            # standard.
            arr = logical_array(spec)
            return torch.from_numpy(arr).clone(memory_format=torch.contiguous_format)
        flat = torch.from_numpy(storage_array(spec)).clone()
    return flat.as_strided(spec.shape, strides, offset)


class Built:
    """The arguments of one sample in one library, plus the tensors and storages it holds."""

    def __init__(self, lib: str, device: str):
        self.lib, self.device = lib, device
        self.tensors: list = []      # every tensor argument, in argument order
        self.storages: list = []     # Storage arguments
        self._named: dict = {}

    def convert(self, obj):
        if isinstance(obj, T):
            if obj.name is not None and obj.name in self._named:
                return self._named[obj.name]
            t = make_tensor(obj, self.lib, self.device)
            self.tensors.append(t)
            if obj.name is not None:
                self._named[obj.name] = t
            return t
        if isinstance(obj, StorageOf):
            t = make_tensor(obj.spec, self.lib, self.device)
            s = t.untyped_storage()
            self.storages.append(s)
            return s
        if isinstance(obj, D):
            if self.lib == "sk":
                return getattr(sk, obj.name)
            import torch
            return getattr(torch, obj.name)
        if isinstance(obj, Gen):
            if self.lib == "sk":
                return sk.Generator().manual_seed(obj.seed)
            import torch
            return torch.Generator().manual_seed(obj.seed)
        if isinstance(obj, MF):
            if self.lib == "sk":
                return getattr(sk, obj.name)
            import torch
            return getattr(torch, obj.name)
        if isinstance(obj, list):
            return [self.convert(o) for o in obj]
        if isinstance(obj, tuple):
            return tuple(self.convert(o) for o in obj)
        return obj


def build(sample: Sample, lib: str, device: str = "cpu", op=None):
    """(args, kwargs, Built) for ``sample`` in ``lib`` on ``device``. On meta, a factory's
    ``device`` argument becomes "meta" too."""
    b = Built(lib, device)
    args = tuple(b.convert(a) for a in sample.args)
    kwargs = {k: b.convert(v) for k, v in sample.kwargs.items()}
    if device == "meta" and op is not None:
        names = [a.name for a in op.schema.arguments]
        if "device" in names:
            i = names.index("device")
            if i < len(args):
                args = args[:i] + ("meta",) + args[i + 1:]
            else:
                kwargs["device"] = "meta"
    return args, kwargs, b


# -- the table and derived entries ---------------------------------------------------------------
def qualified(op) -> str:
    return f"{op.name}.{op.overload}"


def _table() -> dict:
    from samples_losses import ENTRIES as losses_entries
    from samples_math import ENTRIES as math_entries
    from samples_names import ENTRIES as names_entries
    from samples_pointwise_more import ENTRIES as pointwise_more_entries
    from samples_reductions_more import ENTRIES as reductions_more_entries
    from samples_scalar_overloads import ENTRIES as scalar_overload_entries
    from samples_scatter_sort import ENTRIES as scatter_sort_entries
    from samples_shape_more import ENTRIES as shape_more_entries
    from samples_table import ENTRIES as base_entries
    table = dict(base_entries)
    for more in (math_entries, scatter_sort_entries, shape_more_entries,
                 pointwise_more_entries, reductions_more_entries, losses_entries,
                 names_entries, scalar_overload_entries):
        overlap = set(table) & set(more)
        assert not overlap, f"entries defined twice: {sorted(overlap)}"
        table.update(more)
    return table


TABLE: dict = {}


def table() -> dict:
    if not TABLE:
        TABLE.update(_table())
    return TABLE


def _lookup_op(qual):
    name, _, overload = qual.partition(".")
    packet = getattr(sk.ops, name, None)
    if packet is None:
        return None
    return packet._overloads.get(overload)


def entry_for(op):
    """The Entry of ``op``: its own, or one derived from its functional op's entry (in-place
    ``name_``, ``out=``) or from its view op's entry (``<view>_copy``). None if there is none."""
    own = table().get(qualified(op))
    if own is not None:
        return own
    if op.is_inplace or op.is_out:
        fn = op.functional_variant
        base = table().get(qualified(fn)) if fn is not None else None
        if base is not None:
            kind = "inplace" if op.is_inplace else "out"
            return Entry([s for s in base.samples + base.errors if _derivable(s, kind)],
                         random=base.random, data_dependent=base.data_dependent,
                         rtol=base.rtol, atol=base.atol, derived_from=qualified(fn))
        return None
    if op.name.endswith("_copy") and not op.is_mutable:
        view = _lookup_op(op.name[:-len("_copy")] + "." + op.overload)
        base = table().get(qualified(view)) if view is not None else None
        if base is not None:
            return Entry(list(base.samples), list(base.errors), rtol=base.rtol, atol=base.atol,
                         derived_from=qualified(view))
    return None


def _derivable(sample: Sample, kind: str) -> bool:
    """In-place samples need a tensor ``self``; out= samples anything."""
    if kind == "inplace":
        return bool(sample.args) and isinstance(sample.args[0], T)
    return True


def out_specs(result_dtype: str, result_shape: tuple) -> list:
    """The ``out=`` tensors tried for a derived out= sample: an empty tensor of the result dtype
    (resized by the op), and a transposed one of the right shape (keeps its strides)."""
    specs = [T((0,), result_dtype)]
    if len(result_shape) >= 2:
        specs.append(T(result_shape, result_dtype, "t"))
    return specs
