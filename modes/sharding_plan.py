"""Sharding plans for a model: FSDP2's ``fully_shard`` and Megatron-style tensor parallelism,
as DTensor placements per parameter (modes/sharding.py), plus the per-rank local program.

- **Tensor parallelism** (``tp_placement``), the plan of torch's ``parallelize_module`` with
  ``ColwiseParallel`` / ``RowwiseParallel`` as Megatron-LM lays out a transformer block:
  the projections into attention and MLP (``q_proj k_proj v_proj gate_proj up_proj``, Mixtral's
  ``w1 w3``, GPT-2's ``c_attn c_fc``, BERT's and ViT's ``query key value intermediate.dense``)
  are column-wise: ``Shard(0)`` of a ``[out, in]`` weight (``Shard(1)`` of GPT-2's
  ``[in, out]`` Conv1D weight) and ``Shard(0)`` of the bias; the projections out of them
  (``o_proj down_proj w2 c_proj``, BERT's and ViT's ``attention.output.dense``,
  ``output.dense``) are row-wise: ``Shard(1)`` of the ``[out, in]`` weight, the bias
  replicated; the token embedding and LM head are sharded on the vocabulary (``Shard(0)``);
  everything else (norms, position embeddings, a MoE router) is replicated.
- **FSDP** (``fully_shard``): every parameter ``Shard(0)`` over the data-parallel ranks. With
  tensor parallelism too, FSDP2 shards each rank's TP-local tensor on dim 0 (torch's
  ``_StridedShard``): ``fsdp_tp_placements`` lays the mesh out as ``("tp", "dp")`` so that
  DTensor's left-to-right rule applies the TP placement first, then ``Shard(0)``; global rank
  ``r`` is still ``dp_index * M + tp_index``, as in torch's ``init_device_mesh((N, M))``.
- **units** (``fsdp_units``): FSDP2's all-gather units when each item of a ``ModuleList``
  (a decoder layer) gets its own ``fully_shard`` and the root module one for the rest.

Models are ``sk.nn`` or zoo modules; parameters are found by module, so tied weights count once.
"""

from __future__ import annotations

import contextlib

import numpy as np

import subclass_kit as sk

from .sharding import DeviceMesh, Replicate, Shard

__all__ = ["module_parameters", "tp_placement", "fsdp_tp_placements", "check_tp", "fsdp_units",
           "local_program", "HEAD_ATTRIBUTES"]

_COLWISE = {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "w1", "w3", "c_attn", "c_fc",
            "query", "key", "value", "qkv", "fc1", "intermediate", "intermediate.dense"}
_ROWWISE = {"o_proj", "down_proj", "w2", "c_proj", "out_proj", "attention.dense",
            "output.dense", "output", "proj", "fc2"}
_VOCAB = {"embed_tokens", "wte", "word_embeddings", "lm_head"}
# Module attributes holding a head count that tensor parallelism divides.
HEAD_ATTRIBUTES = ("heads", "kv_heads", "n_head", "num_heads", "num_key_value_heads",
                   "num_attention_heads", "num_kv_heads")
# Widths an attention module keeps next to its head counts (Hugging Face's GPT-2 splits its
# fused c_attn output by ``split_size``): a TP rank's are divided too.
_WIDTH_ATTRIBUTES = ("embed_dim", "split_size", "all_head_size")


def _direct_parameters(module):
    table = module.__dict__.get("_parameters")
    if table is not None:
        return [(k, v) for k, v in table.items() if isinstance(v, sk.Tensor)]
    return [(k, v) for k, v in vars(module).items()
            if not k.startswith("_") and isinstance(v, sk.Tensor)]


def _modules(model, prefix=""):
    """``(dotted name, module)`` for ``model`` and its descendants, depth first in definition
    order. An explicit stack, not recursive generators: fsdp_units walks every layer's
    subtree (an MoE model has hundreds), and each level of ``yield from`` costs per item."""
    stack = [(prefix, model)]
    while stack:
        prefix, module = stack.pop()
        yield prefix.rstrip("."), module
        if hasattr(module, "named_children"):
            stack.extend(reversed([(f"{prefix}{name}.", child)
                                   for name, child in module.named_children()]))


def module_parameters(model) -> list:
    """``(qualified name, module name, module, attribute, tensor)`` for each parameter, each
    tensor once (under its first name, as ``named_parameters``)."""
    seen, out = set(), []
    for mod_name, module in _modules(model):
        for attr, p in _direct_parameters(module):
            if id(p) not in seen:
                seen.add(id(p))
                out.append((f"{mod_name}.{attr}" if mod_name else attr, mod_name, module, attr,
                            p))
    return out


def _kind(module) -> str | None:
    """"linear", "conv1d" (Hugging Face's [in, out] Conv1D), "embedding" or None, by the
    class names of ``module``'s type and bases (sk.nn's layers, the zoo's Conv1D)."""
    for cls in type(module).__mro__:
        kind = {"Linear": "linear", "Conv1D": "conv1d", "Embedding": "embedding"}.get(
            cls.__name__)
        if kind is not None:
            return kind
    return None


def tp_placement(mod_name: str, module, attr: str, param):
    """The tensor-parallel placement of parameter ``attr`` of ``module`` (named ``mod_name``);
    see the module docstring."""
    kind = _kind(module)
    parts = mod_name.split(".")
    last, last2 = parts[-1], ".".join(parts[-2:])
    if kind is None or param.ndim == 0:
        return Replicate()
    if last in _VOCAB and kind in ("embedding", "linear"):
        return Shard(0)
    style = ("col" if last2 in _COLWISE or (last in _COLWISE and last2 not in _ROWWISE)
             else "row" if last2 in _ROWWISE or last in _ROWWISE else None)
    if style is None or kind == "embedding":
        return Replicate()
    if attr != "weight":          # bias: split with the output features, or whole
        return Shard(0) if style == "col" else Replicate()
    # [out, in] weights split out (col) or in (row); Conv1D stores [in, out].
    out_dim = 1 if kind == "conv1d" else 0
    return Shard(out_dim if style == "col" else 1 - out_dim)


def fsdp_tp_placements(model, dp: int, tp: int) -> tuple:
    """``(mesh, {parameter name: (tp placement, dp placement)})`` for FSDP over ``dp`` ranks
    and tensor parallelism over ``tp`` ranks: a ``("tp", "dp")`` mesh of the global ranks
    ``dp_index * tp + tp_index`` (see the module docstring). A 0-d parameter is replicated."""
    mesh = DeviceMesh("meta", np.arange(dp * tp).reshape(dp, tp).T,
                      mesh_dim_names=("tp", "dp"))
    placements = {}
    for name, mod_name, module, attr, p in module_parameters(model):
        tp_pl = tp_placement(mod_name, module, attr, p) if tp > 1 else Replicate()
        placements[name] = (tp_pl, Shard(0) if dp > 1 and p.ndim else Replicate())
    return mesh, placements


def _head_counts(model, config) -> list:
    """``(where, attribute, count)`` of the head counts tensor parallelism must divide."""
    found = []
    if config is not None:
        for attr in ("num_attention_heads", "num_key_value_heads", "n_head"):
            n = getattr(config, attr, None)
            if isinstance(n, int):
                found.append(("the config", attr, n))
    if not found:
        for mod_name, module in _modules(model):
            for attr in HEAD_ATTRIBUTES:
                n = module.__dict__.get(attr)
                if isinstance(n, int) and not isinstance(n, bool):
                    found.append((mod_name or "the model", attr, n))
                    break
    return found


def check_tp(model, config, tp: int) -> None:
    """Raise ValueError naming the head count ``tp`` does not divide (tensor parallelism
    splits whole heads), or saying the model has no projection the plan splits."""
    for where, attr, n in _head_counts(model, config):
        if n % tp:
            raise ValueError(f"--tp {tp}: {where} has {attr}={n}; tensor parallelism splits "
                             f"whole attention heads, so --tp must divide {n}")
    if tp > 1 and all(isinstance(tp_placement(m, mod, a, p), Replicate)
                      for _, m, mod, a, p in module_parameters(model)):
        raise ValueError(f"--tp {tp}: the model has no Linear projection the tensor-parallel "
                         f"plan splits (names it knows: {', '.join(sorted(_COLWISE))}; "
                         f"{', '.join(sorted(_ROWWISE))})")


def fsdp_units(model) -> dict:
    """``{unit name: [parameter names]}``: one unit per item of each ``ModuleList`` (decoder
    layers), and ``"(root)"`` for the parameters outside them."""
    names = {id(p): n for n, _, _, _, p in module_parameters(model)}
    units, claimed = {}, set()
    for mod_name, module in _modules(model):
        if type(module).__name__ != "ModuleList":
            continue
        for i, child in module.named_children():
            unit = f"{mod_name}.{i}" if mod_name else str(i)
            ids = [id(p) for *_, p in module_parameters(child) if id(p) not in claimed]
            claimed.update(ids)
            units[unit] = [names[k] for k in ids]
    rest = [n for k, n in names.items() if k not in claimed]
    if rest:
        units["(root)"] = rest
    return units


@contextlib.contextmanager
def local_program(model, local_tensors: dict, tp: int):
    """Temporarily give ``model`` the program of one tensor-parallel rank: each parameter
    ``p`` with ``id(p)`` in ``local_tensors`` is replaced by that (local, meta) tensor in
    every module holding it, and the head counts (``HEAD_ATTRIBUTES``) of attention modules,
    with the widths they keep beside them (``embed_dim``, ``split_size``, ``all_head_size``),
    are divided by ``tp``.
    Everything is put back on exit."""
    undo = []
    for _, module in _modules(model):
        if type(module).__name__ == "Conv1D" and id(module.weight) in local_tensors:
            # Hugging Face's Conv1D shapes its output from ``nf`` (out_features).
            undo.append((module, None, "nf", module.nf))
            module.__dict__["nf"] = local_tensors[id(module.weight)].shape[1]
        table = module.__dict__.get("_parameters")
        for attr, value in _direct_parameters(module):
            if id(value) in local_tensors:
                undo.append((module, table, attr, value))
                _assign(module, table, attr, local_tensors[id(value)])
        counts = [a for a in HEAD_ATTRIBUTES if _is_int(module.__dict__.get(a))]
        if counts and tp > 1:
            for attr in counts + [a for a in _WIDTH_ATTRIBUTES
                                  if _is_int(module.__dict__.get(a))]:
                undo.append((module, None, attr, module.__dict__[attr]))
                module.__dict__[attr] //= tp
    try:
        yield model
    finally:
        for module, table, attr, value in reversed(undo):
            if table is not None:
                _assign(module, table, attr, value)
            else:
                module.__dict__[attr] = value


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _assign(module, table, attr, value):
    if table is not None and attr in table:
        table[attr] = value
    else:
        object.__setattr__(module, attr, value)
