"""``--kv-cache CONTEXT``: the bytes of the key/value cache a decoder keeps while generating.

The cache is built, not computed by formula: for every decoder layer a key and a value tensor
of shape ``(batch, num_key_value_heads, tokens, head_dim)`` in the model's dtype, on the meta
device, as Hugging Face's ``DynamicCache`` holds them after ``CONTEXT`` tokens; the report is
the sum of their storages' ``nbytes()``. ``tokens`` is ``CONTEXT``, or ``min(CONTEXT,
sliding_window)`` on a sliding-window layer (Hugging Face semantics: Mistral/Mixtral apply
``sliding_window`` to every layer when it is set; Qwen2 only when ``use_sliding_window`` is true,
and then to the layers ``i >= max_window_layers``; an explicit ``layer_types`` list wins).
``head_dim`` is the config's when given (Gemma: 256 with hidden 3072 / 16 heads), else
``hidden_size // num_attention_heads``; ``num_key_value_heads`` defaults to the heads (no GQA);
GPT-2 reads ``n_layer``/``n_head``/``n_embd``.

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
_QWEN2_MAX_WINDOW_LAYERS = 28     # Qwen2Config's default
# Config class names of the zoo -> Hugging Face model_type, for configs without one.
_CLASS_TYPES = {"GPT2Config": "gpt2", "BertConfig": "bert", "ViTConfig": "vit",
                "LlamaConfig": "llama", "MistralConfig": "mistral"}


def add_arguments(parser) -> None:
    parser.add_argument(
        "--kv-cache", metavar="CONTEXT", type=_context, dest="kv_cache",
        help="also report the key/value cache bytes for CONTEXT tokens of --batch sequences "
             "(GQA, head_dim and sliding windows from the config, in the model dtype)")


def _context(text: str) -> int:
    import argparse
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def wanted(args) -> bool:
    return getattr(args, "kv_cache", None) is not None


def _get(cfg, name: str, default=None):
    if isinstance(cfg, dict):
        return cfg.get(name, default)
    return getattr(cfg, name, default)


def _model_type(cfg) -> str | None:
    return _get(cfg, "model_type") or _CLASS_TYPES.get(type(cfg).__name__)


def _required(cfg, name: str, model_type):
    value = _get(cfg, name)
    if value is None:
        raise _error(f"--kv-cache: the {model_type or 'model'} config has no {name!r}")
    return value


def _error(message: str):
    from . import SizingError
    return SizingError(message)


def _windows(cfg, model_type, layers: int) -> list:
    """The sliding window of each layer (None: full attention), by Hugging Face's rules."""
    window = _get(cfg, "sliding_window")
    layer_types = _get(cfg, "layer_types")
    if model_type in ("qwen2", "qwen2_moe") and not _get(cfg, "use_sliding_window", False):
        window = None
    if window is None:
        return [None] * layers
    if layer_types is not None:
        return [window if t == "sliding_attention" else None for t in layer_types]
    if model_type in ("qwen2", "qwen2_moe"):
        first = _get(cfg, "max_window_layers")
        first = _QWEN2_MAX_WINDOW_LAYERS if first is None else first
        return [window if i >= first else None for i in range(layers)]
    return [window] * layers


def layer_caches(cfg, *, context: int, batch: int = 1) -> list:
    """The cache shape of each decoder layer for ``cfg`` (a zoo or Hugging Face config, object
    or dict): a list of ``(batch, num_key_value_heads, tokens, head_dim)`` tuples, one per layer
    (each layer holds a key and a value of that shape).

    Raises SizingError for an encoder-only model (bert, vit) or a missing config field.
    """
    model_type = _model_type(cfg)
    if model_type in _ENCODER_ONLY:
        raise _error(f"--kv-cache: {model_type} is an encoder-only model (no causal "
                     "generation), so it keeps no key/value cache")
    if model_type == "gpt2":
        layers = _required(cfg, "n_layer", model_type)
        heads = kv_heads = _required(cfg, "n_head", model_type)
        head_dim = _required(cfg, "n_embd", model_type) // heads
    else:
        layers = _required(cfg, "num_hidden_layers", model_type)
        heads = _required(cfg, "num_attention_heads", model_type)
        kv_heads = _get(cfg, "num_key_value_heads") or heads
        head_dim = _get(cfg, "head_dim") or _required(cfg, "hidden_size", model_type) // heads
    windows = _windows(cfg, model_type, layers)
    if len(windows) != layers:
        raise _error(f"--kv-cache: the config's layer_types has {len(windows)} entries for "
                     f"{layers} layers")
    return [(batch, kv_heads, context if w is None else min(context, w), head_dim)
            for w in windows]


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
    from ..cli import human_bytes

    n, context = section["kv_cache_bytes"], section["kv_cache_context"]
    parts = ", ".join(f"{g['layers']} layers x K,V [{', '.join(map(str, g['shape']))}]"
                      + (" (sliding window)" if g["shape"][2] < context else "")
                      for g in section["kv_cache_layers"])
    return [("KV cache", f"{n:,} ({human_bytes(n)}) at context {context:,}"
                         f", {section['kv_cache_dtype']}: {parts}")]
