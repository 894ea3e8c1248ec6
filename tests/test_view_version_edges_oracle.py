"""Edges of version counters, view tracking and inference mode (SEMANTICS.md §2-§4), run as the
same program on subclass_kit and on torch (the oracle) and compared observation by observation:

- creating a view of a stale no-grad / inference / multi-output view (§3.4 "or creating a view
  of it");
- the view+in-place message of views without grad_fn, per CreationMeta (§3.4);
- ``resize_`` of tensors requiring grad, with grad on, under no_grad, in inference mode (§3.3);
- a version counter shared by two mutated arguments of one op moves once per argument (§2.2);
- ``view(dtype)`` is no view for inference purposes (§4.2);
- wrapper-subclass views made inside inference mode of a normal wrapper (§4.2).
"""

import contextlib

import pytest
from oracle import Wrapper

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")
hypothesis = pytest.importorskip("hypothesis", reason="hypothesis draws the dtype views")
from hypothesis import given
from hypothesis import strategies as st


def version(t):
    try:
        return t._version
    except RuntimeError as e:
        return str(e)


def observe(t, root=None):
    """What we compare about a result tensor."""
    return {"shape": tuple(t.shape), "version": version(t), "inference": t.is_inference(),
            "is_view": t._is_view(), "base_is_root": root is not None and t._base is root,
            "requires_grad": t.requires_grad, "values": t.detach().tolist()}


def run(L, program, *args):
    """Run ``program(L, log, *args)``; an exception becomes the last log entry."""
    log = []
    try:
        program(L, log, *args)
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        log.append(("raised", type(e).__name__, str(e)))
    return log


def same(program, *args):
    ours, theirs = run(sk, program, *args), run(torch, program, *args)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"


def context(L, name):
    return {"grad": contextlib.nullcontext, "no_grad": L.no_grad,
            "inference": L.inference_mode}[name]()


CONTEXTS = ["grad", "no_grad", "inference"]


# -- 1. a view of a stale no-grad / inference / multi-output view ---------------------------------
def _stale_no_grad(L):
    a = L.ones(2, 3, requires_grad=True)
    with L.no_grad():
        v = a[0]
        v.add_(1)
    return a, v


def _stale_inference(L):
    a = L.ones(2, 3, requires_grad=True)
    with L.inference_mode():
        v = a[0]
        v.add_(1)
    return a, v


def _multi_sibling(L):
    a = L.ones(2, 3, requires_grad=True)
    u0, u1 = a.unbind(0)
    with L.no_grad():
        u0.mul_(2)
    return a, u1


def _multi_self(L):
    a = L.ones(2, 3, requires_grad=True)
    u0, _ = a.unbind(0)
    with L.no_grad():
        u0.mul_(2)
    return a, u0


def _split_piece(L):
    a = L.ones(2, 3, requires_grad=True)
    _, p1 = a.split(1)
    with L.no_grad():
        a.add_(1)
    return a, p1[0]


def _grad_view_of_no_grad_view(L):
    a = L.ones(2, 3, requires_grad=True)
    with L.no_grad():
        v = a[0]
    w = v[0:3]              # made with grad on: has a grad_fn, CreationMeta NO_GRAD_MODE
    with L.no_grad():
        a.add_(1)
    return a, w


def _default_view(L):       # DEFAULT: regenerated, never an error
    a = L.ones(2, 3, requires_grad=True)
    v = a[0]
    with L.no_grad():
        a.add_(1)
    return a, v


def _base_without_grad(L):  # base not requiring grad: no grad_fn to read, no error
    a = L.ones(2, 3)
    with L.no_grad():
        v = a[0]
        v.add_(1)
    return a, v


def _fresh_no_grad_view(L):  # not mutated since it was made: no error
    a = L.ones(2, 3, requires_grad=True)
    with L.no_grad():
        v = a[0]
    return a, v


SOURCES = [_stale_no_grad, _stale_inference, _multi_sibling, _multi_self, _split_piece,
           _grad_view_of_no_grad_view, _default_view, _base_without_grad, _fresh_no_grad_view]

VIEWS = {
    "slice": lambda L, t: t[0:2],
    "select": lambda L, t: t[0],
    "view": lambda L, t: t.view(3),
    "t": lambda L, t: t.t(),
    "unsqueeze": lambda L, t: t[None],
    "expand": lambda L, t: t.expand(2, 3),
    "as_strided": lambda L, t: t.as_strided((2,), (1,)),
    "alias": lambda L, t: t[...],
    "reshape": lambda L, t: t.reshape(-1),
    "narrow": lambda L, t: t.narrow(0, 1, 2),
    "unfold": lambda L, t: t.unfold(0, 2, 1),
    "unbind": lambda L, t: t.unsqueeze(0).unbind(0)[0],
    "split": lambda L, t: t.split(2)[1],
    "view_dtype": lambda L, t: t.view(L.int32),   # not differentiable: reads no grad_fn
    "detach": lambda L, t: t.detach(),            # not differentiable: reads no grad_fn
}


def p_view_of(L, log, source, view, ctx):
    root, src = source(L)
    with context(L, ctx):
        out = VIEWS[view](L, src)
    log.append(observe(out, root))
    log.append((version(root), version(src)))


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("source", SOURCES, ids=lambda f: f.__name__.strip("_"))
def test_view_of_stale_view(source, view, ctx):
    same(p_view_of, source, view, ctx)


def p_view_of_stale_view_twice(L, log):
    """The error does not consume the staleness: a second attempt raises again, and grad_fn
    reads raise the same text."""
    _, v = _multi_sibling(L)
    for attempt in (lambda: v.view(3), lambda: v.grad_fn, lambda: v[0:1]):
        try:
            attempt()
            log.append("ok")
        except RuntimeError as e:
            log.append(str(e))


def test_view_of_stale_view_repeats():
    same(p_view_of_stale_view_twice)


# -- 2. view+in-place message of views without grad_fn -------------------------------------------
def _made(L, x, meta):
    if meta == "default":
        return x[0]
    if meta == "multi":
        return x.unbind(0)[1]
    if meta == "split":
        return x.split(1)[0][0]
    with context(L, "no_grad" if meta == "no_grad" else "inference"):
        return x[0]


INPLACE = {
    "add_": lambda L, v, rg: v.add_(rg),
    "copy_": lambda L, v, rg: v.copy_(rg),
    "mul_": lambda L, v, rg: v.mul_(rg),
    "setitem": lambda L, v, rg: v.__setitem__(slice(0, 2), rg[:2]),
}


def p_rebase_without_grad_fn(L, log, meta, op, of_view):
    x = L.ones(2, 3)
    v = _made(L, x, meta)
    if of_view:
        v = v[0:3]          # a grad-mode view of it: still no grad_fn (base needs no grad)
    rg = L.full((3,), 2.0, requires_grad=True)
    try:
        INPLACE[op](L, v, rg)
        log.append("ok")
    except RuntimeError as e:
        log.append(str(e))
    log.append((x._version, x.tolist()))


@pytest.mark.parametrize("of_view", [False, True])
@pytest.mark.parametrize("op", list(INPLACE))
@pytest.mark.parametrize("meta", ["default", "multi", "split", "no_grad", "inference"])
def test_rebase_message_without_grad_fn(meta, op, of_view):
    same(p_rebase_without_grad_fn, meta, op, of_view)


# -- 3. resize_ of tensors requiring grad ----------------------------------------------------------
def _leaf(L):
    return L.ones(3, requires_grad=True)


def _view_of_leaf(L):
    return L.ones(4, requires_grad=True)[1:]


def _no_grad_view_of_leaf(L):
    with L.no_grad():
        return L.ones(4, requires_grad=True)[1:]


def _inference_rg(L):
    with L.inference_mode():
        return L.ones(3, requires_grad=True)


def _plain(L):
    return L.ones(3)


def _view_of_plain(L):
    return L.ones(4)[1:]


RESIZED = [_leaf, _view_of_leaf, _no_grad_view_of_leaf, _inference_rg, _plain, _view_of_plain]


def p_resize(L, log, make, ctx, size):
    t = make(L)
    v0 = version(t)
    try:
        with context(L, ctx):
            r = t.resize_(size)
        log.append(r is t)
    except RuntimeError as e:
        log.append(str(e))
    log.append((v0, version(t), tuple(t.shape), t.requires_grad, t.is_inference()))


@pytest.mark.parametrize("size", [(3,), (5,), (2, 2), (0,)], ids=str)
@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("make", RESIZED, ids=lambda f: f.__name__.strip("_"))
def test_resize_requires_grad(make, ctx, size):
    if make is _inference_rg and ctx != "inference" and size != (3,):
        pytest.skip("sk refuses in-place on an inference tensor before writing (differences.md)")
    same(p_resize, make, ctx, size)


# -- 4. a counter shared by two mutated arguments moves once per argument ------------------------
def _outs_rows(L, bb):
    return bb[0], bb[1]


def _outs_detached(L, bb):
    return bb[0], bb.detach()[1]


def _outs_data(L, bb):          # .data: a fresh counter, so one bump each
    return bb[0], bb.data[1]


def _outs_fresh(L, bb):
    return bb[0], L.zeros(2, dtype=L.int64)


def _outs_unbind(L, bb):
    return bb.unbind(0)


OUTS = [_outs_rows, _outs_detached, _outs_data, _outs_fresh, _outs_unbind]


def p_shared_counter(L, log, name, make_outs, values):
    x = L.tensor(values)
    bb = L.zeros(2, 2, dtype=L.int64)
    outs = make_outs(L, bb)
    getattr(L, name)(x, 1, out=outs)
    log.append((bb._version, [version(o) for o in outs], bb.tolist(), outs[1].tolist()))


@given(values=st.lists(st.lists(st.integers(-5, 5), min_size=2, max_size=2), min_size=2,
                       max_size=2))
@pytest.mark.parametrize("make_outs", OUTS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("name", ["max", "min"])
def test_shared_counter_bumps_per_argument(name, make_outs, values):
    same(p_shared_counter, name, make_outs, values)


def p_shared_counter_wrapper(L, log, name):
    """The same through a subclass handler: the wrapper's counter moves once per argument, the
    inner tensor's not at all (its views were made below autograd)."""
    x = wrap(L, L.tensor([[1, 5], [7, 0]]))
    bb = wrap(L, L.zeros(2, 2, dtype=L.int64))
    getattr(L, name)(x, 1, out=(bb[0], bb[1]))
    log.append((bb._version, bb.elem._version, bb.elem.tolist()))


@pytest.mark.parametrize("name", ["max", "min"])
def test_shared_counter_wrapper(name):
    same(p_shared_counter_wrapper, name)


def test_shared_counter_under_debug_asserts():
    """The debug-assert mode expects one bump per mutated argument sharing a counter."""
    from subclass_kit.modes.debug_assert import DebugAssertMode
    x = sk.tensor([[1, 5], [7, 0]])
    bb = sk.zeros(2, 2, dtype=sk.int64)
    other = sk.zeros(2, dtype=sk.int64)
    with DebugAssertMode():
        sk.max(x, 1, out=(bb[0], bb[1]))
        sk.min(x, 1, out=(bb[0], other))
    assert (bb._version, other._version) == (3, 1)


# -- 5. view(dtype) is no view for inference purposes -------------------------------------------
DTYPES = ["float32", "int32", "int16", "float64", "uint8", "int64", "float16"]


def _dtype_view_case(L, log, where, src_dtype, dst_dtype, n):
    src_dtype, dst_dtype = getattr(L, src_dtype), getattr(L, dst_dtype)
    if where.startswith("inference_input"):
        with L.inference_mode():
            x = L.arange(n).to(src_dtype)
    else:
        x = L.arange(n).to(src_dtype)
    ctx = {"normal_in_mode": "inference", "normal_outside": "grad", "normal_no_grad": "no_grad",
           "inference_input_outside": "grad", "inference_input_no_grad": "no_grad",
           "inference_input_in_mode": "inference"}[where]
    with context(L, ctx):
        v = x.view(dst_dtype)
    log.append(observe(v))
    log.append(version(x))
    for target in (v, x):          # in-place outside the mode, on the view then on the input
        try:
            target.zero_()
            log.append("ok")
        except RuntimeError as e:
            log.append(str(e))
        log.append((version(x), version(v)))


WHERE = ["normal_in_mode", "normal_outside", "normal_no_grad", "inference_input_outside",
         "inference_input_no_grad", "inference_input_in_mode"]


@given(src=st.sampled_from(DTYPES), dst=st.sampled_from(DTYPES), n=st.sampled_from([4, 8, 6]))
@pytest.mark.parametrize("where", WHERE)
def test_view_dtype_inference(where, src, dst, n):
    same(_dtype_view_case, where, src, dst, n)


def p_view_dtype_then_view(L, log):
    """Views of a view(dtype) made in inference mode are untracked inference tensors."""
    x = L.arange(4.0)
    with L.inference_mode():
        v = x.view(L.int32)
        w = v[0:2]
        log.append((observe(v), observe(w)))
    with L.inference_mode():
        it = L.arange(4.0)
    u = it.view(L.int16)
    log.append((observe(u), observe(u[1:], u)))


def test_view_dtype_views():
    same(p_view_dtype_then_view)


# -- 6. wrapper-subclass views inside inference mode -------------------------------------------
class TorchWrapper(torch.Tensor):
    """The torch twin of ``oracle.Wrapper``: ``_make_wrapper_subclass``, unwrap, compute, rewrap,
    ``return_and_correct_aliasing``."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, elem):
        w = torch.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(),
                                                storage_offset=elem.storage_offset(),
                                                dtype=elem.dtype, device=elem.device)
        w.elem = elem
        return w

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        from torch.utils._python_dispatch import return_and_correct_aliasing
        from torch.utils._pytree import tree_map_only
        kwargs = kwargs or {}
        out = func(*tree_map_only(cls, lambda t: t.elem, args),
                   **tree_map_only(cls, lambda t: t.elem, kwargs))
        out = tree_map_only(torch.Tensor, cls, out)
        return return_and_correct_aliasing(func, args, kwargs, out)

    def __tensor_flatten__(self):
        return ["elem"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return TorchWrapper(inner["elem"])


def wrap(L, t):
    return Wrapper.wrap(t) if L is sk else TorchWrapper(t)


WRAPPER_OPS = {
    "select": lambda L, w: w[0],
    "slice": lambda L, w: w[:, 1:],
    "view": lambda L, w: w.view(6),
    "t": lambda L, w: w.t(),
    "alias": lambda L, w: w[...],
    "unbind": lambda L, w: w.unbind(0)[1],
    "split": lambda L, w: w.split(1)[0],
    "detach": lambda L, w: w.detach(),
    "view_dtype": lambda L, w: w.view(L.int32),
    "add": lambda L, w: w + 1,
}


def p_wrapper_view(L, log, op, made_in, ctx):
    if made_in == "inference":
        with L.inference_mode():
            x = wrap(L, L.arange(6.0).view(2, 3))
    else:
        x = wrap(L, L.arange(6.0).view(2, 3))
    with context(L, ctx):
        out = WRAPPER_OPS[op](L, x)
    log.append((type(out).__name__.endswith("Wrapper"), out.is_inference(), out._is_view(),
                out._base is x, version(out), version(x)))
    try:
        out.add_(1)             # outside the mode
        log.append("ok")
    except RuntimeError as e:
        log.append(str(e))
    log.append((version(out), version(x)))


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("made_in", ["normal", "inference"])
@pytest.mark.parametrize("op", list(WRAPPER_OPS))
def test_wrapper_view_inference(op, made_in, ctx):
    same(p_wrapper_view, op, made_in, ctx)
