"""Hugging Face ``config.json`` files -> the zoo's frozen config dataclasses.

``parse(raw, source)`` reads the fields that decide a model's shapes and computation from a
``config.json`` dict (unknown keys, such as token ids or dropout rates, are ignored) and fills
the optional ones with Hugging Face's defaults for that ``model_type``. The built-in models are
``configs/<name>.json`` files read by the same function, so a zoo name and a config path are
one code path.

Errors: ``ValueError`` naming the source for an unsupported ``model_type`` (listing the
supported ones), a missing required field (the fields that fix the parameter shapes), or an
inconsistent head layout; ``TypeError`` for an override naming no config field.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

import subclass_kit as sk

__all__ = ["DecoderConfig", "GPT2Config", "BertConfig", "ViTConfig", "MODEL_TYPES", "parse",
           "load", "config_dtype", "ATTN_IMPLEMENTATIONS"]

ATTN_IMPLEMENTATIONS = ("sdpa", "eager")
CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def _field(default=None, *, required=False, convert=None):
    """A config field read from ``config.json``: its Hugging Face default (the class
    attribute's value), whether the file must give it (``required``: True, or the
    ``model_type`` names that need it) and ``convert``, applied to a value that is not None
    (JSON has lists where the config keeps tuples). The dataclasses are the one table
    ``parse`` reads: name, type, default, required."""
    return dataclasses.field(default=default,
                             metadata={"required": required, "convert": convert})


@dataclass(frozen=True)
class DecoderConfig:
    """``LlamaConfig`` / ``MistralConfig`` / ``MixtralConfig`` / ``Qwen2Config`` /
    ``GemmaConfig`` fields (Hugging Face names), resolved: ``num_key_value_heads`` and
    ``head_dim`` are always ints.

    - ``num_key_value_heads``: K/V heads (grouped-query attention); default: one per head.
    - ``head_dim``: per-head width; default ``hidden_size // num_attention_heads`` (Gemma-7B
      sets 256 with 16 heads of a 3072 model: q/k/v are 4096 wide).
    - ``tie_word_embeddings``: the LM head is the token embedding (one tensor, counted once).
    - ``attention_bias``: biases on q/k/v/o (LLaMA, Mistral, Gemma); Qwen2 always has q/k/v
      biases and none on o.
    - ``sliding_window``: keys at most ``sliding_window - 1`` positions back (Mistral); Qwen2
      uses it only with ``use_sliding_window`` and on layers ``>= max_window_layers`` (or
      where ``layer_types`` says "sliding_attention", when the file has it).
    - ``num_local_experts`` / ``num_experts_per_tok``: Mixtral's sparse MoE MLP.
    - ``hidden_act`` (``hidden_activation`` for Gemma, which runs the tanh GELU when it is
      absent), ``rms_norm_eps``, ``rope_theta``, ``torch_dtype`` (the checkpoint's dtype).
    """

    model_type: str = "llama"
    hidden_size: int = _field(4096, required=True)
    intermediate_size: int = _field(11008, required=True)
    num_hidden_layers: int = _field(32, required=True)
    num_attention_heads: int = _field(32, required=True)
    num_key_value_heads: int = 32
    head_dim: int = 128
    vocab_size: int = _field(32000, required=True)
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    hidden_act: str = "silu"
    hidden_activation: str | None = None
    sliding_window: int | None = None
    use_sliding_window: bool = False
    max_window_layers: int | None = None
    layer_types: tuple | None = _field(convert=tuple)
    num_local_experts: int | None = _field(required=("mixtral",))
    num_experts_per_tok: int | None = _field(required=("mixtral",))
    torch_dtype: str | None = None
    attn_implementation: str = "sdpa"
    name_or_path: str = ""

    @property
    def activation(self) -> str:
        """The MLP activation actually run."""
        if self.model_type == "gemma":
            return self.hidden_activation or "gelu_pytorch_tanh"
        return self.hidden_act

    def layer_sliding_window(self, layer: int) -> int | None:
        """The sliding window of decoder layer ``layer`` (None: full causal attention)."""
        if self.sliding_window is None:
            return None
        if self.model_type == "qwen2":
            if self.layer_types is not None:      # newer files: one entry per layer
                return (self.sliding_window if self.layer_types[layer] == "sliding_attention"
                        else None)
            start = self.max_window_layers if self.max_window_layers is not None else 0
            return self.sliding_window if self.use_sliding_window and layer >= start else None
        if self.model_type in ("mistral", "mixtral"):
            return self.sliding_window
        return None


@dataclass(frozen=True)
class GPT2Config:
    """``GPT2Config`` fields: ``n_inner`` None means ``4 * n_embd``; ``activation_function``
    "gelu_new" is the tanh GELU."""

    model_type: str = "gpt2"
    n_layer: int = _field(12, required=True)
    n_head: int = _field(12, required=True)
    n_embd: int = _field(768, required=True)
    n_inner: int | None = None
    vocab_size: int = _field(50257, required=True)
    n_positions: int = 1024
    layer_norm_epsilon: float = 1e-5
    activation_function: str = "gelu_new"
    tie_word_embeddings: bool = True
    torch_dtype: str | None = None
    attn_implementation: str = "sdpa"
    name_or_path: str = ""


@dataclass(frozen=True)
class BertConfig:
    """``BertConfig`` fields (``BertModel`` with its pooler is built)."""

    model_type: str = "bert"
    hidden_size: int = _field(768, required=True)
    num_hidden_layers: int = _field(12, required=True)
    num_attention_heads: int = _field(12, required=True)
    intermediate_size: int = _field(3072, required=True)
    vocab_size: int = _field(30522, required=True)
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    torch_dtype: str | None = None
    attn_implementation: str = "sdpa"
    name_or_path: str = ""


@dataclass(frozen=True)
class ViTConfig:
    """``ViTConfig`` fields; ``num_labels`` (from ``num_labels`` or the length of
    ``id2label``, default 2 as Hugging Face) sizes the classifier, 0 means none."""

    model_type: str = "vit"
    image_size: int = _field(224, required=True)
    patch_size: int = _field(16, required=True)
    num_channels: int = 3
    hidden_size: int = _field(768, required=True)
    num_hidden_layers: int = _field(12, required=True)
    num_attention_heads: int = _field(12, required=True)
    intermediate_size: int = _field(3072, required=True)
    num_labels: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    qkv_bias: bool = True
    torch_dtype: str | None = None
    attn_implementation: str = "sdpa"
    name_or_path: str = ""


# model_type -> (config class, its defaults that differ from the class's: Hugging Face's
# MistralConfig, MixtralConfig... defaults where they are not LlamaConfig's)
MODEL_TYPES = {
    "llama": (DecoderConfig, {}),
    "mistral": (DecoderConfig, {"max_position_embeddings": 4096 * 32, "sliding_window": 4096}),
    "mixtral": (DecoderConfig, {"max_position_embeddings": 4096 * 32, "rms_norm_eps": 1e-5,
                                "rope_theta": 1e6}),
    "qwen2": (DecoderConfig, {"max_position_embeddings": 32768, "sliding_window": 4096,
                              "max_window_layers": 28}),
    "gemma": (DecoderConfig, {"max_position_embeddings": 8192, "tie_word_embeddings": True,
                              "head_dim": 256, "hidden_act": "gelu_pytorch_tanh"}),
    "gpt2": (GPT2Config, {}),
    "bert": (BertConfig, {}),
    "vit": (ViTConfig, {}),
}

_DTYPES = {"float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
           "bfloat16": "bfloat16", "float64": "float64", "double": "float64"}


def _fail(source: str, message: str):
    raise ValueError(f"{source}: {message}")


def parse(raw: dict, source: str = "config", overrides: dict | None = None):
    """The config dataclass for the Hugging Face config dict ``raw`` with ``overrides``
    (config field names) applied on top.

    ``source`` names the file in error messages. Raises ValueError (unsupported or missing
    ``model_type``, a missing required field, heads that do not divide, an unknown
    ``attn_implementation`` or ``torch_dtype``) and TypeError (an override that is no field of
    the model type's config)."""
    if not isinstance(raw, dict):
        raise TypeError(f"{source}: a config must be a JSON object (dict), not "
                        f"{type(raw).__name__}")
    raw = dict(raw)
    model_type = (overrides or {}).get("model_type", raw.get("model_type"))
    if model_type is None:
        _fail(source, "required config field 'model_type' is missing; supported: "
              + ", ".join(sorted(MODEL_TYPES)))
    if model_type not in MODEL_TYPES:
        _fail(source, f"unsupported model_type {model_type!r}; supported: "
              + ", ".join(sorted(MODEL_TYPES)))
    cls, defaults = MODEL_TYPES[model_type]
    fields = dataclasses.fields(cls)
    names = {f.name for f in fields}
    for key in overrides or {}:
        if key not in names:
            raise TypeError(f"{cls.__name__} ({model_type!r}) has no field {key!r}; fields: "
                            + ", ".join(sorted(names)))
    # Newer transformers write "dtype" instead of "torch_dtype"; ViT's label count may come
    # from id2label only.
    if "torch_dtype" not in raw and "dtype" in raw:
        raw["torch_dtype"] = raw["dtype"]
    if "_name_or_path" in raw:
        raw.setdefault("name_or_path", raw["_name_or_path"])
    if model_type == "vit" and "num_labels" not in raw and isinstance(raw.get("id2label"), dict):
        raw["num_labels"] = len(raw["id2label"])
    raw.update(overrides or {})
    required = [f.name for f in fields if f.metadata.get("required") is True
                or model_type in (f.metadata.get("required") or ())]
    for key in required:
        if raw.get(key) is None:
            _fail(source, f"required config field {key!r} is missing (model_type "
                          f"{model_type!r} needs: {', '.join(required)})")
    values = {**defaults, **{k: v for k, v in raw.items() if k in names}}
    values["model_type"] = model_type
    for f in fields:
        convert = f.metadata.get("convert")
        if convert is not None and values.get(f.name) is not None:
            values[f.name] = convert(values[f.name])
    if cls is DecoderConfig:
        _resolve_heads(values, source)
        if values.get("layer_types") is not None:
            if len(values["layer_types"]) != values["num_hidden_layers"]:
                _fail(source, f"layer_types has {len(values['layer_types'])} entries for "
                              f"{values['num_hidden_layers']} layers")
    if values.get("attn_implementation") not in (None, *ATTN_IMPLEMENTATIONS):
        _fail(source, f"attn_implementation must be one of {', '.join(ATTN_IMPLEMENTATIONS)}, "
                      f"got {values['attn_implementation']!r}")
    if values.get("attn_implementation") is None:
        values.pop("attn_implementation", None)
    dtype = values.get("torch_dtype")
    if dtype is not None and _DTYPES.get(str(dtype).removeprefix("torch.")) is None:
        _fail(source, f"unsupported torch_dtype {dtype!r}; supported: "
                      + ", ".join(sorted(set(_DTYPES.values()))))
    return cls(**values)


def _resolve_heads(values: dict, source: str) -> None:
    heads = values["num_attention_heads"]
    if values.get("num_key_value_heads") is None:
        values["num_key_value_heads"] = heads
    if values.get("head_dim") is None:
        if values["hidden_size"] % heads:
            _fail(source, f"hidden_size {values['hidden_size']} is not divisible by "
                          f"num_attention_heads {heads}; give head_dim")
        values["head_dim"] = values["hidden_size"] // heads
    if heads % values["num_key_value_heads"]:
        _fail(source, f"num_attention_heads {heads} is not a multiple of num_key_value_heads "
                      f"{values['num_key_value_heads']}")
    if values["model_type"] == "mixtral" and not (
            0 < values["num_experts_per_tok"] <= values["num_local_experts"]):
        _fail(source, f"num_experts_per_tok {values['num_experts_per_tok']} must be in "
                      f"1..num_local_experts ({values['num_local_experts']})")


def load(path_or_dict, overrides: dict | None = None):
    """``parse`` a ``config.json`` path (or a dict already read). Raises ValueError for a file
    that is missing or not JSON, naming it."""
    if isinstance(path_or_dict, dict):
        return parse(path_or_dict, "config", overrides)
    path = os.fspath(path_or_dict)
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise ValueError(f"{path}: cannot read the config: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not a JSON config: {e}") from None
    return parse(raw, path, overrides)


def config_dtype(cfg):
    """The ``sk.dtype`` named by ``cfg.torch_dtype`` (None -> ``sk.get_default_dtype()``).
    Raises ValueError for "bfloat16" when this build has no ``sk.bfloat16``."""
    name = cfg.torch_dtype
    if name is None:
        return sk.get_default_dtype()
    name = _DTYPES[str(name).removeprefix("torch.")]
    dtype = getattr(sk, name, None)
    if dtype is None:
        raise ValueError(f"the config's torch_dtype is {name!r}, which this build of "
                         "subclass_kit does not have (sk.bfloat16 is missing)")
    return dtype
