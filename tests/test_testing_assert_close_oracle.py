"""``sk.testing.assert_close`` against ``torch.testing.assert_close``: the same verdict on each
case (pass, or the same exception class and message once torch's names read as ours), over
tensors of every dtype, numbers, bools, None and nested containers, with the options; and
hypothesis-drawn float tensors near the tolerance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import subclass_kit as sk
from oracle import normalize_message


def _verdict(L, make):
    try:
        actual, expected, kw = make(L)
        L.testing.assert_close(actual, expected, **kw)
        return "ok"
    except Exception as e:      # noqa: BLE001 - compared with torch's
        text = normalize_message(str(e)).replace("subclass_kit.", "sk.")
        return type(e).__name__, text.replace("sk.tensor.Tensor", "sk.Tensor")


def T(L, values, dtype="float32", **kw):
    return L.tensor(values, dtype=getattr(L, dtype), **kw)


CASES = {
    "close_float": lambda L: (T(L, [1., 2., 3.]), T(L, [1., 2.5, 3.]), {}),
    "equal_int": lambda L: (T(L, [1, 2, 3], "int64"), T(L, [1, 4, 3], "int64"), {}),
    "uint8_rel": lambda L: (T(L, [1, 2], "uint8"), T(L, [3, 2], "uint8"), {}),
    "bool": lambda L: (T(L, [True, False], "bool"), T(L, [True, True], "bool"), {}),
    "shape": lambda L: (T(L, [1., 2.]), T(L, [1., 2., 3.]), {}),
    "dtype": lambda L: (T(L, [1., 2.]), T(L, [1., 2.], "float64"), {}),
    "dtype_unchecked": lambda L: (T(L, [1., 2.]), T(L, [1., 2.1], "float64"),
                                  {"check_dtype": False}),
    "stride": lambda L: (L.ones(2, 2), L.ones(2, 2).t(), {"check_stride": True}),
    "device": lambda L: (L.ones(2), L.ones(2, device="meta"), {}),
    "meta_values_ignored": lambda L: (L.ones(2, device="meta"), L.zeros(2, device="meta"), {}),
    "zero_expected": lambda L: (T(L, [0., 2.]), T(L, [1., 0.]), {}),
    "nan": lambda L: (T(L, [math.nan]), T(L, [math.nan]), {}),
    "nan_equal": lambda L: (T(L, [math.nan]), T(L, [math.nan]), {"equal_nan": True}),
    "inf": lambda L: (T(L, [math.inf]), T(L, [math.inf]), {}),
    "inf_signs": lambda L: (T(L, [math.inf]), T(L, [-math.inf]), {}),
    "2d_index": lambda L: (L.ones(2, 3), L.ones(2, 3) * 2, {}),
    "scalar_tensor": lambda L: (T(L, 1.), T(L, 2.), {}),
    "float16": lambda L: (T(L, [1., 2.], "float16"), T(L, [1., 2.01], "float16"), {}),
    "bfloat16": lambda L: (T(L, [1., 2.], "bfloat16"), T(L, [1., 2.5], "bfloat16"), {}),
    "requires_grad": lambda L: (T(L, [1., 2.], requires_grad=True), T(L, [1., 2.]), {}),
    "empty": lambda L: (L.zeros(0), L.zeros(0), {}),
    "tolerances_given": lambda L: (T(L, [1., 2.]), T(L, [1., 2.1]), {"rtol": 0.1, "atol": 0.}),
    "one_tolerance": lambda L: (L.ones(2), L.ones(2), {"rtol": 0.1}),
    "msg_str": lambda L: (L.ones(2), L.ones(2) * 1.01, {"msg": "custom"}),
    "msg_callable": lambda L: (L.ones(2), L.ones(2) * 2, {"msg": lambda m: "X" + m[:12]}),
    "floats": lambda L: (1.0, 1.5, {}),
    "ints": lambda L: (1, 2, {}),
    "int_vs_float": lambda L: (1, 1.0, {}),
    "bools": lambda L: (True, False, {}),
    "nones": lambda L: (None, None, {}),
    "none_vs_one": lambda L: (None, 1, {}),
    "numpy_scalar": lambda L: (np.float64(1.0), 1.0, {}),
    "tensor_vs_number": lambda L: (T(L, 1.), 1.0, {}),
    "strings": lambda L: ("a", "a", {}),
    "list_item": lambda L: ([L.ones(2), L.zeros(2)], [L.ones(2), L.ones(2)], {}),
    "tuple_vs_list": lambda L: ((1, 2.0), [1, 2.0], {}),
    "lengths": lambda L: ([1, 2], [1, 2, 3], {}),
    "dict_item": lambda L: ({"a": L.ones(2)}, {"a": L.zeros(2)}, {}),
    "dict_keys": lambda L: ({"a": 1, "b": 2}, {"a": 1, "c": 2}, {}),
    "nested": lambda L: ({"x": [1, (L.ones(1), 2)]}, {"x": [1, (L.ones(1) * 3, 2)]}, {}),
    "subclasses_refused": lambda L: (_sub(L), L.ones(2), {"allow_subclasses": False}),
}


def _sub(L):
    class Sub(L.Tensor):
        pass
    return L.ones(2).as_subclass(Sub)


@pytest.mark.parametrize("name", sorted(CASES))
def test_verdict_as_torch(torch, name):
    assert _verdict(sk, CASES[name]) == _verdict(torch, CASES[name])


FLOATS = st.floats(-100, 100, allow_nan=False, width=32)


@given(base=st.lists(FLOATS, min_size=1, max_size=6), eps=st.sampled_from([0, 1e-7, 1e-6, 1e-5,
                                                                              1e-3, 0.5]),
       dtype=st.sampled_from(["float32", "float64", "float16"]))
def test_near_the_tolerance_as_torch(torch, base, eps, dtype):
    def make(L):
        a = T(L, base, dtype)
        return a, a * (1 + eps) + eps, {}
    assert _verdict(sk, make) == _verdict(torch, make)
