"""Matrix products against torch: ``mm``, ``bmm``, ``addmm``, ``dot``, ``mv``, ``matmul``/``@``,
``linear`` and ``einsum``.

Each case builds the same inputs in both libraries (same storage bytes, sizes, strides, offset:
contiguous, transposed, expanded or strided views), runs both under a dispatch mode that logs
the ops, and compares the result (values, sizes, strides, dtype, ``_version``), the op stream
(``matmul(2D, 2D)`` is ``mm``; ``F.linear`` is ``t, addmm``...), and on failure the exception
class and text. Meta tensors must give the cpu result's metadata (one rule per op).
"""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for linear algebra")
pytest.importorskip("hypothesis", reason="hypothesis generates the shapes")
import torch.nn.functional as TF  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.fixture(autouse=True)
def _torch_einsum_left_to_right():
    """torch.einsum reorders contractions with opt_einsum when that package is installed (JAX
    brings it); subclass_kit contracts left to right, as torch does without it."""
    backend = torch.backends.opt_einsum
    before = backend.enabled
    backend.enabled = False
    yield
    backend.enabled = before
from oracle import SkOpLog, assert_same, normalize_message, to_sk, torch_op_log  # noqa: E402

F = sk.nn.functional


# -- helpers -------------------------------------------------------------------------------------
def SkLog():
    return SkOpLog()

def TorchLog():
    return torch_op_log()


def make(shape, layout="contig", dtype=torch.float32, seed=0):
    """A torch tensor of ``shape`` with the given memory layout."""
    gen = torch.Generator().manual_seed(seed)
    shape = tuple(shape)
    if layout == "t" and len(shape) >= 2:
        base = torch.randn(shape[::-1], generator=gen).to(dtype)
        return base.permute(*range(len(shape) - 1, -1, -1))
    if layout == "expand" and len(shape) >= 1:
        return torch.randn((1,) + shape[1:], generator=gen).to(dtype).expand(shape)
    if layout == "step" and len(shape) >= 1:
        base = torch.randn(shape[:-1] + (2 * shape[-1],), generator=gen).to(dtype)
        return base[..., ::2]
    return torch.randn(shape, generator=gen).to(dtype)


def sk_twin(t):
    """``to_sk`` of a copy: ``to_sk`` reads through ``.numpy()``, which would make ``t``'s own
    storage non-resizable (and break torch's out= resizing)."""
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = t.detach().as_strided((n,), (1,), 0).clone()
    return to_sk(flat.as_strided(tuple(t.shape), t.stride(), t.storage_offset()))


def run_both(torch_fn, sk_fn, *targs):
    """Run both functions on equal inputs; returns ((torch result, ops), (sk result, ops)),
    a result being the exception when the call raised."""
    sargs = [sk_twin(a) if isinstance(a, torch.Tensor) else a for a in targs]
    tlog, slog = TorchLog(), SkLog()
    try:
        with tlog:
            tres = torch_fn(*targs)
    except Exception as e:  # noqa: BLE001 - the oracle's exception is the expected result
        tres = e
    try:
        with slog:
            sres = sk_fn(*sargs)
    except Exception as e:  # noqa: BLE001
        sres = e
    return (tres, [o for o in tlog.ops if o != "lift_fresh"]), (sres, slog.ops)


def assert_same_error(ours, theirs):
    assert isinstance(ours, Exception), f"sk returned a result, torch raised {theirs!r}"
    assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
    assert str(ours) in (str(theirs), normalize_message(str(theirs))), (str(ours), str(theirs))


def check(torch_fn, sk_fn, *targs, ops=True, rtol=None, atol=None):
    """Compare results, versions, op streams (``ops``) and errors of both libraries."""
    (tres, tops), (sres, sops) = run_both(torch_fn, sk_fn, *targs)
    if isinstance(tres, Exception):
        assert_same_error(sres, tres)
        return None
    if isinstance(sres, Exception):
        raise sres
    assert_same(sres, tres, rtol=rtol, atol=atol)
    assert sres._version == tres._version
    if ops:
        assert sops == tops
    return sres


def check_meta(sk_fn, *targs):
    """The op on meta tensors gives the cpu result's sizes, strides and dtype (or its error)."""
    cpu = [to_sk(a) if isinstance(a, torch.Tensor) else a for a in targs]
    meta = [a.to("meta") if isinstance(a, sk.Tensor) else a for a in cpu]
    try:
        c = sk_fn(*cpu)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)) as info:
            sk_fn(*meta)
        assert str(info.value) == str(e)
        return
    m = sk_fn(*meta)
    assert m.device.type == "meta"
    assert (tuple(m.shape), m.stride(), m.dtype) == (tuple(c.shape), c.stride(), c.dtype)


LAYOUTS = st.sampled_from(["contig", "contig", "t", "expand", "step"])


@st.composite
def matmul_shapes(draw):
    """Two shapes matmul accepts: 1-4 dims, equal contraction size, broadcastable batches."""
    d1, d2 = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    n, k, m = (draw(st.integers(0, 4)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))

    def batch_of(ndim):
        dims = batch[len(batch) - min(len(batch), max(ndim - 2, 0)):]
        dims = [1 if draw(st.booleans()) else b for b in dims]
        return [draw(st.integers(1, 3))] * (max(ndim - 2, 0) - len(dims)) + dims

    a = [k] if d1 == 1 else batch_of(d1) + [n, k]
    b = [k] if d2 == 1 else batch_of(d2) + [k, m]
    return a, b


# -- matmul --------------------------------------------------------------------------------------
@given(matmul_shapes(), LAYOUTS, LAYOUTS)
def test_matmul_matches_torch(shapes, la, lb):
    a, b = make(shapes[0], la, seed=1), make(shapes[1], lb, seed=2)
    check(torch.matmul, sk.matmul, a, b, ops=la != "expand" and lb != "expand")
    check_meta(sk.matmul, a, b)


@pytest.mark.parametrize("a, b", [
    ((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4)),
    ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)), ((2, 5, 2, 3), (3,)), ((3, 5, 0), (0, 0)), ((3,), (2, 5, 3, 4)),
    ((1, 2, 3), (2, 3, 4)), ((2, 2, 3), (1, 3, 4)), ((3, 2, 0), (1, 0, 4)), ((1, 2, 3), (1, 3, 4)),
])
def test_matmul_op_stream(a, b):
    # matmul(2D, 2D) -> mm; folded batches -> view, mm, _unsafe_view; else expand/bmm; a 3-D
    # batch of one against another batch is squeezed first under a mode (subclass-like).
    check(torch.matmul, sk.matmul, make(a), make(b, seed=3))


@pytest.mark.parametrize("a, b", [
    ((2, 3), (4, 5)), ((2, 3, 4), (5, 6)), ((3,), (4,)), ((2, 2, 3), (3, 3, 4)), ((3,), (4, 4)),
    ((3, 3), (4,)), ((3,), (2, 4, 4)), ((), (3,)), ((3,), ()),
])
def test_matmul_errors(a, b):
    check(torch.matmul, sk.matmul, make(a), make(b))


def test_matmul_dtypes():
    check(torch.matmul, sk.matmul, make((2, 3)), make((3, 4), dtype=torch.float64))
    check(torch.matmul, sk.matmul, make((3,)), make((3,), dtype=torch.float64))
    ints = (make((2, 3)) * 10).long(), (make((3, 4)) * 10).long()
    check(torch.matmul, sk.matmul, *ints)
    check(torch.matmul, sk.matmul, make((4, 8), dtype=torch.float16),
          make((8, 3), dtype=torch.float16))


def test_matmul_operator():
    a, b = make((2, 3)), make((3, 4))
    check(lambda x, y: x @ y, lambda x, y: x @ y, a, b)
    check(lambda x, y: x.matmul(y), lambda x, y: x.matmul(y), a, b)
    with pytest.raises(TypeError):
        to_sk(a) @ 2
    x = to_sk(a)
    x @= to_sk(b)  # no __imatmul__: rebinding, as PyTorch
    assert tuple(x.shape) == (2, 4)


@pytest.mark.parametrize("out", [torch.empty(0), torch.empty(2, 4), torch.empty(4, 2).t(),
                                 torch.empty(0, dtype=torch.int64)])
def test_matmul_out(out):
    def s_fn(x, y, o):
        res = sk.matmul(x, y, out=o)
        assert res is o
        return res
    check(lambda x, y, o: torch.matmul(x, y, out=o), s_fn, make((2, 3)), make((3, 4)), out,
          ops=False)


def test_matmul_one_d_left_bumps_version():
    # PyTorch squeezes the mm result in place (squeeze_), so the result is at version 1.
    out = sk.matmul(sk.ones(3), sk.ones(3, 4))
    assert out._version == 1 and tuple(out.shape) == (4,)


# -- mm / bmm / addmm / dot / mv -----------------------------------------------------------------
@pytest.mark.parametrize("a, b, la, lb", [
    ((2, 3), (3, 4), "contig", "contig"), ((2, 3), (3, 4), "t", "t"),
    ((0, 3), (3, 4), "contig", "step"), ((2, 0), (0, 4), "contig", "contig"),
    ((2, 3), (3, 4), "expand", "contig"),
])
def test_mm(a, b, la, lb):
    check(torch.mm, sk.mm, make(a, la), make(b, lb, seed=1))
    check(lambda x, y: x.mm(y), lambda x, y: x.mm(y), make(a, la), make(b, lb, seed=1))


@pytest.mark.parametrize("a, b, dtype_b", [
    ((2, 3), (4, 5), torch.float32), ((3,), (3, 5), torch.float32), ((2, 3), (3,), torch.float32),
    ((2, 3), (3, 4), torch.float64), ((2, 3), (4, 3), torch.float64),
])
def test_mm_errors(a, b, dtype_b):
    check(torch.mm, sk.mm, make(a), make(b, dtype=dtype_b))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8, torch.float16, torch.bool])
def test_mm_dtypes(dtype):
    a = (make((2, 3)) * 4).to(dtype)
    b = (make((3, 4), seed=1) * 4).to(dtype)
    check(torch.mm, sk.mm, a, b)
    other = torch.float64 if dtype is not torch.float64 else torch.float32
    check(torch.mm, sk.mm, a, b.to(other))


def test_mm_out():
    a, b = make((2, 3)), make((3, 4))
    for out in (torch.empty(0), torch.empty(4, 2).t(), torch.empty(2, 4, dtype=torch.int64),
                torch.empty(2, 4, dtype=torch.float64)):
        def t_fn(x, y, o):
            return torch.mm(x, y, out=o)

        def s_fn(x, y, o):
            res = sk.mm(x, y, out=o)
            assert res is o
            return res
        check(t_fn, s_fn, a, b, out)


@pytest.mark.parametrize("a, b, la", [
    ((2, 2, 3), (2, 3, 5), "contig"), ((2, 2, 3), (2, 3, 5), "t"), ((0, 2, 3), (0, 3, 4), "contig"),
    ((2, 2, 3), (2, 4, 5), "contig"), ((2, 2, 3), (3, 3, 5), "contig"), ((2, 3), (2, 3, 5), "contig"),
    ((2, 2, 3), (3, 5), "contig"),
])
def test_bmm(a, b, la):
    check(torch.bmm, sk.bmm, make(a, la), make(b, seed=1))
    check_meta(sk.bmm, make(a, la), make(b, seed=1))


def test_bmm_dtype_errors_and_out():
    check(torch.bmm, sk.bmm, make((2, 2, 3)), make((2, 3, 5), dtype=torch.float64))
    check(torch.bmm, sk.bmm, make((2, 2, 3)).bool(), make((2, 3, 5)).bool())
    check(lambda x, y, o: torch.bmm(x, y, out=o), lambda x, y, o: sk.bmm(x, y, out=o),
          make((2, 2, 3)), make((2, 3, 5)), torch.empty(0))
    check(lambda x, y, o: torch.bmm(x, y, out=o), lambda x, y, o: sk.bmm(x, y, out=o),
          make((2, 2, 3)), make((2, 3, 5)), torch.empty(0, dtype=torch.int64))


@pytest.mark.parametrize("s, a, b, kw", [
    ((5,), (2, 3), (3, 5), {}), ((2, 5), (2, 3), (3, 5), {"beta": 0.5, "alpha": 2}),
    ((1, 5), (2, 3), (3, 5), {}), ((4,), (2, 3), (3, 5), {}), ((3, 5), (2, 3), (3, 5), {}),
    ((1, 2, 5), (2, 3), (3, 5), {}), ((5,), (2, 3), (4, 5), {}), ((5,), (3,), (3, 5), {}),
    ((), (2, 3), (3, 5), {}),
])
def test_addmm(s, a, b, kw):
    check(lambda x, y, z: torch.addmm(x, y, z, **kw), lambda x, y, z: sk.addmm(x, y, z, **kw),
          make(s), make(a, seed=1), make(b, seed=2))


def test_addmm_beta_zero_ignores_nan_and_integer_scalars():
    nan = torch.full((5,), float("nan"))
    check(lambda x, y, z: torch.addmm(x, y, z, beta=0), lambda x, y, z: sk.addmm(x, y, z, beta=0),
          nan, make((2, 3)), make((3, 5)))
    ints = [torch.ones(5).long(), torch.ones(2, 3).long(), torch.ones(3, 5).long()]
    check(lambda *a: torch.addmm(*a, alpha=2.7, beta=1.5),
          lambda *a: sk.addmm(*a, alpha=2.7, beta=1.5), *ints)
    check(torch.addmm, sk.addmm, make((5,), dtype=torch.float64), make((2, 3)), make((3, 5)))
    check(torch.addmm, sk.addmm, make((5,)), make((2, 3), dtype=torch.float64), make((3, 5)))


@pytest.mark.parametrize("a, b", [((3,), (3,)), ((3,), (4,)), ((3, 3), (3,)), ((0,), (0,))])
def test_dot(a, b):
    check(torch.dot, sk.dot, make(a), make(b, seed=1))


@pytest.mark.parametrize("a, b", [((2, 3), (3,)), ((2, 3), (4,)), ((3,), (3,)), ((2, 3), (3, 1)),
                                  ((0, 3), (3,))])
def test_mv(a, b):
    check(torch.mv, sk.mv, make(a, "t"), make(b, seed=1))


def test_dot_mv_dtypes():
    check(torch.dot, sk.dot, make((3,)), make((3,), dtype=torch.float64))
    check(torch.dot, sk.dot, make((3,)).bool(), make((3,)).bool())
    check(torch.mv, sk.mv, make((2, 3)), make((3,), dtype=torch.float64))


# -- linear --------------------------------------------------------------------------------------
@pytest.mark.parametrize("x, w, b", [
    ((2, 3), (4, 3), (4,)), ((2, 3), (4, 3), None), ((2, 5, 3), (4, 3), (4,)),
    ((2, 5, 3), (4, 3), None), ((3,), (4, 3), (4,)), ((3,), (4, 3), None),
    ((5, 2, 3), (4, 3), (2, 4)), ((2, 2, 5, 3), (4, 3), (1, 4)), ((2, 3), (3,), None),
    ((5, 2, 3), (4, 3), ()), ((0, 3), (4, 3), (4,)), ((2, 0, 3), (4, 3), (4,)),
    ((2, 3), (4, 5), None), ((2, 3), (4, 3), (5,)), ((2, 2, 3), (4, 5), (4,)), ((), (4, 3), None),
    ((2, 3), (2, 4, 3), None), ((2, 3), (3,), (1,)),
])
def test_linear(x, w, b):
    bias = None if b is None else make(b, seed=2)
    check(TF.linear, F.linear, make(x), make(w, seed=1), bias)
    check_meta(F.linear, make(x), make(w, seed=1), bias)


def test_linear_non_contiguous_input_adds_in_place():
    # Non-contiguous input: matmul then ``add_`` outside modes (result version 1), ``add``
    # under a mode (PyTorch's isTensorSubclassLike sees the mode).
    x, w, b = make((5, 2, 3)).transpose(0, 1), make((4, 3)), make((4,))
    check(TF.linear, F.linear, x, w, b)
    out = F.linear(to_sk(x), to_sk(w), to_sk(b))
    expected = 0 if sk.get_mode_stack() else 1  # e.g. under ``pytest --debug-asserts``
    assert out._version == expected and TF.linear(x, w, b)._version == 1


def test_linear_dtype_errors():
    check(TF.linear, F.linear, make((2, 3)), make((4, 3), dtype=torch.float64), None)
    check(TF.linear, F.linear, make((2, 3)), make((4, 3)), make((4,), dtype=torch.float64))


# -- einsum --------------------------------------------------------------------------------------
EINSUM_OK = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ba", [(2, 3)]), ("bA", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("...ij,...jk->...ik", [(2, 1, 2, 3),
                                                                             (5, 3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,jk", [(2, 3), (3, 4)]), ("i j , j k -> i k", [(2, 3), (3, 4)]),
]
EINSUM_ERRORS = [
    ("ij,kj->ik", [(2, 3), (4, 4)]), ("...j,...j->...", [(2, 3), (4, 3)]),
    ("ij,jk", [(2, 3)]), ("ij", [(2, 3), (3,)]), ("ijk", [(2, 3)]), ("ijk...", [(2, 3)]),
    ("i1", [(2, 3)]), ("ij->ii", [(2, 3)]), ("ij->k", [(2, 3)]), ("ii->i", [(2, 3)]),
    ("i.j", [(2, 3)]), ("ij,jk->ik", [(2, 3), (3, 4, 1)]),
]


@pytest.mark.parametrize("eq, shapes", EINSUM_OK + EINSUM_ERRORS)
def test_einsum(eq, shapes):
    args = [make(s, seed=i) for i, s in enumerate(shapes)]
    check(lambda *a: torch.einsum(eq, *a), lambda *a: sk.einsum(eq, *a), *args)
    check_meta(lambda *a: sk.einsum(eq, *a), *args)


@pytest.mark.parametrize("eq, shapes", [("ij->", [(2, 3)]), ("ii", [(3, 3)]),
                                        ("iij->j", [(3, 3, 2)]), ("i...->...", [(2, 3, 4)])])
def test_einsum_reductions(eq, shapes):
    # These lower to ``sum`` (owned by the reductions family): skip until it has a kernel.
    if "cpu" not in sk.ops.sum.dim_IntList._kernels:
        pytest.skip("sk.ops.sum has no cpu kernel yet")
    args = [make(s, seed=i) for i, s in enumerate(shapes)]
    check(lambda *a: torch.einsum(eq, *a), lambda *a: sk.einsum(eq, *a), *args)


def test_einsum_argument_forms():
    a, b = make((2, 3)), make((3, 4), seed=1)
    check(lambda x, y: torch.einsum("ij,jk->ik", [x, y]), lambda x, y: sk.einsum("ij,jk->ik", [x, y]),
          a, b)
    check(lambda x, y: torch.einsum(x, [0, 1], y, [1, 2], [0, 2]),
          lambda x, y: sk.einsum(x, [0, 1], y, [1, 2], [0, 2]), a, b)
    with pytest.raises(ValueError, match="must specify the equation string"):
        sk.einsum("ij")
    three = [make((2, 3)), make((3, 4), seed=1), make((4, 5), seed=2)]
    ours = sk.einsum("ij,jk,kl->il", *[to_sk(t) for t in three], path=[1, 2, 0, 1])
    assert_same(ours, torch.einsum("ij,jk,kl->il", *three), rtol=1e-5, atol=1e-5)


def test_einsum_permutation_is_a_view():
    x = sk.ones(2, 3)
    y = sk.einsum("ij->ji", x)
    assert y._base is x and y.stride() == (1, 3)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(1, 4), st.integers(1, 4))
def test_einsum_batched_contraction(batch, n, m):
    k = 3
    a, b = make(tuple(batch) + (n, k)), make(tuple(batch) + (k, m), seed=1)
    labels = "abc"[:len(batch)]
    eq = f"{labels}ij,{labels}jk->{labels}ik"
    check(lambda x, y: torch.einsum(eq, x, y), lambda x, y: sk.einsum(eq, x, y), a, b,
          rtol=1e-5, atol=1e-5)


def test_matmul_values_match_numpy():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    b = np.arange(20, dtype=np.float64).reshape(4, 5)
    np.testing.assert_allclose(sk.matmul(sk.tensor(a), sk.tensor(b)).numpy(), a @ b)
