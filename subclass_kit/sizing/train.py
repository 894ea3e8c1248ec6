"""``--train``: memory of one training step (forward, backward, optimizer step), by category,
traced on meta under the autograd mode with ``modes.MemTracker`` (docs/sizing.md "Training
memory").

The step: the parameters that require grad are trained (every floating parameter when none
does, as in a model built without autograd state); ``logits = model(*inputs)``; the loss is
the cross entropy of the logits against int64 meta targets (``(batch, seq)`` for
``(batch, seq, vocab)`` logits, ``(batch,)`` for ``(batch, classes)``; any other output: its
sum), unshifted; ``loss.backward()``; ``optimizer.step()`` with the optimizer's states created
lazily on that first step, as PyTorch creates them.

- ``--optimizer adamw`` (default): ``sk.optim.AdamW`` (``exp_avg``, ``exp_avg_sq`` and a
  float32 ``step`` per parameter); ``sgd``: ``sk.optim.SGD`` with momentum 0.9 (one
  ``momentum_buffer`` per parameter).
- ``--mixed-precision``: PyTorch AMP-style bf16: float32 parameters (masters), gradients and
  optimizer states; the forward and the loss run under ``modes.AutocastMode(sk.bfloat16)``
  (``torch.autocast``'s op lists: matmuls on bfloat16 copies, the weights' copies cached for
  the forward, softmax/norms/losses in float32), so activations are a mix of bfloat16 and
  float32 as under AMP.
- ``--checkpointing``: each item of the model's layer lists (``ModuleList``s: decoder layers)
  runs under ``sk.utils.checkpoint.checkpoint(..., use_reentrant=False)``.
"""

from __future__ import annotations

from . import SizingError

NAME = "train"

__all__ = ["NAME", "add_arguments", "wanted", "prepare", "measure", "format", "train_step"]

CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_states", "activations",
              "temporaries")


def add_arguments(parser) -> None:
    group = parser.add_argument_group(
        "training memory (--train)",
        "Memory of one training step (forward, backward, optimizer step) traced on meta: "
        "parameters, gradients, optimizer states (created by the first step), saved "
        "activations (tensors the autograd graph saves for backward; largest value, at the "
        "end of the forward) and temporaries (all other live tensors), each category's "
        "largest value, and the peak total with the op, module and phase where it happens. "
        "Loss: cross entropy of the logits against int64 meta targets. Not included: "
        "allocator rounding and caching, CUDA context, kernel workspaces. See docs/sizing.md "
        "'Training memory'.")
    group.add_argument("--train", action="store_true",
                       help="run forward + backward + optimizer step and report its memory")
    group.add_argument("--optimizer", choices=("adamw", "sgd"),
                       help="adamw (default: two float states per parameter) or sgd "
                            "(momentum 0.9: one)")
    group.add_argument("--mixed-precision", action="store_true",
                       help="AMP-style bf16 (torch.autocast's op lists): float32 master "
                            "parameters, gradients and optimizer states; matmuls on "
                            "bfloat16 copies, softmax/norms/loss in float32")
    group.add_argument("--checkpointing", action="store_true",
                       help="recompute each layer of the model's layer lists in the "
                            "backward (activation checkpointing, non-reentrant)")


def wanted(args) -> bool:
    # the training options without --train also select the feature: ``prepare`` rejects them
    return bool(args.train or args.optimizer or args.mixed_precision or args.checkpointing)


def prepare(ctx) -> None:
    if not ctx.args.train:
        raise SizingError("--optimizer, --mixed-precision and --checkpointing need --train")


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
    if any(p.requires_grad for p in params):
        # frozen parameters (requires_grad=False) get no gradient and no optimizer state
        params = [p for p in params if p.requires_grad]
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
        amp = None
        if compute is not None:
            from subclass_kit.modes.autocast import AutocastMode
            amp = AutocastMode(compute)
        if checkpointing:
            undo.append(_checkpoint_layers(model, amp))
        opt = (sk.optim.AdamW(params) if optimizer == "adamw"
               else sk.optim.SGD(params, lr=1e-3, momentum=0.9))
        tracker = MemTracker()
        tracker.track_external(model, opt, *_tensors(inputs))
        with tracker:
            if amp is None:
                loss = _loss(model(*inputs))
            else:
                with amp:
                    loss = _loss(model(*inputs))
                amp.clear_cache()       # as leaving torch.autocast does
            loss.backward()
            del loss
            opt.step()
    finally:
        for step in reversed(undo):
            step()
    peak_at = tracker.peak_at or {"at": "", "module": "", "phase": ""}
    where = peak_at["at"]
    if peak_at.get("node"):
        where += f" of {peak_at['node']}"
    if peak_at["module"]:
        where += f" in {peak_at['module']}"
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


def _loss(out):
    """Cross entropy of the logits against int64 targets (zeros), else the output's sum."""
    import subclass_kit as sk
    logits = out if isinstance(out, sk.Tensor) else (_tensors(out) or [None])[0]
    if logits is None:
        raise SizingError("--train: the model returned no tensor to take a loss of")
    if logits.dim() in (2, 3) and logits.dtype.is_floating_point:
        lead = tuple(logits.shape[:-1])
        targets = sk.zeros(lead, dtype=sk.int64, device=logits.device)
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


def _checkpoint_layers(model, amp=None):
    """Run each layer's forward under ``sk.utils.checkpoint``; returns the undo function.
    With ``amp`` (an ``AutocastMode``), the recomputation in the backward runs under it, as
    PyTorch's checkpoint restores the autocast state, with its own cast cache."""
    import subclass_kit as sk
    layers = _layers(model) if callable(getattr(model, "named_children", None)) else []
    if not layers:
        raise SizingError("--checkpointing: the model has no ModuleList of layers to "
                          "checkpoint")

    def run(forward, *args, **kwargs):
        if amp is None or amp in sk.get_function_mode_stack():
            return forward(*args, **kwargs)
        try:                # the recomputation, in the backward
            with amp:
                return forward(*args, **kwargs)
        finally:
            amp.clear_cache()

    for layer in layers:
        def checkpointed(*args, _forward=layer.forward, **kwargs):
            return sk.utils.checkpoint.checkpoint(run, _forward, *args, use_reentrant=False,
                                                  **kwargs)
        object.__setattr__(layer, "forward", checkpointed)

    def undo():
        for layer in layers:
            layer.__dict__.pop("forward", None)
    return undo
