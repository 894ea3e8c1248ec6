"""Sample table, part 2: pointwise ops, reductions, linear algebra, nn, indexing, composites.

Pointwise ops share generated sample lists covering contiguous, transposed, expanded (stride 0),
zero-size, 0-d, channels-last and offset inputs, every dtype the op accepts (the others are error
samples: PyTorch raises NotImplementedError "..._cpu" not implemented for 'Bool'), broadcasting,
wrapped Python numbers and mixed-dtype promotion. In-place and out= overloads derive from these
entries (``samples.entry_for``).
"""

from __future__ import annotations

from samples import MF, D, E, S, T

F = T
INTS = ("uint8", "int8", "int16", "int32", "int64")
FLOATS = ("float16", "float32", "float64")
ALL = ("bool",) + INTS + FLOATS


def _unary_samples(extra=(), **kw):
    base = [S(F((2, 3)), **kw), S(F((3, 4), layout="t"), **kw), S(F((2, 3), layout="expand"), **kw),
            S(F((0, 3)), **kw), S(F(()), **kw), S(F((2, 3, 4, 5), layout="cl"), **kw),
            S(F((2, 5), layout="offset"), **kw), S(F((3, 6), layout="step"), **kw)]
    return base + [S(F((5,), d), **kw) for d in extra]


def unary(ok=ALL, bad=(), **kw):
    """An entry for a unary pointwise op accepting dtypes ``ok`` (float32 is always tried)."""
    extra = tuple(d for d in ok if d != "float32")
    return E(_unary_samples(extra, **kw), [S(F((5,), d), **kw) for d in bad])


def binary(ok=ALL, bad=(), scalars=True, int_lo=None, **kw):
    """An entry for a binary pointwise op; ``int_lo`` keeps integer right operands >= it (no
    integer division by zero)."""
    def rhs(shape, dtype="float32", layout="contig"):
        lo = int_lo if dtype in INTS else None
        return F(shape, dtype, layout, lo=lo)

    s = [S(F((2, 3)), rhs((2, 3)), **kw),
         S(F((2, 3)), rhs((3,)), **kw),
         S(F((3, 1)), rhs((1, 4)), **kw),
         S(F((3, 4), layout="t"), rhs((3, 4)), **kw),
         S(F((2, 3), layout="expand"), rhs((2, 3), layout="t"), **kw),
         S(F((0, 3)), rhs((3,)), **kw),
         S(F(()), rhs((2, 3)), **kw),
         S(F((2, 3, 4, 5), layout="cl"), rhs((2, 3, 4, 5)), **kw),
         S(F((2, 3, 4, 5), layout="cl"), rhs((5,)), **kw),
         S(F((2, 4), layout="step"), rhs((2, 4), layout="offset"), **kw),
         S(F((), "float64"), rhs((2, 3)), **kw)]
    ints = [d for d in ok if d in INTS]
    floats = [d for d in ok if d in FLOATS]
    for d in ok:
        if d != "float32":
            s.append(S(F((4,), d), rhs((4,), d), **kw))
    if ints and floats:
        s.append(S(F((2, 3), ints[-1]), rhs((2, 3), "float64"), **kw))
        s.append(S(F((), "float32"), rhs((2, 3), "int32"), **kw))
    if "uint8" in ok and "int8" in ok:
        s.append(S(F((4,), "uint8"), rhs((4,), "int8"), **kw))
    if "bool" in ok and ints:
        s.append(S(F((4,), "bool"), rhs((4,), "int64"), **kw))
    if scalars:
        if floats:
            s.append(S(F((2, 3)), 2.5, **kw))
        if ints:
            s.append(S(F((2, 3), "int32"), 2, **kw))
            if floats:
                s.append(S(F((2, 3), "int32"), 1.5, **kw))
            s.append(S(F((4,), "uint8"), 3, **kw))
        if "float16" in ok:
            s.append(S(F((), "float16"), 1.5, **kw))
    errors = [S(F((2, 3)), rhs((4,)), **kw), S(F((2, 3, 4)), rhs((5, 1, 4)), **kw)]
    errors += [S(F((4,), d), F((4,), d), **kw) for d in bad]
    return E(s, errors)


ENTRIES = {}

# -- unary pointwise -----------------------------------------------------------------------------
for _name in ("exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
              "reciprocal", "erf"):
    ENTRIES[f"{_name}.default"] = unary()
for _name in ("abs", "floor", "ceil", "round"):
    ENTRIES[f"{_name}.default"] = unary(INTS + FLOATS, ("bool",))
ENTRIES["neg.default"] = unary(INTS + FLOATS, ("bool",))
ENTRIES["relu.default"] = unary(INTS + FLOATS, ("bool",))
ENTRIES["sign.default"] = unary()
ENTRIES["logical_not.default"] = unary()
ENTRIES["bitwise_not.default"] = unary(("bool",) + INTS, ("float16", "float64"))
ENTRIES["bitwise_not.default"].samples = [
    s for s in ENTRIES["bitwise_not.default"].samples if s.args[0].dtype != "float32"] + [
    S(F((3, 4), "int32", "t")), S(F((2, 3), "int64", "expand")), S(F((), "uint8")),
    S(F((0, 2), "bool"))]
ENTRIES["bitwise_not.default"].errors.append(S(F((2, 3))))
ENTRIES["silu.default"] = unary(FLOATS, ("int64", "bool"))
ENTRIES["gelu.default"] = unary(FLOATS, ("int64",))
ENTRIES["gelu.default"].samples += [S(F((2, 3)), approximate="tanh"),
                                    S(F((4,), "float64", "t"), approximate="tanh")]
ENTRIES["gelu.default"].errors += [S(F((2, 3)), approximate="foo")]
ENTRIES["clamp.default"] = E(
    [S(F((2, 3)), -1.0, 1.0), S(F((3, 4), layout="t"), 0.5), S(F((2, 3)), None, 0.0),
     S(F((2, 3), layout="expand"), -1, 1), S(F((0, 3)), 0.0), S(F(()), 1.0, -1.0),
     S(F((2, 3, 4, 5), layout="cl"), -0.5, 0.5), S(F((4,), "int32"), -1, 2),
     S(F((4,), "int32"), 0.5), S(F((4,), "uint8"), 1, 3), S(F((4,), "float16"), -1.0, 1.0),
     S(F((4,), "float64"), 0), S(F((4,), "bool"), 0, 1)],
    [S(F((2, 3)))])
ENTRIES["clamp.Tensor"] = E(
    [S(F((2, 3)), F((3,)), F((2, 3))), S(F((2, 3), layout="t"), F(()), None),
     S(F((2, 3)), None, F((2, 1))), S(F((4,), "int32"), F((4,), "int64"), None),
     S(F((4,), "int32"), F((), "float32"), None)],
    [S(F((2, 3)), None, None), S(F((2, 3)), F((4,)), None)])

# -- binary pointwise ----------------------------------------------------------------------------
ENTRIES["add.Tensor"] = binary(INTS + FLOATS + ("bool",))
ENTRIES["add.Tensor"].samples += [S(F((2, 3)), F((2, 3)), alpha=2), S(F((2, 3)), 1.5, alpha=-1.5),
                                  S(F((4,), "int32"), F((4,), "int32"), alpha=3)]
ENTRIES["add.Tensor"].errors += [S(F((4,), "int32"), F((4,), "int32"), alpha=1.5)]
ENTRIES["sub.Tensor"] = binary(INTS + FLOATS)
ENTRIES["sub.Tensor"].samples += [S(F((2, 3)), F((2, 3)), alpha=2)]
ENTRIES["sub.Tensor"].errors += [S(F((4,), "bool"), F((4,), "bool")),
                                 S(F((4,), "bool"), F((4,), "int32")),
                                 S(F((4,), "int64"), F((4,), "int64"), alpha=0.5)]
ENTRIES["mul.Tensor"] = binary()
ENTRIES["div.Tensor"] = binary()
ENTRIES["div.Tensor_mode"] = E(
    binary(INTS + FLOATS, int_lo=1, rounding_mode="trunc").samples
    + binary(INTS + FLOATS, int_lo=1, rounding_mode="floor").samples[:12]
    + binary(rounding_mode=None).samples[:6],
    [S(F((4,), "int32"), F((4,), "int32", values=(1, 0, 2, 3)), rounding_mode="floor",
       _meta=False),
     S(F((4,)), F((4,)), rounding_mode="round"), S(F((2, 3)), F((4,)), rounding_mode="trunc")])
ENTRIES["remainder.Tensor"] = binary(INTS + FLOATS, ("bool",), int_lo=1)
ENTRIES["remainder.Tensor"].errors += [
    S(F((4,), "int64"), F((4,), "int64", values=(1, 2, 0, 3)), _meta=False)]
# What ``x // y`` and ``2 - x`` call (kernels/arith_more.py).
ENTRIES["floor_divide.default"] = binary(INTS + FLOATS, ("bool",), int_lo=1)
ENTRIES["floor_divide.default"].samples += [S(2, F((2, 3))), S(F((4,), "int64"), -3),
                                            S(F((4,), "bfloat16"), 0.7)]
ENTRIES["floor_divide.default"].errors += [
    S(F((4,), "int64"), F((4,), "int64", values=(1, 2, 0, 3)), _meta=False)]
ENTRIES["rsub.Tensor"] = binary(INTS + FLOATS, scalars=False)   # torch: no numbers here
ENTRIES["rsub.Tensor"].samples += [S(F((2, 3)), F((2, 3)), alpha=2),
                                   S(F((4,), "int32"), F((4,), "int32"), alpha=3)]
ENTRIES["rsub.Tensor"].errors += [S(F((4,), "bool"), F((4,), "bool")),
                                  S(F((4,), "bool"), F((4,), "int32")),
                                  S(F((4,), "int64"), F((4,), "int64"), alpha=0.5)]
ENTRIES["rsub.Scalar"] = E(
    [S(F((2, 3)), 2), S(F((2, 3)), 1.5, 2), S(F((2, 3), layout="t"), -1, -0.5),
     S(F((4,), "int32"), 3), S(F((4,), "int64"), 2.5), S(F((4,), "int16"), 7, 3),
     S(F((0, 3)), 1.0), S(F((4,), "bfloat16"), 0.1)],
    [S(F((4,), "bool"), 1), S(F((4,), "bool"), True), S(F((4,), "int64"), 2, 0.5),
     S(F((4,), "float64"), True),
     S(F((4,)), 1, True)])
ENTRIES["pow.Tensor_Tensor"] = binary(INTS + FLOATS, int_lo=0)
ENTRIES["pow.Tensor_Tensor"].samples += [
    S(F((4,), "int64"), 2), S(2.0, F((2, 3))), S(F((2, 3), lo=0.1), 0.5),
    S(F((4,), "int64", values=(2, 2, 3, -1)), F((4,), "int64", values=(1, -1, 2, -3)))]
ENTRIES["pow.Tensor_Tensor"].errors += [S(F((4,), "int64"), -1)]
for _name in ("maximum", "minimum"):
    ENTRIES[f"{_name}.default"] = binary(scalars=False)
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    ENTRIES[f"{_name}.Tensor"] = binary()
for _name in ("logical_and", "logical_or"):
    ENTRIES[f"{_name}.default"] = binary(scalars=False)
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _e = binary(("bool",) + INTS, ("float64",))
    _e.samples = [s for s in _e.samples if not any(
        isinstance(a, T) and a.dtype.startswith("float") for a in s.args)]
    _e.samples += [S(F((3, 4), "int32", "t"), F((3, 4), "int64")),
                   S(F((2, 3), "int16", "expand"), F((3,), "int16")),
                   S(F((0, 2), "bool"), F((2,), "bool")), S(F((), "int64"), F((2, 3), "uint8"))]
    _e.errors = [S(F((2, 3)), F((2, 3))), S(F((2, 3), "int32"), F((4,), "int32"))]
    ENTRIES[f"{_name}.Tensor"] = _e
ENTRIES["where.self"] = E(
    [S(F((2, 3), "bool"), F((2, 3)), F((2, 3))), S(F((3,), "bool"), F((2, 3)), F(())),
     S(F((2, 1), "bool"), F((1, 3), "int32"), F((2, 3), "float64")),
     S(F((2, 3), "bool", "t"), F((2, 3), layout="t"), F((2, 3), layout="t")),
     S(F((2, 3), "bool"), F((2, 3)), 0.0), S(F((2, 3), "bool"), 1.5, F((2, 3), "int64")),
     S(F((0, 3), "bool"), F((3,)), F((3,))),
     S(F((2, 3, 4, 5), "bool", "cl"), F((2, 3, 4, 5), layout="cl"), F(())),
     S(F((2, 3), "uint8"), F((2, 3)), F((2, 3)))],
    [S(F((2, 3), "int64"), F((2, 3)), F((2, 3))), S(F((2, 3), "bool"), F((4,)), F((2, 3)))])
ENTRIES["masked_fill.Scalar"] = E(
    [S(F((2, 3)), F((2, 3), "bool"), 1.5), S(F((2, 3)), F((3,), "bool"), -1.0),
     S(F((2, 3), layout="t"), F((2, 3), "bool"), 0), S(F((2, 3), "int32"), F((2, 3), "bool"), 7),
     S(F((2, 3), "bool"), F((2, 3), "bool"), True), S(F(()), F((), "bool"), 2.0),
     S(F((2, 3, 4, 5), layout="cl"), F((5,), "bool"), 3.0), S(F((3,)), F((2, 3), "bool"), 1.0)],
    [S(F((2, 3)), F((2, 3), "uint8"), 1.0), S(F((2, 3)), F((4,), "bool"), 1.0)])
ENTRIES["masked_fill.Tensor"] = E(
    [S(F((2, 3)), F((2, 3), "bool"), F(())), S(F((2, 3)), F((3,), "bool"), F((), "float64")),
     S(F((2, 3), layout="t"), F((2, 3), "bool"), F((), "int64")),
     S(F((2, 3), "int32"), F((2, 3), "bool"), F((), "int32")), S(F(()), F((), "bool"), F(()))],
    [S(F((2, 3)), F((2, 3), "bool"), F((1,))), S(F((2, 3)), F((2, 3), "uint8"), F(())),
     S(F((2, 3)), F((4,), "bool"), F(()))])

# -- reductions ----------------------------------------------------------------------------------
def _reduction(dim_samples, dtypes=("float64", "int32", "bool"), dtype_kw=True, keepdim=True):
    """Entries for ops shaped ``op(self, dim, keepdim=False, *, dtype=None)``."""
    s = [S(F((2, 3)), [1]), S(F((2, 3)), [0, 1]), S(F((2, 3, 4), layout="t"), [0, 2]),
         S(F((2, 3), layout="expand"), [0]), S(F((2, 3, 4, 5), layout="cl"), [1]),
         S(F((2, 3)), [-1]), S(F((2, 5), layout="step"), [1])]
    if keepdim:
        s += [S(F((2, 3)), [1], True), S(F((2, 3, 4, 5), layout="cl"), [1], True),
              S(F((2, 3, 4), layout="t"), [0, 2], True)]
    s += [S(F((4, 3), d), [0]) for d in dtypes]
    if dtype_kw:
        s += [S(F((2, 3)), [1], dtype=D("float64")), S(F((2, 3), "int32"), [0], dtype=D("float32"))]
    return s + dim_samples


ENTRIES["sum.dim_IntList"] = E(
    _reduction([S(F((2, 3)), None), S(F(()), []), S(F((0, 3)), [0]), S(F((2, 3)), []),
                S(F((4,), "float16"), [0], _rtol=2e-3), S(F((2, 3), "uint8"), [1]),
                S(F((2, 3)), [1], dtype=D("int32"))]),
    [S(F((2, 3)), [2]), S(F((2, 3)), [1, 1])])
ENTRIES["sum.default"] = E(
    [S(F((2, 3))), S(F(())), S(F((0, 3))), S(F((3, 4), layout="t")), S(F((2, 3), "int32")),
     S(F((2, 3), "bool")), S(F((4,), "float16"), _rtol=2e-3), S(F((2, 3)), dtype=D("float64")),
     S(F((2, 3), "uint8"), dtype=D("int32")), S(F((2, 3), layout="expand"))])
ENTRIES["mean.default"] = E(
    [S(F((2, 3))), S(F(())), S(F((0, 3))), S(F((3, 4), "float64", layout="t")),
     S(F((2, 3), "int32"), dtype=D("float64"))],
    [S(F((2, 3), "int64")), S(F((2, 3)), dtype=D("int32"))])
ENTRIES["mean.dim"] = E(
    _reduction([S(F((2, 3)), None), S(F(()), []), S(F((0, 3)), [1]), S(F((2, 3)), [])],
               dtypes=("float64", "float16")) + [S(F((2, 3), "int32"), [1], dtype=D("float64"))],
    [S(F((2, 3), "int64"), [1]), S(F((2, 3)), [3]), S(F((2, 3), "bool"), None)])
ENTRIES["prod.dim_int"] = E(
    [S(F((2, 3)), 1), S(F((2, 3), "int32"), 0, True), S(F((3, 4), layout="t"), -1),
     S(F((2, 3), layout="expand"), 0), S(F((0, 3)), 0), S(F(()), 0),
     S(F((2, 3), "bool"), 1), S(F((2, 3)), 1, dtype=D("float64")),
     S(F((2, 3, 4, 5), layout="cl"), 1, True)],
    [S(F((2, 3)), 2)])
ENTRIES["prod.default"] = E(
    [S(F((2, 3))), S(F((3,), "int32")), S(F((2, 3)), dtype=D("float64")), S(F(())),
     S(F((0,))), S(F((3, 2), "uint8", "t")), S(F((3,), "bool"))])
_VAR = ([S(F((3, 4)), [1]), S(F((3, 4)), None), S(F((3, 4)), [0], correction=0),
         S(F((3, 4)), [1], keepdim=True), S(F((3, 4), layout="t"), [0, 1], correction=2),
         S(F((2, 3, 4, 5), layout="cl"), [1], keepdim=True), S(F((3, 4), "float64"), [1]),
         S(F((3, 4), layout="expand"), [0]), S(F((3, 4)), [-1], correction=0.5),
         S(F((1, 4)), [0]), S(F((0, 4)), [1])],
        [S(F((3, 4), "int64"), [1]), S(F((3, 4)), [2])])
ENTRIES["var.correction"] = E(*_VAR)
ENTRIES["std.correction"] = E(*_VAR)
for _name in ("amax", "amin"):
    ENTRIES[f"{_name}.default"] = E(
        [S(F((3, 4)), [1]), S(F((3, 4)), []), S(F((3, 4), "int32"), [0], True),
         S(F((3, 4)), [0, 1]), S(F((3, 4), layout="t"), [-1]), S(F((4,), "bool"), [0]),
         S(F((2, 3, 4, 5), layout="cl"), [1], True), S(F((3, 0)), [0]), S(F(()), [])],
        [S(F((0, 3)), [0]), S(F((3, 4)), [2])])
for _name in ("argmax", "argmin"):
    ENTRIES[f"{_name}.default"] = E(
        [S(F((3, 4))), S(F((3, 4)), 1), S(F((3, 4)), 0, True), S(F((3, 4), "int32", "t"), 0),
         S(F((2, 3), layout="expand"), 1), S(F(())), S(F((4,), values=(1.0, 3.0, 3.0, -1.0))),
         S(F((2, 3, 4, 5), layout="cl"), 1, True), S(F((3, 0)), 0)],
        [S(F((0, 3))), S(F((3, 4)), 2), S(F((0, 3)), 0)])
for _name in ("all", "any"):
    ENTRIES[f"{_name}.dims"] = E(
        [S(F((3, 4), "bool"), [1]), S(F((3, 4)), None), S(F((3, 4), "uint8"), [0]),
         S(F((3, 4), "bool", "t"), [0, 1], True), S(F((0, 3), "bool"), [0]),
         S(F((3, 4), "int32"), [1], True), S(F((), "bool")), S(F((3, 4), "bool"), [])],
        [S(F((3, 4), "bool"), [2])])
ENTRIES["logsumexp.default"] = E(
    [S(F((3, 4)), [1]), S(F((3, 4)), [0, 1], True), S(F((3, 4), "int64"), [1]),
     S(F((3, 4), layout="t"), [-1]), S(F((3, 4), "float64"), [0]), S(F((0, 4)), [0]),
     S(F((3, 4), values=[float("inf")] * 12), [1])],
    [S(F((3, 4)), [2])])
ENTRIES["norm.ScalarOpt_dim"] = E(
    [S(F((3, 4)), 2, [1]), S(F((3, 4)), 1, [0], True), S(F((3, 4)), None, [1]),
     S(F((3, 4)), float("inf"), [1]), S(F((3, 4), layout="t"), 3, [0, 1]),
     S(F((3, 4), "float64"), 0, [1]), S(F((3, 4)), 2.5, [-1])],
    [S(F((3, 4), "int64"), 2, [1]), S(F((3, 4)), 2, [2])])
ENTRIES["cumsum.default"] = E(
    [S(F((3, 4)), 1), S(F((3, 4), "int32"), 0), S(F((3, 4)), 0, dtype=D("float64")), S(F(()), 0),
     S(F((3, 4), layout="t"), -1), S(F((2, 3), layout="expand"), 0), S(F((0, 3)), 1),
     S(F((3, 4), "bool"), 1), S(F((2, 3, 4, 5), layout="cl"), 1)],
    [S(F((3, 4)), 2)])
ENTRIES["cumprod.default"] = E(
    [S(F((3, 4)), 1), S(F((3, 4), "int32"), 0), S(F((3, 4)), 0, dtype=D("float64")), S(F(()), 0),
     S(F((3, 4), layout="t"), -1), S(F((2, 3), layout="expand"), 0), S(F((0, 3)), 1),
     S(F((3, 4), "bool"), 1), S(F((2, 3, 4, 5), layout="cl"), 1), S(F((3, 6), "float16"), 1),
     S(F((4,), "int8", lo=-9, hi=9), 0), S(F((3, 4), "int64"), 1, dtype=D("float32"))],
    [S(F((3, 4)), 2), S(F((3, 4)), 0, dtype=D("bool")), S(F((3, 4), "bool"), 1, dtype=D("bool"))])
for _name in ("max", "min"):
    ENTRIES[f"{_name}.dim"] = E(
        [S(F((3, 4)), 1), S(F((3, 4)), 0, True), S(F((3, 4), "int32", "t"), -1),
         S(F((4,), values=(1.0, 3.0, 3.0, -1.0)), 0), S(F(()), 0), S(F((3, 0)), 0),
         S(F((4,), "bool"), 0), S(F((2, 3, 4, 5), layout="cl"), 1, True)],
        [S(F((0, 3)), 0), S(F((3, 4)), 2)])
    ENTRIES[f"{_name}.default"] = E(
        [S(F((3, 4))), S(F((3, 4), "int32", "t")), S(F(())), S(F((4,), "bool")),
         S(F((4,), values=(1.0, float("nan"), 3.0, -1.0)))],
        [S(F((0, 3)))])
for _name in ("_softmax", "_log_softmax"):
    ENTRIES[f"{_name}.default"] = E(
        [S(F((3, 4)), 1, False), S(F((3, 4)), 0, False), S(F((2, 3, 4), layout="t"), -1, False),
         S(F((3, 4), "float64"), 1, False), S(F(()), 0, False), S(F((0, 4)), 1, False),
         S(F((2, 3, 4, 5), layout="cl"), 1, False), S(F((3, 4), layout="expand"), 0, False)],
        [S(F((3, 4), "int64"), 1, False), S(F((3, 4)), 2, False)])

# -- linear algebra ------------------------------------------------------------------------------
_MM = [S(F((2, 3)), F((3, 4))), S(F((2, 3), layout="t"), F((3, 4), layout="t")),
       S(F((0, 3)), F((3, 4))), S(F((2, 0)), F((0, 4))), S(F((2, 3), "int64"), F((3, 4), "int64")),
       S(F((2, 3), "float64", "offset"), F((3, 1), "float64", "expand")),
       S(F((2, 3), "int32"), F((3, 4), "int32"))]
ENTRIES["mm.default"] = E(
    _MM, [S(F((2, 3)), F((4, 5))), S(F((2, 3)), F((3, 4), "float64")), S(F((3,)), F((3, 4))),
          S(F((2, 3)), F((3,)))])
ENTRIES["mm.out"] = E(
    [S(*s.args, out=F((0,), s.args[0].dtype)) for s in _MM[:3]]
    + [S(F((2, 3)), F((3, 4)), out=F((2, 4), layout="t"))],
    [S(F((2, 3)), F((3, 4)), out=F((0,), "int64")), S(F((2, 3)), F((4, 5)), out=F((0,)))])
_BMM = [S(F((2, 2, 3)), F((2, 3, 4))), S(F((2, 2, 3), layout="t"), F((2, 3, 4))),
        S(F((0, 2, 3)), F((0, 3, 4))), S(F((2, 2, 3), "int64"), F((2, 3, 4), "int64")),
        S(F((2, 2, 0)), F((2, 0, 3)))]
ENTRIES["bmm.default"] = E(
    _BMM, [S(F((2, 2, 3)), F((2, 4, 4))), S(F((2, 2, 3)), F((3, 3, 4))), S(F((2, 3)), F((3, 4)))])
ENTRIES["bmm.out"] = E(
    [S(*s.args, out=F((0,), s.args[0].dtype)) for s in _BMM[:3]],
    [S(F((2, 2, 3)), F((2, 3, 4)), out=F((0,), "int32"))])
ENTRIES["addmm.default"] = E(
    [S(F((2, 4)), F((2, 3)), F((3, 4))), S(F((4,)), F((2, 3)), F((3, 4)), beta=0.5, alpha=2),
     S(F(()), F((2, 3), layout="offset"), F((3, 4), layout="t")),
     S(F((2, 4), "int64"), F((2, 3), "int64"), F((3, 4), "int64"), beta=2),
     S(F((2, 4)), F((2, 0)), F((0, 4)), beta=0)],
    [S(F((3,)), F((2, 3)), F((3, 4))), S(F((2, 4)), F((2, 3)), F((2, 4)))])
ENTRIES["dot.default"] = E(
    [S(F((3,)), F((3,))), S(F((4,), "int64"), F((4,), "int64")), S(F((0,)), F((0,))),
     S(F((3,), layout="step"), F((3,), layout="offset"))],
    [S(F((3,)), F((4,))), S(F((2, 3)), F((3,))), S(F((3,)), F((3,), "float64"))])
ENTRIES["mv.default"] = E(
    [S(F((2, 3)), F((3,))), S(F((3, 2), layout="t"), F((2,))), S(F((0, 3)), F((3,))),
     S(F((2, 3), "int64"), F((3,), "int64"))],
    [S(F((2, 3)), F((4,))), S(F((3,)), F((3,)))])
ENTRIES["matmul.default"] = E(
    [S(F((3,)), F((3,))), S(F((2, 3)), F((3,))), S(F((3,)), F((3, 4))), S(F((2, 3)), F((3, 4))),
     S(F((2, 2, 3)), F((3, 4))), S(F((2, 2, 3)), F((2, 3, 4))), S(F((2, 1, 2, 3)), F((3, 3, 2))),
     S(F((3,)), F((2, 3, 4))), S(F((2, 3, 4), layout="t"), F((4,)))],
    [S(F((2, 3)), F((4, 5))), S(F(()), F((3,))), S(F((3,)), F((4,))), S(F((2, 3, 4)), F((5, 6))),
     S(F((2, 2, 3)), F((3, 3, 4)))])
ENTRIES["linear.default"] = E(
    [S(F((2, 3)), F((4, 3))), S(F((2, 3)), F((4, 3)), F((4,))), S(F((3,)), F((4, 3))),
     S(F((2, 5, 3)), F((4, 3), layout="t"), F(()))],
    [S(F((2, 3)), F((3, 4)))])
ENTRIES["einsum.default"] = E(
    [S("ij,jk->ik", [F((2, 3)), F((3, 4))]), S("ii->i", [F((3, 3))]), S("ij->", [F((2, 3))]),
     S("bij,bjk->bik", [F((2, 2, 3)), F((2, 3, 4))]), S("i,j->ij", [F((2,)), F((3,))]),
     S("ij->ji", [F((2, 3), layout="t")])],
    [S("ij,jk->ik", [F((2, 3)), F((4, 5))]), S("ij->i", [F((2, 3)), F((3,))])])

# -- concatenation, indexing, scatter ------------------------------------------------------------
_CAT = [S([F((2, 3)), F((1, 3))]), S([F((2, 3)), F((2, 1))], 1), S([F((2, 3)), F((0,))]),
        S([F((2, 3), "int32"), F((2, 3))]), S([F((2, 3), layout="t"), F((2, 3), layout="t")]),
        S([F((2, 3, 4, 5), layout="cl"), F((2, 3, 4, 5), layout="cl")], 1),
        S([F((2, 3))]), S([F((0, 3)), F((0, 3))]), S([F((2, 3)), F((2, 3), "float64")], -1),
        S([F((2, 3), "bool"), F((2, 3), "uint8")])]
ENTRIES["cat.default"] = E(
    _CAT, [S([F((2, 3)), F((2, 4))]), S([F(()), F(())]), S([]), S([F((2, 3)), F((2, 3))], 2)])
ENTRIES["cat.out"] = E(
    [S(*s.args, out=F((0,))) for s in _CAT[:3]]
    + [S([F((2, 3)), F((2, 3))], out=F((4, 3), layout="t"))],
    [S([F((2, 3)), F((2, 3))], out=F((0,), "int32"))])
ENTRIES["stack.default"] = E(
    [S([F((2, 3)), F((2, 3))]), S([F((2, 3)), F((2, 3))], 2), S([F(()), F(())]),
     S([F((2, 3), layout="t"), F((2, 3))], 1), S([F((2, 3), "int64"), F((2, 3))], -1),
     S([F((0, 3))])],
    [S([F((2,)), F((3,))]), S([]), S([F((2, 3))], 3)])


def _idx(shape, hi, dtype="int64", values=None, layout="contig"):
    return T(shape, dtype, layout, lo=0, hi=hi, values=values)


ENTRIES["gather.default"] = E(
    [S(F((3, 4)), 1, _idx((3, 2), 3)), S(F((3, 4)), 0, _idx((2, 4), 2)),
     S(F((3, 4), layout="t"), -1, _idx((2, 2), 3)), S(F((3, 4)), 1, _idx((0, 2), 3)),
     S(F((3, 4), "int32"), 0, _idx((3, 4), 2, layout="t")), S(F(()), 0, _idx((), 0))],
    [S(F((3, 4)), 1, _idx((3, 2), 0, values=(0, 5, 1, 1, 2, 2)), _meta=False),
     S(F((3, 4)), 1, _idx((3, 2), 3, "float32")), S(F((3, 4)), 2, _idx((3, 2), 3)),
     S(F((3, 4)), 1, _idx((4, 2), 3))])
_PERM_ROWS = _idx((3, 4), 0, values=(2, 0, 1, 1, 0, 2, 0, 2, 1, 1, 2, 0))
ENTRIES["scatter.src"] = E(
    [S(F((3, 4)), 0, _PERM_ROWS, F((3, 4))),
     S(F((3, 4)), 1, _idx((3, 2), 0, values=(0, 3, 1, 2, 3, 0)), F((3, 5))),
     S(F((3, 4), layout="t"), 0, _idx((1, 4), 2), F((1, 4))),
     S(F((3, 4), "int64"), 1, _idx((3, 0), 3), F((3, 0), "int64"))],
    [S(F((3, 4)), 1, _idx((3, 2), 0, values=(0, 9, 1, 2, 3, 0)), F((3, 2)), _meta=False),
     S(F((3, 4)), 1, _idx((3, 2), 3), F((3, 2), "float64")),
     S(F((3, 4)), 1, _idx((3, 2), 3, "int16"), F((3, 2)))])
ENTRIES["scatter.value"] = E(
    [S(F((3, 4)), 0, _PERM_ROWS, 1.5), S(F((3, 4), "int32"), 1, _idx((3, 1), 3), 7),
     S(F((3, 4), layout="t"), 1, _idx((2, 2), 0, values=(0, 1, 2, 3)), -2.0)],
    [S(F((3, 4)), 1, _idx((3, 1), 0, values=(0, 4, 1)), 1.0, _meta=False),
     S(F((3, 4), "uint8"), 1, _idx((3, 1), 3), -1.0, _meta=False),
     S(F((3, 4), "int8"), 1, _idx((3, 1), 3), 200, _meta=False)])
ENTRIES["index_select.default"] = E(
    [S(F((3, 4)), 0, _idx((2,), 0, values=(2, 0))), S(F((3, 4)), 1, _idx((3,), 0, "int32",
                                                                       values=(0, 3, 3))),
     S(F((3, 4), layout="t"), -1, _idx((0,), 3)), S(F(()), 0, _idx((1,), 0)),
     S(F((3, 4), "int64", "expand"), 0, _idx((4,), 2))],
    [S(F((3, 4)), 0, _idx((2,), 0, values=(0, 3)), _meta=False),
     S(F((3, 4)), 0, _idx((2, 1), 2)), S(F((3, 4)), 0, F((2,))), S(F((3, 4)), 2, _idx((1,), 0))])
ENTRIES["index.Tensor"] = E(
    [S(F((3, 4)), [_idx((2,), 0, values=(0, 2))]),
     S(F((3, 4)), [None, _idx((2,), 0, values=(3, -1))]),
     S(F((3, 4)), [_idx((2, 1), 2), _idx((3,), 3)]),
     S(F((3, 4), layout="t"), [_idx((2,), 2)]),
     S(F((3, 4)), [F((3, 4), "bool")], _meta="raises"),
     S(F((3, 4)), [F((3,), "bool")], _meta="raises"),
     S(F((2, 3, 4)), [None, None, _idx((2,), 3)])],
    [S(F((3, 4)), [_idx((2,), 0, values=(0, 3))], _meta=False),
     S(F((3, 4)), [F((2,))]), S(F((3, 4)), [None, None, _idx((1,), 0)])])
ENTRIES["index_put.default"] = E(
    [S(F((3, 4)), [_idx((2,), 0, values=(0, 2))], F((4,))),
     S(F((3, 4)), [_idx((2,), 0, values=(0, 0))], F((2, 4)), True),
     S(F((3, 4)), [None, _idx((2,), 0, values=(1, 3))], F(())),
     S(F((3, 4)), [F((3, 4), "bool")], F(())),
     S(F((3, 4), "int64"), [_idx((2,), 2), _idx((2,), 3)], F((2,), "int64")),
     S(F((3, 4), layout="t"), [_idx((1,), 2)], F((4,)))],
    [S(F((3, 4)), [_idx((2,), 0, values=(0, 5))], F((4,)), _meta=False),
     S(F((3, 4)), [_idx((2,), 2)], F((3,))), S(F((3, 4)), [_idx((2,), 2)], F((4,), "float64"))])

# -- nn --------------------------------------------------------------------------------------------
ENTRIES["tril.default"] = E(
    [S(F((3, 4))), S(F((3, 4)), 1), S(F((3, 4)), -1), S(F((2, 3, 4))), S(F((3, 4), "int64", "t")),
     S(F((3, 4), layout="expand"), 2), S(F((0, 3)))],
    [S(F((3,)))])
ENTRIES["triu.default"] = E(list(ENTRIES["tril.default"].samples),
                            list(ENTRIES["tril.default"].errors))
ENTRIES["embedding.default"] = E(
    [S(F((5, 3)), _idx((2, 4), 4)), S(F((5, 3)), _idx((3,), 4), 1),
     S(F((5, 3), layout="t"), _idx((), 4)), S(F((5, 3)), _idx((0,), 4)),
     S(F((5, 3), "float64"), _idx((2,), 4, "int32"))],
    [S(F((5, 3)), _idx((2,), 0, values=(0, 5)), _meta=False), S(F((5, 3)), F((2,)))])
ENTRIES["native_layer_norm.default"] = E(
    [S(F((2, 3, 4)), [4], F((4,)), F((4,)), 1e-5), S(F((2, 3, 4)), [3, 4], None, None, 1e-5),
     S(F((2, 3, 4), layout="t"), [4], None, F((4,)), 1e-3),
     S(F((2, 3), "float64"), [3], F((3,), "float64"), None, 1e-5),
     S(F((0, 4)), [4], None, None, 1e-5)],
    [S(F((2, 3, 4)), [3], None, None, 1e-5), S(F((2, 3, 4)), [4], F((3,)), None, 1e-5)],
    rtol=1e-5, atol=1e-5)


def _lnb(shape, k, dtype="float32", params=True, mask=(True, True, True), layout="contig",
         param_dtype=None, **kw):
    """A native_layer_norm_backward sample: grad and input of ``shape`` normalized over the
    last ``k`` dims, mean/rstd of the forward's (rows..., 1...) shape (rstd positive),
    weight/bias (``params``: both, "weight", "bias" or False) in ``param_dtype``. (float16
    input with float32 parameters: torch rounds the parameter gradients' terms to float16 on
    the way, ours not: half-precision tolerance.)"""
    norm, stat = list(shape[len(shape) - k:]), shape[:len(shape) - k] + (1,) * k
    pdt = param_dtype or dtype
    w = F(tuple(norm), pdt) if params in (True, "weight") else None
    b = F(tuple(norm), pdt) if params in (True, "bias") else None
    return S(F(shape, dtype), F(shape, dtype, layout), norm, F(stat, pdt),
             F(stat, pdt, lo=0.5, hi=2.0), w, b, list(mask), **kw)


ENTRIES["native_layer_norm_backward.default"] = E(
    [_lnb((2, 3, 4), 1), _lnb((2, 3, 4), 2, layout="t", params=False, mask=(True, False, False)),
     _lnb((2, 3, 4), 3, "float64", params="weight", mask=(True, True, False)),
     _lnb((5, 4), 1, params="bias", mask=(False, False, True)),
     _lnb((5, 4), 1, mask=(False, True, True)), _lnb((5, 4), 1, mask=(False, False, False)),
     _lnb((3, 8), 1, "float16"),
     _lnb((3, 8), 1, "float16", param_dtype="float32", _rtol=1e-3, _atol=1e-3),
     _lnb((0, 4), 1), _lnb((3, 0), 1), _lnb((4,), 1, "float64")],
    [_lnb((2, 3, 4), 1, params=False), _lnb((2, 3, 4), 1, params="weight"),
     S(F((3, 8), "float16"), F((3, 8), "float16"), [8], F((3, 1), "float16"),
       F((3, 1), "float16", lo=0.5, hi=2.0), F((8,)), None, [True, True, False]),
     S(F((2, 3)), F((2, 3)), [], F((2, 1)), F((2, 1)), None, None, [True, False, False]),
     S(F((2, 3)), F((2, 3)), [3], F((2, 1)), F((2, 1)), F((2,)), None, [True, True, False]),
     S(F((2, 3), "float64"), F((2, 3)), [3], F((2, 1)), F((2, 1)), None, None,
       [True, False, False]),
     S(F((2, 3)), F((2, 3)), [3], F((2, 1), "float64"), F((2, 1)), None, None,
       [True, False, False]),
     S(F((2, 3), "int64"), F((2, 3), "int64"), [3], F((2, 1)), F((2, 1)), None, None,
       [True, False, False])],
    rtol=1e-5, atol=1e-5)
_SMB = [S(F((3, 4)), F((3, 4)), 1, D("float32")),
        S(F((3, 4), layout="t"), F((3, 4)), 0, D("float32")),
        S(F((2, 3, 4), "float64"), F((2, 3, 4), "float64", "t"), -1, D("float64")),
        S(F((3, 4), "float64"), F((3, 4), "float64"), 1, D("float32")),
        S(F(()), F(()), 0, D("float32")), S(F((0, 4)), F((0, 4)), 1, D("float32")),
        S(F((2, 3, 4, 5), layout="cl"), F((2, 3, 4, 5)), 1, D("float32")),
        S(F((3, 4), "float16"), F((3, 4), "float16"), 1, D("float16"))]
_SMB_ERRORS = [S(F((3, 4)), F((3, 4)), 2, D("float32")),
               S(F((3, 4)), F((3, 4), "float64"), 1, D("float32")),
               S(F((3, 4)), F((3, 4)), 1, D("float16")),
               S(F((3, 4), "int32"), F((3, 4), "int32"), 0, D("int32"))]
ENTRIES["_softmax_backward_data.default"] = E(
    _SMB, _SMB_ERRORS + [S(F((3, 4)), F((3, 5)), 1, D("float32"))])
# (PyTorch's log_softmax backward does not compare the two sizes: no mismatch sample.)
ENTRIES["_log_softmax_backward_data.default"] = E(list(_SMB), list(_SMB_ERRORS))
ENTRIES["embedding_dense_backward.default"] = E(
    [S(F((2, 4, 3)), _idx((2, 4), 4), 5, -1, False),
     S(F((3, 3), layout="t"), _idx((3,), 4), 5, 1, False),
     S(F((3, 3)), _idx((3,), 4, values=(1, 1, 2)), 5, -1, True),
     S(F((3, 3), "float64"), _idx((3,), 4, "int32", values=(0, 2, 0)), 5, 0, True),
     S(F((3,), "float64"), _idx((), 4), 5, -1, False), S(F((0, 3)), _idx((0,), 4), 5, -1, False)],
    [S(F((2, 3)), _idx((3,), 4), 5, -1, False), S(F((3, 3)), F((3,)), 5, -1, False)])
# fused CPU attention: (B, H, L, E) query, (B, H_kv, S, E) key/value
_Q, _K = (2, 3, 5, 4), (2, 3, 7, 4)
_ATT = [S(F(_Q), F(_K), F(_K)), S(F(_Q), F(_K), F(_K), 0.0, True),
        S(F((2, 3, 9, 4)), F(_K), F(_K), 0.0, True, scale=0.3),
        S(F(_Q), F(_K), F(_K), attn_mask=F((5, 7))),
        S(F(_Q), F(_K), F(_K), attn_mask=F((2, 1, 5, 1))),
        S(F((2, 4, 5, 4)), F((2, 2, 7, 4)), F((2, 2, 7, 4))),
        S(F(_Q, "float64"), F(_K, "float64"), F(_K, "float64"), 0.0, True),
        S(F(_Q, "float16"), F(_K, "float16"), F(_K, "float16")),
        S(F(_Q, layout="offset"), F(_K, layout="offset"), F(_K),
          attn_mask=F((5, 7), layout="expand")),
        S(F((0, 3, 5, 4)), F((0, 3, 7, 4)), F((0, 3, 7, 4)))]
ENTRIES["_scaled_dot_product_flash_attention_for_cpu.default"] = E(
    _ATT, [S(F(_Q), F(_K), F(_K), 0.5), S(F((3, 5, 4)), F((3, 7, 4)), F((3, 7, 4))),
           S(F(_Q, "float64"), F(_K), F(_K))], rtol=1e-3, atol=1e-3)
ENTRIES["_scaled_dot_product_flash_attention_for_cpu_backward.default"] = E(
    [S(F(_Q), F(_Q), F(_K), F(_K), F(_Q), F((2, 3, 5), lo=2.0, hi=3.0), 0.0, False),
     S(F(_Q), F(_Q), F(_K), F(_K), F(_Q), F((2, 3, 5), lo=2.0, hi=3.0), 0.0, True, scale=0.5),
     S(F(_Q), F(_Q), F(_K), F(_K), F(_Q), F((2, 3, 5), lo=2.0, hi=3.0), 0.5, False),
     S(F((2, 4, 5, 4)), F((2, 4, 5, 4)), F((2, 2, 7, 4)), F((2, 2, 7, 4)), F((2, 4, 5, 4)),
       F((2, 4, 5), lo=2.0, hi=3.0), 0.0, False, attn_mask=F((5, 7))),
     S(F(_Q, "float64"), F(_Q, "float64"), F(_K, "float64"), F(_K, "float64"),
       F(_Q, "float64"), F((2, 3, 5), "float64", lo=2.0, hi=3.0), 0.0, False),
     S(F(_Q, layout="offset"), F(_Q, layout="offset"), F(_K), F(_K, layout="offset"), F(_Q),
       F((2, 3, 5), lo=2.0, hi=3.0), 0.0, True),
     S(F((0, 3, 5, 4)), F((0, 3, 5, 4)), F((0, 3, 7, 4)), F((0, 3, 7, 4)), F((0, 3, 5, 4)),
       F((0, 3, 5)), 0.0, False)],
    [S(F(_Q), F(_Q, "float64"), F(_K), F(_K), F(_Q), F((2, 3, 5)), 0.0, False),
     S(F(_Q, "float64"), F(_Q), F(_K), F(_K), F(_Q), F((2, 3, 5)), 0.0, False)],
    rtol=1e-3, atol=1e-3)
ENTRIES["layer_norm.default"] = E(
    [S(F((2, 3, 4)), [4]), S(F((2, 3, 4)), [4], F((4,)), F((4,))),
     S(F((2, 3, 4)), [3, 4], None, None, 1e-3)],
    [S(F((2, 3, 4)), [3])], rtol=1e-5, atol=1e-5)
ENTRIES["softmax.int"] = E(
    [S(F((3, 4)), 1), S(F((3, 4), layout="t"), 0), S(F((3, 4), "int64"), 1, D("float32")),
     S(F((3, 4)), -1, D("float64")), S(F(()), 0)],
    [S(F((3, 4), "int64"), 1), S(F((3, 4)), 2)])
ENTRIES["log_softmax.int"] = E(list(ENTRIES["softmax.int"].samples),
                               list(ENTRIES["softmax.int"].errors))
ENTRIES["nonzero.default"] = E(
    [S(F((3, 4), "bool"), _meta="raises"), S(F((3, 4), "int32"), _meta="raises"),
     S(F(()), _meta="raises"), S(F((0, 3)), _meta="raises"),
     S(F((3, 4), "bool", "t"), _meta="raises")], data_dependent=True)

# -- composites ----------------------------------------------------------------------------------
ENTRIES["reshape.default"] = E(
    [S(F((2, 3)), [3, 2]), S(F((2, 3), layout="t"), [6]), S(F((2, 3)), [-1]), S(F(()), [1, 1]),
     S(F((3, 1), layout="expand"), [3]), S(F((2, 3), layout="expand"), [6]),
     S(F((0, 3)), [3, 0])],
    [S(F((2, 3)), [4]), S(F((2, 3)), [-1, -1]), S(F((0, 3)), [-1, 0])])
ENTRIES["flatten.using_ints"] = E(
    [S(F((2, 3, 4))), S(F((2, 3, 4)), 1), S(F((2, 3, 4), layout="t"), 0, 1), S(F(())),
     S(F((3,))), S(F((2, 3, 4)), -2, -1), S(F((2, 3, 4)), 1, 1)],
    [S(F((2, 3, 4)), 2, 1), S(F((2, 3)), 0, 2)])
ENTRIES["unflatten.int"] = E(
    [S(F((2, 6)), 1, [2, 3]), S(F((2, 6)), 1, [-1, 3]), S(F((2, 6), layout="t"), 0, [1, 2]),
     S(F((6,)), 0, [3, 2])],
    [S(F((2, 6)), 1, [4, 2]), S(F((2, 6)), 1, [])])
ENTRIES["view_as.default"] = E([S(F((2, 3)), F((3, 2))), S(F((6,)), F((1, 6), "int32"))],
                               [S(F((2, 3)), F((4,)))])
ENTRIES["expand_as.default"] = E([S(F((3,)), F((2, 3))), S(F((3, 1)), F((3, 4), "int64"))],
                                 [S(F((3,)), F((2, 4)))])
ENTRIES["narrow.default"] = E(
    [S(F((5, 4)), 0, 1, 2), S(F((5, 4)), 1, -2, 2), S(F((5, 4), layout="t"), -1, 0, 0),
     S(F((5, 4)), 0, 5, 0)],
    [S(F((5, 4)), 0, 4, 2), S(F(()), 0, 0, 1), S(F((5, 4)), 0, 6, 0)])
ENTRIES["chunk.default"] = E(
    [S(F((5, 4)), 3), S(F((5, 4)), 2, 1), S(F((5, 4)), 10), S(F((0, 4)), 2),
     S(F((6, 4), layout="t"), 3)],
    [S(F((5, 4)), 0), S(F(()), 2)])
ENTRIES["movedim.intlist"] = E(
    [S(F((2, 3, 4)), [0], [2]), S(F((2, 3, 4)), [0, 1], [2, 0]), S(F((2, 3, 4)), [-1], [0])],
    [S(F((2, 3, 4)), [0, 0], [1, 2]), S(F((2, 3, 4)), [0], [1, 2])])
ENTRIES["contiguous.default"] = E(
    [S(F((2, 3))), S(F((2, 3), layout="t")), S(F((2, 3), layout="expand")),
     S(F((2, 3, 4, 5), layout="cl"), memory_format=MF("channels_last")),
     S(F((2, 3, 4, 5)), memory_format=MF("channels_last")), S(F((2, 3), layout="offset"))])
for _name in ("all", "any"):
    ENTRIES[f"{_name}.default"] = E(
        [S(F((3, 4), "bool")), S(F((3, 4))), S(F((3, 4), "uint8", "t")), S(F((0, 3), "bool")),
         S(F((), "int32")), S(F((3, 4), "bool", "expand"))])
    ENTRIES[f"{_name}.dim"] = E(
        [S(F((3, 4), "bool"), 1), S(F((3, 4)), 0), S(F((3, 4), "uint8"), 0, True),
         S(F((3, 4), "bool", "t"), -1, True), S(F((0, 3), "bool"), 0), S(F((), "bool"), 0)],
        [S(F((3, 4), "bool"), 2)])
ENTRIES["linalg_vector_norm.default"] = E(
    [S(F((3, 4))), S(F((3, 4)), 1, [1]), S(F((3, 4)), float("inf"), [0], True),
     S(F((3, 4), layout="t"), 3, [0, 1]), S(F((3, 4)), 0, [1]), S(F((3, 4)), -float("inf")),
     S(F((3, 4)), 2, None, False, dtype=D("float64")), S(F((3, 4), "float64", "expand"), 2.5),
     S(F(())), S(F((0, 3)), 2, [1])],
    [S(F((3, 4), "int64")), S(F((3, 4)), 2, [2]), S(F((0, 3)), float("inf"), [0])])

# -- element-rearranging copies and grids ---------------------------------------------------------
ENTRIES["flip.default"] = E(
    [S(F((2, 3)), [0]), S(F((2, 3)), [0, 1]), S(F((3, 4), layout="t"), [-1]), S(F(()), [0]),
     S(F((2, 3), "int64"), []), S(F((2, 3), layout="expand"), [1]), S(F((0, 3)), [1]),
     S(F((2, 3, 4, 5), layout="cl"), [1, 3]), S(F((2, 5), "bool", "offset"), [1]),
     S(F((3, 6), "float16", "step"), [0]), S(F(()), [-1])],
    [S(F((2, 3)), [0, 0]), S(F((2, 3)), [0, -2]), S(F((2, 3)), [2]), S(F(()), [1])])
ENTRIES["roll.default"] = E(
    [S(F((2, 3)), [1], [0]), S(F((2, 3)), [2]), S(F((2, 3)), [1, 2], [0, 1]),
     S(F((3, 4), layout="t"), [1], [0]), S(F((3, 4), layout="t"), [-5]), S(F(()), [1]),
     S(F((0, 3)), [1], [0]), S(F((0, 3), layout="t"), [1], [5]), S(F((2, 3), "int64"), [7], [-1]),
     S(F((2, 3, 4, 5), layout="cl"), [1], [1]), S(F((2, 3, 4, 5), layout="cl"), [1, 2], [1, 2]),
     S(F((2, 3), layout="expand"), [1], [1]), S(F((2, 3), "bool", "offset"), [3, -1], [1, 1]),
     S(F((4, 3), "float16", "step"), [4], [0]), S(F((2, 3)), [0], [0])],
    [S(F((2, 3)), [1, 2], [0]), S(F((2, 3)), [], []), S(F((2, 3)), [1, 2]),
     S(F(()), [1], [0]), S(F((2, 3)), [1], [2]), S(F((2, 3)), [1, 1], [0, 2])])
ENTRIES["repeat.default"] = E(
    [S(F((2, 3)), [2, 1]), S(F((2, 3)), [2, 1, 2]), S(F((3, 4), layout="t"), [1, 1]),
     S(F(()), []), S(F(()), [3, 2]), S(F((2, 3)), [0, 2]), S(F((0, 3), "int64"), [2, 2]),
     S(F((2, 3), layout="expand"), [2, 2]), S(F((3,), "bool", "step"), [2]),
     S(F((2, 3, 4, 5), layout="cl"), [1, 2, 1, 1])],
    [S(F((2, 3)), [2]), S(F((2, 3)), [-1, 2]), S(F((2, 3)), [1, -2, 1])])
ENTRIES["diag_embed.default"] = E(
    [S(F((3,))), S(F((3,)), 1), S(F((3,)), -2), S(F((2, 3))), S(F((2, 3)), 1, 0, 2),
     S(F((2, 3), layout="t"), 0, 2, 0), S(F((2, 3), "int64"), -1, 1, 0), S(F((0,))),
     S(F((2, 0), "bool")), S(F((2, 3), layout="expand"), 2, -1, -3)],
    [S(F(())), S(F((2, 3)), 0, 1, 1), S(F((2, 3)), 0, 0, 3), S(F((2, 3)), 0, -1, 2)])
ENTRIES["tile.default"] = E(
    [S(F((2, 3)), [2]), S(F((2, 3)), [2, 2, 2]), S(F((3, 4), layout="t"), []), S(F(()), [2]),
     S(F((0, 3), "int64"), [2, 2]), S(F((2, 3), layout="expand"), [1, 0])],
    [S(F((2, 3)), [-1]), S(F((2, 3)), [2, -3])])
ENTRIES["diag.default"] = E(
    [S(F((3,))), S(F((3,)), 1), S(F((3,)), -1), S(F((2, 3))), S(F((2, 3)), 1), S(F((2, 3)), 5),
     S(F((3, 4), layout="t"), -1), S(F((3,), "int64", "step")), S(F((0,))), S(F((0, 3), "bool"))],
    [S(F(())), S(F((2, 2, 2)))])
ENTRIES["outer.default"] = E(
    [S(F((3,)), F((4,))), S(F((3,), "int64"), F((2,))), S(F((3,), layout="step"), F((0,))),
     S(F((3,), layout="offset"), F((3,), layout="step")), S(F((2,), "bool"), F((3,), "bool")),
     S(F((3,), "float16"), F((2,), "int32"))],
    [S(F((2, 3)), F((3,))), S(F((3,)), F(())), S(F(()), F((3,)))])
ENTRIES["kron.default"] = E(
    [S(F((2, 3)), F((2, 3))), S(F((3,)), F((4,))), S(F(()), F((2, 3))), S(F((2, 3)), F(())),
     S(F((2,), "int64"), F((2, 3))), S(F((2, 2, 2)), F((3,), "int32")), S(F((0, 2)), F((2, 3))),
     S(F(()), F(())), S(F((2, 3), layout="step"), F((2,), layout="offset")),
     S(F((2, 3), layout="expand"), F((2,)))],
    [S(F((2, 3), layout="t"), F((2, 3)))])
ENTRIES["meshgrid.default"] = E(
    [S([F((3,)), F((4,))]), S([F((3,))]), S([F(()), F((2,)), F((0,))]),
     S([F((3,), "int64", "step"), F((2,), "int64", "offset")])],
    [S([]), S([F((3,)), F((2,), "int64")])])
ENTRIES["meshgrid.indexing"] = E(
    [S([F((3,)), F((4,))], indexing="ij"), S([F((3,)), F((4,))], indexing="xy"),
     S([F((3,))], indexing="xy"), S([F(()), F((2,)), F((0,))], indexing="xy"),
     S([F((3,), "bool", "step"), F((2,), "bool", "offset"), F((2,), "bool")], indexing="xy")],
    [S([], indexing="ij"), S([F((3,))], indexing="foo"), S([F((3,)), F((2,), "int64")],
                                                           indexing="xy")])

# -- more zero-size / 0-d / dtype / layout coverage ------------------------------------------------
_MORE = {
    "chunk.default": [S(F((5, 2), "int32"), 2)],
    "mm.out": [S(F((2, 3), "int64"), F((3, 4), "int64"), out=F((0,), "int64"))],
    "bmm.out": [S(F((2, 2, 3), "float64"), F((2, 3, 4), "float64"), out=F((0,), "float64"))],
    "cat.out": [S([F((2, 3), "int32"), F((1, 3), "int32")], out=F((0,), "int32"))],
    "contiguous.default": [S(F((0, 3), "int32", "t")), S(F(()))],
    "clamp.Tensor": [S(F((0, 3)), F((3,)), None)],
    "einsum.default": [S("ij,jk->ik", [F((0, 3), "int64"), F((3, 2), "int64")])],
    "expand_as.default": [S(F((3, 1), layout="step"), F((0, 3, 4)))],
    "flatten.using_ints": [S(F((0, 3), "int32"))],
    "index.Tensor": [S(F((3, 4)), [_idx((0,), 3)])],
    "index_put.default": [S(F((3, 4)), [_idx((0,), 2)], F(()))],
    "layer_norm.default": [S(F((2, 3, 4), layout="t"), [4]), S(F((2, 3, 4), "float64"), [4]),
                           S(F((0, 4)), [4])],
    "linear.default": [S(F((0, 3), "float64"), F((4, 3), "float64"))],
    "softmax.int": [S(F((0, 4)), 1)],
    "log_softmax.int": [S(F((0, 4)), 1)],
    "masked_fill.Scalar": [S(F((0, 3)), F((3,), "bool"), 1.0)],
    "masked_fill.Tensor": [S(F((0, 3)), F((3,), "bool"), F(()))],
    "matmul.default": [S(F((0, 3)), F((3, 4))), S(F((2, 3), "int64"), F((3,), "int64"))],
    "movedim.intlist": [S(F((2, 3, 4), "int32", "t"), [0], [1]), S(F((0, 3, 2)), [0], [2])],
    "narrow.default": [S(F((0, 3), "int64"), 1, 1, 2)],
    "norm.ScalarOpt_dim": [S(F((0, 3)), 2, [1])],
    "reshape.default": [S(F((2, 3), "int64", "t"), [6])],
    "scatter.value": [S(F((3, 4)), 1, _idx((3, 0), 3), 1.0),
                      S(F((3, 4), "uint8"), 1, _idx((3, 0), 3), -1.0)],
    "unflatten.int": [S(F((0, 6), "int32"), 1, [2, 3])],
    "view_as.default": [S(F((0, 3)), F((3, 0))), S(F((2, 3), layout="t"), F((2, 3)))],
    "logsumexp.default": [S(F(()), [0])],
    "var.correction": [S(F(()), [0], correction=0)],
    "std.correction": [S(F(()), [0], correction=0)],
}
for _key, _extra in _MORE.items():
    ENTRIES[_key].samples.extend(_extra)
