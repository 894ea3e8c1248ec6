"""Sample table, part 5: more reductions (``count_nonzero``, ``nansum``, ``nanmean``,
``aminmax``, ``isclose``, ``allclose``, ``equal``, ``cummax``, ``cummin``, ``logcumsumexp``). See ``samples.py`` for the spec language;
``out=`` overloads derive their samples from the functional entry."""

from __future__ import annotations

from samples import E, S, T, D

F = T
ENTRIES = {}
_NAN = F((2, 3), values=(1.0, float("nan"), 0.0, -2.0, float("nan"), 3.0))

ENTRIES["count_nonzero.dim_IntList"] = E(
    [S(F((2, 3)), [1]), S(F((2, 3), "int64", "t"), [0, 1]), S(F((2, 3, 4)), []),
     S(F((3,), "bool", "step"), [-1]), S(F((0, 3)), [0]), S(F(()), [0])],
    [S(F((2, 3)), [0, 0]), S(F((2, 3)), [2])])
ENTRIES["count_nonzero.default"] = E(
    [S(F((2, 3))), S(F((2, 3)), 1), S(F((2, 3), "int32", "t"), -2), S(F(())), S(F((0,)))],
    [S(F((2, 3)), 2)])
ENTRIES["nansum.default"] = E(
    [S(_NAN), S(_NAN, [1]), S(_NAN, [0], True), S(F((2, 3), "int64", "t"), [0]),
     S(F((2, 3), "bool")), S(F((4,), "float16", "step")), S(_NAN, dtype=D("float64")),
     S(F((0, 3)), [0])],
    [S(F((2, 3)), [2])])
ENTRIES["nanmean.default"] = E(
    [S(_NAN), S(_NAN, [1]), S(_NAN, [0], True), S(F((2, 3), "float64", "t"), [0]),
     S(_NAN, dtype=D("float64")), S(F((0, 3)), [0])],
    [S(F((2, 3), "int64")), S(F((2, 3)), [2])])
ENTRIES["aminmax.default"] = E(
    [S(_NAN), S(F((2, 3))), S(F((2, 3)), dim=1), S(F((2, 3), "int64", "t"), dim=0, keepdim=True),
     S(F((2, 3)), keepdim=True), S(F(())), S(F(()), dim=0), S(F((0, 3)), dim=1),
     S(F((3,), "bool", "step"))],
    [S(F((0, 3))), S(F((0, 3)), dim=0), S(F((2, 3)), dim=2)])
ENTRIES["isclose.default"] = E(
    [S(F((2, 3)), F((2, 3))), S(_NAN, _NAN), S(_NAN, _NAN, equal_nan=True),
     S(F((2, 3)), F((3,)), 0.5, 0.5), S(F((2, 3), "int64"), F((2, 3), "int64", "t")),
     S(F((2, 3), "bool"), F((2, 3), "bool")), S(F((2, 3)), F((2, 3)), 0.0, 0.0),
     S(F((4,), "float16", "step"), F((4,), "float16")), S(F(()), F((0,)))],
    [S(F((2, 3)), F((2, 3), "int64")), S(F((2, 3)), F((2, 3)), -1.0),
     S(F((2, 3)), F((2, 3)), 1e-5, -1.0), S(F((2, 3)), F((2, 2)))])
ENTRIES["allclose.default"] = E(
    [S(F((2, 3)), F((2, 3)), _meta=False), S(_NAN, _NAN, _meta=False),
     S(_NAN, _NAN, equal_nan=True, _meta=False), S(F((2, 3)), F((3,)), 10.0, 10.0, _meta=False),
     S(F((2, 3), "int64"), F((2, 3), "int64", "t"), _meta=False), S(F((0,)), F(()), _meta=False)],
    [S(F((2, 3)), F((2, 3), "int64")), S(F((2, 3)), F((2, 2)))])
ENTRIES["equal.default"] = E(
    [S(F((2, 3)), F((2, 3)), _meta=False), S(F((2, 3)), F((2, 3), layout="t"), _meta=False),
     S(_NAN, _NAN, _meta=False), S(F((2, 3)), F((3,)), _meta=False),
     S(F((2, 3), "int64"), F((2, 3), "float32"), _meta=False), S(F(()), F(()), _meta=False),
     S(F((0, 2)), F((0, 2)), _meta=False)])
# two tensors built apart never share a storage: False (test_is_set_to_oracle has the rest)
ENTRIES["is_set_to.default"] = E([S(F((2, 3)), F((2, 3)), _meta=False),
                                  S(F(()), F(()), _meta=False),
                                  S(F((3, 4), "int64", "t"), F((4, 3), "float64"), _meta=False)])

_TIES = F((2, 4), values=(1.0, 1.0, 0.0, 1.0, -0.0, 0.0, float("nan"), 0.0))
for _name in ("cummax", "cummin"):
    ENTRIES[f"{_name}.default"] = E(
        [S(F((2, 3)), 1), S(_NAN, 1), S(_NAN, 0), S(_TIES, 1), S(_TIES, -2), S(F((2, 3), "int64", "t"), 0),
         S(F((3,), "bool", "step"), 0), S(F(()), 0), S(F(()), -1), S(F((0, 3)), 0),
         S(F((2, 3, 4), layout="offset"), 2), S(F((4,), "float16"), 0)],
        [S(F((2, 3)), 2), S(F(()), 1), S(F(()), -2)])
ENTRIES["logcumsumexp.default"] = E(
    [S(F((2, 3)), 0), S(_NAN, 1), S(F((2, 3), "float64", "t"), -1), S(F(()), 0),
     S(F((0, 3)), 1), S(F((4,), "float16", "step"), 0),
     S(F((5,), values=(float("-inf"), float("-inf"), 1.0, float("inf"), float("inf"))), 0)],
    [S(F((2, 3)), 2), S(F(()), 1), S(F((2, 3), "int64"), 0), S(F((3,), "bool"), 0)])


# -- median, nanmedian, kthvalue: distinct values (PyTorch's index among ties is its
# nth_element's; docs/differences.md) ------------------------------------------------------------
def _distinct(shape, dtype="float32", layout="contig", nan_at=()):
    n = 1
    for s in shape:
        n *= s
    vals = [float((i * 7) % max(n, 1)) - n // 2 for i in range(n)]
    for i in nan_at:
        vals[i] = float("nan")
    return F(shape, dtype, layout, values=vals if dtype.startswith("float") else
             [int(v) for v in vals])


_ROWS_NAN = _distinct((3, 4), nan_at=(1, 8, 10))
_ALL_NAN = F((4,), values=[float("nan")] * 4)
for _name in ("median", "nanmedian"):
    ENTRIES[f"{_name}.default"] = E(
        [S(_distinct((2, 3))), S(_distinct((2, 4), "float64", "t")), S(_ROWS_NAN),
         S(_distinct((5,), "int64")), S(_distinct((3,), "float16", "step")), S(F(())),
         S(F((0, 3))), S(_ALL_NAN)],
        [S(F((2, 2), "bool"))])
    ENTRIES[f"{_name}.dim"] = E(
        [S(_distinct((2, 3)), 1), S(_distinct((2, 4), "float64", "t"), 0, True), S(_ROWS_NAN, 1),
         S(_ROWS_NAN, 0), S(_distinct((2, 5), "int32"), -1), S(_distinct((3, 4), layout="step"), 1),
         S(F(()), 0), S(F(()), -1, True), S(F((2, 0)), 0), S(_distinct((2, 3, 4), layout="offset"), 1)],
        [S(F((0, 3)), 0), S(F((2, 3)), 2), S(F((2, 2), "bool"), 0)])
ENTRIES["kthvalue.default"] = E(
    [S(_distinct((2, 3)), 2), S(_distinct((2, 3)), 1, 0), S(_distinct((2, 4), "float64", "t"), 2, 0, True),
     S(_ROWS_NAN, 1, 1), S(_ROWS_NAN, 2, 1), S(_distinct((2, 5), "int64"), 5, -1),
     S(_distinct((3, 4), layout="step"), 4), S(F(()), 1), S(F(()), 1, 0, True), S(F((2, 0)), 1, 0)],
    [S(F((2, 3)), 4), S(F((2, 3)), 0), S(F((0, 3)), 1, 0), S(F((2, 3)), 1, 2), S(F(()), 2),
     S(F((2, 2), "bool"), 1)])
