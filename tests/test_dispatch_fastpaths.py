"""The shortcuts of the slow dispatch paths behave like the general code they skip.

Covers the spec-free ``pytree.tree_map``/``tree_map_only``, the memoised geometry of
``make_wrapper_subclass``, the per-op facts of ``return_and_correct_aliasing``, the inline
default ``__tensor_function__`` of direct subclasses and the single-subclass path of
``dispatch`` (SEMANTICS.md §5).
"""

from collections import namedtuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import Wrapper

import subclass_kit as sk
from subclass_kit import ops
from subclass_kit.pytree import tree_flatten, tree_map, tree_map_only, tree_unflatten

P = namedtuple("P", "a b")


class Box:
    """A registered pytree node holding one child."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is Box and other.v == self.v

    def __repr__(self):
        return f"Box({self.v!r})"


sk.pytree.register_pytree_node(Box, lambda b: ([b.v], None), lambda c, _: Box(c[0]))


class LeafList(list):
    """A list subclass: a leaf (only exact list/tuple/dict are containers)."""


_leaf = st.one_of(st.integers(), st.none(), st.text(max_size=2), st.just(sk.Size([2, 3])),
                  st.builds(LeafList, st.lists(st.integers(), max_size=2)))
_tree = st.recursive(
    _leaf, lambda c: st.one_of(st.lists(c, max_size=3), st.tuples(c, c),
                               st.dictionaries(st.text(max_size=2), c, max_size=3),
                               st.builds(P, c, c), st.builds(Box, c)), max_leaves=12)


def _tag(x):
    return ("leaf", type(x).__name__, x)


@settings(max_examples=200, deadline=None)
@given(_tree)
def test_tree_map_matches_flatten_unflatten(tree):
    leaves, spec = tree_flatten(tree)
    expected = tree_unflatten([_tag(v) for v in leaves], spec)
    # repr compares container types too (a named tuple is not a plain tuple)
    assert repr(tree_map(_tag, tree)) == repr(expected)
    only = tree_unflatten([_tag(v) if isinstance(v, (int, LeafList)) else v for v in leaves],
                          spec)
    assert repr(tree_map_only((int, LeafList), _tag, tree)) == repr(only)


def test_tree_map_only_on_dispatch_shapes():
    a, b = sk.ones(2), sk.zeros(2)
    assert tree_map_only(sk.Tensor, lambda t: 1, (a, [b, 3], {"k": a})) == (1, [1, 3], {"k": 1})
    empty = {}
    out = tree_map_only(sk.Tensor, lambda t: 1, empty)
    assert out == {} and out is not empty            # a new dict, as tree_map builds
    assert tree_map_only(sk.Tensor, lambda t: 1, a) == 1
    assert tree_map_only(int, lambda t: -t, P(1, (2, "x"))) == P(-1, (-2, "x"))
    assert tree_map(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]


def test_registering_a_node_type_turns_known_leaves_into_containers():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    p = Pair(1, 2)
    assert tree_map(lambda v: v, [p])[0] is p          # a leaf, remembered as one
    sk.pytree.register_pytree_node(Pair, lambda q: ([q.a, q.b], None),
                                   lambda c, _: Pair(*c))
    q = tree_map(lambda v: v * 10, [p])[0]
    assert type(q) is Pair and (q.a, q.b) == (10, 20)


def test_wrapper_geometry_memo_gives_fresh_storage_and_counter():
    size, stride = (2, 3), (3, 1)
    w1 = sk.make_wrapper_subclass(Wrapper, size, stride, 0, dtype=sk.float32)
    w2 = sk.make_wrapper_subclass(Wrapper, sk.Size(size), stride, 0, dtype=sk.float64)
    assert w1.untyped_storage() is not w2.untyped_storage()
    assert w1._vc is not w2._vc and w1._version == w2._version == 0
    assert w1.untyped_storage().nbytes() == 24 and w2.untyped_storage().nbytes() == 48
    assert type(w1.shape) is sk.Size and w1.shape == w2.shape == size
    w3 = sk.make_wrapper_subclass(Wrapper, [2, 3], [1, 2], 1)
    assert (w3.shape, w3.stride(), w3.storage_offset()) == ((2, 3), (1, 2), 1)
    assert w3.untyped_storage().nbytes() == 4 * 7
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(2\) must match"):
        sk.make_wrapper_subclass(Wrapper, (2, 3), (1,))
    with sk.inference_mode():
        w4 = sk.make_wrapper_subclass(Wrapper, size, stride, 0)
    assert w4.is_inference() and not w1.is_inference()


def test_wrapper_default_dtype_is_read_per_call():
    prev = sk.get_default_dtype()
    try:
        sk.set_default_dtype(sk.float64)
        w = sk.make_wrapper_subclass(Wrapper, (2,))
    finally:
        sk.set_default_dtype(prev)
    assert w.dtype == sk.float64 and sk.make_wrapper_subclass(Wrapper, (2,)).dtype == prev


def test_return_and_correct_aliasing_by_schema():
    w = Wrapper.wrap(sk.arange(6.).view(2, 3))
    o = Wrapper.wrap(sk.zeros(2, 3))
    fresh = w + 1
    assert type(fresh) is Wrapper and fresh.untyped_storage() is not w.untyped_storage()
    assert w.mul_(2) is w                                   # in-place: self
    assert sk.add(w, 1, out=o) is o and o.elem.tolist()[0] == [1.0, 3.0, 5.0]
    parts = w.split(1)                                      # list of views
    assert all(p.untyped_storage() is w.untyped_storage() for p in parts)
    assert sk.return_and_correct_aliasing(ops.add.Tensor, (w, 1), {}, "out") == "out"


def test_return_and_correct_aliasing_rejects_mixed_mutable_returns():
    op = sk.library.define("fastpaths::mixed(Tensor(a!) x) -> (Tensor(a!), Tensor)")
    w = Wrapper.wrap(sk.zeros(2))
    with pytest.raises(RuntimeError, match="Unsupported schema"):
        sk.return_and_correct_aliasing(op, (w,), {}, (w, w))


class Sub(sk.Tensor):
    pass


class Slotted(sk.Tensor):
    __slots__ = ("extra",)


def test_direct_subclass_results_and_returned_inputs():
    s = sk.make_subclass(Sub, sk.ones(2))
    r = s + 1
    assert type(r) is Sub and r.tolist() == [2.0, 2.0]
    assert s.add_(1) is s and type(s) is Sub and s._version == 1
    plain = sk.zeros(2)
    out = sk.add(s, 1, out=plain)           # the out tensor keeps its class (PyTorch too)
    assert type(plain) is sk.Tensor and type(out) is Sub and out is not plain
    assert out.untyped_storage() is plain.untyped_storage() and out._vc is plain._vc
    same = plain.add_(s)                    # a plain self returned: a Sub alias of it
    assert type(plain) is sk.Tensor and type(same) is Sub and same._vc is plain._vc
    assert [type(t) for t in s.split(1)] == [Sub, Sub]
    v = s.view(2)
    assert type(v) is Sub and v._base is s


def test_direct_subclass_with_slots_converts_by_alias():
    t = sk.make_subclass(Slotted, sk.ones(2))
    r = t * 3
    assert type(r) is Slotted and r.tolist() == [3.0, 3.0]


def test_overridden_tensor_function_still_called():
    seen = []

    class Logged(sk.Tensor):
        @classmethod
        def __tensor_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return super().__tensor_function__(func, types, args, kwargs)

    class LoggedChild(Logged):
        pass

    lg = sk.make_subclass(Logged, sk.ones(2))
    assert type(lg + 1) is Logged and seen == ["__add__"]
    ch = sk.make_subclass(LoggedChild, sk.ones(2))
    assert type(ch.sum()) is LoggedChild and seen[-1] == "sum"


def test_function_mode_and_two_subclasses_take_the_general_path():
    class Child(Sub):
        pass

    log = []

    class FnLog(sk.FunctionMode):
        def __tensor_function__(self, func, types, args=(), kwargs=None):
            log.append(types)
            return func(*args, **(kwargs or {}))

    s, c = sk.make_subclass(Sub, sk.ones(1)), sk.make_subclass(Child, sk.ones(1))
    with FnLog():
        r = s + c
    assert log == [(Child, Sub)] and type(r) is Child


def test_hooks_assigned_after_class_creation_take_effect():
    """Tensor's metaclass refiles a class (and its subclasses) in the hook registries."""
    class Late(sk.Tensor):
        pass

    class LateChild(Late):
        pass

    seen = []

    def handler(cls, func, types, args=(), kwargs=None):
        seen.append((cls.__name__, func.__name__))
        return sk.Tensor.__tensor_function__.__func__(cls, func, types, args, kwargs)

    t, c = sk.make_subclass(Late, sk.ones(2)), sk.make_subclass(LateChild, sk.ones(2))
    assert type(t + 1) is Late and seen == []
    Late.__tensor_function__ = classmethod(handler)
    assert type(t + 1) is Late and type(c * 2) is LateChild and type(c.sum()) is LateChild
    assert seen == [("Late", "__add__"), ("LateChild", "__mul__"), ("LateChild", "sum")]
    del Late.__tensor_function__                 # back to the default: no handler call
    assert type(t + 1) is Late and len(seen) == 3
    Late.__tensor_function__ = sk.disabled_tensor_function
    assert type(t + 1) is sk.Tensor and type(c.view(2)) is sk.Tensor
    del Late.__tensor_function__

    ops_seen = []

    def dispatch_handler(cls, func, types, args=(), kwargs=None):
        ops_seen.append(func.name)
        with sk.no_dispatch():
            return func(*args, **(kwargs or {}))

    LateChild.__tensor_dispatch__ = classmethod(dispatch_handler)
    assert type(c + 1) is LateChild and ops_seen == ["add"]
    assert (t + 1).tolist() == [2.0, 2.0] and ops_seen == ["add"]     # the parent: no handler
    del LateChild.__tensor_dispatch__
    c + 1
    assert ops_seen == ["add"]


def test_staticmethod_hooks_are_filed():
    """Hooks given as staticmethods (a form PyTorch accepts) are handlers like classmethods."""
    seen = []

    class Static(sk.Tensor):
        @staticmethod
        def __tensor_function__(func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return NotImplemented if func.__name__ == "neg" else "handled"

    t = sk.make_subclass(Static, sk.ones(2))
    assert t + 1 == "handled" and seen == ["__add__"]
    with pytest.raises(TypeError, match="Multiple dispatch failed"):
        t.neg()


class _General(sk.FunctionMode):
    """A forwarding function mode: every call takes handle_function's general path."""

    def __tensor_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


_METHOD_CALLS = [
    ("add", lambda a, b: a + b), ("mul", lambda a, b: a * b), ("sub", lambda a, b: a - b),
    ("radd", lambda a, b: 2.5 + a), ("rmul", lambda a, b: 3 * a), ("rsub", lambda a, b: 1 - a),
    ("scalar", lambda a, b: a * 0.5), ("transpose", lambda a, b: a.transpose(0, 1)),
    ("add_", lambda a, b: a.add_(b)), ("mul_", lambda a, b: a.mul_(2)),
    ("neg", lambda a, b: a.neg()), ("sum", lambda a, b: a.sum()),
    ("view", lambda a, b: a.view(-1)),
]


def _describe(res, a, b):
    return (type(res), res.tolist(), res.size(), res.stride(), res is a, res is b,
            res._base is a or res._base is a._base and res._base is not None,
            a._version, type(a), a.tolist())


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_METHOD_CALLS), st.sampled_from(["sub", "plain"]),
       st.sampled_from(["sub", "plain"]), st.lists(st.floats(-4, 4, width=32), min_size=6,
                                                   max_size=6))
def test_direct_subclass_operator_shortcut_matches_general_path(call, a_kind, b_kind, values):
    name, fn = call
    results = []
    for general in (False, True):
        base = sk.tensor(values).view(2, 3)
        other = sk.tensor(values[::-1]).view(2, 3)
        a = sk.make_subclass(Sub, base) if a_kind == "sub" else base
        b = sk.make_subclass(Sub, other) if b_kind == "sub" else other
        if general:
            with _General():
                res = fn(a, b)
        else:
            res = fn(a, b)
        results.append(_describe(res, a, b))
    assert results[0] == results[1], name


@pytest.mark.no_debug_asserts  # asserts the exact trace (the debug mode adds its own events)
def test_dispatch_subclass_path_versions_views_and_trace():
    w = Wrapper.wrap(sk.zeros(2, 2))
    v = w.t()
    assert v._base is w and v._vc is w._vc
    w.add_(1)
    assert w._version == 1 and v._version == 1
    events = []
    with sk.dispatch_trace(events.append):
        w.mul_(2)
    kinds = [(e.kind, e.depth) for e in events]
    assert kinds[0] == ("subclass", 0) and ("kernel", 1) in kinds
    assert w._version == 2 and w.elem.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_inference_write_checked_before_any_subclass_handler():
    calls = []

    class Spy(Wrapper):
        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            calls.append(func)
            return super().__tensor_dispatch__(func, types, args, kwargs)

    with sk.inference_mode():
        w = sk.make_wrapper_subclass(Spy, (2,))
    w.elem = sk.zeros(2)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
        w.add_(1)
    assert calls == []


@pytest.mark.no_debug_asserts  # asserts the exact list of declined handlers
def test_mode_then_subclass_and_declines_reported_in_order():
    order = []

    class Declines(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            order.append(("mode", types))
            return NotImplemented

    class NoWay(sk.Tensor):
        __tensor_function__ = sk.disabled_tensor_function

        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            order.append(("sub", types))
            return NotImplemented

    n = sk.make_wrapper_subclass(NoWay, (2,))
    with Declines(), pytest.raises(TypeError) as info:
        ops.add(n, 1)
    assert order == [("mode", (NoWay,)), ("sub", (NoWay,))]
    msg = str(info.value)
    assert msg.index("mode object") < msg.index("tensor subclass")


def test_returned_input_keeps_its_class_like_torch():
    torch = pytest.importorskip("torch", reason="torch is the oracle for __torch_function__")

    class TSub(torch.Tensor):
        pass

    ts, tplain = torch.ones(2).as_subclass(TSub), torch.zeros(2)
    tout = torch.add(ts, 1, out=tplain)
    s, plain = sk.make_subclass(Sub, sk.ones(2)), sk.zeros(2)
    out = sk.add(s, 1, out=plain)
    assert (type(tout) is TSub, type(tplain) is torch.Tensor, tout is tplain) == \
        (type(out) is Sub, type(plain) is sk.Tensor, out is plain)
    assert out.tolist() == tout.tolist() and plain._version == tplain._version


@pytest.mark.parametrize("inference", [False, True])
def test_written_out_constructors_match_make_tensor(inference):
    """``alloc`` (every op output) and ``make_wrapper_subclass`` build their Storage and Tensor
    field by field instead of calling ``Storage`` / ``make_tensor``; they must set exactly the
    same fields, so a field added to one is added to all."""
    from subclass_kit.kernels._iter_layout import alloc
    from subclass_kit.layout import Layout
    from subclass_kit.storage import CPU, META, Storage
    from subclass_kit.tensor import make_tensor

    def fields(t):
        own = {k for k in vars(t) if k not in ("_np", "_np_buf")}   # alloc's numpy cache
        return own, {s: getattr(t._storage, s) is not None for s in Storage.__slots__
                     if s != "__weakref__" and s not in ("_buffer",)}

    ctx = sk.inference_mode() if inference else sk.no_grad()
    with ctx:
        ref = make_tensor(Storage(32, CPU), Layout((2, 4), (4, 1), 0), sk.float32)
        ref_meta = make_tensor(Storage(32, META), Layout((2, 4), (4, 1), 0), sk.float32)
        fast = alloc((2, 4), (4, 1), sk.float32, CPU)
        strided = alloc((2, 4), (1, 2), sk.float32, CPU)
        meta = alloc((2, 4), (4, 1), sk.float32, META)
        wrapper = sk.make_wrapper_subclass(Wrapper, (2, 4), (4, 1), 0, dtype=sk.float32)
    for t in (fast, strided, meta, wrapper):
        assert fields(t)[0] == fields(ref)[0]
    assert fields(fast)[1] == fields(strided)[1] == fields(ref)[1]
    assert fields(meta)[1] == fields(ref_meta)[1]
    assert set(Storage.__slots__) == {"_buffer", "_nbytes", "device", "_resizable",
                                      "_dataless", "_shadow", "__weakref__"}
    for t in (fast, strided, meta, wrapper):
        assert t.is_inference() == inference
        assert (t._vc is None) == inference


@pytest.mark.parametrize("call", ["x + x", "x.mul(2)", "2 * x", "x.sum()", "x.view(-1)"])
@pytest.mark.parametrize("level", ["dispatch", "function"])
def test_handlers_get_their_own_kwargs_dict(call, level):
    """The operator shortcuts hand handlers a fresh kwargs dict per call (as PyTorch does): a
    handler changing it must not change later calls."""
    seen = []
    handled = sk.zeros(())      # a Tensor: what each op's schema returns

    class Scribble(sk.DispatchMode if level == "dispatch" else sk.FunctionMode):
        def handle(self, func, types, args=(), kwargs=None):
            seen.append(dict(kwargs))
            kwargs["scribbled"] = True
            return NotImplemented if len(seen) > 2 else handled

        __tensor_dispatch__ = __tensor_function__ = handle

    x = sk.ones(2, 2)
    with Scribble():
        assert eval(call) is handled
        assert eval(call) is handled
    assert seen == [{}, {}]
    assert isinstance(eval(call), sk.Tensor)   # no stray keyword reaches the kernel


def _function_hook_kinds(lib, base, disabled):
    """For four class shapes, whether ``__tensor/torch_function__`` ends up disabled."""
    tf, td = ("__torch_function__", "__torch_dispatch__") if lib == "torch" else \
        ("__tensor_function__", "__tensor_dispatch__")

    def handler(cls, func, types, args=(), kwargs=None):
        return NotImplemented

    only_dispatch = type("OnlyDispatch", (base,), {td: classmethod(handler)})
    default_dispatch = type("DefaultDispatch", (base,), {td: getattr(base, td)})
    own_function = type("OwnFunction", (only_dispatch,), {tf: classmethod(handler)})
    inherits_function = type("InheritsFunction", (own_function,), {td: classmethod(handler)})
    child = type("Child", (only_dispatch,), {})
    classes = (only_dispatch, default_dispatch, own_function, inherits_function, child)
    return [getattr(getattr(c, tf), "__func__", getattr(c, tf)) is disabled for c in classes]


def test_dispatch_only_subclass_gets_function_level_disabled_like_torch():
    """PyTorch 2.x disables ``__torch_function__`` of a class that overrides
    ``__torch_dispatch__`` and keeps the default ``__torch_function__``."""
    torch = pytest.importorskip("torch")
    ours = _function_hook_kinds("sk", sk.Tensor, sk.disabled_tensor_function.__func__)
    theirs = _function_hook_kinds("torch", torch.Tensor, torch._C._disabled_torch_function_impl)
    assert ours == theirs == [True, False, False, False, True]

    class Sd(sk.Tensor):
        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            with sk.no_dispatch():
                return func(*args, **(kwargs or {}))

    s = sk.make_subclass(Sd, sk.ones(2))
    assert type(s + 1) is sk.Tensor and type(s.sum()) is sk.Tensor


@pytest.mark.parametrize("where", ["first", "last", "keyword"])
@pytest.mark.parametrize("fn", ["cat", "stack"])
def test_subclass_anywhere_in_a_list_argument_takes_part_like_torch(where, fn):
    """A subclass inside a list argument (``cat([plain, sub])``, ``cat(tensors=[...])``) is
    found wherever it stands, as by PyTorch's ``__torch_function__`` overload search."""
    torch = pytest.importorskip("torch")

    def program(lib, base, make):
        hook = "__torch_function__" if lib is torch else "__tensor_function__"
        handled = type("Handled", (base,), {
            hook: classmethod(lambda cls, func, types, args=(), kwargs=None: "h")})
        default = type("Default", (base,), {})
        out = []
        for cls in (handled, default):
            sub, plain = make(cls, lib.ones(2)), lib.ones(2)
            tensors = [sub, plain] if where == "first" else [plain, sub]
            f = getattr(lib, fn)
            r = f(tensors=tensors) if where == "keyword" else f(tensors)
            out.append(r if isinstance(r, str) else type(r).__name__)
        return out

    ours = program(sk, sk.Tensor, sk.make_subclass)
    theirs = program(torch, torch.Tensor, lambda cls, t: t.as_subclass(cls))
    assert ours == theirs == ["h", "Default"]


_OPERATOR_PROGRAMS = ["s + 1", "1 + s", "s == 1", "s != 1", "s < 1", "s @ s", "s & s", "s ** 2",
                      "2 ** s", "s // 2", "1 - s", "s / 2", "-s", "s.add(1)"]


@pytest.mark.parametrize("program", _OPERATOR_PROGRAMS)
def test_operators_whose_handlers_all_decline_behave_like_torch(program):
    """Binary and comparison operators turn "all handlers declined" into NotImplemented, so
    Python raises its own "unsupported operand" TypeError (``==`` falls back to identity), as
    PyTorch's operators do; methods and unary operators raise the dispatch TypeError."""
    torch = pytest.importorskip("torch")

    def run(lib, base, make, hook):
        declines = type("Declines", (base,), {
            hook: classmethod(lambda cls, func, types, args=(), kwargs=None: NotImplemented)})
        s = make(declines, lib.ones(2))
        try:
            return ("value", eval(program))
        except TypeError as e:
            return ("TypeError", str(e).replace("Declines", "D") if "operand" in str(e)
                    or "not supported" in str(e) else "dispatch")

    ours = run(sk, sk.Tensor, sk.make_subclass, "__tensor_function__")
    theirs = run(torch, torch.Tensor, lambda cls, t: t.as_subclass(cls), "__torch_function__")
    assert ours == theirs


# -- redispatch_below_autograd's plain-kernel path ----------------------------------------------
def test_redispatch_below_autograd_matches_the_op_call():
    """The direct kernel path of ``redispatch_below_autograd`` (a plain op, plain operands,
    nothing intercepting) gives what ``op(...)`` gives; packets, keywords and modes take
    ``op()`` itself."""
    from subclass_kit.modes import LoggingMode
    x = sk.arange(6.0).view(2, 3)
    for op, args, kwargs in [(sk.ops.detach.default, (x,), {}), (sk.ops.detach, (x,), {}),
                             (sk.ops.t.default, (x,), {}), (sk.ops.add.Tensor, (x, x), {}),
                             (sk.ops.add.Tensor, (x, x), {"alpha": 2}),
                             (sk.ops.sum.dim_IntList, (x, [1]), {})]:
        got = sk.redispatch_below_autograd(op, args, kwargs)
        want = op(*args, **kwargs)
        assert got.shape == want.shape and got.stride() == want.stride()
        assert got.tolist() == want.tolist()
        assert (got._base is None) == (want._base is None)
        assert getattr(got, "_view_op", None) == getattr(want, "_view_op", None)
    with LoggingMode() as mode:
        sk.redispatch_below_autograd(sk.ops.detach.default, (x,), {})
    assert [r.op for r in mode.log] == ["sk.ops.detach.default"]
