"""``sk.autograd.functional`` against ``torch.autograd.functional``: every product (``vjp``,
``jvp``, ``jacobian``, ``hessian``, ``vhp``, ``hvp``) on functions with one or several inputs
and outputs, unused inputs, outputs that do not require grad and linear functions, with and
without ``create_graph`` and ``strict``: the same nesting of tuples, shapes, values and
``requires_grad``, or the same exception class and message. Also a second derivative through
a ``create_graph`` Jacobian, the argument errors, and a meta-device Hessian."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import subclass_kit as sk
from oracle import normalize_message

A = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
B = [0.3, -0.2, 1.1]

# name -> (function of (L, *inputs), inputs as nested lists); several inputs pass as a tuple
FUNCS = {
    "square": (lambda L, a: a ** 2, (A,)),
    "sum_two": (lambda L, a, b: (a * b).sum() + a.exp().sum(), (B, B)),
    "two_outputs": (lambda L, a: (a.sin(), (a * a).sum()), (B,)),
    "matmul": (lambda L, a, b: a @ b, (A, B)),
    "scalar_cubic": (lambda L, a: (a ** 3).sum() + a.prod(), (B,)),
    "tuple_scalar": (lambda L, a, b: (a.exp() * b).sum(), (B, B)),
    "linear": (lambda L, a: (2 * a).sum(), (B,)),
    "unused_input": (lambda L, a, b: a.tanh().sum(), (B, B)),
    "no_grad_output": (lambda L, a: L.ones(3, dtype=L.float64), (B,)),
    "single_element": (lambda L, a: a.exp() * 3, ([0.7],)),
}

APIS = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _inputs(L, spec):
    xs = tuple(L.tensor(x, dtype=L.float64) for x in spec)
    return xs if len(xs) > 1 else xs[0]


def _v(L, api, fn, xs):
    """A ``v`` shaped as the outputs (``vjp``) or inputs, from the torch run's shapes."""
    if api == "vjp":
        outs = fn(*xs) if isinstance(xs, tuple) else fn(xs)
        like = outs
    else:
        like = xs
    if isinstance(like, tuple):
        return tuple(L.full(tuple(t.shape), 0.5, dtype=L.float64) + L.arange(t.numel(),
                     dtype=L.float64).reshape(tuple(t.shape)) * 0.1 for t in like)
    return (L.full(tuple(like.shape), 0.5, dtype=L.float64)
            + L.arange(like.numel(), dtype=L.float64).reshape(tuple(like.shape)) * 0.1)


def _obs(r):
    if isinstance(r, tuple):
        return ("tuple", [_obs(x) for x in r])
    return (tuple(r.shape), np.round(np.asarray(r.detach().tolist(), dtype=float), 9).tolist(),
            r.requires_grad, str(r.dtype).split(".")[-1])


def _call(L, api, name, create_graph, strict, with_v):
    fn, spec = FUNCS[name]
    f = lambda *xs: fn(L, *xs)    # noqa: E731
    xs = _inputs(L, spec)
    kw = {"create_graph": create_graph, "strict": strict}
    if with_v and api not in ("jacobian", "hessian"):
        try:
            kw["v"] = _v(L, api, f, xs)
        except Exception:   # noqa: BLE001 - the function itself fails: the call shows it
            pass
    try:
        return _obs(getattr(L.autograd.functional, api)(f, xs, **kw)), None
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return None, (type(e).__name__, normalize_message(str(e)))


CASES = [(api, name, cg, strict, with_v)
         for api, name in itertools.product(APIS, FUNCS)
         for cg, strict, with_v in itertools.product((False, True), (False, True), (True, False))
         if with_v or api not in ("jacobian", "hessian")]


@pytest.mark.parametrize("api,name,create_graph,strict,with_v", [
    pytest.param(*c, id="-".join(map(str, c))) for c in CASES
    if not (not c[4] and c[2])])    # an implied v with create_graph adds nothing new
def test_matches_torch(torch, api, name, create_graph, strict, with_v):
    import torch.autograd.functional  # noqa: F401 - torch.autograd.functional by attribute
    ours = _call(sk, api, name, create_graph, strict, with_v)
    theirs = _call(torch, api, name, create_graph, strict, with_v)
    assert ours == theirs


def test_create_graph_results_are_differentiable(torch):
    """d/da of the Jacobian's trace, through ``create_graph=True``, as torch."""
    def run(L):
        from importlib import import_module
        functional = import_module(f"{L.__name__}.autograd.functional")
        a = L.tensor(B, dtype=L.float64, requires_grad=True)
        jac = functional.jacobian(lambda t: t.sin() * t, a, create_graph=True)
        (g,) = L.autograd.grad(jac.diagonal().sum(), a)
        return jac.requires_grad, np.round(g.tolist(), 12).tolist()
    assert run(sk) == run(torch)


@pytest.mark.parametrize("call", [
    lambda L, F: F.jacobian(lambda t: t, [L.ones(2)]),
    lambda L, F: F.vjp(lambda t: t, (L.ones(2), 3)),
    lambda L, F: F.vjp(lambda t: [t], L.ones(2), L.ones(2)),
    lambda L, F: F.vjp(lambda t: t * 2, L.ones(2), (L.ones(2), L.ones(2))),
    lambda L, F: F.vjp(lambda t: t * 2, L.ones(2), L.ones(3)),
    lambda L, F: F.vjp(lambda a, b: (a * 2, b * 2), (L.ones(2), L.ones(2)),
                       (L.ones(2), L.ones(3))),
    lambda L, F: F.vjp(lambda t: t * 2, L.ones(2)),
    lambda L, F: F.jvp(lambda t: t * 2, L.ones(2)),
    lambda L, F: F.hessian(lambda t: t * 2, L.ones(2)),
    lambda L, F: F.hessian(lambda t: (t.sum(), t.sum()), L.ones(2)),
    lambda L, F: F.hvp(lambda t: t * 2, L.ones(2), L.ones(2)),
    lambda L, F: F.jacobian(lambda t: t * 2, L.ones(2), strategy="sideways"),
    lambda L, F: F.jacobian(lambda t: t * 2, L.ones(2), strict=True, vectorize=True),
])
def test_argument_errors_as_torch(torch, call):
    import torch.autograd.functional  # noqa: F401
    outcomes = []
    for L in (sk, torch):
        try:
            call(L, L.autograd.functional)
            outcomes.append(None)
        except Exception as e:  # noqa: BLE001 - compared below
            outcomes.append((type(e).__name__,
                             normalize_message(str(e)).replace("subclass_kit.", "torch.")))
    assert outcomes[0] is not None and outcomes[0] == outcomes[1]


def test_vectorize_gives_torchs_vmapped_jacobian(torch):
    """``vectorize=True`` runs the same passes here; torch batches them with vmap: the same
    Jacobians (to rounding), shapes and ``requires_grad``, with and without create_graph."""
    import torch.autograd.functional  # noqa: F401
    for create_graph in (False, True):
        def run(L):
            x = L.tensor(A, dtype=L.float64)
            f = lambda t: (t.exp() @ t.t(), t.sum(0))   # noqa: E731
            out = L.autograd.functional.jacobian(f, x, vectorize=True,
                                                 create_graph=create_graph)
            return [(tuple(j.shape), j.requires_grad, np.asarray(j.detach().tolist()))
                    for j in out]
        for (s_shape, s_rg, s_val), (t_shape, t_rg, t_val) in zip(run(sk), run(torch)):
            assert (s_shape, s_rg) == (t_shape, t_rg)
            np.testing.assert_allclose(s_val, t_val, rtol=1e-13, atol=1e-13)


def test_forward_mode_strategy_is_not_implemented():
    with pytest.raises(NotImplementedError, match="forward-mode AD"):
        sk.autograd.functional.jacobian(lambda t: t * 2, sk.ones(2), strategy="forward-mode")


def test_hessian_on_meta_gives_shapes_without_data():
    x = sk.empty(4, 3, device="meta")
    h = sk.autograd.functional.hessian(lambda t: (t.tanh() ** 2).sum(), x)
    assert (h.device.type, tuple(h.shape), h.dtype) == ("meta", (4, 3, 4, 3), sk.float32)
