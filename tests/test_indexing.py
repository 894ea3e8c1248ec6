"""``__getitem__`` / ``__setitem__`` / ``index`` / ``index_put_`` against torch.

Every case runs the same index expression in both libraries, on a strided view of a fresh base,
under a dispatch mode that logs the ops, and compares: the result (values, sizes, strides,
offset, contiguity), ``_base`` and storage sharing with the base, the base's ``_version`` and
values afterwards, the op stream the mode saw, and on failure the exception class and text.
Random index tuples (ints in and out of range, slices with steps, None, ``...``, bools, integer
tensors, lists, masks, 0-d tensors) come from hypothesis.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for indexing")
hypothesis = pytest.importorskip("hypothesis", reason="hypothesis generates the index tuples")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import SkOpLog, assert_same, normalize_message, same_storage, torch_op_log

FUZZ = settings(max_examples=600, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def _rare(draw, n) -> bool:
    """True about once in ``n + 1`` draws. (Not ``== 0``: hypothesis favours small values.)"""
    return draw(st.integers(0, n)) == n // 2


# -- op logging in both libraries ---------------------------------------------------------------
def SkLog():
    return SkOpLog(overloads=True)

def TorchLog():
    return torch_op_log(overloads=True)


# -- building the same inputs in both libraries --------------------------------------------------
class T:
    """A tensor in an index or value position: numpy data, built in each library."""

    def __init__(self, array, dtype=None, post=None):
        self.array = np.asarray(array)
        self.dtype = dtype or self.array.dtype.name
        self.post = post  # "t": build transposed (2-d); "expand": a stride-0 leading dim

    def build(self, lib, device="cpu"):
        data = self.array.T if self.post == "t" else self.array
        if lib is torch:
            t = torch.from_numpy(data.astype(self.dtype).copy())
            t = t if device == "cpu" else t.to(device)
        else:
            t = sk.tensor(data.astype(self.dtype).copy(), dtype=getattr(sk, self.dtype),
                          device=device)
        if self.post == "t":
            return t.t()
        if self.post == "expand":
            return t.unsqueeze(0).expand(2, *t.shape)
        return t

    def __repr__(self):
        post = f", post={self.post!r}" if self.post else ""
        return f"T({self.array.tolist()!r}, {self.dtype}{post})"


def build(obj, lib, device="cpu"):
    if isinstance(obj, T):
        return obj.build(lib, device)
    if isinstance(obj, tuple):
        return tuple(build(o, lib, device) for o in obj)
    if isinstance(obj, list):
        return [build(o, lib, device) for o in obj]
    return obj


class Case:
    """A strided tensor ``x`` over a fresh 1-d base ``b``, in one library."""

    def __init__(self, lib, layout, dtype, device):
        sizes, strides, offset, n = layout
        data = np.arange(n).astype(dtype)
        if lib is torch:
            self.b = torch.from_numpy(data).to(device)
        else:
            self.b = sk.tensor(data, device=device)
        self.x = self.b.as_strided(sizes, strides, offset)
        self.lib = lib

    def run(self, fn):
        log = TorchLog() if self.lib is torch else SkLog()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with log:
                    out = fn(self.x)
                err = None
            except Exception as e:  # noqa: BLE001 - the exception is what we compare
                out, err = None, e
        return out, err, log.ops


def compare(layout, dtype, device, make_fn, check_ops=True):
    if device == "meta":
        return compare_meta(layout, dtype, make_fn)
    theirs, ours = Case(torch, layout, dtype, device), Case(sk, layout, dtype, device)
    t_out, t_err, t_ops = theirs.run(make_fn(torch, device))
    s_out, s_err, s_ops = ours.run(make_fn(sk, device))
    if t_err is not None or s_err is not None:
        assert s_err is not None, f"torch raised {t_err!r}, we returned {s_out!r}"
        assert t_err is not None, f"we raised {s_err!r}, torch returned {t_out!r}"
        assert _same_error(s_err, t_err), (s_err, t_err)
    else:
        if isinstance(t_out, torch.Tensor):
            assert_same(s_out, t_out, check_values=device == "cpu")
            assert (s_out._base is ours.b) == (t_out._base is theirs.b)
            assert same_storage(s_out, ours.b) == same_storage(t_out, theirs.b)
    if check_ops:
        assert s_ops == t_ops
    assert ours.b._version == theirs.b._version
    if s_err is not None:
        # A failing op leaves the data alone (PyTorch may have written part of it).
        np.testing.assert_array_equal(ours.b.numpy(), np.arange(layout[3]).astype(dtype))
    else:
        np.testing.assert_array_equal(ours.b.numpy(), theirs.b.numpy())


def compare_meta(layout, dtype, make_fn):
    """On meta, our kernels follow the cpu rules where torch's Python meta kernels differ
    (texts, uint8/int8 indices, dtype checks): ours must match torch-meta or torch-cpu, minus
    the data-dependent checks meta skips."""
    ours = Case(sk, layout, dtype, "meta")
    s_out, s_err, _ = ours.run(make_fn(sk, "meta"))
    refs = []
    for device in ("meta", "cpu"):
        case = Case(torch, layout, dtype, device)
        refs.append((case,) + case.run(make_fn(torch, device))[:2])
    if s_err is not None:
        assert any(_same_error(s_err, err) for _, _, err in refs), (s_err, refs)
        return
    problems = []
    for case, out, err in refs:
        if err is not None:
            problems.append(repr(err))
            continue
        if isinstance(out, torch.Tensor):
            theirs = out.to("meta") if out.device.type == "cpu" else out
            try:
                assert_same(s_out, theirs, check_values=False)
                assert (s_out._base is ours.b) == (out._base is case.b)
            except AssertionError as e:
                problems.append(str(e))
                continue
        if ours.b._version != case.b._version:
            problems.append(f"version {ours.b._version} vs {case.b._version}")
            continue
        return
    raise AssertionError(f"meta result {s_out!r} matches neither torch meta nor cpu: {problems}")


def _same_error(ours, theirs) -> bool:
    if theirs is None or type(ours).__name__ != type(theirs).__name__:
        return False
    return str(ours) in (str(theirs), normalize_message(str(theirs)))


# -- strategies -------------------------------------------------------------------------------
@st.composite
def layouts(draw, max_ndim=4):
    """(sizes, strides, offset, storage elements) of a strided view inside its storage."""
    ndim = draw(st.integers(0, max_ndim))
    sizes = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    if draw(st.booleans()):
        strides, acc = [], 1
        for s in reversed(sizes):
            strides.append(acc)
            acc *= max(s, 1)
        strides = tuple(reversed(strides))
    else:
        strides = tuple(draw(st.lists(st.integers(0, 12), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, 3))
    extent = offset + sum((s - 1) * st_ for s, st_ in zip(sizes, strides) if s) + 1
    return sizes, strides, offset, extent + draw(st.integers(0, 2))


def _int_index(draw, size):
    if _rare(draw, 9):
        return draw(st.integers(-size - 2, size + 1))
    return draw(st.integers(-size, size - 1)) if size else draw(st.integers(-1, 1))


def _index_values(draw, size, shape):
    n = int(np.prod(shape)) if shape else 1
    vals = [_int_index(draw, size) for _ in range(n)]
    return np.array(vals, dtype=np.int64).reshape(shape)


@st.composite
def elements(draw, size, remaining):
    """One element of an index tuple for a dim of ``size`` (``remaining`` dims from there)."""
    kind = draw(st.sampled_from(["int", "int", "slice", "slice", "none", "ellipsis", "bool",
                                 "tensor", "list", "mask", "scalar", "scalar_bool", "np_int"]))
    if kind in ("int", "np_int"):
        v = _int_index(draw, size)
        return np.int64(v) if kind == "np_int" else v
    if kind == "slice":
        bound = st.one_of(st.none(), st.integers(-6, 6))
        step = draw(st.sampled_from([None, None, 1, 2, 3, -1, 0] if _rare(draw, 9)
                                    else [None, 1, 2, 3]))
        return slice(draw(bound), draw(bound), step)
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "bool":
        return draw(st.booleans())
    if kind == "tensor":
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        dtype = draw(st.sampled_from(["int64", "int64", "int32", "float32", "int16"]))
        post = draw(st.sampled_from([None, None, "expand"] + (["t"] if len(shape) == 2 else [])))
        return T(_index_values(draw, size, shape), dtype, post)
    if kind == "list":
        n = draw(st.integers(0, 3))
        return [_int_index(draw, size) for _ in range(n)]
    if kind == "mask":
        ndim = draw(st.integers(1, 2)) if remaining >= 2 else 1
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
        dtype = "bool" if draw(st.integers(0, 5)) else "uint8"
        return T(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                               max_size=int(np.prod(shape)))), dtype).reshaped(shape)
    if kind == "scalar":
        return T(np.array(_int_index(draw, size)), draw(st.sampled_from(["int64", "int32"])))
    return T(np.array(draw(st.booleans())), "bool")


def _reshaped(self, shape):
    self.array = self.array.reshape(shape)
    return self


T.reshaped = _reshaped


@st.composite
def indices(draw, sizes):
    """A whole index: a tuple of elements (sometimes a bare element)."""
    count = draw(st.integers(0, len(sizes) + 1))
    out = []
    for k in range(count):
        d = min(k, len(sizes) - 1)
        size = sizes[d] if sizes else 1
        out.append(draw(elements(size, len(sizes) - k)))
    # Several ``...`` make PyTorch read sizes past the last dim (undefined): keep one at most.
    while out.count(Ellipsis) > 1:
        out.remove(Ellipsis)
    if len(out) == 1 and draw(st.booleans()):
        return out[0]
    return tuple(out)


# -- getitem ----------------------------------------------------------------------------------
def _getitem(index):
    def make(lib, device):
        idx = build(index, lib)
        return lambda x: x[idx]
    return make


@FUZZ
@given(data=st.data(), device=st.sampled_from(["cpu", "cpu", "cpu", "meta"]),
       dtype=st.sampled_from(["float32", "int64"]))
def test_getitem_fuzz(data, device, dtype):
    layout = data.draw(layouts())
    index = data.draw(indices(layout[0]))
    compare(layout, dtype, device, _getitem(index), check_ops=device == "cpu")


GETITEM_CASES = [
    0, -1, 5, -3, slice(None), slice(1, None), slice(None, None, 2), slice(0, 100),
    (slice(None), 1), (slice(0, 100), 1), (slice(0, 2), 1), (slice(None), slice(None)),
    Ellipsis, (), None, (Ellipsis, None), (slice(None), None, 1), True, False, (True, 0),
    (0, True), (False, 0), [0, 1], (slice(None), [0, 2]), ([0, 1], slice(None), [1, 2]),
    (0, slice(None), [1, 2]), [[0, 1]], [0, slice(None)], (0,), ([1, 2],), (1, Ellipsis, 2),
    (Ellipsis, 0, Ellipsis), (None, 5), (Ellipsis, 5), (0, Ellipsis, 5), (slice(None), 0, 7),
    (0, 0, 0, 0), "a", 1.0, {1}, (slice(None), "a"), slice(None, None, -1),
    slice(None, None, 0), slice(1.5, None), [True, False], [1.0], range(2), [[0, 1], [1, 0]],
    (np.int64(1),), np.array(1), np.array([0, 1]), np.array([True, False]), np.bool_(True),
    (None,) * 3, [0, 0, 0],
]


@pytest.mark.parametrize("index", GETITEM_CASES, ids=repr)
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_getitem_cases(index, device):
    layout = ((2, 3, 4), (12, 4, 1), 0, 24)
    compare(layout, "float32", device, _getitem(index), check_ops=device == "cpu")


TENSOR_CASES = [
    (T([0, 1]),), (T([[0], [2]]),), (slice(None), T([5])), (slice(None), slice(None), T([5])),
    (T([1]), slice(None), T([7])), (T([0]), T([9]), T([7])), (T([0, 1]), T([0, 1, 2])),
    (T([0.0]),), (T([True, False, True]),), (T(np.ones((2, 3), bool)), 0),
    (1, T(np.ones((3, 4), bool))), (T(np.ones((2, 3), bool)), T([0, 1, 2, 3, 0, 1])),
    (T([0, 1]), T(np.ones((3, 4), bool))), (slice(None), T(np.ones((3, 4), bool))),
    (T([True, False]), slice(None), T([1])), (None, T([0, 1]), None, T([0, 1])),
    (T([0, 1]), slice(None), None), (T([0, 1]), None, T([0, 1])), (T([0, 1]), 0, T([0, 1])),
    (T(1),), (T(True),), (T(1, "uint8"),), (T([1, 0], "uint8"),), (T([0, 1], "int8"),),
    (T(1, "int32"),), (T(5),), (T(1.0),), (T(np.ones((2, 4), bool)),),
    (slice(None), T(np.ones((2, 4), bool))), (T(np.ones((2, 3, 4, 1), bool)),),
    (T(np.zeros(0, np.int64)),), (T([0, 1]),) * 4, (True, T([0, 1])), (T([0, 1]), True),
    (Ellipsis, True), (slice(1, None), T([0, 1])), (slice(None), slice(1, None), T([0, 1])),
    (slice(None), slice(0, 3), T([0, 1])), (T([[0, 1], [1, 0]]),),
    (slice(None), T([[0, 1], [1, 2]])), (T([0, 1]), Ellipsis, T([0, 1]), None),
]


@pytest.mark.parametrize("index", TENSOR_CASES, ids=repr)
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_tensor_index_cases(index, device):
    layout = ((2, 3, 4), (12, 4, 1), 0, 24)
    compare(layout, "float32", device, _getitem(index), check_ops=device == "cpu")


@pytest.mark.parametrize("index", [(T([0, 1]),), (slice(None), T([0, 1])),
                                   (T([0, 1]), slice(None), T([1, 2])),
                                   (slice(None), T([[0, 1], [1, 0]]))], ids=repr)
@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)])
def test_index_result_strides_follow_input(index, perm):
    """TensorIterator picks the output layout from the permuted input and the index tensors."""
    def make(lib, device):
        idx = build(index, lib)
        return lambda x: x.permute(*perm)[idx]
    compare(((2, 3, 4), (12, 4, 1), 0, 24), "float32", "cpu", make)


@pytest.mark.parametrize("index", [(T([[0, 1], [1, 0]], "int32", "t"),),
                                   (T([0, 1], "int32", "expand"),),
                                   (slice(None), T([[0, 2], [1, 1]], "int64", "t")),
                                   (T([0, 1], "int64", "expand"), slice(None),
                                    T([[1], [2]], "int32", "t"))], ids=repr)
def test_strided_index_tensors(index):
    compare(((2, 3, 4), (12, 4, 1), 0, 24), "float32", "cpu", _getitem(index))


def test_transposed_index_tensor_orders_the_result():
    def make(lib, device):
        i = build(T([[0, 1], [1, 0]]), lib).t()
        return lambda x: x[i]
    compare(((2, 3, 4), (12, 4, 1), 0, 24), "float32", "cpu", make)


# -- setitem ----------------------------------------------------------------------------------
def _setitem(index, value):
    def make(lib, device):
        idx = build(index, lib)
        val = build(value, lib)

        def fn(x):
            x[idx] = val
            return x
        return fn
    return make


@st.composite
def values(draw, shape):
    kind = draw(st.sampled_from(["number", "number", "tensor", "tensor", "broadcast", "bad"]))
    if kind == "number":
        return draw(st.one_of(st.integers(-3, 3), st.floats(-3, 3, width=32), st.booleans()))
    dtype = draw(st.sampled_from(["float32", "float32", "float32", "int64"]))
    if kind == "tensor":
        shape = (1,) * draw(st.integers(0, 2)) + tuple(shape)
    elif kind == "broadcast":
        shape = tuple(1 if draw(st.booleans()) else s for s in shape)
        shape = shape[draw(st.integers(0, len(shape))):]
    else:
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    n = int(np.prod(shape)) if shape else 1
    return T((np.arange(n) + 100).reshape(shape), dtype)


@FUZZ
@given(data=st.data(), device=st.sampled_from(["cpu", "cpu", "cpu", "meta"]))
def test_setitem_fuzz(data, device):
    layout = data.draw(layouts())
    if data.draw(st.booleans()):
        numel = int(np.prod(layout[0]))
        layout = (layout[0], tuple(_contig(layout[0])), layout[2], layout[2] + numel + 1)
    # Writes through self-overlapping views have no defined order: keep destinations distinct.
    hypothesis.assume(_distinct_elements(layout))
    index = data.draw(indices(layout[0]))
    shape = _result_shape(layout, index)
    value = data.draw(values(shape))
    compare(layout, "float32", device, _setitem(index, value), check_ops=device == "cpu")


def _distinct_elements(layout) -> bool:
    sizes, strides, offset, _ = layout
    where = np.full(sizes, offset, dtype=np.int64)
    for d, (size, stride) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[d] = size
        where = where + (np.arange(size) * stride).reshape(shape)
    return np.unique(where).size == where.size


def _contig(sizes):
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= max(s, 1)
    return reversed(strides)


def _result_shape(layout, index):
    x = torch.zeros(layout[3]).as_strided(*layout[:3])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tuple(x[build(index, torch)].shape)
    except Exception:  # noqa: BLE001 - any shape will do for a failing index
        return (2,)


SETITEM_CASES = [
    (0, 5.0), ((0, 0, 0), 5.0), (slice(None), 5.0), (0, T(np.ones(4, np.float32))),
    (0, T(np.ones((3, 4), np.float32))), (0, T(np.ones((1, 1, 4), np.float32))),
    (T([0, 1]), 5.0), (T([0, 1]), T(np.ones(4, np.float32))),
    (T([0, 1]), T(np.ones(4, np.int64))), (False, 1.0), (True, 1.0), (None, 1.0),
    (Ellipsis, 1.0), (0, T(np.array(3.0, np.float32))), (0, [1, 2]),
    (T([0, 1]), T(np.ones((1, 3, 4), np.float32))), (T([0, 1]), T(np.ones(3, np.float32))),
    (5, 1.0), ((0, 0, 0), T(np.ones(1, np.float32))), (0, T(np.ones(5, np.float32))),
    (T(np.ones((2, 3, 4), bool)), 1.0), (T(np.ones((2, 3), bool)), T(np.array([7], np.int64))),
    ((slice(None), 1), T(np.ones(3, np.float32))), (0, 2), (0, True), (0, np.float32(1.0)),
    (0, np.float64(1.5)), (0, np.int64(3)), (0, "a"), ((T([0, 1]), T([1, 1])), 9.0),
    ([0, 1], 4.0), ((slice(None), [0, 2]), T(np.ones((2, 1, 4), np.float32))),
    (0, T(np.ones((2, 3, 4), np.float32))), ((0, T([0, 0])), T(np.array([1.0, 2.0], np.float32))),
]


@pytest.mark.parametrize("index,value", SETITEM_CASES, ids=repr)
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_setitem_cases(index, value, device):
    compare(((2, 3, 4), (12, 4, 1), 0, 24), "float32", device, _setitem(index, value),
            check_ops=device == "cpu")


# -- index_put_ / index_put -------------------------------------------------------------------
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("index", [(T([0, 0, 1]),), (T([0, 1, 0]), T([2, 2, 2])),
                                   (T([1, 1]), T([0, 0]), T([3, 3])),
                                   (T([[0, 1], [1, 1]]), T([0, 0])),
                                   (T(np.ones((2, 3), bool)),), (T([1, 1]), T([9, 0]))],
                         ids=repr)
def test_index_put_accumulate(index, accumulate):
    def make(lib, device):
        idx = build(index, lib)
        try:
            shape = tuple(torch.zeros(2, 3, 4)[build(index, torch)].shape)
        except IndexError:
            shape = (2, 4)
        val = build(T(np.arange(int(np.prod(shape))).reshape(shape).astype(np.float32)), lib)
        return lambda x: x.index_put_(idx, val, accumulate=accumulate)
    compare(((2, 3, 4), (12, 4, 1), 0, 24), "float32", "cpu", make)


def test_index_put_rejects_none_in_indices():
    def make(lib, device):
        idx = (None, build(T([1, 1]), lib))
        return lambda x: x.index_put_(idx, build(T(np.ones(4, np.float32)), lib))
    compare(((2, 3, 4), (12, 4, 1), 0, 24), "float32", "cpu", make)


def test_index_put_functional_leaves_input():
    x = sk.arange(12.).reshape(3, 4).t()
    out = x.index_put((sk.tensor([0, 0]),), sk.tensor([1.0, 2.0, 3.0]), accumulate=True)
    tx = torch.arange(12.).reshape(3, 4).t()
    t_out = tx.index_put((torch.tensor([0, 0]),), torch.tensor([1.0, 2.0, 3.0]),
                         accumulate=True)
    assert_same(out, t_out)
    assert x._version == 0 and out._base is None
    assert_same(x, tx)
    assert sk.index_put(x, (sk.tensor([1]),), sk.tensor(5.0)).tolist()[1] == [5.0] * 3


def test_index_put_values_must_be_tensor():
    with pytest.raises(TypeError, match="must be Tensor"):
        sk.zeros(3).index_put_((sk.tensor([0]),), 1.0)


def test_index_put_overlapping_values_rejected():
    x = sk.arange(6.)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x.index_put_((sk.tensor([0, 1]),), x[:2])
    assert x._version == 0 and x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_failing_setitem_leaves_data_and_version():
    x = sk.arange(6.)
    with pytest.raises(IndexError):
        x[sk.tensor([0, 9])] = sk.tensor([7.0, 8.0])
    assert x._version == 0 and x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_delitem_is_a_type_error():
    x = sk.zeros(2)
    with pytest.raises(TypeError, match="does not support deleting"):
        del x[0]


def test_meta_mask_on_meta_raises_nonzero_text():
    m = sk.empty(2, 3, device="meta")
    mask = sk.ones(2, dtype=sk.bool).to("meta")
    with pytest.raises(NotImplementedError, match="torch.nonzero"):
        m[mask]


def test_index_views_and_copies():
    x = sk.zeros(3, 4)
    assert x[0]._base is x and x[...]._base is x and x[:, :] is not x
    assert x[[0, 1]]._base is None and x[sk.tensor([0])]._base is None
    x[:, 1] = sk.ones(3)
    x[sk.tensor([0, 1])] = 0.0
    assert x._version == 2
