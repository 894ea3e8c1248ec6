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
from typing import NamedTuple

import subclass_kit as sk

from .anomaly_mode import store_stack, version_hint
from .layout_contract import check_result, clone_obey_contract, obeys_layout_contract
from .multi_grad_hook import register_multi_grad_hook  # noqa: F401  (a name of this module)
from .saved_hooks import (HookState, disable_saved_tensors_hooks, save_on_cpu,  # noqa: F401
                          saved_tensors_hooks, top_saved_tensors_hooks)

__all__ = ["Node", "SavedTensor", "AccumulateGrad", "saved_tensors_hooks",
           "disable_saved_tensors_hooks", "save_on_cpu", "top_saved_tensors_hooks",
           "gradient_edge", "set_history", "increment_version", "GradientEdge",
           "get_gradient_edge",
           "RemovableHandle"]

_sequence = itertools.count()
_anomaly = sk.fast_path.anomaly       # [on, check_nan]: while on, new nodes record their call
_Tensor = sk.Tensor
_detach_op = sk.ops.detach.default
_redispatch = sk.redispatch_below_autograd
_grad_enabled = sk.is_grad_enabled
_BACKWARD_SUFFIX = re.compile(r"Backward(\d*)$")

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
    # whether a hook container was made (``_own``): the engine's one read for an unhooked node
    _hooked = False
    # run even when every gradient it receives is undefined (a custom Function's backward
    # then gets zeros or Nones, as in PyTorch); a formula node would return undefined ones
    _apply_without_grads = False

    def __init__(self, next_edges=()):
        self._next = tuple(next_edges)
        self._seq = next(_sequence)
        if _anomaly[0]:
            store_stack(self)

    def _own(self, name: str, empty):
        """This node's own hook container ``name`` (made from ``empty`` on first use)."""
        box = self.__dict__.get(name)
        if box is None:
            box = self.__dict__[name] = empty
            if name != "metadata":
                self._hooked = True
        return box

    @property
    def metadata(self) -> dict:
        return self._own("metadata", {})

    def name(self) -> str:
        """PyTorch's name of the node: ``AddBackward0``; ``torch::autograd::CopySlices`` for
        the nodes PyTorch writes by hand in C++ (``CPP_NODES``). ``repr`` and ``type(node)``
        give the bare class name, as PyTorch's."""
        name = self._name
        return f"torch::autograd::{name}" if name in CPP_NODES else name

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
        """Run the backward function on one gradient per forward output: the gradient of
        the only input, or a tuple of them (TypeError for a wrong count, PyTorch's text)."""
        if len(grads) != self._num_inputs:
            raise TypeError(f"expected {self._num_inputs} arguments, got {len(grads)} instead")
        out = self.apply(list(grads))
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self):
        return f"<{self._name} object at {hex(id(self))}>"


# PyTorch's hand-written C++ nodes (torch/csrc/autograd/functions): ``name()`` has the namespace
CPP_NODES = frozenset({"AccumulateGrad", "CopySlices", "CopyBackwards", "Error", "DelayedError",
                       "GraphRoot", "Identity", "UndefinedGrad"})


def forward_name(node) -> str:
    """``AddBackward0`` -> ``Add``, ``SumBackward1`` -> ``Sum1``, ``MyFnBackward`` -> ``MyFn``
    (what the version-check error names: PyTorch keeps a non-zero variant number)."""
    return _BACKWARD_SUFFIX.sub(lambda m: "" if m.group(1) == "0" else m.group(1), node.name())


def _type_string(t) -> str:
    return f"[sk.{t.dtype.legacy_name} [{', '.join(str(s) for s in t.shape)}]]"


class SavedTensor:
    """A tensor saved for backward with the version it had (PyTorch's ``SavedVariable``).

    ``unpack()`` raises RuntimeError when the tensor was modified in place since (PyTorch's
    text, naming the tensor's current node for a saved input, the producing node for a saved
    output) or when the graph was freed by a backward without ``retain_graph``."""

    __slots__ = ("_t", "_vc", "_version", "_is_output", "_output_nr", "_node", "_packed",
                 "_unpack", "_freed", "_edge", "_had_grad_fn")

    def __init__(self, t, is_output: bool = False, node=None, output_nr: int = 0):
        plain = t.__class__ is _Tensor      # (a subclass may override the accessors)
        if t._inference if plain else t.is_inference():
            raise RuntimeError(INFERENCE_SAVED)
        self._vc = t._vc        # the alias family's counter, as SavedVariable keeps it
        self._version = t._vc[0] if plain else t._version
        self._is_output = is_output
        self._output_nr = output_nr
        # Weakly: the node holds its saved tensors, not the other way round (no cycle).
        self._node = None if node is None else weakref.ref(node)
        self._freed = False
        self._packed = self._unpack = None
        if HookState.stack:
            self._pack(t, node)
        elif is_output:
            # PyTorch's SavedVariable keeps an output detached (modes see the ``detach``): the
            # node's output holds the node, and the node must not hold it back, or every graph
            # would be a reference cycle that only the garbage collector frees.
            self._t = _redispatch(_detach_op, (t,), {})
        else:
            self._t = t
            self._had_grad_fn = t._grad_fn is not None    # (``detach_`` afterwards: unpack raises)

    def _pack(self, t, node, hooks=None):
        """Save through ``hooks`` (the innermost ``saved_tensors_hooks`` by default; PyTorch's
        ``set_hooks_and_pack_data``): only the packed value is kept, with the edge the unpacked
        tensor will have. The pack hook runs with grad mode off on the tensor itself (a saved
        output: an alias with its node) and may not modify it in place."""
        pack, unpack = hooks or HookState.stack[-1]
        self._unpack = unpack
        self._t = None
        if self._is_output:
            self._edge = None           # the node, held weakly (``_node``)
            arg = _redispatch(_detach_op, (t,), {})
            if node is not None and arg._dtype.is_floating_point:
                arg._grad_fn, arg._output_nr, arg._requires_grad = node, self._output_nr, True
        else:
            self._edge = gradient_edge(t)
            arg = t
        version = t._version
        with sk.no_grad():
            self._packed = pack(arg)
        if t._version != version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as "
                "input to pack hook cannot be modified by in-place operations as this can lead "
                "to unexpected side-effects. Please open an issue if you need to perform "
                "in-place operations on the input to a pack hook.")

    def _unpack_hooked(self):
        """What the unpack hook returns, made the saved tensor again for autograd (PyTorch's
        ``SavedVariable::unpack`` with hooks; no version check): an alias with the saved node
        as its grad_fn, or, for a leaf requiring grad, a leaf accumulating into that leaf's
        ``.grad``. A saved constant comes back as returned."""
        data = self._unpack(self._packed)
        if not isinstance(data, sk.Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(data).__name__}")
        if self._is_output:
            node = self._node() if self._node is not None else None
            edge = None if node is None else (node, self._output_nr)
        else:
            edge = self._edge
        if edge is None and not data.requires_grad:
            return data
        out = _redispatch(_detach_op, (data,), {})
        if edge is None or not out._dtype.is_floating_point:
            return out
        out._requires_grad = True
        if edge[0].__class__ is AccumulateGrad:
            out.__dict__["_grad_accumulator"] = edge[0]
        else:
            out._grad_fn, out._output_nr = edge
        return out

    def unpack(self):
        if self._freed:
            raise RuntimeError(FREED)
        if self._unpack is not None:
            return self._unpack_hooked()
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
                f"expected version {self._version} instead. Hint: {version_hint()}")
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
        t = self._t
        if t._grad_fn is None and self._had_grad_fn:
            raise RuntimeError("Trying to use a saved tensor that has been detached in-place, "
                               "i.e. with .detach_().This is not supported, please use "
                               "out-of-place `.detach()` instead")
        return t

    def peek(self):
        """The saved tensor, for reading its data only, when ``unpack()`` would return it (or,
        for a saved output, a fresh alias of it) without raising and without calling a hook;
        None otherwise (freed, modified in place since, detached in place, packed by hooks).
        For the formulas' numpy fast paths (``formulas.fast_formula``): they skip the alias
        ``unpack`` makes of an output, which only a mode could see."""
        if self._freed or self._unpack is not None or self._vc[0] != self._version:
            return None
        t = self._t
        if not self._is_output and t._grad_fn is None and self._had_grad_fn:
            return None
        return t

    # -- what PyTorch's ``grad_fn._raw_saved_<name>`` (``torch._C._autograd.SavedTensor``) has
    @property
    def data(self):
        """The packed object when hooks were used, else the saved tensor."""
        return self._packed if self._unpack is not None else self._t

    @property
    def unpack_hook(self):
        return self._unpack

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Pack the saved tensor now with ``pack_hook`` and unpack it with ``unpack_hook``
        (RuntimeError once freed, or when hooks were set already)."""
        if self._freed:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved variables after calling "
                "backward.")
        if self._unpack is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already "
                               "been set. Hint: only one pair of hooks is allowed at a time.")
        node = self._node() if self._node is not None else None
        self._pack(self._t, node, (pack_hook, unpack_hook))

    def free(self):
        self._freed = True
        self._t = self._packed = self._unpack = None     # the hooks may hold memory too
        self._edge = None


def _any_normal_tensor(args, kwargs) -> bool:
    """Whether some tensor argument (lists looked into) is not an inference tensor: an op on
    inference tensors only is not recorded, whatever their requires_grad (docs/differences.md)."""
    for v in (*args, *kwargs.values()) if kwargs else args:
        if any(isinstance(x, _Tensor) and not x._inference
               for x in (v if isinstance(v, (list, tuple)) else (v,))):
            return True
    return False


def gradient_edge(t):
    """The edge a gradient for ``t`` flows into: ``(t.grad_fn, output_nr)``, a leaf's
    ``AccumulateGrad``, or None when ``t`` does not require grad."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t.requires_grad:
        return (grad_accumulator(t), 0)
    return None


def set_history(t, node, output_nr: int) -> None:
    """Make ``(node, output_nr)`` the history of ``t``, which had another (an in-place op, a
    custom function's ``mark_dirty``, a view's regenerated node): a ``retain_grad`` moves to
    the new node, as PyTorch's ``update_tensor_hooks_on_new_gradfn`` does, so ``t.grad`` is
    the gradient of ``t``'s newest value. Hooks registered earlier stay on the old node."""
    old = t._grad_fn
    if old is not None and old._retain and t.__dict__.get("_retains_grad"):
        if old._retain.get(t._output_nr) is t:
            del old._retain[t._output_nr]
            node._own("_retain", {})[output_nr] = t
    t._grad_fn = node
    t._output_nr = output_nr
    t._requires_grad = True


class GradientEdge(NamedTuple):
    """An edge of the graph, ``(node, output_nr)``: where the gradient of one output of a node
    enters it (PyTorch's ``torch.autograd.graph.GradientEdge``). ``sk.autograd.grad`` and
    ``backward`` take one in place of a tensor, as an output or an input."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge the gradient of ``tensor`` flows into: its ``grad_fn`` and ``output_nr``, or a
    leaf's ``AccumulateGrad`` (PyTorch's ``get_gradient_edge``); it stays valid when the tensor
    later changes history. RuntimeError for a tensor that does not require grad."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    fn = tensor.grad_fn
    if fn is None:
        return GradientEdge(grad_accumulator(tensor), 0)
    return GradientEdge(fn, tensor._output_nr)


def edge_input_meta(node, nr: int):
    """``(shape, dtype)`` of the gradient input ``nr`` of ``node``, when the node records it."""
    if isinstance(node, AccumulateGrad):
        return tuple(node.variable.shape), node.variable.dtype
    metas = getattr(node, "_out_metas", None)
    m = metas[nr] if metas is not None and nr < len(metas) else None
    if m is None:
        return None
    return (tuple(m.shape), m.dtype) if hasattr(m, "shape") else (tuple(m[0]), m[1])


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place op would: PyTorch's ``torch.autograd.graph.increment_version``, for code that
    mutates a tensor behind autograd's back. Inference tensors have no counter: no-op."""
    for t in (tensor,) if isinstance(tensor, _Tensor) else tensor:
        if t._vc is not None:
            t._vc[0] += 1


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
    run = None      # the running backward's (holds, callers): see ``shared``
    _post_hooks = ()    # hook(tensor), after accumulating (``_own``)

    @classmethod
    def shared(cls, g) -> bool:
        """Whether ``g`` is held elsewhere too: the caller's gradient, or one in more than one
        input buffer of the running backward (the engine's ``holds`` and ``callers``)."""
        if cls.run is None:     # applied outside a backward: its caller holds ``g``
            return True
        holds, callers = cls.run
        i = id(g)
        return i in callers or holds.get(i, 0) > 1

    def __init__(self, variable):
        super().__init__()
        # Weakly: the leaf holds its accumulator (``grad_accumulator``), so a strong reference
        # back would make every leaf used in a graph a reference cycle, freed only by the
        # garbage collector. (PyTorch has the other direction weak; a leaf nobody holds any
        # more has no ``.grad`` anyone can read.)
        self._variable = weakref.ref(variable)
        self._seq = float("inf")        # runs as soon as it is ready (PyTorch: UINT64_MAX)

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
        if var._grad is None:
            if not _grad_enabled():
                # PyTorch steals a gradient no one else holds (detach) and copies one that is
                # shared or breaks the layout contract. We cannot count references: the engine
                # counts the input buffers holding each gradient (``shared``).
                if g.__class__ is _Tensor and var.__class__ is _Tensor:
                    strides = g._layout.strides
                    copy = (self.shared(g) or g._requires_grad
                            or (g._base is not None and g._base._requires_grad)
                            or not (strides == var._layout.strides and 0 not in strides
                                    or obeys_layout_contract(g, var, steal=True)))
                else:
                    copy = (self.shared(g) or g.requires_grad
                            or not obeys_layout_contract(g, var, steal=True))
                g = clone_obey_contract(g, var) if copy else _detach(g)
            else:       # setting up for double backward: a copy, recorded
                g = clone_obey_contract(g, var)
            var._grad = g
        else:
            if _grad_enabled():
                var._grad = var._grad + g
            else:
                var._grad.add_(g)
            check_result(var._grad, var)
        for hook in self._post_hooks:
            res = hook(var)
            if res is not None and res is not var:     # PyTorch lets the tensor itself pass
                if not isinstance(res, sk.Tensor):
                    raise TypeError(f"expected Variable, but hook returned '{type(res).__name__}'")
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        return []


def _detach(g):
    """``g.detach()`` as the op itself (PyTorch's engine calls it in C++: no function level):
    its cpu kernel itself when nothing could see the call (``sk.fast_path.unobserved``)."""
    if g.__class__ is _Tensor and g._storage.device is _CPU and _unobserved(_DETACH_OPS):
        return _detach_kernel(g)
    return _detach_op(g)


_CPU = sk.device("cpu")
_DETACH_OPS = (_detach_op,)
_detach_kernel = sk.get_kernel(_detach_op, "cpu")
_unobserved = sk.fast_path.unobserved
