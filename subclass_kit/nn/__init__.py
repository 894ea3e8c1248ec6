"""``sk.nn`` (PyTorch's ``torch.nn``): ``Parameter``, ``Module`` and its containers, the layers a
transformer or an MLP uses, ``sk.nn.init``, ``sk.nn.utils`` and ``sk.nn.functional``.

Everything but ``functional`` is imported on first access (PEP 562), so ``import subclass_kit``
does not pay for the module system.
"""

import importlib

from . import functional as functional

_WHERE = {
    "Parameter": "parameter", "Buffer": "parameter", "Module": "module",
    "Sequential": "containers", "ModuleList": "containers", "ModuleDict": "containers",
    **{name: "layers" for name in ("Identity", "Linear", "Embedding", "LayerNorm", "RMSNorm",
                                   "Dropout", "GELU", "ReLU", "SiLU", "Tanh", "Sigmoid",
                                   "Softmax", "LogSoftmax")},
}
_SUBMODULES = ("init", "utils", "parameter", "module", "containers", "layers", "hooks")

__all__ = ["functional", *_SUBMODULES[:2], *_WHERE]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'subclass_kit.nn' has no attribute '{name}'")
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
