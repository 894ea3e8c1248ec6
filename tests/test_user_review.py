"""What a new user meets first: docstring examples, code ported from PyTorch tutorials, the
legacy ``Tensor(...)`` constructor, and model sizing with ``infer_shapes``."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil
import re

import pytest

from subclass_kit import modes

import subclass_kit as sk
from subclass_kit.modes import infer_shapes


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
        class Log(sk.DispatchMode):                               
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))


def test_torch_function_on_a_function_mode_raises():
    with pytest.raises(TypeError, match="rename it to __tensor_function__"):
        class Log(sk.FunctionMode):                               
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


# -- the ported tutorial wrapper and count-ops mode ----------------------------------------------
class _Wrapper(sk.Tensor):
    """PyTorch's tree_map pass-through wrapper, ported name for name."""

    @staticmethod
    def __new__(cls, elem):
        r = sk.make_wrapper_subclass(cls, elem.size(), strides=elem.stride(),
                                     storage_offset=elem.storage_offset(), dtype=elem.dtype,
                                     device=elem.device, requires_grad=elem.requires_grad)
        r.elem = elem
        return r

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(e):
            return e.elem if isinstance(e, cls) else e

        def wrap(e):
            return cls(e) if isinstance(e, sk.Tensor) else e

        out = func(*sk.pytree.tree_map(unwrap, args), **sk.pytree.tree_map(unwrap, kwargs or {}))
        return sk.return_and_correct_aliasing(func, args, kwargs or {},
                                              sk.pytree.tree_map(wrap, out))


def test_ported_wrapper_and_count_mode():
    counts: dict = {}

    class CountOps(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            counts[func.name] = counts.get(func.name, 0) + 1
            return func(*args, **(kwargs or {}))

    w = _Wrapper(sk.arange(6.0).view(2, 3))
    with CountOps():
        y = (w.t() * 2).sum(0)
        w.add_(1)
    assert type(y) is _Wrapper and y.elem.tolist() == [6.0, 24.0]
    assert w.elem.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] and w._version == 1
    assert counts == {"t": 1, "mul": 1, "sum": 1, "add_": 1}


# -- Tensor(...): PyTorch's legacy constructor -----------------------------------------------------
class _Tagged(sk.Tensor):
    pass


def test_tensor_constructor_matches_torch():
    torch = pytest.importorskip("torch")
    assert sk.Tensor().shape == torch.Tensor().shape == (0,)
    assert sk.Tensor().dtype == sk.float32
    assert sk.Tensor([1, 2]).tolist() == torch.Tensor([1, 2]).tolist()
    assert sk.Tensor([1, 2]).dtype == sk.float32
    assert tuple(sk.Tensor(2, 3).shape) == tuple(torch.Tensor(2, 3).shape)

    x, tx = sk.arange(4.0)[1:], torch.arange(4.0)[1:]
    a, ta = sk.Tensor(x), torch.Tensor(tx)
    assert (a._base is x._base) and (ta._base is tx._base)
    assert a.storage_offset() == ta.storage_offset() == 1
    x.add_(1)
    tx.add_(1)
    assert a._version == ta._version == 1 and a.tolist() == ta.tolist()

    s = _Tagged(sk.ones(2, dtype=sk.int64))
    assert type(s) is _Tagged and s.dtype == sk.int64
    assert type(s + 1) is _Tagged
    assert type(_Tagged([1.0, 2.0])) is _Tagged


def test_tensor_constructor_rejects_other_arguments():
    with pytest.raises(TypeError, match="invalid combination of arguments.*sk.make_subclass"):
        sk.Tensor(sk.ones(2), 3)
    with pytest.raises(TypeError, match="invalid combination"):
        sk.Tensor("abc")


# -- sizing a model from Python ------------------------------------------------------------------
def test_infer_shapes_counts_model_parameters_not_its_inputs():
    from subclass_kit import zoo
    model = zoo.get_model("gpt2")
    report = infer_shapes(model, ((1, 128), sk.int64))
    assert report.parameters == 124_439_808 == model.num_parameters()   # Hugging Face's count
    assert report.parameter_bytes == 4 * 124_439_808
    assert "parameters:  124,439,808" in str(report)


# -- names the docs promise ----------------------------------------------------------------------
def test_modes_exports_what_api_md_lists_and_exists():
    # API.md lists it: "what sk.inference_mode uses"
    from subclass_kit.modes import InferenceMode
    with InferenceMode():
        t = sk.ones(2)
    assert t.is_inference()


_PLACEHOLDERS = {"sk.ops.ns.op.default", "sk.ops.walkthrough.scale",
                 "sk.ops.walkthrough.scale.default",
                 # examples of the unknown-overload and packet-attribute errors
                 "sk.ops.add.nosuch", "sk.ops.transpose.default", "sk.ops.add.decomposition",
                 # Tensor.type() names (strings, as torch's 'torch.FloatTensor'), not attributes
                 "sk.FloatTensor", "sk.meta.FloatTensor"}


def test_sk_and_modes_names_in_the_docs_exist():
    root = pathlib.Path(__file__).resolve().parent.parent
    missing = []
    for path in ["README.md", "docs/ARCHITECTURE.md", "docs/differences.md",
                 "docs/walkthrough.py"]:
        text = (root / path).read_text(encoding="utf-8")
        for m in re.finditer(r"(?<![\w.])(sk|modes)\.([A-Za-z_][\w.]*)", text):
            if m.group(0).rstrip(".") in _PLACEHOLDERS:
                continue
            obj = sk if m.group(1) == "sk" else modes
            for part in m.group(2).rstrip(".").split("."):
                if not hasattr(obj, part):
                    missing.append(f"{path}: {m.group(0)}")
                    break
                obj = getattr(obj, part)
    assert not missing, missing
