"""``nn.Parameter`` of tensor subclasses against ``torch.nn.Parameter``: a wrapper subclass and a
direct subclass (``as_subclass``) stay of their class, flagged ``_is_param`` so that
``isinstance(t, Parameter)`` holds; a plain tensor becomes a ``Parameter`` without a ``detach``
op reaching a mode. The same program runs in both libraries (twin classes); we compare types,
flags, reprs, the ops modes and handlers see, module registration, training and errors."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit import nn

torch = pytest.importorskip("torch", reason="torch is the oracle for nn.Parameter")
pytest.importorskip("hypothesis", reason="hypothesis generates the data")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import SkOpLog, assert_same_error, normalize_message, torch_op_log  # noqa: E402

tnn = torch.nn


def _wrapper_class(lib):
    """A logging wrapper subclass ``W(elem)`` of ``lib`` (unwrap, run, rewrap); the ops its
    handler sees go to ``W.seen``."""
    if lib is sk:
        class W(sk.Tensor):
            seen: list = []

            @staticmethod
            def __new__(cls, elem):
                w = sk.make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype,
                                             requires_grad=elem.requires_grad)
                w.elem = elem
                return w

            @classmethod
            def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
                cls.seen.append(func.name)
                un = sk.pytree.tree_map_only(cls, lambda t: t.elem, (args, kwargs or {}))
                out = func(*un[0], **un[1])
                return sk.pytree.tree_map_only(sk.Tensor, cls, out)
        return W

    from torch.utils._pytree import tree_map_only

    class W(torch.Tensor):
        seen: list = []

        @staticmethod
        def __new__(cls, elem):
            w = torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype,
                                                    requires_grad=elem.requires_grad)
            w.elem = elem
            return w

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func._schema.name.split("::")[1])
            un = tree_map_only(cls, lambda t: t.elem, (args, kwargs or {}))
            out = func(*un[0], **un[1])
            return tree_map_only(torch.Tensor, cls, out)
    return W


def _sub_class(lib):
    class Sub(lib.Tensor):
        pass
    return Sub


def _lib_nn(lib):
    return nn if lib is sk else tnn


def _wrapper_facts(lib, requires_grad):
    W = _wrapper_class(lib)
    N = _lib_nn(lib)
    w = W(lib.arange(4.0).reshape(2, 2))
    W.seen.clear()
    p = N.Parameter(w, requires_grad=requires_grad)
    created = list(W.seen)
    m = N.Linear(2, 2)
    m.weight = p
    m.register_parameter("extra", N.Parameter(W(lib.ones(3))))
    doubled = p * 2
    return dict(
        type=type(p).__name__, created_ops=created, same_object=p is w,
        requires_grad=p.requires_grad, is_param=isinstance(p, N.Parameter),
        flag=p.__dict__.get("_is_param"), leaf=p.is_leaf, grad_fn=p.grad_fn,
        source_flagged=hasattr(w, "_is_param"), doubled=type(doubled).__name__,
        doubled_is_param=isinstance(doubled, N.Parameter),
        named=[(n, type(q).__name__) for n, q in m.named_parameters()],
        params=[type(q).__name__ for q in m.parameters()],
        state=[(k, type(v).__name__) for k, v in m.state_dict(keep_vars=True).items()],
        get=m.get_parameter("weight") is p,
        values=p.elem.tolist(), elem_requires_grad=p.elem.requires_grad)


@pytest.mark.no_debug_asserts  # the wrapper re-wraps detach's output without aliasing it
@pytest.mark.parametrize("requires_grad", [True, False])
def test_wrapper_subclass_parameter_keeps_its_class(requires_grad):
    ours, theirs = _wrapper_facts(sk, requires_grad), _wrapper_facts(torch, requires_grad)
    assert ours == theirs
    assert ours["type"] == "W" and ours["is_param"] and ours["created_ops"] == ["detach"]


def _sub_facts(lib, data, requires_grad):
    Sub = _sub_class(lib)
    N = _lib_nn(lib)
    x = lib.tensor(data, dtype=lib.float64)
    s = x.as_subclass(Sub)
    p = N.Parameter(s, requires_grad=requires_grad)
    return dict(
        type=type(p).__name__, repr=normalize_message(repr(p)), str=normalize_message(str(p)),
        requires_grad=p.requires_grad,
        is_param=isinstance(p, N.Parameter), not_param_source=isinstance(s, N.Parameter),
        same_object=p is s, leaf=p.is_leaf, grad_fn=p.grad_fn,
        shares=p.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
        version=p._version, doubled=type(p * 2).__name__,
        doubled_is_param=isinstance(p * 2, N.Parameter),
        flag=p.__dict__.get("_is_param"), detached_flag=getattr(p.detach(), "_is_param", None))


@settings(max_examples=25, deadline=None)
@given(data=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=6),
       requires_grad=st.booleans())
def test_direct_subclass_parameter_keeps_its_class(data, requires_grad):
    ours = _sub_facts(sk, data, requires_grad)
    theirs = _sub_facts(torch, data, requires_grad)
    assert ours == theirs
    assert ours["type"] == "Sub" and ours["is_param"]


def _train_facts(lib):
    """A Linear whose weight is a ``Sub`` parameter: registration, a forward, a backward, an
    SGD step, a dtype conversion."""
    Sub = _sub_class(lib)
    N = _lib_nn(lib)
    m = N.Linear(2, 2)
    with lib.no_grad():
        m.bias.copy_(lib.tensor([0.5, -0.5]))
    m.weight = N.Parameter(lib.tensor([[1.0, 2.0], [3.0, 4.0]]).as_subclass(Sub))
    w0 = m.weight
    facts = dict(named=[(n, type(p).__name__) for n, p in m.named_parameters()],
                 state=[(k, type(v).__name__) for k, v in m.state_dict().items()])
    y = m(lib.tensor([[1.0, -1.0], [2.0, 0.5]]))
    y.sum().backward()
    facts.update(out=type(y).__name__, y=y.tolist(), grad=type(m.weight.grad).__name__,
                 grad_values=m.weight.grad.tolist())
    lib.optim.SGD(m.parameters(), lr=0.1).step()
    facts.update(stepped=type(m.weight).__name__, w=m.weight.tolist())
    m.double()
    facts.update(converted=type(m.weight).__name__, kept=m.weight is w0,
                 is_param=isinstance(m.weight, N.Parameter), dtype=str(m.weight.dtype)[-7:])
    m.load_state_dict({"weight": lib.ones(2, 2, dtype=lib.float64),
                       "bias": lib.zeros(2, dtype=lib.float64)})
    facts.update(loaded=type(m.weight).__name__, loaded_w=m.weight.tolist())
    m.load_state_dict({"weight": lib.ones(2, 2, dtype=lib.float64),
                       "bias": lib.zeros(2, dtype=lib.float64)}, assign=True)
    facts.update(assigned=type(m.weight).__name__)
    return facts


def test_subclass_parameter_in_a_module_trains_like_torch():
    assert _train_facts(sk) == _train_facts(torch)


@pytest.mark.no_debug_asserts  # its recording mode's detach output does not alias its input
def test_plain_parameter_sends_no_detach_to_modes():
    results = []
    for lib, log in ((sk, SkOpLog()), (torch, torch_op_log())):
        N = _lib_nn(lib)
        x = lib.ones(3)
        s = lib.ones(3).as_subclass(_sub_class(lib))
        W = _wrapper_class(lib)
        w = W(lib.ones(3))
        param = N.Parameter(lib.ones(1))
        seen = []
        with log:
            for data in (x, param, s, w):
                N.Parameter(data)
                seen.append(list(log.ops))
                log.ops.clear()
        results.append(seen)
    assert results[0] == results[1] == [[], [], ["detach"], ["detach"]]


def test_is_param_flag_and_instancecheck():
    for lib in (sk, torch):
        N = _lib_nn(lib)
        x = lib.ones(2)
        assert not isinstance(x, N.Parameter) and not isinstance(3, N.Parameter)
        x._is_param = True
        assert isinstance(x, N.Parameter)
        assert not isinstance(x, _sub_class(lib))
        assert isinstance(N.Parameter(lib.ones(1)), N.Parameter)


def test_parameter_subclass_repr_and_errors():
    class MyParamSk(nn.Parameter):
        pass

    class MyParamT(tnn.Parameter):
        pass
    MyParamSk.__name__ = MyParamT.__name__ = "MyParam"
    assert repr(MyParamSk(sk.ones(2))) == repr(MyParamT(torch.ones(2)))
    assert type(MyParamSk(sk.ones(2))) is MyParamSk
    # A Parameter subclass's detach gives a plain tensor: refused, as torch does.
    assert_same_error(lambda: nn.Parameter(MyParamSk(sk.ones(2))),
                      lambda: tnn.Parameter(MyParamT(torch.ones(2))))
    # cls is not used on the subclass path
    assert type(MyParamSk(sk.ones(2).as_subclass(_sub_class(sk)))).__name__ == \
        type(MyParamT(torch.ones(2).as_subclass(_sub_class(torch)))).__name__ == "Sub"
    assert_same_error(lambda: nn.Parameter(sk.tensor([1]).as_subclass(_sub_class(sk))),
                      lambda: tnn.Parameter(torch.tensor([1]).as_subclass(_sub_class(torch))))


def test_subclass_whose_detach_changes_class_is_refused():
    class BadSk(sk.Tensor):
        @classmethod
        def __tensor_function__(cls, func, types, args=(), kwargs=None):
            out = super().__tensor_function__(func, types, args, kwargs)
            return out.as_subclass(sk.Tensor) if func is sk.Tensor.detach else out

    class BadT(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            out = super().__torch_function__(func, types, args, kwargs)
            return out.as_subclass(torch.Tensor) if func is torch.Tensor.detach else out
    BadSk.__name__ = BadT.__name__ = "Bad"
    with pytest.raises(RuntimeError) as theirs:
        tnn.Parameter(torch.ones(2).as_subclass(BadT))
    with pytest.raises(RuntimeError) as ours:
        nn.Parameter(sk.ones(2).as_subclass(BadSk))
    assert str(ours.value) == normalize_message(str(theirs.value))
    assert "detach() returns an instance of the same type" in str(ours.value)


def _reassign_orders(lib):
    N = _lib_nn(lib)
    m = N.Module()
    m.a = N.Parameter(lib.ones(1))
    m.b = N.Parameter(lib.ones(1))
    m.c = N.Linear(1, 1)
    m.d = N.Tanh()
    m.a = N.Parameter(lib.zeros(1).as_subclass(_sub_class(lib)))
    m.c = N.ReLU()
    return ([(n, type(p).__name__) for n, p in m.named_parameters()],
            [n for n, _ in m.named_children()], np.asarray(m.a.tolist()).tolist())


def test_reassigned_parameter_and_module_keep_their_place():
    assert _reassign_orders(sk) == _reassign_orders(torch)
