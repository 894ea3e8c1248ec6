"""``make_wrapper_subclass(..., dispatch_sizes_strides_policy=)``: a wrapper whose handler
answers metadata queries, as PyTorch's ``_make_wrapper_subclass`` does.

With policy ``"strides"``, ``x.stride()`` and ``x.is_contiguous()`` dispatch
``sym_stride.default`` and ``is_contiguous.default`` to the class's ``__tensor_dispatch__``
(and to active modes, like any op); with ``"sizes"`` also ``x.size()`` / ``x.shape``
(``sym_size.default``), ``x.dim()`` (``dim.default``), ``x.numel()`` (``sym_numel.default``)
and ``x.storage_offset()`` (``sym_storage_offset.default``). A handler returning None leaves
the answer to the wrapper's own metadata (for ``dim``: RuntimeError "dim returned invalid type
NoneType, expected int", PyTorch's). The kernels of these ops read the layout, so a handler
may call ``func(*args)`` for the default answer.

The methods are installed on the wrapper class the first time an instance asks for a policy,
and check the instance's policy, so classes and instances without one pay nothing.
"""

from __future__ import annotations

from .layout import Size
from .registry import ops, register_kernel
from .tensor import Tensor

_POLICIES = ("strides", "sizes")
_ATTR = "_sk_sizes_strides_policy"


def check_policy(policy):
    """Raises ValueError for a policy other than None, "strides", "sizes" (PyTorch's text)."""
    if policy is not None and policy not in _POLICIES:
        raise ValueError(f"Unknown sizes_strides_policy: {policy}; expected 'strides' or "
                         "'sizes'")


def apply_policy(t: Tensor, policy):
    """Give the wrapper ``t`` the policy (``None`` leaves it as it is)."""
    if policy is None:
        return
    cls = type(t)
    if not cls.__dict__.get("_sk_policy_methods"):
        _install(cls)
    try:
        object.__setattr__(t, _ATTR, policy)
    except AttributeError:
        raise TypeError(f"{cls.__name__} defines __slots__ without __dict__: it cannot carry "
                        "a dispatch_sizes_strides_policy") from None


def _ask(t, op, level):
    policy = getattr(t, _ATTR, None)
    if policy is None or (level == "sizes" and policy != "sizes"):
        return None, False
    return op(t), True


def _install(cls):
    base_size, base_stride = cls.size, cls.stride
    base_dim, base_numel = cls.dim, cls.numel
    base_offset, base_contig = cls.storage_offset, cls.is_contiguous

    def size(self, dim=None):
        if dim is not None and getattr(self, _ATTR, None) == "sizes":
            self.dim()      # PyTorch asks for the rank first, to wrap ``dim``
        got, asked = _ask(self, ops.sym_size.default, "sizes")
        if not asked or got is None:
            return base_size(self, dim)
        got = Size(got)
        return got if dim is None else got[dim]

    def stride(self, dim=None):
        got, asked = _ask(self, ops.sym_stride.default, "strides")
        if not asked or got is None:
            return base_stride(self, dim)
        got = tuple(got)
        return got if dim is None else got[dim]

    def dim(self):
        got, asked = _ask(self, ops.dim.default, "sizes")
        if not asked:
            return base_dim(self)
        if got is None or not isinstance(got, int):
            raise RuntimeError(f"dim returned invalid type {type(got).__name__}, expected int")
        return got

    def numel(self):
        got, asked = _ask(self, ops.sym_numel.default, "sizes")
        return base_numel(self) if not asked or got is None else got

    def storage_offset(self):
        got, asked = _ask(self, ops.sym_storage_offset.default, "sizes")
        return base_offset(self) if not asked or got is None else got

    def is_contiguous(self, memory_format=None):
        if memory_format is not None:
            return base_contig(self, memory_format)
        got, asked = _ask(self, ops.is_contiguous.default, "strides")
        return base_contig(self) if not asked or got is None else bool(got)

    cls.size, cls.stride, cls.dim, cls.ndimension = size, stride, dim, dim
    cls.numel, cls.storage_offset, cls.is_contiguous = numel, storage_offset, is_contiguous
    cls.shape = property(lambda self: size(self))
    cls.ndim = property(lambda self: dim(self))
    cls._sk_policy_methods = True


# -- kernels: the tensor's own metadata (the default answer) ----------------------------------
for _device in ("cpu", "meta"):
    register_kernel(ops.sym_size.default, _device)(lambda self: list(self._layout.sizes))
    register_kernel(ops.sym_stride.default, _device)(lambda self: list(self._layout.strides))
    register_kernel(ops.dim.default, _device)(lambda self: len(self._layout.sizes))
    register_kernel(ops.sym_numel.default, _device)(lambda self: self._layout.numel())
    register_kernel(ops.sym_storage_offset.default, _device)(lambda self: self._layout.offset)
    register_kernel(ops.is_contiguous.default, _device)(
        lambda self: self._layout.is_contiguous())
