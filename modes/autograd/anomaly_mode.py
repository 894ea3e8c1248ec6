"""Anomaly detection (PyTorch's ``torch.autograd.detect_anomaly`` / ``set_detect_anomaly``).

While it is on (the core's process-wide switch, ``sk.set_anomaly_enabled``):

- every node made records where: ``node.metadata["traceback_"]``, the forward call's stack
  as ``traceback.format_stack`` lines (the trailing frames inside subclass_kit cut, so the
  stack ends at the user's call, as PyTorch's C++ ops leave it), and, for a node made while
  another node's backward runs (``create_graph``), that node as ``metadata["parent_"]``;
- when a node's backward raises, a UserWarning "Error detected in MulBackward0. Traceback of
  forward call that caused the error: ..." shows that stack (and those of its parents) before
  the error propagates, and the version-check error's hint points to it;
- with ``check_nan`` (the default), a node whose backward returns a gradient containing NaN
  raises RuntimeError "Function 'SqrtBackward0' returned nan values in its 0th output.".

It costs a traceback per recorded op and a NaN test per gradient: for debugging only, as
PyTorch warns when ``detect_anomaly`` is made.
"""

from __future__ import annotations

import functools
import os
import traceback
import warnings

import subclass_kit as sk

__all__ = ["detect_anomaly", "set_detect_anomaly"]


class detect_anomaly:
    """Context manager turning anomaly detection on, with ``check_nan``, for its body; the
    previous switches come back on exit. Warns, as PyTorch does, that the mode is slow. (As
    in PyTorch 2.13 it is no decorator.)"""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = sk.is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = sk.is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        sk.set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        sk.set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Set anomaly detection to ``mode`` at once (a plain call works); used as a context
    manager, the previous switches come back on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = sk.is_anomaly_enabled()
        self.prev_check_nan = sk.is_anomaly_check_nan_enabled()
        sk.set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        sk.set_anomaly_enabled(self.prev, self.prev_check_nan)


# -- what the nodes and the engine call while the mode is on -----------------------------------
_LIBRARY = tuple({os.path.realpath(os.path.dirname(sk.__file__)) + os.sep,
                  os.path.realpath(os.path.dirname(os.path.dirname(__file__))) + os.sep})


@functools.lru_cache(maxsize=512)
def _in_library(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_LIBRARY)


def store_stack(node) -> None:
    """Record on ``node`` the forward call that made it, and the node whose backward was
    running then (PyTorch's ``store_stack`` / ``assign_parent``)."""
    frames = traceback.extract_stack()
    while frames and _in_library(frames[-1].filename):
        frames.pop()
    meta = node.metadata
    meta["traceback_"] = traceback.format_list(frames)
    from .engine import current_node        # (the engine imports this module)
    parent = current_node()
    if parent is not None:
        meta["parent_"] = parent


def warn_stack(node) -> None:
    """The UserWarning PyTorch's engine gives for a node whose backward failed: where it was
    made, then where each node that induced it was made."""
    name, induced = node.name(), False
    while node is not None:
        meta = node.__dict__.get("metadata") or {}
        stack = meta.get("traceback_")
        if stack is None:
            warnings.warn(f"Error detected in {name}. No forward pass information available. "
                          "Enable detect anomaly during forward pass for more information.",
                          stacklevel=2)
            return
        if induced:
            warnings.warn(f"\n\nPrevious calculation was induced by {name}. Traceback of forward "
                          "call that induced the previous calculation:\n" + "".join(stack),
                          stacklevel=2)
        else:
            warnings.warn(f"Error detected in {name}. Traceback of forward call that caused "
                          "the error:\n" + "".join(stack), stacklevel=2)
        node, induced = meta.get("parent_"), True
        name = node.name() if node is not None else name


def version_hint() -> str:
    """The hint ending the saved-tensor version error, PyTorch's texts: with the mode on, the
    warning showing the stack comes first."""
    if sk.is_anomaly_enabled():
        return ("the backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later. "
                "Good luck!")
    return ("enable anomaly detection to find the operation that failed to compute its "
            "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def check_nan(node, grads) -> None:
    """RuntimeError when a gradient ``node`` returned contains NaN (PyTorch's engine check,
    with grad mode off: its ``isnan`` ops are seen by modes as PyTorch's are)."""
    with sk.no_grad():
        for i, g in enumerate(grads):
            if g is not None and sk.isnan(g).any().item():
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                                   "output.")
