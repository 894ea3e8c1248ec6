"""The order in which leaves receive their gradients, against torch.

Every leaf's ``AccumulateGrad`` has the same (highest) sequence number, so when several are
ready at once PyTorch's engine takes them in the order its ``std::priority_queue`` gives equal
elements: ``stack`` of five leaves accumulates them 0, 2, 4, 1, 3. That order is what
post-accumulate-grad hooks (optimizer steps in backward) and modes (``detach`` or a copy per
leaf) observe; the engine repeats libstdc++'s heap steps to give the same one.
"""

from __future__ import annotations

import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for the engine's order")
pytest.importorskip("hypothesis", reason="hypothesis draws the programs")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _accumulation_order(m, n, steps):
    """Run ``steps`` over ``n`` leaves of library ``m``; the leaves' indices in the order their
    post-accumulate-grad hooks fire."""
    leaves = [m.ones(3) * (i + 1) for i in range(n)]
    leaves = [t.detach().requires_grad_() for t in leaves]
    order = []
    for i, leaf in enumerate(leaves):
        leaf.register_post_accumulate_grad_hook(lambda t, i=i: order.append(i))
    values = list(leaves)
    for kind, picks in steps:
        chosen = [values[p % len(values)] for p in picks]
        if kind == "mul":
            out = chosen[0] * chosen[1]
        elif kind == "add":
            out = chosen[0] + chosen[1]
        elif kind == "stack":
            out = m.stack(chosen).sum(0)
        elif kind == "cat":
            out = m.cat(chosen).view(len(chosen), 3).sum(0)
        else:
            out = chosen[0].exp()
        values.append(out)
    total = values[-1]
    for v in values[n:-1]:          # every intermediate reaches the loss
        total = total + v
    for leaf in leaves:             # and every leaf
        total = total + leaf
    total.sum().backward()
    return order


STEP = st.tuples(st.sampled_from(["mul", "add", "stack", "cat", "exp"]),
                 st.lists(st.integers(0, 20), min_size=2, max_size=6))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 7), steps=st.lists(STEP, max_size=6))
def test_leaves_accumulate_in_torchs_order(n, steps):
    assert _accumulation_order(sk, n, steps) == _accumulation_order(torch, n, steps)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_stack_of_leaves(n):
    steps = [("stack", list(range(n)))]
    ours = _accumulation_order(sk, n, steps)
    assert ours == _accumulation_order(torch, n, steps)
    assert sorted(ours) == list(range(n))
