"""The autograd graph: nodes (PyTorch's ``torch.autograd.graph.Node``), saved tensors with their
version check (SEMANTICS.md §2.3), ``AccumulateGrad`` and ``saved_tensors_hooks``.

A node's ``_next`` holds one edge per differentiable input: ``(node, input_nr)`` or None for an
input that does not require grad (``next_functions`` shows it as ``(None, 0)``). ``apply(grads)``
takes one gradient per output of the forward op and returns one per edge.
"""

from __future__ import annotations

import itertools
import re
import weakref

import subclass_kit as sk

__all__ = ["Node", "SavedTensor", "AccumulateGrad", "saved_tensors_hooks",
           "top_saved_tensors_hooks", "gradient_edge",
           "RemovableHandle"]

_sequence = itertools.count()
_Tensor = sk.Tensor
_detach_op = sk.ops.detach.default
_redispatch = sk.redispatch_below_autograd
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed). Saved intermediate values of the graph are freed "
         "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
         "backward through the graph a second time or if you need to access saved tensors after "
         "calling backward.")
INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`.")


class RemovableHandle:
    """What ``register_hook`` returns: ``remove()`` takes the hook out again."""

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class Node:
    """A backward function of the graph. ``name()`` is PyTorch's node class name
    (``MulBackward0``); ``next_functions`` the edges to the nodes of the inputs."""

    _name = "Node"
    _num_inputs = 1     # gradients it receives (outputs of the forward op)
    # Hooks are rare: the containers are class-level empty ones until a hook is registered
    # (``_own``), so recording a node costs no allocations for them.
    _pre_hooks = ()             # hook(grad_outputs) -> new grad_outputs or None
    _hooks = ()                 # hook(grad_inputs, grad_outputs)
    _tensor_pre_hooks: dict = {}    # output_nr -> [hook(grad)]  (never mutated at class level)
    _retain: dict = {}          # output_nr -> tensor whose .grad keeps the gradient

    def __init__(self, next_edges=()):
        self._next = tuple(next_edges)
        self._seq = next(_sequence)

    def _own(self, name: str, empty):
        """This node's own hook container ``name`` (made from ``empty`` on first use)."""
        box = self.__dict__.get(name)
        if box is None:
            box = self.__dict__[name] = empty
        return box

    @property
    def metadata(self) -> dict:
        return self._own("metadata", {})

    def name(self) -> str:
        return self._name

    @property
    def next_functions(self) -> tuple:
        return tuple((None, 0) if e is None else e for e in self._next)

    def register_hook(self, fn):
        hooks = self._own("_hooks", [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def register_prehook(self, fn):
        hooks = self._own("_pre_hooks", [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def apply(self, grads: list) -> list:
        raise NotImplementedError

    def release(self):
        """Free saved tensors (a backward without ``retain_graph``)."""

    def __call__(self, *grads):
        return self.apply(list(grads))

    def __repr__(self):
        return f"<{self._name} object at {hex(id(self))}>"


def forward_name(node) -> str:
    """``AddBackward0`` -> ``Add`` (what the version-check error names)."""
    return _BACKWARD_SUFFIX.sub("", node.name())


class _HookState:
    """The active ``saved_tensors_hooks`` (innermost last)."""
    stack: list = []


def top_saved_tensors_hooks():
    """The innermost active ``(pack, unpack)`` pair of ``saved_tensors_hooks``, or None (what
    PyTorch's ``torch._C._autograd._top_saved_tensors_default_hooks`` answers): lets a hook
    that wraps saving (checkpointing, ``modes.MemTracker``) still call the one outside it."""
    return _HookState.stack[-1] if _HookState.stack else None


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it are stored as ``pack(tensor)`` and
    given back as ``unpack(packed)`` (PyTorch's ``torch.autograd.graph.saved_tensors_hooks``)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        _HookState.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _HookState.stack.pop()
        return False


def _type_string(t) -> str:
    return f"[sk.{t.dtype.legacy_name} [{', '.join(str(s) for s in t.shape)}]]"


class SavedTensor:
    """A tensor saved for backward with the version it had (PyTorch's ``SavedVariable``).

    ``unpack()`` raises RuntimeError when the tensor was modified in place since (PyTorch's
    text, naming the tensor's current node for a saved input, the producing node for a saved
    output) or when the graph was freed by a backward without ``retain_graph``."""

    __slots__ = ("_t", "_vc", "_version", "_is_output", "_output_nr", "_node", "_packed",
                 "_unpack", "_freed", "_edge")

    def __init__(self, t, is_output: bool = False, node=None, output_nr: int = 0):
        if t.is_inference():
            raise RuntimeError(INFERENCE_SAVED)
        self._vc = t._vc        # the alias family's counter, as SavedVariable keeps it
        self._version = t._version
        self._is_output = is_output
        self._output_nr = output_nr
        # Weakly: the node holds its saved tensors, not the other way round (no cycle).
        self._node = None if node is None else weakref.ref(node)
        self._freed = False
        self._packed = self._unpack = None
        if _HookState.stack:
            # With hooks only the packed value is kept (PyTorch's SavedVariable does not hold
            # the tensor then), so a pack hook that drops it (checkpointing, offloading) frees
            # its memory; nor is its version checked when unpacked (PyTorch's neither).
            pack, self._unpack = _HookState.stack[-1]
            self._t = weakref.ref(t)    # only to recognise it as an output (custom Functions)
            # what the unpacked value is attached to (PyTorch's grad_fn_ / grad_accumulator_)
            self._edge = None if is_output or not t.requires_grad else gradient_edge(t)
            self._packed = pack(t)
        elif is_output:
            # PyTorch's SavedVariable keeps an output detached (modes see the ``detach``): the
            # node's output holds the node, and the node must not hold it back, or every graph
            # would be a reference cycle that only the garbage collector frees.
            self._t = _redispatch(_detach_op, (t,), {})
        else:
            self._t = t

    def unpack(self):
        if self._freed:
            raise RuntimeError(FREED)
        if self._unpack is not None:
            # saved through hooks: no version check, as PyTorch (the hooks own the value)
            return self._with_history(self._unpack(self._packed))
        if self._vc[0] != self._version:
            t = self._t
            if self._is_output:
                node, nr = self._node(), self._output_nr
            else:
                node = t.grad_fn if t._base is None or t.requires_grad else None
                nr = t._output_nr
            where = "" if node is None else f", which is output {nr} of {forward_name(node)},"
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {_type_string(t)}{where} is at version {t._version}; "
                f"expected version {self._version} instead. Hint: enable anomaly detection to "
                "find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")
        if self._is_output:
            # a fresh alias with the node as its grad_fn (PyTorch's unpack: ``detach`` again,
            # then the saved edge), so a double backward differentiates through it
            t = _redispatch(_detach_op, (self._t,), {})
            node = self._node()
            if node is not None and t._dtype.is_floating_point:
                t._grad_fn = node
                t._output_nr = self._output_nr
                t._requires_grad = True
            return t
        return self._t

    def _with_history(self, data):
        """What an unpack hook returned, as a new alias carrying the saved tensor's history
        (PyTorch's ``SavedVariable::unpack``: ``make_variable(data, edge)``): the node that made
        it (the saving node for an output) or the leaf's accumulator, so a double backward
        through tensors stored by hooks (checkpointing, offloading) reaches the graph."""
        if not isinstance(data, _Tensor):
            return data
        if self._is_output:
            node = self._node()
            edge = None if node is None else (node, self._output_nr)
        else:
            edge = self._edge
        t = _redispatch(_detach_op, (data,), {})
        if edge is not None and t._dtype.is_floating_point:
            fn, nr = edge
            t._requires_grad = True
            if isinstance(fn, AccumulateGrad):
                t.__dict__["_grad_accumulator"] = fn      # a leaf: its gradient goes there
            else:
                t._grad_fn = fn
                t._output_nr = nr
        return t

    def free(self):
        self._freed = True
        self._t = self._packed = self._unpack = None     # the hooks may hold memory too


def _any_normal_tensor(args, kwargs) -> bool:
    """Whether some tensor argument (lists looked into) is not an inference tensor: an op on
    inference tensors only is not recorded, whatever their requires_grad (docs/differences.md)."""
    for v in (*args, *kwargs.values()) if kwargs else args:
        if any(isinstance(x, _Tensor) and not x._inference
               for x in (v if isinstance(v, (list, tuple)) else (v,))):
            return True
    return False


def retain_on_new_grad_fn(t, old):
    """``t`` got a new ``grad_fn`` from an in-place op (``old`` was its node): a ``retain_grad``
    moves to the new node, other hooks stay on ``old`` (PyTorch's
    ``update_tensor_hooks_on_new_gradfn``), so ``t.grad`` is the gradient of its new value."""
    if not t.__dict__.get("_retains_grad"):
        return
    retained = old.__dict__.get("_retain")
    if retained is not None:
        for nr in [nr for nr, r in retained.items() if r is t]:
            del retained[nr]
    t._grad_fn._own("_retain", {})[t._output_nr] = t


def gradient_edge(t):
    """The edge a gradient for ``t`` flows into: ``(t.grad_fn, output_nr)``, a leaf's
    ``AccumulateGrad``, or None when ``t`` does not require grad."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t.requires_grad:
        return (grad_accumulator(t), 0)
    return None


def grad_accumulator(t):
    """The ``AccumulateGrad`` node of leaf ``t`` (one per tensor, made on first use)."""
    acc = t.__dict__.get("_grad_accumulator")
    if acc is None:
        acc = AccumulateGrad(t)
        t.__dict__["_grad_accumulator"] = acc
    return acc


class AccumulateGrad(Node):
    """Adds the incoming gradient into ``variable.grad`` (PyTorch's ``AccumulateGrad``): the
    first gradient is stored with the leaf's strides (a fresh tensor is taken as is), later
    ones are added in place, or out of place under ``create_graph``."""

    _name = "AccumulateGrad"
    run = None      # the running backward's token: a gradient it handed out more than once
    #                 (or the caller's) carries it as ``_grad_shared`` (``shared(g)``)

    @classmethod
    def shared(cls, g) -> bool:
        return g.__dict__.get("_grad_shared") is cls.run

    def __init__(self, variable):
        super().__init__()
        # Weakly: the leaf holds its accumulator (``grad_accumulator``), so a strong reference
        # back would make every leaf used in a graph a reference cycle, freed only by the
        # garbage collector. (PyTorch has the other direction weak; a leaf nobody holds any
        # more has no ``.grad`` anyone can read.)
        self._variable = weakref.ref(variable)
        self._seq = float("inf")        # runs as soon as it is ready (PyTorch: UINT64_MAX)
        self._post_hooks = []

    @property
    def variable(self):
        """The leaf the gradient accumulates into (None once it is freed)."""
        return self._variable()

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return []
        var = self._variable()
        if var is None:
            return []
        if var.grad is None:
            if not sk.is_grad_enabled():
                # PyTorch steals a gradient no one else holds (detach) and copies one that is
                # shared or breaks the layout contract. We cannot count references: the engine
                # tells which gradient objects it handed out twice (``shared``).
                if g.__class__ is _Tensor and var.__class__ is _Tensor:
                    strides = g._layout.strides
                    copy = (g.__dict__.get("_grad_shared") is AccumulateGrad.run
                            or g._requires_grad or (g._base is not None and g._base._requires_grad)
                            or not (strides == var._layout.strides and 0 not in strides
                                    or _obeys_layout_contract(g, var)))
                else:
                    copy = (self.shared(g) or g.requires_grad
                            or not _obeys_layout_contract(g, var))
                g = _clone_obey_contract(g, var) if copy else _detach(g)
            else:       # setting up for double backward: a copy, recorded
                g = _clone_obey_contract(g, var)
            var.__dict__["grad"] = g
        elif sk.is_grad_enabled():
            var.__dict__["grad"] = var.grad + g
        else:
            var.grad.add_(g)
        for hook in self._post_hooks:
            hook(var)
        return []


def _detach(g):
    """``g.detach()`` as the op itself (PyTorch's engine calls it in C++: no function level)."""
    return _detach_op(g)


def _obeys_layout_contract(g, var) -> bool:
    """PyTorch's ``obeys_layout_contract``: the gradient of a dense leaf has the leaf's strides
    (on dims of size above 1; no zero stride on the others), of any other leaf is contiguous."""
    if not _dense(var):
        return g.is_contiguous()
    for n, gs, vs in zip(g.shape, g.stride(), var.stride()):
        if (gs != vs) if n != 1 else (gs == 0 or vs == 0):
            return False
    return True


def _clone_obey_contract(g, var):
    """PyTorch's ``clone_obey_contract``: a copy of ``g`` with the leaf's strides (a dense
    leaf: ``new_empty_strided`` + ``copy_``), else contiguous (``clone``)."""
    if _dense(var):
        out = sk.ops.new_empty_strided.default(g, list(var.shape), list(var.stride()))
        return sk.ops.copy_.default(out, g)
    return sk.ops.clone.default(g, memory_format=sk.contiguous_format)


def _dense(t) -> bool:
    pairs = sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1)
    expected = 1
    for st, sz in pairs:
        if st != expected:
            return False
        expected *= sz
    return True
