"""Python protocol methods that are not one op: ``format(t, spec)`` and ``x in t``.

Both are public API methods (``__tensor_function__`` sees them, as PyTorch's
``has_torch_function_unary`` checks do) built from ops, so dispatch modes see the ops PyTorch's
see: ``detach`` + ``_local_scalar_dense`` for formatting, ``eq`` + ``any`` +
``_local_scalar_dense`` for ``in``.
"""

from __future__ import annotations

from numbers import Number

from ..tensor import Tensor
from ._register import method


@method("__format__")
def _format(self, format_spec):
    """``f"{t:.2f}"``: a 0-d plain Tensor (not meta) formats its value,
    ``format(t.detach().item(), spec)``, so ``f"{loss:.4f}"`` prints ``0.1235`` and ``f"{t}"``
    prints the number; any other tensor (subclasses included) uses ``object.__format__``:
    ``str(t)`` for an empty spec, TypeError "unsupported format string passed to
    Tensor.__format__" otherwise (``torch.Tensor.__format__``)."""
    if not self._layout.sizes and type(self) is Tensor and not self.is_meta:
        return self.detach().item().__format__(format_spec)
    return object.__format__(self, format_spec)


@method("__contains__")
def _contains(self, element):
    """``element in t``: ``bool((element == t).any().item())`` for a Tensor or a number
    (broadcasting, so ``t2 in t`` asks whether any position matches). RuntimeError "Tensor.
    __contains__ only supports Tensor or scalar, but you passed in a <class 'str'>." for anything
    else (``torch.Tensor.__contains__``)."""
    if isinstance(element, (Tensor, Number)):
        # ``self == element``: ``element == self`` would let a numpy scalar compare first
        return bool((self == element).any().item())
    raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in "
                       f"a {type(element)}.")
