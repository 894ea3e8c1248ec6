"""Which leaf gradients are stolen and which are copied, on random graphs, against torch 2.13.

PyTorch's ``AccumulateGrad`` keeps (detaches) a gradient only its input buffer holds and copies
one held elsewhere too (a reference count); the engine here counts the input buffers holding
each gradient instead (``holds`` in ``engine.py``), and runs unhooked leaves without its ready
queue (Note [Leaves run inline]). A gradient ``add`` hands to both inputs, one a node passes
through (``clone``, ``view``), one a hook replaces or only looks at: each leaf's ``.grad`` must
share storage with the same other leaves' as in PyTorch, with PyTorch's values and strides,
and hooks must see the same ``.grad`` states.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

N_LEAVES = 4


@st.composite
def _programs(draw):
    """Terms over four leaves of shape (2, 3), summed into the loss, and the leaves' hooks."""
    term = st.tuples(st.sampled_from(["add", "mul", "clone", "view", "pass", "stack"]),
                     st.integers(0, N_LEAVES - 1), st.integers(0, N_LEAVES - 1))
    terms = draw(st.lists(term, min_size=1, max_size=5))
    hooks = draw(st.lists(st.sampled_from([None, "post", "look", "replace"]),
                          min_size=N_LEAVES, max_size=N_LEAVES))
    return terms, hooks


def _program(terms, hooks):
    def program(L):
        leaves = [L.full((2, 3), float(i + 1), requires_grad=True) for i in range(N_LEAVES)]
        seen = []
        for i, (hook, p) in enumerate(zip(hooks, leaves)):
            if hook == "post":
                p.register_post_accumulate_grad_hook(
                    lambda t, i=i: seen.append((i, [q.grad is not None for q in leaves])))
            elif hook == "look":
                p.register_hook(lambda g, i=i: seen.append((i, g.sum().item())))
            elif hook == "replace":
                p.register_hook(lambda g: g * 2)
        parts = []
        for kind, a, b in terms:
            x, y = leaves[a], leaves[b]
            if kind == "add":
                parts.append(x + y)
            elif kind == "mul":
                parts.append(x * y)
            elif kind == "clone":
                parts.append(x.clone())
            elif kind == "view":
                parts.append(x.view(6).view(2, 3))
            elif kind == "stack":
                parts.append(L.stack([x, y]).sum(0))
            else:
                parts.append(x)
        # scaled by a constant first: the gradients reaching the leaves are then dense (a
        # ``sum``'s own gradient is an expanded one, which every leaf copies)
        scale = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        loss = (parts[0] * scale).sum()
        for part in parts[1:]:
            loss = loss + (part * scale).sum()
        loss.backward()
        grads = [p.grad for p in leaves]
        ptrs = [None if g is None else (g.untyped_storage().data_ptr(), g.data_ptr())
                for g in grads]
        sharing = [[g is not None and h is not None and g[0] == h[0] for h in ptrs]
                   for g in ptrs]
        # (not ``_version``: gradients summed in an input buffer are summed out of place
        # here, docs/differences.md)
        return seen, sharing, [None if g is None else (g.tolist(), g.stride()) for g in grads]
    return program


@settings(max_examples=80, deadline=None)
@given(_programs())
def test_leaf_gradients_are_stolen_or_copied_as_in_pytorch(program):
    terms, hooks = program
    run = _program(terms, hooks)
    assert run(sk) == run(torch)
