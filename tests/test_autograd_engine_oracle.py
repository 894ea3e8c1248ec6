"""The autograd engine against torch 2.13: the same program on both libraries, compared
observation by observation (leaf gradients, grad_fn names, is_leaf, requires_grad, _version,
error class and message), for the core formulas, views + in-place (SEMANTICS.md §2.3, §3), the
engine's options and errors, and the paper's programs."""

import re

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

from oracle import autograd_obs  # noqa: E402


def _norm(msg: str) -> str:
    msg = msg.replace("torch.", "sk.")
    return re.sub(r" object at 0x[0-9a-f]+", "", msg)


def obs(t):
    return autograd_obs(t)


def run(L, program):
    try:
        return ("ok", program(L))
    except RuntimeError as e:
        return ("RuntimeError", _norm(str(e)))


def same(program):
    ours, theirs = run(sk, program), run(torch, program)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"
    return ours


def leaf(L, data, dtype=None):
    return L.tensor(data, dtype=dtype or L.float64, requires_grad=True)


A = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]]
B = [[2.0, 1.0, -1.0], [3.0, 0.25, 2.0]]


def names(fn):
    """The node names reachable from ``fn`` (next_functions, depth first, each once)."""
    out, stack, seen = [], [fn], set()
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        out.append(f.name())
        stack.extend(n for n, _ in reversed(f.next_functions))
    return out


CORE = {
    "add_alpha": lambda L, a, b: L.add(a, b, alpha=2.5),
    "add_scalar": lambda L, a, b: a + 2,
    "sub_bcast": lambda L, a, b: a - b[0],
    "mul": lambda L, a, b: a * b,
    "mul_bcast": lambda L, a, b: a * b[:, :1],
    "div": lambda L, a, b: a / b,
    "neg": lambda L, a, b: -a,
    "sum": lambda L, a, b: (a * b).sum(),
    "sum_dim": lambda L, a, b: a.sum(1) * b.sum(0, keepdim=True).sum(),
    "mean": lambda L, a, b: a.mean() + b.mean(0).sum(),
    "mm": lambda L, a, b: a @ b.t(),
    "addmm": lambda L, a, b: L.addmm(a[:, :2], a, b.t(), beta=0.5, alpha=2.0),
    "tanh_exp": lambda L, a, b: (a.tanh() * b.exp()),
    "float32": lambda L, a, b: a.to(L.float32) * b.to(L.float32),
    "views": lambda L, a, b: (a.t().reshape(6).view(3, 2).transpose(0, 1).unsqueeze(0)
                              .expand(2, 2, 3)[1, 0, 1:] * b[0, :2]),
    "permute_squeeze": lambda L, a, b: a.unsqueeze(2).permute(2, 1, 0).squeeze(0) * b.t(),
    "split_unbind": lambda L, a, b: a.split(1, 1)[0].sum() + a.unbind(0)[1].sum() * 2,
    "diagonal_narrow": lambda L, a, b: a.diagonal().sum() + a.narrow(1, 1, 2).sum() * 2,
    "unfold": lambda L, a, b: (a.unfold(1, 2, 1) * 3).sum(),
    "as_strided": lambda L, a, b: a.as_strided((2, 2), (1, 2), 1).sum(),
    "clone_copy": lambda L, a, b: a.clone() * 1 + L.zeros(2, 3, dtype=L.float64).copy_(b),
}


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_formulas_gradients_and_node_names(name):
    def program(L):
        a, b = leaf(L, A), leaf(L, B)
        out = CORE[name](L, a, b)
        out.backward(L.ones_like(out) * 0.5 if out.dim() else None)
        return obs(out), names(out.grad_fn), obs(a.grad), obs(b.grad)
    same(program)


def test_paper_copyslices_and_lazy_regeneration():
    def program(L):
        a = leaf(L, A)
        b = a * 1
        v = b[0]
        v.mul_(2)
        r = [names(b.grad_fn), v.grad_fn.name(), v._version, b._version,
             v.is_leaf, names(v.grad_fn)]
        b.sum().backward()
        r.append(obs(a.grad))
        a.grad = None
        b = a * 1
        v = b[0]
        r.append(v.grad_fn.name())
        b.mul_(3)
        r.append(v.grad_fn.name())
        r.append(v.grad_fn is v.grad_fn)
        v.sum().backward()
        r.append(obs(a.grad))
        return r
    same(program)


def test_plain_base_gets_history_through_a_view():
    def program(L):
        a = leaf(L, [1.0, 2.0, 3.0])
        x = L.zeros(3, dtype=L.float64)
        old = x[1:]
        x[0] = a[2] * 2
        r = [obs(x), names(x.grad_fn), obs(old)]
        (x * L.tensor([1.0, 10.0, 100.0], dtype=L.float64)).sum().backward()
        return r + [obs(a.grad)]
    same(program)


def test_paper_program_many_select_views():
    def program(L):
        a = leaf(L, [[float(i)] * 3 for i in range(6)])
        b = a.clone()
        views = [b[i] for i in range(6)]
        for i, v in enumerate(views):
            v.mul_(i + 1)
        b.sum().backward()
        return obs(a.grad), [v.grad_fn.name() for v in views]
    same(program)


@pytest.mark.parametrize("case", ["saved_input", "saved_output", "leaf", "detach_shares"])
def test_saved_tensor_version_errors(case):
    def program(L):
        a = leaf(L, [1.0, 2.0, 3.0])
        if case == "saved_input":
            b = a * 2
            c = b * b
            b.add_(1)
        elif case == "saved_output":
            b = a * 1
            c = b.exp()
            c.mul_(2)
        elif case == "leaf":
            x = L.tensor([1.0, 2.0, 3.0], dtype=L.float64)
            c = a * x
            x.add_(1)
        else:
            b = a * 2
            c = b * b
            b.detach().add_(1)
        c.sum().backward()
        return obs(a.grad)
    assert same(program)[0] == "RuntimeError"


INPLACE_ERRORS = {
    "leaf": lambda L, a: a.add_(1),
    "view_of_leaf": lambda L, a: a[0].add_(1),
    "setitem_leaf": lambda L, a: a.__setitem__(0, 1.0),
    "multi_output": lambda L, a: (a * 1).unbind(0)[0].mul_(2),
    "split_slice": lambda L, a: (a * 1).split(1)[0][0:1].mul_(2),
    "out_arg": lambda L, a: L.add(a, 1, out=L.empty(3, dtype=L.float64)),
}


@pytest.mark.parametrize("name", sorted(INPLACE_ERRORS))
def test_inplace_admission_errors_leave_state(name):
    def program(L):
        a = leaf(L, [1.0, 2.0, 3.0])
        try:
            INPLACE_ERRORS[name](L, a)
        except RuntimeError as e:
            return _norm(str(e)), a._version, a.tolist() if False else a.detach().tolist()
        return "no error"
    same(program)


def test_no_grad_and_inference_views():
    def program(L):
        r = []
        a = leaf(L, [1.0, 2.0, 3.0])
        b = a * 1
        with L.no_grad():
            v = b[0:2]
        r.append([v.requires_grad, v.is_leaf, v.grad_fn])
        try:
            v.add_(1)
        except RuntimeError as e:
            r.append(_norm(str(e)))
        with L.no_grad():
            v.add_(1)
        try:
            v.grad_fn
        except RuntimeError as e:
            r.append(_norm(str(e)))
        with L.inference_mode():
            w = b[1:]
        try:
            w.mul_(2)
        except RuntimeError as e:
            r.append(_norm(str(e)))
        return r
    same(program)


def test_engine_errors():
    def program(L):
        r = []
        x = L.tensor([1.0, 2.0])
        for f in (lambda: x.sum().backward(),
                  lambda: (leaf(L, [1.0, 2.0]) * 2).backward()):
            try:
                f()
            except RuntimeError as e:
                r.append(_norm(str(e)))
        a = leaf(L, [1.0, 2.0])
        y = (a * a).sum()
        y.backward()
        try:
            y.backward()
        except RuntimeError as e:
            r.append(_norm(str(e)))
        y = (a * a).sum()
        y.backward(retain_graph=True)
        y.backward()
        r.append(obs(a.grad))
        b = leaf(L, [3.0])
        for kw in ({}, {"allow_unused": True}):
            try:
                r.append(obs(L.autograd.grad((a * 2).sum(), [a, b], **kw)))
            except RuntimeError as e:
                r.append(_norm(str(e)))
        try:
            L.autograd.grad((a * 2).sum(), [L.tensor([1.0])])
        except RuntimeError as e:
            r.append(_norm(str(e)))
        return r
    same(program)


def test_grad_accumulation_and_inputs():
    def program(L):
        a, b = leaf(L, A), leaf(L, B)
        for _ in range(2):
            (a * b).sum().backward()
        r = [obs(a.grad), obs(b.grad)]
        a.grad = b.grad = None
        c = a * 2
        (c * b).sum().backward(inputs=[b, c])
        r += [obs(a.grad), obs(b.grad), obs(c.grad)]
        return r
    same(program)


def test_double_backward_and_hvp():
    def program(L):
        x = leaf(L, [1.0, -2.0, 0.5])
        y = (x * x * x).sum() + (x.tanh() * x.exp()).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        v = L.tensor([1.0, 0.5, -1.0], dtype=L.float64)
        (hv,) = L.autograd.grad((g * v).sum(), x, create_graph=True)
        (g3,) = L.autograd.grad(hv.sum(), x)
        return obs(g)["values"], obs(hv)["values"], obs(g3)
    same(program)


def test_hooks_retain_grad_and_saved_tensor_hooks():
    def program(L):
        seen = []
        a = leaf(L, [1.0, 2.0])
        b = a * 3
        b.retain_grad()
        h = b.register_hook(lambda g: g * 10)
        a.register_hook(lambda g: seen.append(("leaf", g.tolist())))
        a.register_post_accumulate_grad_hook(lambda t: seen.append(("post", t.grad.tolist())))
        packed = []

        def pack(t):
            packed.append(tuple(t.shape))
            return t

        with L.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            c = (b * b).sum()
        c.backward()
        h.remove()
        try:
            L.tensor([1.0]).register_hook(lambda g: g)
        except RuntimeError as e:
            seen.append(_norm(str(e)))
        return seen, obs(b.grad), obs(a.grad), packed, b.retains_grad
    same(program)


@pytest.mark.parametrize("hooked", [0, 2, 4])
def test_leaf_hooks_see_other_leaves_grads_in_pytorchs_order(hooked):
    """Five leaves made ready by one node (``stack``) accumulate in PyTorch's queue order; a
    hook on one of them sees which of the others already have their ``.grad`` (unhooked
    leaves run without the queue only when no leaf of the node has a hook)."""
    def program(L):
        leaves = [leaf(L, [float(i), 1.0]) for i in range(5)]
        seen = []

        def hook(t):
            seen.append([p.grad is not None for p in leaves])
        leaves[hooked].register_post_accumulate_grad_hook(hook)
        mid = leaf(L, [1.0, 2.0])
        (L.stack(leaves).sum() + (mid * 2).sum()).backward()
        return seen, [obs(p.grad) for p in leaves], obs(mid.grad)
    same(program)


@pytest.mark.parametrize("shapes", [((1, 2, 3), (2, 3, 4)), ((2, 2, 3), (1, 3, 4))])
def test_matmul_squeezes_a_batch_of_one_that_requires_grad(shapes):
    """3-D @ 3-D with a batch of one against another batch: PyTorch squeezes the operand that
    requires grad and folds (so its gradient is no broadcast bmm's); the graph's node names
    and the gradients are PyTorch's."""
    def program(L):
        a = L.tensor(np.arange(6.0).reshape(shapes[0][1:]) / 7).expand(shapes[0]).contiguous()
        b = L.tensor(np.arange(24.0).reshape(2, 3, 4)[:shapes[1][0]] / 5)
        a.requires_grad_(shapes[0][0] == 1)
        b.requires_grad_(shapes[1][0] == 1)
        out = L.matmul(a, b)
        names, stack = [], [out.grad_fn]
        while stack:
            node = stack.pop()
            if node is not None:
                names.append(type(node).__name__)
                stack.extend(n for n, _ in node.next_functions)
        out.sum().backward()
        return names, obs(out), obs(a.grad), obs(b.grad)
    same(program)


def test_long_chain_no_recursion():
    x = sk.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0]


def test_inference_tensors_meet_autograd():
    def program(L):
        r = []
        with L.inference_mode():
            it = L.ones(3, dtype=L.float64)
        a = leaf(L, [1.0, 2.0, 3.0])
        try:
            it * a
        except RuntimeError as e:
            r.append(_norm(str(e)))
        (it + a).sum().backward()
        r.append(obs(a.grad))
        try:
            it.requires_grad_()
        except RuntimeError as e:
            r.append(_norm(str(e)))
        return r
    same(program)


def test_layer_installed_only_on_first_use():
    import subprocess
    import sys
    code = ("import sys, subclass_kit as sk\n"
            "from subclass_kit._state import flags\n"
            "x = sk.ones(3) * 2 + 1\n"
            "assert flags.autograd is None and 'subclass_kit.modes.autograd' not in sys.modules\n"
            "x.requires_grad_()\n"
            "assert flags.autograd is not None\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=__file__.rsplit("/tests/", 1)[0])


def test_inplace_view_ops_on_views_and_tensors():
    def program(L):
        a = leaf(L, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
        b = a * 1
        v = b[0:2]
        v.t_()
        r = [v.grad_fn.name(), b.grad_fn.name(), v._version, tuple(v.shape)]
        w = L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=L.float64)
        (v * w).sum().backward()
        x = a * 2
        x.transpose_(0, 1)
        r += [x.grad_fn.name(), names(x.grad_fn)]
        return r + [obs(a.grad)]
    same(program)
