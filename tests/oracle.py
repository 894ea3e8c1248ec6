"""The torch oracle: convert tensors between subclass_kit and torch, and compare results.

``to_torch(t)`` / ``to_sk(t)`` copy the *whole storage* (bytes, or only ``nbytes`` on meta) and
rebuild the same sizes, strides and storage offset on the other side, so a non-contiguous or
expanded input stays non-contiguous or expanded.

``assert_same(ours, theirs)`` compares one result (a tensor, a sequence of them, a Python
scalar or None): dtype (mapped by name), device type, sizes, strides, storage offset,
``is_contiguous()`` (and channels-last contiguity for 4-d) and values (NaN-aware; float16 and
transcendental ops get a tolerance). Raises ``AssertionError`` naming what differs.

Only tests import this module; torch is imported lazily so that importing it never fails.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

import subclass_kit as sk

DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64")

# (rtol, atol) per dtype name, as torch.testing.assert_close.
TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def _torch():
    import torch
    return torch


def sk_dtype(name_or_dtype):
    """The ``sk.dtype`` of a name ("float32"), an sk dtype or a torch dtype."""
    if isinstance(name_or_dtype, sk.dtype):
        return name_or_dtype
    name = name_or_dtype if isinstance(name_or_dtype, str) else str(name_or_dtype)
    return getattr(sk, name.replace("torch.", "").replace("sk.", ""))


def torch_dtype(name_or_dtype):
    """The ``torch.dtype`` of a name, an sk dtype or a torch dtype."""
    torch = _torch()
    if isinstance(name_or_dtype, torch.dtype):
        return name_or_dtype
    name = name_or_dtype.name if isinstance(name_or_dtype, sk.dtype) else name_or_dtype
    return getattr(torch, name)


def dtype_name(d) -> str:
    """``"float32"`` for ``sk.float32`` and ``torch.float32`` alike."""
    if isinstance(d, sk.dtype):
        return d.name
    return str(d).replace("torch.", "")


def _device_type(t) -> str:
    return t.device.type


def to_torch(t, requires_grad: bool = False):
    """A torch tensor with the same storage contents, sizes, strides and offset as ``t``."""
    torch = _torch()
    dtype = torch_dtype(t.dtype)
    item = t.element_size()
    n_items = t.untyped_storage().nbytes() // item
    if _device_type(t) == "meta":
        flat = torch.empty(n_items, dtype=dtype, device="meta")
    else:
        buf = np.array(t.untyped_storage()._bytes()[:n_items * item], copy=True)
        if dtype == torch.bfloat16:    # numpy has no bfloat16: move the words
            flat = torch.from_numpy(buf.view(np.int16).copy()).view(dtype)
        else:
            flat = torch.from_numpy(buf.view(sk_dtype(t.dtype).numpy).copy())
    out = flat.as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset())
    if requires_grad:
        out.requires_grad_(True)
    return out


def to_sk(t):
    """An sk tensor with the same storage contents, sizes, strides and offset as torch ``t``."""
    dtype = sk_dtype(dtype_name(t.dtype))
    n_items = t.untyped_storage().nbytes() // t.element_size()
    if t.device.type == "meta":
        flat = sk.empty(n_items, dtype=dtype, device="meta")
    else:
        store = t.detach().as_strided((n_items,), (1,), 0)
        if dtype is sk.bfloat16:    # numpy has no bfloat16: move the words
            flat = sk.tensor(store.view(_torch().int16).numpy().copy()).view(dtype)
        else:
            flat = sk.tensor(store.numpy().copy(), dtype=dtype)
    return flat.as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset())


def numpy_of(t) -> np.ndarray:
    """The values of an sk or torch cpu tensor as a fresh numpy array (bfloat16 as float32,
    exactly: numpy has no bfloat16)."""
    if dtype_name(t.dtype) == "bfloat16":
        return np.array(t.detach().float().numpy(), copy=True)
    if isinstance(t, sk.Tensor):
        return np.array(t.detach().numpy(), copy=True)
    return t.detach().numpy().copy()


def _is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "untyped_storage")


def values_close(a: np.ndarray, b: np.ndarray, dtype: str, rtol=None, atol=None):
    """(ok, description) comparing two arrays of one dtype, NaN-aware."""
    if a.shape != b.shape:
        return False, f"value shapes {a.shape} vs {b.shape}"
    if a.size == 0:
        return True, ""
    if dtype in TOLERANCES:
        r, t = TOLERANCES[dtype]
        r = r if rtol is None else rtol
        t = t if atol is None else atol
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        same_inf = (np.isinf(a64) & np.isinf(b64) & (np.sign(a64) == np.sign(b64)))
        close = np.isclose(a64, b64, rtol=r, atol=t, equal_nan=True) | same_inf
        if close.all():
            return True, ""
        bad = np.argwhere(~close)[:3]
        pairs = ", ".join(f"{tuple(i)}: {a64[tuple(i)]!r} vs {b64[tuple(i)]!r}" for i in bad)
        return False, f"{(~close).sum()} of {a.size} values differ (rtol={r}, atol={t}): {pairs}"
    if dtype == "bfloat16":
        # Bitwise (so -0.0 differs from 0.0), but any NaN equals any NaN: torch's vectorised
        # kernels store NaN as 0xFFFF, its scalar paths as 0x7FC0 (docs/differences.md).
        eq = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
    else:
        eq = a == b
    if eq.all():
        return True, ""
    bad = np.argwhere(~eq)[:3]
    pairs = ", ".join(f"{tuple(i)}: {a[tuple(i)]!r} vs {b[tuple(i)]!r}" for i in bad)
    return False, f"{(~eq).sum()} of {a.size} values differ: {pairs}"


def tensor_diffs(ours, theirs, *, check_values=True, check_strides=True, rtol=None, atol=None):
    """A list of human-readable differences between an sk tensor and a torch tensor."""
    diffs = []
    if not isinstance(ours, sk.Tensor):
        return [f"expected an sk.Tensor, got {type(ours).__name__}"]
    on, tn = dtype_name(ours.dtype), dtype_name(theirs.dtype)
    if on != tn:
        diffs.append(f"dtype {on} vs {tn}")
    if _device_type(ours) != theirs.device.type:
        diffs.append(f"device {_device_type(ours)} vs {theirs.device.type}")
    if tuple(ours.shape) != tuple(theirs.shape):
        diffs.append(f"sizes {tuple(ours.shape)} vs {tuple(theirs.shape)}")
        return diffs
    if check_strides:
        if tuple(ours.stride()) != tuple(theirs.stride()):
            diffs.append(f"strides {tuple(ours.stride())} vs {tuple(theirs.stride())}")
        if ours.storage_offset() != theirs.storage_offset():
            diffs.append(f"storage_offset {ours.storage_offset()} vs "
                         f"{theirs.storage_offset()}")
        if ours.is_contiguous() != theirs.is_contiguous():
            diffs.append(f"is_contiguous {ours.is_contiguous()} vs {theirs.is_contiguous()}")
        if ours.ndim == 4:
            torch = _torch()
            a = ours.is_contiguous(memory_format=sk.channels_last)
            b = theirs.is_contiguous(memory_format=torch.channels_last)
            if a != b:
                diffs.append(f"is_contiguous(channels_last) {a} vs {b}")
    if ours.requires_grad != theirs.requires_grad:
        diffs.append(f"requires_grad {ours.requires_grad} vs {theirs.requires_grad}")
    if (check_values and not diffs and _device_type(ours) == "cpu"
            and theirs.device.type == "cpu"):
        ok, why = values_close(numpy_of(ours), numpy_of(theirs), on, rtol, atol)
        if not ok:
            diffs.append(why)
    return diffs


def _scalar_same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def result_diffs(ours, theirs, where="result", **kw) -> list:
    """Differences between two op results of any shape (tensor, list/tuple, scalar, None)."""
    if _is_torch_tensor(theirs):
        return [f"{where}: {d}" for d in tensor_diffs(ours, theirs, **kw)]
    if isinstance(theirs, (list, tuple)):
        if not isinstance(ours, (list, tuple)):
            return [f"{where}: expected a sequence, got {type(ours).__name__}"]
        if len(ours) != len(theirs):
            return [f"{where}: {len(ours)} outputs vs {len(theirs)}"]
        out = []
        for i, (a, b) in enumerate(zip(ours, theirs)):
            out += result_diffs(a, b, f"{where}[{i}]", **kw)
        return out
    if theirs is None:
        return [] if ours is None else [f"{where}: expected None, got {ours!r}"]
    if hasattr(theirs, "is_floating_point") or isinstance(theirs, (bool, int, float, complex)):
        if not _scalar_same(ours, theirs):
            return [(f"{where}: {ours!r} ({type(ours).__name__}) vs {theirs!r} "
                     f"({type(theirs).__name__})")]
        return []
    if dtype_name(theirs) in DTYPE_NAMES:
        return [] if dtype_name(ours) == dtype_name(theirs) else [f"{where}: {ours} vs {theirs}"]
    return [] if ours == theirs else [f"{where}: {ours!r} vs {theirs!r}"]


def assert_same(ours, theirs, *, check_values=True, check_strides=True, rtol=None, atol=None,
                msg=""):
    """Assert that an sk result matches a torch result (see the module docstring)."""
    diffs = result_diffs(ours, theirs, check_values=check_values, check_strides=check_strides,
                         rtol=rtol, atol=atol)
    if diffs:
        head = f"{msg}: " if msg else ""
        raise AssertionError(head + "; ".join(diffs))


def normalize_message(text: str) -> str:
    """Map torch's names in an error text to ours (``torch.`` -> ``sk.``, PyTorch ->
    subclass_kit, ``__torch_dispatch__`` -> ``__tensor_dispatch__``, the Tensor class)."""
    text = text.replace("torch._C.TensorBase", "subclass_kit.Tensor")
    return (text.replace("torch.", "sk.").replace("__torch_dispatch__", "__tensor_dispatch__")
            .replace("__torch_function__", "__tensor_function__")
            .replace("report a bug to PyTorch", "report a bug to subclass_kit"))


def assert_same_error(fn_ours, fn_theirs):
    """Both calls raise: the same exception class, and our message equals torch's with its
    names mapped (:func:`normalize_message`)."""
    import pytest
    with pytest.raises(Exception) as theirs:
        fn_theirs()
    with pytest.raises(Exception) as ours:
        fn_ours()
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == normalize_message(str(theirs.value))


def same_storage(a, b) -> bool:
    """Whether two tensors of one library share a storage."""
    if isinstance(a, sk.Tensor):
        return a.untyped_storage() is b.untyped_storage()
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


# -- op streams: the same recording mode in both libraries -----------------------------------------
class SkOpLog(sk.DispatchMode):
    """Records the ops a program dispatches: ``name`` or ``name.overload`` (``overloads=True``),
    leaving out names in ``skip``; with ``args`` (a function of the positional arguments) each
    entry is ``(name, args(arguments))``."""

    def __init__(self, overloads=False, skip=(), args=None):
        self.ops, self.overloads, self.skip, self.args = [], overloads, frozenset(skip), args

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        if func.name not in self.skip:
            name = f"{func.name}.{func.overload}" if self.overloads else func.name
            self.ops.append(name if self.args is None else (name, self.args(args)))
        return func(*args, **(kwargs or {}))


def torch_op_log(overloads=False, skip=(), args=None):
    """A TorchDispatchMode recording the way :class:`SkOpLog` does."""
    from torch.utils._python_dispatch import TorchDispatchMode

    record = args

    class TorchOpLog(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._schema.name.split("::")[1]
            if name not in skip:
                name = f"{name}.{func._overloadname}" if overloads else name
                self.ops.append(name if record is None else (name, record(args)))
            return func(*args, **(kwargs or {}))

    return TorchOpLog()


def torch_under_sk_modes():
    """For the torch side of a comparison: a pass-through ``TorchDispatchMode`` while sk runs
    under a dispatch mode (the ``--debug-asserts`` pass runs every test under one), else a null
    context. Some facts depend on whether a mode is active, in both libraries: results computed
    from inference tensors keep version 0 under a mode (Note [Versions of outputs computed from
    inference tensors])."""
    if sk.get_mode_stack():
        return torch_op_log()
    return contextlib.nullcontext()


class SkFunctionLog(sk.FunctionMode):
    """Records the calls a program makes at the function level: ``record(func, args)`` per call
    (default: the callable's ``__name__``), in ``calls``."""

    def __init__(self, record=None):
        super().__init__()
        self.calls, self.record = [], record or (lambda func, args: func.__name__)

    def __tensor_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(self.record(func, args))
        return func(*args, **(kwargs or {}))


def torch_function_log(record=None):
    """A TorchFunctionMode recording the way :class:`SkFunctionLog` does."""
    from torch.overrides import TorchFunctionMode

    class TorchFunctionLog(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls, self.record = [], record or (lambda func, args: func.__name__)

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append(self.record(func, args))
            return func(*args, **(kwargs or {}))

    return TorchFunctionLog()


class Wrapper(sk.Tensor):
    """A pass-through wrapper subclass (the real tensor is ``elem``): unwrap, compute, rewrap,
    ``sk.return_and_correct_aliasing`` -- the shape every correct wrapper has."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(elem):
        w = sk.make_wrapper_subclass(Wrapper, elem.shape, elem.stride(), elem.storage_offset(),
                                     dtype=elem.dtype, device=elem.device)
        w.elem = elem
        return w

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*sk.pytree.tree_map_only(cls, lambda t: t.elem, args),
                   **sk.pytree.tree_map_only(cls, lambda t: t.elem, kwargs))
        out = sk.pytree.tree_map_only(sk.Tensor, cls.wrap, out)
        return sk.return_and_correct_aliasing(func, args, kwargs, out)

    def __tensor_flatten__(self):
        return ["elem"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return Wrapper.wrap(inner["elem"])


def autograd_obs(t, *, version: bool = False):
    """What the autograd oracle tests compare of a result of either library (or of a nest of
    them): values (as text, so NaNs compare equal), dtype, the ``grad_fn``'s name,
    ``requires_grad``, ``is_leaf`` and, with ``version``, ``_version``; a non-tensor as it is."""
    if t is None:
        return None
    if isinstance(t, (list, tuple)):
        return [autograd_obs(x, version=version) for x in t]
    if not hasattr(t, "grad_fn"):
        return t
    fn = t.grad_fn
    out = {"values": str(np.round(np.asarray(t.detach().tolist(), dtype=float), 6).tolist()),
           "dtype": str(t.dtype).split(".")[-1],
           "grad_fn": None if fn is None else fn.name(),
           "requires_grad": t.requires_grad, "is_leaf": t.is_leaf}
    if version:
        out["version"] = t._version
    return out
