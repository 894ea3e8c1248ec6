"""Meta mode: run a program on real-looking inputs without computing or allocating data.

What it is
    Inside ``with MetaMode():`` every op produces **meta tensors** (``device == "meta"``: sizes,
    strides, dtype and a data-less Storage), so a program runs as pure shape/stride/dtype
    inference through the meta kernels (Note [One rule per op]: same metadata and same errors
    as cpu). Two rewrites make ordinary programs run unchanged:

    - **factories are forced to meta**: an op with a ``device`` argument (``sk.zeros``,
      ``sk.arange``, ``t.to("cpu")``...) runs with ``device="meta"``, whatever was asked.
      There is no exception inside the mode; to allocate real data, leave the mode or use
      ``sk.no_dispatch()`` (which bypasses every mode).
    - **real inputs take part as meta twins**: a cpu tensor reaching an op is replaced by a
      meta tensor with the same sizes, strides, storage offset and dtype, over a meta Storage
      of the same ``nbytes``. The twin is cached per real tensor (weak references), views of
      a real tensor become views (same ``_base`` structure) of its base's twin, and all real
      tensors sharing a Storage share one meta Storage, so aliasing facts carry over (as
      FakeTensor's ``from_tensor``; ``t.to("meta")`` would instead give a fresh tensor at
      offset 0 with dense strides, e.g. a ``[1:]`` slice of a permuted tensor loses its
      offset and its strides change). Real tensors are never read or written
      (``real.add_(1)`` mutates the twin only); a twin's version counter starts at the real
      tensor's ``_version`` and then counts the writes during the mode, and a twin is an
      inference tensor exactly when the real one is (also when made inside
      ``inference_mode``), so views behave as eager execution's.

    **The device label (a design choice).** PyTorch's ``FakeTensor`` is a subclass whose
    ``.device`` lies ("cpu") while it holds a meta tensor. Here results are *plain meta
    tensors*, so ops on them take the core's fast path (no wrapper to unwrap and rewrap:
    cheap), and the device the program believes in is kept in a ``fake_device`` attribute
    (an ``sk.device``) on tensors whose label is not meta: twins of cpu tensors, factory
    results, and outputs of ops whose inputs carry a label. ``MetaMode.device_of(t)`` reads
    it (``t.device`` otherwise). Because ``t.device`` says "meta" inside the mode, a program
    doing ``sk.arange(n, device=x.device)`` asks for meta; a meta label is therefore a
    wildcard: an output takes the first non-meta label of its inputs, and mixing labels never
    raises (with cpu as the only real device, no real mixing error is lost).

    ``infer_shapes(fn, *specs)`` runs ``fn`` under the mode and reports output metadata and
    input/parameter sizes.

Which PyTorch feature it mirrors
    ``torch._subclasses.FakeTensorMode`` (``from_tensor`` conversion with a memo, fake
    devices, factory interception) and ``torch.utils.flop_counter``-style shape reports
    (``infer_shapes``); the meta device itself is PyTorch's ``device="meta"``.

Where it sits in the mode stack
    A dispatch mode: it sees ops after composites decomposed, rewrites their arguments and
    forwards them with ``func(*args)`` to the next mode down, so modes *outside* it see meta
    ops (a LoggingMode entered before MetaMode logs ``f32[2, 3]@meta`` arguments) and modes
    inside it see the program's real inputs. Ops with wrapper-subclass arguments are declined
    (``NotImplemented``): the subclass unwraps, and the ops it runs on its inner tensors come
    back to this mode. Conversions of real inputs run under ``sk.no_dispatch()`` and are not
    seen by any mode.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, NamedTuple

import subclass_kit as sk

__all__ = ["DynamicOutputShapeError", "MetaMode", "ShapeReport", "TensorMeta", "infer_shapes"]

Tensor = sk.Tensor
META = sk.device("meta")
CPU = sk.device("cpu")

# op -> whether its schema has a ``device`` argument (factories, _to_copy).
_HAS_DEVICE: dict = {}


def _has_device(func) -> bool:
    has = _HAS_DEVICE.get(func)
    if has is None:
        has = any(a.name == "device" for a in func.schema.arguments)
        _HAS_DEVICE[func] = has
    return has


class DynamicOutputShapeError(NotImplementedError):
    """An op whose output *shape* depends on its inputs' data (``nonzero``, ``x[mask]`` with a
    boolean or uint8 mask) ran under :class:`MetaMode`, which has no data.

    PyTorch's ``FakeTensorMode`` raises ``DynamicOutputShapeException`` (a ``RuntimeError``)
    there; this is a ``NotImplementedError`` -- the class the meta device itself raises, and
    also a ``RuntimeError`` -- with a message naming the op instead of the meta kernel's text
    about a ``torch.fx`` config flag.
    """


_DATA_DEPENDENT = (sk.ops.nonzero.default, sk.ops.masked_select.default,
                   sk.ops.masked_select.out, sk.ops._unique2.default, sk.ops.unique_dim.default)


def _data_dependent(func, args, kwargs=None) -> bool:
    """Whether ``func(*args)`` failed on meta because its output shape needs the data."""
    if func in _DATA_DEPENDENT:
        return True
    if func in (sk.ops.repeat_interleave.Tensor, sk.ops.repeat_interleave.Tensor_out):
        return (kwargs or {}).get("output_size") is None
    if func is sk.ops.index.Tensor and len(args) > 1:
        return any(isinstance(i, Tensor) and i.dtype in (sk.bool, sk.uint8) for i in args[1])
    return False


class MetaMode(sk.DispatchMode):
    """Run ops as meta computations (see the module docstring).

    ``op_count``: ops handled so far. The real->meta memo lives on the mode object, so
    entering the same object again reuses the twins of the same real tensors.
    """

    def __init__(self):
        self._tensors: dict = {}    # id(real tensor) -> (weakref, meta twin)
        self._storages: dict = {}   # id(real Storage) -> (weakref, meta Storage)
        self.op_count = 0

    @staticmethod
    def device_of(t) -> Any:
        """The device ``t`` stands for: its ``fake_device`` label, else ``t.device``."""
        return t.__dict__.get("fake_device") or t.device

    # -- real -> meta ---------------------------------------------------------------------
    def to_meta(self, t):
        """The meta twin of ``t`` (``t`` itself when it is already meta)."""
        if t.device == META:
            return t
        entry = self._tensors.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        # The twin is an inference tensor exactly when ``t`` is one, whatever the current
        # inference mode (a twin made inside inference_mode of a normal tensor keeps its
        # version counter, as the views eager execution takes there do).
        with sk.no_dispatch(), sk.inference_mode(t.is_inference()):
            m = self._convert(t)
        m.fake_device = t.device
        key = id(t)
        self._tensors[key] = (weakref.ref(t, lambda _, k=key: self._tensors.pop(k, None)), m)
        return m

    def _convert(self, t):
        base = t._base
        if base is not None:
            return self.to_meta(base).as_strided(t.shape, t.stride(), t.storage_offset())
        m = sk.empty(0, dtype=t.dtype, device="meta")
        m.set_(self._meta_storage(t.untyped_storage()), t.storage_offset(), t.shape,
               t.stride())
        if m._vc is not None:
            # The twin's counter continues the real one (set_ bumped it): a view the program
            # takes inside the mode reports the version eager execution would (FakeTensor's
            # views of real inputs do too). Views of ``t`` share it through the base twin.
            m._vc[0] = t._vc[0] if t._vc is not None else 0
        if t.requires_grad:
            m.requires_grad_(True)
        return m

    def _meta_storage(self, storage):
        key = id(storage)
        entry = self._storages.get(key)
        if entry is not None and entry[0]() is storage:
            return entry[1]
        meta = sk.empty(storage.nbytes(), dtype=sk.uint8, device="meta").untyped_storage()
        ref = weakref.ref(storage, lambda _, k=key: self._storages.pop(k, None))
        self._storages[key] = (ref, meta)
        return meta

    def _convert_value(self, a, labels: list):
        """Meta twin of a tensor argument (or of the tensors in a list); records labels."""
        if isinstance(a, Tensor):
            if a.device != META:
                a = self.to_meta(a)
            lab = a.__dict__.get("fake_device")
            if lab is not None:
                labels.append(lab)
            return a
        if isinstance(a, (list, tuple)):
            return type(a)(self._convert_value(x, labels) for x in a)
        return a

    # -- dispatch -------------------------------------------------------------------------
    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        if types:
            return NotImplemented
        self.op_count += 1
        label = None
        slow = False
        for a in args:
            if isinstance(a, Tensor):
                if a.device is not META:
                    slow = True
                    break
                if label is None:
                    label = a.__dict__.get("fake_device")
            elif type(a) is list or type(a) is tuple:
                slow = True
                break
        if slow or kwargs or _has_device(func):
            args, kwargs, label = self._rewrite(func, args, kwargs or {})
        else:
            kwargs = {}
        try:
            out = func(*args, **kwargs)
        except RuntimeError:    # NotImplementedError too (a subclass)
            if not _data_dependent(func, args, kwargs):
                raise
            raise DynamicOutputShapeError(
                f"{func}: the shape of its output depends on the data of its inputs, which "
                "MetaMode does not have (nonzero, masked_select, unique, repeat_interleave "
                "without output_size, or indexing with a boolean mask); run this step outside "
                "the mode") from None
        if label is not None and label != META and not func.mutated_args:
            if isinstance(out, Tensor):
                out.fake_device = label
            elif isinstance(out, (list, tuple)):
                for o in out:
                    if isinstance(o, Tensor):
                        o.fake_device = label
        return out

    def _rewrite(self, func, args, kwargs):
        labels: list = []
        args = tuple(self._convert_value(a, labels) for a in args)
        if kwargs:
            kwargs = {k: self._convert_value(v, labels) for k, v in kwargs.items()}
        label = next((lab for lab in labels if lab != META), None)
        if _has_device(func):
            requested = kwargs.get("device")
            kwargs["device"] = "meta"
            if requested is not None:
                label = sk.device(requested) if not isinstance(requested, sk.device) \
                    else requested
            elif not labels and not any(isinstance(a, Tensor) for a in args):
                label = CPU     # a factory with the default device
        return args, kwargs, label

    def __repr__(self):
        return f"<MetaMode: {self.op_count} ops>"


# -- infer_shapes -----------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorMeta:
    """Metadata of one tensor: shape, dtype, stride, numel, nbytes and the device it stands
    for (its ``fake_device`` label, else its device). A pytree leaf."""

    shape: tuple
    dtype: Any
    stride: tuple
    numel: int
    nbytes: int
    device: str

    @classmethod
    def of(cls, t) -> TensorMeta:
        return cls(tuple(t.shape), t.dtype, tuple(t.stride()), t.numel(),
                   t.numel() * t.element_size(), MetaMode.device_of(t).type)

    def __str__(self):
        return f"{self.dtype.name}{list(self.shape)}"


class ShapeReport(NamedTuple):
    """What :func:`infer_shapes` found.

    ``outputs``: the outputs of ``fn`` with every tensor replaced by its :class:`TensorMeta`
    (same nesting). ``inputs``: a TensorMeta per tensor leaf of the specs. ``parameters`` /
    ``parameter_bytes``: elements and bytes of the parameters -- when ``fn`` has
    ``named_parameters()`` (a zoo ``nn.Module``), those (a tensor reachable twice, e.g. tied
    weights, counts once; the specs are its data inputs and do not count), else every
    distinct spec tensor (a plain function takes its weights as arguments).
    ``ops``: ops the program ran.
    """

    outputs: Any
    inputs: tuple
    parameters: int
    parameter_bytes: int
    ops: int

    @property
    def output_shapes(self) -> list:
        return [m.shape for m in sk.pytree.tree_leaves(self.outputs) if isinstance(m, TensorMeta)]

    def __str__(self):
        outs = [m for m in sk.pytree.tree_leaves(self.outputs) if isinstance(m, TensorMeta)]
        lines = [f"inputs:      {', '.join(str(m) for m in self.inputs) or '-'}",
                 f"outputs:     {', '.join(str(m) for m in outs) or '-'}",
                 f"parameters:  {self.parameters:,} ({self.parameter_bytes:,} bytes)",
                 f"ops:         {self.ops}"]
        return "\n".join(lines)


def _spec_to_tensor(spec):
    """A tensor for a spec: tensors pass through; ``(shape, dtype)`` and bare shapes become
    empty meta tensors (an int shape in a pair is 1-d, as ``sk.empty(n)``)."""
    if isinstance(spec, Tensor):
        return spec
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], sk.dtype):
        shape = (spec[0],) if isinstance(spec[0], int) else tuple(spec[0])
        return sk.empty(shape, dtype=spec[1], device="meta")
    if isinstance(spec, (tuple, list, sk.Size)) and all(isinstance(s, int) for s in spec):
        return sk.empty(tuple(spec), device="meta")
    raise TypeError(f"infer_shapes(): a spec must be a Tensor, a (shape, dtype) pair or a "
                    f"shape, not {spec!r}")


def infer_shapes(fn, *specs, **kwspecs) -> ShapeReport:
    """Run ``fn(*inputs)`` under :class:`MetaMode` and report its output metadata.

    Each spec is a tensor (real ones take part through their meta twins; ``sk.empty(...,
    device="meta")`` works too), a ``(shape, dtype)`` pair, or a bare shape (default dtype).
    Keyword specs are passed as keyword arguments. Returns a :class:`ShapeReport`. Errors of
    ``fn`` (shape mismatches, data-dependent ops such as ``.item()``) propagate with the meta
    kernels' PyTorch texts. Raises TypeError for a spec of another form ("a spec must be a
    Tensor, a (shape, dtype) pair or a shape") and ``sk.empty``'s errors for bad sizes.
    """
    inputs = [_spec_to_tensor(s) for s in specs]
    kw_inputs = {k: _spec_to_tensor(s) for k, s in kwspecs.items()}
    mode = MetaMode()
    with mode:
        out = fn(*inputs, **kw_inputs)
    outputs = sk.pytree.tree_map_only(Tensor, TensorMeta.of, out)
    seen: dict = {}
    named = getattr(fn, "named_parameters", None)
    if callable(named):           # a module: its parameters; the specs are its data inputs
        for _, p in named():
            if isinstance(p, Tensor):
                seen.setdefault(id(p), p)
    else:                         # a function: its weights come in as specs
        for t in list(inputs) + list(kw_inputs.values()):
            seen.setdefault(id(t), t)
    params = sum(t.numel() for t in seen.values())
    nbytes = sum(t.numel() * t.element_size() for t in seen.values())
    metas = tuple(TensorMeta.of(t) for t in inputs + list(kw_inputs.values()))
    return ShapeReport(outputs, metas, params, nbytes, mode.op_count)
