"""Index accumulation, blends and sorting against torch, for what the sample table cannot say:
duplicate indices, error texts with inputs left unchanged, sort ties and NaN order, topk's k
range, ``return_types``, and the op streams a dispatch mode sees (torch's TorchDispatchMode)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import subclass_kit as sk  # noqa: E402


def pair(values, dtype="float32"):
    a = np.asarray(values, dtype=dtype)
    return sk.tensor(a), torch.from_numpy(a.copy())


def same(ours, theirs):
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride())
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# -- duplicate indices ---------------------------------------------------------------------------
def test_index_add_accumulates_duplicates():
    (x, tx), (src, tsrc) = pair(np.zeros((3, 4))), pair(np.arange(20).reshape(5, 4))
    (i, ti) = pair([0, 2, 0, 0, 2], "int64")
    same(x.index_add_(0, i, src, alpha=2), tx.index_add_(0, ti, tsrc, alpha=2))
    assert x._version == tx._version == 1


def test_scatter_add_accumulates_duplicates():
    (x, tx), (src, tsrc) = pair(np.ones((2, 3), "int64"), "int64"), pair([[1, 2, 3], [4, 5, 6]],
                                                                         "int64")
    (i, ti) = pair([[0, 0, 0], [2, 2, 1]], "int64")
    same(sk.scatter_add(x, 1, i, src), torch.scatter_add(tx, 1, ti, tsrc))
    same(x.scatter_add_(1, i, src), tx.scatter_add_(1, ti, tsrc))


def test_index_copy_last_duplicate_wins():
    (x, tx), (src, tsrc) = pair(np.zeros((3, 2))), pair([[1, 1], [2, 2], [3, 3]])
    (i, ti) = pair([1, 1, 1], "int64")
    same(sk.index_copy(x, 0, i, src), torch.index_copy(tx, 0, ti, tsrc))


# -- errors leave the inputs unchanged ------------------------------------------------------------
ERRORS = [
    ("index_add_", lambda m, x, i: x.index_add_(0, i, m.ones(2, 4))),
    ("index_copy_", lambda m, x, i: x.index_copy_(0, i, m.ones(2, 4))),
    ("index_add out", lambda m, x, i: m.index_add(x, 0, i, m.ones(2, 4), out=m.empty(0))),
    ("scatter_add_", lambda m, x, i: x.scatter_add_(0, i.view(2, 1).expand(2, 4),
                                                    m.ones(2, 4))),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_index_out_of_range_raises_and_writes_nothing(name, call):
    (x, tx), (i, ti) = pair(np.zeros((3, 4))), pair([1, 3], "int64")
    with pytest.raises(Exception) as theirs:
        call(torch, tx, ti)
    with pytest.raises(type(theirs.value)) as ours:
        call(sk, x, i)
    assert str(ours.value) == str(theirs.value)
    assert x._version == 0 and not x.numpy().any()


def test_masked_scatter_short_source_raises_and_writes_nothing():
    x = sk.zeros(2, 3)
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        x.masked_scatter_(sk.ones(2, 3, dtype=sk.bool), sk.ones(5))
    assert x._version == 0 and not x.numpy().any()


def test_mismatched_shapes_and_dtypes_match_torch():
    for m, x in ((sk, sk.zeros(3, 4)), (torch, torch.zeros(3, 4))):
        i = m.tensor([0, 1])
        calls = [lambda: m.index_add(x, 0, i, m.ones(2, 4, dtype=m.float64)),
                 lambda: m.index_copy(x, 0, i, m.ones(2, 5)),
                 lambda: m.lerp(x, x.double(), 0.5),
                 lambda: m.baddbmm(m.ones(2, 3, 5), m.ones(2, 3, 4), m.ones(3, 4, 5))]
        texts = []
        for c in calls:
            with pytest.raises(Exception) as e:
                c()
            texts.append((type(e.value).__mro__[-3].__name__, str(e.value)))
        if m is sk:
            ours = texts
    assert ours == texts


# -- sort order ----------------------------------------------------------------------------------
NAN_TIES = [1, 3, float("nan"), 3, 1, -0.0, 0.0, float("nan"), 2, 3, 1]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("stable", [True, False])
def test_sort_ties_and_nan_order(descending, stable):
    x, tx = pair(NAN_TIES)
    v, i = sk.sort(x, descending=descending, stable=stable)
    tv, ti = torch.sort(tx, descending=descending, stable=stable)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_stable_sort_of_long_rows_matches_torch():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (3, 200)).astype(np.float32)
    for descending in (False, True):
        ours = sk.sort(sk.tensor(a), dim=1, descending=descending, stable=True)
        theirs = torch.sort(torch.from_numpy(a), dim=1, descending=descending, stable=True)
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        same(sk.argsort(sk.tensor(a), dim=1, descending=descending, stable=True),
             torch.argsort(torch.from_numpy(a), dim=1, descending=descending, stable=True))


def test_sort_returns_named_tuple_and_out():
    x = sk.tensor([[3.0, 1.0, 2.0]])
    res = x.sort()
    assert isinstance(res, sk.return_types.sort) and res.values.tolist() == [[1.0, 2.0, 3.0]]
    values, indices = sk.empty(0), sk.empty(0, dtype=sk.int64)
    res = sk.sort(x, out=(values, indices))
    assert res.values is values and res.indices is indices and indices.tolist() == [[1, 2, 0]]
    top = sk.topk(x, 2)
    assert isinstance(top, sk.return_types.topk) and top.indices.tolist() == [[0, 2]]


# -- topk ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [-1, 4])
def test_topk_k_out_of_range(k):
    with pytest.raises(RuntimeError) as theirs:
        torch.topk(torch.ones(3), k)
    with pytest.raises(RuntimeError) as ours:
        sk.topk(sk.ones(3), k)
    assert str(ours.value) == str(theirs.value) == "selected index k out of range"
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        sk.topk(sk.ones(3, device="meta"), k)


def test_topk_distinct_values_with_nan_match_torch():
    x, tx = pair([1, 3, float("nan"), 4, 8, -0.5, 0.0, 7, 2])
    for largest in (True, False):
        v, i = sk.topk(x, 4, largest=largest)
        tv, ti = torch.topk(tx, 4, largest=largest)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())


# -- op streams ----------------------------------------------------------------------------------
class TorchRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(f"{func._overloadpacket.__name__}.{func._overloadname}")
        return func(*args, **(kwargs or {}))


class SkRecorder(sk.DispatchMode):
    def __init__(self):
        self.ops = []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.__name__)
        return func(*args, **(kwargs or {}))


PROGRAMS = {
    "index_add": lambda m, x, i, b: m.index_add(x, 0, i, x[:2], alpha=2),
    "index_add_": lambda m, x, i, b: x.index_add_(0, i, x[:2].clone()),
    "index_add out": lambda m, x, i, b: m.index_add(x, 0, i, x[:2], out=b),
    "scatter_add_": lambda m, x, i, b: x.scatter_add_(1, i.view(1, 2), x[:1, :2].clone()),
    "index_copy": lambda m, x, i, b: m.index_copy(x, 0, i, x[:2]),
    "masked_scatter_": lambda m, x, i, b: x.masked_scatter_(x > 0, x.flatten()),
    "lerp": lambda m, x, i, b: (m.lerp(x, x, 0.5), m.lerp(x, x, x), x.lerp_(x, 0.2)),
    "addcmul/addcdiv": lambda m, x, i, b: (m.addcmul(x, x, x, value=2), x.addcdiv_(x, x)),
    "baddbmm": lambda m, x, i, b: m.baddbmm(x[:, :3], x.view(1, 3, 4), x.t().reshape(1, 4, 3)),
    "sort": lambda m, x, i, b: (m.sort(x), x.sort(0, True), m.sort(x, stable=True)),
    "argsort": lambda m, x, i, b: (m.argsort(x), m.argsort(x, stable=True, descending=True)),
    "topk": lambda m, x, i, b: (m.topk(x, 2), x.topk(1, 0, largest=False)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_op_streams_match_torch(name):
    streams = []
    for m, rec in ((sk, SkRecorder()), (torch, TorchRecorder())):
        x = m.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) - 5)
        i, b = m.tensor([2, 0]), m.empty(0)
        with rec:
            PROGRAMS[name](m, x, i, b)
        streams.append(rec.ops)
    assert streams[0] == streams[1]
