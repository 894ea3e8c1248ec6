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
        samples += [S(3, F((), "int64", values=(2,))), S(1, F((0, 2), "int16"))]
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


# -- random sampling (values differ from torch's stream: metadata and errors compared) --------
from samples import D, Gen  # noqa: E402

_G = Gen(3)
ENTRIES["rand.generator"] = E(
    [S([2, 3], generator=_G), S([0], generator=_G), S([4], generator=None, dtype=D("float64"))],
    [S([2], generator=_G, dtype=D("int64")), S([-1], generator=_G)], random=True)
ENTRIES["randn.generator"] = E(
    [S([2, 3], generator=_G), S([4], generator=_G, dtype=D("float16"))],
    [S([2], generator=_G, dtype=D("int32"))], random=True)
ENTRIES["randint.low_generator"] = E(
    [S(0, 10, [3, 4], generator=_G), S(-5, 5, [6], generator=_G, dtype=D("int32"))],
    [S(5, 5, [2], generator=_G)], random=True)
ENTRIES["randperm.default"] = E(
    [S(5), S(0), S(1), S(7, dtype=D("int32")), S(256, dtype=D("uint8")),
     S(128, dtype=D("int8")), S(6, dtype=D("float32")), S(2049, dtype=D("float16"))],
    [S(-1), S(3, dtype=D("bool")), S(257, dtype=D("uint8")), S(129, dtype=D("int8")),
     S(2050, dtype=D("float16"))], random=True)
ENTRIES["randperm.generator"] = E(
    [S(5, generator=_G), S(4, generator=_G, dtype=D("float64"))],
    [S(-2, generator=_G), S(3, generator=_G, dtype=D("bool"))], random=True)
_P = dict(lo=0.0, hi=1.0)
ENTRIES["multinomial.default"] = E(
    [S(F((4,), **_P), 2), S(F((4,), **_P), 6, True), S(F((3, 4), layout="t", **_P), 4),
     S(F((3, 4), "float64", **_P), 1), S(F((2, 5), "float16", "step", **_P), 3, True),
     S(F((0, 3), **_P), 2), S(F((4,), values=(0.0, 0.0, 1.0, 0.0)), 3),
     S(F((4,), values=(0.0, 2.0, 1.0, 0.0)), 5, True), S(F((2, 3), **_P), 2, generator=_G)],
    [S(F((), **_P), 1), S(F((2, 2, 2), **_P), 1), S(F((4,), "int64"), 1), S(F((4,), **_P), 0),
     S(F((4,), **_P), -1), S(F((4,), **_P), 5),
     S(F((3,), values=(1.0, -1.0, 0.5)), 1, _meta=False),
     S(F((3,), values=(1.0, float("inf"), 0.5)), 2, _meta=False),
     S(F((3,), values=(1.0, float("nan"), 0.5)), 1, _meta=False),
     S(F((2, 2), values=(0.0, 0.0, 1.0, 1.0)), 1, _meta=False),
     S(F((3,), values=(1.0, -1.0, 0.5)), 3, True, _meta=False),
     S(F((3,), values=(1.0, float("inf"), 0.5)), 3, True, _meta=False),
     S(F((2, 2), values=(0.0, 0.0, 1.0, 1.0)), 4, True, _meta=False)], random=True)
ENTRIES["bernoulli.default"] = E(
    [S(F((2, 3), **_P)), S(F((3, 4), layout="t", **_P)), S(F((4,), "float64", **_P)),
     S(F((2, 3), layout="expand", **_P)), S(F((0, 2), **_P)), S(F((), "float16", **_P)),
     S(F((2, 3, 4, 5), layout="cl", **_P)), S(F((3,), **_P), generator=_G)],
    [S(F((3,), "int64")), S(F((3,), "bool")), S(F((3,), values=(0.5, 1.5, 0.0)), _meta=False),
     S(F((3,), values=(0.5, -0.5, 0.0)), _meta=False)], random=True)
ENTRIES["bernoulli.p"] = E(
    [S(F((2, 3)), 0.5), S(F((3, 4), "int64", "t"), 0.25), S(F((4,), "bool"), 1.0),
     S(F((2, 3), layout="expand"), 0.0), S(F(()), 0.3), S(F((3,)), 0.5, generator=_G)],
    [S(F((3,)), 1.5), S(F((3,)), -0.1), S(F((3,)), float("nan"))], random=True)
ENTRIES["bernoulli_.float"] = E(
    [S(F((2, 3))), S(F((3, 4), "int64", "t"), 0.25), S(F((4,), "bool"), 1.0),
     S(F((2, 3), layout="step"), 0.0), S(F(()), 0.3), S(F((3,)), 0.5, generator=_G)],
    [S(F((3,)), 1.5), S(F((3,)), -0.1), S(F((2, 3), layout="expand"), 0.5)], random=True)
ENTRIES["bernoulli_.Tensor"] = E(
    [S(F((2, 3)), F((2, 3), **_P)), S(F((3, 4), "int64", "t"), F((4,), "float64", **_P)),
     S(F((2, 3)), F((), **_P)), S(F((3,)), F((1,), **_P), generator=_G)],
    [S(F((3,)), F((2,), **_P)), S(F((3,)), F((3,), "int64")),
     S(F((3,)), F((3,), values=(0.5, 1.5, 0.0)), _meta=False),
     S(F((2, 3), layout="expand"), F((3,), **_P))], random=True)
_STD = dict(lo=0.0, hi=2.0)
ENTRIES["normal.Tensor_float"] = E(
    [S(F((2, 3))), S(F((3, 4), layout="t"), 2.0), S(F((4,), "float64"), 0.0),
     S(F((2, 3), layout="expand"), 0.5), S(F((0, 2))), S(F(()), 1.5),
     S(F((3,), "float16"), 1.0, generator=_G)],
    [S(F((3,)), -1.0), S(F((3,), "int64"), 1.0), S(F((3,)), float("nan"))], random=True)
ENTRIES["normal.float_Tensor"] = E(
    [S(0.0, F((2, 3), **_STD)), S(1.5, F((3, 4), "float64", "t", **_STD)),
     S(-1.0, F((), "float16", **_STD)), S(2.0, F((3,), **_STD), generator=_G)],
    [S(0.0, F((3,), "int64", lo=0)), S(0.0, F((3,), values=(1.0, -1.0, 0.0)), _meta=False)],
    random=True)
ENTRIES["normal.Tensor_Tensor"] = E(
    [S(F((2, 3)), F((2, 3), **_STD)), S(F((3,), "float64"), F((2, 1), **_STD)),
     S(F((3,), "float16"), F((3,), "float64", **_STD)), S(F((3,)), F((3,), "int64", lo=0)),
     S(F((2, 3), layout="t"), F((), **_STD)), S(F((3,)), F((3,), **_STD), generator=_G)],
    [S(F((3,)), F((2,), **_STD)), S(F((3,), "int64"), F((3,), **_STD)),
     S(F((3,)), F((3,), values=(1.0, -1.0, 0.0)), _meta=False)], random=True)
ENTRIES["normal.float_float"] = E(
    [S(0.0, 1.0, [2, 3]), S(1.0, 0.0, [0]), S(-1.0, 2.0, [4], dtype=D("float64")),
     S(0.0, 1.0, [3], generator=_G)],
    [S(0.0, -1.0, [2]), S(0.0, 1.0, [2], dtype=D("int64")), S(0.0, 1.0, [-1])], random=True)
# float_float_out's own entry: the registry's functional_variant of it is Tensor_float (the
# factory keywords make the argument lists differ).
ENTRIES["normal.float_float_out"] = E(
    [S(0.0, 1.0, [2, 3], out=F((0,))), S(1.0, 0.0, [0], out=F((3,), "float64")),
     S(-1.0, 2.0, [4], out=F((2, 2), layout="t")), S(0.0, 1.0, [3], generator=_G, out=F((3,)))],
    [S(0.0, -1.0, [2], out=F((0,))), S(0.0, 1.0, [2], out=F((0,), "int64"))], random=True)


# -- data-dependent selection ----------------------------------------------------------------
def _counts(shape, hi=3, dtype="int64", layout="contig", values=None):
    return F(shape, dtype, layout, lo=0, hi=hi, values=values)


ENTRIES["repeat_interleave.Tensor"] = E(
    [S(_counts((4,)), _meta=False), S(_counts((3,), dtype="int32"), _meta=False),
     S(_counts((0,))), S(_counts((5,), layout="step"), _meta=False),
     S(_counts((3,), values=(1, 0, 2)), output_size=3),
     S(_counts((3,), dtype="int32", values=(2, 2, 0)), output_size=4),
     S(_counts((0,)), output_size=0)],
    [S(F((3,))), S(_counts((2, 2))), S(F((3,), "int16")), S(F((3,), "bool")),
     S(F((3,), "int64", values=(1, -2, 3)), _meta=False),
     S(_counts((3,), values=(1, 0, 2)), output_size=4, _meta=False)], data_dependent=True)
ENTRIES["repeat_interleave.self_int"] = E(
    [S(F((2, 3)), 2), S(F((2, 3), layout="t"), 2, 0), S(F((2, 3), "int64"), 3, -1),
     S(F(()), 3), S(F((0, 3)), 2, 1), S(F((2, 3)), 0, 1), S(F((2, 3), layout="expand"), 2, 1),
     S(F((2, 3)), 2, 1, output_size=6)],
    [S(F((2, 3)), -1), S(F((2, 3)), 2, 2), S(F((2, 3)), 2, 1, output_size=7)])
ENTRIES["repeat_interleave.self_Tensor"] = E(
    [S(F((2, 3)), _counts((2,)), 0, _meta=False), S(F((2, 3), layout="t"), _counts((3,)), 1,
                                                     _meta=False),
     S(F((2, 3), "int64"), _counts((6,)), _meta=False),
     S(F((2, 3)), _counts((), values=(2,)), 0, _meta=False),
     S(F((2, 3)), _counts((1,), values=(2,)), -1, _meta=False),
     S(F((0, 3)), _counts((0,)), 0), S(F((2, 3)), _counts((2,), values=(1, 2)), 0, output_size=3)],
    [S(F((2, 3)), _counts((3,)), 0), S(F((2, 3)), _counts((2, 2)), 0),
     S(F((2, 3)), F((2,)), 0), S(F((2, 3)), F((2,), "int64", values=(1, -1)), 0, _meta=False)],
    data_dependent=True)
_MASK = dict(dtype="bool")
ENTRIES["masked_select.default"] = E(
    [S(F((2, 3)), F((2, 3), **_MASK), _meta="raises"),
     S(F((2, 3), layout="t"), F((3,), **_MASK), _meta="raises"),
     S(F((3,), "int64"), F((2, 3), "bool", "t"), _meta="raises"),
     S(F(()), F((), **_MASK), _meta="raises"), S(F((0, 3)), F((3,), **_MASK), _meta="raises"),
     S(F((2, 3), "float16", "expand"), F((2, 1), **_MASK), _meta="raises")],
    [S(F((2, 3)), F((2, 3))), S(F((2, 3)), F((2, 3), "uint8")), S(F((2, 3)), F((4,), **_MASK))],
    data_dependent=True)
ENTRIES["_unique2.default"] = E(
    [S(F((6,), "int64", lo=0, hi=3), _meta="raises"),
     S(F((2, 3), layout="t", values=(1.0, float("nan"), 1.0, -0.5, float("nan"), 2.0)),
       True, True, True, _meta="raises"),
     S(F((3, 4), "int32", lo=0, hi=2), False, True, False, _meta="raises"),
     S(F((4,), "bool"), True, False, True, _meta="raises"), S(F(()), _meta="raises"),
     S(F((0, 3)), True, True, True, _meta="raises"),
     S(F((2, 3), "float16", "expand", lo=0, hi=1), True, True, True, _meta="raises")],
    data_dependent=True)
_ROWS = (1, 2, 1, 2, 0, 5, 1, 2)
ENTRIES["unique_dim.default"] = E(
    [S(F((4, 2), "int64", values=_ROWS), 0, _meta="raises"),
     S(F((4, 2), "int64", "t", values=_ROWS), 1, True, True, True, _meta="raises"),
     S(F((2, 4), values=(1, 1, 0, 1, 2, 2, 5, 2)), -1, True, True, True, _meta="raises"),
     S(F((0, 3)), 0, True, True, True, _meta="raises"),
     S(F((2, 3, 2), "int32", lo=0, hi=1), 1, False, False, True, _meta="raises"),
     S(F((3, 2), "bool"), 0, _meta="raises")],
    [S(F((2, 3)), 2, _meta=False), S(F((3, 0)), 0, _meta=False), S(F((0, 0)), 0, _meta=False),
     S(F(()), 0, _meta=False)], data_dependent=True)


# -- metadata queries (what a dispatch_sizes_strides_policy wrapper answers) ------------------
_QUERY_SAMPLES = [S(F((2, 3))), S(F((3, 4), layout="t")), S(F(())), S(F((0, 3), "int64")),
                  S(F((2, 3), layout="offset")), S(F((2, 3, 4, 5), "float64", "cl")),
                  S(F((2, 3), layout="expand")), S(F((2, 3), layout="step"))]
for _name in ("sym_size", "sym_stride", "dim", "sym_numel", "sym_storage_offset",
              "is_contiguous"):
    ENTRIES[f"{_name}.default"] = E(list(_QUERY_SAMPLES))
ENTRIES["bernoulli.Tensor"] = E(list(ENTRIES["bernoulli_.Tensor"].samples),
                                ENTRIES["bernoulli_.Tensor"].errors[:3], random=True)
