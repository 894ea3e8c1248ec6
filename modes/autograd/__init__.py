"""The autograd mode: reverse-mode differentiation on a tape (Paszke et al., "Automatic
differentiation in PyTorch"), built on subclass_kit's public extension API.

``sk.autograd`` is this package. ``install()`` puts the autograd layer (``layer.py``) above
modes and subclass handlers (Note [Autograd layer] in the core's registry.py); the core calls
it when a tensor first requires grad. ``formulas`` is the derivative table's protocol,
``derivatives/`` the table itself, ``graph`` the nodes and saved tensors, ``engine`` the
backward pass, ``function`` custom ``Function``s, ``gradcheck`` finite-difference checks.

PyTorch's import paths work: ``import subclass_kit.autograd``, ``from subclass_kit.autograd
import Function``, ``from subclass_kit.autograd.graph import saved_tensors_hooks`` give this
package and its modules (the core's ``_module_aliases``).
"""

from __future__ import annotations

import subclass_kit as sk

from . import formulas as formulas
from .anomaly_mode import detect_anomaly as detect_anomaly
from .anomaly_mode import set_detect_anomaly as set_detect_anomaly
from . import functional as functional
from . import graph as graph
from .engine import backward as backward
from .engine import grad as grad
from .engine import inputs_tuple, run_backward
from .function import Function as Function
from .function import FunctionCtx as FunctionCtx
from .gradcheck import gradcheck as gradcheck
from .gradcheck import gradgradcheck as gradgradcheck
from .graph import RemovableHandle, grad_accumulator

# torch.autograd's own spellings of the grad-mode switches (``torch.autograd.no_grad``,
# ``torch.autograd.grad_mode.no_grad``): the core's, under this package too
from . import grad_mode as grad_mode
from .grad_mode import enable_grad as enable_grad
from .grad_mode import enforce_grad_layout_policy as enforce_grad_layout_policy
from .grad_mode import set_multithreading_enabled as set_multithreading_enabled
from .variable import Variable as Variable
from .grad_mode import inference_mode as inference_mode
from .grad_mode import no_grad as no_grad
from .grad_mode import set_grad_enabled as set_grad_enabled

_LAYER = None


def install() -> None:
    """Install the autograd layer (once) and load the derivative table."""
    global _LAYER
    if _LAYER is None:
        from . import derivatives  # noqa: F401  (registers every formula)
        from .layer import AutogradLayer
        _LAYER = AutogradLayer()
        sk.set_autograd_layer(_LAYER)


def _tensor_backward(t, gradient, retain_graph, create_graph, inputs):
    if gradient is not None:
        gradient = (gradient,)
    if inputs is not None:
        inputs = inputs_tuple(inputs, "backward")
    # the engine itself: Tensor.backward already took part in the function level
    run_backward((t,), gradient, retain_graph, create_graph, inputs, accumulate=True)


def retain_grad(t) -> None:
    if not t.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if t.is_leaf or t.__dict__.get("_retains_grad"):
        return
    fn = t.grad_fn
    fn._own("_retain", {})[t._output_nr] = t
    t.__dict__["_retains_grad"] = True


def register_hook(t, hook):
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = t.grad_fn
    node = fn if fn is not None else grad_accumulator(t)
    hooks = node._own("_tensor_pre_hooks", {}).setdefault(t._output_nr if fn is not None else 0, [])
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


def register_post_accumulate_grad_hook(t, hook):
    if not t.is_leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    acc = grad_accumulator(t)
    hooks = acc._own("_post_hooks", [])
    hooks.append(hook)
    return RemovableHandle(hooks, hook)
