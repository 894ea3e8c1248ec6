"""Writes whose source overlaps the destination, against torch.

PyTorch refuses, before writing, an in-place, ``out=`` or ``copy_`` write whose input shares
part of the destination's memory (or the same bytes in another element order): RuntimeError
"unsupported operation: some elements of the input tensor and the written-to tensor refer to a
single memory location" (``assert_no_partial_overlap``), leaving data and ``_version`` as they
were. Exactly-aliased and disjoint operands are allowed. When either is not dense the overlap is
"too hard" to tell: the write runs in TensorIterator's loop order, element by element, so an
element read after an earlier iteration wrote it reads the new value (``kernels/_loop_order.py``).
Hypothesis draws two strided windows of one storage and a write between them; both libraries
must give the same data, versions and exception class. Float32 windows of at most 9 elements:
PyTorch's SIMD loop (16 float32 elements on AVX2) is not reached, so the results do not depend
on the machine.
"""

from __future__ import annotations

import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for overlap checks")
pytest.importorskip("hypothesis", reason="hypothesis generates the windows")
from hypothesis import given, settings
from hypothesis import strategies as st

N = 12      # elements of the shared storage

WRITES = {
    "copy_": lambda lib, dst, src: dst.copy_(src),
    "add_": lambda lib, dst, src: dst.add_(src),
    "mul_": lambda lib, dst, src: dst.mul_(src),
    "sub_": lambda lib, dst, src: dst.sub_(src),
    "sub_alpha": lambda lib, dst, src: dst.sub_(src, alpha=2),
    "div_": lambda lib, dst, src: dst.div_(src),
    "maximum_out": lambda lib, dst, src: lib.maximum(dst, src, out=dst),
    "addcmul_": lambda lib, dst, src: dst.addcmul_(src, src, value=0.5),
    "lt_": lambda lib, dst, src: dst.lt_(src),
    "setitem": lambda lib, dst, src: dst.__setitem__(..., src),
    "add_out": lambda lib, dst, src: lib.add(src, 1, out=dst),
    "neg_out": lambda lib, dst, src: lib.neg(src, out=dst),
    "mul_out": lambda lib, dst, src: lib.mul(src, src, out=dst),
}


@st.composite
def _window(draw, shape):
    """(offset, strides) of a view of ``shape`` inside the N-element storage."""
    strides = tuple(draw(st.sampled_from([0, 1, 1, 2, 3, shape[-1] if len(shape) > 1 else 1]))
                    for _ in shape)
    if len(shape) == 2 and draw(st.booleans()):
        strides = (1, shape[0])      # a transposed window
    extent = sum((s - 1) * t for s, t in zip(shape, strides)) + 1
    if extent > N:
        strides = tuple(1 if i == len(shape) - 1 else shape[-1] for i in range(len(shape)))
        extent = sum((s - 1) * t for s, t in zip(shape, strides)) + 1
    offset = draw(st.integers(0, N - extent))
    return offset, strides


@st.composite
def _case(draw):
    shape = draw(st.sampled_from([(4,), (3,), (2, 2), (2, 3), (3, 2), (3, 3), (2, 2, 2)]))
    return (draw(st.sampled_from(sorted(WRITES))), shape, draw(_window(shape)),
            draw(_window(shape)))


def _run(lib, write, shape, dst_window, src_window):
    base = lib.arange(1.0, N + 1.0)       # no zero: div_ stays finite
    dst = base.as_strided(shape, dst_window[1], dst_window[0])
    src = base.as_strided(shape, src_window[1], src_window[0])
    try:
        WRITES[write](lib, dst, src)
        outcome = "ok"
    except RuntimeError as e:
        outcome = ("RuntimeError", "single memory location" in str(e))
    return outcome, base.tolist(), base._version


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(_case())
def test_overlapping_writes_match_torch(case):
    assert _run(sk, *case) == _run(torch, *case)


@pytest.mark.parametrize("program", [
    "x[1:].copy_(x[:-1])", "x[1:] = x[:-1]", "x.view(2, 2).t().copy_(x.view(2, 2))",
    "sk_or_torch.add(x[:-1], 1, out=x[1:])", "x[:2].mul_(x[1:3])",
])
def test_partial_overlap_is_refused_before_writing(program):
    for lib in (sk, torch):
        x = lib.arange(4.0)
        with pytest.raises(RuntimeError, match="single memory location"):
            exec(program, {"x": x, "sk_or_torch": lib})
        assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and x._version == 0


def test_a_strided_view_reads_what_the_same_write_stored_earlier():
    """The loop writes ``x[2]`` first, then reads the new ``x[2]`` for ``x[6]`` (the operands
    are not dense, so PyTorch runs the write)."""
    results = []
    for lib in (sk, torch):
        x = lib.arange(8.0)
        w = x.as_strided((2, 2), (4, 1), 1)
        w[:, 1].sub_(w[0])
        results.append((x.tolist(), w.tolist(), x._version, w._version))
    assert results[0] == results[1]
    assert results[0][0][6] == 6.0 - (2.0 - 1.0)


def test_an_error_raised_by_a_value_an_earlier_iteration_wrote():
    """``x[2] //= x[1]`` stores 0, which the next iteration divides by (from a snapshot it
    would divide by 3 and pass). Both raise; PyTorch has stored ``x[2]`` by then, we have
    written nothing (docs/differences.md)."""
    for lib in (sk, torch):
        x = lib.tensor([0, 5, 3, 3, 4, 5, 6, 7])
        w = x.as_strided((2, 2), (4, 1), 1)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            w[:, 1].div_(w[0], rounding_mode="floor")
        if lib is sk:
            assert x.tolist() == [0, 5, 3, 3, 4, 5, 6, 7] and x._version == 0
