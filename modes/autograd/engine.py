"""The engine: runs the graph backwards from some outputs (PyTorch's ``torch/csrc/autograd/
engine.cpp``, single-threaded).

1. Count, for every node reachable from the roots, how many edges lead into it (an iterative
   walk: a chain of 100,000 ops needs no recursion).
2. With ``inputs`` (``sk.autograd.grad`` or ``backward(inputs=...)``), mark the nodes from
   which an input can be reached; the others are not run.
3. Run ready nodes (all their incoming gradients summed), highest sequence number first
   (the most recently created), so that hooks fire in PyTorch's order. Nodes of one sequence
   number (the leaves' ``AccumulateGrad``) leave the ready queue in the order of PyTorch's
   ``std::priority_queue`` (``_push`` / ``_pop``: libstdc++'s heap, step for step). Each
   node's gradient outputs are added into the input buffers of its next nodes.

Without ``retain_graph`` every node frees its saved tensors after it ran. With
``create_graph`` the formulas run with grad mode on, so the backward is itself recorded.

Each run is a *graph task* with an id (``current_graph_task_id()``, -1 outside a backward);
``queue_callback(fn)`` runs ``fn`` when the current task has finished (PyTorch's
``Variable._execution_engine.queue_callback``: what its ``ModuleTracker`` uses to reset its
module stack after the backward).
"""

from __future__ import annotations

import collections.abc
import warnings

import subclass_kit as sk

from .anomaly_mode import check_nan, warn_stack
from .ready_queue import pop, push
from .graph import (AccumulateGrad, GradientEdge, edge_input_meta, grad_accumulator,
                    gradient_edge)

__all__ = ["run_backward", "backward", "grad", "current_graph_task_id", "queue_callback",
           "current_node", "will_execute"]


# The graph tasks (``run_backward`` calls) running now, innermost last: [task id, callbacks
# queued during it, the nodes it will run (``will_execute``) once known]; ops run while it is
# non-empty belong to a backward.
_tasks: list = []
_task_ids = [0]
# The nodes whose ``apply`` is running, innermost last (a node may start a nested backward).
_RUNNING: list = []


def current_graph_task_id() -> int:
    """The id of the innermost backward running now, -1 outside a backward (PyTorch's
    ``torch._C._current_graph_task_id``)."""
    return _tasks[-1][0] if _tasks else -1


def will_execute(node) -> bool:
    """Whether the innermost backward running now will run ``node`` (reached from its roots,
    and needed for its ``inputs`` when it has some): PyTorch's
    ``torch._C._will_engine_execute_node``. RuntimeError outside a backward."""
    if not _tasks or _tasks[-1][2] is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the "
                           "backward pass")
    nodes, reached, captured = _tasks[-1][2]
    if node in nodes and (reached is None or node in reached):
        if node in captured:
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are "
                               "currently running autograd.grad(). This is currently not "
                               "supported.")
        return True
    return False


def queue_callback(fn) -> None:
    """Run ``fn()`` once the current backward has finished (after every node ran). Raises
    RuntimeError outside a backward (PyTorch's message)."""
    if not _tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _tasks[-1][1].append(fn)


_WARNED_CYCLE = False


def _warn_cycle() -> None:
    """PyTorch's engine warns once per process when ``backward`` builds a graph of the
    gradients it accumulates into ``.grad`` (``create_graph=True``)."""
    global _WARNED_CYCLE
    _WARNED_CYCLE = True
    warnings.warn("Using backward() with create_graph=True will create a reference cycle between "
                  "the parameter and its gradient which can cause a memory leak. We recommend "
                  "using autograd.grad when creating the graph to avoid this. If you have to use "
                  "this function, make sure to reset the .grad fields of your parameters to None "
                  "after use to break the cycle and avoid the leak.", stacklevel=4)


def current_node():
    """The node whose backward formula is running now, or None outside a backward (what
    PyTorch's ``torch._C._current_autograd_node`` returns): lets a dispatch mode tell backward
    ops from forward ones (``modes.MemTracker``)."""
    return _RUNNING[-1] if _RUNNING else None


def _make_grads(outputs, grad_outputs, create_graph):
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(out, GradientEdge):
            grads.append(_edge_grad(i, out, g))
            continue
        if g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                g = _ones_like(out)
        else:
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {sk.Size(g.shape)} and "
                    f"output[{i}] has a shape of {sk.Size(out.shape)}.")
        grads.append(g)
    return grads


def _ones_like(out):
    """``ones_like(out)``, the op itself, as PyTorch's engine calls it in C++; for a 0-d cpu
    float output (a loss) while nothing could see the call, the fresh 0-d tensor its kernel
    makes, written with numpy."""
    if (out.__class__ is sk.Tensor and not out._layout.sizes and out._dtype in _FLOATS
            and out._storage.device is _CPU and not out._inference
            and _unobserved(_ONES_OPS)):
        g = _empty((), out._dtype)
        _array(g)[()] = 1
        return g
    with sk.no_grad():
        return sk.ops.ones_like.default(out)


_FLOATS = frozenset((sk.float32, sk.float64))
_CPU = sk.device("cpu")
_ONES_OPS = (sk.ops.ones_like.default,)
_empty, _array = sk.fast_path.empty, sk.fast_path.array


def _edge_grad(i, edge, g):
    """The gradient fed to an output given as a ``GradientEdge``: ones for a one-element
    input of the node, else ``g`` checked against the node's recorded shape."""
    meta = edge_input_meta(edge.node, edge.output_nr)
    if g is None:
        if meta is None or sk.Size(meta[0]).numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        with sk.no_grad():
            return sk.ones(meta[0], dtype=meta[1])
    if meta is not None and tuple(g.shape) != meta[0]:
        raise RuntimeError(
            f"Mismatch in shape: grad_output[{i}] has a shape of {sk.Size(g.shape)} and "
            f"output[{i}] has a shape of {sk.Size(meta[0])}.")
    return g


def _as_tuple(x):
    if isinstance(x, (sk.Tensor, GradientEdge)):
        return (x,)
    return tuple(x)


def inputs_tuple(inputs, caller: str) -> tuple:
    """The ``inputs`` of ``backward`` / ``grad`` as a tuple: a tensor, a sequence, or a dict
    (its values, PyTorch 2.13); TypeError for another mapping type."""
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, collections.abc.Mapping):
        raise TypeError(f"`inputs` argument to `{caller}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return _as_tuple(inputs)


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 accumulate=True, allow_unused=False):
    """Backpropagate ``grad_outputs`` from ``outputs``. ``accumulate``: into the ``.grad`` of
    leaves (``backward``); else the gradients of ``inputs`` are returned (``grad``). Runs as
    one graph task: the callbacks queued during it run at its end."""
    if accumulate and create_graph and not _WARNED_CYCLE:
        _warn_cycle()
    _task_ids[0] += 1
    task = [_task_ids[0], [], None]
    _tasks.append(task)
    # a backward run from a hook of another (nested) sets its own token: the outer run's
    # marks must count again once it returns
    outer_run = AccumulateGrad.run
    try:
        result = _run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs,
                               accumulate, allow_unused)
        callbacks = task[1]
        while callbacks:             # a callback may queue another
            callbacks.pop(0)()
    finally:
        _tasks.remove(task)
        AccumulateGrad.run = outer_run
    return result


def _run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs, accumulate,
                  allow_unused):
    outputs = _as_tuple(outputs)
    if inputs is not None and not _as_tuple(inputs):     # PyTorch checks this first
        raise RuntimeError(f"`inputs` argument to `{'backward' if accumulate else 'grad'}()` "
                           "cannot be empty.")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
        if len(grad_outputs) != len(outputs):
            raise RuntimeError(f"grad requires one gradient per output: got "
                               f"{len(grad_outputs)} gradients for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    roots = []
    for i, out in enumerate(outputs):
        edge = tuple(out) if isinstance(out, GradientEdge) else gradient_edge(out)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        roots.append(edge)
    grads = _make_grads(outputs, grad_outputs, create_graph)

    targets = None              # (node, input_nr) -> index into inputs
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError(f"`inputs` argument to `{'backward' if accumulate else 'grad'}()` "
                               "cannot be empty.")
        targets = {}
        for k, t in enumerate(inputs):
            if isinstance(t, GradientEdge):
                targets.setdefault(tuple(t), []).append(k)
                continue
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            fn = t.grad_fn
            if fn is not None and accumulate:
                t.retain_grad()         # as PyTorch: a non-leaf input keeps retaining its grad
            edge = (fn, t._output_nr) if fn is not None else (grad_accumulator(t), 0)
            targets.setdefault(edge, []).append(k)

    # 1. dependencies (iterative walk): every node reached is a key of ``deps``, in the order
    # found (a root given twice walks once)
    deps = dict.fromkeys([node for node, _ in roots], 0)
    stack = list(deps)
    while stack:
        for e in stack.pop()._next:
            if e is None:
                continue
            nxt = e[0]
            count = deps.get(nxt)
            if count is None:
                deps[nxt] = 1
                stack.append(nxt)
            else:
                deps[nxt] = count + 1

    # 2. the nodes worth running when only some inputs are wanted (PyTorch's exec_info):
    # ``needed`` run, ``reached`` (those and the nodes capturing an input's gradient) get
    # gradients; the others are not fed, so their hooks do not fire.
    needed = reached = None
    if targets is not None:
        target_nodes = {node for node, _ in targets}
        needed, reached = set(), set()
        # reverse topological order: every node after all nodes it leads to
        for node in _topological(deps):
            if (accumulate and node in target_nodes) or any(
                    e is not None and e[0] in reached for e in node._next):
                needed.add(node)
                reached.add(node)
            elif node in target_nodes:
                reached.add(node)

    # what ``will_execute`` answers from: the leaves ``grad`` captures cannot be asked about
    _tasks[-1][2] = (deps, reached, () if targets is None or accumulate else
                     {n for n, _ in targets if n.__class__ is AccumulateGrad})
    # 3. execution
    buffers: dict = {}
    for (node, nr), g in zip(roots, grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._num_inputs
        # (a leaf's own gradient reaches its AccumulateGrad marked as the caller's: copied)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    ready = []
    for node in buffers:
        if deps.get(node, 0) == 0:
            push(ready, node)
    results = [None] * (len(inputs) if inputs is not None else 0)
    # AccumulateGrad steals a gradient no one else holds and copies one held elsewhere too,
    # where PyTorch reads a reference count (``AccumulateGrad.shared``). ``holds`` counts, by
    # id, the input-buffer slots holding each gradient; a node's buffer is released once the
    # node ran, before its outputs are delivered, so a gradient a node passes through keeps
    # one holder. An id is counted only while a buffer holds its tensor (alive, so the id is
    # its own) and dropped at zero. ``callers``: the ids of the caller's gradients, and of
    # the gradients returned for ``inputs`` (their holders keep them alive all run).
    holds: dict = {}
    callers = {id(g) for g in grad_outputs if g is not None}
    AccumulateGrad.run = (holds, callers)
    for buf in buffers.values():
        _hold(holds, buf)
    now_ready = []              # the nodes the running node's gradients made ready
    # (not with ``create_graph``: the leaves then record nodes, numbered in the order they run)
    # anomaly detection (``anomaly_mode``): every node through the queue, each checked
    anomaly, nan_check = sk.fast_path.anomaly
    nan_check = anomaly and nan_check
    inline_ok = targets is None and not create_graph and not anomaly
    with sk.set_grad_enabled(create_graph):
        while ready:
            # (a one-element heap pops, and an empty one pushes, as the heap would)
            node = ready.pop() if len(ready) == 1 else pop(ready)
            buf = buffers.pop(node, None) or [None] * node._num_inputs
            hooked = node._hooked
            if hooked and (node._tensor_pre_hooks or node._retain or node._pre_hooks):
                # a node that only captures an input's gradient runs its tensor hooks alone;
                # the gradients the hooks return take the holds of those they replace
                buf = _pre_hooks(node, buf, needed is None or node in needed, holds)
            if targets is not None:
                for nr in range(len(buf)):
                    for k in targets.get((node, nr), ()):
                        g = results[k] = buf[nr]
                        if g is not None and not (accumulate and node.__class__ is AccumulateGrad):
                            callers.add(id(g))      # the caller will hold it
            if needed is not None and node not in needed:
                out = [None] * len(node._next)
            else:
                for g in buf:
                    if g is not None:
                        break
                else:
                    g = None
                # post hooks registered while the node runs get no gradients (PyTorch copies
                # them only for the hooks it had when the call started)
                grads_in = tuple(buf) if hooked and node._hooks else ()
                if g is not None or node._apply_without_grads:
                    _RUNNING.append(node)
                    try:
                        out = node.apply(buf)
                        if nan_check:
                            check_nan(node, out)
                    except BaseException:
                        if anomaly:
                            warn_stack(node)
                        raise
                    finally:
                        _RUNNING.pop()
                else:
                    out = [None] * len(node._next)
                if hooked and node._hooks:
                    out = _call_node_hooks(node._hooks, out, (grads_in,))
                    grads_in = None
            # the input buffer is released (holds, then references) as soon as the node ran,
            # before its saved tensors (PyTorch: when call_function returns, then release)
            for g in buf:
                if g is not None:
                    _release(holds, g)
            buf = g = None
            if not retain_graph and (needed is None or node in needed):
                node.release()
            for e, g in zip(node._next, out):
                if e is None:
                    continue
                nxt, nr = e
                if reached is not None and nxt not in reached:
                    continue
                if g is not None:
                    nbuf = buffers.get(nxt)
                    if nbuf is None:
                        nbuf = buffers[nxt] = [None] * nxt._num_inputs
                    old = nbuf[nr]
                    if old is None:
                        i = id(g)
                        holds[i] = holds.get(i, 0) + 1
                        nbuf[nr] = g
                    else:               # a new sum: the old one is no longer held
                        _release(holds, old)
                        s = nbuf[nr] = old + g
                        holds[id(s)] = holds.get(id(s), 0) + 1
                        old = s = None          # (PyTorch: dies here; outputs live on)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    now_ready.append(nxt)
            out = g = nbuf = None       # the node's outputs die once delivered
            if now_ready:
                inline = inline_ok and _inline_leaves(now_ready)
                for nxt in now_ready:
                    if inline and nxt.__class__ is AccumulateGrad:
                        continue
                    if ready:
                        push(ready, nxt)
                    else:
                        ready.append(nxt)
                if inline:              # Note [Leaves run inline]
                    for acc in now_ready:
                        if acc.__class__ is not AccumulateGrad:
                            continue
                        lbuf = buffers.pop(acc, None)
                        g = lbuf[0] if lbuf is not None else None
                        if g is None:       # reached with no gradient: not run
                            continue
                        _RUNNING.append(acc)
                        try:
                            acc.apply(lbuf)
                        finally:
                            _RUNNING.pop()
                        _release(holds, g)
                        lbuf = g = None
                now_ready.clear()
    if inputs is not None and not accumulate:
        for k, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        return tuple(results)
    return None


def _hold(holds: dict, buf) -> None:
    """Count the slots of input buffer ``buf`` as holding their gradients."""
    for g in buf:
        if g is not None:
            holds[id(g)] = holds.get(id(g), 0) + 1


def _release(holds: dict, g) -> None:
    """One input-buffer slot holding ``g`` is released (see ``holds`` in ``_run_backward``)."""
    i = id(g)
    left = holds[i] - 1
    if left:
        holds[i] = left
    else:
        del holds[i]


# Note [Leaves run inline]: PyTorch's queue runs a leaf's AccumulateGrad (the highest sequence
# number) as soon as it is ready, before any other node, so the leaves one node makes ready
# run right after it (in the heap's order among equal numbers). When none of them has a hook
# (``_hooked``: tensor, node and post-accumulate hooks alike), no mode or trace is active, the
# backward records nothing (no ``create_graph``) and captures no ``inputs``, they run right
# after that node has delivered all its gradients, without going through the queue: nothing
# can see their order (a hook could read another leaf's ``.grad``, so one hooked leaf sends
# them all through the queue), and every other node runs after them either way.
# After the deliveries, not during them: a gradient delivered to a leaf and to a later edge
# must be seen as held twice (copied, not stolen).
def _inline_leaves(now_ready) -> bool:
    leaf = False
    for n in now_ready:
        if n.__class__ is AccumulateGrad:
            if n._hooked:
                return False
            leaf = True
    return leaf and _unobserved(())


_unobserved = sk.fast_path.unobserved


def _topological(deps):
    """The nodes of ``deps`` (node -> edges leading into it, every node reached from the roots)
    sorted so that each comes after every node its edges lead to (Kahn's algorithm on the
    dependency counts, reversed)."""
    counts = dict(deps)
    ready = [n for n, c in counts.items() if c == 0]
    seq = []
    while ready:
        node = ready.pop()
        seq.append(node)
        for e in node._next:
            if e is None:
                continue
            counts[e[0]] -= 1
            if counts[e[0]] == 0:
                ready.append(e[0])
    seq.reverse()
    return seq


def _pre_hooks(node, buf, runs, holds):
    """Tensor hooks (``register_hook``), ``retain_grad`` and, if the node ``runs``, node
    pre-hooks, in PyTorch's order. A gradient a hook replaces gives its hold (``holds``) to
    the new one and is dropped at once, as PyTorch's are."""
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks.items():
            for hook in list(hooks):
                old = buf[nr]
                new = hook(old)         # an undefined gradient reaches the hook as None
                if new is not None and new is not old:
                    buf[nr] = new = check_hook_result(old, new, hook)
                    _hold(holds, (new,))
                    _release(holds, old)
                old = new = None
    if node._retain:
        for nr, t in node._retain.items():
            g = buf[nr]
            if g is None:
                continue
            if t._grad is None:
                t._grad = g.clone(memory_format=sk.contiguous_format)    # PyTorch's
            else:
                t._grad = t._grad + g
    if runs and node._pre_hooks:
        held, buf = buf, _call_node_hooks(node._pre_hooks, buf, ())
        _hold(holds, buf)
        for g in held:
            if g is not None:
                _release(holds, g)
    return buf


def _call_node_hooks(hooks, grads, rest):
    """Node hooks ``hook(grads, *rest)`` in registration order (the ones registered when the
    call starts): a result other than None or ``grads`` itself replaces them, checked as
    PyTorch's ``check_result`` does (a tuple of as many values, each as a tensor hook's)."""
    grads = tuple(grads)
    for hook in list(hooks):
        res = hook(grads, *rest)
        if res is None or res is grads:
            continue
        if not isinstance(res, tuple):
            raise TypeError(f"expected tuple, but hook returned '{type(res).__name__}'")
        if len(res) != len(grads):
            raise RuntimeError(f"hook '{getattr(hook, '__name__', '<unknown>')}' has returned an "
                               f"incorrect number of values (got {len(res)}, but expected "
                               f"{len(grads)})")
        grads = tuple(new if new is None or new is old else check_hook_result(old, new, hook)
                      for old, new in zip(grads, res))
    return list(grads)


def check_hook_result(old, new, hook):
    """What a tensor hook returned in place of gradient ``old``: a Tensor of its type and
    size, not one for an undefined gradient (PyTorch's ``check_single_result``: TypeError,
    else RuntimeError naming the hook)."""
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(new, sk.Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    name = getattr(hook, "__name__", "<unknown>")
    if new.dtype != old.dtype or new.device.type != old.device.type:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {old.type()} "
                           f"got {new.type()})")
    if tuple(new.shape) != tuple(old.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    return new


# ``sk.autograd.backward`` and ``grad`` take part in the function level, as PyTorch's do
# (``handle_torch_function``): see ``Tensor.backward`` in the core's api/autograd.py.
@sk.public_api
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """``sk.autograd.backward``: accumulate into the leaves' ``.grad`` (or only ``inputs``')."""
    if inputs is not None:
        inputs = inputs_tuple(inputs, "backward")
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, accumulate=True)


@sk.public_api
def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``
    (PyTorch's ``torch.autograd.grad``). Returns a tuple, one entry per input (None for an
    unused one when ``allow_unused``; zeros when ``materialize_grads``, requiring grad under
    ``create_graph``); a dict of them for a dict of ``inputs``. ``allow_unused`` defaults to
    ``materialize_grads`` (PyTorch 2.13's ``None``); ValueError if it is False with
    ``materialize_grads``."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    inputs_t = inputs_tuple(inputs, "grad")
    res = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs_t,
                       accumulate=False, allow_unused=allow_unused or materialize_grads)
    if materialize_grads:
        if any(r is None and isinstance(t, GradientEdge) for r, t in zip(res, inputs_t)):
            raise RuntimeError("materialize_grads cannot be used when the given input is a "
                               "GradientEdge")
        res = tuple(sk.zeros_like(t, requires_grad=create_graph) if r is None else r
                    for r, t in zip(res, inputs_t))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), res))
    return res
