"""``--kv-cache CONTEXT``: the bytes of the key/value cache a decoder keeps while generating.

The cache is built, not computed by formula: for every decoder layer a key and a value tensor
of shape ``(batch, num_key_value_heads, tokens, head_dim)`` in the model's dtype, on the meta
device, as Hugging Face's ``DynamicCache`` holds them after ``CONTEXT`` tokens; the report is
the sum of their storages' ``nbytes()``. ``tokens`` is ``CONTEXT``, or ``min(CONTEXT,
sliding_window)`` on a sliding-window layer, the layer's window being the one its attention
mask uses (``zoo`` config ``layer_sliding_window``, Hugging Face's rules: Mistral/Mixtral apply
``sliding_window`` to every layer when it is set; Qwen2 only with ``use_sliding_window``, on the
layers ``i >= max_window_layers`` or those ``layer_types`` marks "sliding_attention").
``num_key_value_heads`` (GQA) and ``head_dim`` are the config's as the zoo resolves them (Gemma:
256 with hidden 3072 / 16 heads; absent: ``hidden_size // num_attention_heads``, or Gemma's
default 256); GPT-2 reads
``n_layer``/``n_head``/``n_embd``.

Left out: the model's weights and the forward's activations (reported beside it), allocator
rounding, a static cache's preallocation to ``max_position_embeddings``, and quantized caches.
Encoder-only models (BERT, ViT) keep no cache: ``SizingError``.
"""

from __future__ import annotations

__all__ = ["NAME", "HELP", "JSON_TOP_LEVEL", "add_arguments", "wanted", "measure", "format",
           "layer_caches"]

NAME = "kv_cache"
HELP = """\
With --kv-cache CONTEXT:
  KV cache          [kv_cache_bytes] the key and value cache tensors of every decoder layer
                    after CONTEXT tokens of --batch sequences, (batch, num_key_value_heads,
                    tokens, head_dim) in the model dtype; tokens = min(CONTEXT, sliding_window)
                    on sliding-window layers. Not in the peak activations; no static-cache
                    preallocation or paging. [kv_cache_layers] lists the shapes.
"""
# The section's keys go to the top level of --json (API.md names ``kv_cache_bytes`` there).
JSON_TOP_LEVEL = True

_ENCODER_ONLY = ("bert", "vit")


def add_arguments(parser) -> None:
    from ..cli import _positive_int
    parser.add_argument(
        "--kv-cache", metavar="CONTEXT", type=_positive_int, dest="kv_cache",
        help="also report the key/value cache bytes for CONTEXT tokens of --batch sequences "
             "(GQA, head_dim and sliding windows from the config, in the model dtype)")


def wanted(args) -> bool:
    return getattr(args, "kv_cache", None) is not None


def _error(message: str):
    from . import SizingError
    return SizingError(message)


def layer_caches(cfg, *, context: int, batch: int = 1) -> list:
    """The cache shape of each decoder layer for ``cfg``, a zoo config (``zoo.get_config``, or
    ``zoo.config.parse`` of a ``config.json`` dict, which resolves ``num_key_value_heads`` and
    ``head_dim``): a list of ``(batch, num_key_value_heads, tokens, head_dim)`` tuples, one per
    layer (each layer holds a key and a value of that shape). A layer's sliding window is the
    one its attention mask uses (``cfg.layer_sliding_window``), so the cache holds exactly the
    keys the model attends to.

    Raises SizingError for an encoder-only model (bert, vit).
    """
    model_type = cfg.model_type
    if model_type in _ENCODER_ONLY:
        raise _error(f"--kv-cache: {model_type} is an encoder-only model (no causal "
                     "generation), so it keeps no key/value cache")
    if model_type == "gpt2":
        head_dim = cfg.n_embd // cfg.n_head
        return [(batch, cfg.n_head, context, head_dim)] * cfg.n_layer
    shapes = []
    for layer in range(cfg.num_hidden_layers):
        window = cfg.layer_sliding_window(layer)
        tokens = context if window is None else min(context, window)
        shapes.append((batch, cfg.num_key_value_heads, tokens, cfg.head_dim))
    return shapes


def measure(ctx) -> dict:
    import subclass_kit as sk

    if ctx.config is None:
        raise _error("--kv-cache needs a model config (a zoo model or a config.json); "
                     f"{ctx.name} is a user function")
    args = ctx.args
    dtype = getattr(sk, args.dtype or "float32")
    shapes = layer_caches(ctx.config, context=args.kv_cache, batch=args.batch or 1)
    total, counts = 0, {}
    for shape in shapes:
        # The real cache tensors (key and value) on meta: their storages give the bytes.
        key = sk.empty(shape, dtype=dtype, device="meta")
        value = sk.empty(shape, dtype=dtype, device="meta")
        total += key.untyped_storage().nbytes() + value.untyped_storage().nbytes()
        counts[shape] = counts.get(shape, 0) + 1
    return {"kv_cache_bytes": total, "kv_cache_context": args.kv_cache,
            "kv_cache_dtype": dtype.name,
            "kv_cache_layers": [{"shape": list(s), "layers": n} for s, n in counts.items()]}


def format(section) -> list:
    from .report import human_bytes

    n, context = section["kv_cache_bytes"], section["kv_cache_context"]
    parts = ", ".join(f"{g['layers']} layers x K,V [{', '.join(map(str, g['shape']))}]"
                      + (" (sliding window)" if g["shape"][2] < context else "")
                      for g in section["kv_cache_layers"])
    return [("KV cache", f"{n:,} ({human_bytes(n)}) at context {context:,}"
                         f", {section['kv_cache_dtype']}: {parts}")]
