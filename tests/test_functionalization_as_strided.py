"""``as_strided`` of intermediates inside ``functionalize``, against eager torch.

``as_strided`` addresses its input's storage, so its values depend on how eager mode lays the
intermediate out: a transposed view, a slice, a result computed from a transposed view
(``x.t() * 1`` has strides ``(1, 4)``). Without views (``remove="mutations_and_views"``) the
``*_copy`` ops return contiguous tensors; the functionalized program must still read and write
the elements eager mode does (Note [as_strided addresses the eager storage],
``modes/functionalization/wrapper.py``). PyTorch 2.13's own ``functionalize`` gives other values
there (docs/differences.md), so the oracle is eager torch. Hypothesis draws the intermediate
and the ``as_strided`` sizes, strides and offset; a write goes through ``as_strided`` of a base
only (PyTorch refuses a mutation through ``as_strided`` after another view, and so do we).
"""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from functionalization_corpus import make_inputs
from subclass_kit.modes import functionalize

pytest.importorskip("hypothesis", reason="hypothesis draws the programs")
from hypothesis import given, settings
from hypothesis import strategies as st

# name -> (the intermediate, elements of its storage, whether it is a base it may write through)
INTERMEDIATES = {
    "t": (lambda x: x.t(), 12, False),
    "slice": (lambda x: x[:, 1:], 12, False),
    "slice_t": (lambda x: x[1:].t(), 12, False),
    "computed_t": (lambda x: x.t() * 1, 12, True),
    "computed_slice_t": (lambda x: x[:, 1:].t() + 0, 9, True),
    "clone_t": (lambda x: x.t().clone(), 12, True),
    "view_of_computed_t": (lambda x: (x * 2).t()[1:], 12, False),
}
WRITES = {
    "add_": lambda w: w.add_(100),
    "mul_": lambda w: w.mul_(-1),
    "row_sub_": lambda w: w[0].sub_(3),
}


@st.composite
def _program(draw):
    name = draw(st.sampled_from(sorted(INTERMEDIATES)))
    numel = INTERMEDIATES[name][1]
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    strides = [draw(st.integers(0, 4)) for _ in sizes]
    extent = sum((n - 1) * s for n, s in zip(sizes, strides)) + 1
    if extent > numel:
        strides = [0] * len(sizes)
        extent = 1
    offset = draw(st.integers(0, numel - extent))
    write = draw(st.sampled_from([None] + sorted(WRITES)))
    return name, tuple(sizes), tuple(strides), offset, write


def _writable(sizes, strides) -> bool:
    """No element held twice (a write through it is refused in eager mode)."""
    grids = np.indices(sizes).reshape(len(sizes), -1)
    addresses = sum(g * s for g, s in zip(grids, strides))
    return len(set(addresses.tolist())) == addresses.size


def _run(program, x):
    name, sizes, strides, offset, write = program
    make, _, is_base = INTERMEDIATES[name]
    z = make(x)
    w = z.as_strided(sizes, strides, offset)
    if write is not None and is_base and _writable(sizes, strides):
        WRITES[write](w)
    return z * 1, w * 1, x


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(_program(), st.sampled_from(["mutations", "mutations_and_views"]))
def test_as_strided_of_an_intermediate_matches_eager_torch(program, remove):
    import torch
    want = _run(program, make_inputs(torch, [(3, 4)])[0])
    got = functionalize(lambda x: _run(program, x), remove=remove)(make_inputs(sk, [(3, 4)])[0])
    for a, b in zip(got, want):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
