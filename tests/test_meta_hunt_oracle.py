"""Meta-device shape inference against torch 2.13 (the oracle): each program runs on
``device="meta"`` in both libraries and the results are compared (sizes, strides, storage offset,
dtype, device, ``_version``, ``_base``, ``nbytes``) or the exceptions (class and text).

- storage-size overflow: a fresh storage past the int64 byte range raises PyTorch's
  "Storage size calculation overflowed" (and an expanded view "numel: integer multiplication
  overflow"), so shape inference of a too-large model fails as the real run would;
- ``out=`` on another device than the computation: PyTorch's out= wrapper text ("Attempting to
  copy from device cpu to device meta, ...") and its order (the first argument's device is
  checked before shapes and dtypes); its C++ structured kernels keep "Expected out tensor to
  have device ...";
- ``MetaMode`` against ``FakeTensorMode(allow_non_fake_inputs=True)``: programs on real
  (non-contiguous, already mutated) cpu inputs give the same metadata and ``_version``s (a twin's
  counter continues the real tensor's, and it is an inference tensor exactly when the real one
  is, also when converted inside ``inference_mode``);
- data-dependent output shapes under ``MetaMode`` (``nonzero``, boolean-mask indexing) raise
  ``DynamicOutputShapeError`` naming the op, where ``FakeTensorMode`` raises
  ``DynamicOutputShapeException``; both are ``RuntimeError``s and the mode stack is restored;
- ``round(x, decimals=)``: integer and bool inputs raise PyTorch's cpu error on both devices
  (PyTorch's meta kernel returns the integer dtype; we returned float32), float16 rounds in
  float32 as PyTorch's opmath does;
- documented differences (docs/differences.md, "One rule per op"): meta runs the cpu overlap
  checks and in-place promotion error, with torch's cpu texts;
- ``data_ptr()``: a meta view reports its byte offset from the (null) storage address, and a
  tensor or storage without elements reports 0, on both devices;
- ``sk.tensor(t)`` copies a meta tensor to a meta tensor (the source's device is the default);
- ``infer_shapes`` against the same program under ``FakeTensorMode``, for every spec form
  (an int shape in a ``(shape, dtype)`` pair is 1-d);

The command line and the model zoo are checked in ``test_meta_hunt_cli_oracle.py``.
"""

from __future__ import annotations

import contextlib
import math
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
from oracle import normalize_message, to_sk

import subclass_kit as sk
from subclass_kit.modes import DynamicOutputShapeError, MetaMode, infer_shapes

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")

META = {"device": "meta"}


def observe(t):
    """What we compare about a result (a tensor, a sequence of them, or a plain value)."""
    if isinstance(t, (list, tuple)):
        return [observe(x) for x in t]
    if not hasattr(t, "untyped_storage"):
        return t
    return {"sizes": tuple(t.shape), "strides": tuple(t.stride()), "offset": t.storage_offset(),
            "dtype": str(t.dtype).split(".")[-1], "device": t.device.type,
            "version": t._version, "is_view": t._is_view(), "has_base": t._base is not None,
            "nbytes": t.untyped_storage().nbytes()}


def run(L, program):
    """``program(L)``'s observation, or ``("raised", class name, text)``."""
    try:
        return observe(program(L))
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        return ("raised", type(e).__name__, normalize_message(str(e)))


def same(program):
    ours, theirs = run(sk, program), run(torch, program)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"
    return ours


# -- storage-size overflow -----------------------------------------------------------------------
def _empty(L, *size, **kw):
    return L.empty(*size, **META, **kw)


OVERFLOW = {
    "empty f32 2**61": lambda L: _empty(L, 2 ** 61),
    "empty f32 2**61-1 (fits)": lambda L: _empty(L, 2 ** 61 - 1),
    "empty u8 2**63-1 (fits)": lambda L: _empty(L, 2 ** 63 - 1, dtype=L.uint8),
    "empty f64 2**60": lambda L: _empty(L, 2 ** 60, dtype=L.float64),
    "empty 2-d": lambda L: _empty(L, 2 ** 40, 2 ** 30),
    "empty product overflows before the 0": lambda L: _empty(L, 2 ** 32, 2 ** 32, 0),
    "empty 0 first (fits)": lambda L: _empty(L, 2 ** 61, 0, 2 ** 61),
    "zeros": lambda L: L.zeros(2 ** 62, 2, **META),
    "full": lambda L: L.full((2 ** 62, 2), 1.0, **META),
    "arange": lambda L: L.arange(2 ** 62, **META),
    "empty channels_last": lambda L: _empty(L, 2 ** 30, 2 ** 30, 2, 2,
                                            memory_format=L.channels_last),
    "matmul output": lambda L: _empty(L, 2 ** 31, 4) @ _empty(L, 4, 2 ** 31),
    "bmm output": lambda L: L.bmm(_empty(L, 2, 2 ** 31, 4), _empty(L, 2, 4, 2 ** 30)),
    "cat output": lambda L: L.cat([_empty(L, 2 ** 61 - 1), _empty(L, 2 ** 61 - 1)]),
    "contiguous of an expand": lambda L: _empty(L, 2 ** 31, 1).expand(2 ** 31, 2 ** 31)
    .contiguous(),
    "pointwise of an expand": lambda L: _empty(L, 2 ** 31, 1).expand(2 ** 31, 2 ** 31) * 2,
    "expand numel overflow": lambda L: _empty(L, 1, 1).expand(2 ** 62, 2 ** 62),
    "expand numel 2**63": lambda L: _empty(L, 1).expand(2 ** 62, 2),
    "expand numel 2**63-1 (fits)": lambda L: _empty(L, 1).expand(2 ** 63 - 1),
    "expand view reshaped (fits)": lambda L: _empty(L, 1).expand(2 ** 62).view(2 ** 31, 2 ** 31),
}


@pytest.mark.parametrize("name", sorted(OVERFLOW))
def test_storage_size_overflow_matches_torch_meta(name):
    same(OVERFLOW[name])


# Factories whose torch meta kernel wraps the byte count around (``randn`` reports nbytes
# -2**63) or skips the check (``empty_strided``); torch's cpu kernels raise before allocating,
# and we raise that on both devices (one rule per op).
META_WRAPS = {
    "randn": lambda L, dev: L.randn(2 ** 61, device=dev),
    "rand 2-d": lambda L, dev: L.rand(2 ** 61, 2, device=dev),
    "empty_strided": lambda L, dev: L.empty_strided((2 ** 62,), (4,), device=dev),
}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", sorted(META_WRAPS))
def test_factory_overflow_raises_as_torch_cpu(name, device):
    program = META_WRAPS[name]
    with pytest.raises(RuntimeError) as theirs:
        program(torch, "cpu")
    with pytest.raises(RuntimeError) as ours:
        program(sk, device)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("size", [2 ** 62, 2 ** 61, [2 ** 31, 2 ** 31]])
def test_resize_past_int64_bytes_raises_as_torch_cpu(device, size):
    """torch's cpu ``resize_`` raises before allocating; its meta kernel wraps the byte count
    around (nbytes 0). One rule per op: both devices raise the cpu error, nothing changes."""
    with pytest.raises(RuntimeError) as theirs:
        torch.empty(0).resize_(size)
    x = sk.empty(3, device=device)
    with pytest.raises(RuntimeError) as ours:
        x.resize_(size)
    assert str(ours.value) == str(theirs.value)
    assert x.shape == (3,) and x._version == 0 and x.untyped_storage().nbytes() == 12


# -- out= on another device ------------------------------------------------------------------------
def _out_calls(L, dev):
    """name -> call(out): one out= call per op family, inputs on ``dev``."""
    def z(*s, **k):
        return L.zeros(*s, device=dev, **k)

    def b(*s):
        return L.zeros(*s, dtype=L.bool, device=dev)

    def i(*s):
        return L.zeros(*s, dtype=L.int64, device=dev)

    return {
        "abs": lambda o: L.abs(z(3), out=o), "add": lambda o: L.add(z(3), z(3), out=o),
        "add shape error": lambda o: L.add(z(3), z(4), out=o),
        "div mode": lambda o: L.div(z(3), 2, rounding_mode="floor", out=o),
        "eq": lambda o: L.eq(z(3), z(3), out=o), "clamp": lambda o: L.clamp(z(3), 0, 1, out=o),
        "bitwise_and": lambda o: L.bitwise_and(i(3), i(3), out=o),
        "pow": lambda o: L.pow(z(3), z(3), out=o), "maximum": lambda o: L.maximum(z(3), z(3), out=o),
        "all": lambda o: L.all(b(3, 2), 0, out=o), "amax": lambda o: L.amax(z(3, 2), 0, out=o),
        "sum": lambda o: L.sum(z(3, 2), 0, out=o), "mean": lambda o: L.mean(z(3, 2), 0, out=o),
        "prod": lambda o: L.prod(z(3, 2), 0, out=o), "var": lambda o: L.var(z(3, 2), 0, out=o),
        "logsumexp": lambda o: L.logsumexp(z(3, 2), 0, out=o),
        "norm": lambda o: L.norm(z(3, 2), dim=0, out=o), "cumsum": lambda o: L.cumsum(z(3), 0, out=o),
        "argmax": lambda o: L.argmax(z(3, 2), 0, out=o),
        "argmin": lambda o: L.argmin(z(3, 2), 0, out=o),
        "max dim": lambda o: L.max(z(3, 2), 0, out=(o, L.empty(2, dtype=L.int64, device=o.device))),
        "mm": lambda o: L.mm(z(3, 3), z(3, 3), out=o),
        "mm shape error": lambda o: L.mm(z(3, 3), z(4, 3), out=o),
        "bmm": lambda o: L.bmm(z(1, 3, 3), z(1, 3, 3), out=o),
        "matmul": lambda o: L.matmul(z(3, 3), z(3, 3), out=o),
        "cat": lambda o: L.cat([z(3), z(3)], out=o), "stack": lambda o: L.stack([z(3)], out=o),
        "where": lambda o: L.where(b(3), z(3), z(3), out=o),
        "masked_fill": lambda o: (sk.ops if L is sk else torch.ops.aten).masked_fill.Scalar_out(
            z(3), b(3), 1.0, out=o),
    }


OUT_NAMES = sorted(_out_calls(sk, "cpu"))


@pytest.mark.parametrize("out_dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("in_device,out_device", [("cpu", "meta"), ("meta", "cpu")])
@pytest.mark.parametrize("name", OUT_NAMES)
def test_out_on_another_device(name, in_device, out_device, out_dtype):
    """Every out= family with ``out`` on the other device, with a wrong and a right dtype (the
    device error comes first in PyTorch) -- and a 0-element ``out`` so nothing is resized."""
    def program(L):
        out = L.empty(0, dtype=getattr(L, out_dtype), device=out_device)
        return _out_calls(L, in_device)[name](out)
    result = same(program)
    assert result[0] == "raised"


@pytest.mark.parametrize("program", [
    lambda L: L.add(L.tensor(1.0), L.zeros(3, **META), out=L.empty(3, **META)),
    lambda L: L.add(L.zeros(3, **META), L.tensor(1.0), out=L.empty(3, **META)),
    lambda L: L.where(L.zeros(3, dtype=L.bool), L.zeros(3, **META), L.zeros(3, **META),
                      out=L.empty(3, **META)),
    lambda L: L.cat([L.zeros(3), L.zeros(3, **META)], out=L.empty(6, **META)),
    lambda L: L.clamp(L.zeros(3), L.zeros(3, **META), out=L.empty(3, **META)),
], ids=["0-d cpu first", "0-d cpu second", "where cpu condition", "cat mixed", "clamp mixed"])
def test_out_device_follows_the_first_argument(program):
    """PyTorch compares ``out`` with the *first* argument's device: a 0-d cpu tensor there
    raises even though the functional op would accept it."""
    same(program)


# -- MetaMode vs FakeTensorMode on real inputs -------------------------------------------------------
def _fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode
    return FakeTensorMode(allow_non_fake_inputs=True)


VIEWS = {"t": lambda x: x.t(), "slice": lambda x: x[1:], "flat": lambda x: x.reshape(-1),
         "diagonal": lambda x: x.diagonal(), "expand": lambda x: x[:1].expand(4, 3)}
BASES = {"fresh": lambda L: L.ones(3, 3),
         "bumped": lambda L: L.ones(3, 3).add_(1).mul_(2),
         "view of bumped": lambda L: L.ones(4, 3).add_(1)[1:],
         "transposed": lambda L: L.ones(3, 3).t()}


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_meta_mode_views_of_real_inputs_match_fake_tensor_mode(base, view):
    """Views a program takes of real inputs inside the mode report the version eager execution
    (and FakeTensorMode) would: the twin's counter continues the real tensor's."""
    def program(L, mode):
        x = BASES[base](L)
        before = x._version
        with mode:
            v = VIEWS[view](x)
            log = [observe(v)]
            if view != "expand":
                v.mul_(2)
                log.append(observe(v))
            log.append(observe(v[0:]))
            log.append(observe(v + 1))
        log = [{k: o[k] for k in o if k not in ("device", "nbytes")} for o in log]
        return log, x._version - before
    ours, real_writes = program(sk, MetaMode())
    assert real_writes == 0         # the real input is never written (its twin is)
    assert ours == program(torch, _fake_mode())[0]
    assert ours == program(torch, contextlib.nullcontext())[0]


# -- data_ptr ------------------------------------------------------------------------------------------
DATA_PTRS = {
    "meta factory": lambda L: [L.empty(2, 3, **META).data_ptr()],
    "meta views": lambda L: [v.data_ptr() for x in [L.empty(4, 6, dtype=L.float64, **META)]
                             for v in (x[1], x[2:, 3], x.t()[1:], x.view(-1)[7:], x[4:])],
    "meta storage": lambda L: [L.empty(4, **META)[2:].untyped_storage().data_ptr()],
    "cpu empty": lambda L: [L.empty(0).data_ptr(), L.empty(0).untyped_storage().data_ptr(),
                            L.empty(2, 0).data_ptr()],
    "cpu view offsets": lambda L: [v.data_ptr() - x.data_ptr() for x in [L.empty(4, 6)]
                                   for v in (x[1], x[2:, 3])],
    "cpu view without elements": lambda L: [L.empty(3)[3:].data_ptr()],
}


@pytest.mark.parametrize("name", sorted(DATA_PTRS))
def test_data_ptr(name):
    same(DATA_PTRS[name])


# -- tensor(t) of a meta tensor -----------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"dtype": "float64"}, {"device": "cpu"},
                                    {"device": "meta"}, {"requires_grad": True}])
@pytest.mark.parametrize("source", ["meta transposed", "meta slice", "cpu transposed"])
def test_tensor_of_a_tensor_keeps_its_device(source, kwargs):
    def program(L):
        src = {"meta transposed": lambda: L.empty(3, 2, **META).t(),
               "meta slice": lambda: L.empty(4, 6, dtype=L.int32, **META)[1:, ::2],
               "cpu transposed": lambda: L.zeros(3, 2).t()}[source]()
        kw = {k: getattr(L, v) if k == "dtype" else v for k, v in kwargs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # torch: "To copy construct from a tensor, ..."
            return L.tensor(src, **kw)
    same(program)


# -- infer_shapes vs FakeTensorMode ---------------------------------------------------------------------
def _attention(L, q, k, v):
    return L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


PROGRAMS = {   # name -> (fn(L, *inputs), specs as (shape, dtype name))
    "mlp": (lambda L, x, w: L.nn.functional.gelu(x @ w.t()).sum(-1),
            [((4, 8), "float32"), ((16, 8), "float32")]),
    "int pair spec": (lambda L, i: i.cumsum(0), [(5, "int64")]),
    "0-d spec": (lambda L, x: x * 2 + 1, [((), "float16")]),
    "promotion": (lambda L, a, b: (a + b, a / 2, a > b), [((3, 1), "int32"), ((4,), "float16")]),
    "views": (lambda L, x: (x.t()[1:], x.unsqueeze(0).expand(2, 3, 4), x.view(-1)[::2]),
              [((3, 4), "float64")]),
    "attention": (_attention, [((2, 4, 8, 16), "float32")] * 3),
    "reductions": (lambda L, x: (x.mean(1, keepdim=True), x.amax((0, 2)), x.argmax(-1),
                                 x.var(0), x.logsumexp(2)), [((2, 3, 5), "float32")]),
    "embedding + layer_norm": (lambda L, ids, w: L.nn.functional.layer_norm(
        L.nn.functional.embedding(ids, w), (8,)), [((2, 5), "int64"), ((10, 8), "float32")]),
    "cat and stack": (lambda L, a, b: (L.cat([a, b], 1), L.stack([a, a], -1)),
                      [((2, 3), "float32"), ((2, 5), "float32")]),
}


def _torch_fake(fn, specs):
    with _fake_mode():
        inputs = [torch.empty(shape, dtype=getattr(torch, d)) for shape, d in specs]
        out = fn(torch, *inputs)
    outs = out if isinstance(out, tuple) else (out,)
    return [(tuple(t.shape), tuple(t.stride()), str(t.dtype).split(".")[-1]) for t in outs]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_infer_shapes_matches_fake_tensor_mode(name):
    fn, specs = PROGRAMS[name]
    report = infer_shapes(lambda *xs: fn(sk, *xs),
                          *[(shape, getattr(sk, d)) for shape, d in specs])
    outs = report.outputs if isinstance(report.outputs, tuple) else (report.outputs,)
    ours = [(m.shape, m.stride, m.dtype.name) for m in outs]
    assert ours == _torch_fake(fn, specs)
    numel = [math.prod((s,) if isinstance(s, int) else s) for s, _ in specs]
    assert report.parameters == sum(numel)


# -- data-dependent output shapes under MetaMode ----------------------------------------------------------
DATA_DEPENDENT = {
    "nonzero": (lambda L: L.zeros(3, 4).nonzero(), "nonzero.default"),
    "bool mask": (lambda L: [x[x > 0] for x in [L.zeros(3, 4)]], "index.Tensor"),
    "row mask": (lambda L: L.zeros(3, 4)[L.ones(3, dtype=L.bool)], "index.Tensor"),
    "mask and int": (lambda L: L.zeros(3, 4)[L.ones(3, dtype=L.bool), 1], "index.Tensor"),
    "mask of a real input": (lambda L: [t[t > 1] for t in [_REAL[L.__name__]]], "index.Tensor"),
}
_REAL = {"subclass_kit": sk.arange(6.0), "torch": torch.arange(6.0)}


def _torch_fake_error(name) -> tuple:
    """(class name, message) of what ``DATA_DEPENDENT[name]`` raises under torch's
    FakeTensorMode, in a fresh interpreter: after some torch programs in this process (the
    autograd sample sweep indexes with masks) torch's fake mode answers ``x[mask]`` without
    raising, a torch-side state this oracle must not depend on."""
    code = (f"import sys; sys.path[:0] = {[str(pathlib.Path(__file__).parent)]!r}\n"
            "import torch, test_meta_hunt_oracle as m\n"
            f"program, _ = m.DATA_DEPENDENT[{name!r}]\n"
            "try:\n"
            "    with m._fake_mode():\n"
            "        program(torch)\n"
            "    print('no error')\n"
            "except Exception as e:\n"
            "    print(type(e).__name__); print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300).stdout.splitlines()
    return tuple(out[:2])


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_shapes_under_meta_mode(name):
    program, op = DATA_DEPENDENT[name]
    theirs = _torch_fake_error(name)
    stack = sk.get_mode_stack()
    with pytest.raises(DynamicOutputShapeError) as ours, MetaMode():
        program(sk)
    assert theirs == ("DynamicOutputShapeException", "aten.nonzero.default")
    assert isinstance(ours.value, RuntimeError)   # torch names the nonzero x[mask] runs
    assert str(ours.value).startswith(f"sk.ops.{op}: the shape of its output depends on the "
                                      "data of its inputs, which MetaMode does not have")
    assert ours.value.__cause__ is None and ours.value.__suppress_context__
    assert sk.get_mode_stack() == stack
    with MetaMode():    # the mode still works after the error
        assert sk.zeros(2).device.type == "meta"


def test_meta_mode_other_not_implemented_errors_pass_through():
    """A NotImplementedError that does not come from a data-dependent shape is the meta
    kernel's own (here: an unsupported dtype, the cpu text)."""
    with pytest.raises(NotImplementedError) as meta:
        sk.empty(3, dtype=sk.int64, device="meta").softmax(0)
    with pytest.raises(NotImplementedError) as mode, MetaMode():
        sk.zeros(3, dtype=sk.int64).softmax(0)
    assert type(mode.value) is NotImplementedError and str(mode.value) == str(meta.value)


# -- round(decimals=) --------------------------------------------------------------------------------------
ROUND_DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("decimals", [None, 0, 1, 3, -1])
@pytest.mark.parametrize("dtype", ROUND_DTYPES)
def test_round_decimals_matches_torch_cpu(dtype, decimals, inplace):
    """cpu against torch's cpu (values or error); meta raises what cpu raises and otherwise has
    torch meta's metadata."""
    data = np.random.default_rng(7).standard_normal((4, 5)) * 40
    theirs_cpu = torch.from_numpy(data).to(getattr(torch, dtype)).t()
    kw = {} if decimals is None else {"decimals": decimals}

    def call(t):   # in place: on a fresh copy with the same (transposed) strides
        return t.clone().round_(**kw) if inplace else t.round(**kw)
    for ours_in in (to_sk(theirs_cpu), to_sk(theirs_cpu.to("meta"))):
        ours = run(sk, lambda L, t=ours_in: call(t))
        theirs = run(torch, lambda L: call(theirs_cpu))
        raised = isinstance(theirs, tuple)
        if ours_in.device.type == "meta" and not raised:
            theirs = run(torch, lambda L: call(theirs_cpu.to("meta")))
        elif ours_in.device.type == "cpu" and not raised:
            np.testing.assert_array_equal(call(to_sk(theirs_cpu)).numpy(),
                                          call(theirs_cpu).numpy())
        assert ours == theirs


@pytest.mark.parametrize("program", ["view", "add", "view then add_"])
@pytest.mark.parametrize("real_inference", [False, True])
@pytest.mark.parametrize("inside_inference", [False, True])
def test_meta_mode_twins_keep_inference_status(program, real_inference, inside_inference):
    def run_in(L, mode):
        if real_inference:
            with L.inference_mode():
                x = L.ones(4, 3)
        else:
            x = L.ones(4, 3).mul_(2)
        ctx = L.inference_mode() if inside_inference else contextlib.nullcontext()
        with ctx, mode:
            try:
                if program == "view":
                    out = x[1:]
                elif program == "add":
                    out = x + 1
                else:
                    out = x[1:]
                    out.add_(1)
            except RuntimeError as e:
                return ("raised", str(e))
            try:
                version = out._version
            except RuntimeError as e:
                version = str(e)
            return out.is_inference(), version, tuple(out.shape), tuple(out.stride())
    ours = run_in(sk, MetaMode())
    assert ours == run_in(torch, contextlib.nullcontext())     # eager execution
    if not real_inference:   # FakeTensorMode gives fakes of inference tensors a counter
        assert ours == run_in(torch, _fake_mode())


# -- documented: meta raises the cpu overlap / in-place promotion errors --------------------------------
CPU_RULES_ON_META = {
    "in-place into an expand": lambda L, dev: L.zeros(3, 1, device=dev).expand(3, 4).add_(1),
    "copy_ into an expand": lambda L, dev: L.zeros(1, device=dev).expand(3).copy_(
        L.zeros(3, device=dev)),
    "out= is an expand": lambda L, dev: L.add(L.zeros(3, device=dev), 1,
                                              out=L.zeros(1, device=dev).expand(3)),
    "partial overlap": lambda L, dev: [x[1:].copy_(x[:-1]) for x in [L.zeros(4, device=dev)]],
    "int add_ float": lambda L, dev: L.zeros(3, dtype=L.int64, device=dev).add_(1.5),
}


@pytest.mark.parametrize("name", sorted(CPU_RULES_ON_META))
def test_meta_raises_the_cpu_error(name):
    program = CPU_RULES_ON_META[name]
    with pytest.raises(RuntimeError) as theirs:
        program(torch, "cpu")
    for device in ("cpu", "meta"):
        with pytest.raises(RuntimeError) as ours:
            program(sk, device)
        assert str(ours.value) == str(theirs.value)
