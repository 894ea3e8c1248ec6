"""PyTorch's import paths for packages that live in ``modes``: ``subclass_kit.autograd`` is
the autograd mode's package, ``subclass_kit.modes.autograd``, under a second name.

``import torch.autograd``, ``from torch.autograd import Function`` and ``from
torch.autograd.graph import saved_tensors_hooks`` port by renaming ``torch`` only if
``subclass_kit.autograd`` and its submodules can be imported, yet the core must not import
``modes`` while it builds itself (the arrow points from ``modes`` to the core). A finder on
``sys.meta_path`` bridges the two: the first import of an aliased name imports the real
module, and the alias is that same module object (one ``Function`` class, one set of nodes),
never a second copy loaded from the same file.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys

# alias -> real module; a name under an alias maps to the same name under the real module
ALIASES: dict[str, str] = {
    "subclass_kit.autograd": "subclass_kit.modes.autograd",
}


def real_name(fullname: str):
    """The module an aliased ``fullname`` stands for, or None when it is not aliased."""
    if fullname in ALIASES:
        return ALIASES[fullname]
    head, _, tail = fullname.rpartition(".")
    while head:
        if head in ALIASES:
            return f"{ALIASES[head]}.{tail}"
        head, _, last = head.rpartition(".")
        tail = f"{last}.{tail}"
    return None


class AliasFinder:
    """Finds the names of ``ALIASES`` (and the names under them) and loads each as its real
    module, imported then. A name whose real module does not exist is not found: the import
    raises ModuleNotFoundError naming the alias, as for any missing module. (The finder and
    loader protocols of ``importlib``, without its ABCs: importing ``importlib.abc`` would
    add half a millisecond to ``import subclass_kit``.)"""

    def find_spec(self, fullname, path=None, target=None):
        real = real_name(fullname)
        if real is None:
            return None
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:     # a parent of ``real`` is missing
            return None
        if found is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=found.submodule_search_locations is not None)

    def create_module(self, spec):
        real = real_name(spec.name)
        module = importlib.import_module(real)
        if spec.name == "subclass_kit.autograd":
            module.install()        # as ``sk.autograd``: the layer is live once it is named
        if spec.name in ALIASES:
            _alias_loaded(spec.name, real)
        # The import system sets ``__spec__`` to the alias's spec after this returns: keep the
        # real one to put back (the module's relative imports and ``reload`` read it).
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state    # already executed: restore only


def _alias_loaded(alias: str, real: str) -> None:
    """Enter every module already loaded under ``real`` into ``sys.modules`` under ``alias``
    as well. The import system binds a freshly loaded submodule as an attribute of its
    package, which would replace ``subclass_kit.autograd.gradcheck`` (the function the
    package exports) with the module of that name; a submodule found in ``sys.modules`` is
    not bound again."""
    prefix = real + "."
    for name, module in list(sys.modules.items()):
        if name.startswith(prefix):
            sys.modules.setdefault(alias + name[len(real):], module)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process): the path finder would
    otherwise find ``subclass_kit.autograd.graph`` in the real package's directory and load
    the file a second time. It answers for the aliased names only."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
