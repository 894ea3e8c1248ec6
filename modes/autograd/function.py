"""Custom differentiable functions: ``sk.autograd.Function`` (PyTorch's
``torch.autograd.Function``, both the ``forward(ctx, ...)`` and the ``setup_context`` styles)
and the autograd of custom ops registered with ``sk.library.register_autograd``."""

from __future__ import annotations

import functools
import inspect
import warnings

import subclass_kit as sk

from .formulas import TensorMeta, _fit
from .graph import FREED, Node, SavedTensor, gradient_edge, set_history
from .view_nodes import CopySlices

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "apply_custom_op", "once_differentiable"]

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

    @property
    def _raw_saved_tensors(self):
        """The SavedTensor objects (PyTorch's; a saved None is one that refuses hooks)."""
        saved = self._saved or ()
        if any(s is not None and s._freed for s in saved):
            raise RuntimeError(FREED)
        return tuple(_SAVED_NONE if s is None else s for s in saved)

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


class _SavedNone:
    """A saved None as ``_raw_saved_tensors`` shows it."""
    data = unpack_hook = None

    def unpack(self):
        return None

    def register_hooks(self, pack_hook, unpack_hook):
        raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")


_SAVED_NONE = _SavedNone()


def _tensors_requiring_grad(args):
    return [(i, a) for i, a in enumerate(args) if isinstance(a, sk.Tensor) and a.requires_grad]


def _record_inputs(ctx, args, rg):
    """What the node's backward's gradients are checked against: the inputs requiring grad
    (positions, metadata) and each argument's index among the Tensor ones. (The edges,
    ``ctx._next``, are taken before the forward, which may modify an input in place.)"""
    ctx._input_positions = tuple(i for i, _ in rg)
    ctx._input_metas = tuple(TensorMeta.of(a) for _, a in rg)
    ctx._n_args = len(args)
    k = 0
    index = []
    for a in args:
        index.append(k if isinstance(a, sk.Tensor) else None)
        k += isinstance(a, sk.Tensor)
    ctx._tensor_index = tuple(index)


def _check_dirty(ctx, args, out) -> set:
    """The ids of the tensors the forward marked dirty, each bumped once more (PyTorch's
    ``_mark_dirty``). Raises RuntimeError when one of them is not returned; warns for one that
    is not an input."""
    dirty = {id(t) for t in ctx._dirty}
    if not dirty:
        return dirty
    for t in ctx._dirty:
        if t._vc is not None:
            t._vc[0] += 1
    outs = out if isinstance(out, tuple) else (out,)
    if not dirty <= {id(o) for o in outs}:
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all "
                           "be outputs of the Function.")
    for t in ctx._dirty:
        if not any(t is a for a in args):
            msg = ("ctx.mark_dirty() received a tensor that was not an input. Only input "
                   "Tensors that have been mutated should be passed to ctx.mark_dirty().")
            if t._base is not None:     # a view could not be rebased: an error, not a warning
                raise RuntimeError(msg)
            warnings.warn(msg, stacklevel=4)
    return dirty


def _rebase_dirty(ctx, args, o, output_nr, n_outputs):
    """An input the forward modified in place (``mark_dirty``) takes the node as its history,
    as an in-place op's ``self`` does: a leaf requiring grad cannot (a view made without
    grad_fn is a leaf); a view rebases its root base onto a ``CopySlices`` around the node
    (then the function may return only it) after the admission checks of an in-place op."""
    base = o._base
    if o.requires_grad and (o._grad_fn is None if base is None else not o._view_grad):
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                           "operation.")
    o._grad = None              # PyTorch resets a modified input's grad
    if base is None:
        set_history(o, ctx, output_nr)
        return
    if n_outputs > 1:
        raise RuntimeError(
            "If your Function modifies inplace an input that is a view of another Tensor, your "
            "Function cannot return more than one Tensor. This is not supported by the current "
            "autograd engine. You should either make sure the input is not a view (using "
            ".clone() for example) or make your Function only return one Tensor (potentially "
            "splitting it into two Functions: one doing the inplace that returns a single Tensor "
            "and a second one that does the other operations). You can ask on the forum "
            "https://discuss.pytorch.org/ if you need help to do this change.")
    sk.check_inplace_tensor(o)
    position = next(i for i, a in enumerate(args) if a is o)
    edge = next((k for k, p in enumerate(ctx._input_positions) if p == position), None)
    set_history(base, CopySlices(base, o, ctx, edge), 0)


def _output(o, args, dirty, differentiable):
    """One output of a custom function as PyTorch's ``_wrap_outputs`` leaves it before the node
    is attached. Not differentiable (nothing recorded, ``mark_non_differentiable``, an integer
    dtype): an input returned as-is comes back as a view when it does not require grad and
    detached when it does; another output requiring grad that is not a view is detached in
    place. Differentiable: an input returned as-is comes back as a view (the node goes on it,
    not on the input). Then every output that is a view, except a dirty input, is marked as
    made in a custom Function (its in-place use raises, SEMANTICS.md §3.4)."""
    is_input = any(o is a for a in args)
    modified = is_input and id(o) in dirty
    if not differentiable and o.requires_grad:
        if is_input:
            o = o.detach()
        elif o._base is None:
            o.detach_()
    elif is_input and not modified:
        with sk.no_grad():
            o = o.view_as(o)
    if o._base is not None and not modified:
        o._creation_meta = sk.CreationMeta.IN_CUSTOM_FUNCTION
    return o


def _unrecorded_outputs(args, out, dirty):
    """The outputs of a custom function no node is recorded for (``_output``, not
    differentiable)."""
    if isinstance(out, tuple):
        return tuple(_output(o, args, dirty, False) if isinstance(o, sk.Tensor) else o
                     for o in out)
    return _output(out, args, dirty, False) if isinstance(out, sk.Tensor) else out


def _wrap_outputs(ctx, args, out, name):
    """Give the outputs of a custom function their node (``_output`` for what happens to each
    first); with more than one differentiable output, the views among the outputs are marked
    as outputs of a multi-output node (PyTorch's ``CreationMeta::MULTIPLE_OUTPUTS``)."""
    dirty = {id(t) for t in ctx._dirty}
    outs = out if isinstance(out, tuple) else (out,)
    non_diff = {id(t) for t in ctx._non_diff}
    # every Tensor output gets materialized zeros when it receives no gradient, the
    # non-differentiable ones too (PyTorch's output_info covers them all)
    ctx._out_metas = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, sk.Tensor) else None
                      for o in outs]
    diff = [isinstance(o, sk.Tensor) and o.dtype.is_floating_point and id(o) not in non_diff
            for o in outs]
    ctx._num_inputs = len(outs)
    non_diff_outputs = ctx._non_diff_outputs = []
    new = []
    for i, o in enumerate(outs):
        if not isinstance(o, sk.Tensor):
            new.append(o)
            continue
        if not diff[i]:
            non_diff_outputs.append(i)
            new.append(_output(o, args, dirty, False))
            continue
        if id(o) in dirty and any(o is a for a in args):
            _rebase_dirty(ctx, args, o, i, len(outs))
            new.append(o)
            continue
        o = _output(o, args, dirty, True)
        if o._base is not None and id(o) not in dirty:
            o._view_grad = True
            o._view_op = (name, i)
            o._view_version = o._version
        o._grad_fn = ctx
        o._output_nr = i
        o._requires_grad = True
        new.append(o)
    if sum(diff) > 1:
        for o in new:
            if isinstance(o, sk.Tensor) and o._base is not None and id(o) not in dirty:
                o._creation_meta = sk.CreationMeta.MULTI_OUTPUT_NODE
    _save_variables(ctx, new, dirty)
    return tuple(new) if isinstance(out, tuple) else new[0]


def _save_variables(ctx, outs, dirty=()):
    """Pack what ``save_for_backward`` was given, now that the forward has returned and the
    dirty inputs are bumped (PyTorch's ``_save_variables``: the versions the backward checks
    are those of now). A saved output of the node is kept detached (``is_output``): the output
    holds the node (a dirty view: through its base's CopySlices), so the node must not hold
    the output (a reference cycle only the garbage collector would free)."""
    to_save = ctx.__dict__.pop("_to_save", None)
    if to_save is None:
        return
    saved = []
    for t in to_save:
        if t is not None:
            for i, o in enumerate(outs):
                if o is t and (o._grad_fn is ctx or id(o) in dirty):
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
    if not kwargs and len(args) >= len(names) and not defaults:
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

    vjp = backward        # PyTorch's other name for ``backward``: a subclass defines one of them

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
    def _user_backward(cls):
        """The backward the subclass defines (``backward`` or ``vjp``); both raise RuntimeError
        when the backward runs, as PyTorch's ``BackwardCFunction`` does."""
        has_backward = cls.backward is not Function.backward
        has_vjp = cls.vjp is not Function.vjp
        if has_backward and has_vjp:
            def both(ctx, *grads):
                raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function "
                                   "is not allowed. You should only implement one of them.")
            return both
        return cls.vjp if has_vjp else cls.backward

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
        # the edges as they were before the forward (which may modify an input in place)
        ctx._next = tuple(gradient_edge(a) for _, a in rg)
        with sk.no_grad():
            if separate:
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args)
        dirty = _check_dirty(ctx, args, out)
        if not rg:
            return _unrecorded_outputs(args, out, dirty)
        _record_inputs(ctx, args, rg)
        ctx._backward = cls._user_backward()
        out = _wrap_outputs(ctx, args, out, cls.__name__)
        ctx._dirty = ctx._non_diff = ()     # they hold outputs, which hold the node: no cycle
        return out


class InplaceFunction(Function):
    """Kept, as in PyTorch, for old code: a ``Function`` whose instances carry ``inplace``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


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
    ctx._next = tuple(gradient_edge(a) for _, a in rg)
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
