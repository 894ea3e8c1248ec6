"""Autograd corner cases against torch 2.13, found by porting programs that exercise custom
Functions (views they return, ``mark_dirty``), ``retain_grad`` across in-place ops, ``.data``
assignment and ``gradcheck``: the same program on both libraries, compared observation by
observation (values, grad_fn names, versions, error class and message)."""

import re

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")


def _norm(msg: str) -> str:
    return re.sub(r" object at 0x[0-9a-f]+", "", msg.replace("torch.", "sk."))


def obs(t):
    """What we compare about a tensor (or a nest of them)."""
    if isinstance(t, (list, tuple)):
        return [obs(x) for x in t]
    if not hasattr(t, "grad_fn"):
        return t
    fn = t.grad_fn
    return {"values": np.round(np.asarray(t.detach().tolist(), dtype=float), 6).tolist(),
            "grad_fn": None if fn is None else fn.name().replace("torch::autograd::", ""),
            "requires_grad": t.requires_grad, "is_leaf": t.is_leaf, "version": t._version}


def run(L, program):
    try:
        return ("ok", program(L))
    except RuntimeError as e:
        return ("RuntimeError", _norm(str(e)))


def same(program):
    ours, theirs = run(sk, program), run(torch, program)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"
    return ours


def attempt(fn):
    """``fn()``'s error message (normalized), or "ok"."""
    try:
        fn()
    except RuntimeError as e:
        return _norm(str(e))
    return "ok"


# ---- views returned by a custom Function --------------------------------------------------

def _returning(L, kind):
    """A custom Function of ``(a, b)`` returning what ``kind`` says (views of ``a``, inputs
    as-is, non-differentiable outputs)."""

    class Fn(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            v = a.narrow(0, 0, 2)
            if kind == "view":
                return v
            if kind == "input":
                return a
            if kind == "view+diff":
                return v, a + b
            if kind == "input+view":
                return a, v
            if kind == "view+int":
                return v, (a > 0).long()
            if kind == "view+nondiff":
                o = a + b
                ctx.mark_non_differentiable(o)
                return v, o
            if kind == "nondiff view+diff":
                ctx.mark_non_differentiable(v)
                return v, a + b
            raise AssertionError(kind)

        @staticmethod
        def backward(ctx, *grads):
            return grads[0], None

    return Fn


KINDS = ["view", "input", "view+diff", "input+view", "view+int", "view+nondiff",
         "nondiff view+diff"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("grad_mode", [True, False])
def test_custom_function_outputs_in_place(kind, requires_grad, grad_mode):
    """Every view a custom Function returns is marked as made in a custom Function (recorded
    or not, differentiable or not), an input returned as-is comes back as a view, and with
    more than one differentiable output the views are outputs of a multi-output node: the
    in-place admission error names that."""
    def program(L):
        a = L.tensor([1.0, -2.0, 3.0], requires_grad=requires_grad).clone()
        b = L.tensor([0.5, 0.5, 0.5])
        with L.set_grad_enabled(grad_mode):
            out = _returning(L, kind).apply(a, b)
        outs = out if isinstance(out, tuple) else (out,)
        res = []
        for o in outs:
            res.append((o._is_view(), o is a, o.requires_grad))
            res.append(attempt(lambda: o.add_(1)))
        return res
    same(program)


def test_custom_function_materializes_every_output_gradient():
    """Outputs that got no gradient reach ``backward`` as zeros of their own shape and dtype,
    non-differentiable ones (``mark_non_differentiable``, integer) included."""
    def program(L):
        seen = []

        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                y = a * 3
                ctx.mark_non_differentiable(y)
                return a * 2, y, (a > 0).long()

            @staticmethod
            def backward(ctx, gx, gy, gz):
                seen.append([(obs(g)["values"], str(g.dtype).split(".")[-1])
                             for g in (gx, gy, gz)])
                return gx

        a = L.tensor([1.0, -2.0], requires_grad=True)
        x, y, z = Fn.apply(a)
        x.sum().backward()
        return obs([x, y, z, a.grad]), seen
    same(program)
