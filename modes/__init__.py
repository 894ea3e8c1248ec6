"""Modes built only on subclass_kit's public extension API.

Each name loads its module on first use (PEP 562), so the modes a program does not use cost
nothing: the autograd engine, imported at the first tensor that requires grad, and
``sk.inference_mode`` pull in only their own modules.
"""

import importlib

# public name -> the module defining it
_NAMES = {
    "DebugAssertError": ".debug_assert",
    "DebugAssertMode": ".debug_assert",
    "explain": ".explain",
    "Graph": ".graph",
    "make_graph": ".graph",
    "InferenceMode": ".inference",
    "LoggingMode": ".logging_mode",
    "DynamicOutputShapeError": ".meta_mode",
    "MetaMode": ".meta_mode",
    "infer_shapes": ".meta_mode",
    "OpUsageMode": ".op_usage",
    "FunctionalizeMode": ".functionalization",
    "FunctionalTensorWrapper": ".functionalization",
    "from_functional": ".functionalization",
    "functionalize": ".functionalization",
    "to_functional": ".functionalization",
    "FlopCounterMode": ".flop_counter",
    "register_flop_formula": ".flop_counter",
    "ModuleTracker": ".module_tracker",
    "MemTracker": ".memory_tracker",
    "AutocastMode": ".autocast",
}

__all__ = list(_NAMES)


def __getattr__(name):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
