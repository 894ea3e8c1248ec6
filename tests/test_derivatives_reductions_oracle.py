"""Derivative table, reductions family (modes/autograd/derivatives/reductions.py), against torch.

Every formula runs once through ``formulas.apply_formula`` on the op's samples (tests/samples*.py,
made float64) plus hand cases (ties, zeros, NaN, p-norm orders, keepdim, dtype= casts), and is
compared with ``torch.autograd.grad`` on the same values (rtol 1e-7) and with torch's
``grad_fn.name()``; a few are also checked by central finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from derivatives_support import (check_formula, expanded_grad_problems, finite_difference,
                                 meta_problems, native_samples, samples_of, uncovered)
from samples import D, S, T, build

import subclass_kit as sk
import subclass_kit.modes.autograd.derivatives.reductions  # noqa: F401  (registers)
from subclass_kit.modes.autograd import formulas

F = "float64"
TIES = T((3, 4), F, values=[[1, 3, 3, 0], [2, 2, 2, 2], [-1, 5, 0, 5]])
ZEROS1 = T((2, 4), F, values=[[1, 0, 2, 3], [0.5, 2, -1, 4]])          # one zero per row
ZEROS2 = T((2, 4), F, values=[[1, 0, 2, 0], [0.5, 2, -1, 4]])          # two zeros in a row
WITH_NAN = T((2, 3), F, values=[[1, np.nan, 2], [3, 4, np.nan]])

EXTRA = {
    "prod.default": [S(T((4,), F, values=[1, 0, 2, 3])), S(ZEROS2), S(T((), F))],
    "prod.dim_int": [S(ZEROS1, 1), S(ZEROS2, 1, True), S(ZEROS2, 0), S(T((2, 3), F), 1,
                                                                         dtype=D("float64"))],
    "var.correction": [S(T((3, 4), F), [1], correction=0, keepdim=True), S(T((3, 4), F), [0, 1]),
                       S(T((1,), F)), S(T((3, 4), F), None, correction=2)],
    "std.correction": [S(T((3, 4), F), [1], correction=0), S(T((3, 4), F, values=[[1] * 4] * 3),
                                                              [1])],
    "amax.default": [S(TIES, [1]), S(TIES, [0, 1], True), S(TIES)],
    "amin.default": [S(TIES, [1], True), S(TIES, [-1])],
    "aminmax.default": [S(TIES, dim=1), S(TIES)],
    "max.default": [S(TIES), S(WITH_NAN)],
    "min.default": [S(TIES)],
    "median.default": [S(TIES)],
    "nanmedian.default": [S(WITH_NAN)],
    "max.dim": [S(TIES, 1), S(TIES, 0, True), S(T((), F), 0)],
    "min.dim": [S(TIES, 1, True)],
    # no ties for kthvalue: its tie index differs from torch (docs/differences.md)
    "kthvalue.default": [S(T((3, 4), F), 2, 1, True)],
    "topk.default": [S(TIES, 2, 0, False)],
    "logsumexp.default": [S(T((3, 4), F), [0, 1], True), S(T((), F), [0])],
    "norm.ScalarOpt_dim": [S(T((3, 4), F), p, [1], keepdim=k) for p in (0, 1, 0.5, 1.5, 3,
                                                                          float("inf"), None)
                           for k in (False, True)] + [S(TIES, float("inf"), [1])],
    "linalg_vector_norm.default": [S(T((3, 4), F), o) for o in (0, 1, 2, 0.5, 1.5, 3, float("inf"),
                                                               -float("inf"), -1)]
    + [S(T((3, 4), F, values=[[0] * 4] * 3), 2, [1]), S(TIES, float("inf"), [0], True)],
    "cumsum.default": [S(T((3, 4), F), 1), S(T((3, 4), "float32"), 0, dtype=D("float64"))],
    "cumprod.default": [S(ZEROS1, 1), S(ZEROS2, 1), S(ZEROS2, 0), S(T((2, 4, 3), F), 1),
                        S(T((4,), F, values=[0, 0, 2, 3]), 0)],
    "logcumsumexp.default": [S(T((3, 4), F), 0)],
    "cummax.default": [S(TIES, 1)],
    "cummin.default": [S(TIES, 0)],
    "nansum.default": [S(WITH_NAN), S(WITH_NAN, [1], True), S(WITH_NAN, [0])],
}

OPS = sorted(k for k in formulas.FORMULAS
             if formulas.FORMULAS[k].fn.__module__.endswith("derivatives.reductions"))


def _op(key):
    name, _, overload = key.partition(".")
    return getattr(sk.ops, name)._overloads[overload]


@pytest.mark.parametrize("key", OPS)
def test_formula_matches_torch(key, torch):
    op = _op(key)
    samples = samples_of(op, EXTRA.get(key, ()))
    assert samples, f"{key}: no float sample"
    problems = []
    for i, s in enumerate(samples):
        problems += check_formula(op, s, torch, seed=i)
    assert not problems, "\n".join(problems[:6])


@pytest.mark.parametrize("key,args,kwargs,name", [
    ("prod.dim_int", (T((2, 4), F, values=[[1, 0, 2, 3], [0.5, 2, -1, 4]]), 1), {}, "self"),
    ("std.correction", (T((3, 4), F), [1]), {}, "self"),
    ("cumprod.default", (T((4,), F, values=[1.5, 0, 2, 3]), 0), {}, "self"),
    ("logcumsumexp.default", (T((2, 3), F), 1), {}, "self"),
    ("linalg_vector_norm.default", (T((3, 4), F), 3), {}, "self"),
])
def test_finite_differences(key, args, kwargs, name):
    op = _op(key)
    a, kw, _ = build(S(*args, **kwargs), "sk", op=op)
    results = op(*a, **kw)
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    rng = np.random.default_rng(3)
    grads = [sk.tensor(rng.uniform(-1, 1, tuple(r.shape))) for r in results]
    ours = formulas.apply_formula(op, a, kw, tuple(results), grads)[0]
    num = finite_difference(op, a, kw, name, grads)
    np.testing.assert_allclose(ours.numpy(), num, rtol=1e-5, atol=1e-6)


def test_formulas_compose_with_sk_ops_on_meta():
    """The formulas use sk ops only: on meta tensors they give the gradient's shape and dtype."""
    x = sk.empty(3, 4, dtype=sk.float32, device="meta")
    for op, args in ((sk.ops.prod.dim_int, (x, 1)), (sk.ops.var.correction, (x, [1])),
                     (sk.ops.amax.default, (x, [0])), (sk.ops.cumprod.default, (x, 1)),
                     (sk.ops.logsumexp.default, (x, [1]))):
        out = op(*args)
        g = formulas.apply_formula(op, args, {}, (out,), [sk.ones_like(out)])[0]
        assert g.is_meta and tuple(g.shape) == (3, 4) and g.dtype == sk.float32, op


REDUCTION_BASES = {
    "prod", "var", "std", "amax", "amin", "aminmax", "max", "min", "median", "nanmedian",
    "kthvalue", "sort", "topk", "logsumexp", "norm", "linalg_vector_norm", "cumsum", "cumprod",
    "logcumsumexp", "cummax", "cummin", "nansum", "argmax", "argmin", "count_nonzero", "all",
    "any", "equal", "allclose", "nanmean", "argsort"}


def test_every_reduction_has_a_formula_or_a_mark():
    assert uncovered(REDUCTION_BASES) == []


def test_registered_keys_are_real_overloads():
    for key in list(formulas.FORMULAS) + list(formulas.NON_DIFFERENTIABLE):
        name, _, overload = key.partition(".")
        assert overload in getattr(sk.ops, name)._overloads, key


# -- hypothesis: random shapes, layouts, dims and tie/zero-heavy values --------------------------
try:
    from hypothesis import assume, given, settings
    from hypothesis import strategies as st
except ImportError:         # hypothesis is a test extra
    given = None

if given is not None:
    _LIST_DIM = {"amax.default", "amin.default", "logsumexp.default", "norm.ScalarOpt_dim",
                 "var.correction", "std.correction", "linalg_vector_norm.default",
                 "nansum.default"}
    _INT_DIM = {"prod.dim_int", "cumsum.default", "cumprod.default", "logcumsumexp.default",
                "max.dim", "min.dim", "cummax.default", "cummin.default"}

    @st.composite
    def _cases(draw):
        key = draw(st.sampled_from(sorted(_LIST_DIM | _INT_DIM)))
        shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
        layout = draw(st.sampled_from(["contig", "t", "step", "offset"]))
        n = max(len(shape), 1)
        # Few distinct values: ties and zeros are common (the interesting branches).
        pool = draw(st.sampled_from([(-1.0, 0.0, 1.0, 2.0), (-2.5, -0.5, 0.75, 1.5, 3.0)]))
        values = draw(st.lists(st.sampled_from(pool), min_size=int(np.prod(shape)),
                               max_size=int(np.prod(shape))))
        x = T(shape, F, layout=layout, values=np.array(values).reshape(shape))
        keepdim = draw(st.booleans())
        if key in _INT_DIM:
            dim = draw(st.integers(-n, n - 1))
            args = (x, dim) + ((keepdim,) if key in ("prod.dim_int", "max.dim",
                                                     "min.dim") else ())
            return key, S(*args)
        dims = draw(st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=n))
        if key == "norm.ScalarOpt_dim":
            p = draw(st.sampled_from([None, 1, 2, 3, 0.5, 1.5, float("inf")]))
            return key, S(x, p, dims, keepdim)
        if key == "linalg_vector_norm.default":
            o = draw(st.sampled_from([2, 1, 3, 0.5, float("inf"), -float("inf")]))
            return key, S(x, o, draw(st.sampled_from([None, dims])), keepdim)
        if key in ("var.correction", "std.correction"):
            return key, S(x, draw(st.sampled_from([None, dims])), keepdim=keepdim,
                          correction=draw(st.sampled_from([0, 1, 2])))
        if key == "nansum.default":
            return key, S(x, draw(st.sampled_from([None, dims])), keepdim)
        return key, S(x, dims, keepdim)

    @settings(max_examples=120)
    @given(case=_cases())
    def test_formulas_hypothesis(case, torch):
        key, sample = case
        op = _op(key)
        try:
            problems = check_formula(op, sample, torch)
        except (RuntimeError, IndexError) as e:      # the forward itself raises in torch
            assume(False)
            raise AssertionError from e
        assert not problems, "\n".join(problems[:4])


@pytest.mark.parametrize("key", OPS)
def test_formula_on_meta(key):
    """On meta twins the formula gives the cpu gradients' sizes and dtypes, no data."""
    op = _op(key)
    problems = meta_problems(op, samples_of(op, EXTRA.get(key, ())),
                             data_dependent=key in ("masked_scatter.default", "index_put.default"))
    assert not problems, "\n".join(problems[:6])


@pytest.mark.parametrize("key", OPS)
def test_formula_takes_expanded_grads(key):
    op = _op(key)
    problems = expanded_grad_problems(op, samples_of(op, EXTRA.get(key, ())))
    assert not problems, "\n".join(problems[:6])


@pytest.mark.parametrize("key", [k for k in OPS if native_samples(_op(k))])
def test_formula_matches_torch_in_float32_and_float16(key, torch):
    op = _op(key)
    problems = []
    for i, s in enumerate(native_samples(op)):
        problems += check_formula(op, s, torch, seed=i, rtol=2e-3, atol=2e-3)
    assert not problems, "\n".join(problems[:6])
