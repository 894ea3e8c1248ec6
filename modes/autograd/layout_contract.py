"""The gradient layout contract (PyTorch's ``AccumulateGrad`` rules): the ``.grad`` of a dense
leaf has the leaf's strides, of any other leaf is contiguous; ``AccumulateGrad`` copies a
gradient that breaks it (``clone_obey_contract``) and warns once when an accumulated one does.
``enforce_grad_layout_policy(False)`` relaxes the rule for a gradient ``AccumulateGrad`` may
steal (kept as it is, no copy) and silences the warning, as PyTorch 2.13's does; a gradient it
must copy still gets the contract's layout. The switch is per thread.
"""

from __future__ import annotations

import threading
import warnings

import subclass_kit as sk

__all__ = ["enforce_grad_layout_policy", "obeys_layout_contract", "clone_obey_contract",
           "check_result"]


class _Policy(threading.local):
    enforced = True


_policy = _Policy()


class enforce_grad_layout_policy(sk.DecoratorContextManager):
    """Enforce the layout contract (``enable=True``, the default) or relax it, at once (a
    plain call works) and, as a context manager, until exit; as a decorator, for each call
    only (PyTorch's ``torch.autograd.enforce_grad_layout_policy``)."""

    def __init__(self, enable: bool = True) -> None:
        self.prev = _policy.enforced
        _policy.enforced = enable
        self.mode = enable

    def __call__(self, fn):
        _policy.enforced = self.prev
        return super().__call__(fn)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _policy.enforced = self.prev

    def clone(self):
        return self.__class__(self.mode)


_warned_layout: list = []


def check_result(grad, var) -> None:
    """PyTorch's ``CHECK_RESULT`` after an accumulation: warn (once per process) when the
    accumulated gradient does not obey the layout contract (an assigned one may not), unless
    the policy is relaxed."""
    if _warned_layout or not _policy.enforced or tuple(grad.stride()) == tuple(var.stride()) \
            or obeys_layout_contract(grad, var):
        return
    _warned_layout.append(True)
    warnings.warn("grad and param do not obey the gradient layout contract. This is not an "
                  "error, but may impair performance.\n"
                  f"grad.sizes() = {list(grad.shape)}, strides() = {list(grad.stride())}\n"
                  f"param.sizes() = {list(var.shape)}, strides() = {list(var.stride())}",
                  UserWarning, stacklevel=2)


def obeys_layout_contract(g, var, steal: bool = False) -> bool:
    """PyTorch's ``obeys_layout_contract``: the gradient of a dense leaf has the leaf's strides
    (on dims of size above 1; no zero stride on the others), of any other leaf is contiguous.
    ``steal``: asked for a gradient that may be kept as it is, which the relaxed policy
    allows whatever its layout."""
    if steal and not _policy.enforced:
        return True
    if not _dense(var):
        return g.is_contiguous()
    for n, gs, vs in zip(g.shape, g.stride(), var.stride()):
        if (gs != vs) if n != 1 else (gs == 0 or vs == 0):
            return False
    return True


def clone_obey_contract(g, var):
    """PyTorch's ``clone_obey_contract``: a copy of ``g`` with the leaf's strides (a dense
    leaf: ``new_empty_strided`` + ``copy_``), else contiguous (``clone``)."""
    if _dense(var):
        out = sk.ops.new_empty_strided.default(g, list(var.shape), list(var.stride()))
        return sk.ops.copy_.default(out, g)
    return sk.ops.clone.default(g, memory_format=sk.contiguous_format)


def _dense(t) -> bool:
    pairs = sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1)
    expected = 1
    for st, sz in pairs:
        if st != expected:
            return False
        expected *= sz
    return True
