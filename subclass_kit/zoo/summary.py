"""``summarize(model, inputs)``: run a forward (on meta tensors, typically) and report
parameters, output shapes, per-block rows and activation bytes.

How the numbers are collected:

- **parameters**: ``model.parameters()`` (each tensor once), summing ``numel()`` and the bytes
  each stores (``stored_nbytes``: ``numel() * element_size()``, or for a wrapper subclass such
  as a quantized weight the bytes of its inner tensors). A plain callable without
  ``parameters()`` has none.
- **active parameters** (mixture-of-experts models only, else None): the parameters one token
  uses, counted over the module tree: everything outside the experts plus ``top_k`` experts
  per MoE block (``mixtral.active_parameters``).
- **blocks**: a forward pre/post hook (``sk.nn.Module.register_forward_*hook``) on each block
  of an ``sk.nn.Module`` (``zoo.blocks``: its children, ``ModuleList``s expanded into
  ``model.layers.0``, ``model.layers.1``...) records the block's output shape. Ops the model's own ``forward`` runs outside every block (a causal mask, RoPE
  tables) go to the row ``(top level)``.
- **cumulative allocated bytes** (Note [Activation tally]): a ``DispatchMode`` sees every
  primitive op and registers the ``Storage`` of each result it has not seen before (views and
  in-place results share an existing storage, so they are free). A row's
  ``cumulative_allocated_bytes`` is the running sum of what its ops allocated, never
  decremented when storages die: a measure of allocator traffic, not of memory needed at once
  (that is the peak). PyTorch's ``torch.cuda.memory_stats()["allocated_bytes.all.allocated"]``
  is the same kind of number.
- **peak activation bytes**: a weak reference on each registered storage subtracts its bytes
  when the last tensor using it dies, exactly when eager execution frees memory. The peak is the
  largest total, at any moment of the forward, of the inputs' bytes plus the bytes of results
  still alive. It is an inference estimate for the code as written: no autograd buffers, no
  allocator rounding, no kernel workspaces, and no fusion (an attention written with explicit
  scores holds the (seq, seq) matrix, as eager PyTorch does without a fused kernel).
- **timeline** (``summarize(..., timeline=True)``): after every op, a point in the format of the
  sizing timelines (``subclass_kit.sizing.timeline``): phase "forward", the parameters' bytes and
  the live activation bytes (inputs included) at that moment.
  The forward runs under ``sk.no_grad()`` (inference: no autograd graph is recorded).
- **repeated blocks**: a block that repeats an earlier one exactly is replayed from that
  block's recorded bytes instead of re-running its ops, with the same numbers (Note [Block
  replay] in ``block_replay.py``; ``summarize(..., replay_blocks=False)`` runs every op).

Note [Activation tally]
    A storage counts once, when an op first returns it; parameters and inputs are registered
    up front and never count as allocations. The mode only forwards (``func(*args)``) and keeps
    no reference to results, so tallying does not change what stays alive.
"""

from __future__ import annotations

import weakref
from dataclasses import asdict, dataclass, field

import subclass_kit as sk

from subclass_kit.nn.module import Module

from . import nn
from .block_replay import BlockReplay
from .mixtral import active_parameters

__all__ = ["Summary", "BlockRow", "summarize", "stored_nbytes", "TOP_LEVEL"]

TOP_LEVEL = "(top level)"
_Tensor = sk.Tensor


@dataclass
class BlockRow:
    """One row of the per-block table."""

    name: str
    output_shape: list | None = None   # list of ints, or a list of those for tuple outputs
    dtype: str | None = None
    parameters: int = 0
    cumulative_allocated_bytes: int = 0


@dataclass
class Summary:
    """What ``summarize`` measured; ``to_dict()`` is the ``--json`` object."""

    model: str
    parameters: int
    parameter_bytes: int
    input_shapes: list
    input_dtypes: list
    output_shapes: list
    dtype: str | None
    cumulative_allocated_bytes: int
    peak_activation_bytes: int
    blocks: list = field(default_factory=list)
    timeline: list | None = None     # with summarize(..., timeline=True); not in to_dict()
    active_parameters: int | None = None

    @property
    def output_shape(self) -> list | None:
        """Shape of the (first) output tensor."""
        return self.output_shapes[0] if self.output_shapes else None

    def to_dict(self) -> dict:
        """The JSON fields: ``output_shape`` is the first output's shape and
        ``other_output_shapes`` those of the outputs after it (``[]`` for a single output), so
        each shape appears once."""
        return {"model": self.model, "parameters": self.parameters,
                "active_parameters": self.active_parameters,
                "parameter_bytes": self.parameter_bytes, "input_shapes": self.input_shapes,
                "input_dtypes": self.input_dtypes,
                "output_shape": self.output_shape, "other_output_shapes": self.output_shapes[1:],
                "dtype": self.dtype, "cumulative_allocated_bytes": self.cumulative_allocated_bytes,
                "peak_activation_bytes": self.peak_activation_bytes,
                "blocks": [asdict(row) for row in self.blocks]}


class ActivationTally(sk.DispatchMode):
    """Counts the bytes of fresh storages that ops return, per row, and the live peak.

    See Note [Activation tally]. ``current`` names the row new allocations go to.
    """

    def __init__(self, *, timeline: bool = False):
        self.current = TOP_LEVEL
        self.allocated: dict = {}
        self.live = 0
        self.peak = 0
        self._known: dict = {}    # id(storage) -> weakref (None for external storages)
        # (row, op name, live bytes) after each op, when asked: the plain path stays as cheap.
        self.points: list | None = [] if timeline else None

    def add_external(self, tensors, *, live: bool):
        """Register storages that exist before the run (parameters, inputs). ``live``: their
        bytes count toward the live total (inputs do, parameters do not)."""
        for t in tensors:
            storage = t.untyped_storage()
            if id(storage) not in self._known:
                self._known[id(storage)] = None
                if live:
                    self.live += storage.nbytes()
        self.peak = max(self.peak, self.live)

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **kwargs) if kwargs else func(*args)
        if out.__class__ is _Tensor:
            # The common case inline: a plain tensor, often a view of a known storage.
            if id(out._storage) not in self._known:
                self._register(out._storage)
        elif isinstance(out, _Tensor):
            self._register(out.untyped_storage())
        elif isinstance(out, (tuple, list)):
            for t in out:
                if isinstance(t, _Tensor):
                    self._register(t.untyped_storage())
        if self.points is not None:
            self.points.append((self.current, func.name, self.live))
        return out

    def _register(self, storage):
        key = id(storage)
        if key in self._known:
            return
        nbytes = storage.nbytes()

        def release(_ref, key=key, nbytes=nbytes):
            self.live -= nbytes
            del self._known[key]

        self._known[key] = weakref.ref(storage, release)
        self.live += nbytes
        if self.live > self.peak:
            self.peak = self.live
        self.allocated[self.current] = self.allocated.get(self.current, 0) + nbytes

    def close(self):
        """Drop the weak references (their callbacks must not outlive the run)."""
        self._known.clear()


def stored_nbytes(t) -> int:
    """Bytes tensor ``t`` really stores: ``numel() * element_size()`` for a plain tensor; for a
    traceable wrapper subclass (a quantized weight, a DTensor) the stored bytes of the inner
    tensors its ``__tensor_flatten__`` names, recursively."""
    if sk.is_traceable_wrapper_subclass(t):
        names, _ = t.__tensor_flatten__()
        return sum(stored_nbytes(getattr(t, name)) for name in names)
    return t.numel() * t.element_size()


def _tensors(x) -> list:
    if isinstance(x, sk.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in _tensors(item)]
    if isinstance(x, dict):
        return [t for item in x.values() for t in _tensors(item)]
    return []


def _shape_of(x):
    """A tensor's shape as a list; a tuple output as a list of shapes; else None."""
    if isinstance(x, sk.Tensor):
        return list(x.shape)
    tensors = _tensors(x)
    if not tensors:
        return None
    return [list(t.shape) for t in tensors] if len(tensors) > 1 else list(tensors[0].shape)


def _parameters(model) -> list:
    params = getattr(model, "parameters", None)
    if not callable(params):
        return []
    seen, out = set(), []
    for p in params():
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out


def _block_rows(model, params: list, tally: ActivationTally, replay: BlockReplay | None):
    """Rows and hook handles for each block of ``model`` (none for a plain callable);
    ``replay``: the Note [Block replay] state, or None to run every block."""
    rows, handles = {}, []
    if not isinstance(model, Module):
        return rows, handles
    seen, outer = set(), []
    for name, block in nn.blocks(model):
        row = BlockRow(name)
        row.parameters = _fresh_numel(block, seen)
        rows[name] = row

        def enter(module, args, name=name):
            outer.append(tally.current)
            tally.current = name
            if replay is not None:
                replay.enter(module, name, args)

        def leave(module, args, out, row=row):
            if replay is not None:
                replay.leave(module, out)
            row.output_shape = _shape_of(out)
            first = _tensors(out)
            row.dtype = first[0].dtype.name if first else None
            tally.current = outer.pop()     # a block may call another block

        handles.append(block.register_forward_pre_hook(enter))
        handles.append(block.register_forward_hook(leave))
    # Parameters of the model itself, outside every block.
    rest = sum(p.numel() for p in params if id(p) not in seen)
    if rest:
        rows[TOP_LEVEL] = BlockRow(TOP_LEVEL, parameters=rest)
    return rows, handles


def _fresh_numel(module, seen: set) -> int:
    """Elements of ``module``'s parameters not in ``seen`` (then added to it): a tied tensor
    counts in the first block that holds it."""
    total = 0
    for p in module.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def summarize(model, inputs, *, name: str | None = None, timeline: bool = False,
              replay_blocks: bool = True) -> Summary:
    """Run ``model(*inputs)`` under an :class:`ActivationTally` and report what it did.

    ``model``: an ``nn.Module`` (per-block rows) or any callable; ``inputs``: a tuple of
    positional arguments or a single tensor; ``timeline``: also record the live bytes after
    every op into ``Summary.timeline`` (one point per op, not downsampled). Works on any
    device; on meta nothing is allocated. Exceptions raised by the forward propagate unchanged.
    ``replay_blocks``: skip running a block that repeats an earlier one exactly (Note [Block
    replay] in ``block_replay.py``; same numbers, False runs every op).
    """
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    params = _parameters(model)
    param_bytes = sum(stored_nbytes(p) for p in params)
    tally = ActivationTally(timeline=timeline)
    tally.add_external(params, live=False)
    tally.add_external(_tensors(inputs), live=True)
    replay = BlockReplay(tally) if replay_blocks and not timeline and isinstance(
        model, Module) else None
    rows, handles = _block_rows(model, params, tally, replay)
    try:
        with sk.no_grad(), tally:
            out = model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
        if replay is not None:
            replay.close(block for _, block in nn.blocks(model))
        tally.close()
    for row_name, nbytes in tally.allocated.items():
        row = rows.get(row_name)
        if row is None:
            row = rows[row_name] = BlockRow(row_name)
        row.cumulative_allocated_bytes = nbytes
    outputs = _tensors(out)
    in_tensors = _tensors(inputs)
    return Summary(
        model=name or getattr(model, "__name__", type(model).__name__),
        parameters=sum(p.numel() for p in params),
        parameter_bytes=param_bytes,
        input_shapes=[list(t.shape) for t in in_tensors],
        input_dtypes=[t.dtype.name for t in in_tensors],
        output_shapes=[list(t.shape) for t in outputs],
        dtype=outputs[0].dtype.name if outputs else None,
        cumulative_allocated_bytes=sum(tally.allocated.values()),
        peak_activation_bytes=tally.peak,
        blocks=list(rows.values()),
        timeline=None if tally.points is None else _timeline(tally.points, param_bytes),
        active_parameters=active_parameters(model) if isinstance(model, Module) else None)


def _timeline(points, param_bytes: int) -> list:
    """The tally's (row, op, live) points as timeline dicts (see ``sizing.timeline``)."""
    return [{"at": f"{row}: {op}", "phase": "forward", "parameters": param_bytes,
             "gradients": 0, "optimizer_states": 0, "activations": live, "temporaries": 0}
            for row, op, live in points]
