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
7. the example zoo against dense references;
8. the names the function level reports (``func.__name__``, the all-declined error).
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


# -- 6. lift_fresh, and a pass-through wrapper over the op samples --------------------------------


def _wrap_tensors(args, kwargs, L, only_first):
    """Wrap the tensor arguments (the same object once); ``only_first``: just the first one."""
    seen = {}

    def w(x):
        if isinstance(x, (list, tuple)):
            return type(x)(w(y) for y in x)
        if not isinstance(x, (sk.Tensor, torch.Tensor)):
            return x
        if id(x) not in seen:
            if only_first and seen:
                return x
            seen[id(x)] = wrap(L, x)
        return seen[id(x)]
    return w(args), {k: w(v) for k, v in kwargs.items()}, list(seen.values())


def _observe(out, wrapped):
    """Per output: (wrapped?, is which input, shares which input's storage, _base is which
    input, sizes, strides, offset, version)."""
    rows = []
    for o in sweep._flat_outputs(out):
        if not sweep._is_tensor(o):
            rows.append(("value", type(o).__name__))
            continue
        key = sweep._storage_key(o.untyped_storage())
        rows.append((type(o) in (Wrapper, TorchWrapper),
                     next((i for i, t in enumerate(wrapped) if o is t), -1),
                     next((i for i, t in enumerate(wrapped)
                           if sweep._storage_key(t.untyped_storage()) == key), -1),
                     next((i for i, t in enumerate(wrapped) if o._base is t), -1),
                     tuple(o.shape), tuple(o.stride()), o.storage_offset(), version(o)))
    return rows


def _inner(x):
    return x.elem if type(x) in (Wrapper, TorchWrapper) else x


def wrapped_sweep_problems(op, sample, only_first) -> list:
    targs, tkw, _ = build(sample, "torch", "cpu", op)
    _, t_exc = sweep.run(sweep.call_torch, op, targs, tkw)
    if isinstance(t_exc, sweep.NoTorchOverload) or sweep._binding_error(t_exc):
        return []
    targs, tkw, _ = build(sample, "torch", "cpu", op)     # fresh: the call may have written
    twa, twk, twrapped = _wrap_tensors(targs, tkw, torch, only_first)
    t_out, t_exc = sweep.run(sweep.call_torch, op, twa, twk)
    sargs, skw, _ = build(sample, "sk", "cpu", op)
    swa, swk, swrapped = _wrap_tensors(sargs, skw, sk, only_first)
    s_out, s_exc = sweep.run(op, *swa, **swk)
    if t_exc is not None or s_exc is not None:
        if t_exc is None or s_exc is None or sweep.exc_kind(t_exc) != sweep.exc_kind(s_exc):
            return [f"sk {s_exc!r} vs torch {t_exc!r}"]
        return []
    problems = []
    a, b = _observe(s_out, swrapped), _observe(t_out, twrapped)
    if a != b:
        problems.append(f"outputs {a} vs torch {b}")
    values = sample.values and not entry_for(op).random
    problems += sweep.result_diffs([_inner(o) for o in sweep._flat_outputs(s_out)],
                                   [_inner(o) for o in sweep._flat_outputs(t_out)],
                                   check_values=values, check_strides=False)
    after = [(tuple(w.shape), w.stride(), w.storage_offset(), version(w))
             for w in swrapped], [(tuple(w.shape), w.stride(), w.storage_offset(), version(w))
                                  for w in twrapped]
    if after[0] != after[1]:
        problems.append(f"wrapped inputs after the call {after[0]} vs torch {after[1]}")
    # In-place random ops (``uniform_``) write random values into their inputs.
    problems += sweep.result_diffs([w.elem for w in swrapped], [w.elem for w in twrapped],
                                   check_values=values, check_strides=False)
    return problems


def test_lift_fresh_of_a_wrapper_is_no_view_like_torch():
    def program(L, log):
        w = wrap(L, L.zeros(3))
        out = (sk.ops if L is sk else torch.ops.aten).lift_fresh(w)
        log.append((out is w, out._base is w, shares(L, out, w)))
        out.add_(1)
        log.append((version(out), version(w)))
    same(program)


def _sweep_ops():
    # Factories take no tensor to wrap; ``requires_grad=`` is applied by torch's Python binding
    # (outside the op), so those samples are left to the op sweep.
    return [pytest.param(op, id=qualified(op)) for op in sweep.ALL_OPS
            if entry_for(op) is not None and "requires_grad" not in
            [a.name for a in op.schema.arguments]]


@pytest.mark.parametrize("op", _sweep_ops())
def test_pass_through_wrapper_matches_torch_wrapper(op):
    problems = []
    pairs = sweep.expanded_samples(op, entry_for(op))[:3]
    for sample, _ in pairs:
        for only_first in (False, True):
            found = wrapped_sweep_problems(op, sample, only_first)
            problems += [f"{sample!r} (only first wrapped: {only_first}): {p}" for p in found]
    assert not problems, f"{op}:\n  " + "\n  ".join(problems[:8])


# -- 7. the example zoo against dense references --------------------------------------------------
def test_diagonal_tensor_matches_dense_and_raises_like_it():
    from diagonal_tensor import diag_matrix
    diag = [1.0, -2.0, math.inf, math.nan]
    ours = diag_matrix(sk.tensor(diag)).to_dense()
    np.testing.assert_array_equal(np.array(ours.tolist()), torch.diag(torch.tensor(diag)).numpy())
    assert str(ours.tolist()[0][1]) == "0.0"                    # no -0.0 beside -2.0
    d, td = diag_matrix(sk.tensor([1.0, 2.0])), torch.diag(torch.tensor([1.0, 2.0]))
    for ours, theirs in ((lambda: d.transpose(0, 5), lambda: td.transpose(0, 5)),
                         (lambda: d @ sk.ones(2, 2, dtype=sk.float64),
                          lambda: td @ torch.ones(2, 2, dtype=torch.float64)),
                         (lambda: d @ diag_matrix(sk.ones(2, dtype=sk.float64)),
                          lambda: td @ torch.eye(2, dtype=torch.float64))):
        with pytest.raises(Exception) as want:
            theirs()
        with pytest.raises(type(want.value), match=None) as got:
            ours()
        assert str(got.value) == normalize_message(str(want.value))


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "bool"])
@pytest.mark.parametrize("reduction", ["sum", "amax", "amin"])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_masked_reductions_keep_the_plain_dtype(dtype, reduction, dim):
    from masked_tensor import masked_tensor
    data = np.array([[1, -3, 2], [4, 0, -5]]).astype(dtype)
    mask = np.array([[True, False, True], [False, False, True]])
    m = masked_tensor(sk.tensor(data), sk.tensor(mask))
    args = () if dim is None else (dim,)
    out = getattr(m, reduction)(*args)
    plain = getattr(torch.from_numpy(data), reduction)(*args)
    assert out.dtype.name == str(plain.dtype).replace("torch.", "")
    ref = getattr(np.ma, {"sum": "sum", "amax": "max", "amin": "min"}[reduction])(
        np.ma.array(data, mask=~mask), axis=dim)
    present = np.array(out.mask.tolist())
    assert (present == ~np.ma.getmaskarray(ref)).all()
    assert (np.array(out.data_.tolist())[present] == np.ma.getdata(ref)[present]).all()


def test_traced_program_with_device_and_infinite_literals_replays():
    from tracing_tensor import trace

    def f(x):
        return x.masked_fill(x > 2, -math.inf).to(sk.float64)

    x = sk.arange(4.0)
    tracer, (out,) = trace(f, x)
    assert "float('-inf')" in tracer.code()
    assert tracer.run(sk.arange(4.0))[0].tolist() == out.tolist() == [0.0, 1.0, 2.0, -math.inf]
    tracer, _ = trace(lambda t: t.to("meta").sum(), sk.ones(2))
    assert "sk.device('meta')" in tracer.code()
    assert tracer.run(sk.ones(2))[0].device == "meta"
    with pytest.raises(TypeError, match="output 0 is a Tensor, not a traced value"):
        trace(lambda t: sk.add(t, 1, out=sk.empty(0)), sk.ones(2))


# -- 8. names the function level reports ----------------------------------------------------------
CALLS = {"getitem": lambda L, x: x[0], "setitem": lambda L, x: x.__setitem__(0, 1.0),
         "float": lambda L, x: x.float(), "long": lambda L, x: x.long(),
         "where": lambda L, x: x.where(L.ones(3, dtype=L.bool), 0.0),
         "cat": lambda L, x: L.cat([x, x])}


@pytest.mark.parametrize("call", list(CALLS))
def test_function_level_names_like_torch(call):
    """The ``func`` a function mode sees has PyTorch's ``__name__``; when every subclass
    handler declines, the error names it as PyTorch's ``resolve_name`` does."""
    def program(L, log):
        base = sk.FunctionMode if L is sk else torch.overrides.TorchFunctionMode

        class Names(base):
            def handle(self, func, types, args=(), kwargs=None):
                if func.__name__ not in ("__get__", "__set__"):      # attribute access
                    log.append(func.__name__)
                return func(*args, **(kwargs or {}))
            __tensor_function__ = __torch_function__ = handle

        with Names():
            CALLS[call](L, L.arange(3.0))
        hook = "__tensor_function__" if L is sk else "__torch_function__"
        decline = {hook: classmethod(lambda cls, func, types, args=(), kwargs=None:
                                     NotImplemented)}
        A, B = type("A", (L.Tensor,), dict(decline)), type("B", (L.Tensor,), dict(decline))
        make = sk.make_subclass if L is sk else torch.Tensor._make_subclass
        x = make(A, L.arange(3.0))
        x.tag = make(B, L.ones(3))
        try:
            if call == "setitem":
                x[0] = x.tag[0]
            elif call == "cat":
                L.cat([x, x.tag])
            else:
                CALLS[call](L, x)
        except TypeError as e:
            log.append(normalize_message(str(e)).split(";")[0])
    same(program)
