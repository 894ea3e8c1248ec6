"""``--flops``: the FLOPs of the model's forward and, with ``--train``, of a training step,
counted by ``subclass_kit.modes.FlopCounterMode`` (PyTorch's ``FlopCounterMode`` formulas) on
meta tensors, next to the ``2 N`` / ``6 N`` per-token estimates.

What is counted (docs/sizing.md "FLOPs"): the matrix-product family only, as torch counts it
-- ``mm``, ``addmm``, ``bmm``, ``baddbmm`` (``2 m n k``: a multiply-add is 2 FLOPs) and the
fused attention op (its two products forward, five backward). Element-wise ops, softmax,
norms, embedding lookups, the loss and the optimizer step count nothing.

- ``forward``: one forward of the model on its example inputs (meta, grad off);
- ``train_step`` (with ``--train``): one forward + ``backward`` of ``output.sum()`` with every
  parameter requiring grad (inputs do not), a pass of its own on meta;
- ``tokens``: elements of the integer inputs (the token ids); per-token figures and the
  estimates need them, so a model without integer inputs (ViT, an MLP) reports them as null;
- ``estimate_2n`` / ``estimate_6n``: ``2 N tokens`` / ``6 N tokens`` with ``N`` the parameter
  count (active parameters for a mixture of experts), the usual approximation (Kaplan et al.
  2020); ``*_ratio`` = counted / estimate. Attention products grow with the sequence, which the
  estimate leaves out; embedding parameters do no products, which it counts.
"""

from __future__ import annotations

NAME = "flops"

HELP = ("count forward FLOPs (and training-step FLOPs with --train) with PyTorch's "
        "FlopCounterMode formulas (matrix products and attention only), per token, next to "
        "the 2N / 6N estimates")


def add_arguments(parser) -> None:
    parser.add_argument("--flops", action="store_true", help=HELP)


def wanted(args) -> bool:
    return bool(getattr(args, "flops", False))


def _tokens(inputs) -> int | None:
    import subclass_kit as sk
    leaves = [t for t in sk.pytree.tree_leaves(inputs) if isinstance(t, sk.Tensor)]
    ids = [t for t in leaves if not t.dtype.is_floating_point and t.dtype is not sk.bool]
    return sum(t.numel() for t in ids) if ids else None


def _first_tensor(out):
    import subclass_kit as sk
    for t in sk.pytree.tree_leaves(out):
        if isinstance(t, sk.Tensor) and t.dtype.is_floating_point:
            return t
    raise ValueError("the model returned no floating-point tensor to differentiate")


def _by_op(counter) -> dict:
    return {op.name: n for op, n in counter.get_flop_counts().get("Global", {}).items()}


def count_forward(model, inputs):
    """The ``FlopCounterMode`` of one forward of ``model(*inputs)`` with grad off."""
    import subclass_kit as sk
    from subclass_kit.modes import FlopCounterMode
    with sk.no_grad(), FlopCounterMode(display=False) as counter:
        model(*inputs)
    return counter


def count_train_step(model, inputs):
    """The ``FlopCounterMode`` of ``model(*inputs)`` then ``backward()`` of the first float
    output's sum, every parameter requiring grad (their ``requires_grad`` and ``.grad`` are
    put back afterwards)."""
    import subclass_kit as sk
    from subclass_kit.modes import FlopCounterMode
    params = list(model.parameters()) if hasattr(model, "parameters") else []
    state = [(p, p.requires_grad, p.grad) for p in params]
    try:
        for p in params:
            if p.dtype.is_floating_point:
                p.requires_grad_(True)
        with sk.enable_grad(), FlopCounterMode(display=False) as counter:
            loss = _first_tensor(model(*inputs)).sum()
            if loss.requires_grad:
                loss.backward()
    finally:
        for p, requires_grad, grad in state:
            p.grad = grad
            p.requires_grad_(requires_grad)
    return counter


def _per(n, tokens):
    return None if tokens is None else n / tokens


def _ratio(n, estimate):
    return None if not estimate else n / estimate


def measure(ctx) -> dict:
    tokens = _tokens(ctx.inputs)
    n = getattr(ctx.summary, "active_parameters", None) or ctx.summary.parameters
    fwd = count_forward(ctx.model, ctx.inputs)
    forward = fwd.get_total_flops()
    est2 = None if tokens is None else 2 * n * tokens
    section = {"forward": forward, "forward_per_token": _per(forward, tokens),
               "estimate_2n": est2, "forward_ratio": _ratio(forward, est2),
               "forward_by_op": _by_op(fwd), "tokens": tokens, "n_parameters": n}
    if getattr(ctx.args, "train", False):
        step = count_train_step(ctx.model, ctx.inputs)
        train = step.get_total_flops()
        est6 = None if tokens is None else 6 * n * tokens
        section.update({"train_step": train, "train_step_per_token": _per(train, tokens),
                        "estimate_6n": est6, "train_step_ratio": _ratio(train, est6),
                        "train_step_by_op": _by_op(step)})
    return section


def _flops_text(n) -> str:
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:,.0f} FLOP"


def _line(total, per_token, estimate, ratio, k) -> str:
    text = f"{total:,}" + ("" if total < 1e6 else f" ({_flops_text(total)})")
    if per_token is None:
        return text + f"; no token ids, so no per-token figure or {k}N estimate"
    return (f"{text}, {_flops_text(per_token)}/token; {k}N estimate "
            f"{_flops_text(estimate)} (x{ratio:.3f})")


def format(section) -> list:
    rows = [("forward FLOPs", _line(section["forward"], section["forward_per_token"],
                                    section["estimate_2n"], section["forward_ratio"], 2))]
    if "train_step" in section:
        rows.append(("train step FLOPs", _line(section["train_step"],
                                               section["train_step_per_token"],
                                               section["estimate_6n"],
                                               section["train_step_ratio"], 6)))
    return rows
