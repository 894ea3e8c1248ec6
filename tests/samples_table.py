"""Sample table, part 1: factories, views, in-place view ops, scatters and copies.

Keys are ``"name.overload"`` of ``sk.ops``. Each ``Entry`` lists valid calls (``samples``) and
bad calls (``errors``); the sweep runs both libraries on each and compares. See ``samples.py``
for the spec language (``T``, ``D``, ``MF``, ``StorageOf``, ``S``).
"""

from __future__ import annotations

from samples import MF, D, E, S, StorageOf, T

F = T  # readability: F((2, 3)) is a float32 contiguous tensor

ENTRIES = {}

# -- factories -----------------------------------------------------------------------------------
ENTRIES["empty.memory_format"] = E(
    [S([2, 3], _values=False), S([0, 3], _values=False), S([], _values=False),
     S([2, 3], dtype=D("int64"), _values=False),
     S([2, 3, 4, 5], memory_format=MF("channels_last"), _values=False),
     S([2, 3], dtype=D("float64"), requires_grad=True, _values=False)],
    [S([-1, 2]), S([2, 3], dtype=D("int64"), requires_grad=True)])
ENTRIES["empty_strided.default"] = E(
    [S([2, 3], [1, 2], _values=False), S([2, 3], [0, 1], _values=False),
     S([0, 4], [1, 1], _values=False), S([], [], dtype=D("int32"), _values=False)],
    [S([2, 3], [1]), S([-2, 3], [3, 1])])
ENTRIES["full.default"] = E(
    [S([2, 3], 1.5), S([2], 3), S([2], True), S([], 2.0), S([2, 2], 7, dtype=D("int32")),
     S([0, 2], 1.0), S([3], 2.5, dtype=D("float16")), S([2], 1.0, requires_grad=True)],
    [S([-1], 1.0)])
ENTRIES["arange.start_step"] = E(
    [S(0, 5, 1), S(0.0, 1.0, 0.25), S(5, 0, -1), S(0, 10, 3, dtype=D("float64")), S(1, 1),
     S(-1.5, 2.0, 0.5), S(0, 6, 2, dtype=D("int32"))],
    [S(0, 5, 0), S(0, 5, -1)])
ENTRIES["linspace.default"] = E(
    [S(0, 10, 5), S(-1.5, 2.0, 7), S(3, 1, 1), S(0, 1, 0), S(0.1, 3.3, 16, dtype=D("float64")),
     S(10, -3, 6, dtype=D("uint8")), S(-3.7, 10, 7, dtype=D("int32")),
     S(-2.5, 882.7, 100, dtype=D("bfloat16")), S(0, 1, 9, dtype=D("float16")),
     S(0, 1, 1, dtype=D("bool")), S(-707.28, -909.53, 31), S(0, 1, 4, requires_grad=True)],
    # torch checks the dtype and the ends in the cpu kernel only: meta makes the tensor
    [S(0, 1, -1), S(0, 1, 3, dtype=D("bool"), _meta=False), S(1e300, 0, 3, _meta=False)])
ENTRIES["logspace.default"] = E(
    [S(0, 2, 3), S(0, 1, 5, 2.0), S(-3, 3, 7, 2.0, dtype=D("int32")), S(1, 3, 1), S(0, 1, 0),
     S(0, 2, 3, dtype=D("float16")), S(0, 2, 5, dtype=D("bfloat16")), S(0, 1, 1, dtype=D("bool")),
     S(0, 1, 4, 2.0, dtype=D("float64")), S(0, 1, 3, requires_grad=True)],
    # torch checks the dtype and the fill value in the cpu kernel only
    [S(0, 1, -1), S(0, 1, 3, dtype=D("bool"), _meta=False),
     S(3, 3, 1, dtype=D("int8"), _meta=False)])
ENTRIES["eye.m"] = E(
    [S(3, 4), S(0, 2), S(2, 2, dtype=D("int64")), S(3, 1, dtype=D("bool"))],
    [S(-1, 2)])
ENTRIES["ones.default"] = E(
    [S([2, 3]), S([0]), S([], dtype=D("int64")), S([2], dtype=D("bool")),
     S([2], dtype=D("float64"), requires_grad=True)],
    [S([-1]), S([2], dtype=D("int64"), requires_grad=True)])
ENTRIES["zeros.default"] = E(
    [S([2, 3]), S([0, 2]), S([], dtype=D("int32")), S([3], dtype=D("float16"))],
    [S([-2, 1])])
ENTRIES["arange.default"] = E(
    [S(5), S(2.5), S(0), S(4, dtype=D("float64")), S(3.0, dtype=D("int64"))],
    [S(-1)])
ENTRIES["arange.start"] = E(
    [S(1, 5), S(-2.5, 1.0), S(3, 3), S(0, 4, dtype=D("int32"))],
    [S(5, 1)])
ENTRIES["eye.default"] = E(
    [S(3), S(0), S(2, dtype=D("int64"))],
    [S(-1)])
ENTRIES["randint.default"] = E(
    [S(10, [3, 4]), S(5, [6], dtype=D("int32")), S(2, [0])],
    [S(0, [2]), S(-3, [2])], random=True)
ENTRIES["rand.default"] = E(
    [S([2, 3]), S([0]), S([4], dtype=D("float64")), S([], dtype=D("float16"))],
    [S([2], dtype=D("int64")), S([-1])], random=True)
ENTRIES["randn.default"] = E(
    [S([2, 3]), S([0, 2]), S([4], dtype=D("float64"))],
    [S([2], dtype=D("int64"))], random=True)
ENTRIES["randint.low"] = E(
    [S(0, 10, [3, 4]), S(-5, 5, [6], dtype=D("int32")), S(0, 2, [0]),
     S(0, 3, [2], dtype=D("float32"))],
    [S(5, 5, [2]), S(3, 1, [2])], random=True)
ENTRIES["scalar_tensor.default"] = E(
    [S(2.5), S(3, dtype=D("int64")), S(True, dtype=D("bool")), S(1.5, dtype=D("float16"))])
_LIKE_SAMPLES = [S(F((2, 3))), S(F((3, 4), layout="t")), S(F((2, 3), "int64"), dtype=D("float64")),
                 S(F((2, 3, 4, 5), layout="cl")), S(F((0, 3))), S(F(())),
                 S(F((3, 4), layout="t"), memory_format=MF("contiguous_format")),
                 S(F((2, 3)), dtype=D("float64"), requires_grad=True)]
for _name in ("empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"):
    ENTRIES[f"{_name}.default"] = E(
        list(_LIKE_SAMPLES),
        [S(F((2, 3)), dtype=D("int64"), requires_grad=True)],
        random=_name.startswith(("empty", "rand")))
ENTRIES["full_like.default"] = E(
    [S(F((2, 3)), 1.5), S(F((3, 4), layout="t"), 2), S(F((2, 3), "int64"), 7),
     S(F((2, 3, 4, 5), layout="cl"), 0.5), S(F((0, 3)), 1.0), S(F(()), True)],
    [S(F((2, 3)), 1.0, dtype=D("int64"), requires_grad=True)])
ENTRIES["lift_fresh.default"] = E([S(F((2, 3))), S(F((3, 4), "int32", "t"))])
ENTRIES["new_empty.default"] = E(
    [S(F((2, 3)), [3, 4], _values=False), S(F((2, 3), "int64", "t"), [2], _values=False),
     S(F(()), [], dtype=D("float64"), _values=False), S(F((0, 3)), [0, 2], _values=False),
     S(F((2, 3)), [2], dtype=D("float16"), requires_grad=True, _values=False)],
    [S(F((2, 3)), [-1, 2]), S(F((2, 3), "int64"), [2], requires_grad=True)])
ENTRIES["new_empty_strided.default"] = E(
    [S(F((2, 3)), [2, 3], [1, 2], _values=False), S(F((3,), "int32", "step"), [4], [0],
                                                    _values=False),
     S(F(()), [], [], dtype=D("bool"), _values=False), S(F((0,)), [0, 4], [1, 1], _values=False)],
    [S(F((2, 3)), [2, 3], [1]), S(F((2, 3)), [-2, 3], [3, 1])])
ENTRIES["new_full.default"] = E(
    [S(F((2, 3)), [3], 1.5), S(F((2, 3), "int64"), [2, 2], 2.5), S(F((2, 3), "int64"), [2], True),
     S(F((2, 3), "bool", "t"), [2], 3), S(F(()), [], 7, dtype=D("int32")), S(F((0, 3)), [0], 1.0),
     S(F((2,), "float16"), [3], 2.5, requires_grad=True)],
    [S(F((2,), "uint8"), [2], 300), S(F((2, 3)), [-1], 1.0), S(F((2,), "int8"), [2], 1e10)])
for _name in ("new_zeros", "new_ones"):
    ENTRIES[f"{_name}.default"] = E(
        [S(F((2, 3)), [3, 4]), S(F((2, 3), "int64", "t"), [2]), S(F((2,), "bool"), [3]),
         S(F(()), [], dtype=D("float64")), S(F((0, 3)), [0, 2]),
         S(F((2, 3), "int32"), [2], dtype=D("float16"), requires_grad=True)],
        [S(F((2, 3)), [-1, 2]), S(F((2, 3), "int64"), [2], requires_grad=True)])

# -- views ---------------------------------------------------------------------------------------
ENTRIES["view.default"] = E(
    [S(F((2, 3)), [3, 2]), S(F((2, 3)), [-1]), S(F((6, 4), layout="t"), [3, 2, 4]),
     S(F((3, 1), layout="expand"), [3]), S(F((0, 3)), [3, 0]), S(F(()), [1]),
     S(F((1,)), []), S(F((2, 3), "int64", "offset"), [6]), S(F((2, 3, 4, 5), layout="cl"),
                                                             [2, 3, 20])],
    [S(F((2, 3)), [5]), S(F((6, 4), layout="t"), [24]), S(F((2, 3)), [-1, -1]),
     S(F((2, 3)), [-2, 3]), S(F((0, 3)), [-1, 0]), S(F((3,), layout="expand"), [3, 1, 1, 1, 2])])
ENTRIES["view.dtype"] = E(
    [S(F((2, 4)), D("int32")), S(F((2, 4)), D("float16")), S(F((2, 4), "int16"), D("float32")),
     S(F((2, 4), layout="offset"), D("int32")), S(F((2, 4), "uint8"), D("bool")),
     S(F((2, 4), "float64"), D("int8")), S(F(()), D("int32"))],
    [S(F((2, 3), "int16"), D("float32")), S(F((2, 4), layout="t"), D("float16")),
     S(F((), "int16"), D("float32")), S(F((2, 4), "int16", "offset"), D("float32"))])
ENTRIES["_unsafe_view.default"] = E(
    [S(F((2, 3)), [3, 2]), S(F((2, 3)), [-1]), S(F((2, 3), "int32"), [1, 6])],
    [S(F((2, 3)), [4])])
ENTRIES["as_strided.default"] = E(
    [S(F((10,)), [3, 3], [1, 1]), S(F((10,), layout="offset"), [2], [1]),
     S(F((10,)), [2, 2], [2, 1], 1), S(F((10,)), [0], [1], 20), S(F((4, 5)), [2, 2], [0, 1]),
     S(F((3, 4), "int64", "t"), [4, 3], [3, 1], 0), S(F((10,)), [], [], 9)],
    [S(F((10,)), [3, 3], [3, 3]), S(F((10,)), [2], [-1]), S(F((10,)), [2], [1], -1),
     S(F((10,)), [2, 2], [1]), S(F((10,)), [-3], [1])])
ENTRIES["transpose.int"] = E(
    [S(F((2, 3, 4)), 0, 2), S(F((2, 3)), -1, 0), S(F(()), 0, -1), S(F((2, 3), layout="t"), 0, 1),
     S(F((0, 3)), 0, 1), S(F((2, 3)), 1, 1), S(F((2, 3, 4, 5), layout="cl"), 1, 3)],
    [S(F((2, 3)), 0, 2), S(F((2, 3)), -3, 0)])
ENTRIES["t.default"] = E(
    [S(F((2, 3))), S(F((3,))), S(F(())), S(F((2, 3), layout="step")), S(F((0, 2), "int32"))],
    [S(F((2, 3, 4)))])
ENTRIES["permute.default"] = E(
    [S(F((2, 3, 4)), [2, 0, 1]), S(F((2, 3, 4, 5), layout="cl"), [0, 2, 3, 1]), S(F(()), []),
     S(F((2, 3)), [-1, 0]), S(F((2, 3), layout="expand"), [1, 0]), S(F((2, 3)), [0, 1])],
    [S(F((2, 3)), [0, 0]), S(F((2, 3)), [0]), S(F((2, 3)), [0, 2])])
ENTRIES["expand.default"] = E(
    [S(F((3,)), [2, 3]), S(F((3, 1)), [3, 4]), S(F((3, 1)), [-1, 4]), S(F(()), [2, 2]),
     S(F((1, 3), layout="step"), [0, 3]), S(F((3,)), [3]), S(F((1, 3), layout="t"), [2, 2, 3])],
    [S(F((3,)), [2, 4]), S(F((2, 3)), [3]), S(F((3,)), [-1, 3])])
ENTRIES["squeeze.dims"] = E(
    [S(F((2, 1, 3)), [1]), S(F((2, 1, 3)), [0]), S(F((1, 1)), [0, 1]), S(F(()), [0]),
     S(F((2, 1, 3), layout="t"), [1]), S(F((1, 3)), [-2])],
    [S(F((2, 1, 3)), [3])])
ENTRIES["unsqueeze.default"] = E(
    [S(F((2, 3)), 1), S(F((2, 3)), -1), S(F(()), 0), S(F((2, 3), layout="t"), 0),
     S(F((2, 3), layout="expand"), 2)],
    [S(F((2, 3)), 4), S(F((2, 3)), -4)])
ENTRIES["select.int"] = E(
    [S(F((2, 3, 4)), 1, 2), S(F((2, 3, 4)), 0, -1), S(F((2, 3), layout="t"), 1, 0),
     S(F((2, 3), layout="expand"), 0, 1), S(F((2, 0)), 0, 1)],
    [S(F((2, 3, 4)), 1, 3), S(F(()), 0, 0), S(F((2, 3)), 2, 0), S(F((2, 3)), 0, -3)])
ENTRIES["slice.Tensor"] = E(
    [S(F((5, 4)), 0, 1, 4, 2), S(F((5, 4)), 1, None, None, 1), S(F((5, 4)), 1, -3),
     S(F((5, 4)), 0, 10, 20), S(F((5, 4)), 0, None, -1), S(F((5, 4), layout="t"), 1, 1, 3),
     S(F((5, 4)), 0, 3, 1), S(F((5, 4)), 0, -10, 10, 3)],
    [S(F((5, 4)), 0, 0, 5, 0), S(F((5, 4)), 2), S(F((5, 4)), 0, 0, 5, -1)])
ENTRIES["diagonal.default"] = E(
    [S(F((3, 4))), S(F((3, 4)), 1), S(F((3, 4)), -1), S(F((2, 3, 4)), 0, 1, 2),
     S(F((3, 4), layout="t")), S(F((3, 4)), 5), S(F((2, 3, 4)), 1, -1, 0)],
    [S(F((3, 4)), 0, 1, 1), S(F((3,)))])
ENTRIES["unfold.default"] = E(
    [S(F((10,)), 0, 3, 2), S(F((4, 5)), 1, 2, 1), S(F(()), 0, 1, 1), S(F((4, 5)), 0, 4, 3),
     S(F((4, 5), layout="t"), -1, 2, 2)],
    [S(F((10,)), 0, 11, 1), S(F((10,)), 0, 3, 0), S(F((10,)), 1, 3, 1)])
ENTRIES["split.Tensor"] = E(
    [S(F((5, 4)), 2), S(F((5, 4)), 2, 1), S(F((5, 4)), 5), S(F((5, 4)), 10),
     S(F((5, 4), layout="t"), 3, -1), S(F((0, 4)), 2)],
    [S(F((5, 4)), -1), S(F(()), 1), S(F((5, 4)), 0)])
ENTRIES["split_with_sizes.default"] = E(
    [S(F((5, 4)), [2, 3]), S(F((5, 4)), [1, 1, 2], 1), S(F((5, 4)), [0, 5])],
    [S(F((6,)), [2, 3]), S(F((5, 4)), [6, -1])])
ENTRIES["unbind.int"] = E(
    [S(F((3, 4))), S(F((3, 4)), 1), S(F((0, 2)), 0), S(F((3, 4), layout="t"), -1)],
    [S(F(())), S(F((3, 4)), 2)])
ENTRIES["alias.default"] = E([S(F((2, 3))), S(F((2, 3), layout="t")), S(F(()))])
ENTRIES["detach.default"] = E([S(F((2, 3))), S(F((2, 3), layout="step")), S(F((), "int64"))])

# -- in-place view ops ---------------------------------------------------------------------------
ENTRIES["t_.default"] = E([S(F((2, 3))), S(F((3,))), S(F((2, 3), layout="offset"))],
                          [S(F((2, 3, 4)))])
ENTRIES["transpose_.default"] = E([S(F((2, 3, 4)), 0, 2), S(F((2, 3)), 1, 1)],
                                  [S(F((2, 3)), 0, 2)])
ENTRIES["unsqueeze_.default"] = E([S(F((2, 3)), 1), S(F(()), 0), S(F((2, 3), layout="t"), -1)],
                                  [S(F((2, 3)), 3)])
ENTRIES["squeeze_.dims"] = E([S(F((2, 1, 3)), [1]), S(F((1, 1)), [0, 1])],
                             [S(F((2, 1)), [2])])
ENTRIES["as_strided_.default"] = E(
    [S(F((10,)), [3, 3], [2, 1]), S(F((10,), layout="offset"), [2], [2])],
    [S(F((10,)), [3, 3], [3, 3]), S(F((10,)), [2], [-1])])
ENTRIES["resize_.default"] = E(
    [S(F((2, 3)), [3, 2]), S(F((2, 3)), [2, 3]), S(F((2, 3)), [0]), S(F((2, 3)), [4, 4],
                                                                        _values=False),
     S(F((2, 3), layout="t"), [6]), S(F((2, 3)), [1, 2, 3]),
     S(F((2, 3)), [2, 3, 4, 5], memory_format=MF("channels_last"), _values=False)],
    [S(F((2, 3)), [-1])])
ENTRIES["resize_as_.default"] = E(
    [S(F((2, 3)), F((3, 2))), S(F((2, 3), layout="t"), F((3, 2))), S(F((2, 3)), F((2, 3))),
     S(F((2, 3)), F((0,))), S(F((6,)), F((2, 3), layout="t")),
     S(F((2, 3), "int64"), F((4,), "float64"))],
    [S(F((2, 3)), F((2, 3, 4)), memory_format=MF("channels_last"))])
ENTRIES["set_.source_Storage_storage_offset"] = E(
    [S(F((2, 3)), StorageOf(F((10,))), 0, [2, 2], [2, 1]),
     S(F((2, 3)), StorageOf(F((10,))), 2, [3], [1]),
     S(F((2, 3)), StorageOf(F((10,))), 8, [2, 2], [2, 1], _values=False),
     S(F((2, 3)), StorageOf(F((10,))), 1, [2, 2])],
    [S(F((2, 3)), StorageOf(F((10,))), -1, [2], [1]),
     S(F((2, 3)), StorageOf(F((10,))), 0, [2, 2], [1])])
ENTRIES["set_.source_Tensor"] = E(
    [S(F((2, 3)), F((4,))), S(F((2, 3)), F((3, 4), layout="t")), S(F(()), F((0,)))])

# -- functional scatters -------------------------------------------------------------------------
ENTRIES["slice_scatter.default"] = E(
    [S(F((5, 4)), F((2, 4)), 0, 1, 5, 2), S(F((5, 4)), F((5, 2)), 1, 2),
     S(F((5, 4), layout="t"), F((5, 4))), S(F((5, 4)), F((0, 4)), 0, 3, 3),
     S(F((5, 4)), F((5, 2), layout="t"), 1, None, None, 2)],
    [S(F((5, 4)), F((2, 4)), 0, 1, 4), S(F((5, 4)), F((5, 4)), 0, 0, 5, 0)])
ENTRIES["select_scatter.default"] = E(
    [S(F((3, 4)), F((4,)), 0, 1), S(F((3, 4)), F((3,)), 1, -1),
     S(F((3, 4), layout="t"), F((4,)), 0, 2), S(F((2, 3, 4)), F((2, 4)), 1, 0)],
    [S(F((3, 4)), F((3,)), 0, 1), S(F((3, 4)), F((4,)), 0, 3)])
ENTRIES["diagonal_scatter.default"] = E(
    [S(F((3, 4)), F((3,))), S(F((3, 4)), F((3,)), 1), S(F((3, 4)), F((2,)), -1),
     S(F((2, 3, 4)), F((2, 3)), 0, 1, 2), S(F((3, 4), layout="t"), F((3,)))],
    [S(F((3, 4)), F((4,))), S(F((3, 4)), F((3,)), 0, 1, 1)])
ENTRIES["as_strided_scatter.default"] = E(
    [S(F((10,)), F((2, 3)), [2, 3], [3, 1], 1), S(F((4, 4)), F((2, 2)), [2, 2], [4, 1], 5),
     S(F((4, 4), layout="t"), F((4,)), [4], [5], 0)],
    [S(F((10,)), F((2, 2)), [2, 3], [3, 1]), S(F((10,)), F((3, 3)), [3, 3], [3, 3])])

# -- the views' backward ops: zeros of input_sizes with grad_output written through the view -------
ENTRIES["select_backward.default"] = E(
    [S(F((4,)), [3, 4], 0, 1), S(F((3,)), [3, 4], 1, -1), S(F((1,)), [3, 4], 0, 2),
     S(F((2, 4), layout="t"), [2, 3, 4], 1, 0), S(F((4,), "float64", "step"), [3, 4], -2, 0),
     S(F(()), [5], 0, 4), S(F((4,), "int64"), [3, 4], 0, 0), S(F((0,)), [2, 0], 0, 1),
     S(F((3,), layout="expand"), [2, 3], 0, 1)],
    [S(F((4,)), [3, 4], 0, 3), S(F((4,)), [3, 4], 2, 0), S(F((5,)), [3, 4], 0, 1),
     S(F((2, 4)), [3, 4], 0, 1), S(F(()), [], 0, 0), S(F((4,)), [3, -4], 0, 1)])
ENTRIES["slice_backward.default"] = E(
    [S(F((2, 4)), [5, 4], 0, 1, 5, 2), S(F((5, 2)), [5, 4], 1, 2, 9223372036854775807, 1),
     S(F((5, 2), layout="t"), [5, 4], -1, -100, 100, 3), S(F((0, 4)), [5, 4], 0, 3, 3, 1),
     S(F((3, 4), "float64", "offset"), [5, 4], 0, 0, -2, 1), S(F((1, 4)), [5, 4], 0, 1, 4, 1)],
    [S(F((2, 4)), [5, 4], 0, 1, 4, 1), S(F((5, 4)), [5, 4], 0, 0, 5, 0),
     S(F((5, 4)), [5, 4], 2, 0, 5, 1), S(F(()), [], 0, 0, 1, 1)])
ENTRIES["diagonal_backward.default"] = E(
    [S(F((3,)), [3, 4], 0, 0, 1), S(F((3,)), [3, 4], 1, 0, 1), S(F((2,)), [3, 4], -1, 0, 1),
     S(F((2, 3)), [2, 3, 4], 0, 1, 2), S(F((4, 2), layout="t"), [3, 4, 2], 0, -1, 0),
     S(F((0,)), [3, 4], 10, 0, 1), S(F((3,), "int32"), [3, 3], 0, 1, 0)],
    [S(F((4,)), [3, 4], 0, 0, 1), S(F((3,)), [3, 4], 0, 1, 1), S(F((3,)), [3, 4], 0, 0, 2)])

# -- copies --------------------------------------------------------------------------------------
ENTRIES["clone.default"] = E(
    [S(F((2, 3), layout="t")), S(F((2, 3), layout="expand")), S(F((2, 3, 4, 5), layout="cl")),
     S(F((2, 3, 4, 5), layout="cl"), memory_format=MF("contiguous_format")),
     S(F((2, 3, 4, 5)), memory_format=MF("channels_last")), S(F((2, 3), layout="step")),
     S(F(())), S(F((0, 3))), S(F((2, 3), "bool")), S(F((2, 3), "float16", "offset")),
     S(F((3, 4)), memory_format=MF("preserve_format"))])
ENTRIES["_to_copy.default"] = E(
    [S(F((2, 3)), dtype=D("float64")), S(F((2, 3), layout="t"), dtype=D("int32")),
     S(F((2, 3)), dtype=D("bool")), S(F((2, 3), "int64"), dtype=D("float16")),
     S(F((2, 3, 4, 5), layout="cl"), dtype=D("float64")), S(F((2, 3), layout="step")),
     S(F((2, 3)), device="meta"), S(F((2, 3), layout="expand"), dtype=D("float64")),
     S(F((2, 3, 4, 5)), memory_format=MF("channels_last")), S(F(()), dtype=D("int8"))])
ENTRIES["copy.default"] = E(
    [S(F((2, 3)), F((3,))), S(F((2, 3), layout="t"), F((2, 3), "int32")),
     S(F((2, 3)), F(())), S(F((2, 3), "int64"), F((2, 3), "float32")),
     S(F((2, 3, 4, 5), layout="cl"), F((2, 3, 4, 5)))],
    [S(F((2, 3)), F((4,))), S(F((3,)), F((2, 3)))])
ENTRIES["copy_.default"] = E(
    [S(F((2, 3)), F((3,))), S(F((2, 3), layout="t"), F((2, 3), "int32")),
     S(F((2, 3)), F(())), S(F((2, 3), "int64"), F((2, 3), "float32")),
     S(F((2, 3), "bool"), F((2, 3))), S(F((2, 3), layout="step"), F((2, 3), layout="t")),
     S(F((2, 3), name="x"), F((2, 3), name="x"))],
    [S(F((2, 3)), F((4,))), S(F((3,)), F((2, 3))), S(F((2, 3), layout="expand"), F((2, 3)))])
ENTRIES["fill.Scalar"] = E(
    [S(F((2, 3)), 2.5), S(F((2, 3), "int32"), 3), S(F((2, 3), layout="t"), 1),
     S(F((2, 3), "bool"), 1), S(F(()), -1.5), S(F((2, 3), layout="expand"), 2)])
ENTRIES["fill_.Scalar"] = E(
    [S(F((2, 3)), 2.5), S(F((2, 3), "int32"), 3), S(F((2, 3), layout="t"), 1),
     S(F((2, 3), "bool"), 0), S(F(()), -1.5), S(F((2, 3), layout="step"), 7),
     S(F((2, 3), layout="expand"), 1.0)])
ENTRIES["zero_.default"] = E(
    [S(F((2, 3))), S(F((2, 3), layout="step")), S(F((2, 3), "int64", "t")), S(F(())),
     S(F((2, 3), layout="expand"))])
# functional variants of zero_/uniform_/normal_/resize_ (functionalization runs these)
ENTRIES["zero.default"] = E(
    [S(F((2, 3))), S(F((2, 3), "int64", "t")), S(F(())), S(F((2, 3), layout="step"))])
ENTRIES["uniform.default"] = E(
    [S(F((2, 3))), S(F((3, 4), layout="t"), 1, 2), S(F((0, 3))), S(F((), "float64"), -1, 1)],
    [S(F((3,), "int64")), S(F((2, 3)), 2, 1)], random=True)
ENTRIES["normal_functional.default"] = E(
    [S(F((2, 3))), S(F((3, 4), layout="t"), 1, 2), S(F((0, 3)), 0, 1),
     S(F((), "float64"), 1, 3)],
    [S(F((3,), "int64")), S(F((2, 3)), 0, -1)], random=True)
ENTRIES["resize.default"] = E(
    [S(F((2, 3)), [3, 2]), S(F((2, 3)), [2]), S(F((2, 3), layout="t"), [6]),
     S(F((2, 3)), [4, 4], _values=False), S(F((2, 3), "int64"), [0]), S(F(()), [1])],
    [S(F((2, 3)), [-1])])
ENTRIES["_local_scalar_dense.default"] = E(
    [S(F(()), _meta="raises"), S(F((1, 1), "int64"), _meta="raises"),
     S(F((), "bool"), _meta="raises"), S(F((), "float16"), _meta="raises"),
     S(F((1,), "uint8", "offset"), _meta="raises"), S(F((2,)), _meta="raises")],
    data_dependent=True)
ENTRIES["fill.Tensor"] = E(
    [S(F((2, 3)), F(())), S(F((2, 3), "int32"), F((), "float64")), S(F((2, 3), layout="t"),
                                                                       F((), "int64")),
     S(F((2, 3), layout="expand"), F(())), S(F(()), F((), "bool"))],
    [S(F((2, 3)), F((1,))), S(F((2, 3)), F((3,)))])
ENTRIES["fill_.Tensor"] = E(
    [S(F((2, 3)), F(())), S(F((2, 3), "int32"), F((), "float64")),
     S(F((2, 3), layout="step"), F((), "int64")), S(F(()), F((), "bool"))],
    [S(F((2, 3)), F((1,))), S(F((2, 3)), F((3,)))])
ENTRIES["uniform_.default"] = E(
    [S(F((2, 3))), S(F((3, 4), layout="t"), 1, 2), S(F((0, 3))), S(F((), "float64"), -1.5, 1),
     S(F((4,), "float16"), 0, 100), S(F((2, 3), layout="step"), 2, 2),
     S(F((2, 3), "float64", "offset"), -1e300, 1e300)],
    [S(F((3,), "int64")), S(F((3,), "bool")), S(F((2, 3)), 2, 1), S(F((2, 3)), 2.5, 1.25),
     S(F((2, 3), layout="expand")), S(F((2, 3), layout="expand"), 2, 1),
     S(F((3,), "float16"), -1e6, 1), S(F((3,), "float16"), 0, 1e6), S(F((3,)), -3e38, 3e38),
     S(F((3,)), float("nan"), 1), S(F((3,)), float("-inf"), 1), S(F((3,), "int64"), 2, 1),
     S(F((3,), "float16"), -4e4, 4e4), S(F((3,), "float64"), -1e308, 1e308)],
    random=True)
ENTRIES["normal_.default"] = E(
    [S(F((2, 3))), S(F((3, 4), layout="t"), 1, 2), S(F((0, 3))), S(F((), "float64"), -1.5, 0),
     S(F((4,), "float16"), 0, 100), S(F((2, 3), layout="step"), 2, 0.5),
     S(F((20,), "float64", "offset"), 5, float("inf"))],
    [S(F((3,), "int64")), S(F((3,), "bool")), S(F((2, 3)), 0, -1), S(F((2, 3)), 0, -1.5),
     S(F((2, 3)), 0, float("nan")), S(F((2, 3), layout="expand")),
     S(F((2, 3), "int64", "expand")), S(F((3,), "int64"), 0, -1)],
    random=True)

# -- more zero-size / 0-d / dtype / layout coverage ------------------------------------------------
_MORE = {
    "_to_copy.default": [S(F((0, 3), "int32"), dtype=D("float64"))],
    "_unsafe_view.default": [S(F((0, 3)), [3, 0]), S(F(()), [1]), S(F((2, 3), layout="offset"),
                                                                    [6])],
    "alias.default": [S(F((0, 2), "int64"))],
    "as_strided.default": [S(F(()), [1], [1]), S(F((0,), "int32"), [0], [1])],
    "as_strided_.default": [S(F((10,), "int32"), [0], [1], 5), S(F(()), [], [])],
    "as_strided_scatter.default": [S(F((4,), "int64"), F((0,), "int64"), [0], [1]),
                                   S(F(()), F(()), [], [])],
    "copy.default": [S(F((0, 3)), F((3,)))],
    "copy_.default": [S(F((0, 3)), F((3,), "int64"))],
    "detach.default": [S(F((0, 3)))],
    "diagonal.default": [S(F((0, 3), "int64"))],
    "diagonal_scatter.default": [S(F((0, 3), "int64"), F((0,), "int64"))],
    "expand.default": [S(F((1, 0), "int32"), [3, 0])],
    "fill.Scalar": [S(F((0, 3)), 1.0)],
    "fill.Tensor": [S(F((0, 3)), F(()))],
    "fill_.Scalar": [S(F((0, 3), "int64"), 2)],
    "fill_.Tensor": [S(F((0, 3)), F(()))],
    "lift_fresh.default": [S(F(())), S(F((0, 3)))],
    "permute.default": [S(F((0, 3), "int64"), [1, 0])],
    "resize_.default": [S(F((2, 3), "int64"), [0]), S(F(()), [2], _values=False)],
    "select.int": [S(F((2, 3), "bool"), 1, 2)],
    "select_scatter.default": [S(F((3, 4), "int64"), F((4,), "int64"), 0, 0),
                               S(F((2, 0)), F((0,)), 0, 1)],
    "set_.source_Storage_storage_offset": [
        S(F((2, 3), "int64"), StorageOf(F((10,), "int64")), 1, [2, 2]),
        S(F((2, 3), layout="t"), StorageOf(F((10,))), 0, [0]),
        S(F(()), StorageOf(F((4,))), 1, [])],
    "set_.source_Tensor": [S(F((2, 3), "int32"), F((5,), "int32"))],
    "slice.Tensor": [S(F((0, 3), "int32"), 1, 1, 2)],
    "slice_scatter.default": [S(F((5, 4), "int64"), F((5, 1), "int64"), 1, 3)],
    "split.Tensor": [S(F((5,), "int64"), 2)],
    "split_with_sizes.default": [S(F((5, 4), "int32", "t"), [2, 2], 1), S(F((0, 4)), [0, 0])],
    "squeeze.dims": [S(F((0, 1), "int32"), [1])],
    "squeeze_.dims": [S(F((1, 0), "int64", "t"), [0])],
    "t_.default": [S(F(())), S(F((0, 2), "int64"))],
    "transpose.int": [S(F((2, 3), "bool"), 0, 1)],
    "transpose_.default": [S(F((2, 0, 3), "int32"), 0, 2), S(F((2, 3), layout="t"), 0, 1)],
    "unbind.int": [S(F((3, 2), "int64"), 1)],
    "unfold.default": [S(F((0,), "int64"), 0, 0, 1)],
    "unsqueeze.default": [S(F((0, 3), "int64"), 1)],
    "unsqueeze_.default": [S(F((0, 3), "bool"), 0)],
    "view.dtype": [S(F((0, 4)), D("int16"))],
    "zero_.default": [S(F((0, 3)))],
}
for _key, _extra in _MORE.items():
    ENTRIES[_key].samples.extend(_extra)
