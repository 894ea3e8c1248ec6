"""Pointwise ops against torch: values, result dtype, sizes and strides (TensorIterator's output
layout for transposed, expanded, sliced and channels-last inputs, broadcasting), Python-number
operands, error classes and texts, in-place and ``out=`` forms, and meta-vs-cpu agreement.

Every case runs the same call in both libraries on bit-identical inputs (``oracle.to_torch``);
if torch raises, subclass_kit must raise the same class with the same message (``torch.`` read
as ``sk.``) and leave its inputs and versions unchanged.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle of these tests")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_same, normalize_message, to_torch

import subclass_kit as sk

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
LAYOUTS = ("contig", "t", "expand", "step", "offset", "cl")


# -- building identical inputs ---------------------------------------------------------------
def _values(shape, dtype, rng, nonzero=False):
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        a = rng.random(n) > 0.5
    elif dtype == "uint8":
        a = rng.integers(1 if nonzero else 0, 12, n)
    elif dtype.startswith("int"):
        a = rng.integers(-6, 7, n)
        if nonzero:
            a[a == 0] = 3
    else:  # quarter grid: exact arithmetic, no rounding-direction ties between libraries
        a = rng.integers(-24, 25, n) / 4.0
        if nonzero:
            a[a == 0] = 1.5
    return a.astype(dtype).reshape(shape)


def make(shape, dtype="float32", layout="contig", seed=0, nonzero=False):
    """An sk tensor of ``shape`` whose strides follow ``layout`` (see LAYOUTS)."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    if layout == "t" and len(shape) >= 2:
        base = sk.from_numpy(_values(shape[::-1], dtype, rng, nonzero))
        return base.permute(*range(len(shape) - 1, -1, -1))
    if layout == "expand" and shape and shape[0] != 1:
        return sk.from_numpy(_values((1,) + shape[1:], dtype, rng, nonzero)).expand(*shape)
    if layout == "step" and shape:
        wide = shape[:-1] + (2 * shape[-1],)
        return sk.from_numpy(_values(wide, dtype, rng, nonzero))[..., ::2]
    if layout == "offset":
        flat = sk.from_numpy(_values((int(np.prod(shape)) + 3,), dtype, rng, nonzero))
        return flat[3:].view(*shape) if shape else flat[3]
    if layout == "cl" and len(shape) == 4:
        n, c, h, w = shape
        base = sk.from_numpy(_values((n, h, w, c), dtype, rng, nonzero))
        return base.permute(0, 3, 1, 2)
    return sk.from_numpy(_values(shape, dtype, rng, nonzero))


def outcome(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs), None
        except Exception as e:  # noqa: BLE001 - we compare whatever is raised
            return None, e


def _tt(x):
    return to_torch(x) if isinstance(x, sk.Tensor) else x


def resizable_torch(o):
    """A torch copy of ``o`` whose storage can grow (``to_torch`` wraps numpy memory)."""
    t = torch.empty_strided(tuple(o.shape), o.stride(), dtype=to_torch(o).dtype)
    return t.copy_(to_torch(o))


def check(sk_fn, torch_fn, *args, rtol=None, atol=None, **kwargs):
    """Run both; compare results (values, dtype, sizes, strides) or errors. A keyword ``out``
    is passed as the last positional argument of both functions."""
    targs = [_tt(a) for a in args]
    tkw = {k: _tt(v) for k, v in kwargs.items()}
    if "out" in kwargs:
        out = kwargs.pop("out")
        args, targs = args + (out,), targs + [resizable_torch(out)]
        tkw.pop("out")
    t_res, t_err = outcome(torch_fn, *targs, **tkw)
    before = [(a.numpy().copy(), a._version) for a in args if isinstance(a, sk.Tensor)
              and a.device.type == "cpu"]
    s_res, s_err = outcome(sk_fn, *args, **kwargs)
    if t_err is not None:
        assert s_err is not None, f"torch raised {t_err!r}, sk returned {s_res!r}"
        assert type(s_err).__name__ == type(t_err).__name__, (s_err, t_err)
        assert str(s_err) == normalize_message(str(t_err)), (str(s_err), str(t_err))
        after = [(a.numpy(), a._version) for a in args if isinstance(a, sk.Tensor)
                 and a.device.type == "cpu"]
        for (d0, v0), (d1, v1) in zip(before, after):
            assert v0 == v1 and (np.array_equal(d0, d1, equal_nan=True)), "failed op mutated"
        return None
    assert s_err is None, f"sk raised {s_err!r}, torch returned {t_res!r}"
    tol = {}
    if rtol is not None:
        tol = {"rtol": rtol, "atol": atol}
    assert_same(s_res, t_res, **tol)
    return s_res


# -- op tables -------------------------------------------------------------------------------
UNARY = ["abs", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
         "relu", "reciprocal", "sign", "floor", "ceil", "round", "logical_not", "bitwise_not",
         "erf"]
F = torch.nn.functional
UNARY_EXTRA = {
    "silu": (sk.silu, F.silu),
    "gelu": (sk.gelu, F.gelu),
    "gelu_tanh": (lambda x: sk.gelu(x, approximate="tanh"),
                  lambda x: F.gelu(x, approximate="tanh")),
    "clamp": (lambda x: sk.clamp(x, -1, 2), lambda x: torch.clamp(x, -1, 2)),
    "clamp_f": (lambda x: sk.clamp(x, min=-0.5), lambda x: torch.clamp(x, min=-0.5)),
    "clamp_max": (lambda x: x.clamp(max=1), lambda x: x.clamp(max=1)),
}
BINARY = ["add", "sub", "mul", "div", "remainder", "pow", "maximum", "minimum", "eq", "ne", "lt",
          "le", "gt", "ge", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
          "bitwise_xor", "floor_divide"]
NONZERO_RHS = {"remainder", "floor_divide", "div_floor", "div_trunc"}
BINARY_EXTRA = {
    "div_floor": (lambda a, b: sk.div(a, b, rounding_mode="floor"),
                  lambda a, b: torch.div(a, b, rounding_mode="floor")),
    "div_trunc": (lambda a, b: sk.div(a, b, rounding_mode="trunc"),
                  lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    "add_alpha": (lambda a, b: sk.add(a, b, alpha=2), lambda a, b: torch.add(a, b, alpha=2)),
    "sub_alpha": (lambda a, b: sk.sub(a, b, alpha=-3), lambda a, b: torch.sub(a, b, alpha=-3)),
}
FLOAT_TOL = {"float16": (2e-3, 2e-3)}


def _fns(name):
    if name in UNARY_EXTRA:
        return UNARY_EXTRA[name]
    if name in BINARY_EXTRA:
        return BINARY_EXTRA[name]
    return getattr(sk, name), getattr(torch, name)


def _tol(dtype):
    return FLOAT_TOL.get(dtype, (None, None))


# -- strategies ------------------------------------------------------------------------------
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def broadcast_pair(draw):
    a = draw(shapes)
    b = list(a[draw(st.integers(0, len(a))):])
    for i in range(len(b)):
        if draw(st.booleans()) and draw(st.booleans()):
            b[i] = 1
    if draw(st.booleans()):
        a, b = tuple(b), a
    return tuple(a), tuple(b)


def _layout_for(shape, layout):
    if layout == "cl" and len(shape) != 4:
        return "contig"
    return layout


# -- tests: every op x dtype on a plain input ------------------------------------------------
@pytest.mark.parametrize("name", UNARY + list(UNARY_EXTRA))
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_every_dtype(name, dtype):
    sk_fn, t_fn = _fns(name)
    check(sk_fn, t_fn, make((2, 3), dtype, seed=1), rtol=_tol(dtype)[0], atol=_tol(dtype)[1])


@pytest.mark.parametrize("name", BINARY + list(BINARY_EXTRA))
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_every_dtype_pair(name, dtype):
    sk_fn, t_fn = _fns(name)
    nz = name in NONZERO_RHS
    a = make((2, 3), dtype, seed=1)
    for other in DTYPES:
        b = make((3,), other, seed=2, nonzero=nz)
        check(sk_fn, t_fn, a, b, rtol=2e-3, atol=2e-3)
        check(sk_fn, t_fn, a, make((), other, seed=3, nonzero=nz), rtol=2e-3, atol=2e-3)


SCALARS = [True, False, 0, 2, -3, 300, -129, 2 ** 40, 1.5, -0.25, 1e10, float("inf")]


@pytest.mark.parametrize("name", BINARY + list(BINARY_EXTRA))
def test_binary_python_numbers(name):
    """Wrapped numbers: lowest promotion priority, wrap-around into integer dtypes."""
    sk_fn, t_fn = _fns(name)
    for dtype in DTYPES:
        x = make((4,), dtype, seed=4, nonzero=name in NONZERO_RHS)
        for s in SCALARS:
            check(sk_fn, t_fn, x, s, rtol=2e-3, atol=2e-3)
            check(sk_fn, t_fn, s, x, rtol=2e-3, atol=2e-3)


def _method(name):
    return lambda self, *a, **k: getattr(self, name)(*a, **k)


@pytest.mark.parametrize("name", BINARY + ["div_"])
def test_inplace_dtype_and_shape_errors(name):
    """``x.add_(y)``: the result must be castable to x's dtype and broadcast to x's shape."""
    name_ = name if name.endswith("_") else name + "_"
    if not hasattr(torch.Tensor, name_):
        pytest.skip(f"torch has no Tensor.{name_}")
    fn = _method(name_)
    for dtype in DTYPES:
        for other in ("bool", "int32", "float32", "float64"):
            check(fn, fn, make((2, 3), dtype, seed=5), make((3,), other, seed=6, nonzero=True))
        check(fn, fn, make((3,), dtype, seed=5), make((2, 3), dtype, seed=6, nonzero=True))
        check(fn, fn, make((2, 3), dtype, seed=5), 2.5)
        check(fn, fn, make((2, 3), dtype, seed=5, layout="expand"), 1)


@pytest.mark.parametrize("name", ["abs", "neg", "exp", "sqrt", "sign", "floor", "round",
                                  "bitwise_not", "logical_not", "sigmoid", "relu", "erf"])
def test_unary_inplace(name):
    fn = _method(name + "_")
    for dtype in DTYPES:
        check(fn, fn, make((2, 3), dtype, seed=7))
        check(fn, fn, make((3, 2), dtype, seed=7, layout="t"))


@pytest.mark.parametrize("name", ["add", "mul", "div", "eq", "maximum", "bitwise_and", "exp",
                                  "abs", "clamp", "where", "remainder", "floor_divide"])
def test_out_resize_and_dtype(name):
    """out=: resized with a warning when it had elements, dtype rules per op family."""
    x = make((2, 3), "float32", seed=8)
    y = make((2, 3), "int64", seed=9, nonzero=True)
    calls = {
        "exp": lambda lib, o: lib.exp(x if lib is sk else to_torch(x), out=o),
        "abs": lambda lib, o: lib.abs(x if lib is sk else to_torch(x), out=o),
        "clamp": lambda lib, o: lib.clamp(x if lib is sk else to_torch(x), 0, 1, out=o),
        "where": lambda lib, o: lib.where(*(a if lib is sk else to_torch(a)
                                            for a in (x > 0, x, y)), out=o),
    }
    for out_dtype in ("float32", "float64", "int64", "bool"):
        for out_shape in ((0,), (2, 3), (5,)):
            o = sk.zeros(out_shape, dtype=getattr(sk, out_dtype))
            if name in calls:
                call = calls[name]
                check(lambda o, c=call: c(sk, o), lambda o, c=call: c(torch, o), out=o)
            else:
                check(lambda a, b, o: getattr(sk, name)(a, b, out=o),
                      lambda a, b, o: getattr(torch, name)(a, b, out=o), x, y, out=o)
    # a transposed out of the right shape keeps its strides
    o = sk.zeros(3, 2).t()
    res = check(lambda a, b, o: sk.add(a, b, out=o), lambda a, b, o: torch.add(a, b, out=o),
                x, y, out=o)
    assert res is o and o.stride() == (1, 2)


def test_out_warns_when_resizing_nonempty():
    x = sk.ones(2, 3)
    o = sk.empty(5)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        sk.add(x, 1, out=o)
    assert o.shape == (2, 3) and o._version == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sk.add(x, 1, out=sk.empty(0))


def test_integer_division_by_zero_and_negative_powers():
    for fn in (lambda a, b: a // b, lambda a, b: a % b,
               lambda a, b: a.div(b, rounding_mode="trunc"), lambda a, b: a.pow(b),
               lambda a, b: a.floor_divide_(b), lambda a, b: a.remainder_(b)):
        for dtype in ("int8", "int32", "int64", "uint8"):
            a = make((4,), dtype, seed=12)
            check(fn, fn, a, sk.tensor([1, 0, 2, 3], dtype=getattr(sk, dtype)))
            check(fn, fn, a, 0)
            check(fn, fn, a, -2)
            check(fn, fn, a, sk.tensor([-1, -2, 0, 3], dtype=sk.int8))
    base = sk.tensor([0, -1, 1, -2, 2, 3])
    for e in (-1, -2, -3):
        check(lambda a, e=e: a ** sk.tensor(e), lambda a, e=e: a ** torch.tensor(e), base)
        check(lambda a, e=e: a ** e, lambda a, e=e: a ** e, base)
        check(lambda a, e=e: a.pow(float(e)), lambda a, e=e: a.pow(float(e)), base)
    check(lambda a: 2 ** a, lambda a: 2 ** a, sk.tensor([-1, 0, 3]))


def test_argument_errors():
    x = make((2, 3), "float32", seed=13)
    i = make((2, 3), "int32", seed=13)
    b = make((2, 3), "bool", seed=13)
    cases = [
        (lambda x, i, b: x.add(i, alpha=True), ()),
        (lambda x, i, b: i.add(i, alpha=1.5), ()),
        (lambda x, i, b: i.add(i, alpha=2 ** 40), ()),
        (lambda x, i, b: x.half().add(x.half(), alpha=1e6), ()),
        (lambda x, i, b: b - b, ()), (lambda x, i, b: b - 1, ()), (lambda x, i, b: 1 - b, ()),
        (lambda x, i, b: -b, ()), (lambda x, i, b: +b, ()), (lambda x, i, b: ~x, ()),
        (lambda x, i, b: x.clamp(), ()), (lambda x, i, b: i.clamp(0.5), ()),
        (lambda x, i, b: i.clamp_(0.5), ()), (lambda x, i, b: b.clamp(True), ()),
        (lambda x, i, b: b.clamp(max=True), ()),
        (lambda x, i, b: i.to(sk.uint8 if isinstance(i, sk.Tensor) else torch.uint8)
         .clamp(-1, 300), ()),
        (lambda x, i, b: x.div(x, rounding_mode="bad"), ()),
        (lambda x, i, b: b // b, ()), (lambda x, i, b: b % b, ()), (lambda x, i, b: b ** b, ()),
        (lambda x, i, b: b ** 1, ()), (lambda x, i, b: i.pow(200), ()),
        (lambda x, i, b: x & 1, ()), (lambda x, i, b: i | 1.5, ()),
        (lambda x, i, b: x.relu() if False else b.relu(), ()), (lambda x, i, b: b.abs(), ()),
        (lambda x, i, b: i.sqrt_(), ()), (lambda x, i, b: b.floor(), ()),
        (lambda x, i, b: x + "a", ()), (lambda x, i, b: x.add(x[:, :2]), ()),
        (lambda x, i, b: x.where(i, 0.0), ()),
        (lambda x, i, b: x.masked_fill(i > 0, 1.0) if False else x.masked_fill(i, 1.0), ()),
        (lambda x, i, b: i.masked_fill(b, 1e20), ()),
    ]
    for fn, _ in cases:
        check(fn, fn, x, i, b)
    for name in ("maximum", "logical_and"):
        check(lambda a, n=name: getattr(sk, n)(a, 1),
              lambda a, n=name: getattr(torch, n)(a, 1), x)
    check(lambda a: sk.eq(1, a), lambda a: torch.eq(1, a), x)
    check(lambda a: sk.exp(1), lambda a: torch.exp(1), x)


def test_where_and_masked_fill():
    for dtype in DTYPES:
        x = make((2, 3), dtype, seed=14)
        c = make((3,), "bool", seed=15)
        check(sk.where, torch.where, c, x, 0)
        check(sk.where, torch.where, c, 1.5, x)
        check(sk.where, torch.where, c, x, make((2, 1), "float64", seed=16))
        check(lambda x, m: x.masked_fill(m, 2), lambda x, m: x.masked_fill(m, 2), x, c)
        check(lambda x, m: x.masked_fill(m, -1), lambda x, m: x.masked_fill(m, -1), x, c)
        check(lambda x, m: x.masked_fill_(m, 1.5), lambda x, m: x.masked_fill_(m, 1.5), x, c)
    check(sk.where, torch.where, make((2, 3), "bool", seed=17), 1, 2)
    check(sk.where, torch.where, make((2, 3), "bool", seed=17), True, 2.5)
    x = make((3, 2), layout="t", seed=18)
    check(lambda x, m: x.masked_fill(m, 0.5), lambda x, m: x.masked_fill(m, 0.5), x,
          make((2, 1), "bool", seed=19))
    check(lambda x, m: x.masked_fill(m, sk.tensor(2.5) if isinstance(x, sk.Tensor)
                                     else torch.tensor(2.5)),
          lambda x, m: x.masked_fill(m, torch.tensor(2.5)), x, make((2, 3), "bool"))


# -- hypothesis: layouts, broadcasting, dtypes -----------------------------------------------
@settings(max_examples=60)
@given(name=st.sampled_from(UNARY + list(UNARY_EXTRA)), shape=shapes,
       dtype=st.sampled_from(DTYPES), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 99))
def test_unary_hypothesis(name, shape, dtype, layout, seed):
    sk_fn, t_fn = _fns(name)
    x = make(shape, dtype, _layout_for(shape, layout), seed)
    check(sk_fn, t_fn, x, rtol=_tol(dtype)[0], atol=_tol(dtype)[1])


@settings(max_examples=120)
@given(name=st.sampled_from(BINARY + list(BINARY_EXTRA)), pair=broadcast_pair(),
       dtypes=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)),
       layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)),
       seed=st.integers(0, 99))
def test_binary_hypothesis(name, pair, dtypes, layouts, seed):
    sk_fn, t_fn = _fns(name)
    a = make(pair[0], dtypes[0], _layout_for(pair[0], layouts[0]), seed)
    b = make(pair[1], dtypes[1], _layout_for(pair[1], layouts[1]), seed + 1,
             nonzero=name in NONZERO_RHS)
    check(sk_fn, t_fn, a, b, rtol=2e-3, atol=2e-3)


@settings(max_examples=60)
@given(name=st.sampled_from(BINARY + list(BINARY_EXTRA)), pair=broadcast_pair(),
       dtypes=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)),
       layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 99))
def test_meta_matches_cpu(name, pair, dtypes, layout, seed):
    """Meta tensors: same sizes, strides, dtype and errors as cpu (one rule per op)."""
    sk_fn, _ = _fns(name)
    a = make(pair[0], dtypes[0], _layout_for(pair[0], layout), seed)
    b = make(pair[1], dtypes[1], "contig", seed + 1, nonzero=True)
    cpu, cpu_err = outcome(sk_fn, a, b)
    meta, meta_err = outcome(sk_fn, a.to("meta"), b.to("meta"))
    if cpu_err is not None and str(cpu_err) != "ZeroDivisionError":
        assert type(meta_err) is type(cpu_err) and str(meta_err) == str(cpu_err)
        return
    if cpu_err is None:
        assert meta_err is None, meta_err
        assert meta.device.type == "meta"
        assert (meta.shape, meta.stride(), meta.dtype) == (cpu.shape, cpu.stride(), cpu.dtype)


def test_version_counter_and_identity():
    x = sk.ones(2, 3)
    y = x[0]
    assert y.add_(1) is y and x._version == 1 and y._version == 1
    x.mul_(2)
    x += 1
    assert x._version == 3
    with pytest.raises(RuntimeError):
        x.add_(sk.ones(3, 3))
    assert x._version == 3
    i = sk.ones(3, dtype=sk.int32)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i.floor_divide_(sk.tensor([1, 0, 1], dtype=sk.int32))
    assert i._version == 0 and i.tolist() == [1, 1, 1]


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "div_trunc", "div_floor"])
@pytest.mark.parametrize("shapes", [((0, 0), ()), ((0,), (1,)), ((2, 0), (2, 1)), ((2,), ())])
@pytest.mark.parametrize("form", ["functional", "out", "inplace"])
def test_integer_division_by_zero_only_raises_for_elements_computed(op, shapes, form):
    """PyTorch's integer kernels check the divisor per element they compute: an empty result
    raises nothing, a non-empty one "ZeroDivisionError" (out= and in-place forms too)."""
    def run(L):
        a = L.zeros(shapes[0], dtype=L.int64)
        b = L.zeros(shapes[1], dtype=L.int64)
        name, kwargs = op, {}
        if op.startswith("div_"):
            name, kwargs = "div", {"rounding_mode": op[4:]}
        try:
            if form == "inplace":
                getattr(a, name + "_")(b, **kwargs)
                return tuple(a.shape), a._version
            if form == "out":
                out = L.empty(shapes[0], dtype=L.int64)
                getattr(L, name)(a, b, out=out, **kwargs)
                return tuple(out.shape), out._version
            r = getattr(L, name)(a, b, **kwargs)
            return tuple(r.shape), r._version
        except RuntimeError as e:
            return str(e)
    assert run(sk) == run(torch)


def test_hot_path_results_are_fresh_and_contiguous():
    a, b = sk.rand(4, 4), sk.rand(4, 4)
    for out in (a + b, a * b, a - 1, a * 2.5, a / b, a < b):
        assert out.is_contiguous() and out._base is None
        assert out.untyped_storage() is not a.untyped_storage()
    np.testing.assert_allclose((a + b).numpy(), a.numpy() + b.numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["mul", "div", "add", "sub"])
def test_reduced_float_python_numbers_bit_for_bit(dtype, op):
    """A Python number as ``other`` of ``mul``/``div`` keeps its exact value (float32
    arithmetic, one rounding); given first, or to ``add``/``sub``, it is cast to the dtype
    first: bit for bit against torch, both positions."""
    values = [47.0, 1.5, 1000.0, 0.1, -3.3, 65000.0]
    for number in [1.001, 0.3, 3.7, 1e-3, -7, 1e10, 7e4]:
        for first in (False, True):
            def run(L):
                x = L.tensor(values, dtype=getattr(L, dtype))
                out = getattr(L, op)(number, x) if first else getattr(x, op)(number)
                return out.float().numpy()
            np.testing.assert_array_equal(run(sk), run(torch), err_msg=f"{number} {first}")
