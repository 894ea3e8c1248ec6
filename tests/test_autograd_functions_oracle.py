"""Custom ``Function``s, ``register_autograd`` custom ops, ``gradcheck``, a small MLP trained
with SGD, hypothesis chains of views and in-place ops, and autograd under modes, on meta tensors
and with subclasses -- against torch 2.13 where torch has the same program."""

import numpy as np
import pytest

import subclass_kit as sk
from test_autograd_engine_oracle import _norm, leaf, obs, same

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import SkFunctionLog, torch_function_log  # noqa: E402


def _functions(L):
    class Square(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x * x * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * ctx.k, None

    class Split(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2, (x > 0).to(L.int64)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[1])
            ctx.set_materialize_grads(True)

        @staticmethod
        def backward(ctx, g, gi):
            return g * 2

    class Alias(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g

    return Square, Split, Alias


def test_custom_function_forward_backward_and_ctx():
    def program(L):
        Square, Split, Alias = _functions(L)
        x = leaf(L, [1.0, -2.0, 3.0])
        y = Square.apply(x, 3.0)
        a, idx = Split.apply(x)
        r = [type(y.grad_fn).__name__, obs(y), idx.requires_grad, obs(a)["grad_fn"]]
        (y.sum() + a.sum()).backward()
        r.append(obs(x.grad))
        v = Alias.apply(x * 1)
        try:
            v.mul_(2)
        except RuntimeError as e:
            r.append(_norm(str(e)))
        x2 = leaf(L, [1.0])
        z = Square.apply(x2, 1.0)
        with L.no_grad():
            x2.mul_(2)
        try:
            z.backward()
        except RuntimeError as e:
            r.append(_norm(str(e)).split(" is at version")[1])
        return r
    same(program)


def test_register_autograd_custom_op():
    lib = "agtest"
    sk.library.define(f"{lib}::cube(Tensor x) -> Tensor")

    @sk.library.impl(f"{lib}::cube", "cpu")
    def _cube(x):
        return x * x * x

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x

    sk.library.register_autograd(f"{lib}::cube", backward, setup_context=setup)
    x = sk.tensor([1.0, 2.0], dtype=sk.float64, requires_grad=True)
    y = sk.ops.agtest.cube(x)
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]


def test_gradcheck_and_gradgradcheck():
    x = sk.tensor([[0.3, -1.2], [2.0, 0.5]], dtype=sk.float64, requires_grad=True)
    w = sk.tensor([[1.5, -0.5], [0.25, 2.0]], dtype=sk.float64, requires_grad=True)
    assert sk.autograd.gradcheck(lambda a, b: (a @ b).tanh() * a.exp(), (x, w))
    assert sk.autograd.gradgradcheck(lambda a, b: (a @ b).tanh().sum(1), (x, w))
    Square, _, _ = _functions(sk)

    class Wrong(sk.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, g):
            return g        # should be 2 * a * g

    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                           "input 0"):
        sk.autograd.gradcheck(Wrong.apply, (x,))
    assert sk.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert sk.autograd.gradcheck(lambda a: Square.apply(a, 2.0), (x,))


def test_small_mlp_sgd_matches_torch():
    rng = np.random.default_rng(0)
    shapes = [(4, 8), (8,), (8, 3), (3,)]
    init = [rng.standard_normal(s) * 0.5 for s in shapes]
    data = rng.standard_normal((5, 4))
    target = rng.standard_normal((5, 3))

    def train(L):
        params = [L.tensor(p, dtype=L.float64, requires_grad=True) for p in init]
        x, t = L.tensor(data, dtype=L.float64), L.tensor(target, dtype=L.float64)
        losses = []
        for _ in range(4):
            w1, b1, w2, b2 = params
            h = L.addmm(b1, x, w1).tanh()
            out = L.addmm(b2, h, w2)
            loss = ((out - t) * (out - t)).mean()
            loss.backward()
            losses.append(loss.item())
            with L.no_grad():
                for p in params:
                    p.sub_(p.grad * 0.1)
                    p.grad = None
        return losses, [p.detach().tolist() for p in params]

    ours, theirs = train(sk), train(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# -- hypothesis: chains of views and in-place ops on non-leaves ---------------------------------
VIEWS = [
    lambda L, t: t[0],
    lambda L, t: t[:, 1:] if t.dim() > 1 else t[1:],
    lambda L, t: t.t() if t.dim() == 2 else t.unsqueeze(0),
    lambda L, t: t.view(-1),
    lambda L, t: t.transpose(0, -1),
    lambda L, t: t.narrow(-1, 0, 1),
]
INPLACE = [
    lambda L, t, a: t.mul_(2.0),
    lambda L, t, a: t.add_(a.sum()),
    lambda L, t, a: t.copy_(a.sum() * L.ones(t.shape, dtype=L.float64)),
    lambda L, t, a: t.zero_(),
    lambda L, t, a: t.mul_(t.detach() + 1),
    lambda L, t, a: t.div_(a[0, 0] + 3),
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["view", "inplace", "base"]), st.integers(0, 5)),
                min_size=1, max_size=6))
def test_chains_of_views_and_inplace_ops(steps):
    def program(L):
        a = leaf(L, [[1.0, 2.0, 3.0], [4.0, -5.0, 6.0], [0.5, 1.5, -2.5]])
        base = a * 1.5
        cur = base
        live = [base]
        for kind, i in steps:
            if kind == "view":
                if cur.dim() == 0 or cur.numel() < 2:
                    continue
                cur = VIEWS[i](L, cur)
                live.append(cur)
            elif kind == "inplace":
                INPLACE[i](L, cur, a)
            else:
                cur = live[i % len(live)]
        total = sum((t * (k + 1)).sum() for k, t in enumerate(live))
        total.backward()
        return obs(a.grad), [t.grad_fn.name() if t.grad_fn
                             else None for t in live]
    same(program)


# -- layering: modes see forward and backward ops; meta; subclasses ----------------------------
def test_modes_see_forward_and_backward_ops_as_torch():
    from torch.utils._python_dispatch import TorchDispatchMode

    from subclass_kit.modes import LoggingMode

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func).split(".")[1])
            return func(*args, **(kwargs or {}))

    def program(L, mode):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with mode:
            (x * x).sum().backward()
        return [o.split(".")[2] if o.startswith("sk.") else o for o in mode.ops], \
            x.grad.tolist()
    ours = program(sk, LoggingMode())
    theirs = program(torch, Log())
    # the one difference: x.sum() is sum.dim_IntList here (no sum.default overload)
    assert ours == theirs


@pytest.mark.parametrize("call", ["Tensor.backward", "autograd.backward", "autograd.grad",
                                  "hook"])
def test_function_modes_see_backward_not_its_ops_as_torch(call):
    """``backward`` / ``grad`` take part in the function level; the backward pass runs inside
    the mode's handler, so the mode sees none of its ops (nor a hook's), as in PyTorch."""
    def program(L, log):
        x = L.tensor([1.0, -2.0, 0.5], requires_grad=True)
        y = (x.tanh() * x).sum()
        if call == "hook":
            x.register_hook(lambda g: g * 2)
        g = None
        with log:
            if call in ("Tensor.backward", "hook"):
                y.backward()
            elif call == "autograd.backward":
                L.autograd.backward(y)
            else:
                (g,) = L.autograd.grad(y, x)
        return log.calls, (x.grad if g is None else g).tolist()

    ours, theirs = program(sk, SkFunctionLog()), program(torch, torch_function_log())
    assert ours[0] == theirs[0] and len(ours[0]) == 1
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def test_meta_backward_gives_shapes_and_dtypes():
    w = sk.empty(4, 3, device="meta", requires_grad=True)
    x = sk.empty(5, 4, device="meta")
    loss = (x @ w).tanh().sum()
    loss.backward()
    assert w.grad.is_meta and tuple(w.grad.shape) == (4, 3) and w.grad.dtype == sk.float32


def test_direct_subclass_requires_grad():
    class Param(sk.Tensor):
        pass

    p = sk.make_subclass(Param, sk.tensor([1.0, 2.0]), requires_grad=True)
    y = (p * 3).sum()
    y.backward()
    assert type(p.grad) in (sk.Tensor, Param) and p.grad.tolist() == [3.0, 3.0]


def test_wrapper_subclass_under_autograd_sees_backward_ops():
    from oracle import Wrapper

    seen = []

    class Logged(Wrapper):
        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return super().__tensor_dispatch__(func, types, args, kwargs)

        @staticmethod
        def wrap(elem):
            w = sk.make_wrapper_subclass(Logged, elem.shape, elem.stride(),
                                         elem.storage_offset(), dtype=elem.dtype,
                                         device=elem.device)
            w.elem = elem
            return w

    w = Logged.wrap(sk.tensor([1.0, 2.0, 3.0]))
    w.requires_grad_()
    y = (w * w).sum()
    assert type(y) is Logged and y.grad_fn.name() == "SumBackward0"
    n = len(seen)
    y.backward()
    assert "mul" in seen[n:] and type(w.grad) is Logged
    assert w.grad.elem.tolist() == [2.0, 4.0, 6.0]


def test_backward_under_meta_mode_sizes_gradients():
    from subclass_kit.modes import MetaMode

    w = sk.randn(4, 3, requires_grad=True)
    x = sk.randn(5, 4)
    with MetaMode():
        loss = (x @ w).tanh().sum()
        loss.backward()
    assert loss.is_meta and w.grad.is_meta
    assert tuple(w.grad.shape) == (4, 3) and w.grad.dtype == sk.float32


def test_every_floating_op_has_a_formula_or_a_mark():
    """The derivative table covers ``sk.ops``: every functional primitive has a formula or a
    non-differentiable mark (in-place overloads use their functional variant's; composites are
    differentiated through their decompositions; ``out=`` overloads refuse autograd)."""
    import subclass_kit.modes.autograd.derivatives  # noqa: F401  (registers the table)
    from subclass_kit.modes.autograd import formulas as F
    covered = F.FORMULAS.keys() | F.NON_DIFFERENTIABLE.keys()
    missing = []
    for op in sk.ops:
        key = f"{op.name}.{op.overload}"
        if op.decomposition is not None or op.is_out or key in covered:
            continue
        fv = op.functional_variant if op.is_mutable else None
        if fv is not None and f"{fv.name}.{fv.overload}" in covered:
            continue
        missing.append(key)
    assert not missing, f"ops with neither a derivative formula nor a mark: {missing}"


def test_misc_rows_against_torch(torch):
    x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([True, False, True, True])
    out = torch.masked_select(x, mask)
    g = torch.randn(out.shape, dtype=torch.float64)
    expected, = torch.autograd.grad(out, x, g)
    ours_x = sk.tensor(x.detach().numpy()).requires_grad_()
    ours = sk.masked_select(ours_x, sk.tensor(mask.numpy()))
    assert ours.grad_fn.name() == out.grad_fn.name()
    got, = sk.autograd.grad(ours, ours_x, sk.tensor(g.numpy()))
    np.testing.assert_allclose(got.numpy(), expected.numpy())
    for fn, tfn in [(lambda t: sk.ops.zero.default(t), lambda t: torch.ops.aten.zero.default(t)),
                    (lambda t: sk.normal(t, 1.0), lambda t: torch.normal(t, 1.0))]:
        t_out = tfn(x)
        s_out = fn(ours_x)
        assert s_out.grad_fn.name() == t_out.grad_fn.name()
        got, = sk.autograd.grad(s_out.sum(), ours_x)
        assert not got.numpy().any()
