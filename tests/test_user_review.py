"""What a new user meets first: docstring examples, code ported from PyTorch tutorials, the
legacy ``Tensor(...)`` constructor, and model sizing with ``infer_shapes``."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import modes
import subclass_kit as sk
from modes import infer_shapes


# -- every ``>>>`` example in the library runs (with ``sk`` imported, as the docs assume) --------
def _modules_with_examples():
    names = []
    for pkg in (sk, modes):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if info.name.endswith("pytest_plugin"):
                continue
            mod = importlib.import_module(info.name)
            if doctest.DocTestFinder().find(mod) and ">>>" in (_source(mod) or ""):
                names.append(info.name)
    return names


def _source(mod):
    try:
        with open(mod.__file__, encoding="utf-8") as f:
            return f.read()
    except (OSError, TypeError):
        return None


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"sk": sk}, report=False,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} fail"


# -- PyTorch hook names on our classes fail loudly instead of never running ----------------------
def test_torch_dispatch_on_a_mode_raises_at_class_creation():
    with pytest.raises(TypeError, match="rename it to __tensor_dispatch__"):
        class Log(sk.DispatchMode):                                 # noqa: F841
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))


def test_torch_function_on_a_function_mode_raises():
    with pytest.raises(TypeError, match="rename it to __tensor_function__"):
        class Log(sk.FunctionMode):                                 # noqa: F841
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("hook", ["__torch_dispatch__", "__torch_function__"])
def test_torch_hook_on_a_subclass_raises(hook):
    def handler(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    with pytest.raises(TypeError, match=f"Sub defines {hook}, which subclass_kit never calls"):
        type("Sub", (sk.Tensor,), {hook: classmethod(handler)})


def test_both_hook_names_are_fine():
    def handler(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    sub = type("Dual", (sk.Tensor,), {"__torch_dispatch__": classmethod(handler),
                                      "__tensor_dispatch__": classmethod(handler)})
    assert sub.__tensor_dispatch__.__func__ is handler      # a class that serves both libraries
