"""View chains against torch: the same random program of view ops and in-place writes runs in
both libraries, and after EVERY step all live tensors are compared.

Compared per tensor: sizes, strides, storage offset, dtype, ``is_contiguous()``, ``_version``,
``_is_view()``, ``_base`` (as a position in the program's tensor list), which tensors share a
storage (the partition into storage groups), storage sizes and bytes (which pins every value),
and for a failing step the exception class and text. Hypothesis draws each step's op and its
arguments from the shapes the program has produced so far (mostly valid, sometimes not).

Also here: ``*_scatter`` and ``<view>_copy`` against torch, and the ``view``/``reshape``/
``flatten`` examples of SEMANTICS.md §1.3.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for view semantics")
hypothesis = pytest.importorskip("hypothesis", reason="hypothesis generates the programs")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import assert_same, normalize_message

CHAINS = settings(max_examples=1700, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
META_CHAINS = settings(max_examples=400, deadline=None, derandomize=True, database=None,
                       suppress_health_check=list(HealthCheck))


def _rare(draw, n) -> bool:
    """True about once in ``n + 1`` draws. (Not ``== 0``: hypothesis favours small values.)"""
    return draw(st.integers(0, n)) == n // 2


# -- the programs ---------------------------------------------------------------------------------
def _dims(n):
    return st.integers(-n, n - 1) if n else st.sampled_from([0, -1])


def _shape_like(draw, sizes):
    """A shape with the same numel: merge or split dims, maybe a -1, rarely a wrong one."""
    numel = int(np.prod(sizes)) if sizes else 1
    if _rare(draw, 12):
        return [numel + 1]
    parts = list(sizes)
    for _ in range(draw(st.integers(0, 2))):
        if len(parts) >= 2 and draw(st.booleans()):
            i = draw(st.integers(0, len(parts) - 2))
            parts[i:i + 2] = [parts[i] * parts[i + 1]]
        elif parts:
            i = draw(st.integers(0, len(parts) - 1))
            n = parts[i]
            divs = [d for d in range(1, n + 1) if n % d == 0] or [1]
            d = draw(st.sampled_from(divs))
            parts[i:i + 1] = [d, n // d] if n else [0, draw(st.integers(0, 2))]
    if _rare(draw, 4):
        parts.insert(draw(st.integers(0, len(parts))), 1)
    if parts and _rare(draw, 3) and 0 not in parts:
        parts[draw(st.integers(0, len(parts) - 1))] = -1
    return parts


def _layout_in(draw, numel_storage, valid=True):
    ndim = draw(st.integers(0, 3))
    sizes = [draw(st.integers(0, 4)) for _ in range(ndim)]
    strides = [draw(st.integers(0, 6)) for _ in range(ndim)]
    extent = sum((s - 1) * t for s, t in zip(sizes, strides)) + 1 if 0 not in sizes else 0
    room = max(numel_storage - extent, 0)
    offset = draw(st.integers(0, room)) if valid else draw(st.integers(0, numel_storage + 2))
    return sizes, strides, offset


@st.composite
def steps(draw, t, allow_oob=True):
    """One step ``(op, args)`` for the torch tensor ``t`` (args drawn from its shape)."""
    sizes = list(t.shape)
    n = len(sizes)
    op = draw(st.sampled_from(OPS))
    d = draw(_dims(n))
    if op in ("view", "reshape"):
        args = (_shape_like(draw, sizes),)
    elif op == "view_dtype":
        args = (draw(st.sampled_from(DTYPE_VIEWS[str(t.dtype).replace("torch.", "")])),)
    elif op in ("transpose", "transpose_"):
        args = (d, draw(_dims(n)))
    elif op == "permute":
        perm = draw(st.permutations(range(n)))
        if _rare(draw, 10):
            perm = perm[:-1] if perm else [0]
        args = (list(perm),)
    elif op == "movedim":
        k = draw(st.integers(0, n))
        src = draw(st.permutations(range(n)))[:k]
        dst = draw(st.permutations(range(n)))[:k]
        args = (list(src), list(dst))
    elif op == "expand":
        new = [s if s != 1 or draw(st.booleans()) else draw(st.integers(0, 3)) for s in sizes]
        new = [-1 if _rare(draw, 4) else s for s in new]
        lead = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
        if _rare(draw, 10) and new:
            new[-1] += 1
        args = (lead + new,)
    elif op in ("squeeze", "squeeze_"):
        args = (draw(st.one_of(st.none(), _dims(n), st.lists(_dims(n), max_size=2,
                                                              unique=True).map(tuple))),)
    elif op in ("unsqueeze", "unsqueeze_"):
        args = (draw(_dims(n + 1)),)
    elif op == "select":
        size = sizes[d] if n else 1
        args = (d, draw(st.integers(-size - 1, size)))
    elif op == "slice":
        bound = st.one_of(st.none(), st.integers(-5, 5))
        args = (d % n if n else 0, draw(bound), draw(bound), draw(st.sampled_from([1, 1, 2, 3])))
    elif op == "narrow":
        size = sizes[d] if n else 0
        start = draw(st.integers(-size, size))
        args = (d, start, draw(st.integers(0, max(size - (start % max(size, 1)), 0) + 1)))
    elif op == "diagonal":
        args = (draw(st.integers(-3, 3)), d, draw(_dims(n)))
    elif op == "unfold":
        size = sizes[d] if n else 1
        args = (d, draw(st.integers(0, size + 1)), draw(st.integers(1, 3)))
    elif op == "split":
        size = sizes[d] if n else 0
        if draw(st.booleans()):
            args = (draw(st.integers(0, max(size, 1) + 1)), d)
        else:
            cuts = sorted(draw(st.lists(st.integers(0, size), max_size=3)))
            parts = [b - a for a, b in zip([0] + cuts, cuts + [size])]
            if _rare(draw, 8):
                parts.append(1)
            args = (parts, d)
    elif op == "chunk":
        args = (draw(st.integers(1, 4)), d)
    elif op == "unbind":
        args = (d,)
    elif op == "flatten":
        args = (d, draw(_dims(n)))
    elif op == "unflatten":
        size = sizes[d] if n else 1
        divs = [k for k in range(1, size + 1) if size % k == 0] or [1]
        k = draw(st.sampled_from(divs))
        parts = [k, size // k] if size else [0, draw(st.integers(0, 2))]
        if _rare(draw, 3) and size:
            parts[draw(st.integers(0, 1))] = -1
        args = (d, parts)
    elif op in ("as_strided", "as_strided_"):
        numel = t.untyped_storage().nbytes() // t.element_size()
        valid = not allow_oob or draw(st.integers(0, 6)) > 0
        layout = _layout_in(draw, numel, valid)
        args = layout if draw(st.booleans()) or not valid else layout[:2] + (None,)
    elif op == "getitem":
        args = (_basic_index(draw, sizes),)
    elif op == "setitem":
        args = (_basic_index(draw, sizes), draw(st.integers(-3, 3)))
    elif op in ("add_", "mul_"):
        args = (draw(st.integers(-2, 3)),)
    elif op == "fill_":
        # (negative fills of uint8 are left out: kernels/factories.py's fill_ raises numpy's
        # OverflowError where PyTorch wraps; reported to its owner)
        low = 0 if t.dtype == torch.uint8 else -3
        args = (draw(st.integers(low, 3)),)
    elif op == "copy_":
        keep = draw(st.integers(0, n))
        args = (sizes[n - keep:], draw(st.sampled_from(["float32", "int64", "int16"])))
    else:
        args = ()
    return op, args


def _basic_index(draw, sizes):
    out = []
    for k, size in enumerate(sizes):
        kind = draw(st.sampled_from(["int", "slice", "slice", "none", "skip"]))
        if kind == "int":
            out.append(draw(st.integers(-size, size - 1)) if size else 0)
        elif kind == "slice":
            out.append(slice(draw(st.one_of(st.none(), st.integers(-4, 4))),
                             draw(st.one_of(st.none(), st.integers(-4, 4))),
                             draw(st.sampled_from([None, 1, 2]))))
        elif kind == "none":
            out.append(None)
        else:
            break
    if _rare(draw, 5):
        out.insert(draw(st.integers(0, len(out))), Ellipsis)
    return tuple(out)


DTYPE_VIEWS = {
    "float32": ["int32", "float32", "int16", "uint8"],
    "int64": ["int32", "int16", "int64", "uint8"],
    "int32": ["int16", "int8", "int64", "uint8", "int32"],
    "int16": ["int8", "int32", "uint8", "int16"],
    "int8": ["uint8", "int16", "int8"],
    "uint8": ["int8", "int16", "int32", "uint8"],
}


def _apply(lib, op, t, args):
    """Run one step in ``lib`` (torch or sk: the method names are the same)."""
    if op == "view_dtype":
        return t.view(getattr(lib, args[0]))
    if op == "slice":
        dim, start, stop, step = args
        return t[(slice(None),) * dim + (slice(start, stop, step),)]
    if op == "getitem":
        return t[args[0]]
    if op == "setitem":
        t[args[0]] = args[1]
        return None
    if op in ("squeeze", "squeeze_") and args[0] is None:
        return getattr(t, op)()
    if op == "copy_":
        shape, dtype = args
        n = int(np.prod(shape)) if shape else 1
        src = lib.tensor((np.arange(n) * 3 - 5).reshape(shape).tolist(), dtype=getattr(lib, dtype))
        return t.copy_(src)
    if op == "alias":
        return torch.ops.aten.alias(t) if lib is torch else sk.ops.alias(t)
    if op == "T":
        return t.T
    if op == "mT":
        return t.mT
    return getattr(t, op)(*args)


OPS = ["view", "reshape", "view_dtype", "transpose", "t", "T", "mT", "permute", "movedim",
       "expand", "squeeze", "unsqueeze", "select", "slice", "slice", "narrow", "diagonal",
       "unfold", "split", "chunk", "unbind", "flatten", "unflatten", "as_strided", "getitem",
       "getitem", "alias", "detach", "contiguous", "clone", "setitem", "add_", "mul_", "copy_",
       "fill_", "zero_", "t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_"]
MUTATING_DATA = {"setitem", "add_", "mul_", "copy_", "fill_", "zero_"}


# -- running a program in both libraries and comparing -----------------------------------------
class Program:
    def __init__(self, lib, dtype, device, shape):
        n = int(np.prod(shape))
        data = (np.arange(n) % 7 - 2).astype(dtype).reshape(shape)
        if lib is torch:
            self.pool = [torch.from_numpy(data).to(device)]
        else:
            self.pool = [sk.tensor(data, device=device)]
        self.lib = lib

    def run(self, op, src, args):
        t = self.pool[src]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = _apply(self.lib, op, t, args)
            except Exception as e:  # noqa: BLE001 - compared with the other library's
                return e
        # Results that are new objects join the pool; ``out is t`` (in-place ops, a no-op
        # ``contiguous()``) does not, so a library returning the wrong object shows up as a
        # pool of another length.
        if isinstance(out, (list, tuple)):
            self.pool.extend(out)
        elif out is not None and out is not t:
            self.pool.append(out)
        return None


def _position(pool, obj):
    for i, t in enumerate(pool):
        if t is obj:
            return i
    return None if obj is None else "elsewhere"


def _storage_key(t):
    if isinstance(t, sk.Tensor):
        return id(t.untyped_storage())
    return t.untyped_storage()._cdata


def _groups(pool):
    seen, out = {}, []
    for i, t in enumerate(pool):
        out.append(seen.setdefault(_storage_key(t), i))
    return out


def _storage_bytes(t):
    if isinstance(t, sk.Tensor):
        return t.untyped_storage()._bytes().tobytes()
    return bytes(t.untyped_storage().tolist())


def compare_pools(ours, theirs, where):
    assert len(ours.pool) == len(theirs.pool), where
    assert _groups(ours.pool) == _groups(theirs.pool), f"{where}: storage sharing differs"
    for i, (a, b) in enumerate(zip(ours.pool, theirs.pool)):
        at = f"{where}, tensor {i}"
        assert_same(a, b, check_values=False, msg=at)
        assert a._version == b._version, f"{at}: _version {a._version} vs {b._version}"
        assert a._is_view() == b._is_view(), at
        assert _position(ours.pool, a._base) == _position(theirs.pool, b._base), at
        assert a.untyped_storage().nbytes() == b.untyped_storage().nbytes(), at
        if a.device.type == "cpu" and _groups(ours.pool)[i] == i:
            assert _storage_bytes(a) == _storage_bytes(b), f"{at}: storage bytes differ"


def _same_error(ours, theirs):
    if ours is None or theirs is None:
        return False
    text = str(theirs).split("\nException raised from")[0]  # drop a C++ stack trace
    return (type(ours).__name__ == type(theirs).__name__
            and str(ours) in (text, normalize_message(text)))


def _has_aliasing(t) -> bool:
    """Whether two elements of ``t`` share memory (writes would depend on visiting order)."""
    if t.numel() <= 1:
        return False
    where = np.full(tuple(t.shape), t.storage_offset(), dtype=np.int64)
    for d, (size, stride) in enumerate(zip(t.shape, t.stride())):
        shape = [1] * t.dim()
        shape[d] = size
        where = where + (np.arange(size) * stride).reshape(shape)
    return np.unique(where).size != where.size


def _out_of_bounds(t, args) -> bool:
    sizes, strides, offset = args
    offset = t.storage_offset() if offset is None else offset
    if 0 in sizes:
        return False
    extent = offset + sum((s - 1) * st_ for s, st_ in zip(sizes, strides)) + 1
    return extent * t.element_size() > t.untyped_storage().nbytes()


def _stride0_overlap(t) -> bool:
    return any(st == 0 and sz > 1 for sz, st in zip(t.shape, t.stride()))


def run_program(data, dtype, device, n_steps):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape")
    theirs = Program(torch, dtype, device, shape)
    ours = Program(sk, dtype, device, shape)
    # On meta our kernels raise the cpu texts (documented difference): a cpu twin gives them.
    twin = Program(torch, dtype, "cpu", shape) if device == "meta" else None
    compare_pools(ours, theirs, "start")
    for k in range(n_steps):
        # Mostly build on the newest tensors, so chains get long.
        n = len(theirs.pool)
        src = data.draw(st.one_of(st.integers(max(n - 2, 0), n - 1), st.integers(0, n - 1)),
                        label=f"source {k}")
        target = theirs.pool[src]
        op, args = data.draw(steps(target, allow_oob=device == "cpu"), label=f"step {k}")
        if op in MUTATING_DATA and _has_aliasing(target) and not _stride0_overlap(target):
            continue  # the result of writing through self-aliasing views is order-dependent
        if device == "meta" and op.startswith("as_strided") and _out_of_bounds(target, args):
            continue  # torch's meta as_strided skips the bounds check, ours does not
        t_err = theirs.run(op, src, args)
        s_err = ours.run(op, src, args)
        cpu_err = twin.run(op, src, args) if twin else None
        where = f"step {k}: {op}{args} on tensor {src}"
        if twin and (t_err is None) != (cpu_err is None):
            # torch's meta kernels skip a check its cpu kernel makes (overlap, bounds...):
            # ours follow cpu; the programs part ways here, so stop.
            ok = _same_error(s_err, cpu_err) if cpu_err is not None else s_err is None
            assert ok, f"{where}: {s_err!r} vs cpu {cpu_err!r}"
            return len(theirs.pool)
        if t_err is not None or s_err is not None:
            assert t_err is not None, f"{where}: we raised {s_err!r}, torch did not"
            assert s_err is not None, f"{where}: torch raised {t_err!r}, we did not"
            assert _same_error(s_err, t_err) or (cpu_err is not None
                                                 and _same_error(s_err, cpu_err)), \
                f"{where}: {s_err!r} vs {t_err!r} (cpu: {cpu_err!r})"
        compare_pools(ours, theirs, where)
    return len(theirs.pool)


@CHAINS
@given(data=st.data(), dtype=st.sampled_from(["float32", "float32", "int32", "int64", "int16",
                                              "uint8"]))
def test_view_chains(data, dtype):
    run_program(data, dtype, "cpu", n_steps=8)


@META_CHAINS
@given(data=st.data(), dtype=st.sampled_from(["float32", "int32", "int64"]))
def test_view_chains_meta(data, dtype):
    """Meta views share the storage and counter; metadata and errors match torch's."""
    run_program(data, dtype, "meta", n_steps=6)


# -- SEMANTICS.md §1.3 examples -------------------------------------------------------------------
@pytest.mark.parametrize("make,shape", [
    pytest.param(lambda lib: lib.zeros(4, 6).t(), (3, 2, 4), id="t-(3,2,4)"),
    pytest.param(lambda lib: lib.zeros(3).expand(2, 3), (6,), id="expanded-(6,)"),
    pytest.param(lambda lib: lib.zeros(3, 1).expand(3, 4), (3, 2, 2), id="expanded-(3,2,2)"),
    pytest.param(lambda lib: lib.zeros(2, 3, 4)[:, 1:], (4, 4), id="sliced-(4,4)"),
    pytest.param(lambda lib: lib.zeros(2, 3, 4).transpose(0, 1), (3, 8), id="transposed-(3,8)"),
    pytest.param(lambda lib: lib.zeros(0, 3), (3, 0), id="empty-(3,0)"),
    pytest.param(lambda lib: lib.zeros(0, 3).t(), (0, 3), id="empty_t-(0,3)"),
    pytest.param(lambda lib: lib.zeros(()), (1, 1), id="0d-(1,1)"),
    pytest.param(lambda lib: lib.zeros(4), (5, 5), id="numel_mismatch-(5,5)"),
    pytest.param(lambda lib: lib.zeros(4), (-1, -1), id="two_minus_ones-(-1,-1)"),
    pytest.param(lambda lib: lib.zeros(4), (-2, 2), id="bad_size-(-2,2)"),
    pytest.param(lambda lib: lib.zeros(0), (-1, 0), id="empty-(-1,0)"),
    pytest.param(lambda lib: lib.zeros(2, 1, 3)[:, :, ::2], (2, 2), id="stepped-(2,2)"),
    pytest.param(lambda lib: lib.zeros(2, 1, 3).as_strided((2, 1, 3), (3, 99, 1)), (6,),
                 id="odd_size1_stride-(6,)"),
])
@pytest.mark.parametrize("how", ["view", "reshape", "flatten"])
def test_view_reshape_flatten(make, shape, how):
    results = []
    for lib in (torch, sk):
        x = make(lib)
        try:
            if how == "flatten":
                out = x.flatten()
            else:
                out = getattr(x, how)(*shape)
            results.append((out, out._base is (x._base if x._base is not None else x),
                            out is x, None))
        except Exception as e:  # noqa: BLE001
            results.append((None, None, None, e))
    (t_out, t_base, t_same, t_err), (s_out, s_base, s_same, s_err) = results
    if t_err is not None or s_err is not None:
        assert t_err is not None and s_err is not None and _same_error(s_err, t_err), results
        return
    assert_same(s_out, t_out)
    assert (s_base, s_same) == (t_base, t_same)


def test_reshape_copy_path_op_stream():
    """A non-viewable reshape shows as clone + _unsafe_view, a viewable one as view."""
    seen = []

    class Log(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return func(*args, **(kwargs or {}))

    x = sk.zeros(4, 6).t()
    with Log():
        y = x.reshape(24)
        z = x.reshape(3, 2, 4)
    assert seen == ["clone", "_unsafe_view", "view"]
    assert y._base is None and z._base is x._base


# -- *_scatter and <view>_copy ------------------------------------------------------------------
def _both(fn):
    out = []
    for lib in (torch, sk):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append((fn(lib), None))
        except Exception as e:  # noqa: BLE001
            out.append((None, e))
    return out


def _check_both(fn, fresh=True):
    (t_out, t_err), (s_out, s_err) = _both(fn)
    if t_err is not None or s_err is not None:
        assert t_err is not None and s_err is not None and _same_error(s_err, t_err), \
            (s_err, t_err)
        return
    assert_same(s_out, t_out)
    outs = s_out if isinstance(s_out, (list, tuple)) else [s_out]
    t_outs = t_out if isinstance(t_out, (list, tuple)) else [t_out]
    for a, b in zip(outs, t_outs):
        assert a._base is None and a.untyped_storage().nbytes() == b.untyped_storage().nbytes()
        if fresh:
            assert a._version == 0


def _x(lib):
    return lib.arange(24.).reshape(4, 6)


SCATTER_CASES = [
    ("slice", lambda lib: lib.slice_scatter(_x(lib)[1:, ::2], lib.zeros(3, 1), 1, 0, 1)),
    ("select_t", lambda lib: lib.select_scatter(_x(lib).t(), lib.zeros(4), 0, 1)),
    ("select_expanded", lambda lib: lib.select_scatter(lib.arange(3.).expand(4, 3),
                                                       lib.zeros(3), 0, 1)),
    ("select_expanded_t", lambda lib: lib.select_scatter(
        lib.arange(3.)[:, None].expand(3, 4), lib.zeros(4), 0, 1)),
    ("slice_bad", lambda lib: lib.slice_scatter(_x(lib), lib.zeros(2), 0, 0, 3)),
    ("select_bad", lambda lib: lib.select_scatter(_x(lib), lib.zeros(1, 6), 0, 0)),
    ("select_oob", lambda lib: lib.select_scatter(_x(lib), lib.zeros(6), 0, 9)),
    ("as_strided_oob", lambda lib: lib.as_strided_scatter(_x(lib), lib.zeros(3, 3), (3, 3),
                                                          (3, 3), 20)),
    ("as_strided", lambda lib: lib.as_strided_scatter(_x(lib)[1:], lib.zeros(2, 2), (2, 2),
                                                      (1, 2))),
    ("cast", lambda lib: lib.select_scatter(lib.arange(6).reshape(2, 3),
                                            lib.tensor([1.5, 2.5, 3.5]), 0, 0)),
    ("diagonal", lambda lib: lib.diagonal_scatter(_x(lib), lib.zeros(4), 1)),
    ("diagonal_neg", lambda lib: lib.diagonal_scatter(_x(lib), lib.ones(3), -1)),
    ("diagonal_bad", lambda lib: lib.diagonal_scatter(_x(lib), lib.ones(3), 0)),
    ("slice_step", lambda lib: lib.slice_scatter(_x(lib), lib.ones(4, 2), 1, 1, None, 3)),
    ("method", lambda lib: _x(lib).slice_scatter(lib.ones(1, 6), 0, 2, 3)),
    ("meta", lambda lib: lib.slice_scatter(lib.empty(4, 6, device="meta")[1:],
                                           lib.zeros(3, 6, device="meta"))),
]


@pytest.mark.parametrize("fn", [f for _, f in SCATTER_CASES], ids=[n for n, _ in SCATTER_CASES])
def test_scatter_ops(fn):
    _check_both(fn)


def test_scatter_does_not_touch_inputs():
    x = sk.arange(6.).reshape(2, 3)
    out = sk.select_scatter(x, sk.ones(3), 0, 1)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and x._version == 0
    assert out.untyped_storage() is not x.untyped_storage()


COPY_CASES = [
    ("view_copy", lambda lib, x: _op(lib, "view_copy")(x.t(), [24])),
    ("view_copy_ok", lambda lib, x: _op(lib, "view_copy")(x, [6, 4])),
    ("view_copy_bad", lambda lib, x: _op(lib, "view_copy")(x, [5, 4])),
    ("view_copy_dtype", lambda lib, x: _op(lib, "view_copy", "dtype")(x.t(), lib.int32)),
    ("view_copy_dtype_bad", lambda lib, x: _op(lib, "view_copy", "dtype")(x.t(), lib.int16)),
    ("expand_copy", lambda lib, x: _op(lib, "expand_copy")(x[0], [2, 6])),
    ("transpose_copy", lambda lib, x: _op(lib, "transpose_copy", "int")(x, 0, 1)),
    ("t_copy", lambda lib, x: _op(lib, "t_copy")(x)),
    ("permute_copy", lambda lib, x: _op(lib, "permute_copy")(x, [1, 0])),
    ("permute_copy_bad", lambda lib, x: _op(lib, "permute_copy")(x, [0])),
    ("select_copy", lambda lib, x: _op(lib, "select_copy", "int")(x, 1, 2)),
    ("select_copy_oob", lambda lib, x: _op(lib, "select_copy", "int")(x, 1, 20)),
    ("slice_copy", lambda lib, x: _op(lib, "slice_copy", "Tensor")(x, 1, 0, 6, 2)),
    ("diagonal_copy", lambda lib, x: _op(lib, "diagonal_copy")(x)),
    ("unfold_copy", lambda lib, x: _op(lib, "unfold_copy")(x, 1, 2, 2)),
    ("as_strided_copy", lambda lib, x: _op(lib, "as_strided_copy")(x, [2, 2], [1, 6])),
    ("as_strided_copy_oob", lambda lib, x: _op(lib, "as_strided_copy")(x, [30], [1])),
    ("alias_copy", lambda lib, x: _op(lib, "alias_copy")(x.t())),
    ("detach_copy", lambda lib, x: _op(lib, "detach_copy")(x.t())),
    ("lift_fresh_copy", lambda lib, x: _op(lib, "lift_fresh_copy")(x.t())),
    ("unsqueeze_copy", lambda lib, x: _op(lib, "unsqueeze_copy")(x.t(), 1)),
    ("squeeze_copy", lambda lib, x: _op(lib, "squeeze_copy", "dims")(x[:, :1], [1])),
    ("split_copy", lambda lib, x: _op(lib, "split_copy", "Tensor")(x.t(), 4, 0)),
    ("split_with_sizes_copy", lambda lib, x: _op(lib, "split_with_sizes_copy")(x.t(), [1, 5])),
    ("unbind_copy", lambda lib, x: _op(lib, "unbind_copy", "int")(x.t(), 1)),
    ("expand_copy_empty", lambda lib, x: _op(lib, "expand_copy")(
        lib.zeros(3, 0, 2).transpose(0, 2), [2, 0, 3])),
    ("t_copy_empty", lambda lib, x: _op(lib, "t_copy")(lib.zeros(0, 3))),
]


def _op(lib, name, overload="default"):
    packet = getattr(torch.ops.aten, name) if lib is torch else getattr(sk.ops, name)
    return getattr(packet, overload)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("fn", [f for _, f in COPY_CASES], ids=[n for n, _ in COPY_CASES])
def test_view_copy_ops(fn, device):
    """Fresh contiguous outputs. On meta we follow the cpu rules (torch's Python meta kernels
    differ: its meta ``view_copy`` refuses what the cpu kernel copies), so meta is compared
    with torch on cpu."""
    def run(lib):
        x = lib.arange(24.).reshape(4, 6)
        return fn(lib, x.to(device) if device == "meta" and lib is sk else x)

    (t_out, t_err), (s_out, s_err) = _both(run)
    if t_err is not None or s_err is not None:
        assert t_err is not None and s_err is not None and _same_error(s_err, t_err), \
            (s_err, t_err)
        return
    ours = s_out if isinstance(s_out, list) else [s_out]
    theirs = t_out if isinstance(t_out, list) else [t_out]
    theirs = [t.to(a.device.type) for a, t in zip(ours, theirs)]  # (cases on a fresh tensor
    assert_same(ours, theirs, check_values=device == "cpu")          # stay on cpu)
    for a in ours:
        assert a._base is None and a._version == 0


def test_every_view_op_has_a_copy_op():
    from subclass_kit.kernels.scatter import copy_op_of
    for op in sk.ops:
        if op.is_view and op.decomposition is None and op.name != "lift_fresh":
            copy = copy_op_of(op)
            assert copy is not None, f"no {op.name}_copy.{op.overload}"
            assert copy._kernels.keys() >= {"cpu", "meta"}
            assert not copy.is_view
