"""Custom differentiable functions: ``sk.autograd.Function`` (PyTorch's
``torch.autograd.Function``, both the ``forward(ctx, ...)`` and the ``setup_context`` styles)
and the autograd of custom ops registered with ``sk.library.register_autograd``."""

from __future__ import annotations

import warnings

import subclass_kit as sk

from .graph import FREED, Node, SavedTensor, gradient_edge, set_history

__all__ = ["Function", "FunctionCtx", "apply_custom_op"]

_redispatch = sk.redispatch_below_autograd


class FunctionCtx(Node):
    """The ``ctx`` of a custom function, which is also its backward node (as in PyTorch):
    ``save_for_backward``, ``saved_tensors`` (version-checked), ``needs_input_grad``,
    ``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``."""

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
        self._saved = [None if t is None else SavedTensor(t, is_output=False, node=self)
                       for t in tensors]

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
            for i, m in enumerate(self._out_metas):
                if grads[i] is None and m is not None:
                    grads[i] = sk.zeros(m[0], dtype=m[1], device=m[2])
        res = self._backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) < len(self._input_positions):
            raise RuntimeError(f"function {self._name} returned an incorrect number of "
                               f"gradients (expected {self._n_args}, got {len(res)})")
        return [res[p] if p < len(res) else None for p in self._input_positions]


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
    from .layer import CopySlices
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
    new = []
    for i, o in enumerate(outs):
        if not isinstance(o, sk.Tensor):
            new.append(o)
            continue
        if not diff[i]:
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
    _saved_outputs_detached(ctx, new, dirty)
    return tuple(new) if isinstance(out, tuple) else new[0]


def _saved_outputs_detached(ctx, outs, dirty=()):
    """Saved tensors that turned out to be outputs of the node are kept detached, as PyTorch's
    ``_save_variables`` does once the forward returned: the output holds the node (a dirty
    view: through its base's CopySlices), so the node must not hold the output (a reference
    cycle only the garbage collector would free)."""
    for k, s in enumerate(ctx._saved or ()):
        if s is None or s._unpack is not None or s._is_output:
            continue
        for i, o in enumerate(outs):
            if o is s._t and isinstance(o, sk.Tensor) and (o._grad_fn is ctx or id(o) in dirty):
                version = s._version
                s = ctx._saved[k] = SavedTensor(o, is_output=True, node=ctx, output_nr=i)
                s._version = version        # the check is against the version at save
                break


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
        ctx = cls._ctx_class(cls._backward_name)
        rg = _tensors_requiring_grad(args) if sk.is_grad_enabled() and \
            not sk.is_inference_mode_enabled() else []
        ctx.needs_input_grad = tuple(isinstance(a, sk.Tensor) and a.requires_grad
                                     for a in args)
        separate = cls.setup_context is not None and \
            getattr(cls.setup_context, "__func__", cls.setup_context) is not \
            getattr(Function.setup_context, "__func__", None)
        # the edges as they were before the forward (which may modify an input in place)
        ctx._next = tuple(gradient_edge(a) for _, a in rg)
        with sk.no_grad():
            if separate:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        dirty = _check_dirty(ctx, args, out)
        for saved in ctx._saved or ():
            # PyTorch saves the tensors once the forward has returned and the dirty ones are
            # bumped: the versions the backward checks are those of now
            if saved is not None and saved._unpack is None:
                saved._version = saved._vc[0]
        if not rg:
            return _unrecorded_outputs(args, out, dirty)
        ctx._input_positions = tuple(i for i, _ in rg)
        ctx._n_args = len(args)
        ctx._backward = cls._user_backward()
        out = _wrap_outputs(ctx, args, out, cls.__name__)
        ctx._dirty = ctx._non_diff = ()     # they hold outputs, which hold the node: no cycle
        return out


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
    ctx._input_positions = tuple(i for i, _ in rg)
    ctx._n_args = len(inputs)
    ctx._backward = backward
    return _wrap_outputs(ctx, inputs, out, base)
