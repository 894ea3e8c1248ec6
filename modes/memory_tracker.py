"""``MemTracker``: live tensor memory by category over a training step, in the style of PyTorch's
``torch.distributed._tools.mem_tracker.MemTracker``; works on ``meta`` (no data) as on ``cpu``.

A dispatch mode sees every op's results and registers each new ``Storage`` with a weak
reference: its bytes count from the op that returned it until the last tensor using it dies
(when eager execution frees memory). Every storage is in exactly one category:

- ``parameters`` / ``buffers``: the tensors of the modules given to ``track_external``;
- ``gradients``: a parameter's ``.grad`` (found by a post-accumulate-grad hook);
- ``optimizer_states``: tensors an optimizer keeps in ``optimizer.state`` (``exp_avg``,
  ``exp_avg_sq``, ``momentum_buffer``, the ``step`` counters), found as the optimizer stores
  them, so states created lazily on the first ``step()`` count from that moment;
- ``activations``: tensors the autograd graph saves for backward, found by a
  ``saved_tensors_hooks`` pack hook (the saved inputs and outputs of each node; parameters
  stay parameters). Hooks active around the tracker still pack them (the tracker's hook calls
  theirs), and a storage their packed form does not keep alive stops counting when it dies. Under ``sk.utils.checkpoint`` the region saves nothing and the tensors
  its recomputation saves in the backward count here;
- ``temporaries``: everything else: forward results the graph does not save, gradients of
  activations and other backward intermediates, optimizer intermediates, inputs.

PyTorch's MemTracker puts every forward result in ``Activation`` and every backward result in
``Temp``; the split by what the graph *saves* is this tracker's (it is the number activation
checkpointing changes). A storage moves from ``temporaries`` to a more specific category when
it is found to be saved, a gradient or an optimizer state; it never moves back (a saved tensor
still referenced after its node was freed stays an activation until it dies).

The timeline has one point after each op: ``{"at": op name, "module": fqn, "phase":
"forward"|"backward"|"optimizer", <category>: bytes}`` (docs/sizing.md "Training memory").
Phases: ``optimizer`` inside ``step()`` of a tracked optimizer (``module`` is then
``AdamW.step``), ``backward`` while the autograd engine runs, else ``forward``. A backward
point also names the running ``node`` (``MmBackward0``; ``engine`` for the engine's own ops:
seeding, summing gradients), and its ``module`` is the module whose forward recorded that node
(found by node sequence numbers, as PyTorch's ``ModTracker`` finds it with backward hooks).
Not counted: allocator rounding and caching, kernel workspaces, storages of
wrapper subclasses without data, memory outside ``sk`` ops.

    >>> from subclass_kit.modes import MemTracker
    >>> model = sk.nn.Linear(4, 2, device="meta")
    >>> optimizer = sk.optim.SGD(model.parameters(), lr=0.1)
    >>> x = sk.empty(8, 4, device="meta")
    >>> tracker = MemTracker()
    >>> tracker.track_external(model, optimizer)
    >>> with tracker:
    ...     model(x).sum().backward(); optimizer.step()
    >>> tracker.peak, tracker.peak_at["phase"], tracker.peak_at["at"]
    (236, 'forward', 'sum')
    >>> [p["node"] for p in tracker.timeline() if p["phase"] == "backward"][-1]
    'torch::autograd::AccumulateGrad'
"""

from __future__ import annotations

import bisect
import weakref
from collections import defaultdict

import subclass_kit as sk

__all__ = ["MemTracker", "CATEGORIES"]

CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_states", "activations",
              "temporaries")
_PARAM, _BUFFER, _GRAD, _OPT, _ACT, _TEMP = range(6)
_FIRST = 3      # index of the first category in a timeline point (after label, module, phase)
_Tensor = sk.Tensor


def _named_modules(module, prefix=""):
    """``(fqn, module)`` for ``module`` and its descendants (``sk.nn`` and ``zoo.nn``)."""
    walk = getattr(module, "named_modules", None)
    if walk is not None:
        yield from walk()
        return
    yield prefix, module
    for name, child in module.named_children():
        yield from _named_modules(child, f"{prefix}.{name}" if prefix else name)


def _tensors(x):
    if isinstance(x, _Tensor):
        yield x
    elif isinstance(x, (tuple, list)):
        for item in x:
            yield from _tensors(item)
    elif isinstance(x, dict):
        for item in x.values():
            yield from _tensors(item)


class _ParamState(dict):
    """A parameter's optimizer state: tensors stored in it become optimizer states."""

    __slots__ = ("_tracker",)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if isinstance(value, _Tensor):
            self._tracker._classify(value, _OPT)


class MemTracker(sk.DispatchMode):
    """Tracks every live storage by category, with a timeline and the peak (module docstring).

    Use: ``track_external(*modules, optimizers, tensors)`` before entering; then run forward,
    backward and ``optimizer.step()`` inside ``with tracker:``. Results: ``snapshot("current"
    | "peak")``, ``peak`` (bytes), ``peak_at`` (``{"at", "module", "phase"}``, and ``"node"`` in the backward), ``maxima``
    (each category's largest value), ``timeline(limit)``.
    """

    def __init__(self):
        self._records: dict = {}        # id(storage) -> [category, nbytes, weakref]
        self._current = [0] * len(CATEGORIES)
        self._points: list = []         # [at, module, phase, *bytes per category]
        self._peak = 0
        self._peak_point = None
        self._maxima = [0] * len(CATEGORIES)
        self._modules: list = []        # indices in _calls of the running module calls
        self._calls: list = []          # [fqn, end node number or None, caller's index]
        self._starts: list = []         # start node number of each call
        self._in_optimizer: list = []   # names of the running optimizer steps
        self._handles: list = []
        self._optimizers: list = []
        self._params: list = []
        self._tracked_modules: list = []
        self._saved_hooks = self._outer_hooks = None
        self._current_node = self._task_id = self._sequence = None

    # -- registration ---------------------------------------------------------------------
    def track_external(self, *objects) -> None:
        """Register what exists before the run: an ``nn.Module`` (its parameters, buffers and
        existing gradients; its submodules name the timeline), an optimizer (its states; its
        ``step()`` is the optimizer phase) or tensors (inputs: temporaries). Raises TypeError
        for anything else."""
        for obj in objects:
            if isinstance(obj, _Tensor):
                self._classify(obj, _TEMP)
            elif callable(getattr(obj, "named_children", None)):
                self._track_module(obj)
            elif isinstance(getattr(obj, "param_groups", None), list):
                self._optimizers.append(obj)
            elif isinstance(obj, (tuple, list)):
                self.track_external(*obj)
            else:
                raise TypeError(f"MemTracker.track_external: cannot track an object of type "
                                f"{type(obj).__name__}; give modules, optimizers or tensors")

    def _track_module(self, module) -> None:
        buffers = getattr(module, "buffers", None)
        for b in (buffers() if callable(buffers) else ()):
            self._classify(b, _BUFFER)
        for p in module.parameters():
            self._classify(p, _PARAM)
            if p.grad is not None:
                self._classify(p.grad, _GRAD)
            self._params.append(p)
        self._tracked_modules.append(module)

    def _enter_module(self, fqn):
        # Sequence numbers bracket the nodes a call records (a number taken here is never
        # given to a node: gaps are harmless), so a backward node maps back to its module.
        # Calls are listed as they start (so by start number), each with its caller's index.
        parent = self._modules[-1] if self._modules else -1
        self._modules.append(len(self._calls))
        self._starts.append(next(self._sequence))
        self._calls.append([fqn, None, parent])

    def _leave_module(self, module, args, out):
        if self._modules:
            self._calls[self._modules.pop()][1] = next(self._sequence)

    def _module_of(self, seq: int) -> str:
        """The innermost module call whose forward recorded node number ``seq``: from the last
        call started before it, up the callers to the first still open at ``seq``."""
        i = bisect.bisect_left(self._starts, seq) - 1
        calls = self._calls
        while i >= 0:
            fqn, end, parent = calls[i]
            if end is None or end > seq:
                return fqn
            i = parent
        return ""

    def _classify(self, t, category: int) -> None:
        """Register ``t``'s storage in ``category``, or move it there from ``temporaries``
        (from ``activations`` too for gradients and optimizer states)."""
        storage = t._storage
        if storage._dataless:
            return
        key = id(storage)
        rec = self._records.get(key)
        if rec is None:
            self._register(storage, key, category)
            return
        old = rec[0]
        if old == category or not (old == _TEMP or (old == _ACT and category in (_GRAD, _OPT))):
            return
        rec[0] = category
        n = rec[1]
        cur = self._current
        cur[old] -= n
        cur[category] += n
        if cur[category] > self._maxima[category]:
            self._maxima[category] = cur[category]
        # The storage was live at the last point: that point (maybe the peak) shows it in
        # its new category, so a saved result counts as an activation at its own op.
        if self._points:
            last = self._points[-1]
            last[_FIRST + old] -= n
            last[_FIRST + category] += n

    def _register(self, storage, key, category):
        n = storage._nbytes

        def release(_ref, key=key, records=self._records, current=self._current):
            rec = records.pop(key, None)
            if rec is not None:
                current[rec[0]] -= rec[1]

        self._records[key] = [category, n, weakref.ref(storage, release)]
        cur = self._current
        cur[category] += n
        if cur[category] > self._maxima[category]:
            self._maxima[category] = cur[category]

    # -- the mode -------------------------------------------------------------------------
    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **kwargs) if kwargs else func(*args)
        records = self._records
        if isinstance(out, _Tensor):
            s = out._storage
            if id(s) not in records and not s._dataless:
                self._register(s, id(s), _TEMP)
        elif isinstance(out, (tuple, list)):
            for t in out:
                if isinstance(t, _Tensor):
                    s = t._storage
                    if id(s) not in records and not s._dataless:
                        self._register(s, id(s), _TEMP)
        # The timeline point after the op (inline: this runs once per op of a training step).
        if self._in_optimizer:
            phase, where = "optimizer", self._in_optimizer[-1]
        elif self._task_id() != -1:
            node = self._current_node()
            phase = "backward"
            where = (node._seq, node.name()) if node is not None else (-1, "engine")
        else:
            modules = self._modules
            phase, where = "forward", self._calls[modules[-1]][0] if modules else ""
        current = self._current
        point = [func.name, where, phase, *current]
        self._points.append(point)
        total = sum(current)
        if total > self._peak:
            self._peak = total
            self._peak_point = point
        return out

    def _on_saved(self, t):
        self._classify(t, _ACT)
        outer = self._outer_hooks
        return t if outer is None else outer[0](t)

    def _on_unpack(self, packed):
        outer = self._outer_hooks
        return packed if outer is None else outer[1](packed)

    def __enter__(self):
        engine, graph = sk.autograd.engine, sk.autograd.graph
        self._current_node = engine.current_node
        self._sequence = graph._sequence
        for module in self._tracked_modules:
            for fqn, sub in _named_modules(module):
                self._handles.append(sub.register_forward_pre_hook(
                    lambda m, args, fqn=fqn: self._enter_module(fqn)))
                self._handles.append(sub.register_forward_hook(self._leave_module))
        self._task_id = engine.current_graph_task_id
        for p in self._params:
            if p.requires_grad and p.is_leaf:
                self._handles.append(p.register_post_accumulate_grad_hook(
                    lambda p: self._classify(p.grad, _GRAD)))
        for opt in self._optimizers:
            self._wrap_optimizer(opt)
        # Hooks active outside the tracker still pack what is saved (the tracker only looks):
        # the storage's weak reference tells whether the packed form keeps it alive.
        self._outer_hooks = graph.top_saved_tensors_hooks()
        self._saved_hooks = graph.saved_tensors_hooks(self._on_saved, self._on_unpack)
        self._saved_hooks.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._saved_hooks.__exit__(*exc)
            for h in self._handles:
                h.remove()
            self._handles.clear()
            for opt in self._optimizers:
                self._unwrap_optimizer(opt)

    def _wrap_optimizer(self, opt) -> None:
        step = opt.step

        def tracked_step(*args, **kwargs):
            self._in_optimizer.append(f"{type(opt).__name__}.step")
            try:
                return step(*args, **kwargs)
            finally:
                self._in_optimizer.pop()

        opt.step = tracked_step
        state = defaultdict(self._param_state)
        for p, s in opt.state.items():
            state[p].update(s)
            for v in s.values():
                if isinstance(v, _Tensor):
                    self._classify(v, _OPT)
        opt.state = state

    def _param_state(self):
        s = _ParamState()
        s._tracker = self
        return s

    def _unwrap_optimizer(self, opt) -> None:
        opt.__dict__.pop("step", None)
        plain = defaultdict(dict)
        for p, s in opt.state.items():
            plain[p] = dict(s)
        opt.state = plain

    # -- results --------------------------------------------------------------------------
    def snapshot(self, kind: str = "current") -> dict:
        """Bytes per category (and ``"total"``) now (``"current"``) or at the peak
        (``"peak"``). Raises ValueError for another ``kind``."""
        if kind == "current":
            values = self._current
        elif kind == "peak":
            values = self._peak_point[_FIRST:] if self._peak_point else [0] * len(CATEGORIES)
        else:
            raise ValueError(f"MemTracker.snapshot: kind must be 'current' or 'peak', "
                             f"got {kind!r}")
        out = dict(zip(CATEGORIES, values))
        out["total"] = sum(values)
        return out

    @property
    def peak(self) -> int:
        """The largest total of live bytes after any op."""
        return self._peak

    @property
    def peak_at(self) -> dict | None:
        """Where the peak happened: ``{"at": op, "module": fqn or node name, "phase": ...}``
        (None before any op ran)."""
        p = self._peak_point
        return None if p is None else self._describe(p)

    @property
    def maxima(self) -> dict:
        """Each category's largest value over the run (they need not coincide in time)."""
        return dict(zip(CATEGORIES, self._maxima))

    def timeline(self, limit: int = 2000) -> list:
        """The points (dicts, module docstring), at most ``limit`` of them: evenly spaced ones,
        plus the peak and the last point, in order. Raises ValueError for ``limit < 2``."""
        if limit < 2:
            raise ValueError(f"MemTracker.timeline: limit must be at least 2, got {limit}")
        points = self._points
        n = len(points)
        if n > limit:
            keep = {round(i * (n - 1) / (limit - 2)) for i in range(limit - 1)}
            if self._peak_point is not None:
                keep.add(next(i for i, p in enumerate(points) if p is self._peak_point))
            points = [points[i] for i in sorted(keep)]
        return [{**self._describe(p), **dict(zip(CATEGORIES, p[_FIRST:]))} for p in points]

    def _describe(self, p) -> dict:
        where = p[1]
        if isinstance(where, tuple):        # backward: (node number, node name)
            seq, node = where
            return {"at": p[0], "module": self._module_of(seq) if seq >= 0 else "",
                    "phase": p[2], "node": node}
        return {"at": p[0], "module": where, "phase": p[2]}
