"""The sizing features of ``subclass-kit shapes``: each answers one question about a model by
tracing its real program on meta tensors (KV cache, training memory, FLOPs, per-rank shards,
quantized weights).

A feature is a module of this package named in ``FEATURES``, with:

- ``NAME``: its key in the ``--json`` object (``"train"``, ``"flops"``...);
- ``add_arguments(parser)``: its command-line options (argparse), shown in ``shapes --help``;
- ``wanted(args) -> bool``: whether the options ask for it;
- optionally ``prepare(ctx)``: runs before the inference forward (a feature that changes the
  model, such as quantization, does it here);
- ``measure(ctx) -> dict``: the JSON section (ints are bytes unless the key says otherwise);
- ``format(section) -> list[str]``: ``(label, text)`` pairs for the summary at the top of the
  human-readable report, in the order they should appear;
- optionally ``HELP``: text appended to ``shapes --help`` explaining the feature's numbers, in
  the layout of the core ones (label, ``[json_name]``, what it includes and leaves out);
- optionally ``JSON_TOP_LEVEL = True``: the section's keys go to the top level of the
  ``--json`` object instead of under ``NAME`` (for fields API.md names there, such as
  ``kv_cache_bytes``).

A feature raises ``SizingError`` for options it cannot honour for the model at hand.
Features run in ``FEATURES`` order, so a later one may read an earlier one's section from
``ctx.results`` (sharding reads ``ctx.results.get("train")``). Feature modules must be cheap to
import: their heavy imports (modes, autograd) go inside ``measure``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

__all__ = ["FEATURES", "SizingContext", "SizingError", "features", "add_arguments", "wanted",
           "prepare", "run"]

class SizingError(ValueError):
    """Options a feature cannot honour for this model (e.g. ``--kv-cache`` on a model without
    attention): the command line prints the message and exits with status 2."""


# Module names, in the order they run.
FEATURES: tuple = ("quantize", "kv_cache", "train", "flops", "sharding")


@dataclass
class SizingContext:
    """What a feature sees.

    ``model``/``inputs``: the built model and its example inputs (meta); ``name``: the display
    name; ``config``: the model's config (a zoo or Hugging Face config) or None for a user
    function; ``args``: the parsed command line; ``summary``: the inference ``zoo.Summary``
    (None during ``prepare``); ``results``: the sections measured so far, by ``NAME``;
    ``notes``: lines the report prints under the summary (what a figure assumes...).
    """

    model: object
    inputs: tuple
    name: str
    args: object
    config: object = None
    summary: object = None
    results: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def features() -> list:
    """The feature modules, in run order."""
    return [importlib.import_module(f"{__name__}.{name}") for name in FEATURES]


def add_arguments(parser) -> None:
    """Add every feature's options to the ``shapes`` parser."""
    for feature in features():
        feature.add_arguments(parser)


def wanted(args) -> list:
    """The features the parsed options ask for."""
    return [f for f in features() if f.wanted(args)]


def prepare(ctx: SizingContext, chosen: list) -> None:
    """Run the ``prepare`` step of the chosen features (before the inference forward)."""
    for feature in chosen:
        step = getattr(feature, "prepare", None)
        if step is not None:
            step(ctx)


def run(ctx: SizingContext, chosen: list) -> None:
    """Measure the chosen features into ``ctx.results`` (after the inference forward)."""
    for feature in chosen:
        ctx.results[feature.NAME] = feature.measure(ctx)
