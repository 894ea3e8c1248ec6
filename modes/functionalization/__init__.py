"""Functionalization: programs with views and in-place mutations turned into equivalent programs
without mutations (and, on request, without views), what compilers need. See
docs/functionalization.md; the algorithm is SEMANTICS.md §6.

- ``wrapper``: FunctionalTensorWrapper, FunctionalStorage, ``to_functional`` / ``from_functional``;
- ``view_meta``: the recorded view steps, their replay and inverse;
- ``mode``: FunctionalizeMode, the per-op algorithm;
- ``api``: ``functionalize(fn, remove=...)`` (input-mutation epilogue, synthetic bases).
"""
from .api import functionalize as functionalize
from .mode import FunctionalizeMode as FunctionalizeMode
from .mode import functional_variant as functional_variant
from .view_meta import ViewMeta as ViewMeta
from .view_meta import has_inverse as has_inverse
from .wrapper import FunctionalStorage as FunctionalStorage
from .wrapper import FunctionalTensorWrapper as FunctionalTensorWrapper
from .wrapper import from_functional as from_functional
from .wrapper import is_functional as is_functional
from .wrapper import to_functional as to_functional
