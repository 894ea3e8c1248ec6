"""Autograd corner cases against torch 2.13, found by porting programs that exercise custom
Functions (views they return, ``mark_dirty``), ``retain_grad`` across in-place ops, ``.data``
assignment and ``gradcheck``: the same program on both libraries, compared observation by
observation (values, grad_fn names, versions, error class and message)."""

import re

import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

from oracle import autograd_obs  # noqa: E402


def _norm(msg: str) -> str:
    return re.sub(r" object at 0x[0-9a-f]+", "", msg.replace("torch.", "sk."))


def obs(t):
    return autograd_obs(t, version=True)


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


# ---- mark_dirty ---------------------------------------------------------------------------

def _dirty(L, kind):
    """A custom Function of ``(x, y)`` that doubles ``x`` in place and marks it dirty."""

    class Double(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            if kind == "not an input":
                c = x * 2
                c.mul_(2)
                ctx.mark_dirty(c)
                return c
            x.mul_(2)
            ctx.mark_dirty(x)
            if kind == "not returned":
                return y * 3
            if kind == "two outputs":
                return x, y * 3
            return x

        @staticmethod
        def backward(ctx, *grads):
            return grads[0] * 2, grads[0] * 3

    return Double


@pytest.mark.parametrize("kind", ["one output", "two outputs", "not returned", "not an input"])
@pytest.mark.parametrize("target", ["leaf", "non-leaf", "view", "view of a constant"])
def test_mark_dirty(kind, target):
    """A dirty input is bumped once more after the forward and takes the node as its history:
    a leaf requiring grad raises, a view rebases its base onto CopySlices (and may be the
    only output); a dirty tensor must be returned."""
    def program(L):
        x0 = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = L.tensor([1.0, -1.0, 0.5], requires_grad=True)
        base = x0.clone() if target != "view of a constant" else L.ones(4)
        x = {"leaf": L.ones(3, requires_grad=True), "non-leaf": x0[:3] * 1}.get(target,
                                                                                base[:3])
        got = []
        res = [attempt(lambda: got.append(_dirty(L, kind).apply(x, y)))]
        if res[0] != "ok":
            return res + [x._version]
        out = got[0]
        outs = out if isinstance(out, tuple) else (out,)
        res.append([o is x for o in outs])
        res.append(obs([x, base, *outs]))
        (base.sum() + sum(o.sum() for o in outs)).backward()
        # (values only: PyTorch adds a second gradient into an input buffer in place, which
        # moves the leaf gradient's version; docs/differences.md)
        res.append([None if g is None else obs(g)["values"] for g in (x0.grad, y.grad)])
        return res
    with pytest.warns(UserWarning, match="not an input") if kind == "not an input" else \
            _no_warning():
        same(program)


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_mark_dirty_view_of_a_later_input_gets_its_own_gradient():
    """Deliberate difference (docs/differences.md): when the dirty view is not the first input
    PyTorch's CopySlices takes the first input's edge and gradient for the view (the first
    input gets none); here each input gets its own. Checked against the same function with
    the arguments swapped, which PyTorch gets right."""
    def program(L, swap):
        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, *xy):
                x = xy[0] if swap else xy[1]
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return (g * 2, g * 3) if swap else (g * 3, g * 2)

        a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x0 = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = x0.clone()
        x = base[:3]
        Fn.apply(*((x, a) if swap else (a, x)))
        base.sum().backward()
        return [obs(g)["values"] for g in (a.grad, x0.grad)]
    assert program(sk, swap=False) == program(sk, swap=True) == program(torch, swap=True)


# ---- retain_grad across in-place ops ------------------------------------------------------

@pytest.mark.parametrize("how", ["in-place", "in-place on a view", "view in-place",
                                 "mark_dirty"])
def test_retain_grad_follows_in_place(how):
    """``retain_grad()`` keeps the gradient of the tensor's newest value: an in-place op (on
    it, on one of its views, or a custom function's ``mark_dirty``) moves it to the new node,
    while hooks registered earlier stay with the old value."""
    def program(L):
        x0 = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = x0 * 1
        b.retain_grad()
        seen = []
        b.register_hook(lambda g: seen.append(obs(g)["values"]))
        if how == "in-place":
            b.mul_(3)
        elif how == "in-place on a view":
            b[:2].mul_(3)
        elif how == "view in-place":
            v = b[1:]
            v.retain_grad()
            b.mul_(3)
            v.grad_fn             # regenerated: the view's retain_grad moves too
        else:
            _dirty(L, "one output").apply(b, L.ones(3))
        (b * L.tensor([1.0, 2.0, 4.0])).sum().backward()
        res = [obs([b.grad, x0.grad]), seen]
        if how == "view in-place":
            res.append(obs(v.grad))
        return res
    same(program)


# ---- which leaf gradients are stolen, which are copied ------------------------------------

def test_gradient_handed_to_two_leaves_is_stolen_by_the_last():
    """A custom backward returning the same gradient for two leaves: the first leaf to
    accumulate copies it (someone else still holds it), the last takes it as is; a gradient
    a node passes through (``clone``'s) is taken as is as well."""
    def program(L):
        ptrs = []

        class Same(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a + b

            @staticmethod
            def backward(ctx, g):
                ptrs.append(g.data_ptr())
                return g, g

        a = L.ones(2, 3, requires_grad=True)
        b = L.ones(2, 3, requires_grad=True)
        Same.apply(a, b)[1][0].backward()
        res = [a.grad.data_ptr() == ptrs[0], b.grad.data_ptr() == ptrs[0],
               a.grad.data_ptr() == b.grad.data_ptr()]
        c = L.ones(3, requires_grad=True)
        seen = []
        d = c * 2
        d.register_hook(lambda g: seen.append(g.data_ptr()))
        d.clone().sum().backward()
        return res + [c.grad.data_ptr() == seen[0], c.grad._version]
    same(program)


@pytest.mark.parametrize("hooked", ["leaf", "non-leaf"])
def test_nested_backward_in_a_hook_keeps_the_callers_gradient_copied(hooked):
    """A backward run from a tensor hook, between the caller handing its gradient to
    ``backward`` and the leaf accumulating it: the leaf still copies the caller's gradient
    (the caller holds it), as PyTorch's reference count tells it to."""
    def program(L):
        x = L.ones(3, requires_grad=True)
        other = L.ones(2, requires_grad=True)

        def hook(grad):
            with L.enable_grad():
                (other * 2).sum().backward()
        root = x if hooked == "leaf" else x.clone()
        root.register_hook(hook)
        g = L.full((3,), 2.0)
        root.backward(g)
        g.add_(1)
        return [x.grad.data_ptr() == g.data_ptr(), x.grad.tolist(), other.grad.tolist()]
    same(program)


@pytest.mark.parametrize("reuse", [False, True])
def test_copy_slices_gradient_versions(reuse):
    """The gradient a leaf gets through CopySlices has the version of PyTorch's (a new tensor
    written twice), whether or not the engine wrote the region in place."""
    def program(L):
        x0 = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = x0.clone()
        base[:3].mul_(2)
        loss = base.sum() + base[:3].sum() if reuse else base.sum()
        loss.backward()
        return obs(x0.grad)
    same(program)


def test_captured_gradients_are_not_written_in_place():
    """A gradient ``grad``/``backward(inputs=)`` returns for a non-leaf is not the buffer a
    later CopySlices writes its region into."""
    def program(L):
        x0 = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = x0.clone()
        base[:2].mul_(3)
        y = base.clone()
        gy, gx = L.autograd.grad((y * 1).sum(), [y, x0])
        x1 = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = x1.clone()
        base[:2].mul_(3)
        y1 = base.clone()
        (y1 * 1).sum().backward(inputs=[y1, x1])
        return obs([gy, gx, y1.grad, x1.grad])
    same(program)


# ---- .data ---------------------------------------------------------------------------------

@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_set_data_dtype(requires_grad, dtype):
    """``x.data = y`` refuses a non-floating ``y`` when ``x`` requires grad, leaving ``x`` as it
    was; otherwise ``x`` takes ``y``'s data and keeps its version counter."""
    def program(L):
        x = L.tensor([1.0, 2.0], requires_grad=requires_grad)
        y = L.tensor([3, 4], dtype=getattr(L, dtype))
        msg = attempt(lambda: setattr(x, "data", y))
        return msg, str(x.dtype).split(".")[-1], x.tolist(), x._version, x.requires_grad
    same(program)


@pytest.mark.parametrize("kind", ["split output", "view of a leaf", "no_grad view",
                                  "no_grad view of a leaf", "custom Function view",
                                  "constant", "view of a constant"])
@pytest.mark.parametrize("grad_mode", [True, False])
@pytest.mark.parametrize("outputs", [1, 2])
def test_mark_dirty_admission(kind, grad_mode, outputs):
    """A dirty input passes the checks of an in-place op (a view made without grad_fn counts
    as a leaf; a view may not be returned with another output, checked first), after the
    version bump."""
    def program(L):
        class Inc(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x if outputs == 1 else (x, x * 2)

            @staticmethod
            def backward(ctx, *grads):
                return grads[0]

        class ViewOf(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return g

        a = L.tensor([1.0, 2.0], requires_grad=True)
        if kind == "split output":
            x = a.clone().split_with_sizes([1, 1])[0]
        elif kind == "view of a leaf":
            x = a.view_as(a)
        elif kind.startswith("no_grad view"):
            b = a if kind.endswith("leaf") else a.clone()
            with L.no_grad():
                x = b[:]
        elif kind == "custom Function view":
            x = ViewOf.apply(a.clone())
        else:
            x = L.tensor([1.0, 2.0])
            x = x[:] if kind == "view of a constant" else x
        got = []
        with L.set_grad_enabled(grad_mode):
            msg = attempt(lambda: got.append(Inc.apply(x)))
        return msg, x._version, obs(got[0]) if got else None
    same(program)


def test_mark_dirty_view_that_is_not_an_input():
    """A view marked dirty that is not an input cannot be rebased: an error, where a
    non-view non-input only warns."""
    def program(L):
        class Fn(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.clone().view_as(x)
                ctx.mark_dirty(out)
                return out

            @staticmethod
            def backward(ctx, g):
                return g

        return attempt(lambda: Fn.apply(L.tensor([1.0], requires_grad=True).clone()))
    same(program)


# ---- small API points ----------------------------------------------------------------------

@pytest.mark.parametrize("defines", ["vjp", "backward and vjp"])
def test_custom_function_vjp(defines):
    """``vjp`` is another name for ``backward``; defining both raises when the backward runs."""
    def program(L):
        ns = {"forward": staticmethod(lambda ctx, x: x * 2),
              "vjp": staticmethod(lambda ctx, g: g * 3)}
        if defines != "vjp":
            ns["backward"] = staticmethod(lambda ctx, g: g * 5)
        Fn = type("Fn", (L.autograd.Function,), ns)
        a = L.tensor([1.0, 2.0], requires_grad=True)
        out = Fn.apply(a)
        return obs(out), attempt(lambda: out.sum().backward()), obs(a.grad)
    same(program)


def test_swapaxes_in_place():
    def program(L):
        b = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True).clone()
        b.swapaxes_(0, 1)
        return obs(b), b.stride()
    same(program)


def test_backward_create_graph_warns_once():
    """``backward(create_graph=True)`` warns about the gradient/parameter cycle, once per
    process as PyTorch's engine does (so only whether a first warning names the fact)."""
    from subclass_kit.modes.autograd import engine
    old = engine._WARNED_CYCLE
    engine._WARNED_CYCLE = False
    try:
        a = sk.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="create_graph=True will create a reference cycle"):
            (a * a).sum().backward(create_graph=True)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (a * a).sum().backward(create_graph=True)
            sk.autograd.grad((a * a).sum(), a, create_graph=True)
    finally:
        engine._WARNED_CYCLE = old


@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"return_inverse": True},
                                    {"return_counts": True, "sorted": False},
                                    {"return_inverse": True, "return_counts": True, "dim": 0}])
def test_unique_values_require_grad(kwargs):
    """``unique``'s values require grad (a node whose backward is not implemented, as
    derivatives.yaml's ``not_implemented``); the inverse and the counts do not."""
    def program(L):
        x = L.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
        out = L.unique(x, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        return obs(list(outs)), attempt(lambda: outs[0].sum().backward())
    same(program)


# ---- gradcheck -----------------------------------------------------------------------------

def _gradcheck_outcome(L, fn, inputs, **kwargs):
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            res = L.autograd.gradcheck(fn, inputs, **kwargs)
        except (RuntimeError, ValueError, AssertionError) as e:
            res = (type(e).__name__, _norm(str(e)).split("\n")[0][:90])
    return res, [str(x.message)[:60] for x in w]


def _hooked(L, bump):
    def fn(x):
        y = x.clone()
        y.register_hook(lambda g: g + bump)
        return y
    return fn


def _jittery(L, jitter):
    class Jitter(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * (1 + L.rand_like(g) * jitter)
    return Jitter.apply


@pytest.mark.parametrize("case", [
    "float32 input", "no input requires grad", "stride 0", "output shape changes",
    "output dtype changes", "constant output", "no outputs", "hook adds a constant",
    "hook adds a constant, no raise", "jitter", "jitter within nondet_tol", "mixed outputs"])
def test_gradcheck_checks(case):
    """gradcheck's input checks (warning, ValueError, RuntimeError, raised whatever
    ``raise_exception``), the shape/dtype check under perturbation (AssertionError), and the
    GradcheckErrors of PyTorch's slow mode: nonzero numerical gradient without differentiable
    outputs, backward not reentrant beyond ``nondet_tol``, backward not multiplied by
    grad_output, Jacobian mismatch."""
    def program(L):
        d = L.float64
        x = L.tensor([1.0, 2.0], dtype=d, requires_grad=True)
        one = L.ones(1, dtype=d, requires_grad=True)
        if case == "float32 input":
            return _gradcheck_outcome(L, lambda t: t * 2, (L.ones(2, requires_grad=True),),
                                      atol=1e-1)
        if case == "no input requires grad":
            return _gradcheck_outcome(L, lambda t: t, (L.ones(2, dtype=d),),
                                      raise_exception=False)
        if case == "stride 0":
            return _gradcheck_outcome(L, lambda t: t, (one.expand(2, 2),),
                                      raise_exception=False)
        if case == "output shape changes":
            return _gradcheck_outcome(
                L, lambda t: L.cat([t, t]) if bool((t >= 1).all()) else t, (one,))
        if case == "output dtype changes":
            return _gradcheck_outcome(
                L, lambda t: t.to(L.float32) if bool((t >= 1).all()) else t, (one,))
        if case == "constant output":
            return _gradcheck_outcome(L, lambda t: t.detach() * 2, (x,), raise_exception=False)
        if case == "no outputs":
            return _gradcheck_outcome(L, lambda t: (), (x,))
        if case.startswith("hook adds a constant"):
            return _gradcheck_outcome(L, _hooked(L, 1e-2), (one,), atol=1e-1,
                                      raise_exception=case.endswith("constant"))
        if case.startswith("jitter"):
            tol = {"nondet_tol": 1e-3} if case.endswith("tol") else {}
            return _gradcheck_outcome(L, _jittery(L, 1e-6), (x,), **tol)
        return _gradcheck_outcome(L, lambda t: (L.ones_like(t), t.square()), (x,))
    same(program)


@pytest.mark.parametrize("view", [False, True])
def test_mark_dirty_saved_tensor(view):
    """A dirty input saved for backward is checked against its version after the forward (and
    the dirty bump), as PyTorch saves once the forward returned."""
    def program(L):
        class Double(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 + x * 0

        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = a.clone()
        y = Double.apply(b[:] if view else b)
        return attempt(lambda: y.sum().backward()), obs(a.grad)
    same(program)


def test_custom_function_graph_freed_by_reference_counts():
    """A custom function's node keeps neither its dirty nor its non-differentiable outputs (nor
    a saved dirty view): with the garbage collector off the tensors go with their last name."""
    import gc
    import weakref

    class Keep(sk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class Split(sk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            n = x * 3
            ctx.mark_non_differentiable(n)
            return x * 2, n

        @staticmethod
        def backward(ctx, g, gn):
            return g * 2

    gc.disable()
    try:
        x = sk.tensor([1.0], requires_grad=True).clone().view_as(sk.ones(1))
        Keep.apply(x)
        ref = weakref.ref(x)
        del x
        assert ref() is None
        outs = Split.apply(sk.tensor([1.0], requires_grad=True))
        refs = [weakref.ref(o) for o in outs]
        del outs
        assert all(r() is None for r in refs)
    finally:
        gc.enable()
