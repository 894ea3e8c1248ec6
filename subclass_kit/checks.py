"""``sk._check`` and its siblings: PyTorch's Python ``torch._check*`` helpers (the Python
spellings of ``TORCH_CHECK``, ``TORCH_CHECK_INDEX`` ...), for handlers and kernels ported from
PyTorch code.

``cond`` must be a Python ``bool`` (TypeError otherwise: a tensor condition names
``_check_tensor_all``); when it is False the error of the helper's class is raised with
``str(message())``, or PyTorch's default text when ``message`` is None. ``message`` is called
only on failure, and must be callable (TypeError)."""

from __future__ import annotations

import builtins
import warnings

from .tensor import Tensor

__all__ = ["_check", "_check_with", "_check_index", "_check_value", "_check_type",
           "_check_not_implemented", "_check_is_size"]

_DEFAULT_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be "
                    "improved? If so, please report an enhancement request to PyTorch.)")


def _check_with(error_type, cond, message=None):
    """Raise ``error_type`` (an Exception class, not a Warning) unless ``cond`` is True."""
    if not isinstance(cond, builtins.bool):
        if isinstance(cond, Tensor):
            raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, use "
                            "torch._check_tensor_all() to assert that all elements are true.")
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if not issubclass(error_type, Exception) or issubclass(error_type, Warning):
        raise AssertionError(
            f"error_type must be a subclass of Exception but not Warning, got {error_type}")
    if message is None:
        text = _DEFAULT_MESSAGE
    else:
        if not callable(message):
            raise TypeError("message must be a callable")
        text = str(message())
    raise error_type(text)


def _check(cond, message=None):
    """RuntimeError unless ``cond`` (``TORCH_CHECK``)."""
    _check_with(RuntimeError, cond, message)


def _check_index(cond, message=None):
    """IndexError unless ``cond`` (``TORCH_CHECK_INDEX``)."""
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    """ValueError unless ``cond`` (``TORCH_CHECK_VALUE``)."""
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    """TypeError unless ``cond`` (``TORCH_CHECK_TYPE``)."""
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    """NotImplementedError unless ``cond`` (``TORCH_CHECK_NOT_IMPLEMENTED``)."""
    _check_with(NotImplementedError, cond, message)


def _check_is_size(i, message=None, *, max=None):
    """RuntimeError unless ``0 <= i`` (and ``i <= max`` when given). Deprecated in PyTorch:
    every call warns with its FutureWarning."""
    warnings.warn("_check_is_size will be removed in a future PyTorch release along with "
                  "guard_size_oblivious.     Use _check(i >= 0) instead.", FutureWarning,
                  stacklevel=2)
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)
