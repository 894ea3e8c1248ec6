"""Module containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (PyTorch's, same names,
indexing, errors and ``repr``; children are named ``"0"``, ``"1"``, ... or by key)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import islice

from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict"]


def _index(idx, size: int) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


class _Numbered(Module):
    """Children named ``"0"``, ``"1"``, ...: length, iteration, ``append`` and deletion with
    PyTorch's renumbering (shared by ``Sequential`` and ``ModuleList``)."""

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, list(self._modules)[_index(idx, len(self))])
        self.__dict__["_modules"] = OrderedDict(
            (str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module):
        self.add_module(str(len(self)), module)
        return self


class Sequential(_Numbered):
    """Runs its modules in order, each on the previous one's output:
    ``Sequential(m0, m1, ...)`` or ``Sequential(OrderedDict(name=module, ...))``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self))
        return next(islice(iter(self._modules.values()), i, None))

    def __setitem__(self, idx, module) -> None:
        key = list(self._modules)[_index(idx, len(self))]
        setattr(self, key, module)


    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(_Numbered):
    """A list of modules, registered as children ``"0"``, ``"1"``, ...; no ``forward``."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module) -> None:
        setattr(self, str(_index(idx, len(self))), module)


    def __iadd__(self, modules) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other) -> "ModuleList":
        return ModuleList(list(self) + list(other))

    def extend(self, modules) -> "ModuleList":
        if isinstance(modules, (Module, str)) or not hasattr(modules, "__iter__"):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self.__dict__["_modules"] = OrderedDict()
        for m in items:
            self.append(m)

    def __repr__(self) -> str:
        # PyTorch 2.x folds runs of identical children: "(0-2): 3 x Linear(...)".
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            label = f"({start})" if i - start == 1 else f"({start}-{i - 1}): {i - start} x"
            sep = ": " if i - start == 1 else " "
            lines.append(label + sep + _addindent(reprs[start], 2))
            start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules keyed by name (children named by their keys)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for j, item in enumerate(items):
            if hasattr(modules, "items"):
                key, module = item
            else:
                if len(item) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                     f"{len(item)}; 2 is required")
                key, module = item
            self[key] = module
