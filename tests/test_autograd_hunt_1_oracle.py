"""Autograd programs from a read of PyTorch's autograd test suite (part 1), on both libraries:
the engine's pruning with ``inputs=``, custom ``Function`` calls and checks, ``grad`` options.
Each program records what it observes (values, hooks fired, error class and message); the two
records must be equal."""

import collections
import re
import warnings

import numpy as np
import pytest

import subclass_kit as sk

pytestmark = [pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf"),
              pytest.mark.filterwarnings("ignore:grad and param do not obey"),
              pytest.mark.filterwarnings("ignore:Using backward() with create_graph")]

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")


def _obs(v):
    if isinstance(v, dict):
        return {k: _obs(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_obs(x) for x in v]
    if isinstance(v, (sk.Tensor, torch.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape),
                np.round(np.asarray(v.detach().tolist(), dtype=float), 6).tolist(),
                v.requires_grad)
    return v


def _norm(msg: str) -> str:
    return re.sub(r" object at 0x[0-9a-f]+", "", msg.replace("torch.", "sk."))


def record(L, program):
    log = []

    def note(*items):
        log.append(_obs(items))
    try:
        program(L, note)
    except Exception as e:      # the error is part of the observation
        log.append((type(e).__name__, _norm(str(e))))
    return log


def same(program):
    ours, theirs = record(sk, program), record(torch, program)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"


def attempt(note, fn):
    try:
        note("ok", fn())
    except Exception as e:
        note(type(e).__name__, _norm(str(e)))


# --- the engine with inputs=: nodes that lead to no input get no gradient, run no hook ---

@pytest.mark.parametrize("wanted", ["b", "c", "a", "bc", "d"])
@pytest.mark.parametrize("call", ["grad", "backward"])
def test_hooks_of_nodes_outside_the_inputs_paths_do_not_fire(wanted, call):
    def program(L, note):
        fired = []
        a = L.tensor([1.0, 2.0], requires_grad=True)
        c = L.tensor([3.0, -4.0], requires_grad=True)
        b = a * 2
        d = b * c
        e = d.view(-1) + a
        b.grad_fn.register_hook(lambda gi, go: fired.append("b post"))
        b.grad_fn.register_prehook(lambda go: fired.append("b pre"))
        b.register_hook(lambda g: fired.append("b tensor"))
        d.register_hook(lambda g: fired.append("d tensor"))
        d.grad_fn.register_hook(lambda gi, go: fired.append("d post"))
        inputs = [{"a": a, "b": b, "c": c, "d": d}[k] for k in wanted]
        for _ in range(2):
            if call == "grad":
                note(L.autograd.grad(e.sum(), inputs, retain_graph=True))
            else:
                e.sum().backward(inputs=inputs, retain_graph=True)
            note(fired, a.grad, c.grad)
            fired.clear()
        # a non-leaf input of backward(inputs=) keeps retaining its gradient afterwards
        (e * 3).sum().backward()
        note(b.grad, d.grad)
    same(program)


def test_hook_on_a_view_rebased_by_an_in_place_op_is_not_run_for_other_inputs():
    def program(L, note):
        fired = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = L.tensor([0.5, -1.0], requires_grad=True)
        out = x.clone().view(-1)
        out.register_hook(lambda g: fired.append(g.tolist()))
        b = out + y
        out += y
        total = (out + b).sum()
        note(L.autograd.grad(total, (b, y), retain_graph=True), fired)
        note(L.autograd.grad(total, (x,)), fired)
    same(program)


# --- custom Function: keyword arguments of apply ---

def _scaled_product(L, note, with_setup_context):
    if with_setup_context:
        class ScaledProduct(L.autograd.Function):
            @staticmethod
            def forward(x, y, scale=1.0):
                return x * y * scale

            @staticmethod
            def setup_context(ctx, inputs, output):
                note("inputs", len(inputs), ctx.needs_input_grad)
                x, y, scale = inputs
                ctx.save_for_backward(x, y)
                ctx.scale = scale

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * y * ctx.scale, g * x * ctx.scale, None
    else:
        class ScaledProduct(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, scale=1.0):
                note("inputs", ctx.needs_input_grad)
                ctx.save_for_backward(x, y)
                ctx.scale = scale
                return x * y * scale

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return (g * y * ctx.scale, g * x * ctx.scale) + (None,) * (
                    len(ctx.needs_input_grad) - 2)
    return ScaledProduct


@pytest.mark.parametrize("with_setup_context", [False, True])
@pytest.mark.parametrize("call", [
    lambda F, x, y: F.apply(x, y),
    lambda F, x, y: F.apply(x=x, y=y),
    lambda F, x, y: F.apply(y=y, x=x, scale=3.0),
    lambda F, x, y: F.apply(x, y=y),
    lambda F, x, y: F.apply(x, y, scale=-2.0),
    lambda F, x, y: F.apply(x, y=y.detach(), scale=2.0),
    lambda F, x, y: F.apply(x.detach(), y=y),
    lambda F, x, y: F.apply(x, bad=y),
    lambda F, x, y: F.apply(x, y, y=y),
    lambda F, x, y: F.apply(x, scale=2.0),
])
def test_function_apply_binds_keyword_arguments(with_setup_context, call):
    def program(L, note):
        F = _scaled_product(L, note, with_setup_context)
        x = L.tensor([2.0, -1.0], requires_grad=True)
        y = L.tensor([3.0, 0.5], requires_grad=True)
        out = call(F, x, y)
        note(out, out.grad_fn is not None)
        if out.requires_grad:
            out.sum().backward()
        note(x.grad, y.grad)
    same(program)


# --- custom Function: what backward may return ---

BACKWARD_RETURNS = {
    "the gradient": lambda L, g: (None, g),
    "extra Nones": lambda L, g: (None, g, None, None),
    "an extra tensor": lambda L, g: (None, g, g),
    "too few": lambda L, g: (g,),
    "a float": lambda L, g: (None, 1.0),
    "a list": lambda L, g: [None, g],
    "a gradient for the float": lambda L, g: (g, g),
    "a wrong shape": lambda L, g: (None, L.ones(10)),
    "a shape the input does not broadcast to": lambda L, g: (None, L.ones(4)),
    "a shape the input broadcasts to": lambda L, g: (None, L.ones(2, 3, 4) * 2),
    "another dtype": lambda L, g: (None, g.double() * 3),
    "an integer dtype": lambda L, g: (None, (g * 2).long()),
}


@pytest.mark.parametrize("kind", list(BACKWARD_RETURNS))
def test_function_backward_results_are_checked_and_fitted(kind):
    def program(L, note):
        class Twice(L.autograd.Function):
            @staticmethod
            def forward(ctx, scale, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return BACKWARD_RETURNS[kind](L, g)

        x = L.ones(3, 4, requires_grad=True)
        Twice.apply(0.5, x).sum().backward()
        note(x.grad)
    same(program)


def test_function_invalid_gradient_names_the_tensor_index():
    def program(L, note):
        class Product(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, scale, b):
                return a * b * scale

            @staticmethod
            def backward(ctx, g):
                return g, None, L.ones(7)

        b = L.ones(3, requires_grad=True)
        for a in (L.ones(3, requires_grad=True), L.ones(3)):
            attempt(note, lambda: Product.apply(a, 2.0, b).sum().backward())
    same(program)


# --- grad(materialize_grads=) ---

@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("allow_unused", [None, True, False])
def test_grad_materializes_unused_gradients(create_graph, allow_unused):
    def program(L, note):
        x = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = L.ones(2, requires_grad=True)
        kw = {} if allow_unused is None else {"allow_unused": allow_unused}
        attempt(note, lambda: L.autograd.grad((x ** 2).sum(), (x, y), materialize_grads=True,
                                              create_graph=create_graph, **kw))
    same(program)


# --- undefined gradients: tensor hooks see None, custom Functions still run ---

def test_tensor_hooks_see_undefined_gradients_as_none():
    def program(L, note):
        x = L.tensor([0.0, 1.0, 2.0, 3.0], requires_grad=True)
        a, b = x.chunk(2)
        a.register_hook(lambda g: note("a", g))
        b.register_hook(lambda g: note("b", g))
        (b * 2).sum().backward()
        parts = (x * 2).unbind(0)
        parts[0].register_hook(lambda g: note("part 0", g))
        parts[3].backward()
        note(x.grad)
    same(program)


@pytest.mark.parametrize("materialize", [True, False])
def test_custom_function_backward_runs_when_its_gradients_are_undefined(materialize):
    def program(L, note):
        class Twice(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                note("Twice.backward", g)
                return None if g is None else g * 2

        class Blocks(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return None

        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = Twice.apply(x)
        y.register_hook(lambda g: note("y hook", g))
        z = y * 1
        z.grad_fn.register_prehook(lambda go: note("pre", go))
        z.grad_fn.register_hook(lambda gi, go: note("post", gi, go))
        Blocks.apply(z).sum().backward()
        note(x.grad)
    same(program)


# --- what hooks may return ---

def _named_hook(g):
    return g.sum()


HOOK_RETURNS = {
    "None": lambda L, g: None,
    "the gradient itself": lambda L, g: g,
    "a new gradient": lambda L, g: g * 2,
    "an int": lambda L, g: 3,
    "another size": lambda L, g: g.sum(),
    "another size (named hook)": _named_hook,
    "another dtype": lambda L, g: g.double(),
    "a gradient for an undefined one": lambda L, g: L.ones(2) if g is None else None,
}


@pytest.mark.parametrize("on", ["leaf", "non-leaf", "unused chunk"])
@pytest.mark.parametrize("kind", list(HOOK_RETURNS))
def test_tensor_hook_results_are_checked(kind, on):
    def program(L, note):
        hook = HOOK_RETURNS[kind]
        fn = hook if hook is _named_hook else (lambda g: hook(L, g))
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        if on == "leaf":
            x.register_hook(fn)
            loss = (x * 2).sum()
        elif on == "non-leaf":
            y = x * 2
            y.register_hook(fn)
            loss = y.sum()
        else:
            a, b = x.chunk(2)
            a.register_hook(fn)
            loss = (b * 2).sum()
        attempt(note, loss.backward)
        note(x.grad)
    same(program)


@pytest.mark.parametrize("kind", ["None", "the tensor", "its gradient", "an int"])
def test_post_accumulate_grad_hooks_must_return_none(kind):
    def program(L, note):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        x.register_post_accumulate_grad_hook(
            lambda t: {"None": None, "the tensor": t, "its gradient": t.grad, "an int": 3}[kind])
        attempt(note, (x * 2).sum().backward)
        note(x.grad)
    same(program)


# --- calling a node, empty inputs ---

def test_calling_a_node_checks_the_gradient_count():
    def program(L, note):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        w = L.tensor([3.0, -1.0], requires_grad=True)
        for y in (x * w, x.exp(), x.sum(), x.split(1)[1]):
            g = L.ones_like(y)
            attempt(note, lambda: y.grad_fn(g))
            attempt(note, lambda: y.grad_fn(g, g))
            attempt(note, lambda: y.grad_fn())
    same(program)


def test_empty_inputs_are_refused():
    def program(L, note):
        x = L.tensor([1.0], requires_grad=True)
        attempt(note, lambda: (2 * x).sum().backward(inputs=[]))
        attempt(note, lambda: L.autograd.backward((2 * x).sum(), inputs=()))
        attempt(note, lambda: L.autograd.grad((2 * x).sum(), []))
    same(program)


# --- retain_grad follows the tensor to its new grad_fn ---

def _two_outputs(L):
    class TwoOutputs(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3
    return TwoOutputs


@pytest.mark.parametrize("case", ["in-place", "twice in-place", "in-place on a view",
                                  "views of one base", "multi-output", "dirty input"])
def test_retained_gradient_is_read_at_the_tensors_current_node(case):
    def program(L, note):
        leaf = L.tensor([1.0, -2.0], requires_grad=True)
        if case in ("in-place", "twice in-place"):
            a = leaf.clone()
            a.retain_grad()
            a.mul_(2)
            if case == "twice in-place":
                a.mul_(3)
            (a * a).sum().backward()
            note(a.grad, leaf.grad)
        elif case == "in-place on a view":
            x = leaf.clone()
            x.retain_grad()
            x[:1].mul_(4)
            x.sum().backward()
            note(x.grad, leaf.grad)
            x *= 2
            (x * 3).sum().backward()
            note(x.grad, leaf.grad)
        elif case == "views of one base":
            base = leaf.clone()
            view, view2 = base[:], base[1:]
            view.retain_grad()
            view2.retain_grad()
            view.mul_(2)
            (view.sum() * 3 + view2.sum()).backward()
            note(view.grad, view2.grad, leaf.grad)
        elif case == "multi-output":
            first, second = _two_outputs(L).apply(leaf)
            first.retain_grad()
            second.retain_grad()
            first.mul_(2)
            (first * 5 + second).sum().backward()
            note(first.grad, second.grad, leaf.grad)
        else:
            class Doubler(L.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.mark_dirty(x)
                    return x.mul_(2)

                @staticmethod
                def backward(ctx, g):
                    return g * 2
            a = leaf.clone()
            a.retain_grad()
            b = Doubler.apply(a)
            (b * 3).sum().backward()
            note(a.grad, b.grad, leaf.grad)
    same(program)


# --- node hooks: their results replace the gradients; removal during a backward ---

NODE_HOOK_RESULTS = {
    "None": lambda L, gs: None,
    "the same tuple": lambda L, gs: gs,
    "scaled": lambda L, gs: tuple(None if g is None else g * 10 for g in gs),
    "a tensor": lambda L, gs: gs[0],
    "a list": lambda L, gs: list(gs),
    "one more": lambda L, gs: gs + (gs[0],),
    "None entries": lambda L, gs: (None,) * len(gs),
    "another dtype": lambda L, gs: tuple(None if g is None else g.float() for g in gs),
}


@pytest.mark.parametrize("custom", [False, True])
@pytest.mark.parametrize("where", ["prehook", "posthook"])
@pytest.mark.parametrize("kind", list(NODE_HOOK_RESULTS))
def test_node_hook_results_replace_the_gradients(kind, where, custom):
    def program(L, note):
        if custom:
            class Times3(L.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 3

                @staticmethod
                def backward(ctx, g):
                    return g * 3
            f = Times3.apply
        else:
            def f(x):
                return x.exp()
        a = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        b = f(a)
        result = NODE_HOOK_RESULTS[kind]
        if where == "prehook":
            b.grad_fn.register_prehook(lambda go: result(L, go))
        else:
            b.grad_fn.register_hook(lambda gi, go: result(L, gi))
        attempt(note, b.sum().backward)
        note(a.grad)
    same(program)


def test_node_hooks_run_as_registered_when_the_call_started():
    def program(L, note):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        handles = {}

        def first(go):
            note("first")
            handles["second"].remove()
            handles["late"] = b.grad_fn.register_prehook(lambda go: note("late"))

        b.grad_fn.register_prehook(first)
        handles["second"] = b.grad_fn.register_prehook(lambda go: note("second"))
        b.sum().backward(retain_graph=True)
        b.sum().backward()
        note(a.grad)
    same(program)


# --- dict inputs (PyTorch 2.13) ---

def test_grad_and_backward_take_a_dict_of_inputs():
    def program(L, note):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = L.tensor([3.0, -1.0], requires_grad=True)
        z = (x * x * y).sum()
        note(L.autograd.grad(z, {"x": x, "y": y}, retain_graph=True))
        note(L.autograd.grad(z, {"y": y}, create_graph=True))
        note(L.autograd.grad((x * 2).sum(), {"x": x, "y": y}, materialize_grads=True))
        attempt(note, lambda: L.autograd.grad(z, {}))
        attempt(note, lambda: L.autograd.grad(z, collections.OrderedDict(x=x)))
        z.backward(inputs={"y": y}, retain_graph=True)
        L.autograd.backward(z, inputs={"x": x})
        attempt(note, lambda: L.autograd.backward(z, inputs=collections.OrderedDict(x=x)))
        note(x.grad, y.grad)
    same(program)


# --- .grad: the non-leaf warning, assignment checks ---

def test_reading_grad_of_a_non_leaf_warns_until_it_retains_or_has_one():
    def program(L, note):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            leaf = L.ones(2, requires_grad=True)
            note(leaf.grad, len(caught))
            y = leaf * 2
            note(y.grad, len(caught))
            y.grad = L.ones(2)
            note(y.grad, len(caught))
            del y.grad
            note(y.grad, len(caught))
            y.retain_grad()
            note(y.grad, len(caught))
            y.sum().backward()
            note(y.grad, len(caught))
            # (PyTorch appends where in its C++ sources the warning was raised)
            note(sorted({(w.category.__name__, str(w.message).split(" (Triggered internally")[0])
                         for w in caught}))
    same(program)


@pytest.mark.parametrize("value", ["None", "same", "int", "bigger", "unsqueezed", "float64",
                                   "meta", "itself", "non-contiguous"])
def test_assigning_grad_checks_type_dtype_device_size(value):
    def program(L, note):
        x = L.ones(3, 2, requires_grad=True)
        g = {"None": None, "same": L.full((3, 2), 2.0), "int": 3, "bigger": L.ones(4, 2),
             "unsqueezed": L.ones(1, 3, 2), "float64": L.ones(3, 2, dtype=L.float64),
             "meta": L.ones(3, 2, device="meta"), "itself": x,
             "non-contiguous": L.ones(2, 3).t()}[value]
        attempt(note, lambda: setattr(x, "grad", g))
        note(x.grad)
        (x * 3).sum().backward()
        note(x.grad)
    same(program)


# --- once_differentiable ---

def _graph(fn):
    """``Name(next, ...)`` of a node and everything below it."""
    if fn is None:
        return "None"
    return f"{type(fn).__name__}({', '.join(_graph(n) for n, _ in fn.next_functions)})"


@pytest.mark.parametrize("create_graph", [False, True])
def test_once_differentiable_backward_cannot_be_differentiated(create_graph):
    def program(L, note):
        class Combine(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, scale, b):
                ctx.scale = scale
                ctx.save_for_backward(a, b)
                return a * b + scale * b

            @staticmethod
            @L.autograd.function.once_differentiable
            def backward(ctx, g):
                note("grad mode in backward", L.is_grad_enabled())
                a, b = ctx.saved_tensors
                return g * b, None, g * a + g * ctx.scale

        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([0.5, -3.0], requires_grad=True)
        seed = L.ones((), requires_grad=create_graph)
        Combine.apply(a, 2.0, b).sum().backward(seed, create_graph=create_graph)
        note(a.grad, b.grad, _graph(a.grad.grad_fn), _graph(b.grad.grad_fn))
        if create_graph:
            attempt(note, lambda: a.grad.sum().backward())
    same(program)


# --- backward roots given twice; output_nr; attribute setters ---

def test_backward_of_the_same_output_twice_sums_both():
    def program(L, note):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([3.0, 4.0], requires_grad=True)
        x = a * b
        go = L.tensor([1.0, -1.0])
        L.autograd.backward([x, x], [go, go * 3])
        note(a.grad, b.grad)
        note(L.autograd.grad([x.sum(), x.sum(), b.sum()], [a, b]))
    same(program)


def test_output_nr_of_leaves_and_multi_output_results():
    def program(L, note):
        x = L.arange(10.0).requires_grad_()
        parts = x.split(4)
        values, indices = (x * 1).reshape(2, 5).max(1)
        _, second = _two_outputs(L).apply(x)
        note(x.output_nr, [p.output_nr for p in parts], values.output_nr, indices.output_nr,
             second.output_nr, L.ones(2).output_nr)
    same(program)


@pytest.mark.parametrize("value", [True, False, 1, 0, None, "yes"])
def test_requires_grad_attribute_takes_a_bool(value):
    def program(L, note):
        x = L.ones(2)
        attempt(note, lambda: setattr(x, "requires_grad", value))
        note(x.requires_grad)
        attempt(note, lambda: delattr(x, "requires_grad"))
        attempt(note, lambda: delattr(x, "data"))
        note(x)
    same(program)


# --- custom Function outputs: non-differentiable ones, dirty inputs ---

def test_non_differentiable_outputs_get_zero_gradients_of_their_dtype():
    def program(L, note):
        class Split(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                shifted = x + 1
                ctx.mark_non_differentiable(shifted)
                return x > 0, x.long(), shifted, x * 2

            @staticmethod
            def backward(ctx, g_mask, g_long, g_shifted, g_double):
                note(g_mask, g_long, g_shifted)
                return g_double * 2

        class Unmaterialized(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                shifted = x + 1
                ctx.mark_non_differentiable(shifted)
                ctx._materialize_non_diff_grads = False
                return shifted, x * 2

            @staticmethod
            def backward(ctx, g_shifted, g_double):
                note(g_shifted)
                return g_double

        x = L.tensor([1.0, -1.0], requires_grad=True)
        outs = Split.apply(x)
        note([o.requires_grad for o in outs])
        outs[3].sum().backward()
        Unmaterialized.apply(x)[1].sum().backward()
        note(x.grad)
    same(program)


def _doubler(L, n_outputs=1):
    class Doubler(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return (x,) * n_outputs if n_outputs > 1 else x

        @staticmethod
        def backward(ctx, *grads):
            return sum(g * 2 for g in grads)
    return Doubler


@pytest.mark.parametrize("case", ["non-leaf", "leaf", "view", "view then other views",
                                  "view, two outputs", "non-leaf, two outputs"])
def test_dirty_inputs_of_custom_functions(case):
    def program(L, note):
        leaf = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        two = "two outputs" in case
        Doubler = _doubler(L, 2 if two else 1)
        if case == "leaf":
            attempt(note, lambda: Doubler.apply(leaf))
            note(leaf._version)
            return
        base = leaf.clone()
        target = base if case.startswith("non-leaf") else base[1:]
        other = base[:1]
        before = target._version
        res = attempt(note, lambda: Doubler.apply(target)) if two else Doubler.apply(target)
        note(target._version - before, target.grad_fn.name().split("::")[-1],
             base.grad_fn.name().split("::")[-1])
        if res is None and two and case.startswith("view"):
            return
        if case == "view then other views":
            loss = target.sum() + other.sum() * 3
        else:
            loss = (base * L.tensor([1.0, 10.0, 100.0])).sum()
        loss.backward()
        note(leaf.grad)
    same(program)


def test_instantiating_a_function_warns_and_calling_it_raises():
    def program(L, note):
        class Identity(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn = Identity()
        note([(w.category.__name__, str(w.message).replace("torch", "sk")) for w in caught])
        attempt(note, lambda: fn(L.zeros(1, requires_grad=True)))
        note(Identity.apply(L.zeros(1, requires_grad=True)).grad_fn.name())
    same(program)


# --- saving in custom Functions happens after the forward; version error names; misc ---

def test_custom_function_saves_after_its_forward_returns():
    def program(L, note):
        packed = []

        class SaveThenModify(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(y, None)
                note("packed during forward", len(packed))
                y.add_(1)               # the version recorded is the one after the forward
                return y * 1

            @staticmethod
            def backward(ctx, g):
                y, nothing = ctx.saved_tensors
                note(y, nothing)
                return g * y

        x = L.tensor([1.0, 2.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            out = SaveThenModify.apply(x)
        note("packed", len(packed))
        out.sum().backward()
        note(x.grad)

        class SavesANumber(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        attempt(note, lambda: SavesANumber.apply(x))
    same(program)


def test_checkpoint_recomputes_a_custom_function_to_its_end():
    def program(L, note):
        runs = []

        class Clone(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.clone()
                ctx.save_for_backward(y)
                runs.append("forward returned")
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        x = L.tensor([1.0, 3.0], requires_grad=True)
        out = L.utils.checkpoint.checkpoint(Clone.apply, x, use_reentrant=False)
        out.sum().backward()
        note(runs, x.grad)
    same(program)


def test_version_error_keeps_the_node_variant_number():
    def program(L, note):
        a = L.ones(3, 4, requires_grad=True)
        b = a.sum(dim=1)
        c = b * b
        with L.no_grad():
            b += 1
        attempt(note, lambda: c.backward(L.ones(3)))
        d = a.sum()
        e = d * d
        with L.no_grad():
            d += 1
        attempt(note, e.backward)
    same(program)


def test_increment_version_and_numpy_under_no_grad():
    def program(L, note):
        a = L.rand(3, requires_grad=True)
        b = L.zeros(2, dtype=L.int32)
        L.autograd.graph.increment_version(a)
        L.autograd.graph.increment_version([a, b])
        note(a._version, b._version)
        y = a * a
        L.autograd.graph.increment_version(a)
        attempt(note, lambda: y.sum().backward())
        with L.inference_mode():
            c = L.ones(2)
        L.autograd.graph.increment_version(c)
        attempt(note, lambda: a.numpy().shape)
        with L.no_grad():
            note(a.numpy().shape)
    same(program)


# --- a saved output of an in-place op on a view, differentiated twice ---

@pytest.mark.parametrize("op", ["relu_", "sigmoid_", "exp_", "tanh_"])
def test_double_backward_through_an_in_place_op_on_a_view(op):
    def program(L, note):
        x = L.tensor([[-1.0, 0.5], [2.0, -0.25]], dtype=L.float64, requires_grad=True)
        view = (x * 1.5).view(4)
        getattr(view, op)()
        note(view.grad_fn.name().split("::")[-1], view._base.grad_fn.name().split("::")[-1])
        out = (view.sigmoid() * L.arange(1.0, 5.0, dtype=L.float64)).sum()
        (g,) = L.autograd.grad(out, x, create_graph=True, retain_graph=True)
        note(g)
        (g * g).sum().backward()
        note(x.grad)
    same(program)


# --- GradientEdge: edges in place of tensors ---

def test_gradient_edges_as_inputs_of_grad_and_backward():
    def program(L, note):
        graph = L.autograd.graph
        leaf = L.tensor([1.0, 2.0], requires_grad=True)
        x = leaf.clone()
        x_edge = graph.get_gradient_edge(x)
        note(type(x_edge).__name__, x_edge.output_nr, x_edge.node.name())
        x *= 2                  # the edge keeps pointing at the node before the in-place op
        note(L.autograd.grad(x.sum(), (x_edge, x), retain_graph=True))
        note(L.autograd.grad(x.sum(), graph.get_gradient_edge(leaf), retain_graph=True))
        y = L.tensor([3.0, 4.0], requires_grad=True).clone()
        y_edge = graph.GradientEdge(y.grad_fn, y.output_nr)
        out = x.clone()
        attempt(note, lambda: L.autograd.grad(out.sum(), (x, y_edge), allow_unused=True,
                                              retain_graph=True))
        attempt(note, lambda: L.autograd.grad(out.sum(), (x, y_edge), allow_unused=True,
                                              materialize_grads=True, retain_graph=True))
        attempt(note, lambda: L.autograd.grad(out.sum(), (x_edge, y), allow_unused=True,
                                              materialize_grads=True, retain_graph=True))
        L.autograd.backward(out.sum(), inputs=(x_edge, y_edge), retain_graph=True)
        L.autograd.backward(out.sum(), inputs=(x, y_edge))
        note(leaf.grad, x.grad)
        attempt(note, lambda: graph.get_gradient_edge(L.ones(2)))
    same(program)


@pytest.mark.parametrize("reduce", [True, False])
def test_gradient_edges_as_outputs(reduce):
    def program(L, note):
        graph = L.autograd.graph
        x = L.tensor([1.0, 2.0], requires_grad=True)

        def split(x):
            tmp = x.sin().cos()
            if reduce:
                tmp = tmp.sum()
            return tmp.exp().clone().sin().sum(), graph.get_gradient_edge(tmp)

        out, edge = split(x)
        attempt(note, lambda: L.autograd.grad(out, (edge,), retain_graph=True))
        attempt(note, lambda: L.autograd.grad(edge, (x,), retain_graph=True))
        attempt(note, lambda: L.autograd.grad(edge, (x,), grad_outputs=L.ones(4),
                                              retain_graph=True))
        g = L.ones(()) if reduce else L.ones(2)
        note(L.autograd.grad(edge, (x,), grad_outputs=(g,), retain_graph=True))
        note(L.autograd.grad((edge, out), (x,), grad_outputs=(g, None), retain_graph=True))
        L.autograd.backward((edge,), grad_tensors=(g,), retain_graph=True)
        note(x.grad)
    same(program)


# --- property: random graphs, random inputs= subsets, hooks everywhere ---

def test_grad_with_any_inputs_matches_torch_gradients_and_hooks():
    """Random small graphs of binary and unary ops over three leaves; ``grad`` (and
    ``backward(inputs=)``) for a random subset of the tensors: the gradients and which tensor
    hooks fire, in what order, are torch's."""
    hypothesis = pytest.importorskip("hypothesis", reason="hypothesis generates the graphs")
    st = hypothesis.strategies

    ops = st.tuples(st.sampled_from(["mul", "add", "sin", "exp", "view", "clone", "mul_"]),
                    st.integers(0, 10), st.integers(0, 10))

    @hypothesis.given(st.lists(ops, min_size=1, max_size=6),
                      st.lists(st.integers(0, 8), min_size=1, max_size=3, unique=True),
                      st.booleans())
    def check(steps, wanted, use_backward):
        def program(L, note):
            fired = []
            nodes = [L.tensor(v, dtype=L.float64, requires_grad=True)
                     for v in ([0.5, -1.0], [2.0, 0.25], [-0.75, 1.5])]
            for kind, i, j in steps:
                a, b = nodes[i % len(nodes)], nodes[j % len(nodes)]
                if kind == "mul":
                    t = a * b
                elif kind == "add":
                    t = a + b
                elif kind == "sin":
                    t = a.sin()
                elif kind == "exp":
                    t = (a * 0.5).exp()
                elif kind == "view":
                    t = a.view(2)
                elif kind == "clone":
                    t = a.clone()
                else:
                    t = (a * 1).mul_(b)
                k = len(nodes)
                t.register_hook(lambda g, k=k: fired.append(k))
                nodes.append(t)
            loss = sum(n.sum() for n in nodes[3:])
            inputs = [nodes[w % len(nodes)] for w in wanted]
            inputs = [t for n, t in enumerate(inputs) if all(t is not u for u in inputs[:n])]
            if use_backward:
                attempt(note, lambda: loss.backward(inputs=inputs))
                note([t.grad for t in inputs if t.is_leaf or t.retains_grad])
            else:
                attempt(note, lambda: L.autograd.grad(loss, inputs, allow_unused=True))
            note(fired)
        same(program)
    check()
