"""``Tensor.is_set_to`` / ``is_set_to.default`` against PyTorch: same storage, storage offset,
sizes and strides; the op a mode sees; NotImplementedError on meta; TypeError for a non-tensor.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import subclass_kit as sk  # noqa: E402
from oracle import SkOpLog, torch_op_log  # noqa: E402

# tensors derived from a base ``b`` (arange(12.) viewed (3, 4)) or made fresh
DERIVED = {
    "itself": lambda m, b: b,
    "view_same": lambda m, b: b.view(3, 4),
    "view_other": lambda m, b: b.view(4, 3),
    "flat": lambda m, b: b.view(12),
    "full_slice": lambda m, b: b[:],
    "row_slice": lambda m, b: b[1:],
    "column_slice": lambda m, b: b[:, :2],
    "transposed": lambda m, b: b.t(),
    "transposed_back": lambda m, b: b.t().t(),
    "detached": lambda m, b: b.detach(),
    "as_strided_same": lambda m, b: b.as_strided((3, 4), (4, 1)),
    "as_strided_offset": lambda m, b: b.as_strided((3, 4), (4, 1), 0),
    "reinterpreted": lambda m, b: b.view(m.int32),
    "clone": lambda m, b: b.clone(),
    "set_to_base": lambda m, b: m.zeros(2).set_(b),
    "empty": lambda m, b: m.empty(0),
}


def _answer(m, a, b):
    base = m.arange(12.0).view(3, 4)
    return DERIVED[a](m, base).is_set_to(DERIVED[b](m, base))


@given(st.sampled_from(sorted(DERIVED)), st.sampled_from(sorted(DERIVED)))
def test_is_set_to_matches_torch(a, b):
    assert _answer(sk, a, b) is _answer(torch, a, b)


def test_is_set_to_cases():
    assert _answer(sk, "itself", "view_same") is True
    assert _answer(sk, "itself", "view_other") is False
    assert _answer(sk, "itself", "transposed_back") is True
    assert _answer(sk, "empty", "empty") is False       # two storages
    assert _answer(sk, "set_to_base", "itself") is True


def test_is_set_to_is_one_op_for_modes():
    for m, log in ((sk, SkOpLog(overloads=True)), (torch, torch_op_log(overloads=True))):
        x = m.ones(2)
        with log:
            assert x.is_set_to(x) is True
            assert (sk.ops if m is sk else torch.ops.aten).is_set_to.default(x, x) is True
        assert log.ops == ["is_set_to.default", "is_set_to.default"]


@pytest.mark.parametrize("devices", [("meta", "meta"), ("cpu", "meta"), ("meta", "cpu")])
def test_is_set_to_has_no_meta_kernel(devices):
    for m in (torch, sk):
        a, b = (m.ones(2, device=d) for d in devices)
        with pytest.raises(NotImplementedError, match="aten::is_set_to: attempted to run this "
                           "operator with Meta tensors, but there was no fake impl"):
            a.is_set_to(b)


def test_is_set_to_wants_a_tensor():
    for m in (torch, sk):
        with pytest.raises(TypeError, match=r"is_set_to\(\): argument 'tensor' \(position 1\) "
                           "must be Tensor, not int"):
            m.ones(2).is_set_to(3)
