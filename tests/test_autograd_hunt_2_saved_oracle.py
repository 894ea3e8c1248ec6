"""Saved tensors against torch 2.13: as PyTorch shows them (``grad_fn._saved_<name>`` with
lists as tuples and ``<input>_sym_sizes``; ``grad_fn._raw_saved_<name>`` /
``ctx._raw_saved_tensors``, the SavedTensor objects with ``data``, ``unpack_hook``,
``register_hooks``), through ``saved_tensors_hooks`` / ``disable_saved_tensors_hooks``, detached
in place; and the node of ``div`` with an explicit ``rounding_mode=None``, ``repr``'s grad_fn."""

import pytest
from test_autograd_hunt_2_oracle import attempt, obs, same

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")


def test_saved_values_as_tuples_and_sizes():
    def program(L):
        a = L.ones(2, 2, requires_grad=True)
        idx = L.tensor([0, 1])
        out = a[:, idx]
        m = a.mean()
        return (obs(list(out.grad_fn._saved_indices)), out.grad_fn._saved_self_sym_sizes,
                m.grad_fn._saved_self_sym_sizes, type(out.grad_fn._saved_indices).__name__)
    same(program)


def test_raw_saved_tensor_hooks():
    """``register_hooks`` packs the saved tensor now and unpacks it with the new hook; a
    second pair, a freed graph, a saved None refuse; ``data`` is the packed object."""
    def program(L):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        y = a * a
        sv = y.grad_fn._raw_saved_self
        res = [sv.data is a, sv.unpack_hook is None]
        sv.register_hooks(lambda x: x * 2, lambda x: x)
        res += [obs(sv.data), obs(y.grad_fn._saved_self)]
        res.append(attempt(lambda: sv.register_hooks(lambda x: x, lambda x: x)))
        y.sum().backward()
        res.append(a.grad.tolist())     # (its version: docs/differences.md, input buffers)
        res.append(attempt(lambda: y.grad_fn._raw_saved_self.register_hooks(lambda x: x,
                                                                            lambda x: x)))
        res.append(attempt(lambda: y.grad_fn._saved_self))
        b = L.tensor([1.0, 2.0], requires_grad=True)
        z = b.exp()
        z.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
        res.append(z.grad_fn._saved_result.grad_fn is z.grad_fn)
        w = b.exp()

        def inc(x):
            x.add_(1)
            return x
        res.append(attempt(lambda: w.grad_fn._raw_saved_result.register_hooks(inc,
                                                                              lambda x: x)))
        return res
    same(program)


def test_custom_function_raw_saved_tensors():
    def program(L):
        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None)
                return x * 1

            @staticmethod
            def backward(ctx, g):
                return g

        a = L.tensor([1.0, 2.0], requires_grad=True)
        y = Fn.apply(a)
        raw = y.grad_fn._raw_saved_tensors
        res = [len(raw), raw[0].data is a,
               attempt(lambda: raw[1].register_hooks(lambda x: x, lambda x: x))]
        raw[0].register_hooks(lambda x: x, lambda x: x)
        y.sum().backward()
        res.append(attempt(lambda: y.grad_fn._raw_saved_tensors))
        res.append(attempt(lambda: y.grad_fn.saved_tensors))
        return res
    same(program)


@pytest.mark.parametrize("mode", ["unset", None, "trunc", "floor"])
@pytest.mark.parametrize("other", ["tensor", "number"])
def test_div_rounding_mode_node(mode, other):
    """``rounding_mode=None`` given explicitly picks ``div.Tensor_mode`` (DivBackward2, its
    ``_saved_rounding_mode``), as PyTorch's argument parser does."""
    def program(L):
        a = L.tensor([1.0, 3.0], requires_grad=True)
        b = L.tensor([2.0, -2.0], requires_grad=True) if other == "tensor" else 2.0
        y = L.div(a, b) if mode == "unset" else L.div(a, b, rounding_mode=mode)
        rm = getattr(y.grad_fn, "_saved_rounding_mode", "absent")
        y.sum().backward()
        return obs(y), rm, obs(a.grad)
    same(program)


def test_div_in_place_rounding_mode_none():
    def program(L):
        a = L.tensor([1.0, 3.0], requires_grad=True).clone()
        a.div_(2.0, rounding_mode=None)
        return obs(a)
    same(program)


def test_repr_reads_the_current_grad_fn():
    """``repr`` names the node ``grad_fn`` gives: a stale view's regenerated node, and
    ``<Invalid>`` where reading it raises (a no_grad view modified in place under no_grad)."""
    def program(L):
        a = L.ones(2, requires_grad=True)
        with L.no_grad():
            b = a[:]
            b *= 2
        c = a.clone()
        v = c[:1]
        c.mul_(2)
        return repr(b), repr(v), repr(c)
    same(program)


@pytest.mark.parametrize("saved", ["input", "output"])
def test_saved_tensor_detached_in_place(saved):
    """A saved input (a non-leaf) detached in place cannot be used by the backward; a saved
    output can (the node knows itself)."""
    def program(L):
        a = L.tensor([1.0, 2.0], requires_grad=True).clone()
        b = a.sin() if saved == "input" else a.exp()
        a.detach_()
        msg = attempt(lambda: b.sum().backward())
        return msg, obs(a)
    same(program)


def test_disable_saved_tensors_hooks():
    """Entering ``saved_tensors_hooks`` under ``disable_saved_tensors_hooks`` raises its
    message (the innermost one), as does disabling while hooks are active; leaving restores."""
    def program(L):
        G = L.autograd.graph
        hooks = lambda: G.saved_tensors_hooks(lambda x: x, lambda x: x)   # noqa: E731
        res = []

        def enter(cm):
            with cm:
                pass
        with G.disable_saved_tensors_hooks("outer"):
            res.append(attempt(lambda: enter(hooks())))
            with G.disable_saved_tensors_hooks("inner"):
                res.append(attempt(lambda: enter(hooks())))
            res.append(attempt(lambda: enter(hooks())))
        res.append(attempt(lambda: enter(hooks())))
        with hooks():
            res.append(attempt(lambda: enter(G.disable_saved_tensors_hooks("active"))))
            a = L.tensor([1.0, 2.0], requires_grad=True)
            y = a * a
        y.sum().backward()
        return res, a.grad.tolist()
    same(program)


# ---- saved_tensors_hooks -----------------------------------------------------------------

def test_saved_tensors_hooks_pack_and_unpack_identity():
    """The pack hook runs with grad mode off on the tensor itself (an output: an alias with its
    node), once per tensor the formula needs (``x ** 3`` saves ``x`` only); the unpacked tensor
    takes the saved tensor's place in the graph (a leaf's accumulator, a non-leaf's node, an
    output's node) whatever the hook returned, and is not version-checked."""
    def program(L):
        G = L.autograd.graph
        a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        seen = []

        def pack(x):
            seen.append((x is a, x.requires_grad, L.is_grad_enabled(), x.grad_fn is not None))
            return x * 2
        with G.saved_tensors_hooks(pack, lambda x: x):
            y = a ** 3
            b = a * 1
            z = b.tanh()
        u = y.grad_fn._saved_self
        u2 = z.grad_fn._saved_result
        res = [seen, u is a, obs(u), u2.grad_fn is z.grad_fn]
        c = a * 1
        with G.saved_tensors_hooks(lambda x: x, lambda x: x):
            d = c.sin()
        with L.no_grad():
            c.mul_(2)              # no version check through hooks
        d.sum().backward()
        res.append(obs(a.grad))
        a2 = L.tensor([1.0, 2.0], requires_grad=True)
        with G.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
            s = (a2 ** 3).sum()
        (g,) = L.autograd.grad(s, (a2,), create_graph=True)
        g.sum().backward()
        res.append(a2.grad.tolist())
        b3 = a2 * 3
        with G.saved_tensors_hooks(lambda x: x + 0, lambda x: x):
            y3 = b3 * b3
        res.append([y3.grad_fn._saved_self.grad_fn is b3.grad_fn])
        return res
    same(program)


def test_saved_tensors_hooks_errors():
    """A pack hook may not modify its input in place; an unpack hook must return a tensor."""
    def program(L):
        G = L.autograd.graph
        a = L.tensor([1.0, 2.0], requires_grad=True)

        def inc(x):
            x += 1
            return x
        with G.saved_tensors_hooks(inc, lambda x: x):
            first = attempt(lambda: L.sin(a * 1))
        with G.saved_tensors_hooks(lambda x: x, lambda x: 1):
            y = a * a
        try:
            y.grad_fn._saved_self
            second = "ok"
        except TypeError as e:
            second = str(e)
        return first, second
    same(program)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_save_on_cpu(dtype):
    """``save_on_cpu`` keeps CPU copies (same dtype and values) and gives the same gradients,
    also around a checkpointed part."""
    def program(L):
        d = getattr(L, dtype)
        a = L.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=d, requires_grad=True)
        with L.autograd.graph.save_on_cpu(pin_memory=True):
            y = a * a
            saved = y.grad_fn._saved_self
            h = L.utils.checkpoint.checkpoint(lambda t: t.pow(2).pow(2), a.pow(2),
                                              use_reentrant=False)
        (y.sum() + h.sum()).backward()
        return str(saved.dtype).split(".")[-1], saved.tolist(), a.grad.tolist()
    same(program)
