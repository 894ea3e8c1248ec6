"""``select_backward``, ``slice_backward`` and ``diagonal_backward`` against PyTorch's ops.

The backward of ``select``/``slice``/``diagonal`` is one op each in PyTorch's backward pass
(what a dispatch mode sees during ``backward()``); ours calls the same ops
(modes/autograd/derivatives/views.py, kernels in kernels/scatter.py). Checked here: the ops
themselves on random arguments (values, sizes, strides, dtype, errors), the backward op streams
with their arguments, the double-backward nodes (``SelectBackwardBackward0`` ...) and their
values, and ``gradgradcheck`` in float64. The generic sweeps (meta vs cpu, debug asserts,
bfloat16, autograd samples) run the op table's samples (tests/samples_table.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SkOpLog, assert_same, assert_same_error, to_sk, torch_op_log

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
hypothesis = pytest.importorskip("hypothesis", reason="hypothesis draws the arguments")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sk.autograd.install()
_INT64_MAX = (1 << 63) - 1


def _norm(x):
    if isinstance(x, (torch.Tensor, sk.Tensor)):
        return ("T", tuple(x.shape))
    if isinstance(x, (list, tuple)):
        return [_norm(v) for v in x]
    return x


# (name, view program on a (4, 5, 3) tensor)
PROGRAMS = [
    ("index", lambda x: x[0]),
    ("index_two", lambda x: x[1, -2]),
    ("slice", lambda x: x[:, 1:3]),
    ("slice_step", lambda x: x[::2]),
    ("slice_open_start", lambda x: x[:-1]),
    ("slice_open_end", lambda x: x[1:]),
    ("narrow", lambda x: x.narrow(1, 1, 2)),
    ("diagonal", lambda x: x.diagonal()),
    ("diagonal_offset_dims", lambda x: x.diagonal(-1, 2, 0)),
    ("mixed", lambda x: x[1:, 2].diagonal(1)),
]
_IDS = [p[0] for p in PROGRAMS]


def _input(m, dtype="float64"):
    data = np.random.default_rng(0).standard_normal((4, 5, 3))
    return m.tensor(data, dtype=getattr(m, dtype), requires_grad=True)


def _backward_stream(m, view):
    x = _input(m, "float32")
    y = view(x)
    log = (torch_op_log if m is torch else SkOpLog)(overloads=True, args=_norm)
    with log:
        (y * y).sum().backward()
    return log.ops, x.grad


@pytest.mark.parametrize("view", [p[1] for p in PROGRAMS], ids=_IDS)
def test_backward_op_stream_is_torchs(view):
    theirs, grad_t = _backward_stream(torch, view)
    ours, grad_s = _backward_stream(sk, view)
    assert any(name.endswith("_backward.default") for name, _ in theirs)
    assert ours == theirs
    assert_same(grad_s, grad_t)


@pytest.mark.parametrize("view", [p[1] for p in PROGRAMS], ids=_IDS)
def test_double_backward_nodes_and_values_are_torchs(view):
    def run(m):
        x = _input(m)
        y = view(x)
        (g,) = m.autograd.grad((y * y * y).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        return g.grad_fn.name(), g, gg
    node_t, g_t, gg_t = run(torch)
    node_s, g_s, gg_s = run(sk)
    assert node_s == node_t
    assert_same(g_s, g_t)
    assert_same(gg_s, gg_t)


@pytest.mark.parametrize("view", [p[1] for p in PROGRAMS], ids=_IDS)
def test_gradgradcheck(view):
    x = _input(sk)
    assert sk.autograd.gradgradcheck(lambda a: view(a) ** 3, (x,))


@pytest.mark.parametrize("op,args", [
    ("select_backward", ([3, 4], 1, -1)),
    ("slice_backward", ([5, 4], 0, 1, _INT64_MAX, 2)),
    ("diagonal_backward", ([3, 4, 2], 1, 0, 2)),
])
def test_the_ops_gradgradcheck_directly(op, args):
    view = getattr(torch.ops.aten, op.replace("_backward", ""))
    shape = tuple(view(torch.zeros(args[0]), *args[1:]).shape)
    g = sk.tensor(np.random.default_rng(1).standard_normal(shape), dtype=sk.float64,
                  requires_grad=True)
    fn = getattr(sk.ops, op).default
    assert sk.autograd.gradcheck(lambda a: fn(a, *args) ** 2, (g,))
    assert sk.autograd.gradgradcheck(lambda a: fn(a, *args) ** 2, (g,))


# -- the ops on random arguments -------------------------------------------------------------
_DTYPES = st.sampled_from(["float32", "float64", "bfloat16", "int64"])


@st.composite
def _call(draw):
    """A random call (op name, grad shape, args), mostly valid: the view of zeros of
    ``input_sizes`` decides the grad's shape. About one call in six has a bad dim, index or
    step, or a grad that does not broadcast to the view."""
    def bad():
        return draw(st.integers(0, 5)) == 0

    op = draw(st.sampled_from(["select_backward", "slice_backward", "diagonal_backward"]))
    least = 0 if bad() else 2 if op == "diagonal_backward" else 1
    sizes = draw(st.lists(st.integers(0, 4) if bad() else st.integers(1, 4),
                          min_size=least, max_size=3))
    n = len(sizes)

    def a_dim():
        return draw(st.integers(-n - 1, n) if bad() or not n else st.integers(-n, n - 1))
    dim = a_dim()
    size = sizes[dim] if -n <= dim < n else 1
    if op == "select_backward":
        rest = (dim, draw(st.integers(-size - 2, size + 1) if bad() or not size else
                          st.integers(-size, size - 1)))
    elif op == "slice_backward":
        rest = (dim, draw(st.sampled_from([0, 1, -2, -100, 2])),
                draw(st.sampled_from([_INT64_MAX, 3, -1, 0, 100])),
                draw(st.integers(0, 3) if bad() else st.integers(1, 3)))
    else:
        other = a_dim()
        if n > 1 and (other - dim) % n == 0 and not bad():
            other = (dim + 1) % n
        rest = (draw(st.integers(-3, 3)), dim, other)
    try:
        view = getattr(torch.ops.aten, op.replace("_backward", ""))
        shape = list(view(torch.zeros(sizes), *rest).shape)
    except (IndexError, RuntimeError):
        shape = draw(st.lists(st.integers(0, 3), max_size=2))
    if shape and bad():
        shape[draw(st.integers(0, len(shape) - 1))] = draw(st.sampled_from([1, 7]))
    return op, shape, [sizes, *rest]


@given(call=_call(), dtype=_DTYPES, transposed=st.booleans())
def test_ops_match_torch(call, dtype, transposed):
    op, shape, args = call
    base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape[::-1] if transposed
                                                                      else shape) + 1
    theirs_g = torch.tensor(base, dtype=getattr(torch, dtype))
    if transposed:
        theirs_g = theirs_g.permute(list(range(len(shape) - 1, -1, -1)))
    ours_g = to_sk(theirs_g)
    fn_t = lambda: getattr(torch.ops.aten, op)(theirs_g, *args)  # noqa: E731
    fn_s = lambda: getattr(sk.ops, op)(ours_g, *args)  # noqa: E731
    try:
        theirs = fn_t()
    except (IndexError, RuntimeError):
        assert_same_error(fn_s, fn_t)
        return
    assert_same(fn_s(), theirs)
    meta = getattr(sk.ops, op)(ours_g.to("meta"), *args)
    assert meta.is_meta and meta.shape == fn_s().shape and meta.stride() == theirs.stride()


@pytest.mark.parametrize("view", [p[1] for p in PROGRAMS], ids=_IDS)
def test_forward_backward_graph_lowers_to_jax(view):
    """A captured forward + backward graph holds the backward ops; ``Graph.to_jax()`` lowers
    them (modes/jax_lowering.py) to torch's gradient."""
    jax = pytest.importorskip("jax", reason="JAX is the optional extra `jax` "
                                            "(pip install 'subclass-kit[jax]'); not installed")
    from subclass_kit.modes import functionalize, make_graph
    jax.config.update("jax_enable_x64", True)

    def step(m):
        def f(x, w):
            v = view(x)
            (g,) = m.autograd.grad(v * v * v, [x], [w])
            return g
        return f
    x = _input(sk).detach()
    w = sk.tensor(np.linspace(-1.0, 2.0, view(x).numel()).reshape(tuple(view(x).shape)))
    graph = make_graph(functionalize(step(sk)))(x.requires_grad_(), w)
    assert any(c.op.name.endswith("_backward") for c in graph.calls)
    ours = jax.jit(graph.to_jax())(*[jax.numpy.asarray(t.detach().numpy()) for t in (x, w)])
    theirs = step(torch)(_input(torch), torch.tensor(w.numpy()))
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=1e-12)
