"""``--train``: memory of one training step (forward, backward, optimizer step), by category,
traced on meta under the autograd mode with ``modes.MemTracker`` (docs/sizing.md "Training
memory").

The step: every floating parameter requires grad; ``logits = model(*inputs)``; the loss is
the cross entropy of the logits against int64 meta targets (``(batch, seq)`` for
``(batch, seq, vocab)`` logits, ``(batch,)`` for ``(batch, classes)``; any other output: its
sum), unshifted; ``loss.backward()``; ``optimizer.step()`` with the optimizer's states created
lazily on that first step, as PyTorch creates them.

- ``--optimizer adamw`` (default): ``sk.optim.AdamW`` (``exp_avg``, ``exp_avg_sq`` and a
  float32 ``step`` per parameter); ``sgd``: ``sk.optim.SGD`` with momentum 0.9 (one
  ``momentum_buffer`` per parameter).
- ``--mixed-precision``: PyTorch AMP-style bf16: float32 master parameters, gradients and
  optimizer states; each module casts its parameters to bfloat16 when it runs (one cached
  copy per parameter in the forward, as autocast's weight cache; the copies are recorded, so
  the gradients reach the float32 masters), so activations are bfloat16; the logits are cast
  to float32 for the loss. A simplification of autocast: every op of the model runs in
  bfloat16 (autocast keeps softmax and the norms in float32).
- ``--checkpointing``: each item of the model's layer lists (``ModuleList``s: decoder layers)
  runs under ``sk.utils.checkpoint.checkpoint(..., use_reentrant=False)``.
"""

from __future__ import annotations

from . import SizingError

NAME = "train"

__all__ = ["NAME", "add_arguments", "wanted", "measure", "format", "train_step"]

CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_states", "activations",
              "temporaries")


def add_arguments(parser) -> None:
    group = parser.add_argument_group(
        "training memory (--train)",
        "Memory of one training step traced on meta: parameters, gradients, optimizer "
        "states, saved activations (tensors the autograd graph saves for backward) and "
        "temporaries (all other live tensors), with the peak and where it happens. Loss: "
        "cross entropy of the logits against meta targets.")
    group.add_argument("--train", action="store_true",
                       help="run forward + backward + optimizer step and report its memory")
    group.add_argument("--optimizer", choices=("adamw", "sgd"),
                       help="adamw (default: two float states per parameter) or sgd "
                            "(momentum 0.9: one)")
    group.add_argument("--mixed-precision", action="store_true",
                       help="AMP-style bf16: float32 master parameters, gradients and "
                            "optimizer states, bfloat16 compute copies and activations")
    group.add_argument("--checkpointing", action="store_true",
                       help="recompute each layer of the model's layer lists in the "
                            "backward (activation checkpointing, non-reentrant)")


def wanted(args) -> bool:
    if not args.train and (args.optimizer or args.mixed_precision or args.checkpointing):
        raise SizingError("--optimizer, --mixed-precision and --checkpointing need --train")
    return bool(args.train)


def measure(ctx) -> dict:
    args = ctx.args
    return train_step(ctx.model, ctx.inputs, optimizer=args.optimizer or "adamw",
                      mixed_precision=args.mixed_precision, checkpointing=args.checkpointing)


def format(section: dict) -> list:
    from ..cli import human_bytes

    def b(n):
        return f"{n:,} ({human_bytes(n)})"

    at = section["at_peak"]
    parts = ", ".join(f"{k.replace('_', ' ')} {human_bytes(at[k])}" for k in CATEGORIES
                      if at[k])
    how = [section["optimizer"]]
    if section["mixed_precision"]:
        how.append(f"mixed precision ({section['compute_dtype']} compute)")
    if section["checkpointing"]:
        how.append("checkpointing")
    return [
        ("train step", ", ".join(how)),
        ("train peak", f"{b(section['peak'])} at {section['peak_at']}"),
        ("  at the peak", parts),
        ("  gradients", b(section["gradients"])),
        ("  optimizer states", b(section["optimizer_states"])),
        ("  saved activations", b(section["activations"]) + " (largest, end of forward)"),
        ("  temporaries", b(section["temporaries"]) + " (largest)"),
    ]


# -- the step ----------------------------------------------------------------------------------
def train_step(model, inputs, *, optimizer: str = "adamw", mixed_precision: bool = False,
               checkpointing: bool = False, timeline_limit: int = 2000) -> dict:
    """Trace one training step of ``model(*inputs)`` under ``modes.MemTracker`` and return the
    ``train`` section (bytes; see docs/sizing.md "Training memory"). Works on meta (no data)
    and cpu. The model is left as it was (parameters' ``requires_grad``, ``.grad``, forwards).

    Raises SizingError for a model without parameters, ``--mixed-precision`` on parameters
    that are not float32, ``--checkpointing`` on a model without a ``ModuleList``.
    """
    import subclass_kit as sk
    from subclass_kit.modes import MemTracker

    params = [p for p in _parameters(model) if p.dtype.is_floating_point]
    if not params:
        raise SizingError("--train: the model has no floating-point parameters to train")
    if mixed_precision and any(p.dtype != sk.float32 for p in params):
        raise SizingError("--mixed-precision keeps float32 master parameters: build the model "
                          "in float32 (drop --dtype)")
    compute = getattr(sk, "bfloat16", sk.float16) if mixed_precision else None
    undo = []
    try:
        flags = [(p, p.requires_grad) for p in params]

        def reset():
            for p, flag in flags:
                p.grad = None
                p.requires_grad_(flag)
        undo.append(reset)
        for p in params:
            p.requires_grad_(True)
        cache = release = None
        if compute is not None:
            cache, release, restore = _cast_parameters(model, compute)
            undo.append(restore)
        if checkpointing:
            undo.append(_checkpoint_layers(model, release))
        opt = (sk.optim.AdamW(params) if optimizer == "adamw"
               else sk.optim.SGD(params, lr=1e-3, momentum=0.9))
        tracker = MemTracker()
        tracker.track_external(model, opt, *_tensors(inputs))
        with tracker:
            out = model(*inputs)
            loss = _loss(out, mixed_precision)
            del out
            if cache is not None:
                cache.clear()       # autocast's cache lives for the forward only
                cache.active = False
            loss.backward()
            del loss
            opt.step()
    finally:
        for step in reversed(undo):
            step()
    peak_at = tracker.peak_at or {"at": "", "module": "", "phase": ""}
    where = f"{peak_at['at']} in {peak_at['module']}" if peak_at["module"] else peak_at["at"]
    return {
        **tracker.maxima,
        "peak": tracker.peak,
        "peak_at": f"{where} ({peak_at['phase']})",
        "peak_phase": peak_at["phase"],
        "at_peak": {k: v for k, v in tracker.snapshot("peak").items() if k != "total"},
        "optimizer": optimizer,
        "mixed_precision": bool(mixed_precision),
        "compute_dtype": compute.name if compute is not None else params[0].dtype.name,
        "checkpointing": bool(checkpointing),
        "loss": "cross entropy of the logits against int64 meta targets (unshifted)",
        "timeline": tracker.timeline(timeline_limit),
    }


def _parameters(model) -> list:
    get = getattr(model, "parameters", None)
    seen, out = set(), []
    for p in (get() if callable(get) else ()):
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out


def _tensors(x) -> list:
    import subclass_kit as sk
    if isinstance(x, sk.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in _tensors(item)]
    return []


def _loss(out, mixed_precision: bool):
    """Cross entropy of the logits against meta targets (int64 zeros' shapes), else the sum."""
    import subclass_kit as sk
    logits = out if isinstance(out, sk.Tensor) else (_tensors(out) or [None])[0]
    if logits is None:
        raise SizingError("--train: the model returned no tensor to take a loss of")
    if mixed_precision:
        logits = logits.to(sk.float32)
    if logits.dim() in (2, 3) and logits.dtype.is_floating_point:
        lead = tuple(logits.shape[:-1])
        targets = sk.empty(lead, dtype=sk.int64, device=logits.device)
        if logits.device.type != "meta":
            targets.zero_()
        return sk.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                              targets.reshape(-1))
    return logits.sum()


def _is_module_list(m) -> bool:
    return type(m).__name__ == "ModuleList"


def _layers(model) -> list:
    """The items of the model's outermost ``ModuleList``s (nested lists, such as MoE experts,
    belong to their layer)."""
    found, stack = [], [model]
    while stack:
        m = stack.pop()
        for _, child in m.named_children():
            if _is_module_list(child):
                found.extend(item for _, item in child.named_children())
            else:
                stack.append(child)
    return found


def _checkpoint_layers(model, release=None):
    """Run each layer's forward under ``sk.utils.checkpoint``; returns the undo function.
    ``release(layer)`` runs after each run of a layer's forward, the recomputation's aborted
    one included."""
    import subclass_kit as sk
    layers = _layers(model) if callable(getattr(model, "named_children", None)) else []
    if not layers:
        raise SizingError("--checkpointing: the model has no ModuleList of layers to "
                          "checkpoint")
    for layer in layers:
        forward = layer.forward

        def run(*args, _forward=forward, _layer=layer, **kwargs):
            try:
                return _forward(*args, **kwargs)
            finally:
                if release is not None:
                    release(_layer)

        def checkpointed(*args, _run=run, **kwargs):
            return sk.utils.checkpoint.checkpoint(_run, *args, use_reentrant=False, **kwargs)
        object.__setattr__(layer, "forward", checkpointed)

    def undo():
        for layer in layers:
            layer.__dict__.pop("forward", None)
    return undo


class _CastCache(dict):
    active = True


def _own_parameters(module) -> tuple:
    """(name -> tensor of the module's own parameters, a setter)."""
    import subclass_kit as sk
    store = module.__dict__.get("_parameters")
    if isinstance(store, dict):         # sk.nn.Module
        return {k: v for k, v in store.items() if v is not None}, store.__setitem__
    own = {k: v for k, v in vars(module).items()
           if not k.startswith("_") and isinstance(v, sk.Tensor)}
    return own, lambda k, v: object.__setattr__(module, k, v)


def _cast_parameters(model, dtype):
    """Forward pre/post hooks casting each module's floating parameters to ``dtype`` while it
    runs (AMP-style compute copies). Returns (the forward's cast cache,
    ``release``, the undo function).

    A call aborted by an exception (the early stop of a checkpoint's recomputation) skips its
    post-hook: ``release(layer)`` puts back the masters of ``layer``'s modules."""
    cache = _CastCache()
    masters: dict = {}      # id(module) -> (module, {name: float32 master})
    handles = []

    def before(module, args):
        entry = masters.get(id(module))
        own = entry[1] if entry is not None else _own_parameters(module)[0]
        masters[id(module)] = (module, own)
        put = _own_parameters(module)[1]
        for name, p in own.items():
            if p.dtype.is_floating_point and p.dtype != dtype:
                copy = cache.get(id(p)) if cache.active else None
                if copy is None:
                    copy = p.to(dtype)
                    if cache.active:
                        cache[id(p)] = copy
                put(name, copy)

    def restore(module, own):
        put = _own_parameters(module)[1]
        for name, p in own.items():
            put(name, p)

    def after(module, args, out):
        entry = masters.pop(id(module), None)
        if entry is not None:
            restore(*entry)

    from ..modes.memory_tracker import _named_modules
    for _, m in _named_modules(model):
        handles.append(m.register_forward_pre_hook(before))
        handles.append(m.register_forward_hook(after))

    def release(layer):
        for _, m in _named_modules(layer):
            entry = masters.pop(id(m), None)
            if entry is not None:
                restore(*entry)

    def undo():
        for h in handles:
            h.remove()
        for module, own in masters.values():
            restore(module, own)
        masters.clear()
        cache.clear()
    return cache, release, undo
