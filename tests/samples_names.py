"""Sample table, part 7: the ops of "names ports reach for" (issue 12, point 4): bit shifts
(``bitwise_left_shift`` / ``bitwise_right_shift`` and the ``__lshift__`` / ``__rshift__`` /
``__ilshift__`` / ``__irshift__`` operator overloads). See ``samples.py`` for the spec
language; ``name_`` and ``out=`` overloads derive their samples from the functional entry.
"""

from __future__ import annotations

from samples import E, S, T

F = T
ENTRIES = {}

_INTS = ("uint8", "int8", "int16", "int32", "int64")
# Counts around every edge: negative, zero, in range, the bit width of each dtype and beyond.
_COUNTS = (-9, -1, 0, 1, 3, 7, 8, 9, 15, 16, 31, 32, 63, 64, 65, 100)
_VALUES = (1, -1, 5, -128, 127, 100, -100, 0, 3, -3, 64, 42, -42, 2, 11, -7)


def _shift_entry(scalar_first=False):
    samples, errors = [], []
    for d in _INTS:
        vals = tuple(v % 256 for v in _VALUES) if d == "uint8" else _VALUES
        counts = tuple(c % 256 for c in _COUNTS) if d == "uint8" else _COUNTS
        a = F((16,), d, values=vals)
        b = F((16,), "int64" if d != "uint8" else "uint8", values=counts)
        if scalar_first:
            samples += [S(5, F((16,), d, values=tuple(abs(c) % 64 for c in _COUNTS))),
                        S(-3, F((2, 8), d, "t", values=tuple(abs(c) % 64 for c in _COUNTS)))]
        else:
            samples += [S(a, b), S(F((4, 4), d, "t", values=vals), F((4,), d, lo=-2, hi=9))]
    if not scalar_first:
        samples += [S(F((2, 3), "int32", "expand"), F((3,), "int64", lo=0, hi=40)),
                    S(F((0, 2), "int16"), F((2,), "int16")),
                    S(F((), "int64", values=(7,)), F((2, 3), "uint8", lo=0, hi=10)),
                    S(F((2, 3, 4, 5), "int32", "cl"), F((5,), "int8", lo=-1, hi=33)),
                    S(F((4,), "bool"), F((4,), "int64", lo=0, hi=3))]
        errors += [S(F((2, 3)), F((2, 3), "int64")), S(F((3,), "bool"), F((3,), "bool")),
                   S(F((2, 3), "int32"), F((4,), "int32")), S(F((3,), "int64"), F((3,)))]
    else:
        errors += [S(1.5, F((3,), "int64")), S(True, F((3,), "bool")), S(2, F((3,)))]
    return E(samples, errors)


def _scalar_entry():
    samples = []
    for d in _INTS:
        for c in (-1, 0, 3, 7, 8, 64, 300, -300):
            samples.append(S(F((16,), d, values=tuple(v % 256 for v in _VALUES)
                               if d == "uint8" else _VALUES), c))
    samples += [S(F((2, 3), "int64", "t"), 2), S(F((4,), "bool"), 1), S(F((), "int8"), 9),
                S(F((2, 3), "int16", "expand"), 1)]
    return E(samples, [S(F((3,), "int64"), 1.5), S(F((3,)), 1), S(F((3,), "bool"), True)])


for _name in ("bitwise_left_shift", "bitwise_right_shift"):
    ENTRIES[f"{_name}.Tensor"] = _shift_entry()
    ENTRIES[f"{_name}.Tensor_Scalar"] = _scalar_entry()
    ENTRIES[f"{_name}.Scalar_Tensor"] = _shift_entry(scalar_first=True)
for _name in ("__lshift__", "__rshift__"):
    ENTRIES[f"{_name}.Tensor"] = _shift_entry()
    ENTRIES[f"{_name}.Scalar"] = _scalar_entry()


def _inplace_ok(s) -> bool:
    """Samples whose ``self`` can take the result: not bool, not expanded, not broadcast."""
    a, b = s.args[0], s.args[1]
    if not isinstance(a, T) or a.dtype == "bool" or a.layout == "expand":
        return False
    return not isinstance(b, T) or len(b.shape) <= len(a.shape) and all(
        y in (1, x) for x, y in zip(a.shape[::-1], b.shape[::-1]))


for _name, _base in (("__ilshift__", "__lshift__"), ("__irshift__", "__rshift__")):
    for _ov in ("Tensor", "Scalar"):
        _e = ENTRIES[f"{_base}.{_ov}"]
        _extra = [S(F((3,), "int8"), F((2, 3), "int8")), S(F((4,), "bool"), F((4,), "int64")),
                  S(F((2, 3), "int32", "expand"), F((3,), "int32"))] if _ov == "Tensor" else [
                  S(F((4,), "bool"), 1)]
        ENTRIES[f"{_name}.{_ov}"] = E([s for s in _e.samples if _inplace_ok(s)],
                                      list(_e.errors) + _extra)
