"""The model zoo: well-known transformer architectures written with the public tensor API.

A registry in the style of torchvision's ``list_models`` / ``get_model``. Models are built on
the meta device by default: the parameters have shapes and dtypes but no data, so even a 70B
model builds instantly and ``num_parameters()`` is the sum of ``numel()`` of the tensors the
model actually created (no separate formula). ``subclass-kit shapes MODEL`` (``cli.py``) runs
the forward on meta inputs and reports shapes, parameter and activation bytes.

    >>> from subclass_kit import zoo
    >>> zoo.list_models()[:2]
    ['bert-base-uncased', 'gpt2']
    >>> zoo.get_config("gpt2").n_layer
    12
    >>> zoo.get_model("gpt2").num_parameters()
    124439808
"""

from __future__ import annotations

import dataclasses

from . import bert, gpt2, llama, nn, vit
from .summary import Summary, summarize

__all__ = ["list_models", "get_model", "get_config", "nn", "Summary", "summarize"]

# name -> (config, model class)
_REGISTRY = {}
for _family, _cls in ((gpt2, gpt2.GPT2LMHeadModel), (llama, llama.LlamaForCausalLM),
                      (bert, bert.BertModel), (vit, vit.VisionTransformer)):
    for _name, _cfg in _family.CONFIGS.items():
        _REGISTRY[_name] = (_cfg, _cls)


def list_models() -> list:
    """The names of the zoo's models, sorted."""
    return sorted(_REGISTRY)


def _entry(name: str):
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown model {name!r}; valid names: "
                         f"{', '.join(list_models())}") from None


def get_config(name: str):
    """The frozen config dataclass of model ``name`` (Hugging Face field names).

    Raises ValueError for an unknown name, listing the valid ones."""
    return _entry(name)[0]


def get_model(name: str, *, dtype=None, device="meta", **overrides) -> nn.Module:
    """Build model ``name`` with parameters of ``dtype`` (default: ``sk.get_default_dtype()``)
    on ``device`` ("meta": no data; "cpu": random weights). ``overrides`` replace config
    fields, e.g. ``get_model("llama-2-7b", num_hidden_layers=2)``.

    Raises ValueError for an unknown name, TypeError for an unknown config field.
    """
    cfg, cls = _entry(name)
    if overrides:
        cfg = dataclasses.replace(cfg, **overrides)
    return cls(cfg, dtype=dtype, device=device)
