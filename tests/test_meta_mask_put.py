"""``x[mask] = v`` / ``index_put_`` / ``index_put`` with boolean masks on meta tensors.

The result of a mask put is ``self`` (or a clone of it), whatever the mask holds, so meta needs no
``nonzero`` (Note [Meta mask put] in ``subclass_kit/kernels/indexing.py``). Each program runs on
``device="meta"`` in both libraries and on cpu in torch, with the same mask data:

- when we succeed, torch meta succeeds with the same sizes, strides, dtype and ``_version``, and
  torch cpu either agrees or raises an error that depends on the data ("shape mismatch: ..."
  names the count of True elements; out-of-bounds integer indices);
- when we raise, torch meta raises the same class and text, or if it does not, torch cpu does (we
  keep cpu's data-independent checks: mask shape, index count and dtype, value dtype; torch's
  meta kernel skips them).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import normalize_message

from subclass_kit.modes import infer_shapes

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


class Arr:
    """An index or value tensor given by numpy data, built in either library on either device."""

    def __init__(self, data, dtype=None):
        self.data = np.asarray(data)
        self.dtype = dtype or self.data.dtype.name

    def build(self, lib, device):
        data = self.data.astype(self.dtype)
        if lib is torch:
            return torch.from_numpy(data.copy()).to(device)
        return sk.tensor(data, dtype=getattr(sk, self.dtype), device=device)

    def __repr__(self):
        return f"Arr({self.data.tolist()!r}, {self.dtype})"


def _build(obj, lib, device):
    if isinstance(obj, Arr):
        return obj.build(lib, device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_build(o, lib, device) for o in obj)
    return obj


def _run(lib, device, sizes, transpose, form, index, value, accumulate):
    """Run one program; returns (self, result, error)."""
    x = lib.zeros(sizes[::-1] if transpose else sizes, device=device)
    x = x.t() if transpose else x
    index, value = _build(index, lib, device), _build(value, lib, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if form == "setitem":
                x[index] = value
                out = x
            elif form == "index_put_":
                out = x.index_put_(index, value, accumulate=accumulate)
            else:
                out = x.index_put(index, value, accumulate=accumulate)
        except Exception as e:  # noqa: BLE001 - the exception is what we compare
            return x, None, e
    return x, out, None


def _meta_facts(x, out):
    return (tuple(out.shape), out.stride(), str(out.dtype).split(".")[-1], x._version,
            out is x, tuple(x.shape), x.stride())


def _one_element_value(value, form, accumulate) -> bool:
    return (form == "setitem" or not accumulate) and isinstance(value, Arr) and value.data.size == 1


def _data_dependent(err) -> bool:
    """A cpu error that meta cannot see: it names the count of True elements, or it depends on
    that count or on the values of an integer index."""
    return str(err).startswith("shape mismatch") or "out of bounds" in str(err)


def _dtype_error(err) -> bool:
    return str(err).startswith("Index put requires the source and destination dtypes match")


def check(sizes, index, value, form="setitem", accumulate=False, transpose=False):
    args = (sizes, transpose, form, index, value, accumulate)
    sx, s_out, s_err = _run(sk, "meta", *args)
    tx, t_out, t_err = _run(torch, "meta", *args)
    cx, c_out, c_err = _run(torch, "cpu", *args)
    if s_err is not None:
        ref = t_err if t_err is not None else c_err
        if ref is None and _one_element_value(value, form, accumulate):
            # torch cpu puts a one-element *cpu* value with masked_fill_ (no dtype check); a value
            # on self's device (meta here, like cuda) takes index_put's dtype check.
            assert _dtype_error(s_err), s_err
            return s_err
        if _dtype_error(s_err) and str(ref).startswith("shape mismatch"):
            # The values fit some other mask data, which then meets the dtype check.
            return s_err
        assert ref is not None, f"we raised {s_err!r}, torch cpu returned"
        assert type(s_err).__name__ == type(ref).__name__, (s_err, ref)
        assert str(s_err) == normalize_message(str(ref)), (s_err, ref)
        assert sx._version == 0
        return s_err
    assert t_err is None, f"torch meta raised {t_err!r}"
    assert s_out.device.type == "meta"
    assert _meta_facts(sx, s_out) == _meta_facts(tx, t_out)
    if c_err is not None:
        assert isinstance(c_err, (RuntimeError, IndexError)), c_err
        assert _data_dependent(c_err), c_err
    else:
        assert _meta_facts(sx, s_out) == _meta_facts(cx, c_out)
    return None


def _mask(shape, fill=True):
    return Arr(np.full(shape, fill, dtype=bool))


# -- the reported bug and its forms ------------------------------------------------------------
def test_mask_from_comparison_on_meta():
    x = sk.ones(3, device="meta")
    x[x > 0] = 0.0
    assert x.shape == (3,) and x._version == 1 and x.device.type == "meta"
    x[x > 0] = sk.tensor(0.0).to("meta")
    x[x > 0] = sk.ones(1, device="meta")
    assert x._version == 3


_VALUES = [0.0, Arr(0.0, "float32"), Arr([1.0], "float32"), Arr([1.0, 2.0, 3.0], "float32")]
# setitem takes numbers and has no accumulate; index_put(_) take tensors only
_ONE_DIM = ([(v, "setitem", False) for v in _VALUES]
            + [(v, form, acc) for v in _VALUES[1:] for form in ("index_put_", "index_put")
               for acc in (False, True)])


@pytest.mark.parametrize("value, form, accumulate", _ONE_DIM)
def test_one_dim_mask(value, form, accumulate):
    index = _mask(3) if form == "setitem" else (_mask(3),)
    assert check((3,), index, value, form, accumulate) is None


_LAYOUTS = [
    ((3, 4), _mask(3), Arr(np.ones(4), "float32")),                      # mask over leading dim
    ((3, 4, 5), _mask((3, 4)), Arr(np.ones(5), "float32")),              # 2-d mask, leading dims
    ((3, 4, 5), _mask((3, 4)), Arr(np.ones((12, 5)), "float32")),
    ((3, 4, 5), (slice(None), _mask(4)), Arr(np.ones(5), "float32")),    # mask in the middle
    ((3, 4, 5), (slice(None), slice(None), _mask(5)), 2.0),             # trailing mask
    ((3, 4), (_mask(3), Arr([0])), 1.0),                                 # mask plus an int index
    ((3, 4), (Arr(1), _mask(4)), Arr(np.ones(4), "float32")),           # a 0-d int index
    ((3, 4, 5), (_mask(3), slice(None), Arr([1, 2, 3])), 1.0),          # non-adjacent: moved
    ((2, 0), (slice(None), _mask(0)), Arr(np.ones(3), "float32")),       # empty mask: known count
    ((3,), Arr([True, False, True]), Arr([5.0, 6.0], "float32")),
]


@pytest.mark.parametrize("sizes, index, value, transpose",
                         [(*case, t) for case in _LAYOUTS for t in (False, True)
                          if not t or len(case[0]) == 2])      # t() needs 2 dims
def test_mask_layouts(sizes, index, value, transpose):
    check(sizes, index, value, transpose=transpose)


def test_functional_index_put_keeps_strides():
    x = sk.zeros(4, 3, device="meta").t()
    y = x.index_put((sk.ones(3, dtype=sk.bool, device="meta"),), sk.tensor(1.0).to("meta"))
    assert y.shape == (3, 4) and y.stride() == (1, 3) and x._version == 0 and y is not x
    check((3, 4), (_mask(3),), Arr(1.0, "float32"), "index_put", transpose=True)


# -- errors: what meta checks without data -----------------------------------------------------
def test_wrong_mask_shape():
    err = check((3,), _mask(2), 0.0)
    assert isinstance(err, IndexError)
    assert str(err) == ("The shape of the mask [2] at index 0 does not match the shape of the "
                        "indexed tensor [3] at index 0")
    err = check((3, 4), (slice(None), _mask((4, 2))), 0.0)
    assert isinstance(err, IndexError)
    check((3, 4), (_mask(3), _mask(3)), Arr(0.0, "float32"), "index_put_")


@pytest.mark.parametrize("form", ["setitem", "index_put_", "index_put"])
@pytest.mark.parametrize("accumulate", [False, True])
def test_value_dtype_must_match(form, accumulate):
    index = _mask(3) if form == "setitem" else (_mask(3),)
    err = check((3,), index, Arr([1.0, 2.0, 3.0], "float64"), form, accumulate)
    assert isinstance(err, RuntimeError) and "dtypes match" in str(err)
    err = check((3,), index, Arr(1.0, "float64"), form, accumulate)
    assert isinstance(err, RuntimeError) and "dtypes match" in str(err)


def test_value_shape_checks_that_depend_on_data_are_skipped():
    # [2] fits when two elements are True: meta cannot know, so it accepts (as torch meta does)
    assert check((3,), _mask(3), Arr([1.0, 2.0], "float32")) is None
    # [5] cannot fit a 3-element mask: the cpu error names the count, so meta stays silent
    # (no dtype error either: cpu would have raised the shape error first)
    x = sk.zeros(3, device="meta")
    x[sk.ones(3, dtype=sk.bool, device="meta")] = sk.ones(5, dtype=sk.float64, device="meta")
    assert x._version == 1


def test_index_with_meta_mask_still_raises():
    x = sk.zeros(3, device="meta")
    with pytest.raises(NotImplementedError, match="torch.nonzero"):
        x[x > 0]


def test_cpu_unchanged():
    x = sk.zeros(3)
    x[sk.tensor([True, False, True])] = sk.tensor([1.0, 2.0])
    assert x.tolist() == [1.0, 0.0, 2.0] and x._version == 1
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[3\] cannot be broadcast"):
        x[sk.tensor([True, False, True])] = sk.ones(3)
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x[sk.ones(3, dtype=sk.bool, device="meta")] = 1.0


# -- a sweep ------------------------------------------------------------------------------------
@st.composite
def programs(draw):
    ndim = draw(st.integers(1, 3))
    sizes = tuple(draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    start = draw(st.integers(0, ndim - 1))
    k = draw(st.integers(1, ndim - start))
    mshape = list(sizes[start:start + k])
    if draw(st.integers(0, 7)) == 3:
        mshape[draw(st.integers(0, k - 1))] += 1                    # a wrong mask shape
    mdata = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)),
                                   max_size=int(np.prod(mshape))))).reshape(mshape)
    index = [slice(None)] * start + [Arr(mdata, "bool")]
    rest = ndim - start - k
    if rest and draw(st.booleans()):
        index.append(Arr(draw(st.lists(st.integers(0, max(sizes[start + k] - 1, 0)),
                                       min_size=1, max_size=2))))
    count = int(mdata.sum())
    kept = list(sizes[start + k:])
    vshape = draw(st.sampled_from([(), (1,), (count, *kept), tuple(kept), (count + 1, *kept)]))
    dtype = draw(st.sampled_from(["float32", "float32", "float32", "float64"]))
    value = Arr(np.ones(vshape), dtype)
    form = draw(st.sampled_from(["setitem", "index_put_", "index_put"]))
    if start:
        form = "setitem"  # index_put_ takes no placeholder for the leading dims
    accumulate = form != "setitem" and draw(st.booleans())
    transpose = ndim == 2 and draw(st.booleans())
    return sizes, tuple(index), value, form, accumulate, transpose


@FUZZ
@given(program=programs())
def test_sweep(program):
    sizes, index, value, form, accumulate, transpose = program
    check(sizes, index, value, form, accumulate, transpose)


# -- under MetaMode ----------------------------------------------------------------------------
def test_infer_shapes_with_mask_assignment():
    def f(x):
        y = x * 2
        y[y > 0] = 0
        y.index_put_((y[:, 0] > 1,), sk.ones(4), accumulate=True)
        return y.sum(0), y

    rep = infer_shapes(f, (3, 4))
    assert rep.output_shapes == [(4,), (3, 4)]
    assert rep.outputs[1].stride == (4, 1) and rep.outputs[1].dtype == sk.float32
