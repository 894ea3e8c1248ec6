"""Custom differentiable functions: ``sk.autograd.Function`` (PyTorch's
``torch.autograd.Function``, both the ``forward(ctx, ...)`` and the ``setup_context`` styles)
and the autograd of custom ops registered with ``sk.library.register_autograd``."""

from __future__ import annotations

import functools
import inspect
import warnings

import subclass_kit as sk

from .formulas import TensorMeta, _fit
from .graph import Node, SavedTensor, gradient_edge, move_retains_grad

__all__ = ["Function", "FunctionCtx", "apply_custom_op", "once_differentiable"]

_redispatch = sk.redispatch_below_autograd


class FunctionCtx(Node):
    """The ``ctx`` of a custom function, which is also its backward node (as in PyTorch):
    ``save_for_backward``, ``saved_tensors`` (version-checked), ``needs_input_grad``,
    ``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``."""

    _apply_without_grads = True

    def __init__(self, name="FunctionBackward"):
        super().__init__()
        self._name = name
        self._saved = None
        self._dirty = ()
        self._non_diff = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._backward = None
        self._input_positions = ()
        self._out_metas = []

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` (or None) for ``backward``. They are packed once the forward has
        returned (saved-tensor hooks run then, versions are recorded then), as PyTorch's
        ``_save_variables`` does. TypeError for anything else."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, sk.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self):
        return tuple(None if s is None else s.unpack() for s in self._saved or ())

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    def release(self):
        for s in self._saved or ():
            if s is not None:
                s.free()

    def apply(self, grads):
        grads = list(grads)
        if self.materialize_grads:
            skip = () if self.__dict__.get("_materialize_non_diff_grads", True) else \
                self.__dict__.get("_non_diff_outputs", ())
            for i, m in enumerate(self._out_metas):
                if grads[i] is None and m is not None and i not in skip:
                    grads[i] = sk.zeros(m[0], dtype=m[1], device=m[2])
        res = self._backward(self, *grads)
        return self._checked_grads(res if isinstance(res, tuple) else (res,))

    def _checked_grads(self, res: tuple) -> list:
        """The gradients ``backward`` returned, one per forward input (extra Nones dropped),
        checked and fitted as PyTorch's ``PyNode::apply`` and ``validate_outputs`` do: a
        Tensor or None for each Tensor input, None for the others; the input's shape or one it
        broadcasts to (summed down); cast to the input's dtype. RuntimeError otherwise."""
        n = self._n_args
        if len(res) > n and all(g is None for g in res[n:]):
            res = res[:n]
        if len(res) != n:
            raise RuntimeError(f"function {self._name} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(res)})")
        tensor_index = self._tensor_index
        for i, g in enumerate(res):
            if g is None:
                continue
            if tensor_index[i] is None:
                raise RuntimeError(f"function {self._name} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding forward "
                                   "input was not a Variable")
            if not isinstance(g, sk.Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        out = []
        for p, meta in zip(self._input_positions, self._input_metas):
            g = res[p]
            if g is not None and (tuple(g.shape) != meta.shape or g.dtype != meta.dtype):
                g = _fit(g, meta, self._name, tensor_index[p])
            out.append(g)
        return out


def _tensors_requiring_grad(args):
    return [(i, a) for i, a in enumerate(args) if isinstance(a, sk.Tensor) and a.requires_grad]


def _record_inputs(ctx, args, rg):
    """The node's edges and what its backward's gradients are checked against: the inputs
    requiring grad (positions, metadata) and each argument's index among the Tensor ones."""
    ctx._next = tuple(gradient_edge(a) for _, a in rg)
    ctx._input_positions = tuple(i for i, _ in rg)
    ctx._input_metas = tuple(TensorMeta.of(a) for _, a in rg)
    ctx._n_args = len(args)
    k = 0
    index = []
    for a in args:
        index.append(k if isinstance(a, sk.Tensor) else None)
        k += isinstance(a, sk.Tensor)
    ctx._tensor_index = tuple(index)


_DIRTY_VIEW = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function "
    "cannot return more than one Tensor. This is not supported by the current autograd engine. "
    "You should either make sure the input is not a view (using .clone() for example) or make "
    "your Function only return one Tensor (potentially splitting it into two Functions: one "
    "doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do "
    "this change.")


def _wrap_outputs(ctx, args, out, name):
    """Give the outputs of a custom function their node; views of inputs are marked as made in a
    custom Function (their in-place use then raises, SEMANTICS.md §3.4). A dirty input
    (``mark_dirty``) gets a version bump and the node as its history: a leaf requiring grad
    raises, a view rebases its base onto a ``CopySlices`` (then it must be the only output),
    as PyTorch's ``_wrap_outputs`` does."""
    outs = out if isinstance(out, tuple) else (out,)
    # every Tensor output's gradient is materialized (zeros of its dtype) when undefined
    ctx._out_metas = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, sk.Tensor) else None
                      for o in outs]
    ctx._num_inputs = len(outs)
    non_diff = {id(t) for t in ctx._non_diff}
    dirty = {id(t) for t in ctx._dirty}
    for t in ctx._dirty:
        if t._vc is not None:
            t._vc[0] += 1
    new = []
    for i, o in enumerate(outs):
        if not isinstance(o, sk.Tensor):
            new.append(o)
            continue
        is_dirty = id(o) in dirty
        if any(o is a for a in args) and not is_dirty:
            with sk.no_grad():
                o = o.view_as(o)            # an input returned as-is comes back as a view
        if id(o) in non_diff or not o.dtype.is_floating_point:
            ctx._non_diff_outputs = ctx.__dict__.get("_non_diff_outputs", ()) + (i,)
            new.append(o)
            continue
        if is_dirty:
            # (not ``o.grad_fn``: reading it would regenerate a view's node before the rebase)
            if o._base is None and o._grad_fn is None and o._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
            o._grad = None
            if o._base is not None and o._base.requires_grad:
                if len(outs) > 1:
                    raise RuntimeError(_DIRTY_VIEW)
                _rebase_view(o, ctx)
                new.append(o)
                continue
        elif o._base is not None:
            o._creation_meta = sk.CreationMeta.IN_CUSTOM_FUNCTION
            o._view_grad = True
            o._view_op = (name, i)
            o._view_version = o._version
        old, old_nr = o._grad_fn, o._output_nr
        o._grad_fn = ctx
        o._output_nr = i
        o._requires_grad = True
        if old is not None and "_retains_grad" in o.__dict__:     # a dirty input
            move_retains_grad(o, old, old_nr)
        new.append(o)
    _save_variables(ctx, new)
    return tuple(new) if isinstance(out, tuple) else new[0]


def _rebase_view(view, ctx):
    """A view modified in place by a custom Function: its root base's history goes through a
    ``CopySlices`` wrapping the Function's node (its first edge stands for the view, as in
    PyTorch's ``rebase_history``); the view's own node is regenerated lazily."""
    from .layer import CopySlices
    base = view._base
    copy = CopySlices(base, view, ctx)
    old, old_nr = base._grad_fn, base._output_nr
    base._grad_fn, base._output_nr, base._requires_grad = copy, 0, True
    if "_retains_grad" in base.__dict__:
        move_retains_grad(base, old, old_nr)


def _save_variables(ctx, outs):
    """Pack what ``save_for_backward`` was given, now that the forward has returned (PyTorch's
    ``_save_variables``). A saved output of the node is kept detached (``is_output``): the
    output holds the node, so the node must not hold the output (a reference cycle only the
    garbage collector would free)."""
    to_save = ctx.__dict__.pop("_to_save", None)
    if to_save is None:
        return
    saved = []
    for t in to_save:
        if t is not None:
            for i, o in enumerate(outs):
                if o is t and o._grad_fn is ctx:
                    t = SavedTensor(o, is_output=True, node=ctx, output_nr=i)
                    break
            else:
                t = SavedTensor(t, is_output=False, node=ctx)
        saved.append(t)
    ctx._saved = saved


@functools.lru_cache(maxsize=256)
def _positional_params(forward, skip):
    sig = inspect.signature(forward)
    params = [p for p in list(sig.parameters.values())[skip:]
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return sig, params, [p.name for p in params]


def _bind_positional(forward, args, kwargs, skip, defaults):
    """``args`` and ``kwargs`` as the positional arguments of ``forward`` (its first ``skip``
    parameters left out), as PyTorch's ``Function.apply`` binds them: keywords name
    positional-or-keyword parameters; a gap before the last one given takes the parameter's
    default; ``defaults`` (the ``setup_context`` style) binds with ``inspect`` and fills every
    default. Raises TypeError with PyTorch's texts for an unknown, repeated or missing argument."""
    sig, params, names = _positional_params(forward, skip)
    if not kwargs and len(args) >= len(names):
        return args
    if defaults:        # PyTorch binds these with ``inspect`` first (its messages)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        args, kwargs = bound.args, bound.kwargs
    last = len(args)
    for k in kwargs:
        if k not in names or params[names.index(k)].kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"forward() got an unexpected keyword argument '{k}'")
        if names.index(k) < len(args):
            raise TypeError(f"forward() got multiple values for argument '{k}'")
        last = max(last, names.index(k) + 1)
    bound = list(args)
    for i in range(len(args), last):
        p = params[i]
        if p.name in kwargs:
            bound.append(kwargs[p.name])
        elif p.default is not inspect.Parameter.empty:
            bound.append(p.default)
        else:
            raise TypeError(f"forward() missing required argument: '{p.name}' (position {i})")
    return tuple(bound)


class FunctionMeta(type):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        cls._backward_name = f"{name}Backward"
        # the ctx is the node; its class carries PyTorch's node name (``SquareBackward``)
        cls._ctx_class = type(cls._backward_name, (FunctionCtx,), {"_name": cls._backward_name})


class Function(metaclass=FunctionMeta):
    """Subclass with ``forward`` and ``backward`` static methods, call with ``Fn.apply(...)``.

    ``forward(ctx, *args)`` (or ``forward(*args)`` with ``setup_context(ctx, inputs,
    output)``) runs with grad mode off; ``backward(ctx, *grads)`` returns one gradient per
    argument of ``forward`` (None for non-tensors). The node is named ``<Class>Backward``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    setup_context = None

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        separate = cls.setup_context is not None and \
            getattr(cls.setup_context, "__func__", cls.setup_context) is not \
            getattr(Function.setup_context, "__func__", None)
        if kwargs or separate:
            args = _bind_positional(cls.forward, args, kwargs, skip=0 if separate else 1,
                                    defaults=separate)
        ctx = cls._ctx_class(cls._backward_name)
        rg = _tensors_requiring_grad(args) if sk.is_grad_enabled() and \
            not sk.is_inference_mode_enabled() else []
        ctx.needs_input_grad = tuple(isinstance(a, sk.Tensor) and a.requires_grad
                                     for a in args)
        with sk.no_grad():
            if separate:
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args)
        if not rg:
            return out
        _record_inputs(ctx, args, rg)
        ctx._backward = cls.backward
        return _wrap_outputs(ctx, args, out, cls.__name__)


def apply_custom_op(op, registered, args, kwargs):
    """Run a custom op whose autograd was registered with ``sk.library.register_autograd``:
    ``setup_context(ctx, inputs, output)`` after the forward, ``backward(ctx, *grads)``
    returning one gradient per input of the schema."""
    backward, setup_context = registered
    base = op.schema.base_name.replace("::", "_")
    ctx = FunctionCtx(f"GeneratedBackwardFor_{base}_{op.overload}")
    names = [a.name for a in op.schema.arguments]
    inputs = tuple(args) + tuple(kwargs.get(n) for n in names[len(args):])
    rg = _tensors_requiring_grad(inputs)
    ctx.needs_input_grad = tuple(isinstance(a, sk.Tensor) and a.requires_grad for a in inputs)
    out = _redispatch(op, args, kwargs)
    if setup_context is not None:
        setup_context(ctx, inputs, out)
    _record_inputs(ctx, inputs, rg)
    ctx._backward = backward
    return _wrap_outputs(ctx, inputs, out, base)


class Error(Node):
    """A node whose backward raises RuntimeError ``msg`` (PyTorch's ``Error`` node, made by
    ``DelayedError``): marks results that must not be differentiated."""

    _name = "Error"

    def __init__(self, msg: str, edges):
        super().__init__(edges)
        self._msg = msg

    def apply(self, grads):
        raise RuntimeError(self._msg)


def once_differentiable(fn):
    """Decorate a custom Function's ``backward`` that cannot itself be differentiated
    (PyTorch's ``torch.autograd.function.once_differentiable``): it runs with grad mode off;
    when grad mode is on and a gradient it received requires grad (``create_graph``), its
    results come back attached to an ``Error`` node, so differentiating them raises
    "trying to differentiate twice a function that was marked with @once_differentiable"."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with sk.no_grad():
            outputs = fn(ctx, *args)
        if not sk.is_grad_enabled() or not any(
                isinstance(a, sk.Tensor) and a.requires_grad for a in args):
            return outputs
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        leaves = [None if o is None else o.detach().requires_grad_() for o in outputs]
        node = Error("trying to differentiate twice a function that was marked with "
                     "@once_differentiable", [None if v is None else gradient_edge(v)
                                              for v in leaves])
        node._num_inputs = len(leaves)
        results = []
        for i, v in enumerate(leaves):
            if v is not None:
                v = v.data              # an alias with its own version counter
                v._grad_fn, v._output_nr, v._requires_grad = node, i, True
            results.append(v)
        return tuple(results)
    return wrapper
