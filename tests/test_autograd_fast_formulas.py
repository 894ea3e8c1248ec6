"""The autograd formulas' numpy fast paths (``modes/autograd/derivatives/fast.py``) give what
the formulas they stand in for give, and step aside whenever something could see the ops.

Each case differentiates one call twice with ``sk.autograd.grad``: once as is (the fast path
serves the calls it covers) and once with the ops' kernels marked replaced
(``OpOverload._replaced``, what ``sk.library.impl`` sets), so the formula runs. The gradients
must agree bit for bit, with their sizes, strides, storage offsets, dtypes, versions and
view-ness (a hook sees the bias's gradient as a view of the summed rows in PyTorch too).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from oracle import SkOpLog
from subclass_kit.modes.autograd.derivatives import fast

FORMULA_OPS = (sk.ops.mm.default, sk.ops.t.default, sk.ops.sum.dim_IntList,
               sk.ops.view.default, sk.ops.mul.Tensor, sk.ops.div.Tensor,
               sk.ops.expand.default, sk.ops.tanh_backward.default, sk.ops.detach.default)


@pytest.fixture
def served(monkeypatch):
    """A list that gets one entry per call the matrix fast paths serve."""
    calls = []
    products = fast._products

    def counting(*args):
        calls.append(1)
        return products(*args)
    monkeypatch.setattr(fast, "_products", counting)
    return calls


def _formulas_only(monkeypatch):
    for op in FORMULA_OPS:
        monkeypatch.setattr(op, "_replaced", True, raising=False)


def _matrix(draw, rows, cols, dtype, rng):
    """A ``rows x cols`` operand: contiguous, column-major (a transposed weight), strided or
    an offset view."""
    kind = draw(st.sampled_from(["contiguous", "column_major", "strided", "offset"]))
    def make(shape):
        return sk.tensor(rng.integers(-8, 9, size=shape) / 8 + rng.standard_normal(shape),
                         dtype=dtype)
    if kind == "column_major":
        return make((cols, rows)).t()
    if kind == "strided":
        return make((rows, 2 * cols))[:, ::2]
    if kind == "offset":
        return make((rows + 1, cols))[1:]
    return make((rows, cols))


def _assert_same(got, want):
    assert (got is None) == (want is None)
    if got is None:
        return
    assert type(got) is type(want)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got._version == want._version
    assert (got._base is None) == (want._base is None)
    assert got.untyped_storage().nbytes() == want.untyped_storage().nbytes()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@st.composite
def _product_calls(draw):
    """(op name, args, kwargs, differentiated args, output gradient)."""
    dtype = draw(st.sampled_from([sk.float32, sk.float64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n, k, m = (draw(st.integers(1, 5)) for _ in range(3))
    mat1, mat2 = _matrix(draw, n, k, dtype, rng), _matrix(draw, k, m, dtype, rng)
    kwargs = {}
    if draw(st.booleans()):
        name = "addmm"
        bias_shape = draw(st.sampled_from([(m,), (n, m), (1, m), ()]))
        bias = sk.tensor(rng.standard_normal(bias_shape), dtype=dtype)
        args = [bias, mat1, mat2]
        if draw(st.booleans()):
            kwargs = {"alpha": draw(st.sampled_from([1, 2.0])),
                      "beta": draw(st.sampled_from([1, 0.5]))}
    else:
        name, args = "mm", [mat1, mat2]
    wanted = draw(st.lists(st.booleans(), min_size=len(args), max_size=len(args)).filter(any))
    grad_kind = draw(st.sampled_from(["contiguous", "transposed", "expanded"]))
    if grad_kind == "transposed":
        grad = sk.tensor(rng.standard_normal((m, n)), dtype=dtype).t()
    elif grad_kind == "expanded":
        grad = sk.tensor(rng.standard_normal((1, m)), dtype=dtype).expand(n, m)
    else:
        grad = sk.tensor(rng.standard_normal((n, m)), dtype=dtype)
    return name, args, kwargs, wanted, grad


def _grads(name, args, kwargs, wanted, grad):
    leaves = [a.detach().requires_grad_(w) for a, w in zip(args, wanted)]
    # a non-leaf input (h = leaf * 1) as a hidden layer's activation is
    inputs = [leaf * 1 if w else leaf for leaf, w in zip(leaves, wanted)]
    out = getattr(sk, name)(*inputs, **kwargs)
    chosen = [i for i, w in zip(inputs, wanted) if w]
    return sk.autograd.grad(out, chosen, grad)


def _operand(draw, sizes, dtype, rng):
    """A float tensor of ``sizes``: contiguous, or strided, transposed or expanded."""
    kind = draw(st.sampled_from(["contiguous", "contiguous", "strided", "transposed",
                                 "expanded"]))
    def make(shape):
        return sk.tensor(rng.standard_normal(shape), dtype=dtype)
    if kind == "strided" and sizes:
        return make(sizes[:-1] + (2 * sizes[-1],))[..., ::2]
    if kind == "transposed" and len(sizes) >= 2:
        return make(sizes[:-2] + (sizes[-1], sizes[-2])).transpose(-1, -2)
    if kind == "expanded" and sizes:
        return make((1,) + sizes[1:]).expand(sizes)
    return make(sizes)


@st.composite
def _pointwise_calls(draw):
    """``mul`` of two tensors (shapes equal or broadcast, possibly mixed dtypes), ``tanh`` of
    one (its saved output read by the fast path) or ``mean`` of one (its loss gradient 0-d;
    ``dtype=`` given sometimes)."""
    dtype = draw(st.sampled_from([sk.float32, sk.float64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    sizes = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    a = _operand(draw, sizes, dtype, rng)
    if draw(st.booleans()):
        other_sizes = sizes if draw(st.booleans()) or not sizes else (1,) + sizes[1:]
        other_dtype = dtype if draw(st.booleans()) else sk.float64
        b = _operand(draw, other_sizes, other_dtype, rng)
        wanted = draw(st.lists(st.booleans(), min_size=2, max_size=2).filter(any))
        out_sizes = tuple(np.broadcast_shapes(sizes, other_sizes))
        grad_dtype = sk.promote_types(dtype, other_dtype)
        grad = _operand(draw, out_sizes, grad_dtype, rng)
        return "mul", [a, b], {}, wanted, grad
    if draw(st.booleans()):
        return "tanh", [a], {}, [True], _operand(draw, sizes, dtype, rng)
    kwargs = {"dtype": sk.float64} if draw(st.booleans()) else {}
    grad = sk.tensor(rng.standard_normal(()), dtype=kwargs.get("dtype", dtype))
    return "mean", [a], kwargs, [True], grad



@settings(max_examples=300, deadline=None)
@given(st.one_of(_product_calls(), _pointwise_calls()))
def test_fast_paths_match_their_formulas(call):
    name, args, kwargs, wanted, grad = call
    got = _grads(name, args, kwargs, wanted, grad)
    with pytest.MonkeyPatch.context() as m:
        _formulas_only(m)
        want = _grads(name, args, kwargs, wanted, grad)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_same(g, w)


@pytest.mark.parametrize("name", ["mm", "addmm", "mul", "tanh"])
@pytest.mark.parametrize("formulas_only", [False, True])
def test_a_saved_tensor_modified_in_place_raises_as_with_the_formula(name, formulas_only):
    """The fast paths read saved tensors only when ``unpack`` would return them: one modified
    in place since it was saved falls back to the formula, which raises PyTorch's error
    naming the versions (the same text either way)."""
    a = sk.tensor(np.arange(6.0).reshape(2, 3) / 7).requires_grad_()
    b = sk.tensor(np.arange(12.0).reshape(3, 4) / 5).requires_grad_()
    h = a * 1
    if name == "mm":
        out, modified = sk.mm(h, b), h
    elif name == "addmm":
        out, modified = sk.addmm(sk.zeros(4, dtype=sk.float64), h, b), h
    elif name == "mul":
        out, modified = h * h, h
    else:
        out = h.tanh()
        modified = out
    with sk.no_grad():
        modified.mul_(2)
    with pytest.MonkeyPatch.context() as m:
        if formulas_only:
            _formulas_only(m)
        with pytest.raises(RuntimeError, match=r"modified by an inplace operation: .* is at "
                                               r"version 1; expected version 0 instead"):
            out.sum().backward()


# (DebugAssertMode, which ``--debug-asserts`` runs every test under, is a mode: nothing is
# served while it watches)
@pytest.mark.no_debug_asserts
def test_the_tiny_mlp_backward_is_served_and_matches(served, monkeypatch):
    """The MLP the benchmark trains: every AddmmBackward0 of its backward takes the fast
    path, and every parameter's ``.grad`` is what the formulas give."""
    rng = np.random.default_rng(0)
    sizes = [16, 16, 16, 1]
    def run():
        params = []
        for fan_in, fan_out in zip(sizes, sizes[1:]):
            params.append(sk.tensor(rng.standard_normal((fan_in, fan_out)).astype(np.float32),
                                    requires_grad=True))
            params.append(sk.zeros(fan_out, requires_grad=True))
        h = sk.tensor(rng.standard_normal((4, 16)).astype(np.float32))
        for i in range(0, len(params), 2):
            h = sk.addmm(params[i + 1], h, params[i])
            if i + 2 < len(params):
                h = h.tanh()
        (h * h).mean().backward()
        return [p.grad for p in params]
    state = rng.bit_generator.state
    got = run()
    assert len(served) == 3
    rng.bit_generator.state = state
    with monkeypatch.context() as m:
        _formulas_only(m)
        want = run()
    assert len(served) == 3
    for g, w in zip(got, want):
        _assert_same(g, w)


def _linear_backward():
    w = sk.ones(3, 2, requires_grad=True)
    b = sk.zeros(2, requires_grad=True)
    x = sk.ones(4, 3)
    sk.addmm(b, x, w).sum().backward()
    return w.grad, b.grad


def test_a_mode_sees_the_formulas_ops(served):
    """Under a dispatch mode the formula runs, so the mode sees PyTorch's op stream."""
    log = SkOpLog()
    with log:
        _linear_backward()
    assert not served
    backward = log.ops[log.ops.index("ones_like"):]
    assert [n for n in backward if n in ("mm", "t", "sum", "view")] == ["t", "mm", "sum",
                                                                         "view"]


def test_a_replaced_kernel_is_called_by_the_backward(served, monkeypatch):
    """A cpu kernel registered for ``mm`` after import (``sk.library.impl``) runs in the
    backward, as an overridden ATen kernel does in PyTorch's."""
    op = sk.ops.mm.default
    builtin = op._kernels["cpu"]
    calls = []

    def logged_mm(a, b):
        calls.append(1)
        return builtin(a, b)
    monkeypatch.setitem(op._kernels, "cpu", builtin)
    monkeypatch.setattr(op, "_replaced", False, raising=False)
    sk.library.impl(op, "cpu", logged_mm)
    assert not sk.fast_path.unobserved([op])
    w_grad, _ = _linear_backward()
    assert calls and not served
    np.testing.assert_array_equal(w_grad.numpy(), np.full((3, 2), 4.0, np.float32))


def test_create_graph_runs_the_formula(served):
    """With ``create_graph=True`` the backward's ops are recorded: the fast path stays out."""
    w = sk.ones(3, 2, requires_grad=True, dtype=sk.float64)
    x = sk.ones(4, 3, dtype=sk.float64, requires_grad=True)
    (gx,) = sk.autograd.grad(sk.mm(x, w).pow(2).sum(), [x], create_graph=True)
    assert not served and gx.grad_fn is not None
    gx.sum().backward()
    # sum(gx) = 2 sum_icj (xw)_ic w_jc, so d/dw_ab = 2 (sum_i x_ia sum_j w_jb + sum_i (xw)_ib):
    # 2 (4*3 + 4*3) with x and w all ones
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 48.0))


@pytest.mark.no_debug_asserts
def test_unobserved_follows_modes_and_replaced_kernels(monkeypatch):
    op = sk.ops.mm.default
    assert sk.fast_path.unobserved([op])
    with sk.DispatchMode():
        assert not sk.fast_path.unobserved([op])
    assert sk.fast_path.unobserved([op])
    monkeypatch.setattr(op, "_replaced", True, raising=False)
    assert not sk.fast_path.unobserved([op])
    assert sk.fast_path.unobserved([sk.ops.t.default])


def test_fast_path_empty_is_a_kernel_output():
    t = sk.fast_path.empty((2, 3), sk.float64)
    like = sk.ops.mm.default(sk.ones(2, 4, dtype=sk.float64), sk.ones(4, 3, dtype=sk.float64))
    assert (t.shape, t.stride(), t.dtype, t._version) == (like.shape, like.stride(),
                                                           like.dtype, 0)
    assert t.untyped_storage().nbytes() == like.untyped_storage().nbytes()
    t.resize_(4, 4)         # resizable, as a kernel's output (a from_numpy tensor is not)
    sk.fast_path.array(t)[...] = 1.5
    assert t.sum().item() == 24.0
    with sk.inference_mode():
        assert sk.fast_path.empty((1,), sk.float32).is_inference()


@pytest.mark.parametrize("dtype", [sk.float32, sk.float64])
@pytest.mark.parametrize("inference", [False, True])
def test_the_implicit_gradient_of_a_loss_is_ones_likes(dtype, inference):
    """``backward()`` on a 0-d loss starts from ``ones_like(loss)``; made with numpy while
    nothing could see the call, it is the tensor the op makes (a hook on the loss sees it)."""
    from subclass_kit.modes.autograd import engine
    loss = sk.tensor(2.0, dtype=dtype, requires_grad=True) * 3
    with sk.inference_mode(inference):
        got = engine._ones_like(loss)
        with sk.no_grad():
            want = sk.ops.ones_like.default(loss)
    assert got.is_inference() == want.is_inference() == inference
    if not inference:
        _assert_same(got, want)
        seen = []
        loss.register_hook(seen.append)
        loss.backward()
        _assert_same(seen[0], want)
