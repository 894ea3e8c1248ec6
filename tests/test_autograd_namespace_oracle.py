"""``sk.autograd`` has ``torch.autograd``'s names, and the smaller ones behave as torch's:
the legacy ``Variable`` and ``InplaceFunction``, ``set_multithreading_enabled`` and
``enforce_grad_layout_policy`` (which gradient ``AccumulateGrad`` keeps as it is)."""

from __future__ import annotations

import warnings

import pytest

import subclass_kit as sk

# torch.autograd names with no counterpart here (docs/differences.md, "Autograd")
ABSENT = {"NestedIOFunction"}


def test_every_torch_autograd_name_exists(torch):
    import torch.autograd.function
    import torch.autograd.graph  # noqa: F401
    for theirs, ours in [(torch.autograd, sk.autograd),
                         (torch.autograd.grad_mode, sk.autograd.grad_mode),
                         (torch.autograd.functional, sk.autograd.functional)]:
        missing = {n for n in theirs.__all__ if not hasattr(ours, n)}
        assert missing <= ABSENT, sorted(missing - ABSENT)
    assert hasattr(sk.autograd.function, "InplaceFunction")


def _variable_program(L):
    V = L.autograd.Variable
    x = L.ones(2, requires_grad=True)
    y = x * 2
    v = V(y)
    v.add_(1)
    w = V(L.ones(3), requires_grad=True)
    out = [V().tolist(), v.requires_grad, v.is_leaf, v.grad_fn is None, y._version,
           y.tolist(), w.requires_grad, w.is_leaf, isinstance(y, V), isinstance(3, V),
           issubclass(L.Tensor, V)]
    for bad in [lambda: V(3), lambda: V(L.ones(2, dtype=L.int64), requires_grad=True)]:
        try:
            bad()
        except (TypeError, RuntimeError) as e:
            out.append((type(e).__name__, str(e)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        V(L.ones(1), volatile=True)
    out.append([w.category.__name__ for w in caught])
    return out


def test_variable_as_torch(torch):
    assert _variable_program(sk) == _variable_program(torch)


def test_inplace_function_carries_inplace(torch):
    for L in (sk, torch):
        class Double(L.autograd.function.InplaceFunction):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # instantiating a Function is deprecated
            assert Double(True).inplace and not Double().inplace
        x = L.ones(2, requires_grad=True)
        Double.apply(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]


def _layout_program(L, enable, use_as):
    """Strides of the gradients AccumulateGrad keeps for a permuted leaf: one it may steal
    (a fresh contiguous product), one it must copy (the caller's)."""
    out = []
    p = L.randn(2, 3, 4).permute(2, 0, 1).requires_grad_()
    q = L.randn(2, 3, 4).permute(2, 0, 1).requires_grad_()
    g = L.ones(4, 2, 3) * 3
    if use_as == "context":
        with L.autograd.enforce_grad_layout_policy(enable):
            (p.contiguous() * 2).sum().backward()
            q.backward(g)
    elif use_as == "call":
        L.autograd.enforce_grad_layout_policy(enable)
        (p.contiguous() * 2).sum().backward()
        q.backward(g)
        L.autograd.enforce_grad_layout_policy(True)
    else:
        @L.autograd.enforce_grad_layout_policy(enable)
        def run():
            (p.contiguous() * 2).sum().backward()
            q.backward(g)
        run()
    out += [p.grad.stride(), q.grad.stride()]
    # after: enforced again, a stolen gradient gets the contract's layout
    r = L.randn(2, 3, 4).permute(2, 0, 1).requires_grad_()
    (r.contiguous() * 2).sum().backward()
    return out + [r.grad.stride()]


@pytest.mark.parametrize("use_as", ["context", "call", "decorator"])
@pytest.mark.parametrize("enable", [True, False])
def test_enforce_grad_layout_policy_as_torch(torch, enable, use_as):
    assert _layout_program(sk, enable, use_as) == _layout_program(torch, enable, use_as)


def test_set_multithreading_enabled_round_trips():
    from subclass_kit.autograd.grad_mode import is_multithreading_enabled
    assert is_multithreading_enabled()
    with sk.autograd.set_multithreading_enabled(False):
        assert not is_multithreading_enabled()
        x = sk.ones(2, requires_grad=True)
        (x * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
    assert is_multithreading_enabled()
    sk.autograd.set_multithreading_enabled(False)
    assert not is_multithreading_enabled()
    sk.autograd.set_multithreading_enabled(True)
    assert is_multithreading_enabled()
