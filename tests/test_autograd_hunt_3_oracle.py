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

from oracle import autograd_obs  # noqa: E402


def _norm(msg: str) -> str:
    return re.sub(r"\b(torch|sk)\.", "", msg)


def obs(x):
    return autograd_obs(x)


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


# -- Tensor.grad: the setter's checks, the non-leaf warning ------------------------------------
_GRAD_VALUES = {
    "none": lambda L, x: None,
    "number": lambda L, x: 0,
    "list": lambda L, x: [0.0] * 4,
    "other_size": lambda L, x: L.zeros(2, 2),
    "itself": lambda L, x: x,
    "transposed": lambda L, x: L.zeros(2, 2).t().contiguous().t(),
    "requires_grad": lambda L, x: L.ones(2, 2, requires_grad=True),
}


@pytest.mark.parametrize("value", sorted(_GRAD_VALUES))
def test_grad_setter_checks(value):
    def program(L):
        x = L.ones(2, 2)
        x.grad = _GRAD_VALUES[value](L, x)
        return x.grad, None if x.grad is None else x.grad.stride()

    same(program)


@pytest.mark.parametrize("grad_dtype", ["float16", "bfloat16", "float32", "float64", "int8",
                                        "uint8", "int16", "int32", "int64", "bool"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_grad_setter_dtype_error_names_both_types(dtype, grad_dtype):
    def program(L):
        x = L.ones(3, dtype=getattr(L, dtype))
        x.grad = L.zeros(3, dtype=getattr(L, grad_dtype))
        return x.grad

    same(program)


@pytest.mark.parametrize("case", ["non_leaf", "retained", "leaf", "view_of_leaf", "no_grad"])
def test_reading_grad_of_a_non_leaf_warns(case):
    import warnings

    def program(L):
        x = L.ones(2, requires_grad=case != "no_grad")
        y = {"non_leaf": lambda: x * 2, "retained": lambda: x * 2, "leaf": lambda: x,
             "view_of_leaf": lambda: x[0:1], "no_grad": lambda: x * 2}[case]()
        if case == "retained":
            y.retain_grad()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = y.grad
        return g, [str(w.message)[:40] for w in caught if w.category is UserWarning]

    same(program)


@pytest.mark.parametrize("call", ["tensor_backward", "autograd_backward", "autograd_grad",
                                  "grad_no_graph"])
def test_empty_inputs_are_refused_first(call):
    def program(L):
        x = L.ones(2, requires_grad=True)
        z = (x * 2).sum()
        {"tensor_backward": lambda: z.backward(inputs=[]),
         "autograd_backward": lambda: L.autograd.backward(z, inputs=()),
         "autograd_grad": lambda: L.autograd.grad(z, []),
         "grad_no_graph": lambda: L.autograd.grad(L.ones(1), [])}[call]()

    same(program)


@pytest.mark.parametrize("dtype", ["int64", "bool", "float16", "float64"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_set_data_dtype_rule(dtype, requires_grad):
    def program(L):
        a = L.ones(3, requires_grad=requires_grad)
        a.data = L.zeros(3, dtype=getattr(L, dtype))
        return str(a.dtype).split(".")[-1], a.requires_grad

    same(program)
