"""Names ports reach for (issue 12, point 4): ``is_tensor``, ``numel``, ``pytree.PyTree``,
``finfo`` / ``iinfo``, ``Tensor.type()``, ``Tensor.layout`` / ``strided``, ``utils.weak`` and
the function forms of the view methods, each against torch 2.13."""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit.utils.weak import WeakIdKeyDictionary, WeakIdRef

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


class Logger(sk.DispatchMode):
    def __init__(self):
        self.calls = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append((f"{func.name}.{func.overload}", sorted(kwargs or {})))
        return func(*args, **(kwargs or {}))


def torch_calls(torch, fn):
    from torch.utils._python_dispatch import TorchDispatchMode

    class L(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls.append((f"{func.overloadpacket.__name__}.{func._overloadname}",
                               sorted(kwargs or {})))
            return func(*args, **(kwargs or {}))

    with L() as m:
        out = fn()
    return m.calls, out


def sk_calls(fn):
    with Logger() as m:
        out = fn()
    return m.calls, out


def test_is_tensor_and_numel(torch):
    x = sk.zeros(2, 3, 4)
    assert sk.is_tensor(x) and not sk.is_tensor(3) and not sk.is_tensor(np.zeros(2))
    assert sk.is_tensor(sk.Tensor._make_subclass(type("Sub", (sk.Tensor,), {}), x)
                        if hasattr(sk.Tensor, "_make_subclass") else x)
    assert sk.numel(x) == torch.numel(torch.zeros(2, 3, 4)) == 24
    assert sk.numel(sk.zeros(0, 3)) == 0 and sk.numel(sk.tensor(1.0)) == 1
    with pytest.raises(TypeError) as ours:
        sk.numel(3)
    with pytest.raises(TypeError) as theirs:
        torch.numel(3)
    assert str(ours.value) == str(theirs.value)


def test_pytree_alias(torch):
    import torch.utils._pytree as tp
    assert sk.pytree.PyTree is tp.PyTree


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo(torch, name):
    ours, theirs = sk.finfo(getattr(sk, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
        assert type(getattr(ours, field)) is type(getattr(theirs, field)), field
    assert repr(ours) == repr(theirs)


def test_finfo_default_and_errors(torch):
    assert sk.finfo().dtype == torch.finfo().dtype == "float32"
    sk.set_default_dtype(sk.float64)
    try:
        assert sk.finfo().dtype == "float64"
    finally:
        sk.set_default_dtype(sk.float32)
    for name in ("int64", "bool"):
        with pytest.raises(TypeError) as ours:
            sk.finfo(getattr(sk, name))
        with pytest.raises(TypeError) as theirs:
            torch.finfo(getattr(torch, name))
        assert str(ours.value) == str(theirs.value).replace("torch", "sk")


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(torch, name):
    ours, theirs = sk.iinfo(getattr(sk, name)), torch.iinfo(getattr(torch, name))
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["bool", "float32"])
def test_iinfo_errors(torch, name):
    with pytest.raises(TypeError) as ours:
        sk.iinfo(getattr(sk, name))
    with pytest.raises(TypeError) as theirs:
        torch.iinfo(getattr(torch, name))
    assert str(ours.value) == str(theirs.value).replace("torch", "sk")


def test_layout(torch):
    x = sk.zeros(2, 3).t()
    assert x.layout is sk.strided and sk.zeros(2, device="meta").layout is sk.strided
    assert repr(sk.strided) == repr(torch.strided).replace("torch.", "sk.")
    assert isinstance(sk.strided, sk.layout)
    assert pickle.loads(pickle.dumps(sk.strided)) is sk.strided


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_type_name(torch, name, device):
    ours = sk.zeros(2, dtype=getattr(sk, name), device=device).type()
    theirs = torch.zeros(2, dtype=getattr(torch, name), device=device).type()
    assert ours == theirs.replace("torch.", "sk.")


@pytest.mark.parametrize("arg", ["int64", "float32", "float16", "sk.DoubleTensor",
                                 "torch.LongTensor", "sk.FloatTensor", "bool"])
def test_type_converts(torch, arg):
    x, tx = sk.arange(6.0).view(2, 3).t(), torch.arange(6.0).view(2, 3).t()
    if arg.startswith(("sk.", "torch.")):
        a, ta = arg, "torch." + arg.split(".", 1)[1]
    else:
        a, ta = getattr(sk, arg), getattr(torch, arg)
    ours_calls, ours = sk_calls(lambda: x.type(a))
    theirs_calls, theirs = torch_calls(torch, lambda: tx.type(ta))
    assert ours_calls == theirs_calls
    assert (ours is x) == (theirs is tx)
    assert str(ours.dtype).replace("sk.", "") == str(theirs.dtype).replace("torch.", "")
    assert ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_type_errors(torch):
    with pytest.raises(ValueError) as ours:
        sk.zeros(2).type("foo")
    with pytest.raises(ValueError) as theirs:
        torch.zeros(2).type("foo")
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError):
        sk.zeros(2).type("sk.cuda.FloatTensor")


# -- function forms --------------------------------------------------------------------------
FORMS = [
    ("reshape", lambda m, x: m.reshape(x, (3, 2))),
    ("reshape", lambda m, x: m.reshape(x.t(), [-1])),
    ("transpose", lambda m, x: m.transpose(x, 0, 1)),
    ("permute", lambda m, x: m.permute(x, (1, 0))),
    ("squeeze", lambda m, x: m.squeeze(x.view(1, 2, 1, 3))),
    ("squeeze", lambda m, x: m.squeeze(x.view(1, 2, 3), 0)),
    ("squeeze", lambda m, x: m.squeeze(x.view(1, 2, 1, 3), (0, 2))),
    ("unsqueeze", lambda m, x: m.unsqueeze(x, -1)),
    ("flatten", lambda m, x: m.flatten(x)),
    ("flatten", lambda m, x: m.flatten(x.t(), 0, 1)),
    ("split", lambda m, x: m.split(x, 2, 1)),
    ("split", lambda m, x: m.split(x, [1, 2], dim=1)),
    ("chunk", lambda m, x: m.chunk(x, 2, 1)),
    ("narrow", lambda m, x: m.narrow(x, 1, 1, 2)),
    ("select", lambda m, x: m.select(x, 1, -1)),
]


@pytest.mark.parametrize("i", range(len(FORMS)))
def test_function_forms(torch, i):
    name, fn = FORMS[i]
    x = sk.arange(6.0).view(2, 3)
    tx = torch.arange(6.0).view(2, 3)
    x.clone()  # warm-up outside the loggers
    ours_calls, ours = sk_calls(lambda: fn(sk, x))
    theirs_calls, theirs = torch_calls(torch, lambda: fn(torch, tx))
    if name != "squeeze":   # x.squeeze() arrives as squeeze.dims here: docs/differences.md
        assert ours_calls == theirs_calls
    outs = ours if isinstance(ours, tuple) else (ours,)
    touts = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert tuple(o.shape) == tuple(t.shape) and o.stride() == t.stride()
        assert o.storage_offset() == t.storage_offset()
        shares = t.untyped_storage().data_ptr() == tx.untyped_storage().data_ptr()
        assert (o.untyped_storage() is x.untyped_storage()) == shares
        assert (o._base is x) == (t._base is tx)
        np.testing.assert_array_equal(o.numpy(), t.numpy())


@pytest.mark.parametrize("call", [
    lambda m, x: m.transpose(x, 0, 2), lambda m, x: m.narrow(x, 1, 2, 2),
    lambda m, x: m.select(x, 0, 5), lambda m, x: m.reshape(x, (4,)),
    lambda m, x: m.chunk(x, 0)])
def test_function_form_errors(torch, call):
    with pytest.raises(Exception) as ours:
        call(sk, sk.zeros(2, 3))
    with pytest.raises(Exception) as theirs:
        call(torch, torch.zeros(2, 3))
    assert type(ours.value) is type(theirs.value)


def test_function_forms_reach_tensor_function():
    seen = []

    class Spy(sk.Tensor):
        @classmethod
        def __tensor_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__tensor_function__(func, types, args, kwargs)

    x = sk.zeros(2, 3).as_subclass(Spy)
    sk.reshape(x, (3, 2))
    sk.narrow(x, 0, 0, 1)
    assert seen[0] is sk.reshape and sk.narrow in seen


# -- utils.weak ------------------------------------------------------------------------------
def test_weak_id_ref_identity():
    x, y = sk.zeros(2), sk.zeros(2)
    assert WeakIdRef(x) == WeakIdRef(x) and WeakIdRef(x) != WeakIdRef(y)
    assert hash(WeakIdRef(x)) == id(x)
    assert WeakIdRef(x)() is x
    r = WeakIdRef(y)
    del y
    gc.collect()
    assert r() is None and r == r


def test_weak_id_key_dictionary(torch):
    from torch.utils.weak import WeakIdKeyDictionary as TorchDict
    for lib, cls in ((sk, WeakIdKeyDictionary), (torch, TorchDict)):
        d = cls()
        a, b = lib.zeros(2), lib.zeros(2)
        d[a] = 1
        d[b] = 2
        assert d[a] == 1 and d[b] == 2 and len(d) == 2 and a in d
        assert lib.zeros(2) not in d
        del d[a]
        assert a not in d and len(d) == 1
        del b
        gc.collect()
        assert len(d) == 0 and list(d) == []
        with pytest.raises(KeyError):
            d[a]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=12))
def test_weak_dict_matches_identity_dict(keep):
    """Against a dict keyed by id(): inserting a pool of tensors and dropping some."""
    pool = [sk.zeros(1) for _ in range(6)]
    d = WeakIdKeyDictionary()
    ref = {}
    for i in keep:
        d[pool[i]] = i
        ref[id(pool[i])] = i
    assert len(d) == len(ref)
    for t in pool:
        assert (t in d) == (id(t) in ref)
    survivors = pool[:3]
    del pool, t
    gc.collect()
    assert len(d) == sum(1 for t in survivors if id(t) in ref)


# -- make_wrapper_subclass(layout=, memory_format=, pin_memory=, dispatch_sizes_strides_policy=)
QUERIES = [("size", lambda w: tuple(w.size())), ("shape", lambda w: tuple(w.shape)),
           ("stride", lambda w: w.stride()), ("dim", lambda w: w.dim()),
           ("numel", lambda w: w.numel()), ("is_contiguous", lambda w: w.is_contiguous()),
           ("storage_offset", lambda w: w.storage_offset()), ("size0", lambda w: w.size(0)),
           ("stride0", lambda w: w.stride(0)), ("ndim", lambda w: w.ndim)]


def _wrapper_classes(torch):
    class SkW(sk.Tensor):
        answer = None
        seen: list = []

        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func.name)
            return cls.answer.get(func.name) if cls.answer else None

    class TorchW(torch.Tensor):
        answer = None
        seen: list = []

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func.overloadpacket.__name__)
            return cls.answer.get(func.overloadpacket.__name__) if cls.answer else None

    return SkW, TorchW


# no_debug_asserts: DebugAssertMode reads each op's output metadata, which the policy routes
# to the handler whose calls this test counts.
@pytest.mark.no_debug_asserts
@pytest.mark.parametrize("policy", [None, "strides", "sizes"])
@pytest.mark.parametrize("answer", [None, {"sym_stride": [7, 1], "is_contiguous": False,
                                           "sym_size": [5, 4], "dim": 2, "sym_numel": 20,
                                           "sym_storage_offset": 3}])
@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_sizes_strides_policy(torch, policy, answer, query):
    SkW, TorchW = _wrapper_classes(torch)
    SkW.answer = TorchW.answer = answer
    w = sk.make_wrapper_subclass(SkW, (2, 3), dispatch_sizes_strides_policy=policy)
    tw = torch.Tensor._make_wrapper_subclass(TorchW, (2, 3),
                                             dispatch_sizes_strides_policy=policy)
    _, fn = QUERIES[query]
    SkW.seen.clear()
    TorchW.seen.clear()
    try:
        ours = fn(w)
    except RuntimeError as e:
        ours = ("error", str(e))
    try:
        theirs = fn(tw)
    except RuntimeError as e:
        theirs = ("error", str(e))
    assert ours == theirs
    assert SkW.seen == TorchW.seen


def test_wrapper_options(torch):
    SkW, TorchW = _wrapper_classes(torch)
    for kw, tkw in [({"memory_format": sk.channels_last}, {"memory_format": torch.channels_last}),
                    ({"pin_memory": True}, {"pin_memory": True}),
                    ({"layout": sk.strided}, {"layout": torch.strided})]:
        w = sk.make_wrapper_subclass(SkW, (1, 2, 3, 4), **kw)
        tw = torch.Tensor._make_wrapper_subclass(TorchW, (1, 2, 3, 4), **tkw)
        assert w.stride() == tw.stride() and w.layout is sk.strided
    with pytest.raises(ValueError) as ours:
        sk.make_wrapper_subclass(SkW, (2,), dispatch_sizes_strides_policy="foo")
    with pytest.raises(ValueError) as theirs:
        torch.Tensor._make_wrapper_subclass(TorchW, (2,), dispatch_sizes_strides_policy="foo")
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="layout"):
        sk.make_wrapper_subclass(SkW, (2,), layout="sparse")


@pytest.mark.no_debug_asserts     # as test_sizes_strides_policy
def test_policy_does_not_leak_to_other_instances():
    SkW, _ = _wrapper_classes(pytest.importorskip("torch"))
    SkW.answer = {"sym_stride": [9]}
    with_policy = sk.make_wrapper_subclass(SkW, (2,), dispatch_sizes_strides_policy="strides")
    plain = sk.make_wrapper_subclass(SkW, (2,))
    SkW.seen.clear()
    assert with_policy.stride() == (9,) and plain.stride() == (1,) and SkW.seen == ["sym_stride"]
