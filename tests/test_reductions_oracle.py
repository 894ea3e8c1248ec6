"""Reductions against torch: values, dtype, sizes and (contiguous) strides for every reduction
over ``dim`` (int, tuple, negative, empty), ``keepdim``, ``dtype=``, empty inputs, NaN, ties,
``out=`` and meta tensors; errors must match torch's class and text.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle of these tests")
pytest.importorskip("hypothesis")
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_same, normalize_message, to_torch

import subclass_kit as sk

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
LAYOUTS = ("contig", "t", "expand", "step", "cl")


def make(shape, dtype="float32", layout="contig", seed=0, special=False):
    """An sk tensor of ``shape`` laid out as ``layout``; ``special`` mixes in NaN/inf/ties."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)

    def values(shp):
        n = int(np.prod(shp)) if shp else 1
        if dtype == "bool":
            a = rng.random(n) > 0.4
        elif dtype == "uint8":
            a = rng.integers(0, 5, n)
        elif dtype.startswith("int"):
            a = rng.integers(-3, 4, n)
        else:
            a = rng.integers(-8, 9, n) / 4.0
            if special and n:
                a[rng.integers(0, n, max(1, n // 4))] = rng.choice([np.nan, np.inf, -np.inf])
        return a.astype(dtype).reshape(shp)

    if layout == "t" and len(shape) >= 2:
        return sk.from_numpy(values(shape[::-1])).permute(*range(len(shape) - 1, -1, -1))
    if layout == "expand" and shape and shape[0] != 1:
        return sk.from_numpy(values((1,) + shape[1:])).expand(*shape)
    if layout == "step" and shape:
        return sk.from_numpy(values(shape[:-1] + (2 * shape[-1],)))[..., ::2]
    if layout == "cl" and len(shape) == 4:
        n, c, h, w = shape
        return sk.from_numpy(values((n, h, w, c))).permute(0, 3, 1, 2)
    return sk.from_numpy(values(shape))


def _tt(x):
    if isinstance(x, sk.Tensor):
        return to_torch(x)
    if isinstance(x, sk.dtype):
        return getattr(torch, x.name)
    if isinstance(x, tuple) and x and isinstance(x[0], sk.Tensor):
        return tuple(_resizable(o) for o in x)
    return x


def _resizable(o):
    t = torch.empty_strided(tuple(o.shape), o.stride(), dtype=to_torch(o).dtype)
    return t.copy_(to_torch(o))


def outcome(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return fn(*args, **kwargs), None, [str(w.message) for w in caught]
        except Exception as e:  # noqa: BLE001 - we compare whatever is raised
            return None, e, [str(w.message) for w in caught]


def check(fn, *args, tfn=None, rtol=None, atol=None, **kwargs):
    """``fn(lib_tensor, ...)`` on both sides (``tfn`` for torch if the spelling differs)."""
    tfn = tfn or fn
    targs = [_tt(a) for a in args]
    tkw = {k: (_resizable(v) if k == "out" and isinstance(v, sk.Tensor) else _tt(v))
           for k, v in kwargs.items()}
    t_res, t_err, t_warn = outcome(tfn, *targs, **tkw)
    s_res, s_err, s_warn = outcome(fn, *args, **kwargs)
    if t_err is not None:
        assert s_err is not None, f"torch raised {t_err!r}, sk returned {s_res!r}"
        assert type(s_err).__name__ == type(t_err).__name__, (s_err, t_err)
        assert str(s_err) == normalize_message(str(t_err)), (str(s_err), str(t_err))
        return None
    assert s_err is None, f"sk raised {s_err!r}, torch returned {t_res!r}"
    t_dof = [w for w in t_warn if "degrees of freedom" in w]
    s_dof = [w for w in s_warn if "degrees of freedom" in w]
    assert [w.split(" (Triggered")[0] for w in t_dof] == s_dof
    tol = {"rtol": rtol, "atol": atol} if rtol is not None else {}
    if isinstance(t_res, tuple):
        assert type(s_res).__name__ == type(t_res).__name__
        assert (s_res.values, s_res.indices) == tuple(s_res)
        t_res, s_res = tuple(t_res), tuple(s_res)
    assert_same(s_res, t_res, **tol)
    return s_res


def _tol(dtype):
    return (3e-3, 3e-3) if dtype == "float16" else (1e-5, 1e-5)


# -- op table: name -> call(x, dim, keepdim) ------------------------------------------------
def _dims_call(name, **extra):
    def call(x, dim, keepdim):
        if dim is None:
            return getattr(x, name)(**extra) if not keepdim else getattr(x, name)(
                None, True, **extra)
        return getattr(x, name)(dim, keepdim=keepdim, **extra)
    return call


def _single_dim(name):
    def call(x, dim, keepdim):
        if dim is None:
            return getattr(x, name)()
        d = dim if isinstance(dim, int) else (dim[0] if dim else 0)
        return getattr(x, name)(d, keepdim=keepdim)
    return call


def _norm(p):
    def call(x, dim, keepdim):
        return x.norm(p=p, dim=dim, keepdim=keepdim)
    return call


REDUCTIONS = {
    "sum": _dims_call("sum"),
    "mean": _dims_call("mean"),
    "prod": _single_dim("prod"),
    "var": lambda x, d, k: x.var(d, keepdim=k),
    "std0": lambda x, d, k: x.std(d, keepdim=k, correction=0),
    "amax": lambda x, d, k: x.amax(() if d is None else d, keepdim=k),
    "amin": lambda x, d, k: x.amin(() if d is None else d, keepdim=k),
    "argmax": _single_dim("argmax"),
    "argmin": _single_dim("argmin"),
    "all": lambda x, d, k: x.all(d, keepdim=k) if d is not None or k else x.all(),
    "any": lambda x, d, k: x.any(d, keepdim=k) if d is not None or k else x.any(),
    "logsumexp": lambda x, d, k: x.logsumexp(() if d is None else d, keepdim=k),
    "norm2": _norm(2),
    "norm1": _norm(1),
    "norm_inf": _norm(math.inf),
    "norm3": _norm(3.0),
    "max": _single_dim("max"),
    "min": _single_dim("min"),
    "cumsum": lambda x, d, k: x.cumsum(0 if d is None else d if isinstance(d, int)
                                       else (d[0] if d else 0)),
}


# -- every reduction x dtype -----------------------------------------------------------------
@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(name, dtype):
    call = REDUCTIONS[name]
    rtol, atol = _tol(dtype)
    x = make((3, 4), dtype, seed=1)
    for dim, keepdim in ((None, False), (None, True), (1, False), (-2, True), ((0, 1), False),
                         ([], False), ((1, -2), True)):
        check(call, x, dim, keepdim, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_empty_zero_dim_and_scalar_inputs(name):
    call = REDUCTIONS[name]
    for shape in ((0,), (0, 4), (3, 0), ()):
        x = make(shape, "float32", seed=2)
        for dim, keepdim in ((None, False), (0, False), (-1, True), (0, True)):
            check(call, x, dim, keepdim)


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "argmax", "argmin", "sum",
                                  "logsumexp", "norm_inf", "var"])
def test_nan_inf_and_ties(name):
    call = REDUCTIONS[name]
    for seed in range(4):
        x = make((4, 5), "float32", seed=seed, special=True)
        for dim in (None, 0, 1):
            check(call, x, dim, False)
    ties = sk.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 0.0]])
    for dim in (None, 0, 1):
        check(call, ties, dim, False)


def test_dtype_argument():
    for dtype in DTYPES:
        x = make((2, 3), dtype, seed=3)
        for target in (sk.int32, sk.int64, sk.float16, sk.float64, sk.bool):
            for fn in (lambda a, d: a.sum(dtype=d), lambda a, d: a.sum(1, dtype=d),
                       lambda a, d: a.prod(dtype=d), lambda a, d: a.prod(0, dtype=d),
                       lambda a, d: a.mean(dtype=d), lambda a, d: a.mean((0, 1), True, dtype=d),
                       lambda a, d: a.cumsum(1, dtype=d)):
                check(fn, x, target, rtol=3e-3, atol=3e-3)
    x = make((2, 3), "float32", seed=4)
    for target in (sk.float64, sk.float16, sk.int64):
        check(lambda a, d: sk.norm(a, dtype=d), x, target,
              tfn=lambda a, d: torch.linalg.vector_norm(a, dtype=d))


def test_argument_errors():
    x = make((2, 3), seed=5)
    i = make((2, 3), "int64", seed=5)
    b = make((2, 3), "bool", seed=5)
    for fn in (lambda x: x.sum(2), lambda x: x.sum((0, 0)), lambda x: x.sum((0, -2)),
               lambda x: x.amax((1, 1)), lambda x: x.mean(3), lambda x: x.argmax(2),
               lambda x: x.cumsum(-3), lambda x: x.max(2), lambda x: x.norm(dim=(0, 0)),
               lambda x: x.var(0, correction=3), lambda x: x[:1].std(0),
               lambda x: x.logsumexp((0, 0)), lambda x: x.prod(5)):
        check(fn, x)
    for fn in (lambda t: t.mean(), lambda t: t.var(), lambda t: t.std(0), lambda t: t.norm(),
               lambda t: t.argmax(), lambda t: t.mean(dtype=sk.int64 if isinstance(t, sk.Tensor)
                                                       else torch.int64)):
        check(fn, i)
        check(fn, b)
    e = make((0, 3), seed=6)
    for fn in (lambda t: t.amax(), lambda t: t.amax(0), lambda t: t.amin(1), lambda t: t.argmax(),
               lambda t: t.argmin(0), lambda t: t.max(), lambda t: t.min(0), lambda t: t.max(1),
               lambda t: t.norm(p=math.inf), lambda t: t.norm(p=-1, dim=0),
               lambda t: t.norm(p=-math.inf, dim=1)):
        check(fn, e)


def test_max_min_forms():
    x = make((3, 4), seed=7)
    check(lambda t: t.max(1), x)
    check(lambda t: t.min(dim=0, keepdim=True), x)
    check(lambda t: t.max(t * -1), x)
    check(lambda t: t.min(t[0]), x)
    res = sk.max(x, 1)
    values, indices = res
    assert res.values is values and res.indices is indices
    assert repr(res).startswith("sk.return_types.max(\nvalues=tensor(")
    assert type(sk.min(x, 0)).__name__ == "min"


def test_out_variants():
    x = make((3, 4), seed=8)
    xi = make((3, 4), "int32", seed=8)

    def z(shape, dtype):
        return sk.zeros(shape, dtype=getattr(sk, dtype))

    for dtype in ("float32", "float64", "int64", "int32", "bool", "uint8"):
        for shape in ((0,), (4,), (2, 2)):
            for fn in (lambda a, o: sk.sum(a, 0, out=o), lambda a, o: sk.mean(a, 0, out=o),
                       lambda a, o: sk.prod(a, 0, out=o), lambda a, o: sk.var(a, 0, out=o),
                       lambda a, o: sk.amax(a, 0, out=o), lambda a, o: sk.argmax(a, 0, out=o),
                       lambda a, o: sk.all(a, 0, out=o), lambda a, o: sk.any(a, (0,), out=o),
                       lambda a, o: sk.logsumexp(a, 0, out=o),
                       lambda a, o: sk.cumsum(a, 0, out=o)):
                tfn = _torch_twin(fn)
                check(fn, x, out=z(shape, dtype), tfn=tfn)
                check(fn, xi, out=z(shape, dtype), tfn=tfn)
    check(lambda a, d, out: sk.sum(a, 0, dtype=d, out=out), x, sk.float64, out=z((0,), "float32"),
          tfn=lambda a, d, out: torch.sum(a, 0, dtype=d, out=out))
    for vdt, idt in (("float32", "int64"), ("float64", "int64"), ("float32", "int32")):
        check(lambda a, out: sk.max(a, 0, out=out), x, out=(z((0,), vdt), z((0,), idt)),
              tfn=lambda a, out: torch.max(a, 0, out=out))
    check(lambda a, o: sk.norm(a, 2, 0, out=o), x, out=z((0,), "float32"),
          tfn=lambda a, o: torch.linalg.vector_norm(a, 2, 0, out=o))
    with pytest.warns(UserWarning, match="was resized"):
        sk.sum(x, 0, out=sk.zeros(7))


def _torch_twin(fn):
    """The same lambda with ``sk`` replaced by ``torch`` (out= tests call module functions)."""
    code = fn.__code__
    return type(fn)(code, {**fn.__globals__, "sk": torch}, fn.__name__, fn.__defaults__,
                    fn.__closure__)


def test_var_std_signatures():
    x = make((3, 4), seed=9)
    for fn in (lambda t: t.var(0, True), lambda t: t.var(False), lambda t: t.var(0, False, True),
               lambda t: t.std(unbiased=False), lambda t: t.var(dim=None, correction=2),
               lambda t: t.std(1, True, True), lambda t: t.var(0, correction=0.5),
               lambda t: t.var(correction=12), lambda t: t.std(-1, keepdim=True)):
        check(fn, x)


# -- hypothesis: shapes, layouts, dims, keepdim ----------------------------------------------
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def dims_for(draw, shape):
    n = max(len(shape), 1)
    kind = draw(st.sampled_from(["none", "int", "tuple", "empty"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "empty":
        return ()
    picked = draw(st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=n))
    return tuple(d - n if draw(st.booleans()) else d for d in picked)


@settings(max_examples=150)
@given(data=st.data(), name=st.sampled_from(list(REDUCTIONS)), shape=shapes,
       dtype=st.sampled_from(DTYPES), layout=st.sampled_from(LAYOUTS),
       keepdim=st.booleans(), seed=st.integers(0, 50))
def test_reductions_hypothesis(data, name, shape, dtype, layout, keepdim, seed):
    if layout == "cl" and len(shape) != 4:
        layout = "contig"
    dim = data.draw(dims_for(shape))
    x = make(shape, dtype, layout, seed, special=data.draw(st.booleans()))
    rtol, atol = _tol(dtype)
    check(REDUCTIONS[name], x, dim, keepdim, rtol=rtol, atol=atol)


@settings(max_examples=80)
@given(data=st.data(), name=st.sampled_from(list(REDUCTIONS)), shape=shapes,
       dtype=st.sampled_from(DTYPES), keepdim=st.booleans())
def test_meta_matches_cpu(data, name, shape, dtype, keepdim):
    dim = data.draw(dims_for(shape))
    x = make(shape, dtype, seed=1)
    cpu, cpu_err, _ = outcome(REDUCTIONS[name], x, dim, keepdim)
    meta, meta_err, _ = outcome(REDUCTIONS[name], x.to("meta"), dim, keepdim)
    if cpu_err is not None:
        assert type(meta_err) is type(cpu_err) and str(meta_err) == str(cpu_err)
        return
    assert meta_err is None, meta_err
    cpu_t = cpu if isinstance(cpu, tuple) else (cpu,)
    meta_t = meta if isinstance(meta, tuple) else (meta,)
    for c, m in zip(cpu_t, meta_t):
        assert m.device.type == "meta"
        assert (m.shape, m.stride(), m.dtype) == (c.shape, c.stride(), c.dtype)
