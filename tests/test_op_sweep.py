"""One sweep over every op overload in ``sk.ops``: schema, kernels, oracle, meta.

For each overload ``test_op`` fails, naming the op, when:

1. it has no parsed schema that round-trips;
2. it has neither (a cpu kernel and a meta kernel) nor a decomposition;
3. it has no entry in the sample table (``samples.py``; in-place, out= and ``<view>_copy``
   overloads may derive theirs from the functional op);
4. on a sample, subclass_kit and ``torch.ops.aten.<name>.<overload>`` disagree: result values
   (NaN-aware, float16 tolerance), dtype, sizes, strides, storage offset, contiguity; which
   outputs are inputs / share an input's storage / are views of which input (``_base``); the
   state of every input after the call (in-place and out= writes, metadata changes) and the
   ``_version`` of inputs and outputs; or, when torch raises, the exception class and message
   (after ``torch.`` -> ``sk.``), with sk's inputs, versions and data left unchanged;
5. on meta tensors the op's outputs differ from cpu in sizes/strides/offset/dtype/aliasing, or it
   raises differently from cpu. Data-dependent samples (``nonzero``, ``item``, boolean-mask
   indexing) must raise on meta the exception class torch's meta kernels raise.

Random ops compare metadata only. Problems of one op are reported together.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import normalize_message, numpy_of, result_diffs, tensor_diffs
from samples import S, T, build, entry_for, out_specs, qualified, table

import subclass_kit as sk
from subclass_kit.schema import parse_schema

ALL_OPS = sorted(sk.ops, key=qualified)
MAX_PROBLEMS = 12

# Known differences from torch, reported to the owners (xfail(strict=True): a fix XPASSes and
# must be removed from here). Keyed by "name.overload"; the reason says what torch does.
KNOWN = {
}

# torch 2.13 bug: these out= kernels ignore a non-contiguous ``out`` of the right shape (the
# result is never written), so only freshly resized outs are compared.
TORCH_BROKEN_STRIDED_OUT = {"gelu.out"}


# -- torch side ----------------------------------------------------------------------------------
_TORCH_ONLY_ARGS = ("layout", "pin_memory")
_overload_cache: dict = {}


def _is_number(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.ndarray)


def _number_positions(op, args, kwargs) -> frozenset:
    """Names of Tensor-typed arguments given a Python number (a "wrapped number")."""
    found = set()
    for i, a in enumerate(op.schema.arguments):
        if not a.is_tensor:
            continue
        v = args[i] if i < len(args) else kwargs.get(a.name)
        if _is_number(v):
            found.add(a.name)
    return frozenset(found)


def torch_overload(op, numbers=frozenset()):
    """The ``torch.ops.aten`` overload computing what ``op`` computes: same argument names
    (ignoring ``layout``/``pin_memory``, which the sweep does not pass, and our factories'
    ``requires_grad``), and
    ``Scalar`` where we pass a Python number in a Tensor position (``eq.Tensor`` with a number
    -> ``eq.Scalar``)."""
    import torch
    key = (qualified(op), numbers)
    if key in _overload_cache:
        return _overload_cache[key]
    packet = getattr(torch.ops.aten, op.name, None)
    found = None
    if packet is not None:
        ours = {a.name: a for a in op.schema.arguments
                if a.name not in ("requires_grad", *_TORCH_ONLY_ARGS)}
        names = list(packet.overloads())
        if op.overload in names:
            names.remove(op.overload)
            names.insert(0, op.overload)
        for ov_name in names:
            ov = getattr(packet, ov_name)
            targs = [a for a in ov._schema.arguments if a.name not in _TORCH_ONLY_ARGS]
            if [a.name for a in targs] != list(ours):
                continue
            if any(a.kwarg_only != ours[a.name].kwarg_only for a in targs):
                continue
            if not all(_types_match(ours[a.name], str(a.type), a.name in numbers)
                       for a in targs):
                continue
            found = ov
            break
    _overload_cache[key] = found
    return found


def _types_match(ours, theirs: str, number: bool) -> bool:
    if number:
        return theirs in ("number", "Optional[number]")
    if ours.is_tensor:
        return theirs in ("Tensor", "Optional[Tensor]")
    if ours.is_tensor_list:
        return theirs.startswith("List[") and "Tensor" in theirs
    return "Tensor" not in theirs


class NoTorchOverload(Exception):
    """The sample table names an op torch has no matching overload for."""


def call_torch(op, args, kwargs):
    # add/sub/mul/div take numbers in Tensor positions themselves; others have Scalar overloads.
    ov = torch_overload(op, _number_positions(op, args, kwargs)) or torch_overload(op)
    if ov is None:
        raise NoTorchOverload(f"no torch.ops.aten overload matches {op.schema}")
    kwargs = dict(kwargs)
    requires_grad = kwargs.pop("requires_grad", None)
    out = ov(*args, **kwargs)
    if requires_grad:
        out.requires_grad_(True)
    return out


# -- comparing -----------------------------------------------------------------------------------
def run(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001  (any exception is a result to compare)
        return None, e


def exc_kind(e) -> str:
    """The builtin exception class ``e`` is an instance of (torch's are builtins too)."""
    for cls in type(e).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return type(e).__name__


def describe(e) -> str:
    return f"{exc_kind(e)}({str(e)!r})"


def _flat_outputs(out):
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(o if isinstance(o, (list, tuple)) else [o])
        return flat
    return [out]


def _is_tensor(x) -> bool:
    return hasattr(x, "untyped_storage") and hasattr(x, "stride")


def _storage_key(s):
    return s._cdata if hasattr(s, "_cdata") else id(s)


def alias_signature(out, built) -> list:
    """Per output tensor: (index of the input it *is*, index of the input whose storage it
    shares, index of the input whose root base is its ``_base``); -1 for none."""
    inputs = built.tensors
    storages = ([_storage_key(t.untyped_storage()) for t in inputs]
                + [_storage_key(s) for s in built.storages])
    roots = [t._base if t._base is not None else t for t in inputs]
    sig = []
    for o in _flat_outputs(out):
        if not _is_tensor(o):
            sig.append(None)
            continue
        is_idx = next((i for i, t in enumerate(inputs) if o is t), -1)
        key = _storage_key(o.untyped_storage())
        share = next((i for i, k in enumerate(storages) if k == key), -1)
        base = o._base
        base_idx = -1 if base is None else next(
            (i for i, r in enumerate(roots) if base is r), -2)
        sig.append((is_idx, share, base_idx))
    return sig


def _versions(tensors) -> list:
    out = []
    for t in tensors:
        try:
            out.append(t._version)
        except RuntimeError:
            out.append(None)
    return out


def snapshot(built) -> list:
    """Everything an op could change about its sk inputs."""
    snap = []
    for t in built.tensors:
        vals = numpy_of(t) if t.device.type == "cpu" else None
        snap.append((tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.dtype,
                     t.untyped_storage().nbytes(), vals))
    return snap + [_versions(built.tensors)]


def _same_snapshot(a, b) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a[:-1], b[:-1]):
        if x[:5] != y[:5]:
            return False
        if x[5] is not None and not np.array_equal(x[5], y[5], equal_nan=x[5].dtype.kind == "f"):
            return False
    return a[-1] == b[-1]


def compare_errors(ours, theirs) -> list:
    if ours is None:
        return [f"torch raises {describe(theirs)}, sk does not"]
    problems = []
    if exc_kind(ours) != exc_kind(theirs):
        problems.append(f"exception class {exc_kind(ours)} vs torch {exc_kind(theirs)}")
    want = normalize_message(str(theirs))
    if str(ours) != want:
        problems.append(f"message {str(ours)!r}\n      expected {want!r}")
    return problems


def _binding_error(e) -> bool:
    """torch.ops rejected the Python arguments themselves (no such overload for a number)."""
    text = str(e) if e is not None else ""
    return "Expected a value of type" in text or "is missing value for argument" in text


def check_oracle(op, entry, sample) -> tuple:
    """Compare sk cpu with torch cpu on one sample; returns (problems, sk_outcome, torch_ok)."""
    targs, tkw, tbuilt = build(sample, "torch", "cpu", op)
    t_out, t_exc = run(call_torch, op, targs, tkw)
    if isinstance(t_exc, NoTorchOverload) or _binding_error(t_exc):
        return [f"torch cannot take these arguments: {t_exc}"], None, "skip"
    sargs, skw, sbuilt = build(sample, "sk", "cpu", op)
    before = snapshot(sbuilt)
    s_out, s_exc = run(op, *sargs, **skw)
    problems = []
    if t_exc is not None:
        problems += compare_errors(s_exc, t_exc)
        if s_exc is not None and not _same_snapshot(before, snapshot(sbuilt)):
            problems.append("failed op changed its inputs (data, metadata or _version)")
        return problems, (s_out, s_exc, sbuilt), False
    if s_exc is not None:
        return [f"sk raises {describe(s_exc)}; torch returns a result"], (None, s_exc,
                                                                          sbuilt), True
    values = sample.values and not entry.random
    rtol = sample.rtol if sample.rtol is not None else entry.rtol
    atol = sample.atol if sample.atol is not None else entry.atol
    problems += result_diffs(s_out, t_out, check_values=values, rtol=rtol, atol=atol)
    a, b = alias_signature(s_out, sbuilt), alias_signature(t_out, tbuilt)
    if a != b:
        problems.append(f"aliasing (is-input, shares-storage-of, _base-of) {a} vs torch {b}")
    for i, (si, ti) in enumerate(zip(sbuilt.tensors, tbuilt.tensors)):
        for d in tensor_diffs(si, ti, check_values=values, rtol=rtol, atol=atol):
            problems.append(f"input {i} after the call: {d}")
    va, vb = _versions(sbuilt.tensors), _versions(tbuilt.tensors)
    if va != vb:
        problems.append(f"input _version {va} vs torch {vb}")
    oa = _versions([o for o in _flat_outputs(s_out) if _is_tensor(o)])
    ob = _versions([o for o in _flat_outputs(t_out) if _is_tensor(o)])
    if not sbuilt.tensors:
        # Factories: torch.ops.aten.full/arange/eye/rand... return version 1 (they decompose
        # into empty + an in-place fill at the autograd level), torch.full() & co. return 0.
        ob = [0] * len(ob)
    if oa != ob:
        problems.append(f"output _version {oa} vs torch {ob}")
    return problems, (s_out, None, sbuilt), True


def check_meta(op, sample, cpu) -> list:
    """Compare sk on meta with sk on cpu (same rule, so same metadata and errors)."""
    margs, mkw, mbuilt = build(sample, "sk", "meta", op)
    m_out, m_exc = run(op, *margs, **mkw)
    c_out, c_exc, cbuilt = cpu
    if sample.meta == "raises":
        import torch  # noqa: F401
        targs, tkw, _ = build(sample, "torch", "meta", op)
        _, t_exc = run(call_torch, op, targs, tkw)
        if m_exc is None:
            return [(f"meta: data-dependent op returned a result; torch meta raises "
                     f"{describe(t_exc) if t_exc else 'nothing'}")]
        if t_exc is not None and exc_kind(m_exc) != exc_kind(t_exc):
            return [f"meta: raises {describe(m_exc)}, torch meta raises {describe(t_exc)}"]
        return []
    if c_exc is not None:
        if m_exc is None:
            return [f"meta: no error, cpu raises {describe(c_exc)}"]
        if exc_kind(m_exc) != exc_kind(c_exc) or str(m_exc) != str(c_exc):
            return [f"meta raises {describe(m_exc)}, cpu raises {describe(c_exc)}"]
        return []
    if m_exc is not None:
        return [f"meta raises {describe(m_exc)}, cpu succeeds"]
    problems = []
    mo, co = _flat_outputs(m_out), _flat_outputs(c_out)
    if len(mo) != len(co):
        return [f"meta: {len(mo)} outputs vs cpu {len(co)}"]
    for i, (m, c) in enumerate(zip(mo, co)):
        if not _is_tensor(c):
            continue
        if not _is_tensor(m):
            problems.append(f"meta output {i}: not a tensor")
            continue
        if m.device.type != "meta":
            problems.append(f"meta output {i} is on {m.device.type}")
        got = (tuple(m.shape), tuple(m.stride()), m.storage_offset(), m.dtype)
        want = (tuple(c.shape), tuple(c.stride()), c.storage_offset(), c.dtype)
        if got != want:
            problems.append(f"meta output {i} (sizes, strides, offset, dtype) {got} vs cpu {want}")
    a, b = alias_signature(m_out, mbuilt), alias_signature(c_out, cbuilt)
    if a != b:
        problems.append(f"meta aliasing {a} vs cpu {b}")
    for i, (m, c) in enumerate(zip(mbuilt.tensors, cbuilt.tensors)):
        got = (tuple(m.shape), tuple(m.stride()), m.storage_offset(), m._version)
        want = (tuple(c.shape), tuple(c.stride()), c.storage_offset(), c._version)
        if got != want:
            problems.append(f"meta input {i} after the call {got} vs cpu {want}")
    return problems


# -- samples of derived entries ------------------------------------------------------------------
def expanded_samples(op, entry) -> list:
    """(sample, expectation) pairs: expectation "ok"/"error" for the op's own entry, None for
    derived ones (whatever torch does, sk must do too)."""
    if entry.derived_from is None or (op.name.endswith("_copy") and not op.is_out):
        expect = entry.derived_from is None
        return ([(s, "ok" if expect else None) for s in entry.samples]
                + [(s, "error" if expect else None) for s in entry.errors])
    if op.is_inplace:
        return [(s, None) for s in entry.samples]
    functional = op.functional_variant
    names = [a.name for a in op.schema.arguments if a.is_write and a.kwarg_only]
    out = []
    for i, s in enumerate(entry.samples):
        targs, tkw, _ = build(s, "torch", "cpu", functional)
        res, exc = run(call_torch, functional, targs, tkw)
        results = [r for r in _flat_outputs(res) if _is_tensor(r)] if exc is None else []
        if len(results) != len(names):
            choices = [[T((0,), _promoted(s))] * len(names)]
        else:
            per_out = []
            for r in results:
                dtype = str(r.dtype).replace("torch.", "")
                specs = out_specs(dtype, tuple(r.shape))
                if i == 0 and r.dtype.is_floating_point:
                    specs.append(T((0,), "int64"))
                per_out.append(specs)
            n = max(len(p) for p in per_out) if i < 3 else 1
            choices = [[p[min(k, len(p) - 1)] for p in per_out] for k in range(n)]
        for specs in choices:
            if qualified(op) in TORCH_BROKEN_STRIDED_OUT and any(
                    sp.layout != "contig" for sp in specs):
                continue
            new = S(*s.args, **s.kwargs, **dict(zip(names, specs)))
            new.values, new.meta, new.rtol, new.atol = s.values, s.meta, s.rtol, s.atol
            out.append((new, None))
    return out


def _promoted(sample) -> str:
    """A guess at the result dtype of a call torch rejects: the promoted dtype of its tensors."""
    dtypes = [getattr(sk, a.dtype) for a in _flat_outputs(list(sample.args)) if isinstance(a, T)]
    out = dtypes[0] if dtypes else sk.float32
    for d in dtypes[1:]:
        out = sk.promote_types(out, d)
    return out.name


def _specs(x):
    if isinstance(x, T):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _specs(y)


def test_sample_table_covers_layouts_shapes_and_dtypes():
    """Every entry taking tensors tries a non-contiguous input, a zero-size or 0-d input and
    more than one dtype."""
    gaps = []
    for name, entry in sorted(table().items()):
        specs = [t for s in entry.samples for t in _specs([*s.args, *s.kwargs.values()])]
        if not specs:
            continue
        checks = {"non-contiguous": any(t.layout != "contig" for t in specs),
                  "zero-size or 0-d": any(0 in t.shape or t.shape == () for t in specs),
                  "several dtypes": len({t.dtype for t in specs}) > 1}
        missing = [k for k, ok in checks.items() if not ok]
        if missing:
            gaps.append(f"{name}: {', '.join(missing)}")
    assert not gaps, "sample entries without: " + "; ".join(gaps)


def test_sample_table_has_no_stale_entries():
    names = {qualified(op) for op in sk.ops}
    stale = sorted(set(table()) - names)
    assert not stale, f"sample entries for ops that do not exist: {stale}"


# Decompositions that change when any dispatch mode is active (PyTorch's isTensorSubclassLike:
# linear adds the bias out of place), so they differ from torch under ``pytest --debug-asserts``.
MODE_SENSITIVE = {"linear.default"}


def _op_params():
    out = []
    for op in ALL_OPS:
        reason = KNOWN.get(qualified(op))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        if qualified(op) in MODE_SENSITIVE:
            marks.append(pytest.mark.no_debug_asserts)
        out.append(pytest.param(op, id=qualified(op), marks=marks))
    return out


def test_known_list_names_real_ops():
    names = {qualified(op) for op in sk.ops}
    assert not set(KNOWN) - names, sorted(set(KNOWN) - names)


@pytest.mark.parametrize("op", _op_params())
def test_op(op):
    problems = []
    # 1. schema
    schema = getattr(op, "schema", None)
    if not isinstance(schema, sk.OpSchema):
        pytest.fail(f"{op}: no parsed schema", pytrace=False)
    if str(parse_schema(str(schema))) != str(schema):
        problems.append(f"schema does not round-trip: {schema}")
    # 2. kernels
    if op.decomposition is None:
        missing = [d for d in ("cpu", "meta") if d not in op._kernels]
        if missing:
            pytest.fail(f"{op}: no {' and no '.join(missing)} kernel, and no decomposition "
                        f"({schema})", pytrace=False)
    # 3. samples
    entry = entry_for(op)
    if entry is None:
        pytest.fail(f"{op}: no entry in the sample table (tests/samples_*.py) for {schema}",
                    pytrace=False)
    pytest.importorskip("torch", reason="torch is the oracle of the op sweep")
    if torch_overload(op) is None and not any(
            torch_overload(op, _number_positions(op, s.args, s.kwargs))
            for s in entry.samples):
        pytest.fail(f"{op}: no torch.ops.aten overload with the same arguments",
                    pytrace=False)
    # 4. + 5. oracle and meta, per sample
    pairs = expanded_samples(op, entry)
    assert pairs, f"{op}: the sample entry is empty"
    n_ok = 0
    for sample, expect in pairs:
        found, cpu, torch_ok = check_oracle(op, entry, sample)
        if torch_ok == "skip":
            if expect is not None:   # our own table must only use calls torch can take
                problems += [f"{sample!r}: {p}" for p in found]
            continue
        if torch_ok:
            n_ok += 1
        if expect == "ok" and torch_ok is False:
            found.insert(0, "table error: this sample raises in torch (move it to errors)")
        if expect == "error" and torch_ok:
            found.insert(0, "table error: this error sample succeeds in torch")
        if cpu is not None and sample.meta is not False:
            found += check_meta(op, sample, cpu)
        problems += [f"{sample!r}: {p}" for p in found]
    if n_ok == 0:
        problems.append("no sample succeeds in torch: the entry tests errors only")
    if problems:
        shown = problems[:MAX_PROBLEMS]
        more = len(problems) - len(shown)
        pytest.fail(f"{op} ({len(problems)} problems):\n  " + "\n  ".join(shown)
                    + (f"\n  ... and {more} more" if more else ""), pytrace=False)
