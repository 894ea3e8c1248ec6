"""Shape and dim helpers that tensor subclasses borrow from PyTorch's ``torch._prims_common``
(``subclass-kit port`` maps ``torch._prims_common`` here, so ``import torch._prims_common as
utils`` becomes ``import subclass_kit.utils.prims_common as utils``).

Only the helpers that are exact without symbolic shapes are here; each gives the same values
and raises the same exception classes with the same texts as PyTorch 2.13's function of the
same name (``tests/test_prims_common_oracle.py``). Concrete ints only: PyTorch's SymInt
branches have nothing to do here.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

__all__ = ["infer_size", "canonicalize_dim", "canonicalize_dims", "make_contiguous_strides_for",
           "make_channels_last_strides_for", "is_contiguous", "validate_shape",
           "validate_dim_length", "check"]

# PyTorch's ``torch._check(cond)`` text when no message is given.
_CHECK_FAILED = ("Expected cond to be True, but got False. (Could this error message be "
                 "improved? If so, please report an enhancement request to PyTorch.)")


def infer_size(shape, numel: int) -> tuple:
    """``shape`` as a tuple with its one ``-1`` replaced by what makes ``numel`` elements.

    Raises RuntimeError with PyTorch's texts: "only one dimension can be inferred", "invalid
    shape dimension -2. If this was symbolic, ..." for another negative size, "shape '[3]' is
    invalid for input of size 4" and "cannot reshape tensor of 0 elements into shape [0, -1]
    because ...". (The op-level checks of ``view``/``reshape`` are ATen's, whose negative-size
    text differs; this is the ``_prims_common`` one.)
    """
    dim = None
    newsize = 1
    for i, d in enumerate(shape):
        if d == -1:
            if dim is not None:
                raise RuntimeError("only one dimension can be inferred")
            dim = i
        else:
            if not d >= 0:
                raise RuntimeError(
                    f"invalid shape dimension {d}. If this was symbolic, it was assumed to not "
                    "be -1.If this was meant to be inferred, please explicitly pass in -1.")
            newsize *= d
    if dim is None:
        if numel != newsize:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return tuple(shape)
    if newsize == 0:
        if numel == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                "unspecified dimension size -1 can be any value and is ambiguous")
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    if numel % newsize != 0:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    shape = list(shape)
    shape[dim] = numel // newsize
    return tuple(shape)


def canonicalize_dim(rank: int, idx: int, wrap_scalar: bool = True) -> int:
    """``idx`` as a dim in ``[0, rank)`` (negative dims count from the end); a 0-d tensor takes
    dims 0 and -1 when ``wrap_scalar``. Raises IndexError with PyTorch's texts: "Dimension out
    of range (expected to be in range of [-3, 2], but got 3)", "Dimension specified as 0 but
    tensor has no dimensions" (``wrap_scalar=False``), "Rank cannot be negative but got -1"."""
    if rank < 0:
        raise IndexError(f"Rank cannot be negative but got {rank}")
    if rank == 0:
        if not wrap_scalar:
            raise IndexError(f"Dimension specified as {idx} but tensor has no dimensions")
        rank = 1
    if 0 <= idx < rank:
        return idx
    wrapped = idx + rank if idx < 0 else idx
    if wrapped < 0 or wrapped >= rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {idx})")
    return wrapped


def canonicalize_dims(rank: int, indices, wrap_scalar: bool = True):
    """:func:`canonicalize_dim` of an int, or a tuple of it over a sequence of dims."""
    if isinstance(indices, int):
        return canonicalize_dim(rank, indices, wrap_scalar)
    return tuple(canonicalize_dim(rank, x, wrap_scalar) for x in indices)


def validate_dim_length(length: int) -> None:
    """Raises RuntimeError (PyTorch's bare ``torch._check`` text) for a negative length."""
    if not length >= 0:
        raise RuntimeError(_CHECK_FAILED)


def validate_shape(shape) -> None:
    """Raises AssertionError "shape must be a Sequence, got <class 'int'>" for a non-sequence
    and :func:`validate_dim_length`'s RuntimeError for a negative size, as PyTorch's."""
    if not isinstance(shape, Sequence):
        raise AssertionError(f"shape must be a Sequence, got {type(shape)}")
    for length in shape:
        validate_dim_length(length)


def make_contiguous_strides_for(shape, row_major: bool = True) -> tuple:
    """Row-major strides of ``shape`` (a size 0 or 1 counts as 1: (2, 0, 3) -> (3, 3, 1)); with
    ``row_major=False`` the last two dims are column-major, as for a batch of Fortran-order
    matrices ((2, 3, 4) -> (12, 1, 3)). Raises as :func:`validate_shape`."""
    validate_shape(shape)
    if not shape:
        return ()
    multiplier, strides = 1, []
    for length in reversed(shape):
        strides.append(multiplier)
        multiplier *= max(length, 1)
    result = tuple(reversed(strides))
    if row_major or len(shape) < 2:
        return result
    return result[:-2] + (1, max(shape[-2], 1))


def make_channels_last_strides_for(shape) -> tuple:
    """Channels-last strides of a 3-, 4- or 5-d ``(N, C, *spatial)`` shape: C innermost, then
    the spatial dims from last to first, then N; sizes are not clamped to 1 ((2, 0, 4, 5) ->
    (0, 1, 0, 0)), as PyTorch. Raises RuntimeError "no channels last format strides exist in 2
    dimensions" for other ranks."""
    ndim = len(shape) if isinstance(shape, Sequence) else 1
    if ndim not in (3, 4, 5):
        raise RuntimeError(f"no channels last format strides exist in {ndim} dimensions")
    multiplier, strides = 1, [0] * ndim
    for idx in (1, *range(ndim - 1, 1, -1), 0):
        strides[idx] = multiplier
        multiplier *= shape[idx]
    return tuple(strides)


def is_contiguous(a) -> bool:
    """Whether tensor ``a`` is row-major contiguous, from its ``shape`` and ``stride()`` only
    (no op is dispatched): fewer than two elements, or each dim of size other than 1 has the
    stride of the dims after it, as PyTorch's."""
    if a.numel() < 2:
        return True
    expected = expected_max = 1
    for size, stride in reversed(tuple(zip(a.shape, a.stride()))):
        if size == 1:
            continue
        if stride != expected and stride != expected_max:
            return False
        expected_max *= max(size, 1)
        expected *= size
    return True


def check(b: bool, s, exc_type: type = RuntimeError) -> None:
    """Raise ``exc_type(s())`` unless ``b``. Warns FutureWarning on every call: PyTorch has
    deprecated its ``check`` in favour of ``torch._check*``."""
    warnings.warn("`subclass_kit.utils.prims_common.check` is deprecated, as PyTorch's "
                  "`torch._prims_common.check`: raise the error yourself",
                  FutureWarning, stacklevel=2)
    if not b:
        raise exc_type(s())
