"""Sample table, part 4: more pointwise ops (``isnan`` ... ``nan_to_num``; kernels in
``kernels/pointwise_more.py``, composites ``square``/``fix``/``isfinite``). See ``samples.py``
for the spec language; ``unary``/``binary`` generate the layout, dtype and broadcasting sweeps
as for the other pointwise ops. ``SPECIAL`` adds NaN, +-inf and -0.0 in float32/16/64.
"""

from __future__ import annotations

from samples import E, S, T
from samples_math import ALL, FLOATS, INTS, binary, unary

F = T
ENTRIES = {}

_NAN, _INF = float("nan"), float("inf")
_SPECIAL_VALUES = (_NAN, _INF, -_INF, -0.0, 0.0, 1.5, -2.5, 0.75)


def special(**kw):
    """NaN, +-inf, signed zeros and finite values, in each floating dtype and a strided
    layout."""
    return [S(F((8,), d, values=_SPECIAL_VALUES), **kw) for d in FLOATS] + [
        S(F((2, 4), "float32", "t", values=_SPECIAL_VALUES), **kw)]


# -- unary -------------------------------------------------------------------------------------
for _name in ("isnan", "isinf", "isposinf", "isneginf", "signbit", "sgn", "isfinite"):
    ENTRIES[f"{_name}.default"] = unary()
    ENTRIES[f"{_name}.default"].samples += special()
for _name in ("trunc", "fix"):
    ENTRIES[f"{_name}.default"] = unary(INTS + FLOATS, ("bool",))
    ENTRIES[f"{_name}.default"].samples += special()
ENTRIES["frac.default"] = unary(FLOATS, ("bool", "uint8", "int64"))
ENTRIES["frac.default"].samples += special()
ENTRIES["square.default"] = unary(ALL)
ENTRIES["square.default"].samples += special()
ENTRIES["nan_to_num.default"] = unary(ALL)
ENTRIES["nan_to_num.default"].samples += special() + special(nan=1.0, posinf=2.0) + [
    S(F((8,), "float16", values=_SPECIAL_VALUES), -1.0, 1e10, -1e10),
    S(F((8,), "float64", values=_SPECIAL_VALUES), neginf=-7.5),
    S(F((4,), "int64"), nan=1.0, posinf=2.0), S(F((3, 4), "int64", "t")),
    S(F((2, 3, 4, 5), "bool", "cl")), S(F((2, 3), "int32", "expand"))]

# -- clamp_min / clamp_max ------------------------------------------------------------------------
for _name in ("clamp_min", "clamp_max"):
    ENTRIES[f"{_name}.default"] = E(
        [S(F((2, 3)), -1.0), S(F((3, 4), layout="t"), 0.5), S(F((2, 3), layout="expand"), 1),
         S(F((0, 3)), 0.0), S(F(()), 1.0), S(F((2, 3, 4, 5), layout="cl"), -0.5),
         S(F((2, 5), layout="offset"), 0.25), S(F((4,), "int32"), -1),
         S(F((4,), "int32"), 0.5), S(F((4,), "uint8"), 2), S(F((4,), "uint8"), -1),
         S(F((4,), "float16"), 1.0), S(F((4,), "float64"), 0), S(F((4,), "bool"), 0),
         S(F((8,), values=_SPECIAL_VALUES), 0.0), S(F((8,), values=_SPECIAL_VALUES), _NAN)],
        [S(F((4,), "bool"), True), S(F((4,), "uint8"), 300), S(F((4,), "float16"), 1e10)])
    ENTRIES[f"{_name}.Tensor"] = binary(scalars=False)
    ENTRIES[f"{_name}.Tensor"].samples += [
        S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(0.0,) * 7 + (_NAN,))),
        S(F((8,), values=_SPECIAL_VALUES), F((), values=(_NAN,))),
        S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(-0.0,) * 8))]

# -- binary --------------------------------------------------------------------------------------
ENTRIES["logical_xor.default"] = binary(scalars=False)
ENTRIES["logical_xor.default"].samples += [
    S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(0.0,) * 4 + (1.0,) * 4))]

# -- transcendental and angle ops (integers and bool compute in float) --------------------------
for _name in ("tan", "asin", "acos", "atan", "sinh", "cosh", "exp2", "expm1", "log2", "log10",
              "erfc", "sinc", "rad2deg", "deg2rad"):
    ENTRIES[f"{_name}.default"] = unary()
    ENTRIES[f"{_name}.default"].samples += special()
ENTRIES["erfc.default"].samples += [
    S(F((12,), "float64", values=(-6.0, -3.0, -2.5, -2.0, -0.5, 1e-9, 0.5, 2.49, 2.5, 4.0, 10.0,
                                  27.0))),
    S(F((6,), values=(-4.0, -2.5, 2.5, 3.0, 5.0, 9.0)))]
ENTRIES["logit.default"] = unary()
ENTRIES["logit.default"].samples += special() + special(eps=0.25) + [
    S(F((2, 3), lo=0.0, hi=1.0)), S(F((2, 3), lo=0.0, hi=1.0), 0.2),
    S(F((4,), "float16", lo=0.0, hi=1.0), eps=0.125), S(F((4,), "int64"), eps=0.3),
    S(F((4,), "float64"), eps=-1.0)]
ENTRIES["atan2.default"] = binary(scalars=False)
ENTRIES["atan2.default"].samples += [
    S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(-0.0, 0.0, _INF, -_INF, -1.0, _NAN, 0.0,
                                                       -_INF)))]
for _name in ("hypot", "logaddexp", "logaddexp2"):
    ENTRIES[f"{_name}.default"] = binary(FLOATS, ("bool", "int64", "uint8"), scalars=False)
    ENTRIES[f"{_name}.default"].samples += [
        S(F((4,), "int32"), F((4,))), S(F((4,), "float16"), F((4,), "float64")),
        S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(0.0, _INF, -_INF, -_INF, _INF, _NAN,
                                                           1.0, -0.5)))]
ENTRIES["xlogy.Tensor"] = binary()
ENTRIES["xlogy.Tensor"].samples += [
    S(F((8,), values=(0.0, 0.0, 0.0, 1.0, -1.0, 2.0, 0.0, _NAN)),
      F((8,), values=(_NAN, 0.0, _INF, 0.0, _INF, -1.0, -2.0, 1.0))),
    S(0.0, F((8,), values=_SPECIAL_VALUES)), S(F((8,), values=_SPECIAL_VALUES), 0.0)]

# -- special functions ---------------------------------------------------------------------------
_GAMMA_VALUES = (-3.5, -2.0, -1.0, -0.5, -1e-3, 1e-3, 0.5, 1.0, 1.4616321, 2.0, 10.0, 12.5, 171.0,
                 -100.25, 1e15, 1e20)
for _name in ("lgamma", "digamma", "erfinv"):
    ENTRIES[f"{_name}.default"] = unary()
    ENTRIES[f"{_name}.default"].samples += special()
for _name in ("lgamma", "digamma"):
    ENTRIES[f"{_name}.default"].samples += [S(F((16,), d, values=_GAMMA_VALUES))
                                            for d in ("float32", "float64")]
ENTRIES["erfinv.default"].samples += [
    S(F((12,), d, values=(-1.5, -1.0, -0.999, -0.75, -0.7, -1e-6, 0.3, 0.69, 0.7, 0.71, 0.9999,
                          1.0))) for d in FLOATS]


def _same_dtype(entry):
    """Keep the samples whose tensor operands share one dtype, without Python numbers."""
    def same(s):
        ts = [a for a in s.args if isinstance(a, T)]
        return len(ts) == len(s.args) and len({a.dtype for a in ts}) == 1
    entry.samples = [s for s in entry.samples if same(s)]
    return entry


# -- fmod, fmax, fmin, gcd, lcm, heaviside -------------------------------------------------------
ENTRIES["fmod.Tensor"] = binary(INTS + FLOATS, ("bool",), int_lo=1)
ENTRIES["fmod.Tensor"].samples += [
    S(F((6,), "int64", values=(7, -7, 7, -7, 0, -9)), F((6,), "int64", values=(3, 3, -3, -3, 5, 4))),
    S(F((6,), "int8", values=(-128, 127, -128, 5, -5, 0)), F((6,), "int8", values=(-1, -1, 3, -2,
                                                                                  2, -7))),
    S(F((6,), values=(5.5, -5.5, 5.5, -5.5, -0.0, 3.0)), F((6,), values=(2.0, 2.0, -2.0, -2.0,
                                                                         1.0, -1.5))),
    S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(1.0, 1.0, 2.0, _INF, -_INF, 0.0, _NAN,
                                                       -0.5))),
    S(F((6,), "int32", values=(7, -7, 8, -8, 1, 0)), -3), S(F((4,)), -1.5)]
ENTRIES["fmod.Tensor"].errors += [
    S(F((4,), "int64"), F((4,), "int64", values=(1, 2, 0, 3)), _meta=False),
    S(F((4,), "int32"), 0, _meta=False)]
for _name in ("fmax", "fmin"):
    ENTRIES[f"{_name}.default"] = binary(scalars=False)
    ENTRIES[f"{_name}.default"].samples += [
        S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(1.0, _NAN, _NAN, 0.0, -0.0, _INF, 2.0,
                                                           -_INF)))]
for _name in ("gcd", "lcm"):
    _e = binary(INTS, ("bool", "float64", "float16"), scalars=False)
    _e.samples = [s for s in _e.samples if not any(
        isinstance(a, T) and a.dtype.startswith("float") for a in s.args)]
    _e.samples += [S(F((3, 4), "int32", "t"), F((3, 4), "int64")),
                   S(F((2, 3), "int16", "expand"), F((3,), "int16")),
                   S(F((0, 2), "int64"), F((2,), "int64")), S(F((), "int64"), F((2, 3), "uint8")),
                   S(F((2, 3, 4, 5), "int32", "cl"), F((2, 3, 4, 5), "int32")),
                   S(F((6,), "int64", values=(0, 0, 12, -12, 2 ** 62, -(2 ** 63))),
                     F((6,), "int64", values=(0, 5, -18, -18, 3, 0))),
                   S(F((6,), "int8", values=(100, -100, -128, 127, 64, -64)),
                     F((6,), "int8", values=(3, 3, 1, 2, 6, 6)))]
    _e.errors = [S(F((2, 3)), F((2, 3))), S(F((2, 3), "int32"), F((4,), "int32")),
                 S(F((2, 3), "int32"), F((2, 3)))]
    ENTRIES[f"{_name}.default"] = _e
ENTRIES["heaviside.default"] = _same_dtype(binary(scalars=False))
ENTRIES["heaviside.default"].samples += [
    S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(0.5,) * 8)),
    S(F((8,), values=_SPECIAL_VALUES), F((), values=(_NAN,))),
    S(F((4,), "bool"), F((4,), "bool")), S(F((5,), "int64"), F((5,), "int64"))]
ENTRIES["heaviside.default"].errors += [
    S(F((4,)), F((4,), "float64")), S(F((4,), "int32"), F((), "int64"))]

# -- float_power (composite: _to_copy + pow in float64) -------------------------------------------
ENTRIES["float_power.Tensor_Tensor"] = binary(INTS + FLOATS, int_lo=0)
ENTRIES["float_power.Tensor_Tensor"].samples += [
    S(F((4,), "int64"), 2), S(F((4,), "int64"), -1), S(2.0, F((2, 3))), S(2, F((4,), "int32")),
    S(F((2, 3), lo=0.1), 0.5), S(F((4,), "float64"), F((4,), "float64", "t")),
    S(F((8,), values=_SPECIAL_VALUES), F((8,), values=(0.0, 2.0, -1.0, 0.5, -0.5, _NAN, _INF,
                                                       3.0)))]
ENTRIES["float_power_.Tensor"] = E(
    [S(F((2, 3), "float64"), F((2, 3))), S(F((2, 3), "float64", "t"), 2),
     S(F((4,), "float64"), F((), "int64")), S(F((4,), "float64"), 0.5)],
    [S(F((2, 3)), F((2, 3))), S(F((4,), "int64"), 2), S(F((2, 3), "float64"), F((4,), "float64"))])

# -- backward ops (kernels/pointwise_backward.py): relu's, gelu's and sigmoid's backward -----------
def _backward_samples(extra=(), broadcast=True, dtypes=FLOATS):
    s = [S(F((2, 3)), F((2, 3)), *extra), S(F((3, 4), "float32", "t"), F((3, 4)), *extra),
         S(F((2, 3, 4, 5), "float32", "cl"), F((2, 3, 4, 5)), *extra),
         S(F((2, 4), "float32", "step"), F((2, 4), "float32", "offset"), *extra),
         S(F((0, 3)), F((0, 3)), *extra), S(F(()), F(()), *extra),
         S(F((3,)), F((3,), "float64"), *extra),
         S(F((8,), values=_SPECIAL_VALUES), F((8,), values=_SPECIAL_VALUES), *extra)]
    s += [S(F((4,), d), F((4,), d), *extra) for d in dtypes if d != "float32"]
    if broadcast:
        s += [S(F((2, 3)), F((3,)), *extra), S(F((3, 1), "float64"), F((1, 4), "float64"), *extra)]
    return s


ENTRIES["threshold_backward.default"] = E(
    _backward_samples((0,), dtypes=ALL[1:] if ALL[0] == "bool" else ALL)
    + [S(F((2, 3)), F((2, 3)), 0.5), S(F((4,), "int64"), F((4,), "int64"), 1.5),
       S(F((4,), "int32"), F((4,), "float64"), -1)],
    [S(F((4,), "bool"), F((4,), "bool"), 0), S(F((2, 3)), F((4,)), 0)])
# torch 2.13's oneDNN gelu_backward fails on broadcast float32 operands: same shapes only
ENTRIES["gelu_backward.default"] = E(
    _backward_samples(broadcast=False) + [
        S(F((2, 3)), F((2, 3)), approximate="tanh"),
        S(F((8,), "float64", values=_SPECIAL_VALUES), F((8,), "float64", values=_SPECIAL_VALUES),
          approximate="tanh"),
        S(F((4,), "float16"), F((4,), "float16"), approximate="tanh")],
    [S(F((4,), "int64"), F((4,), "int64")), S(F((2, 3)), F((2, 3)), approximate="foo")])
ENTRIES["sigmoid_backward.default"] = E(
    _backward_samples(),
    [S(F((4,), "int64"), F((4,), "int64")), S(F((4,), "bool"), F((4,), "bool")),
     S(F((2, 3)), F((4,)))])
ENTRIES["tanh_backward.default"] = E(
    _backward_samples(),
    [S(F((4,), "int64"), F((4,), "int64")), S(F((4,), "bool"), F((4,), "bool")),
     S(F((2, 3)), F((4,)))])
