"""Planned records (Note [Simple records] in modes/autograd/layer.py) build the very node the
general ``_record`` builds: same class, edges, saved tensors, values, metadata and outputs'
history. The general path is run directly here, the planned one through the op."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit.modes.autograd import layer
from subclass_kit.modes.autograd.graph import SavedTensor

ops = sk.ops


def _leaf(*shape, grad=True):
    t = sk.tensor(np.random.default_rng(sum(shape)).standard_normal(shape))
    return t.requires_grad_(grad)


CALLS = {
    "addmm": lambda: (ops.addmm.default, (_leaf(3), _leaf(2, 4, grad=False), _leaf(4, 3))),
    "addmm_no_weight_grad": lambda: (ops.addmm.default, (_leaf(3), _leaf(2, 4), _leaf(4, 3,
                                                                                      grad=False))),
    "mul_scalar": lambda: (ops.mul.Tensor, (_leaf(2, 3), 2.5)),
    "mul": lambda: (ops.mul.Tensor, (_leaf(2, 3), _leaf(3, grad=False))),
    "div": lambda: (ops.div.Tensor, (_leaf(2, 3), _leaf(2, 3))),
    "tanh": lambda: (ops.tanh.default, (_leaf(4),)),
    "exp_of_view": lambda: (ops.exp.default, (_leaf(2, 3).t(),)),
    "mean": lambda: (ops.mean.default, (_leaf(2, 3),)),
    "sub_alpha_default": lambda: (ops.sub.Tensor, (_leaf(2, 3), _leaf(2, 3))),
    "sigmoid": lambda: (ops.sigmoid.default, (_leaf(2, 3),)),
    "mm": lambda: (ops.mm.default, (_leaf(2, 3), _leaf(3, 2))),
}


def _node_facts(out):
    node = out.grad_fn
    saved = {k: (v._version, v._t is not None) if isinstance(v, SavedTensor) else v
             for k, v in node._saved.items()}
    metas = {k: (m.shape, m.stride, m.dtype) for k, m in node._metas.items()}
    results = None if node._results is None else [
        (r._is_output, r._output_nr, r._version) for r in node._results]
    edges = [None if e is None else (type(e[0]).__name__, e[1]) for e in node._next]
    return (type(node).__name__, edges, node._needs, sorted(saved.items()), node._values,
            sorted(metas.items()), results, [(m.shape, m.dtype) for m in node._out_metas],
            out._output_nr, out.requires_grad, out.detach().tolist())


def test_calls_with_a_per_call_node_name_are_not_planned():
    x = _leaf(2, 3)
    ops.sum.dim_IntList(x, [0])         # SumBackward1, but SumBackward0 for an empty dim list
    assert ops.sum.dim_IntList not in layer._SIMPLE
    assert type(ops.sum.dim_IntList(x, []).grad_fn).__name__ == "SumBackward0"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_planned_record_builds_the_general_records_node(name):
    op, args = CALLS[name]()
    op(*args)                                   # first call: general path, makes the plan
    assert op in layer._SIMPLE, "the op gets a plan"
    planned = _node_facts(op(*args))
    formula = layer.AutogradLayer()._formula(op)
    general = _node_facts(layer._record(op, formula, args, {}))
    assert planned == general
    # the gradients agree too
    grads = []
    for out in (op(*args), layer._record(op, formula, args, {})):
        leaves = [a for a in args if isinstance(a, sk.Tensor) and a.requires_grad]
        grads.append([g.tolist() for g in sk.autograd.grad(out.sum(), leaves)])
    assert grads[0] == grads[1]
