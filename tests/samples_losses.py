"""Sample inputs for the loss primitives of ``kernels/losses.py`` (see ``samples.py`` for the
format); registered in ``samples._table``."""

from __future__ import annotations

from samples import E, S, T

F = T
ENTRIES = {}


def _idx(shape, hi, dtype="int64", values=None):
    return T(shape, dtype, lo=0, hi=hi, values=values)


def _prob(shape, dtype="float32", layout="contig"):
    return T(shape, dtype, layout, lo=0.05, hi=0.95)


ENTRIES["nll_loss_forward.default"] = E(
    [S(F((4, 5)), _idx((4,), 4), None, 1, -100),
     S(F((4, 5), "float64"), _idx((4,), 4), F((5,), "float64", lo=0.1, hi=1.0), 0, -100),
     S(F((4, 5)), _idx((4,), 4, values=(1, 1, 2, 3)), None, 2, 1),
     S(F((4, 5)), _idx((4,), 4, values=(1, 1, 2, 3)), F((5,), lo=0.1, hi=1.0), 1, 2),
     S(F((5,)), _idx((), 4), None, 1, -100),
     S(F((4, 5), layout="t"), _idx((4,), 4), None, 0, -100)],
    [S(F((4, 5)), _idx((4,), 0, values=(0, 1, 7, 2)), None, 1, -100, _meta=False),
     S(F((2, 3, 4)), _idx((2,), 2), None, 1, -100),
     S(F((4, 5)), _idx((3,), 4), None, 1, -100),
     S(F((4, 5)), _idx((4,), 4), F((3,)), 1, -100),
     S(F((4, 5)), _idx((4,), 4, "int32"), None, 1, -100)])
ENTRIES["nll_loss_backward.default"] = E(
    [S(F(()), F((4, 5), layout="t"), _idx((4,), 4), None, 1, -100, F((), lo=1.0, hi=4.0)),
     S(F((4,)), F((4, 5)), _idx((4,), 4, values=(0, 2, 2, 3)), F((5,), lo=0.1, hi=1.0), 0, 2,
       F(())),
     S(F((), "float64"), F((4, 5), "float64"), _idx((4,), 4), None, 2, -100, F((), "float64"))])
ENTRIES["mse_loss.default"] = E(
    [S(F((3, 4)), F((3, 4))), S(F((3, 4), layout="t"), F((3, 4), layout="t"), 0),
     S(F((3, 4)), F((3, 4), "float64"), 2), S(F((3, 4)), F((4,)), 0), S(F((0, 2)), F((0, 2)))],
    [S(F((3, 4)), F((5,)))])
ENTRIES["mse_loss_backward.default"] = E(
    [S(F((3, 4)), F((3, 4), layout="t"), F((3, 4)), 0), S(F(()), F((3, 4)), F((3, 4)), 1),
     S(F(()), F((3, 4), "float64"), F((3, 4), "float64"), 2)])
ENTRIES["binary_cross_entropy.default"] = E(
    [S(_prob((3, 4)), F((3, 4), lo=0.0, hi=1.0)),
     S(_prob((3, 4), layout="t"), F((3, 4), lo=0.0, hi=1.0), F((3, 4)), 0),
     S(_prob((3, 4), "float64"), F((3, 4), "float64", lo=0.0, hi=1.0), None, 2),
     S(F((2,), values=(0.0, 1.0)), F((2,), values=(1.0, 0.0))), S(_prob(()), F((), lo=0.0, hi=1.0)),
     S(_prob((0, 3)), F((0, 3)), None, 0)],
    [S(F((3,), values=(0.5, 1.5, 0.2)), F((3,)), _meta=False),
     S(_prob((2,)), F((2,), values=(0.5, 2.0)), _meta=False), S(_prob((3,)), F((4,)))])
ENTRIES["binary_cross_entropy_backward.default"] = E(
    [S(F(()), _prob((3, 4), layout="t"), F((3, 4), lo=0.0, hi=1.0)),
     S(F((3, 4)), _prob((3, 4)), F((3, 4), lo=0.0, hi=1.0), F((3, 4)), 0),
     S(F((), "float64"), _prob((3, 4), "float64"), F((3, 4), "float64"), None, 2)])
ENTRIES["binary_cross_entropy_with_logits.default"] = E(
    [S(F((3, 4)), F((3, 4), lo=0.0, hi=1.0)),
     S(F((3, 4), layout="t"), F((3, 4), lo=0.0, hi=1.0), F((3, 4)), F((4,), lo=0.5, hi=2.0), 0),
     S(F((3, 4), "float64", lo=-30, hi=30), F((3, 4), "float64"), None, None, 2),
     S(F(()), F(())), S(F((0, 2)), F((0, 2)), None, None, 0)],
    [S(F((3,)), F((4,)))])
ENTRIES["softplus.default"] = E(
    [S(F((3, 4))), S(F((3, 4), layout="t"), 2, 1), S(F((3, 4), "float64", lo=-30, hi=30), 0.5, 3),
     S(F(()))],
    [S(F((3,), "int64"))])
ENTRIES["softplus_backward.default"] = E(
    [S(F((3, 4)), F((3, 4), layout="t"), 1, 20),
     S(F((3, 4), "float64"), F((3, 4), "float64", lo=-9, hi=9), 2, 1), S(F(()), F(()), 1, 20)])
ENTRIES["constant_pad_nd.default"] = E(
    [S(F((3, 4)), [1, 2]), S(F((2, 3, 4)), [1, -1, 0, 2], 1.5), S(F((3, 4), layout="t"), [0, 0, 1, 1]),
     S(F((3, 4), "int64"), [2, 2], 7), S(F((3,)), []), S(F((0, 2)), [1, 1]), S(F(()), []),
     S(F((3,), "uint8"), [1, 1], -1), S(F((3,), "uint8"), [1, 1], 2.7)],
    [S(F((3, 4)), [1]), S(F((3, 4)), [1, 1, 1, 1, 1, 1]), S(F((3, 4)), [-3, -3]),
     # the fill value is converted as c10 does: floats never wrap into unsigned types
     S(F((3,), "uint8"), [1, 1], -1.0, _meta=False), S(F((3,), "uint8"), [1, 1], 300, _meta=False),
     S(F((3,)), [1, 1], 1e300, _meta=False)])
