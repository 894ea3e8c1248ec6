"""Shape-combining and index ops against torch: ``cat``, ``stack``, ``gather``, ``scatter``,
``index_select``, ``tril``, ``triu``, ``nonzero``.

Same inputs in both libraries (same storage bytes and strides), then compare results (values,
sizes, strides: ``cat`` keeps channels-last, ``nonzero`` is column-major), ``_version``, the
exception class and text on failure, and meta-vs-cpu metadata (meta skips data-dependent
checks; ``nonzero`` raises NotImplementedError on meta).
"""

from __future__ import annotations

import warnings

import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for shape ops")
pytest.importorskip("hypothesis", reason="hypothesis generates the shapes")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import assert_same, normalize_message, to_sk  # noqa: E402


# -- helpers -------------------------------------------------------------------------------------
def make(shape, layout="contig", dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shape = tuple(shape)
    if layout == "t" and len(shape) >= 2:
        return torch.randn(shape[::-1], generator=gen).to(dtype).permute(
            *range(len(shape) - 1, -1, -1))
    if layout == "cl" and len(shape) == 4:
        return torch.randn(shape, generator=gen).to(dtype).to(memory_format=torch.channels_last)
    if layout == "expand" and shape:
        return torch.randn((1,) + shape[1:], generator=gen).to(dtype).expand(shape)
    return torch.randn(shape, generator=gen).to(dtype)


def index(values):
    return torch.tensor(values, dtype=torch.int64)


def sk_twin(x):
    if isinstance(x, (list, tuple)):
        return type(x)(sk_twin(v) for v in x)
    if not isinstance(x, torch.Tensor):
        return x
    n = x.untyped_storage().nbytes() // x.element_size()
    flat = x.detach().as_strided((n,), (1,), 0).clone()
    return to_sk(flat.as_strided(tuple(x.shape), x.stride(), x.storage_offset()))


def outcome(fn, args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - an exception is an outcome to compare
        return e


def check(torch_fn, sk_fn, *targs, meta=True):
    sargs = [sk_twin(a) for a in targs]
    theirs = outcome(torch_fn, targs)
    ours = outcome(sk_fn, sargs)
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"sk returned a result, torch raised {theirs!r}"
        assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
        assert str(ours) in (str(theirs), normalize_message(str(theirs))), (ours, theirs)
    else:
        if isinstance(ours, Exception):
            raise ours
        assert_same(ours, theirs)
        if isinstance(theirs, torch.Tensor):
            assert ours._version == theirs._version
    for i, (s, t) in enumerate(zip(sargs, targs)):
        if isinstance(t, torch.Tensor):
            assert s._version == t._version, f"input {i} version"
    if meta:
        check_meta(sk_fn, sargs, ours)


def _to_meta(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(v) for v in x)
    return x.to("meta") if isinstance(x, sk.Tensor) else x


def check_meta(sk_fn, sargs, cpu):
    meta = _to_meta(sargs)
    got = outcome(sk_fn, meta)
    if isinstance(cpu, Exception):
        if isinstance(got, Exception):
            assert type(got) is type(cpu) and str(got) == str(cpu)
        return  # data-dependent errors (index ranges) are skipped on meta, as in PyTorch
    if isinstance(got, Exception):
        raise got
    assert got.device.type == "meta"
    assert (tuple(got.shape), got.stride(), got.dtype) == (tuple(cpu.shape), cpu.stride(),
                                                            cpu.dtype)


# -- cat / stack ---------------------------------------------------------------------------------
CAT_CASES = [
    ([((2, 3), "contig"), ((2, 3), "contig")], 0), ([((2, 3), "contig"), ((2, 4), "t")], 1),
    ([((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), "cl")], 1), ([((2, 3, 4, 5), "cl"), ((2, 3, 4, 5),
                                                                               "contig")], 1),
    ([((3, 2), "t"), ((3, 2), "t")], 0), ([((3, 2), "t"), ((3, 2), "t")], -1),
    ([((2, 3), "contig"), ((0,), "contig"), ((1, 3), "contig")], 0),
    ([((0,), "contig"), ((0,), "contig")], 0), ([((2, 3), "contig"), ((0, 3), "contig")], 0),
    ([((3, 4), "expand"), ((3, 4), "expand")], 1), ([((2, 3), "t")], 0),
    ([((2, 3), "contig"), ((2, 4), "contig")], 0), ([((2, 3), "contig"), ((3, 4), "contig")], 1),
    ([((2, 3), "contig"), ((3,), "contig")], 0), ([((2,), "contig"), ((), "contig")], 0),
    ([((2, 3), "contig"), ((2, 3), "contig")], 2), ([], 0),
]


@pytest.mark.parametrize("specs, dim", CAT_CASES)
def test_cat(specs, dim):
    tensors = [make(s, lay, seed=i) for i, (s, lay) in enumerate(specs)]
    check(lambda ts: torch.cat(ts, dim), lambda ts: sk.cat(ts, dim), tensors)


def test_cat_promotes_and_aliases():
    ints, floats = torch.ones(2, 3).long(), make((2, 3))
    check(lambda ts: torch.cat(ts), lambda ts: sk.cat(ts), [ints, floats])
    check(lambda ts: torch.cat(ts), lambda ts: sk.cat(ts), [torch.ones(2).bool(),
                                                            torch.ones(2).int()])
    check(lambda ts: torch.cat(ts), lambda ts: sk.cat(ts), [make((2, 3)), torch.empty(0).double()])
    a = sk.ones(2, 3)
    assert sk.concat([a, a]).shape == sk.concatenate([a, a], axis=0).shape == (4, 3)


@pytest.mark.parametrize("out", [torch.empty(0), torch.empty(6, 2).t(), torch.empty(4, 3),
                                 torch.empty(0, dtype=torch.int32),
                                 torch.empty(0, dtype=torch.float64)])
def test_cat_out(out):
    def t_fn(a, b, o):
        return torch.cat([a, b], out=o)

    def s_fn(a, b, o):
        res = sk.cat([a, b], out=o)
        assert res is o
        return res
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both libraries warn when resizing a non-empty out
        check(t_fn, s_fn, make((1, 3)), make((1, 3), seed=1), out, meta=False)


def test_cat_out_overlap_raises():
    x = sk.ones(2)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        sk.cat([x, x], out=x)
    assert x._version == 0


@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.integers(1, 4),
       st.data())
def test_cat_random(shape, count, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    layout = data.draw(st.sampled_from(["contig", "t", "expand"]))
    tensors = []
    for i in range(count):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        tensors.append(make(s, layout, seed=i))
    check(lambda ts: torch.cat(ts, dim), lambda ts: sk.cat(ts, dim), tensors)


STACK_CASES = [
    ([((2, 3), "contig"), ((2, 3), "contig")], 1), ([((3, 2), "t"), ((3, 2), "t")], 0),
    ([((3, 2), "t"), ((3, 2), "t")], 2), ([((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), "cl")], 0),
    ([((2, 3, 4, 5), "cl"), ((2, 3, 4, 5), "cl")], 4), ([((), "contig"), ((), "contig")], 0),
    ([((2,), "contig"), ((3,), "contig")], 0), ([((2,), "contig"), ((2,), "contig"),
                                                 ((2, 1), "contig")], 0),
    ([((2,), "contig"), ((2,), "contig")], 2), ([((2,), "contig"), ((2,), "contig")], -3),
    ([], 0), ([((0, 3), "contig")], 1),
]


@pytest.mark.parametrize("specs, dim", STACK_CASES)
def test_stack(specs, dim):
    tensors = [make(s, lay, seed=i) for i, (s, lay) in enumerate(specs)]
    check(lambda ts: torch.stack(ts, dim), lambda ts: sk.stack(ts, dim), tensors)


@pytest.mark.parametrize("out", [torch.empty(0), torch.empty(2, 3), torch.empty(3, 2).t()])
def test_stack_out(out):
    check(lambda ts, o: torch.stack(ts, out=o), lambda ts, o: sk.stack(ts, out=o),
          [make((3,)), make((3,), seed=1)], out, meta=False)


def test_stack_promotes():
    check(lambda ts: torch.stack(ts), lambda ts: sk.stack(ts), [torch.ones(2).long(), make((2,))])


# -- gather / scatter ----------------------------------------------------------------------------
GATHER_CASES = [
    ((2, 3), 1, [[0, 2], [1, 1]]), ((3, 3), 0, [[0, 2], [1, 1]]), ((2, 3), 1, [[0, 7], [5, 1]]),
    ((2, 3), 1, [[0, -1]]), ((2, 3), 1, [[0, 2], [1, 1], [0, 0]]), ((2, 3), 1, [0, 1]),
    ((2, 3), 2, [[0]]), ((), 0, 0), ((), 0, [0, 0]), ((3,), 0, 1), ((2, 3), 1, [[]]),
    ((2, 3), -1, [[2, 2, 2, 2]]),
]


@pytest.mark.parametrize("shape, dim, idx", GATHER_CASES)
def test_gather(shape, dim, idx):
    check(lambda x, i: torch.gather(x, dim, i), lambda x, i: sk.gather(x, dim, i),
          make(shape, "t"), index(idx))
    check(lambda x, i: x.gather(dim, i), lambda x, i: x.gather(dim, i), make(shape), index(idx))


def test_gather_index_dtypes():
    x = make((2, 3))
    for idx in (index([[0, 1]]).int(), torch.tensor([[0.0, 1.0]]), index([[0, 1]]).short()):
        check(lambda a, i: torch.gather(a, 1, i), lambda a, i: sk.gather(a, 1, i), x, idx)
    check(lambda a, i: torch.gather(a, 1, i), lambda a, i: sk.gather(a, 1, i), x,
          torch.empty(0, 2))


SCATTER_CASES = [
    ((2, 3), 1, [[0], [2]], (2, 2)), ((2, 3), 0, [[1, 0, 1]], (1, 3)),
    ((2, 3), 1, [[0, 1, 2, 0]], (2, 2)), ((2, 3), 1, [[0], [1], [2]], (3, 2)),
    ((2, 3), 1, [0, 1], (2, 2)), ((2, 3), 1, [[0, 1]], (2,)), ((2, 3), 1, [[0, 5]], (2, 2)),
    ((2, 3), 1, [[0, -1]], (2, 2)), ((2, 3), 2, [[0]], (2, 2)), ((3,), 0, [2, 0], (2,)),
]


@pytest.mark.parametrize("shape, dim, idx, src", SCATTER_CASES)
def test_scatter(shape, dim, idx, src):
    x, i, s = make(shape, "t"), index(idx), make(src, seed=1)
    check(lambda a, b, c: a.scatter(dim, b, c), lambda a, b, c: a.scatter(dim, b, c), x, i, s)
    check(lambda a, b: a.scatter(dim, b, 2.5), lambda a, b: a.scatter(dim, b, 2.5), x, i)
    check(lambda a, b: torch.scatter(a, dim, b, value=-1.0),
          lambda a, b: sk.scatter(a, dim, b, value=-1.0), x, i)
    check(lambda a, b, c: a.scatter_(dim, b, c), lambda a, b, c: a.scatter_(dim, b, c),
          make(shape), i, s, meta=False)


def test_scatter_dtypes():
    x, i = make((2, 3)), index([[0], [1]])
    check(lambda a, b, c: a.scatter(1, b, c), lambda a, b, c: a.scatter(1, b, c), x, i,
          make((2, 1), dtype=torch.float64))
    check(lambda a, b, c: a.scatter(1, b, c), lambda a, b, c: a.scatter(1, b, c), x, i.int(),
          make((2, 1)))
    longs = torch.zeros(2, 3).long()
    check(lambda a, b: a.scatter(1, b, 1.7), lambda a, b: a.scatter(1, b, 1.7), longs, i)
    check(lambda a, b: a.scatter(1, b, True), lambda a, b: a.scatter(1, b, True), x, i)
    check(lambda a, b: a.scatter(1, b, torch.tensor(2.0)),
          lambda a, b: a.scatter(1, b, sk.tensor(2.0)), x, i)


# -- index_select --------------------------------------------------------------------------------
INDEX_SELECT_CASES = [
    ((2, 3), 1, [2, 0, 2]), ((3, 2), 1, [0, 1, 1]), ((2, 3), 0, 1), ((2, 3), 1, [[1]]),
    ((2, 3), 1, [3]), ((2, 3), 1, [-1]), ((4, 3), 0, [5]), ((2, 4, 3), 1, [5]),
    ((2, 4, 3), 2, [5]), ((4,), 0, [5]), ((), 0, [0, 0]), ((), 0, 0), ((), 0, [1]),
    ((0, 3), 1, [5]), ((0, 3), 0, [5]), ((2, 3), 1, []), ((2, 3), 2, [1]),
    ((2, 3, 4, 5), 1, [0, 1]),
]


@pytest.mark.parametrize("shape, dim, idx", INDEX_SELECT_CASES)
def test_index_select(shape, dim, idx):
    layout = "cl" if len(shape) == 4 else "t"
    check(lambda x, i: x.index_select(dim, i), lambda x, i: x.index_select(dim, i),
          make(shape, layout), index(idx))


def test_index_select_index_dtypes():
    x = make((2, 3))
    for idx in (index([1]).int(), torch.tensor([1.0]), index([1]).short()):
        check(lambda a, i: torch.index_select(a, 1, i), lambda a, i: sk.index_select(a, 1, i),
              x, idx)


# -- tril / triu / nonzero -----------------------------------------------------------------------
@pytest.mark.parametrize("shape, layout, diagonal", [
    ((2, 3), "contig", 0), ((3, 2), "t", 1), ((3, 4), "expand", -1), ((4,), "contig", 0),
    ((3, 4, 5), "t", 2), ((2, 3, 4, 5), "cl", 1), ((0, 3), "contig", 0), ((3, 3), "contig", -5),
])
def test_tril_triu(shape, layout, diagonal):
    x = make(shape, layout)
    check(lambda a: a.tril(diagonal), lambda a: a.tril(diagonal), x)
    check(lambda a: torch.triu(a, diagonal), lambda a: sk.triu(a, diagonal), x)
    check(lambda a: (a > 0).tril(diagonal), lambda a: (a > 0).tril(diagonal), x)


@pytest.mark.parametrize("values", [
    [[0, 1, 2], [3, 0, 0]], [[0.0, 0.0]], 3.0, 0.0, [0, 1, 0], [[True, False], [True, True]],
    [[[0, 1], [1, 1]], [[1, 0], [0, 0]]],
])
def test_nonzero(values):
    x = torch.tensor(values)
    check(torch.nonzero, sk.nonzero, x, meta=False)
    check(lambda a: torch.nonzero(a, as_tuple=True), lambda a: sk.nonzero(a, as_tuple=True), x,
          meta=False)
    check(lambda a: a.t().nonzero() if a.ndim == 2 else a.nonzero(),
          lambda a: a.t().nonzero() if a.ndim == 2 else a.nonzero(), x, meta=False)


def test_nonzero_meta_raises():
    with pytest.raises(NotImplementedError, match="register_meta function for torch.nonzero"):
        sk.nonzero(sk.empty(2, 3, device="meta"))
