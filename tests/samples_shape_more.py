"""Sample table, part 4: more shape ops (``broadcast_to``, ``ravel``, ``atleast_*d``,
``hstack``/``vstack``/``dstack``, ``tensor_split``, ``hsplit``/``vsplit``/``dsplit``,
``fliplr``/``flipud``, ``rot90``, ``trace``, ``take``, ``vdot``, ``diff``). See ``samples.py``
for the spec language; ``out=`` overloads derive their samples from the functional entry.
"""

from __future__ import annotations

from samples import E, S, T

F = T
ENTRIES = {}


def _idx(shape, hi, dtype="int64", values=None, layout="contig"):
    return T(shape, dtype, layout, lo=0, hi=hi, values=values)


# -- composites ----------------------------------------------------------------------------------
ENTRIES["broadcast_to.default"] = E(
    [S(F((3,)), [2, 3]), S(F((2, 1), layout="step"), [2, -1, 4]), S(F(()), [0]),
     S(F((2, 3), "int64", "t"), [2, 3])],
    [S(F((2, 3)), [3]), S(F((2, 3)), [3, 3])])
ENTRIES["ravel.default"] = E(
    [S(F((2, 3))), S(F((2, 3), layout="t")), S(F(())), S(F((0, 3), "int64")),
     S(F((2, 3), layout="offset")), S(F((2, 3, 4, 5), layout="cl"))])
for _n in (1, 2, 3):
    ENTRIES[f"atleast_{_n}d.default"] = E(
        [S(F(())), S(F((3,), "int64")), S(F((2, 3), layout="t")), S(F((2, 3, 4))),
         S(F((3,), layout="step"))])
_STACKS = [S([F((2, 3)), F((2, 2), "int64")]), S([F((3,)), F((2,), "float64")]),
           S([F(()), F(())]), S([F((2, 3), layout="t"), F((2, 3))]), S([F((3,))]),
           S([F((2, 3, 4)), F((2, 3, 4), layout="step")])]
ENTRIES["hstack.default"] = E(list(_STACKS),
                              [S([]), S([F((2, 3)), F((3, 3))]), S([F((3,)), F((2, 3))])])
ENTRIES["vstack.default"] = E(
    [S([F((2, 3)), F((1, 3), "int32")]), S([F((3,)), F((3,))]), S([F(()), F(())]),
     S([F((3,)), F((2, 3), layout="t")]), S([F((2, 3, 4)), F((1, 3, 4), layout="offset")])],
    [S([]), S([F((2, 3)), F((2, 2))])])
ENTRIES["dstack.default"] = E(
    [S([F((2, 3)), F((2, 3), "int64")]), S([F((3,)), F((3,))]), S([F(()), F(())]),
     S([F((2, 3), layout="t"), F((2, 3, 2))]), S([F((2, 3, 4)), F((2, 3, 1))])],
    [S([]), S([F((2, 3)), F((3, 3))])])
ENTRIES["tensor_split.sections"] = E(
    [S(F((2, 7)), 3, 1), S(F((5,)), 2), S(F((2, 3)), 5, -1), S(F((0, 3), "int64"), 2),
     S(F((4, 3), layout="t"), 4, 0), S(F((3,)), 1)],
    [S(F(()), 1), S(F((3,)), 0), S(F((3,)), -1), S(F((3,)), 2, 1)])
ENTRIES["tensor_split.indices"] = E(
    [S(F((2, 7)), [1, 4], 1), S(F((5,)), [3, 1]), S(F((5,)), [-2, 9]), S(F((5,)), []),
     S(F((4, 3), "int64", "t"), [2], 0), S(F((0,)), [0, 0])],
    [S(F(()), [1]), S(F((3,)), [1], 2)])
ENTRIES["tensor_split.tensor_indices_or_sections"] = E(
    [S(F((2, 7)), _idx((2,), 0, values=(1, 4)), 1, _meta=False),
     S(F((5,)), _idx((), 0, values=(2,)), _meta=False),
     S(F((6,), "int64"), _idx((3,), 0, values=(2, 3, 1), layout="step"), _meta=False),
     S(F((5,)), _idx((0,), 1), _meta=False)],
    # On meta PyTorch refuses the (meta) indices tensor: test_more_shape_ops_oracle.py.
    [S(F(()), _idx((1,), 1), _meta=False), S(F((3,)), F((1,)), _meta=False),
     S(F((3,)), _idx((1, 1), 1), _meta=False), S(F((3,)), _idx((1,), 1, "int32"), _meta=False),
     S(F((3,)), _idx((), 0, values=(0,)), _meta=False)])
for _name, _ok, _bad, _empty in (("hsplit", F((2, 6)), F(()), F((0, 6))),
                                 ("vsplit", F((6, 2)), F((6,)), F((6, 0))),
                                 ("dsplit", F((2, 2, 6)), F((2, 6)), F((0, 2, 6)))):
    ENTRIES[f"{_name}.int"] = E(
        [S(_ok, 3), S(_ok, 1), S(F((6,)), 2) if _name == "hsplit" else S(_ok, 6),
         S(T(_ok.shape, "int64", "t"), 2), S(_empty, 2)],
        [S(_ok, 4), S(_ok, 0), S(_bad, 1), S(_ok, -1)])
    ENTRIES[f"{_name}.array"] = E(
        [S(_ok, [1, 4]), S(_ok, []), S(_ok, [5, 2]), S(T(_ok.shape, "bool", "step"), [1]),
         S(_empty, [1])],
        [S(_bad, [1])])
ENTRIES["fliplr.default"] = E(
    [S(F((2, 3))), S(F((2, 3, 4), "int64", "t")), S(F((0, 2)))], [S(F((3,))), S(F(()))])
ENTRIES["flipud.default"] = E(
    [S(F((2, 3))), S(F((3,), "bool", "step")), S(F((2, 3, 4), layout="offset")), S(F((0, 3)))],
    [S(F(()))])
ENTRIES["diff.default"] = E(
    [S(F((2, 5))), S(F((2, 5)), 2, 0), S(F((2, 5)), 3), S(F((2, 5)), 9), S(F((2, 5)), 0),
     S(F((2, 5), "int64", "t"), 1, 0), S(F((2, 5)), 1, -1, F((2, 2)), F((2, 1))),
     S(F((2, 5)), 2, 0, F((1, 5), "float64")), S(F((2, 5)), 1, 1, None, F((2, 3), "int32")),
     S(F((2, 0))), S(F((4,), "float16", "step")), S(F((3, 4), "uint8"), 1, 0),
     S(F((2, 5)), 0, 1, F((2, 1)))],
    [S(F(())), S(F((2, 5)), -1), S(F((2, 5)), 1, 1, F((5,))), S(F((2, 5)), 1, 1, F((3, 5))),
     S(F((2, 5)), 1, 2)])

# -- primitives ----------------------------------------------------------------------------------
ENTRIES["rot90.default"] = E(
    [S(F((2, 3))), S(F((2, 3)), 2), S(F((2, 3)), 3), S(F((2, 3)), 0), S(F((2, 3)), -1),
     S(F((2, 3)), 5, [1, 0]), S(F((2, 3, 4)), 1, [2, 0]), S(F((2, 3, 4), "int64", "t"), 1, [-1, 1]),
     S(F((2, 3), layout="step"), 2), S(F((0, 3), "bool")), S(F((2, 3, 4, 5), layout="cl"), 1, [1, 3])],
    [S(F((3,))), S(F((2, 3)), 1, [0]), S(F((2, 3)), 1, [0, 0]), S(F((2, 3)), 1, [0, -2]),
     S(F((2, 3)), 1, [0, 2]), S(F((2, 3)), 1, [0, 1, 2])])
ENTRIES["trace.default"] = E(
    [S(F((3, 3))), S(F((2, 3))), S(F((4, 2), layout="t")), S(F((3, 3), "int32")),
     S(F((3, 3), "uint8")), S(F((0, 3))), S(F((3, 3), "float16")), S(F((3, 3), "float64")),
     S(F((3, 4), "int64", "step"))],
    [S(F((3,))), S(F((2, 3, 3))), S(F((2, 2), "bool"))])
ENTRIES["take.default"] = E(
    [S(F((2, 3)), _idx((4,), 0, values=(0, 5, -1, -6))), S(F((2, 3), layout="t"), _idx((2, 2), 6)),
     S(F((2, 3), "int64"), _idx((), 5)), S(F(()), _idx((2,), 0, values=(0, -1))),
     S(F((0,)), _idx((0,), 1)), S(F((3,), "bool", "step"), _idx((2, 3), 2, layout="t"))],
    [S(F((2, 3)), _idx((1,), 0, values=(6,)), _meta=False),
     S(F((2, 3)), _idx((1,), 0, values=(-7,)), _meta=False),
     S(F((2, 3)), _idx((1,), 3, "int32")), S(F((0,)), _idx((1,), 1)), S(F((2, 3)), F((1,)))])
ENTRIES["vdot.default"] = E(
    [S(F((3,)), F((3,))), S(F((3,), "int64"), F((3,), "int64", "step")), S(F((0,)), F((0,))),
     S(F((4,), "float16"), F((4,), "float16")), S(F((3,), "float64", "offset"), F((3,), "float64"))],
    [S(F((3,)), F((4,))), S(F((2, 3)), F((6,))), S(F((3,)), F((3,), "float64")),
     S(F((3,), "bool"), F((3,), "bool"))])
