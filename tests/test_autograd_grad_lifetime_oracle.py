"""When the backward engine frees gradients, against torch 2.13: a dispatch mode logs every op
with the bytes of the op outputs' storages still alive (each storage watched with
``weakref.finalize``, as memory-tracking modes do), and the two logs must agree line for line.
A gradient dies once consumed (its node ran, it was summed into a buffer or accumulated into
``.grad``, a hook replaced it), not when the engine's loop happens to drop a variable."""

from __future__ import annotations

import weakref

import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def _logging_mode(L, log):
    """A mode class of library ``L`` that appends (op name, live bytes) after every op."""
    live: dict = {}

    def handle(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for t in outs:
            if isinstance(t, L.Tensor):
                st = t.untyped_storage()
                if id(st) not in live:
                    live[id(st)] = st.nbytes()
                    weakref.finalize(st, live.pop, id(st))
        log.append((func.__name__, sum(live.values())))
        return out

    if L is torch:
        return type("Log", (TorchDispatchMode,), {"__torch_dispatch__": handle})
    return type("Log", (sk.DispatchMode,), {"__tensor_dispatch__": handle})


def _trace(L, program):
    """The log of ``program(L, traced, mark)``, which runs what is compared under ``traced``
    (the logging mode) and marks points of interest (a backward returned) with ``mark``."""
    log: list = []
    L.manual_seed(0)
    program(L, _logging_mode(L, log)(), lambda what: log.append((what, None)))
    return log


def chain(L, traced, mark):
    with traced:
        x = L.randn(4, requires_grad=True)
        loss = x.exp().tanh().sin().sum()
        loss.backward()
        mark("backward returned")
        del loss
        mark("loss deleted")


def branches(L, traced, mark):
    with traced:
        x = L.randn(5, requires_grad=True)
        y = x.exp()
        (y * y + y.sin() + y.cos() * y).sum().backward()
        mark("backward returned")


def accumulate(L, traced, mark):
    with traced:
        w1 = L.ones(3, 3, requires_grad=True)
        w2 = L.ones(3, 3, requires_grad=True)
        x = L.ones(2, 3)
        for _ in range(3):          # the second and third accumulate into .grad with add_
            (x @ w1).tanh().mm(w2).sum().backward()
            mark("backward returned")


def tensor_hooks(L, traced, mark):
    with traced:
        x = L.randn(4, 3, requires_grad=True)
        w = L.randn(3, 5, requires_grad=True)
        h = (x @ w).tanh()
        h.register_hook(lambda g: g * 2)            # replaces the gradient
        h.register_hook(lambda g: None)             # keeps it
        x.register_hook(lambda g: g.sin())          # a leaf's hook
        (h * h).sum().backward()
        mark("backward returned")


def retained(L, traced, mark):
    with traced:
        x = L.randn(6, requires_grad=True)
        y = x.sigmoid()
        h = y.exp()
        h.retain_grad()
        loss = (h * y).sum()
        loss.backward(retain_graph=True)
        mark("first backward")
        loss.backward()
        mark("second backward")


def grad_of_inputs(L, traced, mark):
    with traced:
        x = L.randn(4, requires_grad=True)
        w = L.randn(4, requires_grad=True)
        y = (x * w).exp()
        # (both inputs: with ``x`` alone torch skips ``w``'s mul, whose gradient no input needs
        # (task_should_compute_output); sk's formulas still compute it)
        gx, gw = L.autograd.grad((y * y.sin()).sum(), (x, w))
        mark("grad returned")
        del gx
        mark("one result deleted")


def node_hooks(L, traced, mark):
    with traced:
        x = L.randn(3, 4, requires_grad=True)
        y = x.cos()
        z = y * 3
        z.grad_fn.register_prehook(lambda gout: (gout[0] + 1,))
        z.grad_fn.register_hook(lambda gin, gout: None)
        z.sum().backward()
        mark("backward returned")


def mlp_hooked(L, traced, mark):
    model = L.nn.Sequential(L.nn.Linear(3, 5), L.nn.Tanh(), L.nn.Linear(5, 2))
    model[1].register_forward_hook(lambda m, i, o: o.register_hook(lambda g: None) and None)
    with traced:
        model(L.randn(4, 3)).sum().backward()
        mark("backward returned")


PROGRAMS = [chain, branches, accumulate, tensor_hooks, retained, grad_of_inputs, node_hooks,
            mlp_hooked]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_gradients_are_freed_when_torchs_are(program):
    ours, theirs = _trace(sk, program), _trace(torch, program)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"line {k}: sk {a} torch {b}\nsk:    {ours}\ntorch: {theirs}"
    assert len(ours) == len(theirs), f"\nsk:    {ours}\ntorch: {theirs}"
