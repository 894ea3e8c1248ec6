"""Derivative-table rows of the loss primitives against ``torch.autograd.grad``: each formula
run once through ``formulas.apply_formula`` (no engine needed) on float64 inputs, compared with
torch's input gradients for the same output gradients; node names against torch's
``grad_fn.name()``."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit.modes.autograd import formulas
from subclass_kit.modes.autograd.derivatives import losses as _losses  # noqa: F401 (registers)

torch = pytest.importorskip("torch", reason="torch is the oracle for the loss derivatives")
from oracle import to_sk  # noqa: E402

A = torch.ops.aten


def _inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 5, generator=g, dtype=torch.float64)
    return {
        "logp": x.log_softmax(1), "x": x, "y": torch.rand(4, 5, generator=g, dtype=torch.float64),
        "p": torch.rand(4, 5, generator=g, dtype=torch.float64) * 0.9 + 0.05,
        "t": torch.tensor([1, 0, 4, 2]), "w": torch.rand(5, generator=g, dtype=torch.float64),
        "w45": torch.rand(4, 5, generator=g, dtype=torch.float64) + 0.1,
        "pw": torch.rand(5, generator=g, dtype=torch.float64) + 0.5,
    }


def _cases(d):
    """(op name, torch args, indices of differentiable args)."""
    cases = []
    for red in (0, 1, 2):
        cases += [
            ("nll_loss_forward", (d["logp"], d["t"], None, red, -100), (0,)),
            ("nll_loss_forward", (d["logp"], d["t"], d["w"], red, 2), (0,)),
            ("mse_loss", (d["x"], d["y"], red), (0, 1)),
            ("binary_cross_entropy", (d["p"], d["y"], None, red), (0, 1)),
            ("binary_cross_entropy", (d["p"], d["y"], d["w45"], red), (0, 1)),
            ("binary_cross_entropy_with_logits", (d["x"], d["y"], None, None, red), (0, 1)),
            ("binary_cross_entropy_with_logits", (d["x"], d["y"], d["w45"], d["pw"], red),
             (0, 1)),
        ]
    cases += [("softplus", (d["x"] * 5, 1, 20), (0,)), ("softplus", (d["x"], 2.0, 1.0), (0,)),
              ("constant_pad_nd", (d["x"], [1, -2, 0, 3], 0.5), (0,)),
              ("mse_loss_backward", (torch.rand(4, 5, dtype=torch.float64), d["x"], d["y"], 0),
               (0, 1, 2)),
              ("mse_loss_backward", (torch.tensor(0.7, dtype=torch.float64), d["x"], d["y"], 1),
               (0, 1, 2)),
              ("softplus_backward", (d["y"], d["x"] * 3, 1.0, 2.0), (0, 1)),
              ("binary_cross_entropy_backward", (torch.tensor(1.3, dtype=torch.float64), d["p"],
                                                 d["y"], None, 1), (0,)),
              ("nll_loss_backward", (torch.tensor(0.5, dtype=torch.float64), d["logp"], d["t"],
                                     None, 1, -100, torch.tensor(4.0, dtype=torch.float64)), (0,))]
    return cases


CASES = _cases(_inputs())


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_formula_matches_torch(case):
    name, targs, diff = case
    targs = [a.clone().requires_grad_(i in diff) if isinstance(a, torch.Tensor) else a
             for i, a in enumerate(targs)]
    tout = getattr(A, name).default(*targs)
    touts = tout if isinstance(tout, tuple) else (tout,)
    gen = torch.Generator().manual_seed(7)
    tgrads = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in touts]
    wrt = [targs[i] for i in diff]
    expected = torch.autograd.grad(touts[:1], wrt, tgrads[:1], allow_unused=True)
    sargs = [to_sk(a.detach()) if isinstance(a, torch.Tensor) else a for a in targs]
    op = getattr(sk.ops, name).default
    souts = op(*sargs)
    souts = souts if isinstance(souts, tuple) else (souts,)
    sgrads = [to_sk(g) for g in tgrads]
    formula = formulas.FORMULAS[f"{name}.default"]
    names = [a.name for a in op.schema.arguments]
    needs = tuple(names.index(n) in diff for n in formula.inputs)
    got = formulas.apply_formula(op, tuple(sargs), {}, souts, sgrads, needs)
    assert formula.node == touts[0].grad_fn.name()
    for n, g in zip(formula.inputs, got):
        i = names.index(n)
        if i not in diff:
            continue
        e = expected[diff.index(i)]
        if e is None:
            assert g is None or not np.any(g.numpy())
            continue
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)
