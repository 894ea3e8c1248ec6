"""Protocol details ported code relies on, each compared with PyTorch 2.13 (issue 12, point 3):
``format(t, spec)`` and ``x in t``; ``Mode.push()``; a ``__tensor_dispatch__`` written without
``@classmethod``; the cast of a handler's result to the op's returns; DisableTensorFunction
and DisableTensorFunctionSubclass; ``func.overloadpacket`` / ``func._schema``, unknown
overloads and where a bad schema string fails.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import subclass_kit as sk  # noqa: E402


def _outcome(fn):
    """``("ok", value)`` or ``("raise", exception class name, message)``."""
    try:
        return ("ok", fn())
    except Exception as e:       # noqa: BLE001 (the class is what is compared)
        return ("raise", type(e).__name__, str(e))


def _both(m_fn):
    return _outcome(lambda: m_fn(torch)), _outcome(lambda: m_fn(sk))


# -- format ------------------------------------------------------------------------------------
@pytest.mark.parametrize("data,dtype", [(1.23456, "float32"), (-2.5, "float64"), (3, "int64"),
                                        (True, "bool"), (0.1, "float16")])
@pytest.mark.parametrize("spec", ["", ".2f", ".4f", ">10", "e", "+"])
def test_format_of_0d_tensor(data, dtype, spec):
    def run(m):
        return format(m.tensor(data, dtype=getattr(m, dtype)), spec)
    ours, theirs = _both(run)[1], _both(run)[0]
    if theirs[0] == "raise":
        assert ours[:2] == theirs[:2]
    else:
        assert ours == theirs


@pytest.mark.parametrize("spec", ["", ".2f"])
@pytest.mark.parametrize("make", [lambda m: m.tensor([1.5]), lambda m: m.zeros(2, 2),
                                  lambda m: m.empty((), device="meta")],
                         ids=["1d", "2d", "meta_0d"])
def test_format_of_other_tensors_is_object_format(spec, make):
    theirs, ours = _both(lambda m: format(make(m), spec))
    if spec:
        assert theirs == ours == ("raise", "TypeError",
                                  "unsupported format string passed to Tensor.__format__")
    else:
        assert theirs[0] == ours[0] == "ok"
        assert ours[1] == str(make(sk))


def test_format_in_fstring_and_of_subclass():
    loss = sk.tensor(0.123456)
    assert f"loss {loss:.4f}" == f"loss {torch.tensor(0.123456):.4f}" == "loss 0.1235"

    class S(sk.Tensor):
        pass

    s = sk.tensor(1.5).as_subclass(S)
    assert f"{s}" == str(s)                    # subclasses: object.__format__, as PyTorch
    with pytest.raises(TypeError, match="unsupported format string passed to S.__format__"):
        f"{s:.2f}"


def test_format_dispatches_detach_and_item():
    def stream(m):
        seen = []
        if m is torch:
            class Rec(TorchDispatchMode):
                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    seen.append(f"{func._overloadpacket.__name__}.{func._overloadname}")
                    return func(*args, **(kwargs or {}))
        else:
            class Rec(sk.DispatchMode):
                def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
                    seen.append(func.__name__)
                    return func(*args, **(kwargs or {}))
        t = m.tensor(2.0)
        with Rec():
            f"{t:.1f}"
        return seen

    assert stream(sk) == stream(torch) == ["detach.default", "_local_scalar_dense.default"]


# -- contains ----------------------------------------------------------------------------------
@pytest.mark.parametrize("element", [2.0, 5, True, 0, -1.5])
def test_contains_number(element):
    theirs, ours = _both(lambda m: element in m.tensor([[1.0, 2.0], [0.0, 4.0]]))
    assert theirs == ours


def test_contains_tensor_and_errors():
    theirs, ours = _both(lambda m: m.tensor([1, 9]) in m.tensor([[1, 2], [3, 4]]))
    assert theirs == ours == ("ok", True)
    for bad in ("a", None, [1.0], (1,)):
        theirs, ours = _both(lambda m: bad in m.tensor([1.0]))
        assert theirs[0] == "raise" and ours == theirs


# -- Mode.push ---------------------------------------------------------------------------------
@pytest.mark.parametrize("on_instance", [False, True])
def test_push_enters_a_fresh_mode_for_the_block(on_instance):
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    class TM(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class SM(sk.DispatchMode):
        pass

    for M, stack in ((TM, _get_current_dispatch_mode_stack), (SM, sk.get_mode_stack)):
        before = stack()        # (pytest --debug-asserts runs each test under a mode)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            pushed = M().push() if on_instance else M.push()
        assert [str(x.message) for x in w] == [
            "`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`"]
        assert stack() == before                # push() itself does not enter
        with pushed as m:
            assert stack() == before + [m] and type(m) is M
        assert stack() == before


# -- __tensor_dispatch__ without @classmethod ---------------------------------------------------
def _plain_hook_receivers(m):
    """What a plain-function dispatch hook gets as its first argument, for three calls."""
    seen = []
    base = torch.Tensor if m is torch else sk.Tensor

    def hook(self, func, types, args=(), kwargs=None):
        seen.append(("a" if self is a else "b" if self is b else type(self).__name__,
                     type(kwargs).__name__))
        return m.zeros(2)

    name = "__torch_dispatch__" if m is torch else "__tensor_dispatch__"
    W = type("W", (base,), {name: hook})
    make = torch.Tensor._make_wrapper_subclass if m is torch else sk.make_wrapper_subclass
    a, b = make(W, (2,), dtype=m.float32), make(W, (2,), dtype=m.float32)
    a + 1
    b + a
    m.cat([m.ones(2), a, b])
    return seen


def test_plain_function_dispatch_hook_gets_the_first_instance():
    assert _plain_hook_receivers(sk) == _plain_hook_receivers(torch) == [
        ("a", "dict"), ("b", "dict"), ("a", "dict")]


def test_plain_function_hook_assigned_after_class_creation():
    seen = []

    class W(sk.Tensor):
        pass

    def hook(self, func, types, args=(), kwargs=None):
        seen.append(self is w)
        return sk.zeros(2)

    W.__tensor_dispatch__ = hook
    w = sk.make_wrapper_subclass(W, (2,), dtype=sk.float32)
    w.neg()
    assert seen == [True]


def test_plain_function_tensor_function_hook_gets_the_instance():
    def run(m):
        seen = []
        base = torch.Tensor if m is torch else sk.Tensor
        off = torch._C.DisableTorchFunctionSubclass if m is torch else \
            sk.DisableTensorFunctionSubclass

        def hook(self, func, types, args=(), kwargs=None):
            seen.append(self is s)
            with off():
                return func(*args, **(kwargs or {}))

        name = "__torch_function__" if m is torch else "__tensor_function__"
        S = type("S", (base,), {name: hook})
        s = m.ones(2).as_subclass(S)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = (s + 1, m.add(s, 1))
        return seen, [type(o).__name__ for o in out]

    assert run(sk) == run(torch) == ([True, True], ["Tensor", "Tensor"])


# -- a handler's result is cast to the op's returns --------------------------------------------
_RESULTS = [
    ("add_float", lambda m, x: x + 1, "add.Tensor", 1.0),
    ("add_list", lambda m, x: x + 1, "add.Tensor", "list"),
    ("add_int", lambda m, x: x + 1, "add.Tensor", 3),
    ("add_bool", lambda m, x: x + 1, "add.Tensor", True),
    ("add_ndarray", lambda m, x: x + 1, "add.Tensor", "ndarray"),
    ("add_tuple", lambda m, x: x + 1, "add.Tensor", "tuple"),
    ("add_none", lambda m, x: x + 1, "add.Tensor", None),
    ("add_inplace_float", lambda m, x: x.clone().add_(1), "add_.Tensor", 1.0),
    ("split_tensor", lambda m, x: x.split(2), "split.Tensor", "tensor"),
    ("split_float", lambda m, x: x.split(2), "split.Tensor", 1.0),
    ("split_list_of_floats", lambda m, x: x.split(2), "split.Tensor", [1.0]),
    ("split_tuple_ok", lambda m, x: x.split(2), "split.Tensor", "tuple"),
    ("max_dim_float_in_tuple", lambda m, x: x.max(0), "max.dim", "tensor_and_float"),
    ("max_dim_list_ok", lambda m, x: x.max(0), "max.dim", "two_tensors"),
    ("item_str", lambda m, x: x[0].item(), "_local_scalar_dense.default", "s"),
    ("item_none", lambda m, x: x[0].item(), "_local_scalar_dense.default", None),
    ("item_tensor", lambda m, x: x[0].item(), "_local_scalar_dense.default", "tensor0d"),
]


def _result(m, kind):
    return {"list": lambda: [m.ones(1)], "ndarray": lambda: np.ones(2),
            "tuple": lambda: (m.ones(2), m.ones(2)), "tensor": lambda: m.ones(2),
            "tensor_and_float": lambda: (m.ones(()), 1.0),
            "two_tensors": lambda: [m.ones(()), m.ones(())],
            "tensor0d": lambda: m.ones(())}.get(kind, lambda: kind)()


@pytest.mark.parametrize("name,program,op,kind", _RESULTS, ids=[r[0] for r in _RESULTS])
def test_handler_result_is_cast_to_the_schema(name, program, op, kind):
    def run(m):
        if m is torch:
            class R(TorchDispatchMode):
                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    if f"{func._overloadpacket.__name__}.{func._overloadname}" == op:
                        return _result(m, kind)
                    return func(*args, **(kwargs or {}))
        else:
            class R(sk.DispatchMode):
                def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
                    if func.__name__ == op:
                        return _result(m, kind)
                    return func(*args, **(kwargs or {}))
        x = m.ones(4)
        with R():
            out = program(m, x)
        return type(out).__name__ if not isinstance(out, (m.Tensor, tuple)) else "ok"

    theirs, ours = _both(run)
    assert ours[:2] == theirs[:2]
    if theirs[0] == "raise":
        # "Unable to cast 1.0 to Tensor", "Cannot cast s to number"; list results: "Unable to
        # cast Python instance of type <class 'list'> to ..." (torch names a C++ type)
        head = theirs[2].split(" to ")[0].replace("torch.Tensor", "subclass_kit.tensor.Tensor")
        assert ours[2].startswith(head.replace("tensor(1.)", "tensor(1.)")), (ours, theirs)


def test_subclass_handler_result_is_cast_too():
    class W(sk.Tensor):
        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            return 1.0

    w = sk.make_wrapper_subclass(W, (2,), dtype=sk.float32)
    with pytest.raises(RuntimeError, match=r"^Unable to cast 1.0 to Tensor$"):
        w.neg()


# -- DisableTensorFunction / DisableTensorFunctionSubclass ---------------------------------------
def _function_level_log(m):
    log = []
    if m is torch:
        Mode, base = TorchFunctionMode, torch.Tensor
        off_all, off_sub = torch._C.DisableTorchFunction, torch._C.DisableTorchFunctionSubclass
        stack = torch.overrides._get_current_function_mode_stack
    else:
        Mode, base = sk.FunctionMode, sk.Tensor
        off_all, off_sub = sk.DisableTensorFunction, sk.DisableTensorFunctionSubclass
        stack = sk.get_function_mode_stack

    def mode_hook(self, func, types, args=(), kwargs=None):
        log.append("mode")
        return func(*args, **(kwargs or {}))

    def sub_hook(cls, func, types, args=(), kwargs=None):
        log.append("sub")
        return super(S, cls).__torch_function__(func, types, args, kwargs) if m is torch \
            else super(S, cls).__tensor_function__(func, types, args, kwargs)

    FM = type("FM", (Mode,), {("__torch_function__" if m is torch else "__tensor_function__"):
                              mode_hook})
    S = type("S", (base,), {("__torch_function__" if m is torch else "__tensor_function__"):
                            classmethod(sub_hook)})
    s = m.ones(2).as_subclass(S)

    def step(label, fn):
        out = fn()
        log.append((label, type(out).__name__))

    with FM():
        with off_all() as entered:
            step("all_off", lambda: s + 1)
            log.append(("entered", entered, len(stack())))
        with off_sub():
            step("sub_off", lambda: s + 1)
    with off_all():
        with FM():
            step("mode_inside_all_off", lambda: s + 1)
        with off_sub():
            pass
        step("nested_restores", lambda: s + 1)
    with off_sub():
        with FM():
            step("mode_inside_sub_off", lambda: m.add(s, 1))
    step("after", lambda: s + 1)
    return log


def test_disable_tensor_function_matches_torch():
    assert _function_level_log(sk) == _function_level_log(torch)


# -- op objects: overloadpacket, _schema, unknown overloads, schema parse errors ----------------
def test_overloadpacket_and_schema_spellings():
    op = sk.ops.add.out
    assert op.overloadpacket is op._overloadpacket is sk.ops.add
    assert isinstance(sk.ops.add, sk.OpOverloadPacket) and not isinstance(sk.ops.add, sk.OpOverload)
    assert op._schema is op.schema and op._overloadname == "out"
    assert str(op._schema) == str(torch.ops.aten.add.out._schema).replace("aten::", "")
    assert sk.ops.mul.Tensor.overloadpacket is sk.ops.mul
    assert (sk.ops.mul.Tensor == sk.ops.mul) is (torch.ops.aten.mul.Tensor == torch.ops.aten.mul)


def _packet_error(get):
    with pytest.raises(AttributeError) as info:
        get()
    e = info.value
    return type(e), str(e).replace("sk.ops.", "aten.").split(" (its overloads")[0], e.name


@pytest.mark.parametrize("op,attr", [("add", "nosuch"), ("transpose", "default"),
                                     ("sum", "dim_int_list"), ("add", "tags")])
def test_unknown_overload_raises_attribute_error(op, attr):
    """PyTorch's fact, "The underlying op of 'aten.add' has no overload name 'nosuch'" (ours
    then lists the overloads); ``.default`` exists only when the op has that overload."""
    ours = _packet_error(lambda: getattr(getattr(sk.ops, op), attr))
    assert ours == _packet_error(lambda: getattr(getattr(torch.ops.aten, op), attr))
    with pytest.raises(AttributeError) as info:
        getattr(getattr(sk.ops, op), attr)
    assert info.value.obj is getattr(sk.ops, op)          # Python's "Did you mean" hint
    for name in getattr(sk.ops, op).overloads():
        assert f" {name}" in str(info.value)


def test_packet_repr_dir_and_names():
    for name in ("add", "sum", "transpose"):
        ours, theirs = getattr(sk.ops, name), getattr(torch.ops.aten, name)
        assert repr(ours) == repr(theirs).replace("aten.", "sk.ops.")
        assert str(ours) == str(theirs).replace("aten.", "sk.ops.")
        assert ours.__name__ == theirs.__name__ == name
        assert set(ours.overloads()) <= set(dir(ours))    # for Python's hint
        assert set(theirs.overloads()) <= set(dir(theirs))
        assert set(ours.overloads()) <= set(theirs.overloads())
        for ov in ours.overloads():
            assert getattr(ours, ov).overloadpacket is ours
    assert sk.ops.sum.default is sk.ops.sum._overloads["default"]
    assert sk.ops.add._qualified_op_name == "add"         # torch: "aten::add" (no aten here)


def test_packet_call_runs_its_default_overload():
    x, y = sk.tensor([1.0, 2.0]), sk.tensor([3.0, 4.0])
    tx, ty = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    assert sk.ops.add(x, y, alpha=2).tolist() == torch.ops.aten.add(tx, ty, alpha=2).tolist()
    assert sk.ops.sum(x).item() == torch.ops.aten.sum(tx).item()
    seen = []

    class Rec(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Rec():
        sk.ops.add(x, y)
        sk.ops.sum(x)
    assert seen == [sk.ops.add.Tensor, sk.ops.sum.default]
    # a bad call fails as the overload's own call does (RuntimeError, as torch's packet)
    with pytest.raises(RuntimeError) as packet_error:
        sk.ops.add(x)
    with pytest.raises(RuntimeError) as overload_error:
        sk.ops.add.Tensor(x)
    assert str(packet_error.value) == str(overload_error.value)
    with pytest.raises(RuntimeError, match="missing value for argument 'other'"):
        torch.ops.aten.add(tx)


def test_packet_attributes_belong_to_overloads():
    with pytest.raises(AttributeError, match="set 'decomposition' on one of its overloads"):
        sk.ops.add.decomposition = None
    assert sk.ops.add.Tensor.decomposition is None


# (schema, column, token, whether PyTorch's parser marks the same column)
@pytest.mark.parametrize("text,column,token,torch_marks_it", [
    ("foo(Tensr x) -> Tensor", 5, "Tensr", True),
    ("foo(Tensor x,) -> Tensor", 13, ",", False),        # torch marks the ")" after it
    ("foo(Tensor x -> Tensor", 14, "->", True),
    ("foo(Tensor x=1) -> Tensor", 14, "1", True),
    ("foo(Tensor x, int y=1, int z) -> Tensor", 28, "z", False),   # torch: internal assert
    ("foo(Tensor x, Tensor x) -> Tensor", 22, "x", False),         # torch accepts it
    ("foo(Tensor(a|) x) -> Tensor", 11, "(a|)", False),
    ("foo(int in) -> Tensor", 9, "in", True),
    ("foo(Tensor x) -> (Tensor, Tnsor)", 27, "Tnsor", True),
    ("foo Tensor", 5, "T", False),
])
def test_schema_parse_error_says_where(text, column, token, torch_marks_it):
    message = str(_outcome(lambda: sk.parse_schema(text))[2])
    assert _outcome(lambda: sk.parse_schema(text))[1] == "ValueError"
    assert f"at column {column} ({token!r})" in message
    lines = message.splitlines()
    assert lines[-2] == text
    assert lines[-1] == " " * (column - 1) + "~" * len(token) + " <--- HERE"
    if torch_marks_it:
        with pytest.raises(RuntimeError) as theirs:
            torch._C.parse_schema(text)
        marker = str(theirs.value).rstrip("\n").splitlines()[-1]
        assert marker.index("~") == column - 1
    with pytest.raises(ValueError, match="column"):
        sk.library.define(text.replace("foo", "protocol_test::foo", 1))
