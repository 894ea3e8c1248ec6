"""``--quantize int8|int4 [--group-size G]``: weights-only quantization of the model's Linear
weights before the forward, so every figure after it (parameter bytes, per-rank shards) is the
packed layout's (``subclass_kit.modes.quantization``, torchao's ``int8_weight_only`` /
``int4_weight_only`` layouts)."""

from __future__ import annotations

from . import SizingError

NAME = "quantize"

_HELP = ("weights-only quantization of the Linear weights (not embeddings, norms, biases or an "
         "LM head tied to the embedding: torchao's default filter; GPT-2's Conv1D counts as "
         "Linear): int8 = int8 codes + one scale per group; int4 = two codes per byte + a "
         "scale and a zero point per group (scales in the model dtype). Parameter bytes are "
         "then the packed layout's; activations are unchanged (a weight is dequantized inside "
         "its matmul, and that temporary is not counted)")


def add_arguments(parser) -> None:
    from ..cli import _positive_int
    group = parser.add_argument_group("weights-only quantization")
    group.add_argument("--quantize", choices=("int8", "int4"), help=_HELP)
    group.add_argument("--group-size", type=_positive_int, metavar="G",
                       help="elements per scale along in_features (default 128); every "
                            "quantized layer's in_features must be divisible by it")


def wanted(args) -> bool:
    return getattr(args, "quantize", None) is not None


def prepare(ctx) -> None:
    from ..modes.quantization import DEFAULT_GROUP_SIZE, quantize_
    from ..zoo.summary import stored_nbytes
    args = ctx.args
    if getattr(args, "train", False):
        raise SizingError("--quantize with --train: weights-only quantization freezes the "
                          "weights it packs (inference); training on them (QLoRA-style "
                          "adapters) is not modelled")
    group = args.group_size or DEFAULT_GROUP_SIZE
    before = {id(p): p for p in _parameters(ctx.model)}
    try:
        names = quantize_(ctx.model, args.quantize, group)
    except ValueError as e:
        raise SizingError(f"--quantize {args.quantize} --group-size {group}: "
                          f"{str(e).removeprefix('quantize: ')}") from None
    if not names:
        raise SizingError(f"--quantize: {ctx.name} has no Linear weight to quantize")
    now = {id(p): p for p in _parameters(ctx.model)}
    after = [p for k, p in now.items() if k not in before]
    replaced = [p for k, p in before.items() if k not in now]
    ctx.results[NAME] = {
        "scheme": args.quantize, "group_size": group, "quantized_weights": len(names),
        "quantized_parameters": sum(p.numel() for p in after),
        "quantized_bytes": sum(stored_nbytes(p) for p in after),
        "unquantized_bytes": sum(stored_nbytes(p) for p in replaced)}


def _parameters(model) -> list:
    params = getattr(model, "parameters", None)
    return list(params()) if callable(params) else []


def measure(ctx) -> dict:
    return dict(ctx.results[NAME])


def format(section) -> list:
    from ..cli import human_bytes
    return [("quantization",
             f"{section['scheme']}, group size {section['group_size']}: "
             f"{section['quantized_weights']} Linear weights ({section['quantized_parameters']:,}"
             f" parameters) stored in {human_bytes(section['quantized_bytes'])} instead of "
             f"{human_bytes(section['unquantized_bytes'])}")]
