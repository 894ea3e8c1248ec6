"""float32 gelu and gelu_backward bit for bit against torch (kernels/_gelu.py).

PyTorch computes float32's erf-based gelu with Abramowitz & Stegun's erf, on oneDNN for
contiguous tensors and in ATen's vectorised loop otherwise (``std::erf`` on the loop's scalar
tail and on strided rows). Values are compared as bit patterns: most elements are identical, the
rest within a few ulp (PyTorch fuses multiply-adds and has its own exp), and special values and
signed zeros are identical. A correctly rounded erf would be *farther* from PyTorch (it matched
about a third of the elements here).
"""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for gelu's float32 arithmetic")
pytest.importorskip("hypothesis", reason="hypothesis draws the layouts")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

torch.set_num_threads(1)

# name -> a view of a (96, 85) float32 tensor: ATen's and oneDNN's paths and their loop rows
LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.t(),
    "column slice": lambda a: a[:, :39],
    "strided": lambda a: a[:, ::2],
    "transposed slice": lambda a: a.t()[:50],
    "permuted 3-d": lambda a: a.reshape(12, 8, 85).permute(1, 2, 0),
    "one element": lambda a: a[3, 4:5],
    "0-d": lambda a: a[5, 6],
    "17 elements": lambda a: a[0, :17],
}


def _source(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(96, 85, generator=g) * 2.5


def _ulps(ours, theirs):
    """|difference| in units of the oracle's last place."""
    t = theirs.astype(np.float64)
    return np.abs(ours.astype(np.float64) - t) / np.maximum(np.spacing(np.abs(theirs)), 1e-45)


def _compare(ours, theirs, label):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, label
    ulps = _ulps(ours, theirs)
    assert ulps.max(initial=0) <= 1e4 or np.abs(ours - theirs).max() <= 6e-7, label
    if ours.size >= 64:
        assert (ours == theirs).mean() >= 0.6, f"{label}: {(ours == theirs).mean():.3f} identical"
        assert (ulps <= 4).mean() >= 0.9, f"{label}: {(ulps <= 4).mean():.3f} within 4 ulp"


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_gelu_float32_matches_torch(layout):
    base = _source(0)
    x = LAYOUTS[layout](base)
    xs = LAYOUTS[layout](sk.tensor(base.numpy()))
    _compare(sk.nn.functional.gelu(xs).numpy(), torch.nn.functional.gelu(x).numpy(), layout)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_gelu_backward_float32_matches_torch(layout):
    base = _source(1)
    x = LAYOUTS[layout](base)
    dy = torch.randn(x.shape, generator=torch.Generator().manual_seed(2))
    xs = LAYOUTS[layout](sk.tensor(base.numpy()))
    ours = sk.ops.gelu_backward(sk.tensor(dy.numpy()), xs).numpy()
    _compare(ours, torch.ops.aten.gelu_backward(dy, x).numpy(), layout)


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 10.0, -10.0, 20.0, -20.0,
            1e30, -1e30, 1.4e-45, -1.4e-45, 3.0e38]


@pytest.mark.parametrize("dtype,contiguous", [("float32", True), ("float32", False),
                                               ("float16", True), ("bfloat16", True)])
def test_gelu_special_values_are_torchs_bit_for_bit(dtype, contiguous):
    """Signed zeros included (NaNs are compared as NaN): oneDNN's ``S + S erf`` gives +0 where ATen's ``S (1 + erf)``
    (non-contiguous float32, the 16-bit types) gives -0."""
    v = np.array(SPECIALS, np.float32)
    tv = torch.from_numpy(v).to(getattr(torch, dtype))
    sv = sk.tensor(v).to(getattr(sk, dtype))
    if not contiguous:
        tv = torch.stack([tv, tv], 1)[:, 0]
        sv = sk.stack([sv, sv], 1)[:, 0]
    for ours, theirs in [(sk.nn.functional.gelu(sv), torch.nn.functional.gelu(tv)),
                         (sk.ops.gelu_backward(sv, sv), torch.ops.aten.gelu_backward(tv, tv))]:
        ours, theirs = ours.float().numpy(), theirs.float().numpy()
        nan = np.isnan(theirs)      # (a NaN's sign and payload are no fact of PyTorch's)
        assert np.isnan(ours).tolist() == nan.tolist()
        assert ours[~nan].view(np.int32).tolist() == theirs[~nan].view(np.int32).tolist()


@given(n=st.integers(0, 300), scale=st.sampled_from([0.5, 3.0, 8.0]),
       dtype=st.sampled_from(["float32", "float16", "bfloat16", "float64"]))
def test_gelu_any_length_and_dtype_within_tolerance(n, scale, dtype):
    v = (np.random.default_rng(n).standard_normal(n) * scale).astype(np.float32)
    t = torch.from_numpy(v).to(getattr(torch, dtype))
    s = sk.tensor(v).to(getattr(sk, dtype))
    tol = {"float32": 6e-7, "float16": 1e-2, "bfloat16": 5e-2, "float64": 1e-15}[dtype]
    ours = sk.nn.functional.gelu(s)
    assert ours.dtype == s.dtype
    np.testing.assert_allclose(ours.float().numpy(), torch.nn.functional.gelu(t).float().numpy(),
                               rtol=tol, atol=tol)
    g = sk.ops.gelu_backward(s, s)
    np.testing.assert_allclose(g.float().numpy(),
                               torch.ops.aten.gelu_backward(t, t).float().numpy(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", ["contiguous", "column slice", "17 elements"])
def test_gelu_in_place_and_out_equal_the_functional_result(layout):
    """The kernels reuse the output array as scratch space, never when it is the input."""
    base = sk.tensor(_source(3).numpy())
    want = sk.nn.functional.gelu(LAYOUTS[layout](base)).numpy()
    x = LAYOUTS[layout](base.clone())
    assert sk.ops.gelu_(x) is x
    assert x.numpy().view(np.int32).tolist() == want.view(np.int32).tolist()
    out = sk.empty(want.shape)
    sk.ops.gelu.out(LAYOUTS[layout](base), out=out)
    assert out.numpy().view(np.int32).tolist() == want.view(np.int32).tolist()
