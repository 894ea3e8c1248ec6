"""Derivative table, linalg and nn family (modes/autograd/derivatives/linalg_nn.py), against torch.

Formulas run once through ``formulas.apply_formula`` on the op samples (float64) plus hand cases
(broadcast ``self`` of baddbmm, beta/alpha, layer norm without weight or bias, embedding with
padding_idx and scale_grad_by_freq) and are compared with ``torch.autograd.grad`` (rtol 1e-7)
and torch's node names.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from derivatives_support import (check_formula, expanded_grad_problems, finite_difference,
                                 meta_problems, native_samples, samples_of, uncovered)
from samples import D, S, T, build

import subclass_kit as sk
import subclass_kit.modes.autograd.derivatives.linalg_nn  # noqa: F401  (registers)
from subclass_kit.modes.autograd import formulas

F = "float64"
IDX = T((2, 3), "int64", values=[[0, 2, 2], [4, 0, 2]])

EXTRA = {
    "bmm.default": [S(T((2, 3, 4), F, layout="t"), T((2, 4, 5), F))],
    "baddbmm.default": [S(T((3, 1), F), T((2, 3, 4), F), T((2, 4, 1), F)),       # broadcast
                        S(T((2, 3, 5), F), T((2, 3, 4), F), T((2, 4, 5), F), beta=0.5,
                          alpha=-2),
                        S(T((5,), F), T((2, 3, 4), F), T((2, 4, 5), F), beta=0)],
    "dot.default": [S(T((5,), F, layout="step"), T((5,), F))],
    "mv.default": [S(T((3, 4), F, layout="t"), T((4,), F))],
    "_softmax.default": [S(T((2, 3, 4), F), 1, False), S(T((), F), 0, False)],
    "_log_softmax.default": [S(T((2, 3, 4), F), -1, False), S(T((), F), 0, False)],
    "native_layer_norm.default": [S(T((2, 3, 4), F), [4], T((4,), F), T((4,), F), 1e-5),
                                  S(T((2, 3, 4), F), [3, 4], T((3, 4), F), None, 1e-5),
                                  S(T((4,), F), [4], None, T((4,), F), 1e-5)],
    "_softmax_backward_data.default": [S(T((2, 3), F), T((2, 3), F, lo=0, hi=1), 1, D(F)),
                                       S(T((2, 3, 4), F), T((2, 3, 4), F, lo=0, hi=1), 0,
                                         D("float32"))],
    "_log_softmax_backward_data.default": [S(T((2, 3), F), T((2, 3), F, hi=0), 1, D(F)),
                                           S(T((4,), F), T((4,), F, hi=0), -1, D(F))],
    "embedding_dense_backward.default": [S(T((2, 3, 4), F), IDX, 5, -1, False),
                                         S(T((2, 3, 4), F), IDX, 5, 2, True)],
    "embedding.default": [S(T((5, 3), F), IDX), S(T((5, 3), F), IDX, 2),
                          S(T((5, 3), F), IDX, -1, True), S(T((5, 3), F), IDX, 0, True),
                          S(T((5, 3), F), T((), "int64", values=[3]))],
}



def _ln_backward_sample(shape, k, params=True, mask=(True, True, True), seed=0):
    """A float64 native_layer_norm_backward sample whose mean and rstd are the input's (eps
    1e-5): the double backward treats them as functions of the input, as PyTorch's does, so
    it is only comparable on consistent statistics."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    axes = tuple(range(len(shape) - k, len(shape)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")     # empty rows: mean nan -> 0, rstd nan (torch's)
        mean = np.nan_to_num(x.mean(axis=axes, keepdims=True))
        rstd = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5)
    norm = shape[len(shape) - k:]
    w = T(norm, F) if params in (True, "weight") else None
    b = T(norm, F) if params in (True, "bias") else None
    return S(T(shape, F), T(shape, F, values=x), list(norm), T(mean.shape, F, values=mean),
             T(rstd.shape, F, values=rstd), w, b, list(mask))


EXTRA["native_layer_norm_backward.default"] = [
    _ln_backward_sample((2, 3, 4), 1), _ln_backward_sample((2, 3, 4), 2, seed=1),
    _ln_backward_sample((5, 4), 1, "weight", (True, True, False), seed=2),
    _ln_backward_sample((5, 4), 1, "weight", (False, True, False), seed=3),
    _ln_backward_sample((5, 4), 1, True, (False, False, True), seed=4),
    _ln_backward_sample((5, 4), 1, True, (True, False, True), seed=5),
    _ln_backward_sample((2, 3, 4), 3, False, (True, False, False), seed=6),
    _ln_backward_sample((4,), 1, "bias", (True, False, False), seed=7),
    _ln_backward_sample((0, 4), 1, seed=8), _ln_backward_sample((3, 0), 1, seed=9)]
# Ops whose table samples do not fit a comparison of the formula with torch's: only their
# EXTRA samples are compared.
EXTRA_ONLY = {"native_layer_norm_backward.default":
              "the table's random mean/rstd are not the input's statistics"}

# Keyword tensors torch does not differentiate (its leaves here would all require grad, and
# torch refuses "not differentiable with respect to argument 'attn_mask'"): samples passing
# them are compared on the others' table samples only.
NOT_DIFFERENTIABLE_KWARGS = {"_scaled_dot_product_flash_attention_for_cpu.default": "attn_mask"}

OPS = sorted(k for k in formulas.FORMULAS
             if formulas.FORMULAS[k].fn.__module__.endswith("derivatives.linalg_nn"))


def _torch_comparable(key, samples) -> list:
    return [s for s in samples if NOT_DIFFERENTIABLE_KWARGS.get(key) not in s.kwargs]


def _op(key):
    name, _, overload = key.partition(".")
    return getattr(sk.ops, name)._overloads[overload]


@pytest.mark.parametrize("key", OPS)
def test_formula_matches_torch(key, torch):
    op = _op(key)
    samples = EXTRA[key] if key in EXTRA_ONLY else samples_of(op, EXTRA.get(key, ()))
    samples = _torch_comparable(key, samples)
    assert samples, f"{key}: no float sample"
    problems = []
    for i, s in enumerate(samples):
        problems += check_formula(op, s, torch, seed=i)
    assert not problems, "\n".join(problems[:6])


def test_type_promotion_grads_keep_input_dtypes():
    """A float32 input of baddbmm with float32 batches: gradients come back in each input's
    dtype (the engine's cast, PyTorch's validate_outputs)."""
    op = sk.ops.baddbmm.default
    a, kw, _ = build(S(T((3, 1), "float32"), T((2, 3, 4), "float32"), T((2, 4, 1), "float32")),
                     "sk")
    out = op(*a, **kw)
    gs = formulas.apply_formula(op, a, kw, (out,), [sk.ones_like(out)])
    assert [tuple(g.shape) for g in gs] == [(3, 1), (2, 3, 4), (2, 4, 1)]
    assert all(g.dtype == sk.float32 for g in gs)


@pytest.mark.parametrize("key,sample,name", [
    ("native_layer_norm.default", S(T((2, 5), F), [5], T((5,), F), T((5,), F), 1e-5), "input"),
    ("native_layer_norm.default", S(T((2, 5), F), [5], T((5,), F), T((5,), F), 1e-5), "weight"),
    ("native_layer_norm_backward.default", _ln_backward_sample((3, 4), 1), "grad_out"),
    ("native_layer_norm_backward.default", _ln_backward_sample((3, 4), 1), "weight"),
    ("_log_softmax.default", S(T((3, 4), F), 1, False), "self"),
    ("baddbmm.default", S(T((3, 1), F), T((2, 3, 4), F), T((2, 4, 1), F), beta=0.5), "batch2"),
])
def test_finite_differences(key, sample, name):
    op = _op(key)
    a, kw, _ = build(sample, "sk", op=op)
    results = op(*a, **kw)
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    rng = np.random.default_rng(5)
    grads = [sk.tensor(rng.uniform(-1, 1, tuple(results[0].shape)))] + [None] * (len(results) - 1)
    f = formulas.FORMULAS[key]
    ours = formulas.apply_formula(op, a, kw, tuple(results), grads)[f.inputs.index(name)]
    num = finite_difference(op, a, kw, name, grads)
    np.testing.assert_allclose(ours.numpy(), num, rtol=1e-5, atol=1e-6)


LINALG_NN_BASES = {"bmm", "baddbmm", "dot", "mv", "vdot", "_softmax", "_log_softmax",
                   "native_layer_norm", "native_layer_norm_backward", "embedding",
                   "_softmax_backward_data",
                   "_log_softmax_backward_data", "embedding_dense_backward",
                   "_scaled_dot_product_flash_attention_for_cpu",
                   "_scaled_dot_product_flash_attention_for_cpu_backward"}


def test_every_linalg_nn_op_has_a_formula_or_a_mark():
    assert uncovered(LINALG_NN_BASES) == []


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


@pytest.mark.parametrize("key", [k for k in OPS if native_samples(_op(k)) and k not in EXTRA_ONLY])
def test_formula_matches_torch_in_float32_and_float16(key, torch):
    op = _op(key)
    problems = []
    for i, s in enumerate(_torch_comparable(key, native_samples(op))):
        problems += check_formula(op, s, torch, seed=i, rtol=2e-3, atol=2e-3)
    assert not problems, "\n".join(problems[:6])
