"""Admission checks for in-place ops on views and leaves (PyTorch's ``check_inplace`` and
``handle_view_on_rebase``; SEMANTICS.md §3.3-3.4). They run before the kernel, so a refused
op leaves data and version counters untouched.

The checks need no graph: only ``requires_grad``, grad mode and each view's ``CreationMeta``
(recorded at view creation), so they hold with or without the autograd mode.
"""

from __future__ import annotations

from ._state import tls
from .registry import ops
from .tensor import CreationMeta, Tensor

__all__ = ["check_inplace", "check_inplace_call", "check_inplace_tensor", "view_rebase_message",
           "forward_name", "any_requires_grad", "check_set_data"]


def forward_name(op_name: str) -> str:
    """``split_with_sizes`` -> ``SplitWithSizes`` (the node name autograd errors print)."""
    return "".join(part[:1].upper() + part[1:] for part in op_name.split("_") if part)


def _mode_suffix(block: str) -> str:
    return (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
            "clarify your code by moving both the view and the inplace either both inside the "
            f"{block} block (if you don't want the inplace to be tracked) or both outside (if "
            "you want the inplace to be tracked).")


_SUFFIX = {
    CreationMeta.MULTI_OUTPUT_NODE:
        " This view is the output of a function that returns multiple views. Such functions do "
        "not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one.",
    CreationMeta.IN_CUSTOM_FUNCTION:
        " This view was created inside a custom Function (or because an input was returned "
        "as-is) and the autograd logic to handle view+inplace would override the custom backward "
        "associated with the custom Function, leading to incorrect gradients. This behavior is "
        "forbidden. You can fix this by cloning the output of the custom Function.",
    CreationMeta.NO_GRAD_MODE: _mode_suffix("no_grad"),
    CreationMeta.INFERENCE_MODE: _mode_suffix("inference_mode"),
}


def view_rebase_message(view, direct: bool) -> str:
    """The text of the view+in-place error for ``view`` (SEMANTICS.md §3.4): a head by how the
    view was made (a view without grad_fn reads as made in no_grad mode, whatever its
    CreationMeta), then the suffix of its CreationMeta."""
    meta = view._creation_meta
    what = "is being" if direct else "its base or another view of its base has been"
    name, index = view._view_op or ("View", 0)
    has_grad_fn = view._view_grad
    if meta in (CreationMeta.NO_GRAD_MODE, CreationMeta.INFERENCE_MODE) or not has_grad_fn:
        head = (f"Output {index} of {name} is a view of a view which was created in"
                if has_grad_fn else "A view was created in")
        if meta == CreationMeta.INFERENCE_MODE:
            head += f" inference mode and {what} modified inplace in normal mode."
        else:
            head += f" no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        head = f"Output {index} of {name} is a view and {what} modified inplace."
    return head + _SUFFIX.get(meta, "")


def any_requires_grad(args, kwargs) -> bool:
    """Whether a tensor among ``args`` (lists and tuples looked into) or ``kwargs`` requires
    grad: the condition of autograd's in-place and out= refusals."""
    for a in args:
        if isinstance(a, (list, tuple)):
            if any(getattr(x, "requires_grad", False) for x in a):
                return True
        elif getattr(a, "requires_grad", False):
            return True
    if kwargs:
        for a in kwargs.values():
            if getattr(a, "requires_grad", False):
                return True
    return False


def check_inplace(op, mutated, args, kwargs):
    """Refuse an in-place or out= op as PyTorch's autograd does; no-op unless grad mode is on
    and some tensor argument requires grad."""
    if not tls.grad_enabled or not any_requires_grad(args, kwargs):
        return
    if op.is_out:
        raise RuntimeError(f"{op.schema.base_name}(): functions with out=... arguments don't "
                           "support automatic differentiation, but one of the arguments requires "
                           "grad.")
    if op is ops.resize_.default or op is ops.resize_as_.default:
        # autograd's resize_ refuses a tensor requiring grad instead of the in-place checks
        # (the kernel repeats the check for no_grad, where these checks do not run)
        raise RuntimeError("cannot resize variables that require grad")
    for t in mutated:
        check_inplace_tensor(t)


def check_inplace_call(op, args, kwargs) -> None:
    """The admission checks of one call of a mutating op (in-place or out=), where PyTorch's
    VariableType runs them: in the autograd layer, above modes and subclass handlers, which
    see nothing of a refused call. No-op with grad mode off or nothing requiring grad. The
    core repeats them below only when no autograd layer took the call (``dispatch``)."""
    if not op._mutated or not tls.grad_enabled:
        return
    mutated = op._mutated_tensors(args, kwargs)
    for t in mutated:
        if not isinstance(t, Tensor):
            return          # out=3.0: the TypeError below comes first, as PyTorch's parser's
    check_inplace(op, mutated, args, kwargs)


def check_inplace_tensor(t) -> None:
    """PyTorch's ``check_inplace`` for one tensor about to be modified in place with grad mode
    on (also what a custom Function's ``mark_dirty`` must pass): RuntimeError for a view with
    a non-default ``CreationMeta``, a view of a leaf requiring grad, a leaf requiring grad."""
    base = t._base
    if base is not None:
        if t._creation_meta != CreationMeta.DEFAULT:
            raise RuntimeError(view_rebase_message(t, direct=True))
        if base.requires_grad and base._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
    elif t.requires_grad and t._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def check_set_data(t, new) -> None:
    """PyTorch's checks before ``t.data = new``: TypeError for a non-tensor ``new``,
    RuntimeError for a non-floating ``new`` when ``t`` requires grad."""
    if not isinstance(new, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(new).__name__}")
    if t.requires_grad and not new.dtype.is_floating_point:
        raise RuntimeError("data set to a tensor that requires gradients must be floating point "
                           "or complex dtype")
