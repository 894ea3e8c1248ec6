"""The derivative table (PyTorch's ``derivatives.yaml``), one module per op family; importing
this package registers every formula. ``core`` and ``views`` first, then every other module of
the package, found with ``pkgutil`` (a new family module needs no edit here)."""

from __future__ import annotations

import importlib
import pkgutil

from . import core as core
from . import views as views

for _info in pkgutil.iter_modules(__path__):
    if _info.name not in ("core", "views"):
        importlib.import_module(f"{__name__}.{_info.name}")
