"""Samples of the Scalar overloads PyTorch's Python API calls for a Python number
(``pow.Tensor_Scalar``, ``pow.Scalar``, ``eq.Scalar``..., ``remainder.Scalar`` /
``.Scalar_Tensor``, ``fmod.Scalar``, ``bitwise_and.Scalar`` / ``.Scalar_Tensor``): the samples
of their Tensor overload with a number in that position, plus edges of their own (signs, zero,
bool and float numbers against integer tensors). Their in-place and ``out=`` entries are
derived like every pointwise op's."""

from __future__ import annotations

from samples import E, S, T
from samples import T as F
from samples_math import ENTRIES as MATH
from samples_pointwise_more import ENTRIES as MORE

ENTRIES = {}


def _with_number(samples, pos):
    """The samples whose argument ``pos`` is a Python number (and the other a tensor)."""
    return [s for s in samples if not isinstance(s.args[pos], T)
            and isinstance(s.args[1 - pos], T)]


def _entry(tensor_entry, pos, samples=(), errors=()):
    return E(_with_number(tensor_entry.samples, pos) + list(samples),
             _with_number(tensor_entry.errors, pos) + list(errors))


_INT_EDGES = [S(F((6,), "int64", values=(7, -7, 0, 3, -3, 1)), 3),
              S(F((6,), "int32", values=(7, -7, 0, 3, -3, 1)), -2),
              S(F((4,), "uint8"), 5), S(F((4,), "int16"), True)]
_FLOAT_EDGES = [S(F((2, 3)), -1.5), S(F((2, 3), layout="t"), 0), S(F((0, 3)), 1.0),
                S(F((4,), "float64"), 2), S(F((4,), "bfloat16"), 0.1), S(F((4,), "float16"), 3)]

for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    ENTRIES[f"{_name}.Scalar"] = _entry(
        MATH[f"{_name}.Tensor"], 1,
        _INT_EDGES + _FLOAT_EDGES + [S(F((4,), "bool"), True), S(F((4,), "int64"), 1.5),
                                     S(F((4,), "bool"), 0.5)])
ENTRIES["remainder.Scalar"] = _entry(MATH["remainder.Tensor"], 1, _INT_EDGES + _FLOAT_EDGES,
                                     [S(F((4,), "int64"), 0, _meta=False),
                                      S(F((4,), "bool"), True)])
ENTRIES["remainder.Scalar_Tensor"] = _entry(
    MATH["remainder.Tensor"], 0,
    [S(7, F((6,), "int64", values=(3, -3, 2, -2, 5, 7))), S(-2.5, F((2, 3))), S(3, F((2, 3))),
     S(1.5, F((4,), "int32", lo=1)), S(3, F((2, 3), layout="t")), S(3, F((0, 3))),
     S(2.5, F(()))])
ENTRIES["fmod.Scalar"] = _entry(MORE["fmod.Tensor"], 1, _INT_EDGES + _FLOAT_EDGES,
                                [S(F((4,), "bool"), True)])
ENTRIES["pow.Tensor_Scalar"] = _entry(
    MATH["pow.Tensor_Tensor"], 1,
    [S(F((2, 3)), 2), S(F((2, 3), lo=0.1), 0.5), S(F((2, 3)), 0), S(F((2, 3)), -1),
     S(F((2, 3), lo=0.1), -2.5), S(F((4,), "int64"), 3), S(F((4,), "int32"), 0),
     S(F((4,), "int64"), 1.5), S(F((4,), "bool"), 2), S(F((4,), "float16"), 2),
     S(F((4,), "bfloat16"), 3), S(F((8,), "bfloat16"), -2), S(F((8,), "bfloat16"), 1.1),
     S(F((8,), "float16", lo=0.1), 1.1), S(F((8,)), 3), S(F((8,), "float64"), -2),
     S(F((2, 3), layout="t"), 3)],
    [S(F((4,), "int64"), -2)])
ENTRIES["pow.Scalar"] = _entry(
    MATH["pow.Tensor_Tensor"], 0,
    [S(2, F((2, 3))), S(2.5, F((2, 3))), S(0, F((4,), "float64")), S(-2.0, F((2, 3))),
     S(3, F((4,), "int64", lo=0)), S(1.5, F((4,), "int32", lo=0)), S(2, F((2, 3), layout="t")),
     S(2, F((0, 3))), S(2.5, F(()))],
    [S(True, F((4,), "bool"))])
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    ENTRIES[f"{_name}.Scalar"] = _entry(
        MATH[f"{_name}.Tensor"], 1,
        [S(F((6,), "int64", values=(7, -7, 0, 3, -3, 1)), 6), S(F((4,), "uint8"), 5),
         S(F((4,), "int16"), True), S(F((4,), "bool"), True), S(F((4,), "bool"), 3),
         S(F((2, 3), "int32", layout="t"), 3), S(F((0, 3), "int64"), 1), S(F((), "int64"), 5)],
        [S(F((4,)), 1), S(F((4,), "int64"), 1.5)])
    ENTRIES[f"{_name}.Scalar_Tensor"] = _entry(
        MATH[f"{_name}.Tensor"], 0,
        [S(6, F((6,), "int64", values=(7, -7, 0, 3, -3, 1))), S(True, F((4,), "bool")),
         S(5, F((4,), "uint8")), S(3, F((2, 3), "int32", layout="t")), S(1, F((0, 3), "int64")),
         S(5, F((), "int64"))],
        [S(1, F((4,)))])
