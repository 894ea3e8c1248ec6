"""A catalogue of bad calls, each run on subclass_kit and on torch: same exception class,
same message (after ``torch.`` -> ``sk.``), and sk's inputs (data, metadata, ``_version``)
unchanged by the failed call.

Each case is ``Case(name, make, call)``: ``make(L)`` builds the inputs with library ``L`` (the
``sk`` or ``torch`` module; their public APIs agree) and ``call(L, *inputs)`` makes the bad call.
``msg=False`` compares the exception class only (torch's argument-parser texts list C++
signatures that have no sk equivalent).

Cases whose sk behaviour differs from torch today are in ``KNOWN_MISMATCHES`` with the expected
text; they run as ``xfail(strict=True)`` so a fix shows up as XPASS and gets un-marked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from oracle import normalize_message

import subclass_kit as sk


@dataclass
class Case:
    name: str
    make: object          # L -> tuple of inputs
    call: object          # (L, *inputs) -> anything; must raise
    msg: bool = True      # compare the message too


def _z(*shape, dtype=None, **kw):
    def make(L):
        return (L.zeros(*shape, dtype=getattr(L, dtype) if dtype else None, **kw),)
    return make


def _meta(*shape):
    return lambda L: (L.empty(*shape, device="meta"),)


def _rg(*shape):
    return lambda L: (L.zeros(*shape, requires_grad=True),)


def _inference(L):
    with L.inference_mode():
        return (L.zeros(3),)


def _embedding(L):
    return L.nn.functional.embedding


CASES = [
    # -- view / reshape ------------------------------------------------------------------------
    Case("view_bad_numel", _z(2, 3), lambda L, x: x.view(5, 5)),
    Case("matmul_out_requires_grad", lambda L: (L.ones(2, 3), L.ones(1, requires_grad=True)),
         lambda L, a, o: L.matmul(a, a.t(), out=o)),
    Case("stack_out_requires_grad", lambda L: (L.ones(2, 3, requires_grad=True), L.empty(0)),
         lambda L, a, o: L.stack([a, a], out=o)),
    Case("where_out_number_other", _z(2), lambda L, x: L.where(x > 0, x, 0.0, out=L.empty(2))),
    Case("where_out_number_input", _z(2), lambda L, x: L.where(x > 0, 1, x, out=L.empty(2))),
    Case("view_two_inferred", _z(2, 3), lambda L, x: x.view(-1, -1)),
    Case("view_negative_dim", _z(2, 4), lambda L, x: x.view(-2, 4)),
    # int[] arguments take integers only (argument-parser texts: class compared).
    Case("view_float_size", _z(2, 4), lambda L, x: x.view(4.0, 2), msg=False),
    Case("reshape_bool_size", _z(2, 4), lambda L, x: x.reshape(True, 8), msg=False),
    Case("zeros_float_size", lambda L: (), lambda L: L.zeros(2.0, 3), msg=False),
    Case("expand_float_size", _z(1, 4), lambda L, x: x.expand(3.0, 4), msg=False),
    Case("view_zero_numel_inferred", _z(0, 3), lambda L, x: x.view(-1, 0)),
    Case("view_incompatible_strides", _z(4, 6), lambda L, x: x.t().view(24)),
    Case("view_of_expanded", _z(3), lambda L, x: x.expand(2, 3).view(6)),
    Case("reshape_bad_numel", _z(2, 3), lambda L, x: x.reshape(4)),
    Case("flatten_start_after_end", _z(2, 3, 4), lambda L, x: x.flatten(2, 1)),
    Case("unflatten_bad_sizes", _z(2, 6), lambda L, x: x.unflatten(1, (4, 2))),
    Case("view_dtype_not_divisible", _z(2, 3, dtype="int16"), lambda L, x: x.view(L.float32)),
    Case("view_dtype_bad_stride", _z(4, 2), lambda L, x: x.t().view(L.float16)),
    Case("view_dtype_0d", lambda L: (L.tensor(1, dtype=L.int16),), lambda L, x: x.view(L.int32)),
    # -- expand / permute / transpose ---------------------------------------------------------
    Case("expand_mismatch", _z(3), lambda L, x: x.expand(2, 4)),
    Case("expand_too_few_sizes", _z(2, 3), lambda L, x: x.expand(3)),
    Case("expand_leading_minus_one", _z(3), lambda L, x: x.expand(-1, 3)),
    Case("permute_duplicate", _z(2, 3), lambda L, x: x.permute(0, 0)),
    Case("permute_wrong_length", _z(2, 3), lambda L, x: x.permute(0)),
    Case("transpose_dim_out_of_range", _z(2, 3), lambda L, x: x.transpose(0, 2)),
    Case("t_on_3d", _z(2, 3, 4), lambda L, x: x.t()),
    Case("t__on_3d", _z(2, 3, 4), lambda L, x: x.t_()),
    Case("mT_on_1d", _z(3), lambda L, x: x.mT),
    Case("unsqueeze_out_of_range", _z(2, 3), lambda L, x: x.unsqueeze(3)),
    Case("squeeze_out_of_range", _z(2, 1), lambda L, x: x.squeeze(2)),
    Case("diagonal_same_dims", _z(3, 4), lambda L, x: x.diagonal(0, 1, 1)),
    Case("movedim_repeated", _z(2, 3, 4), lambda L, x: x.movedim((0, 0), (1, 2))),
    # -- select / slice / narrow / split ------------------------------------------------------
    Case("select_out_of_range", _z(2, 3, 4), lambda L, x: x.select(1, 3)),
    Case("select_0d", lambda L: (L.tensor(1.0),), lambda L, x: x.select(0, 0)),
    Case("index_0d", lambda L: (L.tensor(1.0),), lambda L, x: x[0]),
    Case("index_out_of_range", _z(2, 3), lambda L, x: x[5]),
    Case("index_negative_out_of_range", _z(2, 3), lambda L, x: x[-3]),
    Case("slice_negative_step", _z(2, 3), lambda L, x: x[::-1]),
    Case("slice_zero_step", _z(2, 3), lambda L, x: x[:, ::0]),
    Case("too_many_indices", _z(2, 3), lambda L, x: x[0, 0, 0]),
    Case("tensor_index_out_of_range", _z(3), lambda L, x: x[L.tensor([3])]),
    Case("float_tensor_index", _z(3), lambda L, x: x[L.tensor([1.0])]),
    Case("narrow_too_long", _z(3), lambda L, x: x.narrow(0, 2, 2)),
    Case("narrow_start_out_of_range", _z(3), lambda L, x: x.narrow(0, 4, 0)),
    Case("narrow_0d", lambda L: (L.tensor(1.0),), lambda L, x: x.narrow(0, 0, 1)),
    Case("split_sizes_bad_sum", _z(6), lambda L, x: x.split([2, 3])),
    Case("chunk_zero", _z(5), lambda L, x: x.chunk(0)),
    Case("unbind_0d", lambda L: (L.tensor(1.0),), lambda L, x: x.unbind()),
    Case("unfold_too_big", _z(4), lambda L, x: x.unfold(0, 5, 1)),
    # -- as_strided -----------------------------------------------------------------------------
    Case("as_strided_out_of_bounds", _z(10), lambda L, x: x.as_strided((3, 3), (3, 3))),
    Case("as_strided_negative_stride", _z(10), lambda L, x: x.as_strided((2,), (-1,))),
    Case("as_strided_negative_offset", _z(10), lambda L, x: x.as_strided((2,), (1,), -1)),
    Case("as_strided_length_mismatch", _z(10), lambda L, x: x.as_strided((2, 2), (1,))),
    Case("as_strided_offset_out_of_bounds", _z(10), lambda L, x: x.as_strided((2,), (1,), 9)),
    # -- cat / stack / matmul -------------------------------------------------------------------
    Case("cat_size_mismatch", lambda L: (L.zeros(2, 3), L.zeros(2, 4)),
         lambda L, a, b: L.cat([a, b])),
    Case("cat_0d", lambda L: (L.tensor(1.0), L.tensor(2.0)), lambda L, a, b: L.cat([a, b])),
    Case("cat_empty_list", lambda L: (), lambda L: L.cat([])),
    Case("cat_dim_out_of_range", lambda L: (L.zeros(2, 3), L.zeros(2, 3)),
         lambda L, a, b: L.cat([a, b], 2)),
    Case("stack_size_mismatch", lambda L: (L.zeros(2), L.zeros(3)),
         lambda L, a, b: L.stack([a, b])),
    Case("stack_empty_list", lambda L: (), lambda L: L.stack([])),
    Case("mm_shape", lambda L: (L.zeros(2, 3), L.zeros(4, 5)), lambda L, a, b: L.mm(a, b)),
    Case("mm_dtype", lambda L: (L.zeros(2, 3), L.zeros(3, 4, dtype=L.float64)),
         lambda L, a, b: L.mm(a, b)),
    Case("mm_1d", lambda L: (L.zeros(3), L.zeros(3, 4)), lambda L, a, b: L.mm(a, b)),
    Case("bmm_shape", lambda L: (L.zeros(2, 2, 3), L.zeros(2, 4, 4)),
         lambda L, a, b: L.bmm(a, b)),
    Case("bmm_2d", lambda L: (L.zeros(2, 3), L.zeros(3, 4)), lambda L, a, b: L.bmm(a, b)),
    Case("matmul_0d", lambda L: (L.tensor(1.0), L.zeros(3)), lambda L, a, b: L.matmul(a, b)),
    Case("matmul_1d_1d", lambda L: (L.zeros(3), L.zeros(4)), lambda L, a, b: a @ b),
    Case("matmul_batched", lambda L: (L.zeros(2, 3, 4), L.zeros(5, 6)), lambda L, a, b: a @ b),
    Case("matmul_2d", lambda L: (L.zeros(2, 3), L.zeros(4, 5)), lambda L, a, b: a @ b),
    # -- broadcasting -------------------------------------------------------------------------
    Case("add_broadcast", lambda L: (L.zeros(2, 3), L.zeros(4)), lambda L, a, b: a + b),
    Case("mul_broadcast_3way", lambda L: (L.zeros(2, 3, 4), L.zeros(5, 1, 4)),
         lambda L, a, b: a * b),
    Case("where_broadcast", lambda L: (L.zeros(2, 3, dtype=L.bool), L.zeros(4), L.zeros(2, 3)),
         lambda L, c, a, b: L.where(c, a, b)),
    Case("where_non_bool", lambda L: (L.zeros(2, 3), L.zeros(2, 3), L.zeros(2, 3)),
         lambda L, c, a, b: L.where(c, a, b)),
    Case("masked_fill_non_bool_mask", lambda L: (L.zeros(2, 3), L.zeros(2, 3)),
         lambda L, x, m: x.masked_fill(m, 1.0)),
    # -- in-place and out= ----------------------------------------------------------------------
    Case("inplace_broadcast_shape", lambda L: (L.zeros(3), L.zeros(2, 3)),
         lambda L, a, b: a.add_(b)),
    Case("inplace_dtype_float_into_long", lambda L: (L.zeros(3, dtype=L.int64), L.zeros(3)),
         lambda L, a, b: a.add_(b)),
    Case("inplace_mul_scalar_float_into_long", _z(3, dtype="int64"), lambda L, a: a.mul_(1.5)),
    Case("inplace_long_into_bool", _z(3, dtype="bool"), lambda L, a: a.add_(1)),
    Case("inplace_into_expanded", _z(3), lambda L, a: a.expand(2, 3).add_(1)),
    Case("copy_shape", lambda L: (L.zeros(2, 3), L.zeros(4)), lambda L, a, b: a.copy_(b)),
    Case("iadd_broadcast", lambda L: (L.zeros(3), L.zeros(2, 3)), lambda L, a, b: a.__iadd__(b)),
    Case("setitem_shape", lambda L: (L.zeros(2, 3), L.zeros(4)),
         lambda L, a, b: a.__setitem__(0, b)),
    Case("out_dtype", lambda L: (L.zeros(3), L.zeros(3), L.zeros(3, dtype=L.int64)),
         lambda L, a, b, o: L.add(a, b, out=o)),
    Case("out_dtype_unary", lambda L: (L.zeros(3), L.zeros(3, dtype=L.int64)),
         lambda L, a, o: L.exp(a, out=o)),
    Case("resize_negative", _z(3), lambda L, x: x.resize_(-1)),
    Case("fill_non_0d_value", lambda L: (L.zeros(3), L.zeros(2)), lambda L, x, v: x.fill_(v)),
    Case("clamp_no_bounds", _z(3), lambda L, x: x.clamp()),
    # -- meta data access and device mixing ---------------------------------------------------
    Case("meta_item", _meta(1), lambda L, x: x.item()),
    Case("meta_tolist", _meta(2), lambda L, x: x.tolist()),
    Case("meta_numpy", _meta(2), lambda L, x: x.numpy()),
    Case("meta_bool", _meta(1), lambda L, x: bool(x)),
    Case("meta_float", _meta(1), lambda L, x: float(x)),
    Case("meta_to_cpu", _meta(2), lambda L, x: x.to("cpu")),
    Case("cpu_copy_from_meta", lambda L: (L.zeros(2), L.empty(2, device="meta")),
         lambda L, a, m: a.copy_(m)),
    Case("meta_plus_cpu", lambda L: (L.empty(2, device="meta"), L.zeros(2)),
         lambda L, m, c: m + c),
    Case("cpu_plus_meta", lambda L: (L.zeros(2), L.empty(2, device="meta")),
         lambda L, c, m: c + m),
    Case("meta_nonzero", _meta(3), lambda L, x: x.nonzero(), msg=False),  # names torch.fx
    # -- bool / int misuse, scalars ---------------------------------------------------------------
    Case("neg_bool", _z(3, dtype="bool"), lambda L, x: -x),
    Case("sub_bools", lambda L: (L.zeros(3, dtype=L.bool), L.zeros(3, dtype=L.bool)),
         lambda L, a, b: a - b),
    Case("invert_float", _z(3), lambda L, x: ~x),
    Case("and_floats", lambda L: (L.zeros(3), L.zeros(3)), lambda L, a, b: a & b),
    Case("requires_grad_on_int", _z(3, dtype="int64"), lambda L, x: x.requires_grad_()),
    Case("factory_requires_grad_int", lambda L: (),
         lambda L: L.zeros(3, dtype=L.int64, requires_grad=True)),
    Case("item_many_elements", _z(3), lambda L, x: x.item()),
    Case("bool_many_elements", _z(3), lambda L, x: bool(x)),
    Case("bool_no_elements", _z(0), lambda L, x: bool(x)),
    Case("len_0d", lambda L: (L.tensor(1.0),), lambda L, x: len(x)),
    Case("iter_0d", lambda L: (L.tensor(1.0),), lambda L, x: iter(x)),
    Case("set_version", _z(3), lambda L, x: setattr(x, "_version", 3)),
    Case("int_pow_negative", _z(3, dtype="int64"), lambda L, x: x ** -1),
    Case("int_div_by_zero", lambda L: (L.ones(3, dtype=L.int64), L.zeros(3, dtype=L.int64)),
         lambda L, a, b: a // b),
    # -- autograd flags and inference tensors ---------------------------------------------------
    Case("numpy_requires_grad", _rg(3), lambda L, x: x.numpy()),
    Case("inference_version", _inference, lambda L, x: x._version),
    Case("inference_inplace_outside", _inference, lambda L, x: x.add_(1)),
    Case("inference_requires_grad_outside", _inference, lambda L, x: x.requires_grad_()),
    # -- factories and dtype arguments ----------------------------------------------------------
    Case("zeros_negative", lambda L: (), lambda L: L.zeros(-1)),
    Case("empty_negative", lambda L: (), lambda L: L.empty(2, -3)),
    Case("full_negative", lambda L: (), lambda L: L.full((-1,), 1.0)),
    Case("arange_zero_step", lambda L: (), lambda L: L.arange(0, 5, 0)),
    Case("arange_wrong_sign", lambda L: (), lambda L: L.arange(0, 5, -1)),
    Case("eye_negative", lambda L: (), lambda L: L.eye(-1)),
    Case("randint_empty_range", lambda L: (), lambda L: L.randint(5, 5, (2,))),
    Case("rand_int_dtype", lambda L: (), lambda L: L.rand(2, dtype=L.int64)),
    Case("empty_strided_mismatch", lambda L: (), lambda L: L.empty_strided((2, 3), (1,))),
    Case("zeros_dtype_string", lambda L: (), lambda L: L.zeros(2, dtype="float32"), msg=False),
    Case("tensor_ragged", lambda L: (), lambda L: L.tensor([[1, 2], [3]])),
    Case("tensor_of_strings", lambda L: (), lambda L: L.tensor(["a"]), msg=False),
    # -- reductions, indexing, nn ----------------------------------------------------------------
    Case("sum_dim_out_of_range", _z(3, 4), lambda L, x: x.sum(2)),
    Case("sum_repeated_dim", _z(3, 4), lambda L, x: x.sum((1, 1))),
    Case("mean_of_int", _z(3, dtype="int64"), lambda L, x: x.mean()),
    Case("max_of_empty", _z(0), lambda L, x: x.max()),
    Case("amax_empty_dim", _z(0, 3), lambda L, x: x.amax(0)),
    Case("softmax_dim_out_of_range", _z(3), lambda L, x: x.softmax(1)),
    Case("gather_index_out_of_range", lambda L: (L.zeros(3, 4), L.tensor([[0, 5]])),
         lambda L, x, i: x.gather(1, i)),
    Case("index_select_out_of_range", lambda L: (L.zeros(3, 4), L.tensor([0, 3])),
         lambda L, x, i: x.index_select(0, i)),
    Case("embedding_out_of_range", lambda L: (L.zeros(5, 3), L.tensor([0, 5])),
         lambda L, w, i: _embedding(L)(i, w)),
    Case("tril_1d", _z(3), lambda L, x: x.tril()),
]

# case name -> what torch says (the fix the owner needs to make). See the report.
KNOWN_MISMATCHES = {
}


def _snapshot(tensors) -> list:
    snap = []
    for t in tensors:
        if not isinstance(t, sk.Tensor):
            snap.append(repr(t))
            continue
        try:
            version = t._version
        except RuntimeError:
            version = None
        data = np.array(t._array(), copy=True) if t.device.type == "cpu" else None
        snap.append((tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.dtype, version,
                     t.untyped_storage().nbytes(), data))
    return snap


def _same(a, b) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                return False
            continue
        if x[:6] != y[:6]:
            return False
        if x[6] is not None and not np.array_equal(x[6], y[6], equal_nan=x[6].dtype.kind == "f"):
            return False
    return True


def _run(L, case):
    inputs = case.make(L)
    before = _snapshot(inputs) if L is sk else None
    try:
        case.call(L, *inputs)
    except Exception as e:  # noqa: BLE001
        return e, inputs, before
    return None, inputs, before


def _exc_kind(e) -> str:
    for cls in type(e).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return type(e).__name__


def _params():
    out = []
    for case in CASES:
        marks = []
        if case.name in KNOWN_MISMATCHES:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_MISMATCHES[case.name]))
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out


def test_catalogue_is_large_and_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert len(names) >= 60


@pytest.mark.parametrize("case", _params())
def test_bad_call_matches_torch(case, torch):
    t_exc, _, _ = _run(torch, case)
    assert t_exc is not None, f"{case.name}: torch does not raise (fix the catalogue)"
    s_exc, inputs, before = _run(sk, case)
    assert s_exc is not None, (f"sk does not raise; torch raises {_exc_kind(t_exc)}: "
                               f"{t_exc}")
    assert _exc_kind(s_exc) == _exc_kind(t_exc), (
        f"sk raises {_exc_kind(s_exc)}({s_exc}); torch raises {_exc_kind(t_exc)}({t_exc})")
    if case.msg:
        assert str(s_exc) == normalize_message(str(t_exc))
    assert _same(before, _snapshot(inputs)), "the failed call changed its inputs"
