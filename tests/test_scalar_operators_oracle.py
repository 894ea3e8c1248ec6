"""The Python operators with a Python number compute as PyTorch's Scalar overloads do, on the
direct kernel path as under a mode: ``x ** 3`` and ``x ** -2`` are PyTorch's rounded products,
``2 ** x`` is contiguous, whatever ``x``'s layout (tests/samples_scalar_overloads.py holds
the overloads themselves to torch)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import subclass_kit as sk  # noqa: E402

_PROGRAMS = {
    "cube": lambda x: x ** 3, "inverse_square": lambda x: x ** -2,
    "square": lambda x: x ** 2, "general": lambda x: x ** 1.5,
    "cube_inplace": lambda x: x.clone().__ipow__(3), "rpow_t": lambda x: 2 ** x.t(),
    "gt": lambda x: x > 0.25, "mod": lambda x: x % 0.75, "rmod": lambda x: 3 % (x.abs() + 1),
}


def _facts(t):
    return (str(t.dtype).split(".")[-1], tuple(t.shape), tuple(t.stride()),
            np.asarray(t.float().tolist() if t.dtype != torch.bool and t.dtype != sk.bool
                       else t.tolist()))


@settings(max_examples=25)
@given(name=st.sampled_from(sorted(_PROGRAMS)),
       dtype=st.sampled_from(["float32", "float64", "bfloat16", "float16"]),
       values=st.lists(st.floats(0.125, 4.0, width=16), min_size=6, max_size=6),
       under_mode=st.booleans())
def test_operators_with_numbers_match_torch(name, dtype, values, under_mode):
    data = np.asarray(values, dtype=np.float64).reshape(2, 3)
    x = sk.tensor(data).to(getattr(sk, dtype))
    tx = torch.tensor(data).to(getattr(torch, dtype))
    prog = _PROGRAMS[name]
    if under_mode:
        with sk.DispatchMode():
            ours = prog(x)
    else:
        ours = prog(x)
    theirs = prog(tx)
    a, b = _facts(ours), _facts(theirs)
    assert a[:3] == b[:3]
    if name == "general":   # torch's vectorised powf (Sleef) and numpy's may differ by an ulp
        rtol = {"float64": 1e-15, "float32": 3e-7}.get(dtype, 1e-2)
        np.testing.assert_allclose(a[3], b[3], rtol=rtol)
    else:
        np.testing.assert_array_equal(a[3], b[3])
