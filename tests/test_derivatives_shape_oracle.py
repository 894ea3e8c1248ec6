"""Derivative table, shape/index/scatter family (modes/autograd/derivatives/shape.py), against
torch: joins, gathers and scatters, index ops, rearranging copies, the functional ``*_scatter``
ops, the ``<view>_copy`` ops, the in-place random fills, and the non-differentiable marks of
the factories.

Formulas run once through ``formulas.apply_formula`` on the op samples (float64) plus hand cases
(type promotion in cat, broadcast values of index_put, duplicate indices) and are compared with
``torch.autograd.grad`` (rtol 1e-7) and torch's node names.
"""

from __future__ import annotations

import numpy as np
import pytest
from derivatives_support import (check_formula, expanded_grad_problems, finite_difference,
                                 float64_sample, meta_problems, native_samples,
                                 ops_run_by_formula, samples_of, uncovered)
from samples import S, T, build, entry_for

import subclass_kit as sk
import subclass_kit.modes.autograd.derivatives.shape  # noqa: F401  (registers)
from subclass_kit.modes.autograd import formulas

F = "float64"
DUP = T((4,), "int64", values=[0, 2, 2, 1])

EXTRA = {
    "cat.default": [S([T((2, 3), F), T((1, 3), "float32"), T((0,), F)], 0),
                    S([T((2, 3), F), T((2, 2), F, layout="step")], -1)],
    "stack.default": [S([T((2, 3), F), T((2, 3), "float32")], 1)],
    "gather.default": [S(T((3, 4), F), 1, T((3, 5), "int64", lo=0, hi=3))],
    "index_select.default": [S(T((3, 4), F), 0, DUP)],
    "index.Tensor": [S(T((5, 3), F), [DUP]), S(T((5, 3), F), [None, T((2,), "int64",
                                                                      values=[2, 2])])],
    "index_put.default": [S(T((5, 3), F), [DUP], T((3,), F)),                  # broadcast
                          S(T((5, 3), F), [DUP], T((4, 3), F), True),
                          S(T((5, 3), F), [None, T((2,), "int64", values=[0, 2])], T((), F))],
    "index_add.default": [S(T((5, 3), F), 0, DUP, T((4, 3), F), alpha=2.5)],
    "take.default": [S(T((3, 4), F), T((2, 3), "int64", values=[[0, -1, 5], [5, 11, 0]]))],
    "repeat.default": [S(T((2, 3), F), [2, 1, 3]), S(T((2, 3), F), [0, 2])],
    "trace.default": [S(T((2, 4), F)), S(T((4, 2), F))],
    "unfold_copy.default": [S(T((3, 7), F), 1, 3, 2), S(T((5,), F), 0, 2, 2), S(T((), F), 0, 1,
                                                                                  1)],
    "as_strided_copy.default": [S(T((4, 4), F), [3, 3], [4, 1], 5),
                                S(T((3, 4), F, layout="offset"), [2, 2], [1, 4]),
                                S(T((3, 4), F, layout="t"), [2, 3], [1, 3], 1)],
}

# PyTorch 2.13's as_strided_scatter backward gives ``self`` the gradient inside the scattered
# slot and zeros outside (and refuses non-contiguous inputs): ours is the true derivative
# (zeros inside, grad outside), checked by finite differences below (docs/differences.md).
TORCH_WRONG = {"as_strided_scatter.default"}

OPS = sorted(k for k in formulas.FORMULAS
             if formulas.FORMULAS[k].fn.__module__.endswith("derivatives.shape")
             and k not in TORCH_WRONG and not k.endswith("_.default"))


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


def _fd_check(key, sample, name, seed=7):
    op = _op(key)
    a, kw, _ = build(sample, "sk", op=op)
    results = op(*a, **kw)
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    rng = np.random.default_rng(seed)
    grads = [sk.tensor(rng.uniform(-1, 1, tuple(r.shape))) for r in results]
    f = formulas.FORMULAS[key]
    ours = formulas.apply_formula(op, a, kw, tuple(results), grads)[f.inputs.index(name)]
    num = finite_difference(op, a, kw, name, grads)
    np.testing.assert_allclose(ours.numpy(), num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sample", [S(T((10,), F), T((2, 3), F), [2, 3], [3, 1], 1),
                                    S(T((4, 4), F), T((2, 2), F), [2, 2], [4, 1], 5),
                                    S(T((), F), T((), F), [], [])])
@pytest.mark.parametrize("name", ["self", "src"])
def test_as_strided_scatter_by_finite_differences(sample, name):
    _fd_check("as_strided_scatter.default", sample, name)


def test_as_strided_scatter_src_grad_and_name_match_torch(torch):
    op = _op("as_strided_scatter.default")
    geometry = ([2, 3], [3, 1], 1)
    x = torch.zeros(10, dtype=torch.float64, requires_grad=True)
    src = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    out = torch.ops.aten.as_strided_scatter.default(x, src, *geometry)
    (tsrc,) = torch.autograd.grad(out, [src], [torch.arange(10.0, dtype=torch.float64)])
    args = (sk.zeros(10, dtype=sk.float64), sk.ones(2, 3, dtype=sk.float64), *geometry)
    grad = sk.arange(0, 10, 1, dtype=sk.float64)
    ours = formulas.apply_formula(op, args, {}, (op(*args),), [grad])
    np.testing.assert_array_equal(ours[1].numpy(), tsrc.numpy())
    assert out.grad_fn.name() == formulas.FORMULAS["as_strided_scatter.default"].node


@pytest.mark.parametrize("key,sample,name", [
    ("masked_scatter.default", S(T((3, 4), F), T((3, 4), "bool"), T((20,), F)), "source"),
    ("unfold_copy.default", S(T((3, 7), F), 1, 3, 2), "self"),
    ("repeat.default", S(T((2, 3), F), [2, 1, 3]), "self"),
    ("as_strided_copy.default", S(T((4, 4), F), [3, 3], [4, 1], 5), "self"),
])
def test_finite_differences(key, sample, name):
    _fd_check(key, sample, name)


@pytest.mark.parametrize("fill", ["uniform_", "normal_"])
def test_random_fill_gradient_is_zero(fill, torch):
    """``x.uniform_()`` on a non-leaf: PyTorch records UniformBackward0 and sends zeros back."""
    w = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    y = getattr(torch.ops.aten, fill).default(w * 2)
    (tg,) = torch.autograd.grad(y, [w], [torch.ones(2, 3, dtype=torch.float64)])
    op = getattr(sk.ops, fill).default
    x = sk.ones(2, 3, dtype=sk.float64)
    out = op(x)
    (g,) = formulas.apply_formula(op, (x,), {}, (out,), [sk.ones(2, 3, dtype=sk.float64)])
    np.testing.assert_array_equal(g.numpy(), tg.numpy())
    assert y.grad_fn.name() == formulas.FORMULAS[f"{fill}.default"].node


def _takes_tensor(key) -> bool:
    return any(a.is_tensor for a in _op(key).schema.arguments)


@pytest.mark.parametrize("key", sorted(
    k for k, r in formulas.NON_DIFFERENTIABLE.items()
    if ("factory" in r or k == "view_copy.dtype") and _takes_tensor(k)))
def test_marked_ops_do_not_require_grad_in_torch(key, torch):
    """Factories given a tensor that requires grad (``zeros_like``, ``new_full``...) and
    view_copy.dtype return tensors that do not require grad in PyTorch either."""
    op = _op(key)
    samples = [float64_sample(s) for s in entry_for(op).samples
               if any(isinstance(a, T) and a.dtype.startswith("float") for a in s.args)]
    assert samples, f"{key}: no float sample"
    sample = samples[0]
    targs, tkwargs, _ = build(sample, "torch", op=op)
    targs = tuple(a.detach().requires_grad_(True) if isinstance(a, torch.Tensor)
                  and a.is_floating_point() else a for a in targs)
    tkwargs.pop("requires_grad", None)
    out = getattr(getattr(torch.ops.aten, op.name), op.overload)(*targs, **tkwargs)
    assert not out.requires_grad


SHAPE_BASES = {
    "cat", "stack", "gather", "scatter", "scatter_add", "index_select", "index", "index_put",
    "index_add", "index_copy", "masked_scatter", "tril", "triu", "flip", "roll", "repeat",
    "diag_embed", "rot90", "trace", "take", "slice_scatter", "select_scatter",
    "diagonal_scatter", "as_strided_scatter", "view_copy", "as_strided_copy", "transpose_copy",
    "t_copy", "permute_copy", "expand_copy", "squeeze_copy", "unsqueeze_copy", "select_copy",
    "slice_copy", "diagonal_copy", "unfold_copy", "split_copy", "split_with_sizes_copy",
    "unbind_copy", "alias_copy", "detach_copy", "lift_fresh_copy", "_unsafe_view", "uniform_",
    "normal_", "nonzero", "empty", "empty_strided", "full", "arange", "eye", "rand", "randn",
    "randint", "scalar_tensor", "empty_like", "full_like", "zeros_like", "ones_like",
    "rand_like", "randn_like", "new_empty", "new_empty_strided", "new_full", "new_zeros",
    "new_ones"}


def test_every_shape_op_has_a_formula_or_a_mark():
    assert uncovered(SHAPE_BASES) == []


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


def _owned_elsewhere(op) -> bool:
    """Ops whose derivatives the other derivative modules register: views, the autograd core's
    copies and arithmetic, and every pointwise op (op_table's pointwise families)."""
    table = sk.op_table
    pointwise = {s.partition("(")[0].partition(".")[0]
                 for s in table.POINTWISE_UNARY + table.POINTWISE_BINARY}
    core = {"add", "sub", "mul", "div", "neg", "sum", "mean", "mm", "addmm", "tanh", "exp",
            "clone", "_to_copy", "copy", "fill", "zero_", "lift_fresh", "detach", "alias"}
    return (op.is_view or op.name in core or op.name in pointwise
            or op.name in ("lerp", "addcmul", "addcdiv"))


def test_backward_op_streams_stay_in_the_table():
    """Every op a formula of this package runs (over all the formula samples) has a derivative
    or a non-differentiable mark here, or belongs to a family the other derivative modules
    cover: the backward is itself differentiable (double backward) once the table is whole."""
    import subclass_kit.modes.autograd.derivatives.linalg_nn  # noqa: F401
    import subclass_kit.modes.autograd.derivatives.reductions  # noqa: F401
    stray = {}
    for key, f in formulas.FORMULAS.items():
        if not f.fn.__module__.startswith("subclass_kit.modes.autograd.derivatives"):
            continue
        op = _op(key)
        if op.is_inplace:
            continue
        for used in ops_run_by_formula(op, samples_of(op)):
            fv = used.functional_variant if used.is_inplace else None
            if fv is not None:          # in-place ops use their functional variant's row
                used = fv
            k = f"{used.name}.{used.overload}"
            # ``_local_scalar_dense`` (item) picks a branch (prod/cumprod with zeros), as
            # PyTorch's formulas do: a Python number, not on the gradient's path.
            if not (k in formulas.FORMULAS or k in formulas.NON_DIFFERENTIABLE
                    or _owned_elsewhere(used) or k == "_local_scalar_dense.default"):
                stray.setdefault(k, []).append(key)
    assert not stray, stray
