"""``Layout`` view math against a numpy shadow (STYLE.md §6, tinygrad's CheckingShapeTracker).

A layout's *element map* is the array of storage indices its elements live at:
``offset + sum(idx[i] * stride[i])``. Every view method must produce the layout whose element map
is what numpy's own view op does to the source's element map (``np.swapaxes``, slicing,
``np.diagonal``, ``sliding_window_view``, ``reshape``...). The predicates (contiguity, density,
overlap, extent) are checked against facts computed from the element map, and the stride rules
PyTorch fixes (``view``, ``contiguous_strides``, channels-last) against torch when available.
"""

from __future__ import annotations

import numpy as np
import pytest

from subclass_kit.layout import (
    Layout,
    broadcast_shapes,
    channels_last_strides,
    compute_storage_nbytes,
    contiguous_strides,
    infer_size,
    wrap_dim,
)

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis generates the layouts")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SHADOW = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))


def element_map(layout: Layout) -> np.ndarray:
    """Storage index of every element (numpy's as_strided over an arange does the same)."""
    out = np.full(layout.sizes, layout.offset, dtype=np.int64)
    for d, (size, stride) in enumerate(zip(layout.sizes, layout.strides)):
        shape = [1] * len(layout.sizes)
        shape[d] = size
        out = out + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return out


def shadow(layout: Layout) -> np.ndarray:
    """The same element map built by numpy's ``as_strided`` over ``np.arange`` (the oracle)."""
    n = max(layout.storage_extent(), 1)
    base = np.arange(n, dtype=np.int64)
    item = base.itemsize
    return np.lib.stride_tricks.as_strided(base[layout.offset:] if layout.numel() else base,
                                           layout.sizes,
                                           [s * item for s in layout.strides])


@st.composite
def layouts(draw, max_ndim=4, max_size=4):
    ndim = draw(st.integers(0, max_ndim))
    sizes = tuple(draw(st.lists(st.integers(0, max_size), min_size=ndim, max_size=ndim)))
    if draw(st.booleans()):
        strides = contiguous_strides(sizes)
        perm = draw(st.permutations(range(ndim)))
        lay = Layout(sizes, strides, 0).permute(perm) if ndim else Layout(sizes, strides, 0)
        sizes, strides = lay.sizes, lay.strides
    else:
        strides = tuple(draw(st.lists(st.integers(0, 7), min_size=ndim, max_size=ndim)))
    return Layout(sizes, strides, draw(st.integers(0, 5)))


def same_map(got: Layout, expected: np.ndarray):
    assert got.sizes == expected.shape, (got, expected.shape)
    np.testing.assert_array_equal(element_map(got), expected)


@SHADOW
@given(layout=layouts())
def test_element_map_matches_numpy_as_strided(layout):
    if layout.numel():
        np.testing.assert_array_equal(element_map(layout), shadow(layout))


@SHADOW
@given(layout=layouts(), data=st.data())
def test_view_methods_match_numpy(layout, data):
    m = element_map(layout)
    n = layout.ndim
    if n:
        perm = data.draw(st.permutations(range(n)))
        same_map(layout.permute(perm), np.transpose(m, perm))
        d0, d1 = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
        same_map(layout.transpose(d0, d1), np.swapaxes(m, d0, d1))
        d = data.draw(st.integers(0, n - 1))
        if layout.sizes[d]:
            i = data.draw(st.integers(0, layout.sizes[d] - 1))
            same_map(layout.select(d, i), np.take(m, i, axis=d))
        start = data.draw(st.integers(0, layout.sizes[d]))
        end = data.draw(st.integers(start, layout.sizes[d]))
        step = data.draw(st.integers(1, 3))
        key = (slice(None),) * d + (slice(start, end, step),)
        same_map(layout.slice(d, start, end, step), m[key])
        dims = set(data.draw(st.lists(st.integers(0, n - 1), max_size=n)))
        squeezable = tuple(k for k in sorted(dims) if layout.sizes[k] == 1)
        same_map(layout.squeeze(dims), np.squeeze(m, axis=squeezable) if squeezable else m)
        size = data.draw(st.integers(0, layout.sizes[d]))
        step = data.draw(st.integers(1, 3))
        windows = np.lib.stride_tricks.sliding_window_view(m, size, axis=d)
        same_map(layout.unfold(d, size, step), windows[key[:d] + (slice(None, None, step),)])
    if n >= 2:
        d1, d2 = data.draw(st.permutations(range(n)))[:2]
        off = data.draw(st.integers(-4, 4))
        same_map(layout.diagonal(off, d1, d2), np.diagonal(m, off, d1, d2))
    u = data.draw(st.integers(0, n))
    same_map(layout.unsqueeze(u), np.expand_dims(m, u))
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    target = lead + tuple(s if s != 1 else data.draw(st.integers(0, 3)) for s in layout.sizes)
    same_map(layout.expand(target), np.broadcast_to(m, target))


def _shapes_with_numel(draw, numel, max_ndim=4):
    """A random shape with ``numel`` elements (numel 0 gets a 0 somewhere)."""
    ndim = draw(st.integers(0 if numel == 1 else 1, max_ndim))
    if numel == 0:
        shape = [draw(st.integers(0, 3)) for _ in range(ndim)]
        shape[draw(st.integers(0, ndim - 1))] = 0
        return tuple(shape)
    shape, left = [], numel
    for _ in range(ndim - 1):
        divs = [k for k in range(1, left + 1) if left % k == 0]
        k = draw(st.sampled_from(divs))
        shape.append(k)
        left //= k
    if ndim:
        shape.append(left)
    return tuple(draw(st.permutations(shape)))


@SHADOW
@given(layout=layouts(), data=st.data())
def test_view_reshape_keeps_elements(layout, data):
    """When ``view`` says yes, the new layout walks the same elements in row-major order."""
    shape = _shapes_with_numel(data.draw, layout.numel())
    got = layout.view(shape)
    if layout.is_contiguous():
        assert got is not None
    if got is not None and layout.numel():
        same_map(got, element_map(layout).reshape(shape))


@SHADOW
@given(layout=layouts())
def test_predicates_match_element_map(layout):
    m = element_map(layout).ravel()
    numel = layout.numel()
    assert numel == m.size
    if numel == 0:
        assert layout.storage_extent() == 0 and layout.is_contiguous()
        assert layout.is_non_overlapping_and_dense() and not layout.has_internal_overlap()
        return
    assert layout.storage_extent() == m.max() + 1
    assert layout.is_contiguous() == (m == layout.offset + np.arange(numel)).all()
    distinct = np.unique(m).size == numel
    dense = distinct and m.max() - m.min() + 1 == numel and m.min() == layout.offset
    assert layout.is_non_overlapping_and_dense() == dense
    if layout.has_internal_overlap():
        assert not distinct
    if layout.ndim == 4:
        nhwc = element_map(layout).transpose(0, 2, 3, 1).ravel()
        assert layout.is_channels_last() == (nhwc == layout.offset + np.arange(numel)).all()


@SHADOW
@given(sizes=st.lists(st.integers(0, 5), max_size=5).map(tuple))
def test_contiguous_strides_make_a_dense_row_major_map(sizes):
    lay = Layout.contiguous(sizes)
    assert lay.is_contiguous()
    if lay.numel():
        np.testing.assert_array_equal(element_map(lay).ravel(), np.arange(lay.numel()))


@SHADOW
@given(shapes=st.lists(st.lists(st.integers(0, 3), max_size=3).map(tuple), min_size=1,
                       max_size=3))
def test_broadcast_shapes_matches_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(RuntimeError, match="must match the size of tensor"):
            broadcast_shapes(*shapes)
        return
    assert broadcast_shapes(*shapes) == expected


@SHADOW
@given(layout=layouts(), item=st.sampled_from([1, 2, 4, 8]))
def test_storage_nbytes_is_extent_times_itemsize(layout, item):
    assert compute_storage_nbytes(layout.sizes, layout.strides, item, layout.offset) == \
        layout.storage_extent() * item


@pytest.mark.parametrize("shape,numel,expected", [
    ((2, -1), 6, (2, 3)), ((-1,), 0, (0,)), ((0, -1), 5, None), ((2, 2), 5, None),
    ((-1, -1), 4, None), ((-2, 2), 4, None), ((-1, 0), 0, None), ((), 1, ()),
])
def test_infer_size(shape, numel, expected):
    if expected is None:
        with pytest.raises(RuntimeError):
            infer_size(shape, numel)
    else:
        assert infer_size(shape, numel) == expected


def test_error_texts():
    with pytest.raises(RuntimeError, match=r"^shape '\[5, 5\]' is invalid for input of size 24$"):
        infer_size((5, 5), 24)
    with pytest.raises(RuntimeError, match="^only one dimension can be inferred$"):
        infer_size((-1, -1), 4)
    with pytest.raises(RuntimeError, match=r"invalid shape dimension -2 at index 0 of shape "
                                           r"\[-2, 4\]"):
        infer_size((-2, 4), 8)
    with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape "
                                           r"\[-1, 0\] because the unspecified dimension size -1 "
                                           r"can be any value and is ambiguous"):
        infer_size((-1, 0), 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        wrap_dim(2, 2)
    with pytest.raises(RuntimeError, match=r"Storage size calculation overflowed with "
                                           r"sizes=\[-3\] and strides=\[1\]"):
        compute_storage_nbytes((-3,), (1,), 4)
    assert compute_storage_nbytes((-3, 0), (1, 1), 4) == 0
    assert wrap_dim(-1, 0) == 0 and wrap_dim(0, 0) == 0


# -- the stride rules PyTorch fixes (oracle: torch) ----------------------------------------------
@SHADOW
@given(layout=layouts(max_ndim=3), data=st.data())
def test_view_strides_match_torch(layout, data):
    torch = pytest.importorskip("torch", reason="torch is the oracle for view strides")
    shape = _shapes_with_numel(data.draw, layout.numel(), max_ndim=3)
    t = torch.empty(max(layout.storage_extent(), 1)).as_strided(layout.sizes, layout.strides,
                                                                 layout.offset)
    got = layout.view(shape)
    try:
        expected = t.view(shape)
    except RuntimeError:
        assert got is None
        return
    assert got is not None and got.strides == expected.stride()


@SHADOW
@given(sizes=st.lists(st.integers(0, 4), min_size=4, max_size=4).map(tuple))
def test_contiguous_and_channels_last_strides_match_torch(sizes):
    torch = pytest.importorskip("torch", reason="torch is the oracle for factory strides")
    assert contiguous_strides(sizes) == torch.empty(sizes).stride()
    cl = torch.empty(sizes, memory_format=torch.channels_last)
    assert channels_last_strides(sizes) == cl.stride()
    lay = Layout(sizes, cl.stride())
    assert lay.is_channels_last() == cl.is_contiguous(memory_format=torch.channels_last)
    assert lay.is_contiguous() == cl.is_contiguous()


@SHADOW
@given(layout=layouts())
def test_predicates_match_torch(layout):
    torch = pytest.importorskip("torch", reason="torch is the oracle for contiguity")
    t = torch.empty(max(layout.storage_extent(), 1)).as_strided(layout.sizes, layout.strides,
                                                                 layout.offset)
    assert layout.is_contiguous() == t.is_contiguous()
    if layout.ndim == 4:
        assert layout.is_channels_last() == t.is_contiguous(memory_format=torch.channels_last)
    # torch's is_non_overlapping_and_dense is reachable through clone's preserved strides
    dense_clone = t.clone().stride() == t.stride()
    if layout.is_non_overlapping_and_dense():
        assert dense_clone
