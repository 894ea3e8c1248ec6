"""Custom differentiable functions: ``sk.autograd.Function`` (PyTorch's
``torch.autograd.Function``, both the ``forward(ctx, ...)`` and the ``setup_context`` styles)
and the autograd of custom ops registered with ``sk.library.register_autograd``."""

from __future__ import annotations

import inspect
import warnings
import weakref

import subclass_kit as sk

from .formulas import _expandable, sum_to
from .graph import Node, SavedTensor, gradient_edge, retain_on_new_grad_fn
from .layer import CopySlices

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
        self._input_metas = ()
        self._tensor_positions = ()
        self._out_metas = []

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, sk.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._saved = [None if t is None else SavedTensor(t, is_output=False, node=self)
                       for t in tensors]

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
            for i, m in enumerate(self._out_metas):
                if grads[i] is None and m is not None:
                    grads[i] = sk.zeros(m[0], dtype=m[1], device=m[2])
        res = self._backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        return self._validate(res)

    def _validate(self, res):
        """PyTorch's ``PyNode::apply`` and the engine's ``validate_outputs``: one gradient per
        forward argument (extra trailing Nones dropped), None for every non-tensor argument,
        each gradient of its input's shape (or one the input broadcasts to: summed down) and
        dtype (cast)."""
        n = self._n_args
        if len(res) > n and all(r is None for r in res[n:]):
            res = res[:n]
        if len(res) != n:
            raise RuntimeError(f"function {self._name} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(res)})")
        tensor_positions = self._tensor_positions
        for i, r in enumerate(res):
            if r is not None and i not in tensor_positions:
                raise RuntimeError(f"function {self._name} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding forward "
                                   f"input was not a Variable")
        out = []
        for p, (shape, dtype) in zip(self._input_positions, self._input_metas):
            g = res[p]
            if g is not None:
                gshape = tuple(g.shape)
                if gshape != shape:
                    if not _expandable(shape, gshape):
                        raise RuntimeError(
                            f"Function {self._name} returned an invalid gradient at index "
                            f"{tensor_positions.index(p)} - got {list(gshape)} but expected "
                            f"shape compatible with {list(shape)}")
                    g = sum_to(g, shape)
                if g.dtype != dtype:
                    g = g.to(dtype)
            out.append(g)
        return out


def _record_inputs(ctx, args, rg):
    """The node's edges and what its backward's gradients are checked against."""
    ctx._next = tuple(gradient_edge(a) for _, a in rg)
    ctx._input_positions = tuple(i for i, _ in rg)
    ctx._input_metas = tuple((tuple(a.shape), a.dtype) for _, a in rg)
    ctx._tensor_positions = tuple(i for i, a in enumerate(args) if isinstance(a, sk.Tensor))
    ctx._n_args = len(args)


def _tensors_requiring_grad(args):
    return [(i, a) for i, a in enumerate(args) if isinstance(a, sk.Tensor) and a.requires_grad]


def _wrap_outputs(ctx, args, out, name):
    """Give the outputs of a custom function their node; views of inputs are marked as made in a
    custom Function (their in-place use then raises, SEMANTICS.md §3.4)."""
    outs = out if isinstance(out, tuple) else (out,)
    # every tensor output gets a zero gradient when none reaches it (materialize_grads), also a
    # non-differentiable one, in its own dtype (PyTorch's output_info)
    ctx._out_metas = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, sk.Tensor) else None
                      for o in outs]
    ctx._num_inputs = len(outs)
    non_diff = {id(t) for t in ctx._non_diff}
    dirty = {id(t) for t in ctx._dirty}
    new = []
    for i, o in enumerate(outs):
        if not isinstance(o, sk.Tensor):
            new.append(o)
            continue
        if id(o) in non_diff or not o.dtype.is_floating_point:
            new.append(_without_history(o, args, dirty))
            continue
        if any(o is a for a in args) and id(o) not in dirty:
            with sk.no_grad():
                o = o.view_as(o)            # an input returned as-is comes back as a view
        if id(o) in dirty and _rebase_dirty(ctx, o, args, len(outs)):
            new.append(o)
            continue
        if o._base is not None and id(o) not in dirty:
            o._creation_meta = sk.CreationMeta.IN_CUSTOM_FUNCTION
            o._view_grad = True
            o._view_op = (name, i)
            o._view_version = o._version
        old = o._grad_fn if id(o) in dirty else None
        o._grad_fn = ctx
        o._output_nr = i
        o._requires_grad = True
        if old is not None:
            retain_on_new_grad_fn(o, old)
        new.append(o)
    _saved_outputs_detached(ctx, new)
    return tuple(new) if isinstance(out, tuple) else new[0]


def _saved_outputs_detached(ctx, outs):
    """Saved tensors that turned out to be outputs of the node are kept detached, as PyTorch's
    ``_save_variables`` does once the forward returned: the output holds the node, so the node
    must not hold the output (a reference cycle only the garbage collector would free)."""
    for k, s in enumerate(ctx._saved or ()):
        if s is None or s._is_output:
            continue
        if s._unpack is not None:       # stored by hooks: unpacked with the node as grad_fn
            for i, o in enumerate(outs):
                if o is s._t() and isinstance(o, sk.Tensor) and o._grad_fn is ctx:
                    s._is_output, s._output_nr = True, i
                    s._node = weakref.ref(ctx)
                    break
            continue
        for i, o in enumerate(outs):
            if o is s._t and isinstance(o, sk.Tensor) and o._grad_fn is ctx:
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

    setup_context = None

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._ctx_class(cls._backward_name)
        separate = cls.setup_context is not None and \
            getattr(cls.setup_context, "__func__", cls.setup_context) is not \
            getattr(Function.setup_context, "__func__", None)
        if separate:
            # As PyTorch: the call is bound to ``forward``'s signature with its defaults,
            # so ``setup_context`` sees every input and a tensor passed by keyword is one.
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        rg = _tensors_requiring_grad(args) if sk.is_grad_enabled() and \
            not sk.is_inference_mode_enabled() else []
        ctx.needs_input_grad = tuple(isinstance(a, sk.Tensor) and a.requires_grad
                                     for a in args)
        if rg:      # the edges are the inputs' histories before the forward, as PyTorch's
            _record_inputs(ctx, args, rg)
        with sk.no_grad():
            if separate:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        if ctx._dirty:
            _mark_dirty(ctx, args)
        if not rg:
            dirty = {id(t) for t in ctx._dirty}
            if isinstance(out, tuple):
                return tuple(_without_history(o, args, dirty) for o in out)
            return _without_history(out, args, dirty)
        ctx._backward = cls.backward
        return _wrap_outputs(ctx, args, out, cls.__name__)


def _mark_dirty(ctx, args):
    """PyTorch's ``_mark_dirty``: each tensor given to ``ctx.mark_dirty`` has its version
    bumped once, in any grad mode."""
    for t in ctx._dirty:
        if not any(t is a for a in args):
            warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input "
                          "Tensors that have been mutated should be passed to "
                          "ctx.mark_dirty().", stacklevel=3)
        vc = t._vc
        if vc is not None:          # inference tensors have no counter
            vc[0] += 1


def _without_history(o, args, dirty):
    """An output that gets no node (none is recorded, or it is non-differentiable), as
    PyTorch's ``_wrap_outputs``: an input returned as is comes back as a new alias (a view
    when it does not require grad, else detached), another output requiring grad is
    detached; the caller's tensors keep their ``requires_grad``."""
    if not isinstance(o, sk.Tensor):
        return o
    is_input = any(o is a for a in args)
    if not o.requires_grad:
        if is_input and id(o) not in dirty:
            with sk.no_grad():
                o = o.view_as(o)
    elif is_input:
        o = o.detach()
    elif o._base is None:
        o.detach_()
    if o._base is not None and id(o) not in dirty:
        o._creation_meta = sk.CreationMeta.IN_CUSTOM_FUNCTION    # a view it returned
    return o


def _rebase_dirty(ctx, o, args, n_outputs):
    """The checks and the history of an input the forward modified in place (PyTorch's
    ``_wrap_outputs`` with ``rebase_history``). A view's root base is rebased onto a
    ``CopySlices`` wrapping the node, as for a built-in in-place op on a view; the view's own
    ``grad_fn`` is regenerated when next read. Returns whether ``o`` was such a view."""
    if o._grad_fn is None and o.requires_grad:     # is_leaf as the raw field, as PyTorch's
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                           "operation.")
    base = o._base
    if base is None:
        return False
    if n_outputs > 1:
        raise RuntimeError(
            "If your Function modifies inplace an input that is a view of another Tensor, your "
            "Function cannot return more than one Tensor. This is not supported by the current "
            "autograd engine. You should either make sure the input is not a view (using "
            ".clone() for example) or make your Function only return one Tensor (potentially "
            "splitting it into two Functions: one doing the inplace that returns a single "
            "Tensor and a second one that does the other operations). You can ask on the forum "
            "https://discuss.pytorch.org/ if you need help to do this change.")
    if o._creation_meta != sk.CreationMeta.DEFAULT:
        # (the core's text for an in-place op on such a view; no public name reaches it)
        raise RuntimeError(sk.inplace_checks.view_rebase_message(o, direct=True))
    if base.requires_grad and base._grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    position = next(i for i, a in enumerate(args) if a is o)
    if position not in ctx._input_positions:
        # a view that did not require grad: it gets a gradient slot (its edge is the base's)
        k = sum(1 for p in ctx._input_positions if p < position)
        ctx._input_positions = ctx._input_positions[:k] + (position,) + ctx._input_positions[k:]
        ctx._input_metas = (ctx._input_metas[:k] + ((tuple(o.shape), o.dtype),)
                            + ctx._input_metas[k:])
        ctx._next = ctx._next[:k] + (None,) + ctx._next[k:]
    copy = CopySlices(base, o, ctx, ctx._input_positions.index(position))
    old, base._grad_fn = base._grad_fn, copy
    base._output_nr = 0
    base._requires_grad = True
    if old is not None:
        retain_on_new_grad_fn(base, old)
    return True


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
