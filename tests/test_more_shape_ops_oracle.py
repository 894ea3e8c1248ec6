"""``broadcast_to``, ``ravel``, ``atleast_*d``, ``*stack``, ``tensor_split``, ``*split``,
``fliplr``/``flipud``, ``rot90``, ``trace``, ``take``, ``vdot``, ``diff`` against PyTorch, for
what the op sweep's samples cannot express: the public argument forms, views vs copies
(``_base``), results returned as the input itself, tensor-valued split indices on meta, and the
op stream a dispatch mode sees for each public function.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import SkOpLog, torch_op_log

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle")


def _inputs(L):
    return L.arange(24.0).reshape(2, 3, 4), L.arange(6.0).reshape(2, 3), L.arange(3.0)


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _summary(r, inputs):
    """Per output: values, sizes, strides, offset, dtype, and which input it is / views."""
    rows = []
    for t in _flat(r):
        base = t._base if t._base is not None else None
        rows.append((t.detach().numpy().tolist(), tuple(t.shape), tuple(t.stride()),
                     t.storage_offset(), str(t.dtype).split(".")[-1],
                     [i for i, x in enumerate(inputs) if t is x],
                     [i for i, x in enumerate(inputs) if base is x or base is x._base and
                      x._base is not None]))
    return rows


CALLS = {
    "broadcast_to": lambda x, m, v, L: L.broadcast_to(v, (2, 3)),
    "Tensor.broadcast_to": lambda x, m, v, L: v.broadcast_to(4, 3),
    "ravel": lambda x, m, v, L: L.ravel(m),
    "ravel t": lambda x, m, v, L: m.t().ravel(),
    "atleast_1d 0-d": lambda x, m, v, L: L.atleast_1d(v[0]),
    "atleast_2d many": lambda x, m, v, L: L.atleast_2d(v[0], v, m),
    "atleast_3d list": lambda x, m, v, L: L.atleast_3d([v, m, x]),
    "atleast_3d same": lambda x, m, v, L: L.atleast_3d(x),
    "hstack": lambda x, m, v, L: L.hstack([m, m]),
    "hstack 1-D": lambda x, m, v, L: L.hstack((v, v[:2])),
    "hstack out": lambda x, m, v, L: L.hstack([m, m], out=L.empty(0)),
    "vstack": lambda x, m, v, L: L.vstack([v, m]),
    "row_stack": lambda x, m, v, L: L.row_stack([v, v]),
    "vstack out": lambda x, m, v, L: L.vstack([v, v], out=L.empty(0)),
    "dstack": lambda x, m, v, L: L.dstack([v, v]),
    "dstack 0-d": lambda x, m, v, L: L.dstack([v[0], v[1]]),
    "dstack out": lambda x, m, v, L: L.dstack([m, m], out=L.empty(0)),
    "tensor_split": lambda x, m, v, L: L.tensor_split(x, 3, 2),
    "tensor_split list": lambda x, m, v, L: x.tensor_split([1, 3], dim=-1),
    "tensor_split tensor": lambda x, m, v, L: L.tensor_split(x, L.tensor([1, 3]), 2),
    "tensor_split 0-d tensor": lambda x, m, v, L: L.tensor_split(x, L.tensor(2), 1),
    "tensor_split kw": lambda x, m, v, L: L.tensor_split(x, sections=2),
    "hsplit": lambda x, m, v, L: L.hsplit(x, 3),
    "hsplit 1-D": lambda x, m, v, L: v.hsplit([1]),
    "Tensor.hsplit ints": lambda x, m, v, L: x.hsplit(1, 2),
    "vsplit": lambda x, m, v, L: L.vsplit(m, [1]),
    "dsplit": lambda x, m, v, L: x.dsplit(2),
    "fliplr": lambda x, m, v, L: L.fliplr(m),
    "flipud": lambda x, m, v, L: x.flipud(),
    "rot90": lambda x, m, v, L: L.rot90(m),
    "rot90 k dims": lambda x, m, v, L: x.rot90(3, [2, 0]),
    "rot90 0": lambda x, m, v, L: L.rot90(m, 0),
    "trace": lambda x, m, v, L: L.trace(m),
    "Tensor.trace": lambda x, m, v, L: m.long().trace(),
    "take": lambda x, m, v, L: L.take(m, L.tensor([[0, -1], [2, 3]])),
    "take out": lambda x, m, v, L: m.take(L.tensor([1, 2])) + L.take(m, L.tensor([5]),
                                                                    out=L.empty(0)),
    "vdot": lambda x, m, v, L: L.vdot(v, v),
    "Tensor.vdot": lambda x, m, v, L: v.vdot(v + 1),
    "diff": lambda x, m, v, L: L.diff(x),
    "diff n dim": lambda x, m, v, L: x.diff(2, 1),
    "diff prepend append": lambda x, m, v, L: L.diff(m, prepend=m, append=m[:, :1]),
    "diff n=0": lambda x, m, v, L: L.diff(m, 0),
    "diff empty": lambda x, m, v, L: L.diff(m[:, :0]),
    "diff big n": lambda x, m, v, L: L.diff(v, 7),
    "diff out": lambda x, m, v, L: L.diff(m, 2, out=L.empty(0)),
    "diff out n=0": lambda x, m, v, L: L.diff(m, 0, out=L.empty(0)),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_results_views_and_op_stream_match_torch(name):
    """Same values and layouts, same outputs that are inputs or views of them, and the same
    op stream under a dispatch mode as PyTorch's ``TorchDispatchMode``."""
    got = []
    for L in (sk, torch):
        inputs = _inputs(L)
        log = SkOpLog(overloads=True) if L is sk else torch_op_log(overloads=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with log:
                r = CALLS[name](*inputs, L)
        got.append((log.ops, _summary(r, inputs), type(r).__name__))
    assert got[0] == got[1]


def test_diff_of_an_empty_dim_is_the_input_itself():
    for L in (sk, torch):
        x = L.ones(2, 0)
        assert L.diff(x) is x
        y = L.ones(2, 3)
        assert L.diff(y, 0) is not y


@pytest.mark.parametrize("with_out", [False, True])
def test_diff_of_bool_takes_logical_xor_like_torch(with_out):
    """Bool slices are compared with ``logical_xor`` (``logical_xor.out`` for ``out=``), as
    PyTorch's ``diff``: same values and op stream."""
    a = [[True, False, False], [True, True, False]]
    got = []
    for L in (sk, torch):
        x = L.tensor(a)
        out = L.empty(0, dtype=L.bool) if with_out else None
        log = SkOpLog(overloads=True) if L is sk else torch_op_log(overloads=True)
        with log:
            r = L.diff(x, out=out) if with_out else L.diff(x)
        got.append((r.tolist(), log.ops))
    assert got[0] == got[1]


def test_tensor_indices_on_meta_raise_like_torch():
    for L in (sk, torch):
        x = L.ones(5, device="meta")
        with pytest.raises(RuntimeError, match="expected tensor_indices_or_sections to be on "
                                               "cpu, but it's on meta"):
            L.tensor_split(x, L.tensor([1, 2], device="meta"))
        parts = L.tensor_split(x, L.tensor([1, 2]))
        assert [tuple(p.shape) for p in parts] == [(1,), (1,), (3,)]


def test_meta_shapes_of_the_primitives():
    for L in (sk, torch):
        m = L.empty(2, 3, 4, device="meta")
        r = L.rot90(m, 1, [0, 2])
        assert (tuple(r.shape), tuple(r.stride())) == ((4, 3, 2), (1, 4, 12))
        assert L.trace(m[0]).shape == ()
        assert L.take(m, L.empty(2, 2, dtype=L.int64, device="meta")).shape == (2, 2)


@pytest.mark.parametrize("call", [
    lambda L: L.hstack(L.ones(2)),
    lambda L: L.tensor_split(L.ones(3), 1.5),
    lambda L: L.hsplit(L.ones(4), L.tensor([1])),
    lambda L: L.take(L.ones(3), L.tensor([3])),
    lambda L: L.rot90(L.ones(2, 2), 1, [0, 1, 2]),
], ids=["hstack tensor", "tensor_split float", "hsplit tensor", "take range", "rot90 dims"])
def test_errors_match_torch(call):
    kinds = []
    for L in (sk, torch):
        with pytest.raises(Exception) as info:
            call(L)
        kinds.append(type(info.value).__name__)
    assert kinds[0] == kinds[1]


def test_values_on_a_bigger_random_input():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((5, 7)).astype(np.float32)
    for name, fn in {"rot90": lambda L, t: L.rot90(t, 3),
                     "trace": lambda L, t: L.trace(t),
                     "diff": lambda L, t: L.diff(t, 3, 0),
                     "take": lambda L, t: L.take(t, L.tensor([34, -35, 7]))}.items():
        ours = fn(sk, sk.tensor(data)).numpy()
        theirs = fn(torch, torch.tensor(data)).numpy()
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
