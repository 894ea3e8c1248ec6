"""``--fsdp N`` / ``--tp M``: memory per rank when the model is sharded FSDP2-style over N
data-parallel ranks and/or split Megatron-style over M tensor-parallel ranks (N x M ranks). Parameters are placed with ``modes.sharding_plan`` and each rank's
shard is a ``modes.sharding.DTensor``'s local tensor (torch.chunk splits, as DTensor's), so
the bytes are those of real local shards. See docs/sizing.md "Sharding"."""

from __future__ import annotations

from . import SizingError

NAME = "per_rank"

_PEAK_HELP = (
    "per-rank figures are those of the LARGEST rank: parameters, gradients and optimizer "
    "states of its shards (gradients and optimizer states only with --train, with the train "
    "section's bytes per parameter element: adamw 2 states, sgd with momentum 1); peak = those sharded states + (FSDP, N > 1) the largest FSDP unit (a decoder "
    "layer, or the root's embeddings/head/norm) all-gathered to its full (TP-local) size, its "
    "unsharded gradients too with --train + the activations of one rank (with --tp, of the "
    "local program of a TP rank: the forward with local weight shards and heads / M; with "
    "--train, the train section's largest saved activations + largest temporaries, else the "
    "inference peak). The sum of the three maxima: an upper bound of the step's peak; no communication "
    "buffers, no allocator rounding")


def add_arguments(parser) -> None:
    from ..cli import _positive_int
    group = parser.add_argument_group("sharding (per-rank memory)", description=_PEAK_HELP)
    group.add_argument("--fsdp", type=_positive_int, metavar="N",
                       help="FSDP2 fully_shard over N ranks: every parameter Shard(0); "
                            "gradients and optimizer states sharded the same way")
    group.add_argument("--tp", type=_positive_int, metavar="M",
                       help="tensor parallelism over M ranks: q/k/v/gate/up (c_attn/c_fc) "
                            "column-wise, o/down (c_proj) row-wise, embeddings and LM head on "
                            "the vocabulary, norms replicated; M must divide the head counts")


def wanted(args) -> bool:
    return bool(getattr(args, "fsdp", None) or getattr(args, "tp", None))


def prepare(ctx) -> None:
    """Refuse a --tp the model cannot take before the (long) forward runs."""
    from ..modes import sharding_plan as plan
    tp = ctx.args.tp or 1
    if tp > 1:
        try:
            plan.check_tp(ctx.model, ctx.config, tp)
        except ValueError as e:
            raise SizingError(f"{ctx.name}: {e}") from None


def measure(ctx) -> dict:
    from ..modes import sharding_plan as plan
    args = ctx.args
    dp, tp = args.fsdp or 1, args.tp or 1
    params = plan.module_parameters(ctx.model)
    if not params:
        raise SizingError(f"--fsdp/--tp: {ctx.name} has no parameters to shard")
    mesh, placements = plan.fsdp_tp_placements(ctx.model, dp, tp)
    tensors = {name: p for name, *_, p in params}
    rank = _largest_rank(mesh, tensors, placements)
    training = bool(getattr(args, "train", False))
    shards = {name: _shards(t, mesh, placements[name], rank) for name, t in tensors.items()}
    param_bytes = sum(_local_bytes(s) for s in shards.values())
    grads, states = _training_states(ctx, tensors, shards) if training else (0, 0)
    gathered, unit = 0, None
    if dp > 1:
        gathered, unit = _largest_unit(ctx.model, mesh, tensors, placements, rank, training)
    activations, source = _activations(ctx, mesh, tensors, placements, rank, tp, training)
    return {"mesh": {"dp": dp, "tp": tp}, "world_size": dp * tp, "rank": rank,
            "parameters": param_bytes, "gradients": grads, "optimizer_states": states,
            "gathered": gathered, "gathered_unit": unit, "activations": activations,
            "activations_from": source,
            "peak": param_bytes + grads + states + gathered + activations}


# -- shards ---------------------------------------------------------------------------------------
def _inner(t):
    """``[(tensor, swaps dims)]``: a plain tensor, or the inner tensors of a wrapper subclass
    (a quantized weight's codes and scales follow its [out, in] dims; ``transposed`` swaps)."""
    import subclass_kit as sk
    if sk.is_traceable_wrapper_subclass(t):
        names, _ = t.__tensor_flatten__()
        swap = bool(getattr(t, "transposed", False))
        return [(inner, swap ^ s) for n in names for inner, s in _inner(getattr(t, n))]
    return [(t, False)]


def _mapped(placements, swap):
    from ..modes.sharding import Shard
    if not swap:
        return placements
    return tuple(Shard(1 - p.dim) if isinstance(p, Shard) else p for p in placements)


def _shards(t, mesh, placements, rank) -> list:
    """The DTensors of rank ``rank`` for parameter ``t`` (one per inner tensor)."""
    from ..modes.sharding import distribute_tensor
    return [distribute_tensor(inner.detach(), mesh, _mapped(placements, swap), rank=rank)
            for inner, swap in _inner(t)]


def _local_bytes(dtensors) -> int:
    from ..zoo.summary import stored_nbytes
    return sum(stored_nbytes(d.to_local()) for d in dtensors)


def _largest_rank(mesh, tensors, placements) -> int:
    """The rank holding the most parameter bytes (the lowest such rank on a tie)."""
    import numpy as np

    from ..modes.sharding import local_shape_and_offset
    cache, totals = {}, np.zeros(mesh.size(), dtype=np.int64)
    coords = [mesh.get_coordinate(r) for r in mesh.ranks()]
    for name, t in tensors.items():
        for inner, swap in _inner(t):
            pl = _mapped(placements[name], swap)
            key = (tuple(inner.shape), pl)
            if key not in cache:
                cache[key] = np.array([int(np.prod(local_shape_and_offset(
                    inner.shape, mesh.shape, c, pl)[0])) for c in coords], dtype=np.int64)
            totals += cache[key] * inner.element_size()
    ranks = np.array(mesh.ranks())
    return int(ranks[totals == totals.max()].min())


def _training_states(ctx, tensors, shards) -> tuple:
    """(gradient bytes, optimizer-state bytes) of the rank: each trainable (floating, not
    quantized) parameter's local shard times bytes per element -- the train section's, when
    it ran (same conventions), else the parameter dtype for gradients and optimizer states
    (adamw: 2 per element, sgd with momentum: 1)."""
    import subclass_kit as sk

    from ..zoo.summary import stored_nbytes
    trainable = [n for n, t in tensors.items() if _trainable(t)]
    local_numel = {n: sum(d.to_local().numel() for d in shards[n]) for n in trainable}
    train = ctx.results.get("train")
    if train and "gradients" in train and "optimizer_states" in train:
        total = sum(tensors[n].numel() for n in trainable) or 1
        rank_numel = sum(local_numel.values())
        return (train["gradients"] * rank_numel // total,
                train["optimizer_states"] * rank_numel // total)
    # Without the train section: the train feature's conventions, built on the DTensors
    # themselves: gradients like the parameters; adamw exp_avg and exp_avg_sq, sgd (momentum
    # 0.9) a momentum buffer, like the parameter (as torch's optimizers keep them).
    grads = sum(stored_nbytes(sk.empty_like(d).to_local()) for n in trainable for d in shards[n])
    per_param = 2 if (getattr(ctx.args, "optimizer", None) or "adamw") == "adamw" else 1
    states = sum(per_param * stored_nbytes(sk.zeros_like(d).to_local())
                 for n in trainable for d in shards[n])
    return grads, states


def _trainable(t) -> bool:
    """Floating and not quantized (a quantized weight is frozen)."""
    import subclass_kit as sk
    return t.dtype.is_floating_point and not sk.is_traceable_wrapper_subclass(t)


def _largest_unit(model, mesh, tensors, placements, rank, training) -> tuple:
    """(bytes, name) of the FSDP unit whose all-gathered parameters (and, training, unsharded
    gradients) are largest: the unit's shards gathered over dp, i.e. its TP-local size."""
    from ..modes import sharding_plan as plan
    from ..modes.sharding import Replicate
    best, coordinate, sizes = (0, None), mesh.get_coordinate(rank), {}
    for unit, names in plan.fsdp_units(model).items():
        for n in names:
            if n not in sizes:
                sizes[n] = _bytes_at(tensors[n], mesh.shape, coordinate,
                                     (placements[n][0], Replicate()))
        full = sum(sizes[n] for n in names)
        if training:        # the unit's gradients, unsharded until the reduce-scatter
            full += sum(sizes[n] for n in names if _trainable(tensors[n]))
        best = max(best, (full, unit), key=lambda b: b[0])
    return best


_LOCAL_NUMEL: dict = {}


def _bytes_at(t, mesh_shape, coordinate, placements) -> int:
    """Bytes of the shard of ``t`` at mesh ``coordinate`` (the DTensor local shapes' rule,
    without building the tensors: FSDP units are many)."""
    import math

    from ..modes.sharding import local_shape_and_offset
    total = 0
    for inner, swap in _inner(t):
        pl = _mapped(placements, swap)
        key = (tuple(inner.shape), tuple(mesh_shape), coordinate, pl)
        if key not in _LOCAL_NUMEL:
            _LOCAL_NUMEL[key] = math.prod(local_shape_and_offset(inner.shape, mesh_shape,
                                                                 coordinate, pl)[0])
        total += _LOCAL_NUMEL[key] * inner.element_size()
    return total


def _activations(ctx, mesh, tensors, placements, rank, tp, training) -> tuple:
    """(bytes, what they are) of one rank's activations."""
    train = ctx.results.get("train") if training else None
    if tp == 1:
        if train is not None:
            return _train_activations(train), "train"
        return ctx.summary.peak_activation_bytes, "inference"
    import subclass_kit as sk

    from ..modes import sharding_plan as plan
    from ..modes.sharding import Replicate
    local = {}
    for name, t in tensors.items():
        d = _shards_plain(t, mesh, (placements[name][0], Replicate()), rank)
        local[id(t)] = sk.empty(d, dtype=t.dtype, device="meta")
    try:
        with plan.local_program(ctx.model, local, tp):
            return _program_activations(ctx, train)
    except SizingError:
        raise
    except Exception as e:                  # a forward that cannot run on local shards
        ctx.notes.append(f"--tp: the local program of {ctx.name} does not run on its shards "
                         f"({type(e).__name__}: {e}); per-rank activations are the unsharded "
                         f"program's (an upper bound)")
        if train is not None:
            return _train_activations(train), "train (unsharded)"
        return ctx.summary.peak_activation_bytes, "inference (unsharded)"


def _train_activations(section) -> int:
    """The largest saved activations (end of the forward) + the largest temporaries of a train
    section: in steady-state training the sharded states are live all step long, so the
    rank's peak is bounded by them plus these maxima (the train peak itself may fall in the
    optimizer step, when no activation is left)."""
    return section.get("activations", 0) + section.get("temporaries", 0)


def _shards_plain(t, mesh, placements, rank):
    """The local shape of rank ``rank`` for the logical (dequantized) shape of ``t``."""
    from ..modes.sharding import local_shape_and_offset
    return local_shape_and_offset(t.shape, mesh.shape, mesh.get_coordinate(rank), placements)[0]


def _program_activations(ctx, train) -> tuple:
    from .. import zoo
    from . import FEATURES, SizingContext
    if train is not None and "train" in FEATURES:
        from . import train as train_feature
        local_ctx = SizingContext(model=ctx.model, inputs=ctx.inputs, name=ctx.name,
                                  args=ctx.args, config=ctx.config, summary=ctx.summary)
        return _train_activations(train_feature.measure(local_ctx)), "train, local program"
    inputs = ctx.inputs if isinstance(ctx.inputs, (tuple, list)) else (ctx.inputs,)
    return zoo.summarize(ctx.model, inputs, name=ctx.name).peak_activation_bytes, \
        "inference, local program"


def format(section) -> list:
    from ..cli import human_bytes
    mesh = section["mesh"]
    lines = [("per rank",
              f"dp {mesh['dp']} x tp {mesh['tp']} = {section['world_size']} ranks; largest "
              f"(rank {section['rank']}): parameters {human_bytes(section['parameters'])}, "
              f"gradients {human_bytes(section['gradients'])}, optimizer states "
              f"{human_bytes(section['optimizer_states'])}")]
    parts = ["sharded states"]
    if section["gathered_unit"] is not None:
        parts.append(f"{section['gathered_unit']} gathered "
                     f"{human_bytes(section['gathered'])}")
    parts.append(f"activations {human_bytes(section['activations'])} "
                 f"({section['activations_from']})")
    lines.append(("per-rank peak", f"{section['peak']:,} ({human_bytes(section['peak'])}) = "
                                   + " + ".join(parts)))
    return lines
