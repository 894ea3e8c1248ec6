"""FunctionalizeMode: the dispatch mode that runs SEMANTICS.md §6.2 on FunctionalTensorWrappers.

Per op reaching the mode (the op is sorted by its schema):

- **factory** (no tensor argument): run, wrap the outputs (intermediates are functional too);
  ``lift_fresh`` (``sk.tensor`` inside the program) wraps a fresh value.
- **no wrapper argument**: run unchanged (a global tensor stays plain).
- **view op**: no sync; the view (``remove="mutations"``) or its ``*_copy`` of the input's
  value, wrapped in a wrapper sharing the input's storage with one more :class:`ViewMeta`.
- **in-place view op** (``t_``, ``transpose_``, ``unsqueeze_``, ``squeeze_``, ``as_strided_``):
  one more view step on the tensor itself, no data update; ``resize_`` / ``resize_as_`` and
  ``set_`` as PyTorch's functionalization kernels do.
- **mutation** (in-place or ``out=``): sync the arguments, run the functional variant
  (``add_ -> add``, ``copy_ -> copy``, ``foo.out -> foo``, ``normal_ -> normal_functional``) on
  the values, then per mutated argument replace its value, queue the update on its storage and
  sync it (one inverse per view step); the other aliases regenerate lazily.
- **anything else**: sync the wrapper arguments, run on their values, wrap fresh outputs.

The mode does the version/view bookkeeping the core does for subclass handlers (a mode's
result is final): mutated wrappers get ``_version`` +1, view outputs share their input's
version counter and ``_base``.
"""

from __future__ import annotations

import subclass_kit as sk

from .view_meta import ViewMeta, copy_variant
from .wrapper import FunctionalTensorWrapper, replay, wrap_fresh, wrap_view

__all__ = ["FunctionalizeMode", "NON_FUNCTIONAL_MUTATION", "cannot_functionalize"]

ops = sk.ops
FTW = FunctionalTensorWrapper

NON_FUNCTIONAL_MUTATION = (
    'false INTERNAL ASSERT FAILED at "subclass_kit/modes/functionalization/mode.py", please '
    "report a bug to PyTorch. mutating a non-functional tensor with a functional tensor is not "
    "allowed. Please ensure that all of your inputs are wrapped inside of a functionalize() "
    "call.")

RESIZE_VIEW = ("Attempted to resize a view tensor to a larger size. This is not allowed in the "
               "functionalization pass")

# In-place ops whose functional op has another name than the schema rule gives.
_FUNCTIONAL_NAMES = {"normal_.default": ops.normal_functional.default}


def cannot_functionalize(func) -> str:
    return (f"{func.__name__}: this operator cannot be functionalized: it mutates its input and "
            f"has no functional variant in sk.ops")


def functional_variant(func):
    """The out-of-place op functionalization runs for the mutating ``func``, or None."""
    try:
        return _VARIANTS[func]
    except KeyError:
        fv = _VARIANTS[func] = _FUNCTIONAL_NAMES.get(func.__name__) or func.functional_variant
        return fv


_VARIANTS: dict = {}

# Factory overloads that PyTorch's functionalization runs through their CompositeExplicitAutograd
# kernels, so modes below it see the lower op (``ones`` -> ``full``): the graphs of
# ``make_fx(functionalize(f))``.
def _full_of(value):
    def lower(size, dtype=None, **kw):
        return ops.full.default(size, value, dtype=dtype or sk.get_default_dtype(), **kw)
    return lower


_FACTORY_LOWERINGS = {ops.ones.default: _full_of(1), ops.zeros.default: _full_of(0)}


def _is_ftw(x):
    return isinstance(x, FTW)


def _unwrap(x):
    x.sync()
    return x.value


def _unwrap_all(args, kwargs):
    return (sk.pytree.tree_map_only(FTW, _unwrap, args),
            sk.pytree.tree_map_only(FTW, _unwrap, kwargs))


def _wrap_out(out):
    return sk.pytree.tree_map_only(sk.Tensor, wrap_fresh, out)


def _bump(t):
    if t._vc is not None:
        t._vc[0] += 1


def _any(pred, tree) -> bool:
    return any(pred(x) for x in sk.pytree.tree_leaves(tree))


class FunctionalizeMode(sk.DispatchMode):
    """Functionalizes every op on FunctionalTensorWrappers (module docstring).

    ``reapply_views=True`` (``functionalize(remove="mutations")``) replays view steps with the
    view ops; ``False`` (``"mutations_and_views"``) with their ``*_copy`` ops, so the ops it
    forwards contain no view. Follows PyTorch's ``FunctionalTensorMode`` / C++ Functionalize
    key; errors: PyTorch's texts (module ``wrapper``), RuntimeError for ops that cannot be
    functionalized."""

    def __init__(self, reapply_views: bool = True):
        super().__init__()
        self.reapply_views = reapply_views

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if types and FTW in types or _has_wrapper(args, kwargs):
            if func.is_view:
                return self._view(func, args, kwargs)
            if func.is_mutable:
                if "inplace_view" in func.tags:
                    return self._inplace_view(func, args, kwargs)
                return self._mutation(func, args, kwargs)
            uargs, ukwargs = _unwrap_all(args, kwargs)
            out = _wrap_out(func(*uargs, **ukwargs))
            if not self.reapply_views and _any(_differs_from_eager, (args, kwargs)):
                _set_eager_layouts(out, func, args, kwargs)
            return out
        lowered = _FACTORY_LOWERINGS.get(func)
        if lowered is not None:
            return _wrap_out(lowered(*args, **kwargs))   # modes below see the lower op
        out = func(*args, **kwargs)
        if func is ops.lift_fresh.default or not _any(
                lambda x: isinstance(x, sk.Tensor), (args, kwargs)):
            return _wrap_out(out)      # a factory: intermediates are functional too
        return out

    # -- views ------------------------------------------------------------------------------------
    def _view(self, func, args, kwargs):
        src = args[0]
        if not _is_ftw(src):
            return func(*args, **kwargs)
        if func is ops.lift_fresh.default:
            return src
        rest, r = args[1:], self.reapply_views
        value = src.current()      # not synced: a new view regenerates at first use
        if func.schema.returns[0].is_tensor_list:
            outs = (func if r else copy_variant(func))(value, *rest, **kwargs)
            metas = [ViewMeta(func, rest, kwargs, out_index=i, reapply=r)
                     for i in range(len(outs))]
            res = [wrap_view(o, src, m) for o, m in zip(outs, metas)]
            for w in res:
                _track_view(func, src, w, True)
            if not r:
                _set_eager_layouts(res, func, args, kwargs)
            return res
        meta = ViewMeta(func, rest, kwargs, reapply=r)
        w = wrap_view(replay(src.fstorage, (meta,), value), src, meta)
        _track_view(func, src, w, False)
        if not r:
            _set_eager_layouts(w, func, args, kwargs)
        return w

    def _inplace_view(self, func, args, kwargs):
        self_ = args[0]
        if not _is_ftw(self_):
            return func(*args, **kwargs)
        if func in (ops.resize_.default, ops.resize_as_.default):
            return self._resize(func, args, kwargs)
        if func is ops.set_.source_Tensor:
            return self._set(args[0], args[1])
        if func is not ops.set_.source_Tensor and func.name == "set_":
            raise RuntimeError("set_(): setting a FunctionalTensorWrapper to a raw Storage "
                               "cannot be functionalized (use set_(tensor))")
        view_op = func.functional_variant
        meta = ViewMeta(view_op, args[1:], kwargs, reapply=self.reapply_views)
        _meta_check(func, args, kwargs)
        eager = None if self.reapply_views else _eager_layouts(view_op, args, kwargs)
        self_.view_metas = self_.view_metas + (meta,)
        self_.set_value(replay(self_.fstorage, (meta,), self_.current()))
        self_.set_eager_layout(eager[0] if eager else self_._layout)
        self_.has_metadata_mutation = True
        _bump(self_)
        return self_

    def _resize(self, func, args, kwargs):
        self_ = args[0]
        size = list(args[1].shape) if func is ops.resize_as_.default else list(args[1])
        self_.sync()
        value = self_.value
        tmp = ops.resize.default(value, size)
        need = (self_.storage_offset() + tmp.numel()) * self_.dtype.itemsize
        if need > self_.untyped_storage().nbytes():
            if self_.view_metas:
                raise RuntimeError(RESIZE_VIEW)
            fresh = wrap_fresh(tmp)
            self_.fstorage, self_._storage = fresh.fstorage, fresh._storage
            self_.generation = 0
            self_.set_value(tmp)
            self_.was_storage_changed = self_.has_metadata_mutation = True
            _bump(self_)
            return self_
        if tuple(size) != tuple(self_.shape):
            strides, acc = [], 1
            for s in reversed(size):
                strides.append(acc)
                acc *= max(s, 1)
            meta = ViewMeta(ops.as_strided.default, (size, strides[::-1],
                                                     self_.storage_offset()), {},
                            reapply=self.reapply_views)
            self_.view_metas = self_.view_metas + (meta,)
            self_.set_value(replay(self_.fstorage, (meta,), value))
            self_.set_eager_layout(self_._layout)
            self_.has_metadata_mutation = True
            _bump(self_)
        return self_

    def _set(self, self_, source):
        if not _is_ftw(source):
            raise RuntimeError(NON_FUNCTIONAL_MUTATION)
        self_.fstorage.frozen = True
        self_.fstorage, self_._storage = source.fstorage, source._storage
        value = source.current()
        self_.view_metas, self_.generation = source.view_metas, source.generation
        self_.set_value(value)
        self_.eager_layout = source.eager_layout
        self_.was_storage_changed = self_.has_metadata_mutation = True
        _bump(self_)
        return self_

    # -- mutations --------------------------------------------------------------------------------
    def _mutation(self, func, args, kwargs):
        names, mutated_names, fv, fv_args = _mutation_plan(func)
        bound = dict(zip(names, args))
        if kwargs:
            bound.update(kwargs)
        mutated = [bound.get(n) for n in mutated_names]
        if not all(_is_ftw(m) for m in mutated):
            raise RuntimeError(NON_FUNCTIONAL_MUTATION)
        if fv is None:
            raise RuntimeError(cannot_functionalize(func))
        fpos, fkw = [], {}
        for name, kwarg_only in fv_args:
            if name not in bound:
                continue
            v = bound[name]
            if v.__class__ is FTW:
                v.sync()
                v = v.value
            elif isinstance(v, (list, tuple)):
                v = sk.pytree.tree_map_only(FTW, _unwrap, v)
            if kwarg_only:
                fkw[name] = v
            else:
                fpos.append(v)
        out = fv(*fpos, **fkw)
        results = list(out) if isinstance(out, (list, tuple)) else [out]
        if func.is_inplace:
            r, m = results[0], mutated[0]
            if r.shape != m.shape or r.dtype != m.dtype or 0 in m.stride():
                # the in-place op's own error, if any: a result that does not fit ``self``, a
                # dtype it cannot cast back to, a write to an expanded ``self``
                _meta_check(func, args, kwargs)
        else:
            for w, r in zip(mutated, results):
                if w.device != r.device:
                    raise RuntimeError(f"Attempting to copy from device {r.device.type} to "
                                       f"device {w.device.type}, but cross-device copies are "
                                       f"not allowed!")
                if w.dtype != r.dtype:
                    _meta_check(func, args, kwargs)     # "result type ... can't be cast"
        for w, r in zip(mutated, results):
            w.replace(r)
            w.commit_update()
        for w in mutated:
            w.sync()
            _bump(w)
        return mutated[0] if len(mutated) == 1 else tuple(mutated)


def _mutation_plan(func) -> tuple:
    """``(argument names, mutated argument names, functional variant, its arguments as
    (name, kwarg_only))`` of the mutating ``func``, computed once per op."""
    plan = _PLANS.get(func)
    if plan is None:
        fv = functional_variant(func)
        fv_args = () if fv is None else tuple((a.name, a.kwarg_only)
                                              for a in fv.schema.arguments)
        plan = _PLANS[func] = (tuple(a.name for a in func.schema.arguments),
                               tuple(func.mutated_args), fv, fv_args)
    return plan


_PLANS: dict = {}


def _has_wrapper(args, kwargs) -> bool:
    for a in args:
        if a.__class__ is FTW:
            return True
        if isinstance(a, (list, tuple)) and any(x.__class__ is FTW for x in a):
            return True
    return bool(kwargs) and _any(_is_ftw, kwargs)


def _track_view(func, src, w, multi):
    if "not_a_view_for_autograd" in func.tags:
        w._vc = src._vc
        return
    w._set_view_of(src, multi_output=multi)


def _differs_from_eager(x) -> bool:
    return x.__class__ is FTW and x.eager_layout != x._layout


# Room for any layout a stand-in is given: meta storage holds no data.
_META_NUMEL = 2 ** 40


def _eager_layouts(func, args, kwargs):
    """The layouts eager mode gives the tensors ``func`` returns: ``func`` run on meta
    stand-ins laid out as the wrappers' ``eager_layout`` (plain tensors: their own layout).
    None when ``func`` fails on meta (the result keeps its value's layout then)."""
    def stand_in(x):
        lay = x.eager_layout if x.__class__ is FTW else x._layout
        whole = sk.empty(_META_NUMEL, dtype=x.dtype, device="meta")
        return whole.as_strided(lay.sizes, lay.strides, lay.offset)
    with sk.no_dispatch():
        try:
            margs = sk.pytree.tree_map_only(sk.Tensor, stand_in, args)
            mkwargs = sk.pytree.tree_map_only(sk.Tensor, stand_in, kwargs)
            out = func(*margs, **mkwargs)
        except (RuntimeError, NotImplementedError, ValueError, TypeError, IndexError):
            return None
    return [t._layout for t in sk.pytree.tree_leaves(out) if isinstance(t, sk.Tensor)]


def _set_eager_layouts(out, func, args, kwargs):
    """Give the wrappers ``func`` returned the layouts eager mode gives them (Note [as_strided
    addresses the eager storage], wrapper.py); without views only."""
    layouts = _eager_layouts(func, args, kwargs)
    if layouts is None:
        return
    wrappers = [w for w in sk.pytree.tree_leaves(out) if isinstance(w, sk.Tensor)]
    for w, lay in zip(wrappers, layouts):
        if w.__class__ is FTW and lay.sizes == w._layout.sizes:
            w.set_eager_layout(lay)


def _meta_check(func, args, kwargs):
    """Run ``func`` itself on meta stand-ins of its arguments, for the errors only the
    in-place/metadata op raises (shape of an in-place result, dtype cast back)."""
    def meta(x):
        v = x       # a wrapper's geometry mirrors its value's
        return sk.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype,
                                device="meta")
    with sk.no_dispatch():
        margs = sk.pytree.tree_map_only(sk.Tensor, meta, args)
        mkwargs = sk.pytree.tree_map_only(sk.Tensor, meta, kwargs)
        try:
            func(*margs, **mkwargs)
        except NotImplementedError:
            pass
