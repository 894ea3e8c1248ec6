"""``sk.autograd.graph.register_multi_grad_hook`` against torch's: in "all" mode one call per
backward with every gradient it computes (None for tensors it does not reach: unused leaves,
``inputs=`` leaving them out, ``autograd.grad``), in "any" mode one call with the first; a
removed handle stops both; a bad mode raises ValueError."""

from __future__ import annotations

import importlib

import pytest

import subclass_kit as sk


def _lists(gs):
    return [None if g is None else g.tolist() for g in gs]


def _all_mode(L):
    G = importlib.import_module(f"{L.__name__}.autograd.graph")
    a, b, c = (L.ones(n, requires_grad=True) for n in (2, 3, 1))
    calls = []
    handle = G.register_multi_grad_hook((a, b, c), lambda gs: calls.append(_lists(gs)))
    (a * 2).sum().backward(retain_graph=True)
    (a.sum() * b.sum() * 3).backward()
    y = a.sum() + b.sum() * 2 + (c * 4).sum()
    y.backward(inputs=[b, c], retain_graph=True)
    try:        # a leaf asked about while autograd.grad captures it
        L.autograd.grad(y, [a, c], retain_graph=True)
    except RuntimeError as e:
        calls.append(str(e))
    calls.append(_lists(L.autograd.grad(y, [b.view_as(b)], allow_unused=True)))
    handle.remove()
    a.sum().backward()
    # a non-leaf and a leaf, and a backward that reaches the leaf twice
    x, w = L.ones(2, requires_grad=True), L.ones(2, requires_grad=True)
    h = x * 2
    G.register_multi_grad_hook([h, w], lambda gs: calls.append(_lists(gs)))
    (h.sum() + w.sum() + (w * 3).sum()).backward()
    return calls


def _any_mode(L):
    G = importlib.import_module(f"{L.__name__}.autograd.graph")
    x1, x2 = L.ones(2, requires_grad=True), L.ones(2, requires_grad=True)
    frozen = L.ones(2)
    seen = []
    handle = G.register_multi_grad_hook([x1, x2, frozen], lambda g: seen.append(g.tolist()),
                                        mode="any")
    (x1 * 2 + x2 * 3).sum().backward()
    (x2 * 5).sum().backward()
    handle.remove()
    (x1 * 7).sum().backward()
    return seen


@pytest.mark.parametrize("program", [_all_mode, _any_mode])
def test_as_torch(torch, program):
    import torch.autograd.graph  # noqa: F401
    assert program(sk) == program(torch)


def test_bad_mode_and_frozen_tensor_in_all_mode(torch):
    import torch.autograd.graph  # noqa: F401
    for L in (sk, torch):
        G = importlib.import_module(f"{L.__name__}.autograd.graph")
        with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but "
                                             "got some"):
            G.register_multi_grad_hook([L.ones(1, requires_grad=True)], print, mode="some")
        with pytest.raises(AssertionError, match="Expected gradient function to be set"):
            G.register_multi_grad_hook([L.ones(1)], print)
