"""The model zoo: well-known transformer architectures on ``sk.nn``, built from Hugging Face
``config.json`` files.

A registry in the style of torchvision's ``list_models`` / ``get_model``. Every zoo model is a
real ``config.json`` shipped in ``zoo/configs/``, read by the same code as a user's file
(``from_config``), so a zoo name and a config path are one code path. Models are
``sk.nn.Module`` trees with Hugging Face's ``state_dict`` names, built on the meta device by
default: the parameters have shapes and dtypes but no data, so even a 70B model builds
instantly, and the parameter count is the sum of ``numel()`` of the tensors the model actually
created (no separate formula). ``subclass-kit shapes MODEL`` (``cli.py``) runs the forward on
meta inputs and reports shapes, parameter and activation bytes.

    >>> from subclass_kit import zoo
    >>> zoo.list_models()[:2]
    ['bert-base-uncased', 'gemma-7b']
    >>> zoo.get_config("gpt2").n_layer
    12
    >>> sum(p.numel() for p in zoo.get_model("gpt2").parameters())
    124439808
"""

from __future__ import annotations

import os

import subclass_kit as sk

from . import config as _config
from . import nn
from .config import ATTN_IMPLEMENTATIONS, config_dtype
from .nn import blocks
from .summary import Summary, summarize

__all__ = ["list_models", "get_model", "get_config", "from_config", "load_config", "build", "nn", "blocks",
           "Summary", "summarize", "config_dtype", "ATTN_IMPLEMENTATIONS"]

_NAMES = sorted(f[:-len(".json")] for f in os.listdir(_config.CONFIG_DIR) if f.endswith(".json"))


def list_models() -> list:
    """The names of the zoo's models, sorted."""
    return list(_NAMES)


def _path(name: str) -> str:
    if not isinstance(name, str) or name not in _NAMES:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(_NAMES)}")
    return os.path.join(_config.CONFIG_DIR, name + ".json")


def get_config(name: str, **overrides):
    """The frozen config dataclass of zoo model ``name`` (Hugging Face field names), read from
    its shipped ``config.json``, with ``overrides`` applied.

    Raises ValueError for an unknown name, listing the valid ones."""
    return _config.load(_path(name), {"name_or_path": name, **overrides})


def load_config(path_or_dict, **overrides):
    """The config dataclass of a Hugging Face ``config.json`` (a path or the dict already
    read) with ``overrides``; errors as ``from_config``."""
    if not isinstance(path_or_dict, dict):
        overrides.setdefault("name_or_path", os.fspath(path_or_dict))
    return _config.load(path_or_dict, overrides)


def _model_class(cfg):
    # Only the architecture asked for is imported (each module costs import time).
    if cfg.model_type == "gpt2":
        from .gpt2 import GPT2LMHeadModel
        return GPT2LMHeadModel
    if cfg.model_type == "bert":
        from .bert import BertModel
        return BertModel
    if cfg.model_type == "vit":
        from .vit import ViTForImageClassification
        return ViTForImageClassification
    from .llama import CLASSES
    return CLASSES[cfg.model_type]


def build(cfg, *, dtype=None, device="meta") -> sk.nn.Module:
    """The model of a parsed config (``get_config`` / ``from_config`` do this for you).

    ``dtype``: the parameters' dtype; None means ``sk.get_default_dtype()``, "auto" the
    config's ``torch_dtype`` (Hugging Face's ``torch_dtype="auto"``). ``device``: "meta" (no
    data) or "cpu" (random weights)."""
    if isinstance(dtype, str):
        if dtype != "auto":
            raise ValueError(f"dtype must be an sk.dtype, None or 'auto', got {dtype!r}")
        dtype = config_dtype(cfg)
    return _model_class(cfg)(cfg, dtype=dtype, device=device)


def get_model(name: str, *, dtype=None, device="meta", attn_implementation=None,
              **overrides) -> sk.nn.Module:
    """Build zoo model ``name`` with parameters of ``dtype`` (None: ``sk.get_default_dtype()``;
    "auto": the config's ``torch_dtype``) on ``device`` ("meta": no data; "cpu": random
    weights). ``attn_implementation``: "sdpa" (default) or "eager", as Hugging Face's
    ``config._attn_implementation``. ``overrides`` replace config fields, e.g.
    ``get_model("llama-2-7b", num_hidden_layers=2)``.

    Raises ValueError for an unknown name, TypeError for an unknown config field.
    """
    if attn_implementation is not None:
        overrides["attn_implementation"] = attn_implementation
    return build(get_config(name, **overrides), dtype=dtype, device=device)


def from_config(path_or_dict, *, dtype=None, device="meta", attn_implementation=None,
                **overrides) -> sk.nn.Module:
    """Build the model a Hugging Face ``config.json`` (a path, or the dict already read)
    describes: ``model_type`` llama, mistral, mixtral, qwen2, gemma, gpt2, bert or vit.
    Arguments as ``get_model``.

    Raises ValueError naming the file for an unreadable file, an unsupported ``model_type``
    (listing the supported ones) or a missing required field; TypeError for an override that
    is no config field."""
    if attn_implementation is not None:
        overrides["attn_implementation"] = attn_implementation
    return build(load_config(path_or_dict, **overrides), dtype=dtype, device=device)
