"""Weights-only quantization: a wrapper subclass storing a Linear weight as packed integers plus
per-group scales, the layout of torchao's ``int8_weight_only`` / ``int4_weight_only``.

A weight ``w`` of shape ``[out, in]`` is cut into groups of ``group_size`` consecutive elements
along ``in`` (one row of groups per output channel):

- **int8** (symmetric, torchao's ``MappingType.SYMMETRIC`` with quant range [-128, 127]):
  ``scale = max(|w_group|) / 127.5`` (at least float32's eps), ``q = clamp(round(w * (1 /
  scale)), -128, 127)``; stored: ``qdata`` int8 ``[out, in]`` and ``scale`` ``[out, in / G]``;
- **int4** (asymmetric with a floating zero point, torchao's ``int4_weight_only``,
  ``ZeroPointDomain.FLOAT``, quant range [0, 15]): ``scale = (max - min) / 15`` (at least
  float32's eps), ``zero_point = min + 8 * scale``, ``q = clamp(round((w - min) / scale), 0,
  15)``, dequantized as ``(q - 8) * scale + zero_point``; two values per byte (column ``2j`` in
  the low nibble, ``2j + 1`` in the high one): ``qdata`` uint8 ``[out, in / 2]``, ``scale`` and
  ``zero_point`` ``[out, in / G]``.

``scale`` and ``zero_point`` have the weight's dtype (torchao keeps them in the weight dtype)
and the codes are computed from the stored (rounded) scale, so ``dequantize`` is within
``scale / 2`` of the original value per element (plus the dtype's rounding).

``QuantizedTensor`` presents the weight's shape and dtype (the activation dtype) and no data;
``t()``/``transpose`` of a 2-d one, ``detach`` and ``alias`` stay quantized (views sharing the
packed data); every other op dequantizes its QuantizedTensor arguments to their dtype and runs
on plain tensors (``F.linear`` → ``t`` + ``mm``/``addmm``), as torchao's fallback does; writes to
a QuantizedTensor raise NotImplementedError. On meta only shapes exist; on cpu numpy quantizes
and dequantizes. ``quantize_(model, "int8")`` replaces a model's Linear weights.

    >>> import subclass_kit as sk
    >>> from subclass_kit.modes.quantization import quantize_weight
    >>> q = quantize_weight(sk.empty(64, 256, device="meta"), "int4", group_size=128)
    >>> tuple(q.shape), q.dtype, tuple(q.qdata.shape), q.qdata.dtype, tuple(q.scale.shape)
    ((64, 256), sk.float32, (64, 128), sk.uint8, (64, 2))
    >>> tuple(sk.nn.functional.linear(sk.empty(2, 256, device="meta"), q).shape)
    (2, 64)
"""

from __future__ import annotations

import numpy as np

import subclass_kit as sk

__all__ = ["QuantizedTensor", "quantize_weight", "quantize_", "SCHEMES", "DEFAULT_GROUP_SIZE"]

SCHEMES = ("int8", "int4")
DEFAULT_GROUP_SIZE = 128
_EPS = float(np.finfo(np.float32).eps)


class QuantizedTensor(sk.Tensor):
    """A ``[out, in]`` weight (or its transpose, ``transposed=True``) stored as ``qdata`` +
    per-group ``scale`` (+ ``zero_point`` for int4); see the module docstring."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def _wrap(qdata, scale, zero_point, scheme, group_size, dtype, transposed=False):
        out_features = qdata.shape[0]
        in_features = qdata.shape[1] * (2 if scheme == "int4" else 1)
        shape = (in_features, out_features) if transposed else (out_features, in_features)
        w = sk.make_wrapper_subclass(QuantizedTensor, shape, dtype=dtype, device=qdata.device)
        w.qdata, w.scale, w.zero_point = qdata, scale, zero_point
        w.scheme, w.group_size, w.transposed = scheme, group_size, transposed
        return w

    def dequantize(self, dtype=None) -> sk.Tensor:
        """The float weight (this tensor's shape) in ``dtype`` (default: this tensor's dtype)."""
        dtype = dtype or self.dtype
        out, groups = self.scale.shape
        shape = (out, groups * self.group_size)
        if self.device.type == "meta":
            w = sk.empty(shape, dtype=dtype, device="meta")
        else:
            w = sk.from_numpy(_dequantize_np(self)).to(dtype)
        return w.t() if self.transposed else w

    def __repr__(self):
        return (f"QuantizedTensor({self.scheme}, group_size={self.group_size}, "
                f"shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device})")

    def __tensor_flatten__(self):
        names = ["qdata", "scale"] + (["zero_point"] if self.zero_point is not None else [])
        return names, (self.scheme, self.group_size, self.dtype, self.transposed)

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        scheme, group_size, dtype, transposed = ctx
        return QuantizedTensor._wrap(inner["qdata"], inner["scale"], inner.get("zero_point"),
                                     scheme, group_size, dtype, transposed)

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else None
        if isinstance(first, cls):
            if func in _SAME or (func in _TRANSPOSES and _swaps_2d(first, args[1:], kwargs)):
                flip = func not in _SAME
                out = cls._wrap(first.qdata, first.scale, first.zero_point, first.scheme,
                                first.group_size, first.dtype, first.transposed ^ flip)
                return sk.return_and_correct_aliasing(func, args, kwargs, out)
            if func.is_view or "inplace_view" in func.tags:
                raise NotImplementedError(f"QuantizedTensor: the view op {func} is not "
                                          f"supported (only t, transpose, detach, alias)")
        for name in func.mutated_args:
            names = [a.name for a in func.schema.arguments]
            i = names.index(name)
            target = args[i] if i < len(args) else kwargs.get(name)
            if isinstance(target, cls):
                raise NotImplementedError(f"QuantizedTensor: {func} writes to a quantized "
                                          f"weight, which is read-only")
        return func(*sk.pytree.tree_map_only(cls, cls.dequantize, args),
                    **sk.pytree.tree_map_only(cls, cls.dequantize, kwargs))


_SAME = {sk.ops.detach.default, sk.ops.alias.default}
_TRANSPOSES = {sk.ops.t.default, sk.ops.transpose.int}


def _swaps_2d(t, rest, kwargs) -> bool:
    if t.ndim != 2:
        return False
    if not rest and not kwargs:          # t.default
        return True
    dims = list(rest) + [kwargs[k] for k in ("dim0", "dim1") if k in kwargs]
    return sorted(d % 2 for d in dims) == [0, 1]


# -- numpy arithmetic (cpu) ----------------------------------------------------------------------
def _groups(a: np.ndarray, group_size: int) -> np.ndarray:
    out, n = a.shape
    return a.reshape(out, n // group_size, group_size)


def _params_np(w: np.ndarray, scheme: str, group_size: int):
    """float32 (scale, zero_point or None, group minimum or None) per group of ``w``."""
    g = _groups(w, group_size)
    if scheme == "int8":
        return np.maximum(np.abs(g).max(-1) / 127.5, _EPS), None
    lo, hi = g.min(-1), g.max(-1)
    scale = np.maximum((hi - lo) / 15, _EPS)
    return scale, lo + 8 * scale


def _codes_np(w, scale, zero_point, scheme, group_size) -> np.ndarray:
    g = _groups(w, group_size)
    if scheme == "int8":
        # x * (1 / scale), as torchao's quantize_affine (ties round as torch's do).
        q = np.clip(np.rint(g * (1 / scale)[..., None]), -128, 127).astype(np.int8)
        return q.reshape(w.shape)
    lo = zero_point - 8 * scale          # the group minimum, from the stored parameters
    q = np.clip(np.rint((g - lo[..., None]) / scale[..., None]), 0, 15).astype(np.uint8)
    q = q.reshape(w.shape)
    return q[:, 0::2] | (q[:, 1::2] << 4)


def _unpack_int4(packed: np.ndarray) -> np.ndarray:
    out = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = packed & 0xF
    out[:, 1::2] = packed >> 4
    return out


def _as_f32(t) -> np.ndarray:
    return t.to(sk.float32).numpy()


def _dequantize_np(qt: QuantizedTensor) -> np.ndarray:
    scale = _as_f32(qt.scale)[..., None]
    if qt.scheme == "int8":
        g = _groups(qt.qdata.numpy().astype(np.float32), qt.group_size)
        return (g * scale).reshape(g.shape[0], -1)
    q = _groups(_unpack_int4(qt.qdata.numpy()).astype(np.float32), qt.group_size)
    w = (q - 8) * scale + _as_f32(qt.zero_point)[..., None]
    return w.reshape(w.shape[0], -1)


# -- public functions ------------------------------------------------------------------------------
def _check(weight, scheme, group_size, name):
    if scheme not in SCHEMES:
        raise ValueError(f"quantize: scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size <= 0:
        raise ValueError(f"quantize: group_size must be a positive int, got {group_size!r}")
    if scheme == "int4" and group_size % 2:
        raise ValueError(f"quantize: int4 packs two values per byte, so group_size must be "
                         f"even, got {group_size}")
    if not isinstance(weight, sk.Tensor) or weight.ndim != 2:
        raise ValueError(f"quantize: {name} must be a 2-d [out_features, in_features] tensor, "
                         f"got shape {tuple(getattr(weight, 'shape', ()))}")
    if not weight.dtype.is_floating_point:
        raise TypeError(f"quantize: {name} must be floating point, got {weight.dtype}")
    if weight.shape[1] % group_size:
        raise ValueError(f"quantize: {name} has in_features={weight.shape[1]}, not divisible "
                         f"by group_size={group_size}")


def quantize_weight(weight, scheme: str = "int8", group_size: int = DEFAULT_GROUP_SIZE, *,
                    name: str = "weight") -> QuantizedTensor:
    """``weight`` ([out, in], floating, meta or cpu) as a :class:`QuantizedTensor` of
    ``scheme`` ("int8" or "int4") with groups of ``group_size`` along ``in``.

    Raises ValueError for an unknown scheme, a non-positive (or, for int4, odd) group size, a
    weight that is not 2-d or whose in_features is not divisible by ``group_size`` (the message
    names ``name``); TypeError for a non-floating weight.
    """
    _check(weight, scheme, group_size, name)
    out, n = weight.shape
    dtype, dev = weight.dtype, weight.device
    groups = (out, n // group_size)
    if dev.type == "meta":
        qdata = (sk.empty(out, n, dtype=sk.int8, device=dev) if scheme == "int8"
                 else sk.empty(out, n // 2, dtype=sk.uint8, device=dev))
        scale = sk.empty(groups, dtype=dtype, device=dev)
        zero = sk.empty(groups, dtype=dtype, device=dev) if scheme == "int4" else None
        return QuantizedTensor._wrap(qdata, scale, zero, scheme, group_size, dtype)
    w = _as_f32(weight.detach())
    scale_f, zero_f = _params_np(w, scheme, group_size)
    # Store the parameters in the weight dtype first: the codes use the rounded values.
    scale = sk.from_numpy(np.ascontiguousarray(scale_f)).to(dtype)
    zero = None if zero_f is None else sk.from_numpy(np.ascontiguousarray(zero_f)).to(dtype)
    codes = _codes_np(w, _as_f32(scale), None if zero is None else _as_f32(zero), scheme,
                      group_size)
    qdata = sk.from_numpy(np.ascontiguousarray(codes))
    return QuantizedTensor._wrap(qdata, scale, zero, scheme, group_size, dtype)


# Module classes whose 2-d ``weight`` is a Linear's, by class name (sk.nn's Linear and
# subclasses of it, Hugging Face's Conv1D of the zoo, which stores the weight [in, out]).
_LINEAR_KINDS = {"Linear": False, "Conv1D": True}


def _linear_weights(model):
    """``(qualified name, module, transposed)`` of every Linear (and GPT-2 Conv1D, whose weight
    is the transposed [in, out]) module of ``model``."""
    def kind(module):
        for cls in type(module).__mro__:
            if cls.__name__ in _LINEAR_KINDS:
                return _LINEAR_KINDS[cls.__name__]
        return None

    def walk(module, prefix):
        for name, child in module.named_children():
            qual = f"{prefix}{name}"
            transposed = kind(child)
            if transposed is not None and isinstance(getattr(child, "weight", None), sk.Tensor):
                yield qual, child, transposed
            yield from walk(child, qual + ".")
    if hasattr(model, "named_children"):
        yield from walk(model, "")


def quantize_(model, scheme: str = "int8", group_size: int = DEFAULT_GROUP_SIZE) -> list:
    """Replace, in place, the weight of every Linear module of ``model`` (``sk.nn.Linear``,
    the zoo's ``Linear``, and GPT-2's ``Conv1D``, quantized as its transposed linear) by a
    :class:`QuantizedTensor` (torchao's ``quantize_`` with its default filter: embeddings, norms
    and biases stay as they are). A weight tied to another module (an LM head sharing the
    embedding matrix) is left alone, so the tie and the embedding stay exact.

    Returns the qualified names of the weights replaced. Raises ValueError naming the layer
    when its in_features is not divisible by ``group_size`` (nothing is replaced then).
    """
    tied = _tied_ids(model)
    plan = []
    for module_name, module, transposed in _linear_weights(model):
        w = module.weight
        if isinstance(w, QuantizedTensor) or id(w) in tied:
            continue
        base = w.detach().t() if transposed else w.detach()
        _check(base, scheme, group_size, f"{module_name}.weight")
        plan.append((module_name, module, transposed, base))
    done = []
    for module_name, module, transposed, base in plan:
        q = quantize_weight(base, scheme, group_size, name=f"{module_name}.weight")
        _set_weight(module, q.t() if transposed else q)
        done.append(f"{module_name}.weight")
    return done


def _tied_ids(model) -> set:
    """ids of tensors held by more than one module (tied weights)."""
    holders = {}

    def walk(module):
        for value in vars(module).values():
            if isinstance(value, sk.Tensor):
                holders.setdefault(id(value), set()).add(id(module))
        for name, value in getattr(module, "_parameters", {}).items():
            if isinstance(value, sk.Tensor):
                holders.setdefault(id(value), set()).add(id(module))
        for _, child in module.named_children():
            walk(child)
    walk(model)
    return {k for k, v in holders.items() if len(v) > 1}


def _set_weight(module, value):
    params = module.__dict__.get("_parameters")
    if params is not None and "weight" in params:
        # sk.nn registers Parameters only; a quantized weight is not trainable (weights-only
        # quantization), so it goes into the table as torchao's requires_grad=False one does.
        params["weight"] = value
    else:
        module.weight = value
