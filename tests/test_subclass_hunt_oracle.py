"""Wrapper ("has-a") and direct ("is-a") subclasses against PyTorch 2.13 (SEMANTICS.md §5): the
same program runs on subclass_kit and on torch and the observations are compared.

1. ``make_wrapper_subclass`` geometry and argument errors (``_make_wrapper_subclass``);
2. ``make_subclass`` / ``as_subclass``: inference data, wrapper data, views, attributes;
3. ``bool`` / ``float`` / ``int`` of wrappers and meta tensors;
4. binary operators whose handlers all decline: Python's "unsupported operand" error;
5. ``repr`` of subclasses;
6. ``lift_fresh`` through a wrapper, and a pass-through wrapper over the op samples (all tensor
   arguments wrapped, or only the first) against its torch twin: results, aliasing, ``_base``,
   versions, inputs after;
7. the example zoo against dense references.
"""

import math
import operator
import os
import sys

import numpy as np
import pytest
from oracle import Wrapper, normalize_message

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")
# These import torch themselves.
import test_op_sweep as sweep
from samples import build, entry_for, qualified
from test_view_version_edges_oracle import TorchWrapper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "subclasses"))


def run(L, program, *args):
    """Run ``program(L, log, *args)``; an exception becomes the last log entry."""
    log = []
    try:
        program(L, log, *args)
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        text = normalize_message(str(e)).replace("_make_wrapper_subclass", "make_wrapper_subclass")
        log.append(("raised", type(e).__name__, text.replace("TorchWrapper", "Wrapper")))
    return log


def same(program, *args):
    ours, theirs = run(sk, program, *args), run(torch, program, *args)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"


def wrap(L, t):
    return Wrapper.wrap(t) if L is sk else TorchWrapper(t)


def version(t):
    try:
        return t._version
    except RuntimeError:
        return "no counter"


def shares(L, a, b):
    if L is sk:
        return a.untyped_storage() is b.untyped_storage()
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


# -- 1. make_wrapper_subclass ---------------------------------------------------------------------
GEOMETRIES = [
    ((2, 3), {}), ((2, 3), {"strides": (1, 2), "storage_offset": 4}), ([2, 3], {"strides": [3, 1]}),
    ((0, 3), {}), ((3, 4), {"strides": (0, 1)}), ((2,), {"strides": (1,), "storage_offset": -1}),
    # negative sizes and strides: PyTorch's numel check, its stored strides and signed nbytes
    ((-1, 3), {}), ((2, -1), {}), ((0, -1), {}), ((2, 3), {"strides": (-1, 1)}),
    ((2, 3), {"strides": (1, -1)}), ((2, 3), {"strides": (3, -1)}),
    # argument errors
    ((2, 3), {"strides": (1,)}), ((4,), {"storage_offset": 3}), (5, {}), ((2.0, 3), {}),
    ((True,), {}), ((2, 3), {"strides": 5}), ((2,), {"strides": (1,), "storage_offset": 1.5}),
    ((2,), {"dtype": "int64", "requires_grad": True}),
]


@pytest.mark.parametrize("size, kwargs", GEOMETRIES, ids=repr)
def test_wrapper_geometry_like_torch(size, kwargs, monkeypatch):
    # The geometry memo is keyed by value, and (2.0, 3) == (2, 3): start from an empty memo so
    # the checks run (a float size equal to a memoised int geometry is accepted).
    monkeypatch.setattr("subclass_kit.subclass._GEOMETRY", {})

    def program(L, log):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(L, kw["dtype"])
        if L is sk:
            w = sk.make_wrapper_subclass(Wrapper, size, **kw)
        else:
            w = torch.Tensor._make_wrapper_subclass(TorchWrapper, size, **kw)
        log.append((tuple(w.shape), w.stride(), w.storage_offset(), w.untyped_storage().nbytes(),
                    w.numel(), w.is_contiguous(), version(w), w.requires_grad))
    same(program)


def test_make_subclass_requires_grad_of_integer_dtype_like_torch():
    def program(L, log):
        class Sub(L.Tensor):
            pass
        make = sk.make_subclass if L is sk else torch.Tensor._make_subclass
        make(Sub, L.ones(2, dtype=L.int64), True)
    same(program)


# -- 2. make_subclass / as_subclass ---------------------------------------------------------------
def _sub(L):
    class Sub(L.Tensor):
        pass
    return Sub, (sk.make_subclass if L is sk else torch.Tensor._make_subclass)


def p_make_subclass_of_inference_data(L, log):
    Sub, make = _sub(L)
    with L.inference_mode():
        x = L.ones(2)
        inside = make(Sub, L.ones(2))
    s = make(Sub, x)                # outside the mode: a fresh, enabled counter (as detach())
    log.append((s.is_inference(), version(s), inside.is_inference(), version(inside)))
    s.add_(1)
    log.append((version(s), x.tolist()))


def p_make_subclass_of_wrapper(L, log):
    Sub, make = _sub(L)
    make(Sub, wrap(L, L.ones(2)))


def p_as_subclass_of_wrapper(L, log):
    Sub, _ = _sub(L)
    wrap(L, L.ones(2)).as_subclass(Sub)


def p_as_subclass_is_a_view(L, log):
    Sub, _ = _sub(L)
    root = L.arange(6.0)
    for x in (root, root[1:].view(1, 5)):
        x.tag = "x"
        y = x.as_subclass(Sub)
        log.append((type(y).__name__, hasattr(y, "tag"), y._is_view(), y._base is root,
                    shares(L, x, y), y.storage_offset(), tuple(y.shape)))
        y.add_(1)
        log.append((version(x), version(y), root.tolist()))
    z = y.as_subclass(L.Tensor)
    log.append((type(z).__name__, z._base is root))
    with L.inference_mode():
        v = root.as_subclass(Sub)
    log.append((v._base is root, v.is_inference()))


@pytest.mark.parametrize("program", [p_make_subclass_of_inference_data, p_make_subclass_of_wrapper,
                                     p_as_subclass_of_wrapper, p_as_subclass_is_a_view])
def test_make_subclass_and_as_subclass_like_torch(program):
    same(program)


# -- 3. bool / float / int ------------------------------------------------------------------------
SCALAR_OF = {"bool": bool, "float": float, "int": int, "item": lambda t: t.item(),
             "index": operator.index}


@pytest.mark.parametrize("kind", ["wrapper", "meta", "meta_wrapper", "plain"])
@pytest.mark.parametrize("n", [0, 1, 2])
@pytest.mark.parametrize("how", list(SCALAR_OF))
def test_python_scalars_of_wrappers_and_meta_like_torch(kind, n, how):
    def program(L, log):
        device = "meta" if kind.startswith("meta") else "cpu"
        t = L.ones(n, dtype=L.int64, device=device)
        if kind.endswith("wrapper"):
            t = wrap(L, t)
        log.append(SCALAR_OF[how](t))
    same(program)


# -- 4. binary operators whose handlers decline ---------------------------------------------------
def _declining(L):
    if L is sk:
        class Declines(sk.Tensor):
            @classmethod
            def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
                return NotImplemented
        return sk.make_wrapper_subclass(Declines, (2,))

    class Declines(torch.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    return torch.Tensor._make_wrapper_subclass(Declines, (2,))


def _declining_mode(L):
    base = sk.DispatchMode if L is sk else torch.utils._python_dispatch.TorchDispatchMode

    class DeclinesAll(base):
        def handle(self, func, types, args=(), kwargs=None):
            return NotImplemented
        __tensor_dispatch__ = __torch_dispatch__ = handle
    return DeclinesAll()


OPERATORS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_",
             "xor", "eq", "ne", "lt", "ge", "iadd", "imul"]


@pytest.mark.parametrize("name", OPERATORS)
def test_operator_with_declining_wrapper_raises_like_torch(name):
    def program(L, log):
        a = _declining(L)
        f = getattr(operator, name)
        for x, y in ((a, 1), (1, a), (a, L.ones(2)), (L.ones(2), a), (a, a)):
            try:
                r = f(x, y)
                log.append(r if isinstance(r, bool) else type(r).__name__)
            except TypeError as e:
                log.append(str(e))
    same(program)


@pytest.mark.no_debug_asserts  # its mode would answer the ops the declining mode passes on
@pytest.mark.parametrize("name", ["add", "rsub", "eq", "lt", "matmul", "iadd"])
def test_operator_under_declining_mode_raises_like_torch(name):
    def program(L, log):
        x = L.ones(2)
        f = (lambda a, b: b - a) if name == "rsub" else getattr(operator, name)
        with _declining_mode(L):
            try:
                log.append(repr(f(x, 1 if name not in ("matmul", "eq") else x)))
            except TypeError as e:
                log.append(str(e))
    same(program)


# -- 5. repr --------------------------------------------------------------------------------------
def test_repr_of_subclasses_names_the_class_like_torch():
    def program(L, log):
        Sub, make = _sub(L)
        log.append(repr(make(Sub, L.arange(3.0))))
        log.append(repr(make(Sub, L.ones(2, 2), True)))
        log.append(repr(wrap(L, L.empty(2, 3, device="meta"))).replace("TorchWrapper", "Wrapper"))
        log.append(repr(L.ones(1)))
    same(program)
