"""An int8 quantized tensor: float values stored as int8 codes times one scale.

The idea
    Keep a float tensor as ``int_data * scale`` with ``int_data`` in int8 (symmetric,
    per-tensor quantization: ``scale = max|x| / 127``). It costs a quarter of the float32
    memory, and any op can still run on it: ops that only move data around run on the int8
    codes, everything else sees the dequantized floats. This is the shape of PyTorch's
    ``torchao`` ``AffineQuantizedTensor`` / the subclass-zoo ``Int8Tensor``, reduced to one
    scale.

How it works
    ``QuantizedTensor`` is a wrapper subclass presenting dtype float32 and the codes' sizes
    and strides; ``int_data`` (int8) and ``scale`` (a Python float) are its state.
    ``__tensor_dispatch__``:

    - **view ops** (``func.is_view``, except ``view.dtype``) and ``clone``/``detach`` run on
      ``int_data`` and keep the scale: slicing, transposing or splitting a quantized tensor
      is still quantized and still aliases (``sk.return_and_correct_aliasing``);
    - **mutating ops** on a QuantizedTensor (``add_``, ``copy_``, ``fill_``...) dequantize it,
      run the op on floats, and requantize the result into ``int_data`` with the tensor's
      *own* scale (values beyond ``127 * scale`` saturate);
    - **everything else** (``mm``, ``add``, ``softmax``...) "dequantizes in the kernel":
      every QuantizedTensor argument becomes ``int_data.to(float32) * scale`` and the op
      returns plain float tensors.

Tradeoffs
    + 4x smaller storage; views and copies stay int8.
    - Every compute op materialises a float32 copy of each quantized argument (a real int8
      kernel, e.g. an int8 ``mm`` with int32 accumulation, would avoid it: one rule per op).
    - Rounding error up to ``scale / 2`` per element; writes are clamped to the existing
      scale instead of re-choosing it (re-choosing would change every other element).
"""

from __future__ import annotations

import subclass_kit as sk

_STAYS_QUANTIZED = {sk.ops.clone.default, sk.ops.detach.default}


class QuantizedTensor(sk.Tensor):
    """``int_data.to(float32) * scale``, stored as int8 (see the module docstring)."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(int_data: sk.Tensor, scale: float) -> QuantizedTensor:
        if int_data.dtype != sk.int8:
            raise TypeError(f"QuantizedTensor: int_data must be int8, got {int_data.dtype}")
        w = sk.make_wrapper_subclass(QuantizedTensor, int_data.shape, int_data.stride(),
                                     int_data.storage_offset(), dtype=sk.float32,
                                     device=int_data.device)
        w.int_data = int_data
        w.scale = float(scale)
        return w

    @staticmethod
    def quantize(x: sk.Tensor, scale: float | None = None) -> QuantizedTensor:
        """Quantize a float tensor: ``scale`` defaults to ``max|x| / 127`` (1.0 for zeros)."""
        if scale is None:
            peak = x.abs().amax().item() if x.numel() else 0.0
            scale = peak / 127 if peak > 0 else 1.0
        return QuantizedTensor.wrap(_codes(x, scale), scale)

    def dequantize(self) -> sk.Tensor:
        return self.int_data.to(sk.float32) * self.scale

    def __repr__(self):
        return f"QuantizedTensor(scale={self.scale:g}, int_data={self.int_data!r})"

    def __tensor_flatten__(self):
        return ["int_data"], self.scale

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return QuantizedTensor.wrap(inner["int_data"], ctx)

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else None
        keeps_codes = (func.is_view and func is not sk.ops.view.dtype) or \
            func in _STAYS_QUANTIZED or "inplace_view" in func.tags
        if keeps_codes and isinstance(first, cls):
            out = func(first.int_data, *args[1:], **kwargs)
            out = sk.pytree.tree_map_only(sk.Tensor, lambda t: cls.wrap(t, first.scale), out)
            return sk.return_and_correct_aliasing(func, args, kwargs, out)

        def dequantize(t):
            return t.dequantize()

        if not func.mutated_args:
            return func(*sk.pytree.tree_map_only(cls, dequantize, args),
                        **sk.pytree.tree_map_only(cls, dequantize, kwargs))
        # A write: compute in float, then requantize into the mutated codes.
        floats = {}

        def as_float(t):
            if id(t) not in floats:
                floats[id(t)] = t.dequantize()
            return floats[id(t)]

        out = func(*sk.pytree.tree_map_only(cls, as_float, args),
                   **sk.pytree.tree_map_only(cls, as_float, kwargs))
        names = [a.name for a in func.schema.arguments]
        for name in func.mutated_args:
            i = names.index(name)
            target = args[i] if i < len(args) else kwargs.get(name)
            if isinstance(target, cls):
                target.int_data.copy_(_codes(floats[id(target)], target.scale))
        return sk.return_and_correct_aliasing(func, args, kwargs, out)


def _codes(x: sk.Tensor, scale: float) -> sk.Tensor:
    return (x / scale).round().clamp(-127, 127).to(sk.int8)
