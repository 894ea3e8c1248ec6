"""Sample table, part 3: index accumulation (``index_add``, ``scatter_add``, ``index_copy``,
``masked_scatter``), blends (``lerp``, ``addcmul``, ``addcdiv``, ``baddbmm``) and sorting
(``sort``, ``argsort``, ``topk``). See ``samples.py`` for the spec language.

Sorting samples with ties use ``stable=True`` or slices of at most 16 elements (PyTorch's
unstable CPU sort orders ties like the stable one there); ``topk`` samples have distinct
values (its tie order is its partial sort's: docs/differences.md).
"""

from __future__ import annotations

from samples import D, E, S, T  # noqa: F401

F = T
ENTRIES = {}


def _idx(shape, hi, dtype="int64", values=None, layout="contig"):
    return T(shape, dtype, layout, lo=0, hi=hi, values=values)


# -- index accumulation --------------------------------------------------------------------------
ENTRIES["index_add.default"] = E(
    [S(F((3, 4)), 0, _idx((2,), 0, values=(2, 0)), F((2, 4))),
     S(F((3, 4)), 0, _idx((3,), 0, values=(1, 1, 1)), F((3, 4)), alpha=2),
     S(F((3, 4), layout="t"), 1, _idx((3,), 0, "int32", values=(3, 0, 3)), F((3, 3), layout="t")),
     S(F((3, 4), "int64"), -1, _idx((2,), 3), F((3, 2), "int64"), alpha=3),
     S(F((3, 4), "bool"), 0, _idx((2,), 2), F((2, 4), "bool")),
     S(F((3, 4)), 0, _idx((0,), 2), F((0, 4))), S(F(()), 0, _idx((1,), 0), F(())),
     S(F((3, 4), "float16"), 0, _idx((2,), 0, values=(1, 1)), F((2, 4), "float16"), alpha=0.5),
     S(F((3, 4), layout="offset"), 1, _idx((), 3), F((3, 1), layout="expand"))],
    [S(F((3, 4)), 0, _idx((2,), 0, values=(0, 3)), F((2, 4)), _meta=False),
     S(F((3, 4)), 0, _idx((1,), 0, values=(-1,)), F((1, 4)), _meta=False),
     S(F((3, 4)), 0, _idx((2,), 2), F((3, 4))), S(F((3, 4)), 0, _idx((2,), 2), F((2, 5))),
     S(F((3, 4)), 0, _idx((2,), 2), F((2, 4), "float64")), S(F((3, 4)), 0, F((2,)), F((2, 4))),
     S(F((3, 4)), 0, _idx((1, 2), 2), F((2, 4))), S(F((3, 4)), 2, _idx((2,), 2), F((2, 4))),
     S(F(()), 0, _idx((), 0), F((1,)))])
ENTRIES["index_add.default"].samples.append(
    S(F((3, 4), "int64"), 0, _idx((2,), 2), F((2, 4), "int64"), alpha=1.5))
ENTRIES["scatter_add.default"] = E(
    [S(F((3, 4)), 1, _idx((3, 2), 0, values=(0, 0, 1, 1, 3, 3)), F((3, 2))),
     S(F((3, 4)), 0, _idx((3, 4), 2), F((3, 5))),
     S(F((3, 4), layout="t"), 0, _idx((2, 4), 2, layout="t"), F((2, 4), layout="offset")),
     S(F((3, 4), "int32"), -1, _idx((2, 3), 3), F((2, 3), "int32")),
     S(F((3, 4), "bool"), 1, _idx((3, 2), 3), F((3, 2), "bool")),
     S(F((3, 4), "int64"), 1, _idx((3, 0), 3), F((3, 0), "int64")),
     S(F(()), 0, _idx((), 0), F(()))],
    [S(F((3, 4)), 1, _idx((1, 2), 0, values=(0, 4)), F((1, 2)), _meta=False),
     S(F((3, 4)), 1, _idx((1, 2), 3), F((1, 2), "float64")),
     S(F((3, 4)), 1, _idx((1, 2), 3), F((1, 1))), S(F((3, 4)), 1, _idx((1, 2), 3, "int16"),
                                                      F((1, 2)))])
ENTRIES["index_copy.default"] = E(
    [S(F((3, 4)), 0, _idx((2,), 0, values=(2, 0)), F((2, 4))),
     S(F((3, 4)), 0, _idx((2,), 0, values=(0, 0)), F((2, 4))),
     S(F((3, 4), layout="t"), 1, _idx((3,), 0, values=(3, 1, 0)), F((3, 3), "float32", "t")),
     S(F((3, 4), "int64"), -1, _idx((1,), 3), F((3, 1), "int64", "expand")),
     S(F((3, 4)), 0, _idx((0,), 2), F((0, 4))), S(F(()), 0, _idx((), 0), F(())),
     S(F((2, 3, 4)), 1, _idx((2,), 0, values=(1, 2)), F((2, 2, 4)))],
    [S(F((3, 4)), 0, _idx((2,), 0, values=(0, 5)), F((2, 4)), _meta=False),
     S(F((3, 4)), 0, _idx((2,), 2), F((3, 4))), S(F((3, 4)), 0, _idx((2,), 2), F((2, 5))),
     S(F((2, 3, 4)), 1, _idx((2,), 2), F((2, 2, 5))),
     S(F((3, 4)), 0, _idx((2,), 2), F((2, 4), "float64")),
     S(F((3, 4)), 0, _idx((2,), 2, "int32"), F((2, 4))), S(F((3, 4)), 0, _idx((1, 2), 2),
                                                            F((2, 4))),
     S(F((3, 4)), 0, _idx((2,), 2), F((8,))), S(F((3, 4)), 0, _idx((2,), 2), F(()))])
_MASK = T((3, 4), "bool", values=(1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1))
ENTRIES["masked_scatter.default"] = E(
    [S(F((3, 4)), _MASK, F((12,))), S(F((3, 4)), F((4,), "bool"), F((3, 4))),
     S(F((4,)), F((2, 4), "bool"), F((3, 5), layout="t")),
     S(F((3, 4), "int64", "t"), F((3, 4), "bool", "t"), F((20,), "int64")),
     S(F((0, 4)), F((4,), "bool"), F((2,))), S(F(()), F((), "bool"), F((1,)))],
    [S(F((3, 4)), F((3, 4), "bool", values=(1,) * 12), F((3,)), _meta=False),
     S(F((3, 4)), F((4,), "bool"), F((12,), "float64")),
     S(F((3, 4)), F((4,), "uint8"), F((12,))), S(F((3, 4)), F((3,), "bool"), F((12,)))])

# -- blends --------------------------------------------------------------------------------------
ENTRIES["lerp.Scalar"] = E(
    [S(F((2, 3)), F((2, 3)), 0.25), S(F((3,)), F((2, 3)), 0.75), S(F((2, 3), layout="t"),
                                                                  F((2, 3)), 2),
     S(F((2, 3), "float64"), F((2, 3), "float64", "step"), -0.5), S(F(()), F((0, 3)), 0.5),
     S(F((2, 3), "float16"), F((2, 3), "float16"), 0.375)],
    [S(F((2, 3), "int64"), F((2, 3), "int64"), 0.5), S(F((2, 3)), F((2, 3), "float64"), 0.5),
     S(F((2, 3)), F((4,)), 0.5)])
ENTRIES["lerp.Tensor"] = E(
    [S(F((2, 3)), F((2, 3)), F((2, 3), lo=0, hi=1)), S(F((3,)), F((2, 3)), F((3,))),
     S(F((2, 3), layout="t"), F((2, 3)), F(())), S(F((2, 3)), F((2, 3)), F((), "float64")),
     S(F((2, 3), "float64", "offset"), F((2, 3), "float64"), F((2, 1), "float64")),
     S(F((0, 3)), F((3,)), F((1, 3))), S(F((3,)), F((3,)), F((2, 2, 3)))],
    [S(F((2, 3), "int64"), F((2, 3), "int64"), F((2, 3), "int64")),
     S(F((2, 3)), F((2, 3)), F((2, 3), "float64")), S(F((2, 3)), F((2, 3), "float64"), F(()))])
ENTRIES["addcmul.default"] = E(
    [S(F((2, 3)), F((2, 3)), F((2, 3))), S(F((3,)), F((2, 1)), F((2, 3)), value=0.5),
     S(F((2, 3), "int64"), F((2, 3), "float64"), F((3,)), value=2),
     S(F((2, 3), "int64", "t"), F((2, 3), "int64"), F((2, 3), "int64"), value=0.5),
     S(F(()), F((0, 3)), F((3,))), S(F((2, 3), "float16"), F((2, 3), "float16"),
                                     F((2, 3), "float16"), value=3)],
    [S(F((2, 3), "bool"), F((2, 3), "bool"), F((2, 3), "bool")),
     S(F((2, 3)), F((3,)), F((4,)))])
ENTRIES["addcdiv.default"] = E(
    [S(F((2, 3)), F((2, 3)), F((2, 3), lo=1, hi=3)), S(F((3,)), F((2, 1)), F((2, 3), lo=1, hi=2),
                                                       value=-2),
     S(F((2, 3), "int64"), F((2, 3)), F((2, 3), "int64", lo=1, hi=4), value=0.5),
     S(F((2, 3), "bool", "t"), F((2, 3), "float64"), F((2, 3), lo=1, hi=2)),
     S(F(()), F((0, 3)), F((3,))), S(F((2, 3), "float16"), F((2, 3), "float16"),
                                     F((2, 3), "float16", lo=1, hi=2), value=3)],
    [S(F((2, 3)), F((2, 3), "int64"), F((2, 3), "int64")), S(F((2, 3)), F((3,)), F((4,)))])
ENTRIES["baddbmm.default"] = E(
    [S(F((2, 3, 5)), F((2, 3, 4)), F((2, 4, 5))),
     S(F((5,)), F((2, 3, 4)), F((2, 4, 5)), beta=0.5, alpha=2),
     S(F(()), F((2, 3, 4), layout="t"), F((2, 4, 5), layout="offset"), beta=0),
     S(F((2, 3, 5), "int64"), F((2, 3, 4), "int64"), F((2, 4, 5), "int64"), alpha=2),
     S(F((1, 3, 1), "float64"), F((2, 3, 4), "float64"), F((2, 4, 5), "float64")),
     S(F((0, 3, 5)), F((0, 3, 4)), F((0, 4, 5)))],
    [S(F((2, 3, 4)), F((2, 3, 4)), F((2, 4, 5))), S(F((2, 3, 5)), F((2, 3, 4)), F((3, 4, 5))),
     S(F((2, 3, 5), "float64"), F((2, 3, 4)), F((2, 4, 5))), S(F((3, 5)), F((3, 4)),
                                                                F((4, 5)))],
    rtol=1e-6, atol=1e-6)

# -- sorting -------------------------------------------------------------------------------------
_TIES = T((9,), values=(1, 3, float("nan"), 3, 1, -0.0, 0.0, float("nan"), 2))
_SORT = [S(F((3, 4))), S(F((3, 4)), 0), S(F((3, 4)), 1, True), S(_TIES), S(_TIES, 0, True),
         S(F((3, 4), "int64", "t"), 0), S(F((3, 4), layout="t"), 1), S(F((3, 4), layout="expand")),
         S(F((3, 4), "int32", "step"), 1, True), S(F((2, 3, 4, 5), layout="cl"), 1),
         S(F((5,), "bool")), S(F(())), S(F((0, 3)), 0), S(F((3, 4), "float16"), -2)]
ENTRIES["sort.default"] = E(_SORT, [S(F((3, 4)), 2), S(F(()), 1)])
ENTRIES["sort.stable"] = E(
    [S(*s.args[:1], stable=True, **dict(zip(("dim", "descending"), s.args[1:]))) for s in _SORT]
    + [S(_TIES, stable=False, descending=True), S(F((20,), "int64", lo=0, hi=2), stable=True),
       S(F((20,), "int64", lo=0, hi=2), stable=True, descending=True),
       S(F((3, 4)), stable=None)],
    [S(F((3, 4)), stable=True, dim=2)])
ENTRIES["argsort.default"] = E(
    [S(F((3, 4))), S(_TIES, 0, True), S(F((3, 4), "int64", "t"), 0), S(F(()))],
    [S(F((3, 4)), 3)])
ENTRIES["argsort.stable"] = E(
    [S(F((3, 4), layout="t"), stable=True), S(_TIES, stable=True, descending=True),
     S(F((20,), "int32", lo=0, hi=2), stable=True, dim=0), S(F((0, 3)), stable=False)],
    [S(F((3, 4)), stable=True, dim=3)])
_PERM = T((3, 4), values=(5, 1, 7, 2, 0, 11, 3, 9, 8, 4, 10, 6))
ENTRIES["topk.default"] = E(
    [S(_PERM, 2), S(_PERM, 2, 0), S(_PERM, 3, 1, False), S(_PERM, 0),
     S(T((3, 4), "int64", "t", values=(5, 1, 7, 2, 0, 11, 3, 9, 8, 4, 10, 6)), 2, 0),
     S(T((9,), values=(1, 3, float("nan"), 4, 8, -0.5, 0.0, 7, 2)), 3),
     S(T((9,), values=(1, 3, float("nan"), 4, 8, -0.5, 0.0, 7, 2)), 3, largest=False),
     S(F(()), 1), S(F(()), 0), S(F((0, 3)), 2), S(T((4,), "float16", values=(1, 4, 2, 3)), 4)],
    [S(_PERM, 5), S(_PERM, -1), S(F(()), 2), S(F((3, 4)), 1, 2), S(F((3,), "bool"), 1)])
