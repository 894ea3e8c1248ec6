"""The overloads PyTorch derives from a functional schema, derived from ``op_table``'s: the
in-place ``name_`` and ``out=`` overloads of the pointwise ops (``POINTWISE_UNARY``,
``POINTWISE_BINARY``, but those in ``NO_INPLACE`` have no in-place one), the ``out=`` of the
reductions, and both of ``WITH_INPLACE_AND_OUT``, spelled as native_functions.yaml spells them.
"""

from __future__ import annotations

from .op_table import (NO_INPLACE, POINTWISE_BINARY, POINTWISE_UNARY, REDUCTIONS,
                       WITH_INPLACE_AND_OUT)

# out= overloads whose PyTorch name is not ``{overload}_out``.
_OUT_NAMES = {"sum.dim_IntList": "sum.IntList_out", "mean.dim": "mean.out",
              "prod.dim_int": "prod.int_out", "norm.ScalarOpt_dim": "norm.out",
              "add.Tensor": "add.out", "sub.Tensor": "sub.out", "mul.Tensor": "mul.out",
              "div.Tensor": "div.out", "div.Tensor_mode": "div.out_mode",
              "xlogy.Tensor": "xlogy.OutTensor"}


def _out_schema(functional: str) -> str:
    head, _, ret = functional.partition(") -> ")
    name, _, args = head.partition("(")
    base = name.split(".")[0]
    overload = name.split(".")[1] if "." in name else ""
    out_name = f"{base}.{overload}_out" if overload and overload != "default" else f"{base}.out"
    out_name = _OUT_NAMES.get(name, out_name)
    star = "" if "*" in args else "*, "
    return f"{out_name}({args}, {star}Tensor(a!) out) -> Tensor(a!)"


def _inplace_schema(functional: str) -> str:
    head, _, ret = functional.partition(") -> ")
    name, _, args = head.partition("(")
    base, dot, overload = name.partition(".")
    first, _, rest = args.partition(", ")
    self_arg = first.replace("Tensor self", "Tensor(a!) self")
    new_args = self_arg + (", " + rest if rest else "")
    return f"{base}_{dot}{overload}({new_args}) -> Tensor(a!)"


def derived_schemas() -> list:
    """In-place and out= overloads of pointwise ops and out= of reductions."""
    out = []
    for s in POINTWISE_UNARY + POINTWISE_BINARY:
        qual = s.partition("(")[0]
        if qual not in NO_INPLACE and not qual.startswith("where"):
            out.append(_inplace_schema(s))
        out.append(_out_schema(s))
    out.extend(_out_schema(s) for s in REDUCTIONS)
    for s in WITH_INPLACE_AND_OUT:
        out.append(_inplace_schema(s))
        out.append(_out_schema(s))
    return out
