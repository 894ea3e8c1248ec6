"""``count_nonzero``, ``nansum``, ``nanmean``, ``aminmax``, ``isclose``, ``allclose``,
``equal``, ``cummax``, ``cummin``, ``logcumsumexp``, ``median``, ``nanmedian``, ``kthvalue``
against PyTorch, for what the op sweep cannot express: the public argument forms,
named tuples, NaN handling and the op stream a dispatch mode sees."""

from __future__ import annotations

import pytest
from oracle import SkOpLog, torch_op_log

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle")

NAN = float("nan")


def _x(L):
    return L.tensor([[1.0, NAN, 3.0], [0.0, 2.0, 2.0]])


CALLS = {
    "count_nonzero": lambda x, L: L.count_nonzero(x),
    "count_nonzero int": lambda x, L: x.count_nonzero(1),
    "count_nonzero list": lambda x, L: L.count_nonzero(x, [0, 1]),
    "nansum": lambda x, L: L.nansum(x, 1),
    "nansum out": lambda x, L: L.nansum(x, out=L.empty(0, dtype=L.float64)),
    "nanmean": lambda x, L: x.nanmean(1, True),
    "nanmean out": lambda x, L: L.nanmean(x, 0, out=L.empty(0)),
    "aminmax": lambda x, L: L.aminmax(x[1:]),
    "aminmax dim": lambda x, L: x.aminmax(dim=1, keepdim=True),
    "aminmax out": lambda x, L: L.aminmax(x, dim=0, out=(L.empty(0), L.empty(0))),
    "isclose": lambda x, L: L.isclose(x, x[1]),
    "isclose nan": lambda x, L: x.isclose(x, equal_nan=True),
    "isclose int": lambda x, L: L.isclose(x.long(), x.long() + 1, atol=1),
    "isclose zero tol": lambda x, L: L.isclose(x, x, 0.0, 0.0),
    "allclose": lambda x, L: L.allclose(x, x, equal_nan=True),
    "equal": lambda x, L: L.equal(x[1:], x[1:].clone()),
    "cummax": lambda x, L: L.cummax(x, 1),
    "cummin t": lambda x, L: x.t().cummin(0),
    "cummax out": lambda x, L: L.cummax(x, 0, out=(L.empty(0), L.empty(0, dtype=L.int64))),
    "logcumsumexp": lambda x, L: L.logcumsumexp(x, 1),
    "logcumsumexp out": lambda x, L: x.t().logcumsumexp(0),
    "median": lambda x, L: L.median(x),
    "median dim": lambda x, L: x.median(1),
    "median out": lambda x, L: L.median(x, 0, True, out=(L.empty(0), L.empty(0, dtype=L.int64))),
    "nanmedian": lambda x, L: x.nanmedian(),
    "nanmedian dim": lambda x, L: L.nanmedian(x, -1, keepdim=True),
    "kthvalue": lambda x, L: L.kthvalue(x[1:], 2),
    "kthvalue dim": lambda x, L: x.kthvalue(1, 0, True),
    "kthvalue out": lambda x, L: L.kthvalue(x, 1, 1, out=(L.empty(0), L.empty(0, dtype=L.int64))),
}


def _plain(r):
    if isinstance(r, tuple):
        return type(r).__name__, [_plain(t) for t in r]
    if isinstance(r, bool):
        return r
    return (r.tolist(), tuple(r.shape), tuple(r.stride()), str(r.dtype).split(".")[-1])


@pytest.mark.parametrize("name", list(CALLS))
def test_results_and_op_stream_match_torch(name):
    """Same values, layouts, named-tuple type and op names under a dispatch mode (overload
    names differ where we pass Python numbers in Tensor positions)."""
    got = []
    for L in (sk, torch):
        x = _x(L)
        log = SkOpLog() if L is sk else torch_op_log()
        with log:
            r = CALLS[name](x, L)
        got.append((str(_plain(r)).replace("nan", "NaN"), [o for o in log.ops
                                                            if o != "empty"]))
    assert got[0] == got[1]


def test_named_tuple_fields():
    r = sk.aminmax(sk.tensor([3.0, 1.0, 2.0]))
    assert isinstance(r, sk.return_types.aminmax) and r._fields == ("min", "max")
    assert (r.min.item(), r.max.item()) == (1.0, 3.0)


@pytest.mark.parametrize("call", [
    lambda L: L.aminmax(L.empty(0)),
    lambda L: L.nanmean(L.tensor([1, 2])),
    lambda L: L.isclose(L.ones(2), L.ones(2, dtype=L.int64)),
    lambda L: L.allclose(L.ones(2, device="meta"), L.ones(2, device="meta")),
    lambda L: L.equal(L.ones(2, device="meta"), L.ones(2, device="meta")),
], ids=["aminmax empty", "nanmean int", "isclose dtypes", "allclose meta", "equal meta"])
def test_errors_match_torch(call):
    got = []
    for L in (sk, torch):
        with pytest.raises(Exception) as info:
            call(L)
        got.append((type(info.value).__name__, str(info.value).splitlines()[0]))
    assert got[0] == got[1]


TIES = [1.0, 0.0, -0.0, 1.0, NAN, 5.0, NAN, 1.0]


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cumulative_extremes_with_ties_and_nan(name):
    """Ties move the index to the latest occurrence (``-0.0`` ties ``0.0`` and is taken); NaN
    stays once seen and each later NaN takes the index."""
    got = []
    for L in (sk, torch):
        r = getattr(L, name)(L.tensor([TIES, TIES[::-1]]), 1)
        got.append((type(r).__name__, len(r), str(r.values.tolist()), r.indices.tolist(),
                    [str(v) for v in r.values.reshape(-1).tolist()]))
    assert got[0] == got[1]


def test_logcumsumexp_integral_raises_on_meta_too():
    """PyTorch's meta kernel accepts integral inputs; ours raises the cpu error
    (docs/differences.md, "One rule per op")."""
    for L in (sk, torch):
        with pytest.raises(NotImplementedError, match="logcumsumexp_out_cpu"):
            L.logcumsumexp(L.tensor([1, 2]), 0)
    with pytest.raises(NotImplementedError, match="logcumsumexp_out_cpu"):
        sk.logcumsumexp(sk.ones(2, 3, dtype=sk.int64, device="meta"), 1)
    assert torch.logcumsumexp(torch.ones(2, 3, dtype=torch.int64, device="meta"), 1).shape == (2, 3)


MEDIAN_ROWS = [[NAN, 1.0, NAN, 2.0], [1.0, NAN, 0.0, NAN], [3.0, 1.0, 2.0, 0.0], [NAN] * 4]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_with_nan(name):
    """median: NaN and the index of the first NaN; nanmedian: the lower median of the rest (NaN
    and index 0 for an all-NaN row); the 0-d all-element form agrees."""
    got = []
    for L in (sk, torch):
        x = L.tensor(MEDIAN_ROWS[:3])
        r = getattr(L, name)(x, 1)
        whole = getattr(L, name)(x)
        got.append((type(r).__name__, str(r.values.tolist()), r.indices.tolist(),
                    str(whole.item())))
    assert got[0] == got[1]


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8])
def test_ties_give_a_tied_value_and_an_index_holding_it(k):
    """Among ties PyTorch's index is its nth_element's; ours is the stable order's
    (docs/differences.md). Values agree; each index points at an element equal to its value."""
    data = [2.0, 1.0, 2.0, 2.0, 1.0, 2.0, 3.0, 1.0]
    ours, theirs = sk.kthvalue(sk.tensor(data), k), torch.kthvalue(torch.tensor(data), k)
    assert ours.values.item() == theirs.values.item()
    assert data[ours.indices.item()] == ours.values.item()
    med = sk.median(sk.tensor(data), 0)
    assert (med.values.item(), med.indices.item()) == (2.0, 0)


def test_bool_selections_raise_on_meta_too():
    """PyTorch's meta kernels accept bool; ours raise the cpu error (docs/differences.md)."""
    for L in (sk, torch):
        with pytest.raises(NotImplementedError, match="median_cpu"):
            L.median(L.tensor([True, False]))
    with pytest.raises(NotImplementedError, match="kthvalue_cpu"):
        sk.kthvalue(sk.ones(2, dtype=sk.bool, device="meta"), 1)
    assert torch.kthvalue(torch.ones(2, dtype=torch.bool, device="meta"), 1).values.shape == ()


def test_median_without_dim_takes_no_out():
    for L in (sk, torch):
        with pytest.raises(TypeError, match="missing 1 required positional arguments"):
            L.median(L.ones(3), out=L.empty(0))
        with pytest.raises(TypeError, match="must be int, not NoneType"):
            L.median(L.ones(3), None)
