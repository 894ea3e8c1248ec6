"""Dtype and value predicates of a tensor: ``sk.is_complex``, ``sk.is_floating_point``,
``sk.is_signed``, ``sk.is_nonzero`` and the methods ``Tensor.is_complex()``,
``Tensor.is_signed()``, ``Tensor.is_nonzero()`` (``Tensor.is_floating_point()`` lives on the
class).

Each follows the PyTorch 2.13 function of the same name. The dtype predicates read metadata only,
so modes see no op (as PyTorch's); ``is_nonzero`` reads the element through ``item()``, so modes
and wrapper subclasses see ``_local_scalar_dense``, as in PyTorch.
"""

from __future__ import annotations

from .._argcheck import check_tensor
from ..function import public_api
from ._register import method

__all__ = ["is_complex", "is_floating_point", "is_signed", "is_nonzero"]


@public_api
def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex: always False, since subclass_kit has no complex
    dtypes (``torch.is_complex``). Raises TypeError for a non-tensor, with PyTorch's parser
    text."""
    check_tensor("is_complex", "input", input, 1)
    return False


@public_api
def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating dtype (``torch.is_floating_point``). Raises
    TypeError for a non-tensor, with PyTorch's parser text."""
    check_tensor("is_floating_point", "input", input, 1)
    return input._dtype.is_floating_point


@public_api
def is_signed(input) -> bool:
    """Whether ``input``'s dtype is signed: floating dtypes and int8..int64, not bool or uint8
    (``torch.is_signed``). Raises TypeError for a non-tensor, with PyTorch's parser text."""
    check_tensor("is_signed", "input", input, 1)
    return input._dtype.is_signed


@public_api
def is_nonzero(input) -> bool:
    """Whether the single element of ``input`` is not zero (NaN counts as nonzero), as
    ``torch.is_nonzero``. Raises RuntimeError "Boolean value of Tensor with no values is
    ambiguous" for an empty tensor and "... with more than one value is ambiguous" for several
    elements (PyTorch's texts, checked before any op); TypeError for a non-tensor."""
    check_tensor("is_nonzero", "input", input, 1)
    n = input._layout.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@method("is_complex")
def _is_complex_method(self) -> bool:
    """``Tensor.is_complex()``: always False (no complex dtypes), as PyTorch's for real dtypes."""
    return False


@method("is_signed")
def _is_signed_method(self) -> bool:
    """``Tensor.is_signed()``: ``sk.is_signed(self)``."""
    return self._dtype.is_signed


@method("is_nonzero")
def _is_nonzero_method(self) -> bool:
    """``Tensor.is_nonzero()``: ``sk.is_nonzero(self)``, same errors."""
    return is_nonzero.__wrapped_impl__(self)
