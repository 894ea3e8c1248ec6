"""Autograd programs run on both libraries and compared against torch 2.13, observation by
observation: custom Functions in the ``setup_context`` style, the ``requires_grad`` property,
derivative values at singular points, views + in-place through custom Functions, inference
mode."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")


def _norm(msg: str) -> str:
    return re.sub(r"\b(torch|sk)\.", "", msg).replace("torch::autograd::", "")


def obs(x):
    """What we compare: tensors by values, dtype, grad_fn name, requires_grad, is_leaf."""
    if isinstance(x, (list, tuple)):
        return [obs(v) for v in x]
    if not hasattr(x, "grad_fn"):
        return x
    fn = x.grad_fn
    # as text, so NaNs compare equal (and zeros keep their sign)
    return {"values": str(np.asarray(x.detach().tolist(), dtype=float).round(6).tolist()),
            "dtype": str(x.dtype).split(".")[-1],
            "grad_fn": None if fn is None else _norm(fn.name()),
            "requires_grad": x.requires_grad, "is_leaf": x.is_leaf}


def run(L, program):
    try:
        return ("ok", obs(program(L)))
    except Exception as e:   # the class and the text are both compared
        return (type(e).__name__, _norm(str(e)))


def same(program):
    ours, theirs = run(sk, program), run(torch, program)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"
    return ours


# -- custom Function, setup_context style: the call is bound to forward's signature ----------
def _pow_function(L, style):
    def forward(*args):
        x, y = args[-2:]
        return L.pow(x, y)

    def setup_context(*args):
        ctx, inputs, _ = args[-3:]
        x, y = inputs
        ctx.save_for_backward(x)
        ctx.y = y
        ctx.seen = len(inputs)

    def backward(*args):
        ctx, g = args[-2:]
        (x,) = ctx.saved_tensors
        gy = (g * L.pow(x, ctx.y) * L.log(x)).sum() if ctx.needs_input_grad[1] else None
        return g * ctx.y * L.pow(x, ctx.y - 1), gy

    if style == "staticmethod":
        def fwd(x, y=3):
            return forward(x, y)
        ns = {"forward": staticmethod(fwd), "setup_context": staticmethod(setup_context),
              "backward": staticmethod(backward)}
    else:
        def fwd(cls, x, y=3):
            return forward(x, y)
        ns = {"forward": classmethod(fwd), "setup_context": classmethod(setup_context),
              "backward": classmethod(backward)}
    return type("PowFunction", (L.autograd.Function,), ns)


@pytest.mark.parametrize("style", ["staticmethod", "classmethod"])
@pytest.mark.parametrize("call", ["default", "positional", "keyword_tensor", "too_many"])
def test_setup_context_sees_bound_inputs_with_defaults(style, call):
    def program(L):
        fn = _pow_function(L, style)
        x = L.tensor([2.0, 0.5], dtype=L.float64, requires_grad=True)
        y = L.tensor(1.5, dtype=L.float64, requires_grad=True)
        args, kwargs = {"default": ((x,), {}), "positional": ((x, 2), {}),
                        "keyword_tensor": ((x,), {"y": y}),
                        "too_many": ((x, 2, 3), {})}[call]
        out = fn.apply(*args, **kwargs)
        grads = L.autograd.grad(out.sum(), (x, y), allow_unused=True)
        return out, out.grad_fn.seen, out.grad_fn.needs_input_grad, grads

    same(program)


# -- the requires_grad property has its own checks and texts -------------------------------
@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool", "float16", "bfloat16",
                                   "float64"])
@pytest.mark.parametrize("value", [True, False, 1, 0, "yes", None])
def test_requires_grad_property_setter(dtype, value):
    def program(L):
        t = L.ones(2, dtype=getattr(L, dtype))
        t.requires_grad = value
        return t

    same(program)


# -- the gradients a custom Function's backward returns are checked and fitted ---------------
_RETURNS = {
    "broadcast_to_input": lambda L, g: (None, g.expand(4, 2, 3), L.ones(2, 3)),
    "not_expandable": lambda L, g: (None, L.ones(5), L.ones(3)),
    "other_dtypes": lambda L, g: (None, g.double(), L.ones(3, dtype=L.float32)),
    "integral": lambda L, g: (None, g.long(), L.ones(3)),
    "grad_for_non_tensor": lambda L, g: (L.ones(1), g, L.ones(3)),
    "too_few": lambda L, g: (g,),
    "extra_nones": lambda L, g: (None, g, L.ones(3), None, None),
    "extra_tensor": lambda L, g: (None, g, L.ones(3), g),
    "single_tensor": lambda L, g: g,
}


@pytest.mark.parametrize("returns", sorted(_RETURNS))
def test_custom_function_backward_results_are_validated(returns):
    def program(L):
        class Scale(L.autograd.Function):
            @staticmethod
            def forward(ctx, k, x, y):
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                return _RETURNS[returns](L, g)

        x = L.ones(2, 3, requires_grad=True)
        y = L.ones(3, dtype=L.float64, requires_grad=True)
        Scale.apply(3, x, y).sum().backward()
        return x.grad, y.grad

    same(program)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=3),
       lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
       ones=st.lists(st.booleans(), min_size=3, max_size=3))
def test_custom_function_gradient_summed_to_input_shape(shape, lead, ones):
    # the backward returns a gradient the input broadcasts to: the input gets it summed down
    in_shape = [1 if one else s for s, one in zip(shape, ones)]
    g_shape = lead + shape
    data = np.arange(float(np.prod(g_shape) or 1)).reshape(g_shape)

    def program(L):
        class Spread(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.sum()

            @staticmethod
            def backward(ctx, g):
                return g * L.tensor(data.tolist(), dtype=L.float64)

        x = L.zeros(in_shape, dtype=L.float64, requires_grad=True)
        Spread.apply(x).backward()
        return x.grad

    same(program)


# -- derivative values at singular points -----------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_atan2_gradient_at_the_origin(dtype):
    def program(L):
        dt = getattr(L, dtype)
        x = L.tensor([0.0, -0.0, 1.0, 0.0, 3.0], dtype=dt, requires_grad=True)
        y = L.tensor([0.0, 0.0, 2.0, -0.0, 0.0], dtype=dt, requires_grad=True)
        z = L.atan2(x, y)
        gx, gy = L.autograd.grad(z.sum(), (x, y), create_graph=True)
        ggx, = L.autograd.grad(gx.sum(), x, allow_unused=True)
        return z, gx, gy, ggx, np.signbit(np.asarray(gy.tolist())).tolist()

    same(program)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.0, 0.5]), min_size=2, max_size=6))
def test_atan2_gradient_values(values):
    def program(L):
        x = L.tensor(values, dtype=L.float64, requires_grad=True)
        y = L.tensor(values[::-1], dtype=L.float64, requires_grad=True)
        (L.atan2(x, y) * L.arange(len(values), dtype=L.float64)).sum().backward()
        return x.grad, y.grad

    same(program)


# -- custom Functions that modify an input in place (ctx.mark_dirty) ---------------------------
def _add_in_place(L, n_outputs=1):
    class AddInPlace(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x if n_outputs == 1 else (x, y * 2)

        @staticmethod
        def backward(ctx, g, *rest):
            return g, g * 3
    return AddInPlace


def _dirty_observations(L, x, r, *others):
    return ([x._version, r._version, r is x] + [_norm(t.grad_fn.name()) if t.grad_fn else None
                                                 for t in (x, r) + others])


@pytest.mark.parametrize("where", ["narrow", "select_row", "strided", "view_of_view"])
@pytest.mark.parametrize("base_requires_grad", [True, False])
def test_mark_dirty_on_a_view_rebases_the_base(where, base_requires_grad):
    def program(L):
        a = L.arange(12.0, dtype=L.float64).reshape(3, 4).requires_grad_(base_requires_grad)
        b = L.tensor([1.0, -2.0], dtype=L.float64, requires_grad=True)
        x = a * 1 if base_requires_grad else a.clone()
        v = {"narrow": lambda: x[1, 1:3], "select_row": lambda: x[2, ::2],
             "strided": lambda: x.t()[2, 1:], "view_of_view": lambda: x[1:][1][1:3]}[where]()
        other = x[:, 1]
        r = _add_in_place(L).apply(v, b)
        seen = _dirty_observations(L, x, r, v, other) + [x.requires_grad, x.is_leaf]
        (x * L.arange(12.0, dtype=L.float64).reshape(3, 4)).sum().backward()
        return seen, b.grad, a.grad if base_requires_grad else None

    same(program)


@pytest.mark.parametrize("case", ["leaf", "view_of_leaf", "two_outputs", "unbind_output",
                                  "no_grad_view", "not_an_input", "plain"])
def test_mark_dirty_checks_and_versions(case):
    def program(L):
        y = L.ones(2, requires_grad=True)
        leaf = L.ones(2, requires_grad=True)
        n_outputs = 2 if case == "two_outputs" else 1
        fn = _add_in_place(L, n_outputs)
        if case == "leaf":
            x = leaf
        elif case == "view_of_leaf":
            x = L.ones(4, requires_grad=True)[1:3]
        elif case == "unbind_output":
            x = (L.ones(2, 2, requires_grad=True) * 1).unbind()[0]
        elif case == "no_grad_view":
            base = leaf * 1
            with L.no_grad():
                x = base[:]
        elif case == "not_an_input":
            class Fresh(L.autograd.Function):
                @staticmethod
                def forward(ctx, t):
                    out = t * 2
                    ctx.mark_dirty(out)
                    return out

                @staticmethod
                def backward(ctx, g):
                    return g * 2
            with pytest.warns(UserWarning, match="not an input"):
                r = Fresh.apply(y)
            return r._version, r.grad_fn.name()
        else:
            x = leaf * 1
        r = fn.apply(x, y)
        r = r[0] if n_outputs == 2 else r
        return _dirty_observations(L, x, r)

    same(program)


@pytest.mark.parametrize("mode", ["no_grad", "nothing_requires_grad"])
def test_mark_dirty_bumps_the_version_without_a_node(mode):
    def program(L):
        x = L.ones(3, requires_grad=mode == "no_grad")
        base = x * 1 if mode == "no_grad" else x.clone()
        v = base[:2]
        y = L.ones(2)
        if mode == "no_grad":
            with L.no_grad():
                r = _add_in_place(L).apply(v, y)
        else:
            r = _add_in_place(L).apply(v, y)
        return (base._version, v._version, r is v, r.requires_grad,
                _norm(v.grad_fn.name()) if v.grad_fn else None)

    same(program)


# -- outputs that get no node ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ["grad", "no_grad", "no_input_requires_grad"])
def test_custom_function_outputs_without_history(mode):
    def program(L):
        class Pass(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.mark_non_differentiable(x)
                return x, y, x.long(), y * 2

            @staticmethod
            def backward(ctx, gx, gy, gl, g2):
                return gy, gy + 2 * g2

        x = L.ones(3, requires_grad=mode != "no_input_requires_grad")
        y = L.ones(3, requires_grad=mode != "no_input_requires_grad")
        if mode == "no_grad":
            with L.no_grad():
                outs = Pass.apply(x, y)
        else:
            outs = Pass.apply(x, y)
        return [(o is x, o is y, o._base is x, o._base is y, o.requires_grad, o.is_leaf,
                 o.grad_fn.name() if o.grad_fn else None) for o in outs]

    same(program)


def test_mark_dirty_view_not_the_first_input_routes_each_gradient():
    # docs/differences.md: torch's CopySlices assumes the view is the node's input 0, so the
    # same Function with the arguments swapped (the view first) is the reference
    def program(L, view_first):
        class AddInto(L.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                y, x = args[::-1] if view_first else args
                ctx.mark_dirty(x)
                return x.add_(y * 2)

            @staticmethod
            def backward(ctx, g):
                gy, gx = g * 2 + 1, g * 3
                return (gx, gy) if view_first else (gy, gx)

        a = L.arange(4.0, dtype=L.float64).requires_grad_()
        b = L.tensor([1.0, 5.0], dtype=L.float64, requires_grad=True)
        x = a * 1
        v = x[1:3]
        r = AddInto.apply(*((v, b) if view_first else (b, v)))
        (x * L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64)).sum().backward()
        return r, x, a.grad, b.grad, x.grad_fn.name().split("::")[-1]

    assert obs(program(sk, view_first=False)) == obs(program(torch, view_first=True))


# -- div's gradient for the divisor: PyTorch's expression, op for op --------------------------
@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3).filter(lambda v: abs(v) > 1e-3), min_size=2, max_size=5))
def test_div_other_gradient_is_bitwise_pytorchs(values):
    def program(L):
        a = L.tensor(values, dtype=L.float32, requires_grad=True)
        b = L.tensor(values[::-1], dtype=L.float32, requires_grad=True)
        ga, gb = L.autograd.grad((a / b * L.arange(len(values), dtype=L.float32)).sum(), (a, b),
                                 create_graph=True)
        return ([float(v).hex() for v in gb.tolist()], _norm(gb.grad_fn.name()),
                _norm(ga.grad_fn.name()))

    same(program)


# -- double backward through in-place ops that keep the old value of self --------------------
_INPLACE = {
    "mul_": lambda v, b: v.mul_(b),
    "div_": lambda v, b: v.div_(b + 3.0),
    "mul_twice": lambda v, b: v.mul_(b).mul_(b),
    "addcmul_": lambda v, b: v.addcmul_(v, b),
}


@pytest.mark.parametrize("op", sorted(_INPLACE))
@pytest.mark.parametrize("on_view", [True, False])
def test_double_backward_through_in_place_saved_self(op, on_view):
    a_data = np.linspace(-1.5, 2.0, 16).reshape(4, 4)
    b_data = np.linspace(0.5, 1.25, 4).reshape(2, 2)

    def program(L):
        a = L.tensor(a_data.tolist(), dtype=L.float64, requires_grad=True)
        b = L.tensor(b_data.tolist(), dtype=L.float64, requires_grad=True)
        x = a.clone()
        target = x[1:3, 2:] if on_view else x[1:3, 2:].clone()
        _INPLACE[op](target, b)
        out = x if on_view else target
        ga, gb = L.autograd.grad((out * out).sum(), (a, b), create_graph=True)
        second = L.autograd.grad((ga * ga).sum() + (gb * gb).sum(), (a, b), allow_unused=True)
        return out, ga, gb, second, _norm(out.grad_fn.name())

    same(program)


def test_in_place_saved_self_is_a_recorded_clone():
    def program(L):
        a = L.ones(3, requires_grad=True)
        b = L.full((3,), 2.0, requires_grad=True)
        x = a * 1
        x.mul_(b)
        saved = x.grad_fn._saved_self
        return saved, _norm(saved.grad_fn.name()), x.grad_fn._saved_other

    same(program)


def test_gradgradcheck_in_place_on_views():
    def check(L):
        a = L.tensor(np.linspace(-1, 1, 16).reshape(4, 4).tolist(), dtype=L.float64,
                     requires_grad=True)
        b = L.tensor([[0.5, -1.0], [2.0, 1.5]], dtype=L.float64, requires_grad=True)
        go = L.tensor(np.linspace(2, -2, 16).reshape(4, 4).tolist(), dtype=L.float64,
                      requires_grad=True)

        def func(root, b):
            x = root.clone()
            x.narrow(1, 2, 2).narrow(0, 1, 2).mul_(b)
            x.narrow(1, 0, 2).narrow(0, 1, 2).mul_(b)
            return x

        return (L.autograd.gradcheck(func, (a, b)),
                L.autograd.gradgradcheck(func, (a, b), (go,)))

    same(check)


# -- inference tensors made with requires_grad=True, used outside inference mode -------------
_INFERENCE_USES = {
    "square": lambda L, c, n: c * c,
    "exp": lambda L, c, n: c.exp(),
    "sum": lambda L, c, n: c.sum(),
    "view": lambda L, c, n: c.view(-1),
    "pow_scalar": lambda L, c, n: c.pow(2),
    "stack_inference": lambda L, c, n: L.stack([c, c]),
    "cat_inference": lambda L, c, n: L.cat([c, c]),
    "times_normal": lambda L, c, n: c * n,
    "normal_times": lambda L, c, n: n * c,
    "plus_normal": lambda L, c, n: c + n,
    "stack_mixed": lambda L, c, n: L.stack([c, n]),
    "times_normal_rg": lambda L, c, n: c * n.requires_grad_(),
    "plus_normal_rg": lambda L, c, n: c + n.requires_grad_(),
}


@pytest.mark.parametrize("use", sorted(_INFERENCE_USES))
def test_inference_tensor_requiring_grad_used_outside(use):
    def program(L):
        with L.inference_mode():
            c = L.tensor([1.0, 2.0], requires_grad=True)
        n = L.tensor([3.0, -1.0])
        out = _INFERENCE_USES[use](L, c, n)
        # (_is_view of a non-view result is left out: torch's stack of inference tensors
        # answers True)
        seen = [out, out.is_inference(), out._is_view() if use == "view" else None]
        if out.requires_grad:
            out.sum().backward()
            seen += [c.grad, n.grad]
        return seen

    same(program)


@pytest.mark.parametrize("use", ["mul", "add"])
def test_inference_tensor_requiring_grad_with_a_number_is_not_recorded(use):
    # docs/differences.md: PyTorch records these (the number is wrapped in a tensor that
    # carries the autograd key); we keep the rule "all tensors are inference: not recorded"
    with sk.inference_mode():
        c = sk.tensor([1.0, 2.0], requires_grad=True)
    out = c * 2 if use == "mul" else c + 1
    assert not out.requires_grad and out.grad_fn is None and out.is_leaf
    assert out.tolist() == ([2.0, 4.0] if use == "mul" else [2.0, 3.0])


# -- saved_tensors_hooks: what the hooks see and what unpacking gives back --------------------
_SAVING_OPS = {
    "exp": lambda L, a: a.exp(),
    "tanh": lambda L, a: (a * 2).tanh(),
    "exp_": lambda L, a: a.clone().exp_(),
    "softmax": lambda L, a: L.softmax(a, 0),
    "mul": lambda L, a: (a * 3) * a,
    "sigmoid_view": lambda L, a: (a * 1)[1:].sigmoid(),
}


@pytest.mark.parametrize("op", sorted(set(_SAVING_OPS) - {"mul"}))    # (the order of two
def test_pack_hook_sees_saved_outputs_with_their_history(op):       # saved inputs differs)
    def program(L):
        seen = []

        def pack(x):
            seen.append((tuple(x.shape), x.requires_grad,
                         _norm(x.grad_fn.name()) if x.grad_fn is not None else None))
            return x

        a = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
            out = _SAVING_OPS[op](L, a)
        out.sum().backward()
        return seen, a.grad

    same(program)


@pytest.mark.parametrize("op", sorted(_SAVING_OPS))
@pytest.mark.parametrize("hooks", ["identity", "detach_scale"])
def test_double_backward_through_saved_tensors_hooks(op, hooks):
    def program(L):
        pack, unpack = {"identity": (lambda x: x, lambda x: x),
                        "detach_scale": (lambda x: x.detach() * 2, lambda x: x / 2)}[hooks]
        a = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = _SAVING_OPS[op](L, a)
        g, = L.autograd.grad((out * out).sum(), a, create_graph=True)
        g2, = L.autograd.grad(g.sum(), a)
        return g, g2

    same(program)


def test_unpacked_saved_tensors_carry_the_saved_history():
    def program(L):
        a = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda x: x.detach(), lambda x: x):
            b = a * 3
            y = b.exp()
            z = b * a
        out = y.grad_fn._saved_result
        saved_self, saved_other = z.grad_fn._saved_self, z.grad_fn._saved_other
        return [(t, t is b, t is a, t._is_view()) for t in (out, saved_self, saved_other)]

    same(program)


# -- leaves and graphs are freed by reference counts -----------------------------------------
def test_a_leaf_used_in_a_graph_is_freed_without_the_garbage_collector():
    import gc
    import weakref

    gc.disable()
    try:
        a = sk.ones(3, requires_grad=True)
        (a * a).sum().backward()
        grad = a.grad
        ref = weakref.ref(a)
        del a
        assert ref() is None
        assert grad.tolist() == [2.0, 2.0, 2.0]
    finally:
        gc.enable()


# -- checkpoint: gradients computed inside, nested checkpoints, higher orders -----------------
def _checkpoint(L):
    if L is sk:
        from subclass_kit.utils.checkpoint import checkpoint
    else:
        from torch.utils.checkpoint import checkpoint
    return checkpoint


def _grad_of(L, fn):
    def wrapper(x):
        with L.enable_grad():
            (g,) = L.autograd.grad(fn(x), (x,), create_graph=True)
        return g
    return wrapper


def _ckpt(L, fn):
    return lambda *a: _checkpoint(L)(fn, *a, use_reentrant=False)


_NESTINGS = {
    "c": lambda L, f: _ckpt(L, f),
    "cc": lambda L, f: _ckpt(L, _ckpt(L, f)),
    "g_c": lambda L, f: _grad_of(L, _ckpt(L, f)),
    "g_cc": lambda L, f: _grad_of(L, _ckpt(L, _ckpt(L, f))),
    "g_c_g": lambda L, f: _grad_of(L, _ckpt(L, _grad_of(L, f))),
    "c_g_g_c": lambda L, f: _ckpt(L, _grad_of(L, _grad_of(L, _ckpt(L, f)))),
    "g_c_g_c": lambda L, f: _grad_of(L, _ckpt(L, _grad_of(L, _ckpt(L, f)))),
    "g_c_g_g_c": lambda L, f: _grad_of(L, _ckpt(L, _grad_of(L, _grad_of(L, _ckpt(L, f))))),
}


@pytest.mark.parametrize("nesting", sorted(_NESTINGS))
@pytest.mark.parametrize("inner_grads", [False, True])
def test_nested_checkpoints_and_gradients(nesting, inner_grads):
    import gc
    import weakref

    def f(L, x):
        if inner_grads:     # gradients computed (and dropped) inside the checkpointed function
            L.autograd.grad(x.sin().exp().sin(), x)
        return x.sin().exp().sin() * x

    def program(L):
        x = L.tensor(0.7, dtype=L.float64, requires_grad=True)
        fn = _NESTINGS[nesting](L, lambda t: f(L, t))
        out = fn(x)
        refs, stack, seen = [], [out.grad_fn], set()
        while stack:                # every node of the result's graph dies with the result
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            marker = type("Marker", (), {})()
            node.metadata["marker"] = marker
            refs.append(weakref.ref(marker))
            stack += [n for n, _ in node.next_functions]
        value = out.detach()
        grad, = L.autograd.grad(out, x)
        del out, x, node, stack, seen, marker
        return value, grad, sum(r() is not None for r in refs)

    gc.disable()
    try:
        same(program)
    finally:
        gc.enable()


@pytest.mark.parametrize("hooks", [False, True])
def test_version_of_tensors_saved_through_hooks_is_not_checked(hooks):
    # as PyTorch: with hooks the value is the hooks' business (here the modified one is used)
    def program(L):
        a = L.ones(3, requires_grad=True)
        if hooks:
            with L.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                b = a * 1
                y = (b * b).sum()
        else:
            b = a * 1
            y = (b * b).sum()
        b.add_(1)
        y.backward()
        return a.grad

    same(program)


# -- Tensor.as_subclass stays attached to the graph (PyTorch wraps self.alias()) --------------
@pytest.mark.parametrize("source", ["non_leaf", "leaf", "no_grad", "plain"])
def test_as_subclass_keeps_the_graph(source):
    def program(L):
        class Marked(L.Tensor):
            pass

        x = L.tensor([1.0, -2.0, 3.0], requires_grad=source != "plain")
        y = x * 2 if source in ("non_leaf", "no_grad") else x
        if source == "no_grad":
            with L.no_grad():
                w = y.as_subclass(Marked)
        else:
            w = y.as_subclass(Marked)
        seen = [type(w).__name__, w._base is y, w, w._version]
        if w.requires_grad and w.grad_fn is not None:
            (w * L.tensor([1.0, 2.0, 3.0])).sum().backward()
            seen.append(x.grad)
        return seen

    same(program)


# -- custom Function outputs: materialized gradients, views, saved values --------------------
@pytest.mark.parametrize("materialize", [True, False])
def test_custom_function_materializes_every_tensor_output(materialize):
    def program(L):
        seen = []

        class Several(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                b = x * 3
                ctx.mark_non_differentiable(b)
                return x * 2, b, x > 0, x.long(), 5

            @staticmethod
            def backward(ctx, ga, gb, gmask, glong, gint):
                seen.extend(None if g is None else (g.tolist(), str(g.dtype).split(".")[-1])
                            for g in (ga, gb, gmask, glong, gint))
                return ga * 2 if ga is not None else None

        x = L.tensor([1.0, -1.0], requires_grad=True)
        a, b, mask, long, five = Several.apply(x)
        a.sum().backward()
        return seen, x.grad, [t.requires_grad for t in (a, b, mask, long)], five

    same(program)


@pytest.mark.parametrize("mode", ["grad", "no_grad"])
def test_view_returned_by_a_custom_function_refuses_in_place(mode):
    def program(L):
        class Head(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x[0:2]

            @staticmethod
            def backward(ctx, g):
                return L.cat([g, L.zeros(1)])

        x = L.ones(3, requires_grad=True) * 1
        if mode == "no_grad":
            with L.no_grad():
                v = Head.apply(x)
        else:
            v = Head.apply(x)
        seen = [v._is_view(), v.requires_grad]
        v.mul_(2)
        return seen

    same(program)


@pytest.mark.parametrize("value", [3, "x", [1.0], None])
def test_save_for_backward_accepts_tensors_and_none_only(value):
    def program(L):
        class Keep(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(value if not isinstance(value, list) else [L.ones(1)], x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                first, x = ctx.saved_tensors
                return g * x

        x = L.ones(2, requires_grad=True)
        Keep.apply(x).sum().backward()
        return x.grad

    same(program)
