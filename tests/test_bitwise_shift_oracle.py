"""Bit shifts against torch 2.13: the operator overloads a dispatch mode sees, values at every
edge (negative counts, counts >= the bit width), in-place version bumps and NotImplemented."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import subclass_kit as sk
from test_names_oracle import sk_calls, torch_calls

INTS = ["uint8", "int8", "int16", "int32", "int64"]

PROGRAMS = [
    "x << 2", "x >> 3", "x << y", "x >> y", "2 << x", "-9 >> x",
    "lib.bitwise_left_shift(x, y)", "lib.bitwise_left_shift(x, 1)",
    "lib.bitwise_left_shift(3, x)", "lib.bitwise_right_shift(x, y)",
    "lib.bitwise_right_shift(x, 70)", "lib.bitwise_right_shift(-5, x)",
    "x.bitwise_left_shift(y)", "x.bitwise_right_shift(2)",
    "x.__rlshift__(1)", "x.__rrshift__(64)",
    "lib.bitwise_left_shift(x, y, out=o)",
    "lib.bitwise_right_shift(x, 2, out=o)",
]
INPLACE = ["x.__ilshift__(2)", "x.__irshift__(y)", "x.bitwise_left_shift_(y)",
           "x.bitwise_right_shift_(1)"]


def _inputs(lib, dtype):
    d = getattr(lib, dtype)
    vals = [1, 255, 5, 128, 127, 100, 156, 0] if dtype == "uint8" else \
        [1, -1, 5, -128, 127, 100, -100, 0]
    x = lib.tensor(vals, dtype=d).view(4, 2).t()
    y = lib.tensor([0, 3, 7, 8], dtype=d) if dtype == "uint8" else \
        lib.tensor([-1, 3, 8, 64], dtype=d)
    return x, y


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("program", PROGRAMS + INPLACE)
def test_shift_stream_and_values(torch, program, dtype):
    x, y = _inputs(sk, dtype)
    tx, ty = _inputs(torch, dtype)
    o, to = sk.empty(0, dtype=x.dtype), torch.empty(0, dtype=tx.dtype)
    ours_calls, ours = sk_calls(lambda: eval(program, {"lib": sk, "x": x, "y": y, "o": o}))
    theirs_calls, theirs = torch_calls(torch, lambda: eval(program, {"lib": torch, "x": tx,
                                                                     "y": ty, "o": to}))
    assert ours_calls == theirs_calls
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert str(ours.dtype)[3:] == str(theirs.dtype)[6:]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert x._version == tx._version
    if program in INPLACE:
        assert ours is x and theirs is tx


def test_augmented_assignment_rebinds_to_self(torch):
    x = sk.tensor([1, 2, 3])
    alias = x
    x <<= 2
    x >>= sk.tensor([1, 0, 2])
    tx = torch.tensor([1, 2, 3])
    tx <<= 2
    tx >>= torch.tensor([1, 0, 2])
    assert x is alias and x.tolist() == tx.tolist() and x._version == tx._version == 2


@pytest.mark.parametrize("program", ["x << 1", "x >> y", "1 << x", "x << 1.5", "x <<= 1.5",
                                     "lib.bitwise_left_shift(x, 2.0)",
                                     "lib.bitwise_right_shift(7, x, out=lib.empty(0))"])
@pytest.mark.parametrize("dtype", ["float32", "bool", "int64"])
def test_shift_errors(torch, program, dtype):
    def run(lib):
        x = lib.ones(3, dtype=getattr(lib, dtype))
        y = lib.ones(3, dtype=getattr(lib, dtype))
        env = {"lib": lib, "x": x, "y": y}
        try:
            exec(program if "=" in program and "(" not in program else "r = " + program, env)
        except Exception as e:     # noqa: BLE001  (the error is the result compared)
            return type(e), str(e).replace("torch.", "sk."), x._version
        return None, env.get("r", env["x"]).tolist(), x._version
    assert run(sk) == run(torch)


def test_non_number_operand_is_not_implemented():
    x = sk.tensor([1, 2])
    assert x.__lshift__("a") is NotImplemented and x.__rrshift__(object()) is NotImplemented
    with pytest.raises(TypeError, match="unsupported operand"):
        x << "a"


def test_shift_meta(torch):
    for lib in (sk, torch):
        x = lib.empty(2, 3, dtype=lib.int16, device="meta")
        assert (x << 1).shape == (2, 3) and (x >> lib.empty(3, dtype=lib.int64,
                                                             device="meta")).dtype == lib.int64


_DT = st.sampled_from(INTS)


@settings(max_examples=60, deadline=None)
@given(_DT, _DT, st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), min_size=1, max_size=6),
       st.lists(st.integers(-70, 70), min_size=1, max_size=6), st.booleans())
def test_shift_matches_torch(dtype_a, dtype_b, a, b, left):
    """Any integer dtypes, values and counts (wrapped into the dtypes as C casts do)."""
    import torch
    n = min(len(a), len(b))
    a_np = np.array(a[:n], dtype=np.int64).astype(dtype_a)
    b_np = np.array(b[:n], dtype=np.int64).astype(dtype_b)
    ours = (sk.from_numpy(a_np.copy()) << sk.from_numpy(b_np.copy())) if left else \
        (sk.from_numpy(a_np.copy()) >> sk.from_numpy(b_np.copy()))
    ta, tb = torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy())
    theirs = (ta << tb) if left else (ta >> tb)
    assert str(ours.dtype)[3:] == str(theirs.dtype)[6:]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
