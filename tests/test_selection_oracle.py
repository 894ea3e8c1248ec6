"""``repeat_interleave``, ``masked_select`` and ``unique`` against torch 2.13: values, layouts,
the ops a dispatch mode sees, errors, meta and MetaMode behaviour, and property tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from subclass_kit.modes import DynamicOutputShapeError, MetaMode
from test_names_oracle import sk_calls, torch_calls

PROGRAMS = [
    "lib.repeat_interleave(x, 2)", "x.repeat_interleave(2, dim=0)", "x.t().repeat_interleave(2)",
    "x.repeat_interleave(r, dim=0)", "lib.repeat_interleave(c)",
    "lib.repeat_interleave(x, r, dim=0, output_size=3)",
    "lib.repeat_interleave(x, 2, 1, output_size=6)",
    "lib.repeat_interleave(c, output_size=6)", "lib.repeat_interleave(x, r0, dim=1)",
    "lib.repeat_interleave(x, r1, dim=-1)", "lib.repeat_interleave(x, c6)",
    "lib.repeat_interleave(s, 3)", "lib.repeat_interleave(x, 0, dim=1)",
    "lib.masked_select(x, m)", "x.masked_select(m)", "lib.masked_select(x.t(), m.t())",
    "lib.masked_select(x, m[0])", "lib.masked_select(s, lib.tensor(True))",
    "lib.masked_select(x, m, out=o)",
    "lib.unique(u)", "lib.unique(u, sorted=False)", "lib.unique(u, return_inverse=True)",
    "lib.unique(u, return_counts=True)", "lib.unique(u, return_inverse=True, return_counts=True)",
    "lib.unique(x, dim=0)", "lib.unique(v, dim=1, return_inverse=True, return_counts=True)",
    "u.unique()", "v.t().unique(return_inverse=True)", "lib.unique(f)",
    "lib.unique(f, return_inverse=True, return_counts=True)", "lib.unique(v, dim=0)",
]


def _env(lib):
    return {"lib": lib, "x": lib.arange(6.0).view(2, 3), "r": lib.tensor([1, 2]),
            "r0": lib.tensor(2), "r1": lib.tensor([3]), "c": lib.tensor([3, 0, 2, 1]),
            "c6": lib.tensor([1, 0, 2, 1, 1, 3], dtype=lib.int32), "s": lib.tensor(5.0),
            "m": lib.tensor([[True, False, True], [False, True, True]]), "o": lib.empty(0),
            "u": lib.tensor([3, 1, 2, 1, 3, 3, -4]),
            "v": lib.tensor([[1, 2, 1, 0], [5, 0, 5, 0], [2, 2, 2, 1]]),
            "f": lib.tensor([1.0, float("nan"), -0.5, 1.0, float("nan"), 2.0])}


def _compare(ours, theirs):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _compare(a, b)
        return
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert str(ours.dtype)[3:] == str(theirs.dtype)[6:]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("program", PROGRAMS)
def test_selection_against_torch(torch, program):
    env, tenv = _env(sk), _env(torch)
    ours_calls, ours = sk_calls(lambda: eval(program, env))
    theirs_calls, theirs = torch_calls(torch, lambda: eval(program, tenv))
    assert ours_calls == theirs_calls
    _compare(ours, theirs)
    assert env["o"]._version == tenv["o"]._version


@pytest.mark.parametrize("program", [
    "lib.repeat_interleave(x, r2, dim=0)", "lib.repeat_interleave(x, lib.tensor([1, -2]), dim=0)",
    "lib.repeat_interleave(x, -1)", "lib.repeat_interleave(x, lib.tensor([1, 2, 3]), dim=0)",
    "lib.repeat_interleave(x, lib.tensor([1., 2.]), dim=0)",
    "lib.repeat_interleave(x, r, dim=0, output_size=4)", "lib.repeat_interleave(x, 2, dim=2)",
    "lib.repeat_interleave(x, 2, dim=1, output_size=7)", "lib.repeat_interleave(r2)",
    "lib.repeat_interleave(lib.tensor([True, False]))",
    "lib.masked_select(x, lib.ones(3))", "lib.masked_select(x, lib.ones(4, dtype=lib.bool))",
    "lib.masked_select(x, m, out=lib.empty(0, dtype=lib.int64))",
    "lib.unique(x, dim=2)", "lib.unique(lib.ones(3, 0), dim=0)",
    "lib.unique(lib.ones(0, 0), dim=0)", "lib.unique(lib.tensor(3.), dim=0)",
])
def test_selection_errors(torch, program):
    env, tenv = _env(sk), _env(torch)
    env["r2"], tenv["r2"] = sk.tensor([[1, 2]]), torch.tensor([[1, 2]])
    with pytest.raises(Exception) as ours:
        eval(program, env)
    with pytest.raises(Exception) as theirs:
        eval(program, tenv)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_meta(torch):
    for lib in (sk, torch):
        x = lib.empty(2, 3, device="meta")
        r = lib.empty(2, dtype=lib.int64, device="meta")
        assert lib.repeat_interleave(x, r, dim=0, output_size=5).shape == (5, 3)
        assert lib.repeat_interleave(x, 2, dim=1).shape == (2, 6)
        with pytest.raises(RuntimeError, match="cannot repeat_interleave a meta tensor without "
                                               "output_size"):
            lib.repeat_interleave(x, r, dim=0)
        with pytest.raises(NotImplementedError):
            lib.masked_select(x, lib.empty(3, dtype=lib.bool, device="meta"))
        with pytest.raises(NotImplementedError):
            lib.unique(x)
        with pytest.raises(NotImplementedError):
            lib.unique(x, dim=1)


@pytest.mark.parametrize("program", [
    lambda: sk.masked_select(sk.ones(3), sk.ones(3) > 0), lambda: sk.unique(sk.ones(3)),
    lambda: sk.unique(sk.ones(2, 3), dim=1),
    lambda: sk.repeat_interleave(sk.ones(2, 3), sk.tensor([1, 2]), dim=0)])
def test_meta_mode_data_dependent(program):
    stack = sk.get_mode_stack()
    with pytest.raises(DynamicOutputShapeError, match="the shape of its output depends on the "
                                                      "data"), MetaMode():
        program()
    assert sk.get_mode_stack() == stack


def test_meta_mode_repeat_interleave_with_output_size():
    with MetaMode():
        out = sk.repeat_interleave(sk.ones(2, 3), sk.tensor([1, 2]), dim=0, output_size=3)
    assert out.shape == (3, 3)


_VALUES = st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.5, 3.0, float("nan"), float("inf")]),
                   min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(_VALUES, st.sampled_from(["float32", "float64", "float16"]))
def test_unique_matches_torch(values, dtype):
    import torch
    ours = sk.unique(sk.tensor(values, dtype=getattr(sk, dtype)), return_inverse=True,
                     return_counts=True)
    theirs = torch.unique(torch.tensor(values, dtype=getattr(torch, dtype)),
                          return_inverse=True, return_counts=True)
    _compare(ours, theirs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2), min_size=3, max_size=3), min_size=1, max_size=6),
       st.integers(0, 1))
def test_unique_dim_matches_torch(rows, dim):
    import torch
    _compare(sk.unique(sk.tensor(rows), dim=dim, return_inverse=True, return_counts=True),
             torch.unique(torch.tensor(rows), dim=dim, return_inverse=True, return_counts=True))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.booleans())
def test_repeat_interleave_and_masked_select_match_torch(counts, use_dim):
    import torch
    n = len(counts)
    x, tx = sk.arange(2.0 * n).view(2, n), torch.arange(2.0 * n).view(2, n)
    kw = {"dim": 1} if use_dim else {}
    reps = counts + counts if not use_dim else counts
    _compare(sk.repeat_interleave(x, sk.tensor(reps), **kw),
             torch.repeat_interleave(tx, torch.tensor(reps), **kw))
    mask = [c % 2 == 0 for c in counts]
    _compare(sk.masked_select(x, sk.tensor(mask)), torch.masked_select(tx, torch.tensor(mask)))
