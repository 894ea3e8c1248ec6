"""Hooks on saving tensors for backward (PyTorch's ``torch.autograd.graph``):
``saved_tensors_hooks`` (pack and unpack), ``save_on_cpu``, ``disable_saved_tensors_hooks`` and
``top_saved_tensors_hooks``. ``SavedTensor`` (``graph.py``) reads ``HookState`` when it saves."""

from __future__ import annotations

import subclass_kit as sk

__all__ = ["HookState", "top_saved_tensors_hooks", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks"]


class HookState:
    """The active ``saved_tensors_hooks`` (innermost last); the message of the innermost
    ``disable_saved_tensors_hooks``, None when hooks are allowed."""
    stack: list = []
    disabled: str | None = None


def top_saved_tensors_hooks():
    """The innermost active ``(pack, unpack)`` pair of ``saved_tensors_hooks``, or None (what
    PyTorch's ``torch._C._autograd._top_saved_tensors_default_hooks`` answers): lets a hook
    that wraps saving (checkpointing, ``modes.MemTracker``) still call the one outside it."""
    return HookState.stack[-1] if HookState.stack else None


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it are stored as ``pack(tensor)`` and
    given back as ``unpack(packed)`` (PyTorch's ``torch.autograd.graph.saved_tensors_hooks``)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if HookState.disabled is not None:
            raise RuntimeError(HookState.disabled)
        HookState.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        HookState.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """``saved_tensors_hooks`` keeping each saved tensor as a CPU copy and moving it back to its
    device when the backward unpacks it (PyTorch's ``torch.autograd.graph.save_on_cpu``;
    ``pin_memory`` is accepted, as tensors here have no pinned memory)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            packed = sk.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="cpu")
            packed.copy_(t)
            return t.device, packed

        def unpack(packed):
            device, t = packed
            return t.to(device)
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager under which entering ``saved_tensors_hooks`` raises RuntimeError with
    ``error_message`` (PyTorch's ``torch.autograd.graph.disable_saved_tensors_hooks``, for
    features that cannot work with them). Raises it as well when hooks are active already."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        if HookState.stack:
            raise RuntimeError(self.error_message)
        self._previous = HookState.disabled
        HookState.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        HookState.disabled = self._previous
        return False
