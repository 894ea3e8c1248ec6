"""The autograd layer: records a node per differentiable op call (PyTorch's ``VariableType``
kernels), above modes and subclass handlers (Note [Autograd layer] in the core's registry.py).

For an op whose differentiable inputs require grad (grad mode on, inference mode off) it
saves the formula's tensors with their versions, runs the op below itself, and sets the
outputs' ``grad_fn``. In-place ops use the formula of their functional variant; an in-place op
on a view rebases the view's root base onto a ``CopySlices`` node (SEMANTICS.md §3.5) and the
view's own ``grad_fn`` is regenerated lazily, as ``AsStridedBackward0``, the next time it is read
(§3.6): O(1) per in-place op, whatever the number of live views of the base.
"""

from __future__ import annotations

import subclass_kit as sk

from . import formulas as F
from .anomaly_mode import store_stack
from .graph import (INFERENCE_SAVED, Node, SavedTensor, _anomaly, _any_normal_tensor,
                    _sequence, grad_accumulator, gradient_edge, set_history)
from .view_nodes import AsStridedBackward0, CopySlices

__all__ = ["AutogradLayer", "FormulaNode", "CopySlices", "AsStridedBackward0", "node_class"]

_redispatch = sk.redispatch_below_autograd
_check_inplace_call = sk.check_inplace_call
_new = object.__new__
_Tensor = sk.Tensor
_grad_enabled = sk.is_grad_enabled
_inference = sk.is_inference_mode_enabled


class FormulaNode(Node):
    """The node of a derivative-table formula: ``apply`` unpacks the saved tensors, builds the
    formula's ``ctx`` and returns one gradient per edge (``Tensor[]`` inputs flattened)."""

    # Slots for what every node has (faster to set, one per recorded op); hooks and metadata
    # stay in the instance dict (Node._own).
    __slots__ = ("_formula", "_values", "_saved", "_metas", "_results", "_out_metas", "_needs",
                 "_widths")

    def __init__(self, formula, values, saved, metas, results, out_metas, needs, edges, widths):
        self._next = tuple(edges)       # Node.__init__, inlined: one node per recorded op
        self._seq = next(_sequence)
        if _anomaly[0]:
            store_stack(self)
        self._formula = formula
        self._values = values           # argument name -> value (not saved: plain values)
        self._saved = saved             # argument name -> SavedTensor (or list of them)
        self._metas = metas
        self._results = results         # SavedTensors of the outputs, or None
        self._out_metas = out_metas     # TensorMeta per output, None for non-differentiable
        self._needs = needs
        self._widths = widths           # per formula input: None (a tensor) or a list's length
        self._num_inputs = len(out_metas)

    def apply(self, grads):
        formula = self._formula
        # a numpy fast path when nothing could see the formula's ops (formulas.fast_formula):
        # before the ctx is built, which it does not need
        fast = formula.fast
        if fast is not None:
            finished = fast(self, grads)
            if finished is not None:
                return finished
        out_metas = self._out_metas
        n = len(out_metas)
        if n != 1 or grads[0] is None:
            grads = list(grads) + [None] * (n - len(grads))
            for i, (g, m) in enumerate(zip(grads, out_metas)):
                if g is None and m is not None:
                    grads[i] = sk.zeros(m.shape, dtype=m.dtype, device=m.device)
        # FormulaContext.__init__ written out (keep the two alike): the saved values go
        # straight into its __dict__, unpacked before the results as PyTorch's nodes do
        # (a dict copy and the call cost 1.5% of a tiny-MLP training step)
        ctx = _new(F.FormulaContext)
        values = ctx.__dict__
        values.update(self._values)
        saved = self._saved
        if saved:
            for k, v in saved.items():
                values[k] = v.unpack() if v.__class__ is SavedTensor else _unpack(v)
        results = self._results
        if results is None:
            results = (None,) * n
        elif n == 1:
            results = (results[0].unpack() if results[0] is not None else None,)
        else:
            results = tuple(_unpack(r) for r in results)
        ctx._metas = self._metas
        ctx.results = results
        ctx.result = results[0] if n == 1 else results
        ctx.needs_input_grad = self._needs
        finished = F.finish_grads(formula, self._metas, formula.fn(ctx, *grads))
        widths = self._widths
        if widths is None:              # no Tensor[] input: one gradient per edge already
            return finished
        out = []
        for width, g in zip(widths, finished):
            if width is None:
                out.append(g)
            else:
                out.extend(g if g is not None else [None] * width)
        return out

    def release(self):
        for v in self._saved.values():
            if v.__class__ is SavedTensor:
                v.free()
            elif isinstance(v, list):
                for s in v:
                    if isinstance(s, SavedTensor):
                        s.free()
        for r in self._results or ():
            if r is not None:
                r.free()


# PyTorch exposes saved values as ``grad_fn._saved_<name>`` (unpacking checks versions; lists as
# tuples, ``<tensor>_sym_sizes`` the sizes of an argument not saved) and the SavedTensor
# objects as ``grad_fn._raw_saved_<name>``. They are properties of FormulaNode, added for the
# argument names of each op as it is first recorded (``_expose_saved``), not a ``__getattr__``:
# with one, CPython 3.11 specialises no attribute read on a node, and the engine and the
# formulas read a node's fields about thirty times per node.
def _saved_attr(node, key: str, raw: bool):
    """``_saved_<key>`` (``_raw_saved_<key>`` if ``raw``) of ``node``; AttributeError when
    the node has no such value."""
    saved = node._saved
    if key in saved:
        v = saved[key]
        if raw:
            return tuple(v) if isinstance(v, list) else v
        v = _unpack(v)
        return tuple(v) if isinstance(v, list) else v
    values = node._values
    if key in values and not raw:
        v = values[key]
        return tuple(v) if isinstance(v, list) else v
    r = node._results
    if key == "result" and r and r[0] is not None:
        get = (lambda x: x) if raw else _unpack
        return get(r[0]) if len(r) == 1 else tuple(get(x) for x in r)
    metas = node._metas
    if key.endswith("_sym_sizes") and key[:-10] in metas and not raw:
        return tuple(metas[key[:-10]].shape)
    prefix = "_raw_saved_" if raw else "_saved_"
    raise AttributeError(f"'{node._name}' object has no attribute '{prefix}{key}'")


def _saved_property(key: str, raw: bool):
    return property(lambda node: _saved_attr(node, key, raw))


_EXPOSED: set = set()       # the keys FormulaNode has properties for


def _expose_saved(op) -> None:
    """Give FormulaNode the ``_saved_*`` / ``_raw_saved_*`` properties of ``op``'s arguments
    (``<name>`` and ``<name>_sym_sizes``) and result (once per key)."""
    for name in [a.name for a in op.schema.arguments] + ["result"]:
        for key in (name, name + "_sym_sizes"):
            if key not in _EXPOSED:
                _EXPOSED.add(key)
                setattr(FormulaNode, "_saved_" + key, _saved_property(key, False))
                setattr(FormulaNode, "_raw_saved_" + key, _saved_property(key, True))


def _unpack(v):
    if isinstance(v, SavedTensor):
        return v.unpack()
    if isinstance(v, list) and v and isinstance(v[0], SavedTensor):
        return [s.unpack() for s in v]
    return v


_NODE_CLASSES: dict = {}


def node_class(name: str, base=FormulaNode):
    """The node class named ``name`` (``MulBackward0``), made once: ``type(node).__name__`` and
    ``node.name()`` are PyTorch's names."""
    cls = _NODE_CLASSES.get((name, base))
    if cls is None:
        cls = _NODE_CLASSES[(name, base)] = type(name, (base,), {"_name": name})
    return cls


class NotImplementedNode(Node):
    """An op with no formula: backward through it raises (PyTorch's ``not_implemented``)."""

    def __init__(self, op, edges, n_out):
        super().__init__(edges)
        self._op = op
        self._num_inputs = n_out

    def apply(self, grads):
        raise RuntimeError(f"the derivative for '{self._op.name}' is not implemented.")


def _differentiable(t) -> bool:
    return isinstance(t, _Tensor) and t.dtype.is_floating_point


def _flat_outputs(out) -> list:
    if isinstance(out, _Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            if isinstance(o, (list, tuple)):
                flat.extend(o)
            else:
                flat.append(o)
        return flat
    return []


def _requires_grad(v) -> bool:
    if isinstance(v, _Tensor):
        return v.requires_grad
    if isinstance(v, (list, tuple)):
        return any(isinstance(x, _Tensor) and x.requires_grad for x in v)
    return False


class AutogradLayer:
    """The callable installed with ``sk.set_autograd_layer``; ``view_grad_fn`` regenerates a
    stale view's node for ``Tensor.grad_fn``."""

    def __init__(self):
        self._formulas: dict = {}       # op -> Formula, or None (non-differentiable / missing)

    def view_grad_fn(self, view):
        node = AsStridedBackward0(view._base, view)
        set_history(view, node, 0)
        view._view_version = view._version
        return node

    def alias_grad_fn(self, source, alias):
        """Record ``alias`` (``Tensor.as_subclass``, made without dispatching) as PyTorch's
        ``self.alias()`` is: attached to the graph through ``AliasBackward0``."""
        formula = F.FORMULAS["alias.default"]
        _expose_saved(sk.ops.alias.default)
        node = node_class(formula.node)(
            formula, {}, {}, {"self": F.TensorMeta.of(source)}, None,
            [F.TensorMeta.of(alias)], (True,), [gradient_edge(source)], None)
        _attach(sk.ops.alias.default, node, [alias], (source,))
        return node

    def _formula(self, op):
        try:
            return self._formulas[op]
        except KeyError:
            pass
        key = f"{op.name}.{op.overload}"
        formula = F.FORMULAS.get(key)
        if formula is None and key not in F.NON_DIFFERENTIABLE and op.is_inplace:
            fv = op.functional_variant
            if fv is not None:
                formula = F.FORMULAS.get(f"{fv.name}.{fv.overload}")
        self._formulas[op] = formula
        return formula

    def __call__(self, op, args, kwargs):
        # (With grad mode off the core does not call the layer at all: Note [Autograd layer].)
        if not _grad_enabled() or _inference():
            return _redispatch(op, args, kwargs)
        if op.is_out:       # refused here when an argument requires grad, as VariableType does
            _check_inplace_call(op, args, kwargs)
            return _redispatch(op, args, kwargs)
        for a in args:
            if a.__class__ is _Tensor:      # the common case, inline
                if a._requires_grad or (a._base is not None and a._base._requires_grad):
                    if a._inference and not _any_normal_tensor(args, kwargs):
                        return _redispatch(op, args, kwargs)
                    break
            elif _requires_grad(a):
                if not _any_normal_tensor(args, kwargs):
                    return _redispatch(op, args, kwargs)
                break
        else:
            if not (kwargs and any(_requires_grad(v) for v in kwargs.values())
                    and _any_normal_tensor(args, kwargs)):
                return _redispatch(op, args, kwargs)
        if op.mutated_args:
            # PyTorch's check_inplace, in VariableType: modes and handlers see no refused call
            _check_inplace_call(op, args, kwargs)
        if op.namespace:
            custom = _custom_autograd(op)
            if custom is not None:
                from .function import apply_custom_op
                return apply_custom_op(op, custom, args, kwargs)
        plan = _SIMPLE.get(op)
        if plan is not None and not kwargs and len(args) >= plan[1]:
            return _record_simple(op, plan, args)
        formula = self._formula(op)
        if formula is None:
            key = f"{op.name}.{op.overload}"
            if key in F.NON_DIFFERENTIABLE or (op.is_inplace and op.functional_variant is not None
                                               and _nondiff(op.functional_variant)):
                return _redispatch(op, args, kwargs)
            return _record_missing(op, args, kwargs)
        return _record(op, formula, args, kwargs)


def _nondiff(op) -> bool:
    return f"{op.name}.{op.overload}" in F.NON_DIFFERENTIABLE


def _custom_autograd(op):
    if not op.namespace:
        return None
    return sk.library.get_autograd(op)


def _record_missing(op, args, kwargs):
    edges = [gradient_edge(a) for a in args if isinstance(a, _Tensor) and a.requires_grad]
    out = _redispatch(op, args, kwargs)
    outs = _flat_outputs(out)
    node = NotImplementedNode(op, edges, len(outs))
    _attach(op, node, outs, args)
    return out


def _edge(v):
    """``gradient_edge`` of a tensor that requires grad; a plain non-view tensor inline."""
    if v.__class__ is _Tensor and v._base is None:
        fn = v._grad_fn
        if fn is not None:
            return (fn, v._output_nr)
        return (grad_accumulator(v), 0)
    return gradient_edge(v)


def _needs_grad(v) -> bool:
    if v.__class__ is _Tensor:
        return v._requires_grad or (v._base is not None and v._base._requires_grad)
    return isinstance(v, _Tensor) and v.requires_grad


_PLANS: dict = {}       # op -> (overload key, node class or None when it depends on the call)


def _plan(op, formula):
    _expose_saved(op)
    key = f"{op.name}.{op.overload}"
    if key in F.NODE_NAMES or formula.numbers:
        cls = None
    else:
        cls = node_class(formula.node)
    plan = _PLANS[op] = (key, cls)
    if _is_simple(op, formula, cls):
        _SIMPLE[op] = _simple_plan(op, formula, cls)
    return plan


# Note [Simple records]: most recorded calls are of an out-of-place op with one Tensor output,
# single-Tensor differentiable inputs and one node class (addmm, mul, tanh, mean ...). Their
# record is planned once per op (``_simple_plan``) and ``_record_simple`` runs the plan: the
# same node, saved tensors and metadata as ``_record`` builds, without its general cases
# (Tensor[] inputs, in-place rebase, per-call node names, several outputs). An op gets a plan
# after its first record through ``_record``.
_SIMPLE: dict = {}      # op -> plan, see _simple_plan


def _is_simple(op, formula, cls) -> bool:
    schema = op.schema
    args = {a.name: a for a in schema.arguments}
    return (cls is not None and not op.is_inplace and not formula.outputs
            and not any(a.is_tensor_list for a in schema.arguments)
            and len(schema.returns) == 1 and schema.returns[0].type == "Tensor"
            and all(name in args and args[name].is_tensor and not args[name].kwarg_only
                    for name in formula.inputs)
            and all(s == "result" or (s in args and not args[s].is_tensor_list)
                    for s in formula.save))


def _simple_plan(op, formula, cls) -> tuple:
    """``(formula, min_args, names, defaults, input_positions, saves, cls, keyword_values)``.
    ``min_args``: the fewest positional arguments a call may give for the plan to apply (the
    defaults after them are immutable values). Keyword-only arguments are never given (the
    registry binds a call with keywords, and ``__call__`` plans only calls without): their
    defaults are values of every node, ``keyword_values``, one dict the nodes of the op share
    while a call has no value argument of its own (nodes only read their values). ``saves``:
    a cache, by the inputs' needs, of what is saved (``_saves``)."""
    arguments = [a for a in op.schema.arguments if not a.kwarg_only]
    names = tuple(a.name for a in arguments)
    defaults = tuple(a.default_value if a.default is not None else None for a in arguments)
    min_args = len(arguments)
    while min_args and arguments[min_args - 1].default is not None and not isinstance(
            defaults[min_args - 1], list):
        min_args -= 1
    keyword = [a for a in op.schema.arguments if a.kwarg_only]
    if any(a.is_tensor or a.default is None or isinstance(a.default_value, list)
           for a in keyword):
        min_args = len(arguments) + 1       # never planned (no such op is recorded often)
    keyword_values = {a.name: a.default_value for a in keyword if a.default is not None}
    inputs = tuple(names.index(n) for n in formula.inputs)
    return (formula, min_args, names, defaults, inputs, {}, cls, keyword_values)


def _saves(formula, needs: tuple) -> tuple:
    """``(saved argument names, whether the result is saved)`` for a call whose inputs need
    gradients as ``needs``: PyTorch saves a tensor only when an input whose gradient uses it
    needs one (``formula.save_for``)."""
    save = set(formula.save)
    for name, users in formula.save_for:
        if not any(needs[u] for u in users):
            save.discard(name)
    return frozenset(save - {"result"}), "result" in save


def _record(op, formula, args, kwargs):
    bound = F.bind(op, args, kwargs)
    inplace = op.is_inplace
    self_arg = bound.get("self") if inplace else None
    rebase = (inplace and self_arg is not None and self_arg._base is not None
              and "inplace_view" not in op.tags)
    needs, edges = [], []
    widths = None
    for i, name in enumerate(formula.inputs):
        v = bound.get(name)
        if isinstance(v, (list, tuple)):
            if widths is None:
                widths = [None] * len(formula.inputs)
            widths[i] = len(v)
            flags = [_needs_grad(x) for x in v]
            needs.append(any(flags))
            edges.extend(_edge(x) if f else None for x, f in zip(v, flags))
        else:
            rg = _needs_grad(v)
            needs.append(rg)
            if rg and rebase and v is self_arg:
                edges.append(None)      # CopySlices takes the base's edge instead
            else:
                edges.append(_edge(v) if rg else None)
    if True not in needs:
        return _redispatch(op, args, kwargs)
    metas, values, saved = {}, {}, {}
    save = formula.save
    if formula.save_for:
        save = set(save)
        for name, users in formula.save_for:
            if not any(needs[i] for i in users):
                save.discard(name)
    meta_of = F.TensorMeta.of
    for name, v in bound.items():
        if isinstance(v, _Tensor):
            metas[name] = meta_of(v)
            if name in save:
                saved[name] = _save(v, inplace and name == "self")
            continue
        m = F._meta(v) if isinstance(v, (list, tuple)) else None
        if m is not None:
            metas[name] = m
        if name in save:
            saved[name] = _save(v, inplace and name == "self")
        elif m is None:
            values[name] = v
    out = _redispatch(op, args, kwargs)
    outs = _flat_outputs(out)
    grad_outs = outs
    if formula.outputs:         # output_differentiability: the others stay without grad
        grad_outs = [o if keep else None for o, keep in zip(outs, formula.outputs)]
    out_metas = [meta_of(o) if o.__class__ is _Tensor and o._dtype.is_floating_point
                 else (meta_of(o) if _differentiable(o) else None) for o in grad_outs]
    plan = _PLANS.get(op) or _plan(op, formula)
    cls = plan[1] or node_class(F.call_node_name(plan[0], formula, bound))
    node = cls(formula, values, saved, metas, None, out_metas, tuple(needs), edges, widths)
    owner = node                # the node a saved output is unpacked with
    if rebase:
        base = self_arg._base
        set_history(base, CopySlices(base, self_arg, node), 0)
        if formula.save and formula.save[-1].startswith("result"):
            # PyTorch's rebase_history regenerates the view's node now, and a saved output of
            # an in-place op on a view unpacks with it (held weakly), not with the node that
            # CopySlices wraps: a double backward then goes through CopySlices
            owner = self_arg.grad_fn
    else:
        _attach(op, node, grad_outs, args)
    # outputs are saved once they have their history, as PyTorch's
    if "result" in save:        # (``save_for`` may leave it out: ``pow``'s, for the exponent)
        node._results = [_save_output(o, owner, i, out_metas) for i, o in enumerate(outs)]
    elif formula.save and formula.save[-1].startswith("result") and formula.save[-1] != "result":
        # "result<i>": only output i is saved (``nll_loss`` keeps ``total_weight``, not the loss)
        node._results = [_save_output(o, owner, i, out_metas) if f"result{i}" in save else None
                         for i, o in enumerate(outs)]
    return out


def _record_simple(op, plan, args):
    """``_record`` for a planned op (Note [Simple records]): positional ``args`` only."""
    formula, _, names, defaults, inputs, saves, cls, keyword_values = plan
    n = len(names)
    full = args if len(args) == n else args + defaults[len(args):n]
    needs, edges = [], []
    for i in inputs:
        v = full[i]
        if v.__class__ is _Tensor:
            base = v._base
            if base is None:
                if v._requires_grad:
                    fn = v._grad_fn
                    edges.append((fn, v._output_nr) if fn is not None
                                 else (grad_accumulator(v), 0))
                    needs.append(True)
                    continue
            elif v._requires_grad or base._requires_grad:
                edges.append(gradient_edge(v))
                needs.append(True)
                continue
        elif isinstance(v, _Tensor) and v.requires_grad:
            edges.append(gradient_edge(v))
            needs.append(True)
            continue
        edges.append(None)
        needs.append(False)
    if True not in needs:
        return _redispatch(op, args, {})
    needs = tuple(needs)
    planned = saves.get(needs)
    if planned is None:
        planned = saves[needs] = _saves(formula, needs)
    save, save_result = planned
    metas, saved = {}, {}
    values = keyword_values     # shared until a call has a value of its own
    for name, v in zip(names, full):
        if isinstance(v, _Tensor):
            metas[name] = _meta_of(v)
            if name in save:
                saved[name] = SavedTensor(v)
        elif name in save:
            saved[name] = v
        else:
            if values is keyword_values:
                values = dict(keyword_values)
            values[name] = v
    out = _redispatch(op, args, {})
    if (out._dtype.is_floating_point if out.__class__ is _Tensor else _differentiable(out)):
        node = cls(formula, values, saved, metas, None, (_meta_of(out),), needs, edges, None)
        out._grad_fn = node
        out._output_nr = 0
        out._requires_grad = True
        if out._base is not None:
            out._view_version = out._version
        if save_result:     # saved once it has its history, as PyTorch (a pack hook sees it)
            node._results = [SavedTensor(out, is_output=True, node=node)]
    return out


_meta_of = F.TensorMeta.of


def _save_output(o, node, i, out_metas):
    """Output ``i`` saved for backward: detached when it gets ``node`` as its grad_fn, as
    itself when it is not differentiable (PyTorch saves a leaf as is: ``native_layer_norm``'s
    mean and rstd show no ``detach``)."""
    if out_metas[i] is None:
        return SavedTensor(o)
    return SavedTensor(o, is_output=True, node=node, output_nr=i)


def _save(v, clone: bool):
    """Save an argument for backward: tensors (and lists of them) as ``SavedTensor``; the
    ``self`` of an in-place op is cloned first (its value before the op is what the formula
    needs), recorded as PyTorch's ``original_self = self.clone()`` (for double backward)."""
    if isinstance(v, _Tensor):
        if v.is_inference():
            raise RuntimeError(INFERENCE_SAVED)
        if clone:
            v = sk.ops.clone.default(v)
        return SavedTensor(v)
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, _Tensor) for x in v):
        return [SavedTensor(x) for x in v]
    return v


def _attach(op, node, outs, args):
    for i, o in enumerate(outs):
        if _differentiable(o):
            old = o._grad_fn
            if old is not None and old._retain:     # an in-place op's self: retain_grad moves
                set_history(o, node, i)
            o._grad_fn = node
            o._output_nr = i
            o._requires_grad = True
            if o._base is not None:
                o._view_version = o._version
