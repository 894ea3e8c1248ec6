"""The derivative table: one backward formula per differentiable primitive of ``sk.ops``.

PyTorch keeps its formulas in ``tools/autograd/derivatives.yaml``; this module is that file for
subclass_kit. Each entry names the op overload (``"mul.Tensor"``), the node class PyTorch's
codegen gives it (``"MulBackward0"``: the base name in CamelCase, ``Backward``, and the index of
the overload among the yaml entries of that base name), the differentiable tensor arguments by
schema name, and the tensors the node saves (the ones the saved-tensor version check of
SEMANTICS §2.3 applies to). Formulas are written with ``sk`` ops, so with ``create_graph=True``
the backward is itself recorded and differentiable.

Formula protocol::

    @derivative("mul.Tensor", "MulBackward0", inputs=("self", "other"), save=("self", "other"))
    def _(ctx, grad):
        return grad * ctx.other, grad * ctx.self

- ``ctx.<name>``: the bound argument ``name`` of the forward call (schema name: ``self``,
  ``other``, ``dim``, ``keepdim``, ``alpha`` ...; defaults filled in). A tensor argument listed
  in ``save`` is the saved tensor (version-checked when unpacked); a tensor argument not saved is
  not reachable (use ``ctx.meta(name)``). ``ctx.result`` / ``ctx.results`` are the outputs
  (list ``"result"`` in ``save`` to use them).
- ``save`` may name ``"result<i>"`` (as the last entries) to keep only output ``i``
  (``nll_loss`` keeps ``total_weight``, ``native_layer_norm`` its mean and rstd: PyTorch's
  ``result1``...); ``ctx.results`` then holds None for the others. ``save_for={"self":
  ("other",)}`` saves ``self`` only when ``other`` needs a gradient (PyTorch's codegen rule);
  the formula must then read it only for that input.
- ``ctx.meta(name)``: ``TensorMeta`` (``shape``, ``dtype``, ``device``, ``stride``) of any
  tensor argument, always recorded (sizes need no saved data: ``sum``'s backward expands).
- ``ctx.needs_input_grad``: one bool per entry of ``inputs``; skip work for ``False`` ones.
- grads: one per output of the op. An output that is differentiable but received no gradient
  gets zeros (materialized); a non-differentiable output (integer dtype, e.g. ``max.dim``'s
  indices) gets ``None``.
- return: a tuple aligned with ``inputs`` (a bare tensor when there is one input); ``None``
  for no gradient. A ``Tensor[]`` argument (``cat``, ``stack``) takes a list of gradients.
- The engine, not the formula, reduces a gradient broadcast over an input (``sum_to_size``)
  and casts it to the input's dtype (PyTorch's ``validate_outputs``), so formulas return the
  gradient in the broadcast shape and the computation dtype.

Ops that have no derivative are marked ``non_differentiable(op, ...)``: their outputs never
require grad (comparisons, ``argmax``, integer ops, random fills' results ...), as in PyTorch's
yaml ``output_differentiability: [False]`` / ``not_implemented``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import subclass_kit as sk

__all__ = ["Formula", "TensorMeta", "FormulaContext", "FORMULAS", "NON_DIFFERENTIABLE",
           "NODE_NAMES", "derivative", "fast_formula", "non_differentiable", "node_name",
           "call_node_name", "apply_formula", "sum_to"]


@dataclass(frozen=True)
class Formula:
    """One derivative-table entry (see the module docstring)."""
    op: str                         # overload name, e.g. "mul.Tensor", "sum.default"
    node: str                       # node class name, e.g. "MulBackward0"
    inputs: tuple                   # differentiable tensor arguments, by schema name
    save: tuple                     # saved tensors: argument names and/or "result"
    fn: Callable
    # ((frozenset of argument names given Python numbers, node name), ...): PyTorch picks a
    # Scalar overload there (``x.pow(2)`` is ``pow.Tensor_Scalar``, ``PowBackward0``).
    numbers: tuple = ()
    # One bool per output (PyTorch's ``output_differentiability``); empty: every floating one.
    outputs: tuple = ()
    # saved name -> the inputs whose gradient uses it: PyTorch's generated code saves a tensor
    # only when one of those inputs needs a gradient (``should_compute_output``), so
    # ``x * constant`` does not keep ``x``. Names not listed are always saved.
    save_for: tuple = ()
    # A numpy fast path (``fast_formula``): ``fast(node, grads)`` returns what ``finish_grads``
    # would make of ``fn``'s gradients, or None when the call is not one it covers.
    fast: Callable | None = None


class TensorMeta:
    """What a node keeps of a tensor it does not save: enough to shape a gradient.

    A slotted class rather than a frozen dataclass: one is made per tensor argument and output
    of every recorded op, and a frozen dataclass's ``__init__`` costs five ``object.__setattr__``
    calls."""

    __slots__ = ("shape", "dtype", "device", "stride", "offset")

    def __init__(self, shape, dtype, device, stride, offset: int = 0):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self.stride = tuple(stride)
        self.offset = offset    # storage offset (``as_strided``'s backward places the gradient)

    @classmethod
    def of(cls, t) -> "TensorMeta":
        m = _new(cls)
        if t.__class__ is _Tensor:      # the common case: read the fields directly
            m.shape, m.stride, m.offset = t._layout
            m.device = t._storage.device
            m.dtype = t._dtype
        else:                           # a subclass may override the accessors
            m.shape, m.stride, m.offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
            m.device = t.device
            m.dtype = t.dtype
        return m

    def _key(self):
        return (self.shape, self.dtype, self.device, self.stride, self.offset)

    def __eq__(self, other):
        return isinstance(other, TensorMeta) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return ("TensorMeta(shape={!r}, dtype={!r}, device={!r}, stride={!r}, offset={!r})"
                .format(*self._key()))


_new = object.__new__
_Tensor = sk.Tensor


FORMULAS: dict[str, Formula] = {}
NON_DIFFERENTIABLE: dict[str, str] = {}
# Node names PyTorch gives by overload or call form where one formula serves several
# (``x.sum()`` -> SumBackward0, ``x.sum(0)`` -> SumBackward1; ``t_`` -> TBackward1): op key ->
# a name, or a function of the bound arguments returning one.
NODE_NAMES: dict = {}


def call_node_name(key: str, formula: Formula, bound: dict) -> str:
    """The node name of a call of overload ``key`` (bound arguments ``bound``) differentiated by
    ``formula``: a ``NODE_NAMES`` entry, else a ``numbers`` variant when Tensor-typed inputs are
    Python numbers, else the formula's ``node``."""
    name = NODE_NAMES.get(key)
    if name is not None:
        return name if isinstance(name, str) else name(bound)
    if formula.numbers:
        given = frozenset(n for n in formula.inputs
                          if isinstance(bound.get(n), (bool, int, float, complex)))
        for names, node in formula.numbers:
            if names == given:
                return node
    return formula.node


def derivative(op: str, node: str, inputs: tuple = ("self",), save: tuple = (),
               numbers: dict | None = None, outputs: tuple = (),
               save_for: dict | None = None):
    """Register the backward formula of overload ``op`` (decorator). Raises ValueError for an
    op registered twice.

    ``numbers`` maps a tuple of argument names to the node name used when exactly those
    Tensor-typed arguments are Python numbers (subclass_kit has one overload where PyTorch has
    a Scalar one: ``{("exponent",): "PowBackward0", ("self",): "PowBackward2"}``); the formula
    itself then sees the number and returns ``None`` for it. ``outputs``: one bool per output
    of the op, False for an output that never requires grad (PyTorch's
    ``output_differentiability``; its gradient reaches the formula as ``None``).

    ``save_for`` maps a saved name to the inputs whose formula reads it (``{"self": ("other",),
    "other": ("self",)}`` for ``mul``): it is saved only when one of them needs a gradient, and
    the formula must not read it otherwise (PyTorch saves by the same rule)."""
    variants = tuple((frozenset(k), v) for k, v in (numbers or {}).items())
    users = tuple((name, tuple(inputs.index(i) for i in used))
                  for name, used in (save_for or {}).items())

    def register(fn):
        if op in FORMULAS or op in NON_DIFFERENTIABLE:
            raise ValueError(f"derivative for {op!r} registered twice")
        FORMULAS[op] = Formula(op, node, tuple(inputs), tuple(save), fn, variants,
                               outputs=tuple(outputs), save_for=users)
        return fn
    return register


def fast_formula(op: str):
    """Register a numpy fast path for the formula of overload ``op`` (decorator; the formula
    first). ``fast(node, grads)`` gets the ``FormulaNode`` (its ``_saved``, ``_results``,
    ``_values``, ``_metas``, ``_needs``; saved tensors read with ``SavedTensor.peek``) and the
    gradients of its outputs (any may be None), before the node builds the formula's ``ctx``.
    It returns, for the calls it covers, the gradients the formula and the engine's
    ``finish_grads`` would: the same bits, sizes, strides, dtypes and views, one entry per
    input. It returns None for every other call (then the formula runs, with its errors) and
    must cover only calls nothing could see: grad mode off (no ``create_graph``),
    ``sk.fast_path.unobserved`` for the ops the formula calls, plain cpu operands.
    ``tests/test_autograd_fast_formulas.py`` holds each one to its formula. Raises KeyError
    for an op with no formula and ValueError for a second fast path."""
    def register(fast):
        formula = FORMULAS[op]
        if formula.fast is not None:
            raise ValueError(f"fast path for {op!r} registered twice")
        FORMULAS[op] = dataclasses.replace(formula, fast=fast)
        return fast
    return register


def node_name(op, args: tuple, kwargs: dict) -> str:
    """The node class name PyTorch gives the backward of this call of ``op``. Raises KeyError
    for an op with no formula."""
    key = f"{op.name}.{op.overload}"
    formula = FORMULAS.get(key)
    if formula is None and op.is_inplace and op.functional_variant is not None:
        fv = op.functional_variant      # in-place ops are named by their functional variant
        formula = FORMULAS[f"{fv.name}.{fv.overload}"]
    if formula is None:
        raise KeyError(key)
    return call_node_name(key, formula, bind(op, args, kwargs))


def non_differentiable(*ops: str, reason: str = "not differentiable") -> None:
    """Mark overloads whose outputs never require grad."""
    for op in ops:
        if op in FORMULAS or op in NON_DIFFERENTIABLE:
            raise ValueError(f"derivative for {op!r} registered twice")
        NON_DIFFERENTIABLE[op] = reason


class FormulaContext:
    """The ``ctx`` a formula sees: bound forward arguments by schema name, outputs, metadata.

    ``values`` maps argument names to values (tensors only for saved ones); ``metas`` maps every
    tensor argument to its ``TensorMeta`` (lists of them for ``Tensor[]`` arguments).
    """

    def __init__(self, values: dict, metas: dict, results, needs_input_grad: tuple):
        # (layer.FormulaNode.apply builds its ctx with these same fields in place)
        self.__dict__.update(values)
        self._metas = metas
        self.results = results
        self.result = results[0] if len(results) == 1 else results
        self.needs_input_grad = needs_input_grad

    def meta(self, name: str):
        return self._metas[name]


def sum_to(grad, shape):
    """Reduce ``grad`` to ``shape`` by summing broadcast dims (PyTorch's ``at::sum_to``: leading
    dims summed away, size-1 dims summed with keepdim). Returns ``grad`` itself when the shape
    already matches."""
    shape = tuple(shape)
    gshape = grad._layout.sizes if grad.__class__ is _Tensor else tuple(grad.shape)
    if gshape == shape:
        return grad
    if not shape:           # at::sum_to's own case: ``tensor.sum()``
        return _sum_all(grad)
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    # the ops themselves, as PyTorch's engine calls ``at::sum_to`` (no function level)
    if dims:
        grad = _sum_dims(grad, dims, True)
    if lead:
        grad = _view(grad, shape)
    return grad


_sum_dims = sk.ops.sum.dim_IntList
_sum_all = sk.ops.sum.default
_view = sk.ops.view.default


_SIGNATURES: dict = {}      # op -> ((name, default value or None), ...)


def bind(op, args: tuple, kwargs: dict) -> dict:
    """The forward call's arguments by schema name, defaults filled in."""
    sig = _SIGNATURES.get(op)
    if sig is None:
        sig = _SIGNATURES[op] = tuple(
            (a.name, a.default_value if a.default is not None else None)
            for a in op.schema.arguments)
    bound = {}
    n = len(args)
    for i, (name, default) in enumerate(sig):
        if i < n:
            bound[name] = args[i]
        elif name in kwargs:
            bound[name] = kwargs[name]
        else:
            bound[name] = list(default) if isinstance(default, list) else default
    return bound


def _meta(value):
    if isinstance(value, sk.Tensor):
        return TensorMeta.of(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, sk.Tensor) for v in value):
        return [TensorMeta.of(v) for v in value]
    return None


def make_context(formula: Formula, op, args, kwargs, results, needs_input_grad) -> FormulaContext:
    """Build the ``ctx`` of ``formula`` from a forward call (no saved-tensor hooks, no version
    recording: the engine wraps the saved values itself)."""
    bound = bind(op, args, kwargs)
    metas = {name: m for name, v in bound.items() if (m := _meta(v)) is not None}
    values = {name: v for name, v in bound.items()
              if name in formula.save or _meta(v) is None}
    return FormulaContext(values, metas, tuple(results), tuple(needs_input_grad))


def finish_grads(formula: Formula, metas: dict, raw, validate: bool = True) -> list:
    """Normalize a formula's return to one entry per input, each reduced to the input's shape
    and cast to its dtype (PyTorch's ``validate_outputs``). ``metas``: the ``TensorMeta`` of
    each tensor argument by name (a list of them for a ``Tensor[]`` argument)."""
    if not isinstance(raw, tuple):
        raw = (raw,)
    if len(raw) != len(formula.inputs):
        raise RuntimeError(f"{formula.node}: formula returned {len(raw)} gradients, expected "
                           f"{len(formula.inputs)}")
    out = []
    index = 0
    for name, g in zip(formula.inputs, raw):
        meta = metas.get(name)
        if isinstance(meta, list):
            if g is None:
                out.append(None)
            else:
                out.append([None if gi is None else _fit(gi, m, formula.node, index + j, validate)
                            for j, (gi, m) in enumerate(zip(g, meta))])
            index += len(meta)
            continue
        if g is None or meta is None:
            out.append(None)
        elif (g.__class__ is _Tensor and g._layout.sizes == meta.shape
              and g._dtype is meta.dtype):
            out.append(g)               # the common case: nothing to reduce or cast
        else:
            out.append(_fit(g, meta, formula.node, index, validate))
        index += meta is not None
    return out


def _expandable(shape: tuple, to: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``to`` (PyTorch's ``is_expandable_to``)."""
    lead = len(to) - len(shape)
    if lead < 0:
        return False
    for i, s in enumerate(shape):
        if s != 1 and s != to[lead + i]:
            return False
    return True


def _fit(grad, meta: TensorMeta, node: str, index: int, validate: bool = True):
    """PyTorch's ``validate_outputs``: a gradient must have its input's shape or one the
    input's shape broadcasts to (then it is summed down); else RuntimeError naming the
    ``node`` and the gradient's ``index``. Cast to the input's dtype."""
    shape = meta.shape
    gshape = grad._layout.sizes if grad.__class__ is _Tensor else tuple(grad.shape)
    if shape != gshape:
        if validate and not _expandable(shape, gshape):
            raise RuntimeError(f"Function {node} returned an invalid gradient at index "
                               f"{index} - got {list(gshape)} but expected shape compatible "
                               f"with {list(shape)}")
        grad = sum_to(grad, shape)
    if grad.dtype != meta.dtype:
        grad = grad.to(meta.dtype)
    return grad


def apply_formula(op, args: tuple, kwargs: dict, results, grads, needs_input_grad=None,
                  validate: bool = True) -> list:
    """Run ``op``'s formula once, outside any graph: the gradients of ``op``'s differentiable
    inputs for output gradients ``grads``. Used by the engine's nodes and by formula tests.

    ``op``: an ``OpOverload``; ``results``: the forward outputs (a tuple); ``grads``: one per
    output (``None`` for non-differentiable ones). Raises KeyError for an op with no formula.
    """
    key = f"{op.name}.{op.overload}"
    formula = FORMULAS[key]
    if needs_input_grad is None:
        needs_input_grad = (True,) * len(formula.inputs)
    ctx = make_context(formula, op, args, kwargs, results, needs_input_grad)
    return finish_grads(formula, ctx._metas, formula.fn(ctx, *grads), validate)
