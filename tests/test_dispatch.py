"""Mode and subclass semantics of the two dispatch levels (SEMANTICS.md §5)."""

import threading

import pytest

import subclass_kit as sk
from oracle import Wrapper
from subclass_kit import ops


class Recorder(sk.DispatchMode):
    def __init__(self, log, tag, decline=False):
        self.log, self.tag, self.decline = log, tag, decline

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append((self.tag, func.__name__, types))
        if self.decline:
            return NotImplemented
        return func(*args, **(kwargs or {}))


def test_innermost_mode_first_and_runs_below_itself():
    log = []
    x = sk.ones(2)
    with Recorder(log, "outer"):
        with Recorder(log, "inner"):
            x + 1
    assert [e[0] for e in log] == ["inner", "outer"]
    assert all(e[1] == "add.Tensor" for e in log)


def test_handler_calls_go_to_next_mode_and_reentry_with_self():
    log = []

    class Reenter(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            if func is ops.add.Tensor and len(log) < 3:
                with self:
                    return ops.mul(args[0], 2)
            return func(*args, **(kwargs or {}))

    with Reenter():
        sk.ones(2) + 1
    assert log[-2:] == ["add.Tensor", "mul.Tensor"]


@pytest.mark.no_debug_asserts  # asserts sk.get_mode_stack() == []
def test_declining_mode_passes_to_next_and_all_decline_is_type_error():
    log = []
    x = sk.ones(2)
    with Recorder(log, "a"):
        with Recorder(log, "b", decline=True):
            y = x + 1
    assert [e[0] for e in log] == ["b", "a"] and y.tolist() == [2.0, 2.0]
    with Recorder([], "c", decline=True) as m:
        with pytest.raises(TypeError, match="all __tensor_dispatch__ handlers returned"
                                            " NotImplemented") as info:
            sk.add(x, 1)    # operators turn it into Python's "unsupported operand" error
    assert "mode object" in str(info.value) and "add" in str(info.value)
    assert sk.get_mode_stack() == []
    del m


@pytest.mark.no_debug_asserts  # asserts the exact mode stack
def test_exception_restores_stack_and_out_of_order_exit_raises():
    class Boom(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError("boom")

    a = Recorder([], "a")
    with a:
        with pytest.raises(ValueError):
            with Boom():
                sk.ones(2) + 1
        assert sk.get_mode_stack() == [a]
    assert sk.get_mode_stack() == []
    m1, m2 = Recorder([], "1"), Recorder([], "2")
    m1.__enter__()
    m2.__enter__()
    with pytest.raises(RuntimeError, match="out of order"):
        m1.__exit__(None, None, None)
    m2.__exit__(None, None, None)
    m1.__exit__(None, None, None)
    assert sk.get_mode_stack() == []


def test_mode_stacks_are_thread_local():
    seen = []

    def worker():
        seen.append(len(sk.get_mode_stack()))
        sk.ones(2) + 1

    with Recorder([], "main"):
        th = threading.Thread(target=worker)
        th.start()
        th.join()
    assert seen == [0]


def test_wrapper_subclass_aliasing_and_inplace_identity():
    w = Wrapper.wrap(sk.arange(6.).view(2, 3))
    v = w[0] if hasattr(sk.Tensor, "__getitem__") else w.select(0, 0)
    assert isinstance(v, Wrapper) and v._base is w
    assert v.untyped_storage() is w.untyped_storage()
    assert w.add_(1) is w and w._version == 1 and v._version == 1
    assert w.elem.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    w.t_()
    assert w.shape == (3, 2) and w.elem.shape == (3, 2) and w.stride() == (1, 3)
    assert w.data_ptr() == 0
    with pytest.raises(RuntimeError, match="invalid python storage"):
        w.untyped_storage().data_ptr()
    with pytest.raises(RuntimeError, match=r"\.numpy\(\) is not supported for tensor subclasses"):
        w.numpy()


def test_wrapper_needs_dispatch_and_recursion_is_named():
    class NoTD(sk.Tensor):
        pass

    with pytest.raises(TypeError, match="NoTD must define __tensor_dispatch__"):
        sk.make_wrapper_subclass(NoTD, (2,))

    class Loop(sk.Tensor):
        __tensor_function__ = sk.disabled_tensor_function

        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    lp = sk.make_wrapper_subclass(Loop, (2,))
    with pytest.raises(RuntimeError, match="Loop.__tensor_dispatch__ re-entered itself"):
        lp + 1


def test_subclass_order_nep18():
    order = []

    def make(name, base=sk.Tensor):
        def handler(cls, func, types, args=(), kwargs=None):
            order.append(cls.__name__)
            return NotImplemented if cls.__name__ != "Last" else sk.ones(1)
        return type(name, (base,), {"__tensor_dispatch__": classmethod(handler),
                                    "__tensor_function__": sk.disabled_tensor_function})

    A = make("A")
    Child = make("Child", A)
    B = make("B")
    a = sk.make_subclass(A, sk.ones(1))
    c = sk.make_subclass(Child, sk.ones(1))
    b = sk.make_subclass(B, sk.ones(1))
    with pytest.raises(TypeError, match="tensor subclass"):
        ops.add(a, b)
    assert order == ["A", "B"]
    order.clear()
    with pytest.raises(TypeError):
        ops.add(a, c)
    assert order == ["Child", "A"]


def test_direct_subclass_keeps_class_and_shares_counter():
    class Param(sk.Tensor):
        pass

    data = sk.zeros(2, 3)
    p = sk.make_subclass(Param, data, requires_grad=True)
    assert p.requires_grad and p.untyped_storage() is data.untyped_storage()
    for out in (p + 1, p.sum() if hasattr(sk.Tensor, "sum") else p * 2, p.t(), p.detach()):
        assert type(out) is Param
    p.detach().add_(1)
    assert data._version == 1 and p._version == 1
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        sk.make_subclass(int, data)


def test_function_mode_sees_public_calls_and_types():
    log = []

    class FnLog(sk.FunctionMode):
        def __tensor_function__(self, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return func(*args, **(kwargs or {}))

    with FnLog():
        x = sk.ones(2, 3)
        x.t() + 1
    assert log[:3] == ["ones", "t", "__add__"]


def test_no_dispatch_skips_modes_and_subclasses():
    log = []
    w = Wrapper.wrap(sk.ones(2))
    with Recorder(log, "m"):
        with sk.no_dispatch():
            y = sk.ones(2) + 1
    assert log == [] and y.tolist() == [2.0, 2.0]
    assert isinstance(w, Wrapper)


def test_custom_op_dispatches_like_builtin():
    op = sk.library.define("testlib::scale(Tensor self, float k) -> Tensor")

    @sk.library.impl(op, "cpu")
    def _cpu(self, k):
        return self * k

    @sk.library.impl(op, "meta")
    def _meta(self, k):
        return sk.empty(self.shape, dtype=self.dtype, device="meta")

    assert sk.ops.testlib.scale.default is op and op.overloadpacket is sk.ops.testlib.scale
    log = []
    ones = sk.ones(2)
    with Recorder(log, "m"):
        out = op(ones, 3.0)
    assert out.tolist() == [3.0, 3.0]
    assert log[0][1] == "scale.default"
    assert op(sk.empty(4, device="meta"), 2.0).device == "meta"
    inplace = sk.library.define("testlib::bump_(Tensor(a!) self) -> Tensor(a!)")

    @sk.library.impl(inplace, "cpu")
    def _bump(self):
        return self.add_(1)  # an inner in-place op: runs below, so one bump in total

    x = sk.zeros(2)
    inplace(x)
    assert x._version == 1 and x.tolist() == [1.0, 1.0]


def test_pytree_round_trip():
    from collections import namedtuple
    P = namedtuple("P", "a b")
    tree = {"x": [1, (2, 3)], "y": P(4, None)}
    leaves, spec = sk.pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, None]
    assert sk.pytree.tree_unflatten(leaves, spec) == tree
    assert sk.pytree.tree_map(lambda v: v, tree) == tree
    with pytest.raises(ValueError):
        sk.pytree.tree_unflatten([1], spec)


def test_wrapper_data_under_no_dispatch_is_a_clear_error():
    """An op on a wrapper under ``no_dispatch`` reaches a kernel with the wrapper's data-less
    storage: a RuntimeError naming the class and the way out (PyTorch segfaults there), while a
    meta tensor keeps PyTorch's NotImplementedError; nothing is written or bumped."""
    class Empty(sk.Tensor):
        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    w = sk.make_wrapper_subclass(Empty, (2,))
    with sk.no_dispatch():
        with pytest.raises(RuntimeError, match="Cannot access the data of a Empty without"):
            w + 1
        with pytest.raises(RuntimeError, match="through its __tensor_dispatch__"):
            w.add_(1)
    assert w._version == 0
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        sk.empty(2, device="meta")._array()


def test_no_dispatch_keeps_the_mode_stack_like_torch():
    """``no_dispatch`` bypasses modes without hiding or replacing their stack (PyTorch's
    ``_DisableTorchDispatch``); a mode entered inside outlives the block; an instance nests."""
    torch = pytest.importorskip("torch")
    from torch.utils._mode_utils import no_dispatch as torch_no_dispatch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack as torch_stack

    def program(lib, base, no_dispatch, stack):
        seen = []

        class Seen(base):
            def handle(self, func, types, args=(), kwargs=None):
                seen.append(func.__name__)
                return func(*args, **(kwargs or {}))

            __torch_dispatch__ = __tensor_dispatch__ = handle

        outer, inner, nd = Seen(), Seen(), no_dispatch()
        start = len(stack())        # the debug-assert mode may already be on the stack
        with outer:
            with nd:
                depths = [len(stack())]
                with nd:
                    lib.ones(2) + 1
                depths.append(len(stack()))
                inner.__enter__()
            depths.append(len(stack()))
            lib.ones(1)
            inner.__exit__(None, None, None)
        depths.append(len(stack()))
        return [d - start for d in depths], len(seen) > 0

    ours = program(sk, sk.DispatchMode, sk.no_dispatch, sk.get_mode_stack)
    theirs = program(torch, TorchDispatchMode, torch_no_dispatch, torch_stack)
    assert ours == theirs == ([1, 1, 2, 0], True)


def test_registration_apis_take_a_packet_as_the_overload_it_calls():
    """A packet given where an overload is meant stands for the overload its call runs (its
    ``default``, else the first defined), as ``"ns::name"`` does in ``sk.library``."""
    op = sk.library.define("pktlib::twice(Tensor x) -> Tensor")
    scaled = sk.library.define("pktlib::twice.scaled(Tensor x, float k) -> Tensor")
    packet = sk.ops.pktlib.twice
    assert op.overloadpacket is scaled.overloadpacket is packet
    assert packet.overloads() == ["default", "scaled"] and packet.default is op
    sk.library.impl(packet, "cpu", lambda x: x * 2)
    sk.library.register_fake(packet, lambda x: sk.empty_like(x))
    assert set(op._kernels) == {"cpu", "meta"} and not scaled._kernels
    assert sk.get_kernel(packet, "cpu") is sk.get_kernel(op, "cpu")
    assert packet(sk.ones(2)).tolist() == [2.0, 2.0]
    assert packet(sk.ones(2, device="meta")).shape == (2,)

    @sk.register_kernel(packet.scaled, "cpu")
    def _scaled(x, k):
        return x * k

    assert packet.scaled(sk.ones(2), 3.0).tolist() == [3.0, 3.0]
    with pytest.raises(AttributeError, match="set 'decomposition' on one of its overloads"):
        packet.decomposition = None
