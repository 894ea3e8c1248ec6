"""``functionalize`` against eager torch over the program corpus (tests/functionalization_corpus.py):
same outputs (values, shapes, dtypes), same inputs after the call (values, shapes, and strides
with ``remove="mutations"``); on meta tensors; under an outer LoggingMode / DebugAssertMode; and
hypothesis-generated view/mutation programs (observed by a mode below too: same strides)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import subclass_kit as sk
from functionalization_corpus import CORPUS, PROGRAM_NAMES, make_inputs
from subclass_kit.modes import DebugAssertMode, LoggingMode, functionalize

REMOVES = ("mutations", "mutations_and_views")


def _tuple(x):
    return x if isinstance(x, (tuple, list)) else (x,)


def _same(ours, theirs, strides=False):
    ours, theirs = _tuple(ours), _tuple(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if not hasattr(b, "shape"):
            assert a == b
            continue
        assert tuple(a.shape) == tuple(b.shape)
        assert a.dtype.name == str(b.dtype).removeprefix("torch.")
        if strides:
            assert tuple(a.stride()) == tuple(b.stride())
        if a.device.type != "meta":
            np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


@pytest.mark.parametrize("remove", REMOVES)
@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_functionalized_matches_eager_torch(torch, name, remove):
    fn, shapes = CORPUS[name]
    ours_in, torch_in = make_inputs(sk, shapes), make_inputs(torch, shapes)
    torch.manual_seed(0)
    sk.manual_seed(0)
    want = fn(torch, *torch_in)
    got = functionalize(lambda *a: fn(sk, *a), remove=remove)(*ours_in)
    if name != "random_fill_shape":
        _same(got, want)
    _same(ours_in, torch_in, strides=remove == "mutations")


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_functionalized_on_meta_matches_eager_meta(name):
    """Same shapes as the eager program on meta inputs, or the same error (programs mixing in
    cpu literals or reading data fail on meta both ways)."""
    fn, shapes = CORPUS[name]
    meta_in = [t.to("meta") for t in make_inputs(sk, shapes)]
    eager_in = [t.to("meta") for t in make_inputs(sk, shapes)]
    try:
        want = fn(sk, *eager_in)
    except (RuntimeError, NotImplementedError) as e:
        with pytest.raises(type(e)) as info:
            functionalize(lambda *a: fn(sk, *a))(*meta_in)
        assert str(info.value) == str(e)
        return
    got = functionalize(lambda *a: fn(sk, *a))(*meta_in)
    for a, b in zip(_tuple(got), _tuple(want)):
        if hasattr(b, "shape"):
            assert (tuple(a.shape), a.device.type) == (tuple(b.shape), "meta")
    for a, b in zip(meta_in, eager_in):
        assert tuple(a.shape) == tuple(b.shape)


@pytest.mark.no_debug_asserts(reason="enters a DebugAssertMode of its own and reads its record")
def test_corpus_under_debug_assert_mode_has_no_violations():
    violations = []
    for name in PROGRAM_NAMES:
        fn, shapes = CORPUS[name]
        with DebugAssertMode(raise_on_violation=False) as mode:
            for remove in REMOVES:
                functionalize(lambda *a: fn(sk, *a), remove=remove)(*make_inputs(sk, shapes))
        violations += [(name, v.op, v.rule, v.message) for v in mode.violations]
    assert violations == []


def test_outer_logging_mode_sees_the_functional_op_stream():
    fn, shapes = CORPUS["select_mul"]
    inputs = make_inputs(sk, shapes)
    with LoggingMode() as log:
        functionalize(lambda *a: fn(sk, *a))(*inputs)
    names = [r.func.__name__ for r in log.log]
    assert names == ["select.int", "mul.Tensor", "select_scatter.default", "select.int",
                     "copy_.default"]


# -- hypothesis: random view/mutation programs ----------------------------------------------------
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_VIEWS = [
    ("select", lambda L, t: t[0] if t.ndim and t.shape[0] else None),
    ("slice", lambda L, t: t[1:] if t.ndim and t.shape[0] > 1 else None),
    ("step", lambda L, t: t[::2] if t.ndim else None),
    ("t", lambda L, t: t.t() if t.ndim == 2 else None),
    # (no view whose validity depends on strides: without views, values are contiguous)
    ("view_as", lambda L, t: t.view_as(t)),
    ("flat_1d", lambda L, t: t.view(-1) if t.ndim == 1 else None),
    ("unsqueeze", lambda L, t: t.unsqueeze(0) if t.ndim < 3 else None),
    ("diagonal", lambda L, t: t.diagonal() if t.ndim == 2 else None),
    ("unbind0", lambda L, t: t.unbind(0)[-1] if t.ndim and t.shape[0] else None),
]
_MUTATIONS = [
    ("add_", lambda L, t, k: t.add_(k)),
    ("mul_", lambda L, t, k: t.mul_(k % 3 + 1)),
    ("fill_", lambda L, t, k: t.fill_(k)),
    ("zero_", lambda L, t, k: t.zero_()),
    ("neg_", lambda L, t, k: t.neg_()),
    ("setitem", lambda L, t, k: t.__setitem__(..., k * 2)),
]

_steps = st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, 20), st.integers(-3, 5)),
                  min_size=1, max_size=12)


def _run_program(L, x, steps):
    live = [x]
    for is_view, which, pick, k in steps:
        t = live[pick % len(live)]
        if is_view:
            v = _VIEWS[which % len(_VIEWS)][1](L, t)
            if v is not None and v.numel():
                live.append(v)
        else:
            _MUTATIONS[which % len(_MUTATIONS)][1](L, t, k)
    return tuple(t * 1 for t in live)


class _Observer(sk.DispatchMode):
    """Passes every op on; below functionalization, it makes every update a scatter (no
    in-place writes into a private base)."""


@hypothesis.given(_steps, st.sampled_from(REMOVES))
def test_generated_programs_match_eager_torch(steps, remove):
    """Also observed by a mode below: same values, and the same strides as unobserved."""
    import torch
    tx = make_inputs(torch, [(4, 4)])[0]
    want = _run_program(torch, tx, steps)
    runs = []
    for observer in (contextlib.nullcontext(), _Observer()):
        sx = make_inputs(sk, [(4, 4)])[0]
        with observer:
            got = functionalize(lambda x: _run_program(sk, x, steps), remove=remove)(sx)
        _same(got, want)
        _same(sx, tx)
        runs.append([(t.stride(), t.storage_offset()) for t in (*got, sx)])
    assert runs[0] == runs[1]
