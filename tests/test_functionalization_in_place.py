"""Functionalization's in-place updates (``FunctionalStorage.apply_updates``): with no mode below
functionalization, a mutation through a view is written into the family's private copy of the
base instead of a whole-base ``*_scatter``. Same values and geometry as the scatter path (the
one a mode below sees) over the corpus; one copy of the base for a loop over ``x.unbind(1)``
(linear time, issue 14), a scatter per mutation when observed; values that left the family are
never written again."""

from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np
import pytest

import subclass_kit as sk
from functionalization_corpus import CORPUS, PROGRAM_NAMES, make_inputs
from subclass_kit.modes import FunctionalizeMode, from_functional, functionalize, to_functional

REMOVES = ("mutations", "mutations_and_views")


class _Observer(sk.DispatchMode):
    """Passes every op on; being below functionalization, it sees (and so forces) the scatters."""


def _tuple(x):
    return x if isinstance(x, (tuple, list)) else (x,)


def _same_layout_and_values(ours, theirs):
    ours, theirs = _tuple(ours), _tuple(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if not isinstance(b, sk.Tensor):
            assert a == b
            continue
        assert (a.shape, a.stride(), a.storage_offset(), a.dtype) == \
            (b.shape, b.stride(), b.storage_offset(), b.dtype)
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _kernel_counts(fn, *args):
    counts = Counter()

    def seen(event):
        if event.kind == "kernel":
            counts[event.op.__name__] += 1
    with sk.dispatch_trace(seen):
        out = fn(*args)
    return out, counts


@pytest.mark.parametrize("remove", REMOVES)
@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_in_place_updates_match_the_scatter_path(name, remove):
    """Outputs and inputs after the call: same values, sizes, strides, offsets and dtypes with
    an observing mode below (every update a scatter) as without (updates written in place)."""
    fn, shapes = CORPUS[name]
    runs = []
    for observer in (contextlib.nullcontext(), _Observer()):
        inputs = make_inputs(sk, shapes)
        sk.manual_seed(0)
        with observer:
            out = functionalize(lambda *a: fn(sk, *a), remove=remove)(*inputs)
        runs.append((out, inputs))
    (out, inputs), (want_out, want_inputs) = runs
    _same_layout_and_values(out, want_out)
    _same_layout_and_values(inputs, want_inputs)


@pytest.mark.no_debug_asserts(reason="counts the kernels of the unobserved path; a mode below "
                                     "functionalization makes every update a scatter")
@pytest.mark.parametrize("remove", REMOVES)
def test_unbind_loop_copies_the_base_once(torch, remove):
    fn, _ = CORPUS["unbind_loop"]
    n = 40
    x, tx = make_inputs(sk, [(8, n)])[0], make_inputs(torch, [(8, n)])[0]
    out, counts = _kernel_counts(functionalize(lambda x: fn(sk, x), remove=remove), x)
    want = fn(torch, tx)
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    # the first mutation scatters (the private copy); the other n - 1 write 8 elements each
    assert counts["select_scatter.default"] == 1

    with _Observer():
        _, observed = _kernel_counts(functionalize(lambda x: fn(sk, x), remove=remove),
                                     make_inputs(sk, [(8, n)])[0])
    assert observed["select_scatter.default"] == n


def test_a_value_read_out_is_not_written_by_later_mutations():
    x = to_functional(sk.zeros(4))
    with FunctionalizeMode():
        x[0].add_(1)
        x[1].add_(1)            # written in place into the family's private copy of the base
        y = from_functional(x)
        x[2].add_(1)
        x[3].add_(1)
        z = from_functional(x)
    assert y.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert z.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_a_flattened_value_is_not_written_by_later_mutations():
    x = to_functional(sk.zeros(3))
    with FunctionalizeMode():
        x[0].add_(1)
        x[1].add_(1)
        x.sync()
        inner = x.__tensor_flatten__()[0]
        value = getattr(x, inner[0])
        x[2].add_(1)
    assert value.tolist() == [1.0, 1.0, 0.0]
    assert from_functional(x).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("remove", REMOVES)
def test_as_strided_writes_into_a_transposed_intermediate(torch, remove):
    """``as_strided`` addresses the storage: the private copy keeps the base's strides and
    offset; without views the base is laid out as eager mode lays it out first (Note
    [as_strided addresses the eager storage])."""
    def fn(L, x):
        z = x.t().clone()               # strides (1, 4)
        z[0].add_(1)
        w = z.as_strided((2, 2), (4, 1), 1)
        w.add_(100)
        w[1].mul_(-1)
        w[:, 0].sub_(3)
        return z * 1, z.stride()
    got = functionalize(lambda x: fn(sk, x), remove=remove)(make_inputs(sk, [(3, 4)])[0])
    want = fn(torch, make_inputs(torch, [(3, 4)])[0])
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    if remove == "mutations":       # ``*_copy`` results are contiguous, as in PyTorch
        assert got[1] == want[1]
