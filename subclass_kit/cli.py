"""The ``subclass-kit`` command line: list the model zoo, report a model's shapes and sizes, and
port PyTorch subclass/mode code to subclass_kit.

    subclass-kit list
    subclass-kit shapes MODEL [--batch B] [--seq S] [--dtype DTYPE] [--json] [...]
    subclass-kit shapes path/to/config.json [...]
    subclass-kit shapes path/to/file.py:function [...]
    subclass-kit port FILE.py... [-w | --diff]

``shapes`` builds the parameters on the meta device (no data), runs the forward on meta inputs
(token ids int64 (B, S) for language models and BERT, images (B, 3, 224, 224) for ViT) and
prints the parameter count and bytes, the output shape and dtype, a per-block table and a
peak-activation estimate. See ``shapes --help`` for the user-function contract and the
definition of each number. Exit status: 0 on success, 2 for bad arguments (unknown model,
unloadable file or function, bad option, sizes so large that a tensor passes the int64 byte
range), 1 when the model's own code raises. ``port``'s exit status is described in its help
(``_PORT_HELP``).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
import warnings

import subclass_kit as sk

from . import sizing, zoo
from .sizing import report
from .sizing.report import human_bytes, parse_size

__all__ = ["main", "human_bytes"]

DTYPES = {n: getattr(sk, n) for n in ("float32", "float16", "bfloat16", "float64")}

_SHAPES_HELP = """\
TARGET is a zoo model name (see `subclass-kit list`), a Hugging Face config.json
(model_type llama, mistral, mixtral, qwen2, gemma, gpt2, bert or vit) or
path/to/file.py:function.

A user function is called with those of the keyword arguments batch= (int), seq= (int),
dtype= (an sk.dtype) given on the command line, plus device="meta" if its signature accepts a
`device` parameter; an option given on the command line that the function cannot take is an
error, and so is a parameter without a default that the command line does not fill. It must
return (model, example_inputs):
  model           a callable run as model(*example_inputs). An sk.nn.Module
                  also gives the parameter count (sum of numel of its parameter tensors, each
                  once) and one table row per block (its children; ModuleList items expanded);
                  any other object with a parameters() method gives the count only.
  example_inputs  a tuple of positional arguments (or a single tensor), normally built on
                  device="meta" so that nothing is allocated.
See examples/custom_model.py.

The numbers (bytes unless said otherwise; the --json name in brackets; docs/sizing.md):
  parameters        [parameters] sum of numel() of the parameter tensors the model created
                    (tied tensors once); MoE models also give [active_parameters], those one
                    token uses
  parameter bytes   [parameter_bytes] sum of numel() * element_size() of the same tensors
  peak activations  [peak_activation_bytes] an inference estimate: the largest total, at any
                    moment of one forward at --batch/--seq, of the inputs' bytes plus the bytes
                    of op results still referenced, each freed when its last tensor dies (as
                    eager execution frees memory). Attention as --attention says. No autograd
                    buffers, allocator rounding, kernel workspaces or other fusion.
  total             [total_memory_bytes, total_memory_basis] what the run needs at its peak:
                    parameter bytes + KV cache + peak activations for inference; the training
                    step's peak with --train; the largest rank's with --fsdp/--tp. No CUDA
                    context, allocator rounding or workspaces.
  fits              [fits, gpu_memory_bytes] with --gpu-memory: total <= SIZE
  per block         [blocks]: output shape, parameters (a tied tensor in the first block that
                    holds it), and "allocated (cumulative)" [cumulative_allocated_bytes]: the
                    running sum of the bytes of new storages its ops returned (views and
                    in-place results are free), never decreased when they are freed, so
                    allocator traffic, not memory held at once; "(top level)" holds ops outside
                    every block. Consecutive identical blocks (same output shape, parameters
                    and bytes) are shown as one row, e.g. model.layers.0-31 x32.
Warnings the model raises (e.g. --seq past max_position_embeddings) are printed in the report
([warnings]); [notes] say what a figure assumes.
"""


_PORT_HELP = """\
Rewrites PyTorch tensor-subclass and mode code to subclass_kit by the rename table of
docs/porting.md (import torch -> import subclass_kit as sk, __torch_dispatch__ ->
__tensor_dispatch__, torch.ops.aten.add.Tensor -> sk.ops.add.Tensor, TorchDispatchMode ->
sk.DispatchMode, ...), changing names only: comments and formatting stay. Names with no
counterpart are left as written and reported on stderr as FILE:LINE: warning: ...

Output: without options, the rewritten files on stdout (one after another, each under a
"# ==> FILE <==" line when there are several); with -w, each file rewritten in place; with
--diff, a unified diff per file.

Exit status: 0 when nothing had to change (or in the printing mode), 1 when -w rewrote a file
or --diff found a difference (as pyupgrade and black --check do), 2 for a missing or
untokenizable file. Warnings do not change the status.
"""


class _UsageError(Exception):
    """A bad target or option: message on stderr, exit status 2."""


class _UserCodeError(Exception):
    """The user's function raised: traceback on stderr, exit status 1."""


# What PyTorch (and so subclass_kit, on meta too) raises when a tensor's bytes or element count
# pass the int64 range: from the CLI that means --batch/--seq are too large, a usage error.
_TOO_LARGE = ("Storage size calculation overflowed", "numel: integer multiplication overflow")


def _too_large(e: BaseException, name: str):
    """A _UsageError for an int64 overflow error ``e`` of ``name``'s run, else None."""
    if isinstance(e, RuntimeError) and str(e).startswith(_TOO_LARGE):
        return _UsageError(f"{name}: a tensor would not fit in 2**63 - 1 bytes ({e}); use a "
                           "smaller --batch or --seq")
    return None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _plot_file(text: str) -> str:
    if not text.lower().endswith((".png", ".svg")):
        raise argparse.ArgumentTypeError(f"{text!r}: the file name must end in .png or .svg")
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="subclass-kit", description="Shapes, parameter counts and activation sizes of "
        "models run on the meta device (no data allocated).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="print the names of the zoo's models",
                   description="Print the names of the zoo's models, one per line.")
    shapes = sub.add_parser(
        "shapes", help="report parameters, output shape, per-block table and peak activations",
        description="Build TARGET's parameters on the meta device (no data), run its forward "
        "on meta inputs\n(token ids int64 (B, S) for text models, images (B, 3, 224, 224) for "
        "ViT) and report a\nsummary (parameters, weights, peak activations, KV cache, the "
        "total and whether it fits),\nthen one row per block.",
        epilog=_SHAPES_HELP + "".join("\n" + f.HELP for f in sizing.features()
                                      if getattr(f, "HELP", None)),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    shapes.add_argument("target", metavar="TARGET",
                        help="a zoo model name, path/to/config.json or path/to/file.py:function")
    shapes.add_argument("--batch", type=_positive_int, help="batch size (default 1)")
    shapes.add_argument("--seq", type=_positive_int,
                        help=f"sequence length for text models (default {zoo.nn.DEFAULT_SEQ})")
    shapes.add_argument("--dtype", choices=list(DTYPES),
                        help="parameter and activation dtype (default: the config's "
                        "torch_dtype for a zoo model or config.json, else float32)")
    shapes.add_argument("--attention", choices=["sdpa", "eager"],
                        help="how zoo models compute attention (default sdpa): sdpa as "
                        "PyTorch's scaled_dot_product_attention with a fused kernel (the "
                        "(seq, seq) scores are never held), eager as softmax(q k^T) v written "
                        "out (scores and probabilities held per layer)")
    shapes.add_argument("--gpu-memory", metavar="SIZE", type=_size,
                        help="say whether the total fits in SIZE (e.g. 80GiB, 24GB)")
    shapes.add_argument("--plot", metavar="FILE", type=_plot_file,
                        help="draw the memory timeline (training step with --train, else the "
                        "inference forward) to FILE.png or FILE.svg; needs matplotlib "
                        '(pip install "subclass-kit[plot]")')
    shapes.add_argument("--json", action="store_true",
                        help="print one JSON object (fields: docs/sizing.md)")
    sizing.add_arguments(shapes)
    port = sub.add_parser(
        "port", help="rewrite PyTorch subclass/mode code to subclass_kit",
        description="Rewrite PyTorch tensor-subclass and mode code to subclass_kit.",
        epilog=_PORT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    port.add_argument("files", metavar="FILE", nargs="+", help="Python files to port")
    how = port.add_mutually_exclusive_group()
    how.add_argument("-w", "--write", action="store_true", help="rewrite the files in place")
    how.add_argument("--diff", action="store_true", help="print a unified diff per file")
    return parser


def main(argv=None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:      # argparse has printed usage or help
        return e.code if isinstance(e.code, int) else 2
    if args.command == "list":
        for name in zoo.list_models():
            print(name)
        return 0
    if args.command == "port":
        return _port(args)
    # Warnings the model's code raises (a --seq past the trained positions...) go into the
    # report, not to a stderr line the user may never see next to a long table.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            status, render = _shapes(args)
        except _UsageError as e:
            print(f"subclass-kit shapes: error: {e}", file=sys.stderr)
            return 2
    if status:
        return status
    model_warnings = []
    for w in caught:
        if issubclass(w.category, UserWarning):
            if str(w.message) not in model_warnings:     # once each, as Python's default
                model_warnings.append(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    text = render(model_warnings)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:      # `subclass-kit shapes ... | head`: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def _shapes(args):
    """Build, trace and measure; returns ``(status, render)``: ``render(warnings)`` makes the
    report text once the warnings are known. Raises _UsageError."""
    if args.plot:        # before the work: a missing matplotlib is known at once
        from .sizing import plot
        try:
            plot.require()
        except plot.PlotUnavailable as e:
            raise _UsageError(str(e)) from None
    try:
        model, inputs, name, config = _build(args)
    except _UserCodeError as e:
        usage = _too_large(e.__cause__, str(e))
        if usage is not None:
            raise usage from None
        print(f"subclass-kit shapes: error: {e} raised:", file=sys.stderr)
        import traceback    # error paths only: the import costs ~5 ms of every run
        traceback.print_exception(e.__cause__, file=sys.stderr)
        return 1, None
    ctx = sizing.SizingContext(model=model, inputs=inputs, name=name, args=args, config=config)
    if config is not None and args.dtype_from_config:
        ctx.notes.append(f"dtype {args.dtype}: the config's torch_dtype (--dtype to change)")
    chosen = sizing.wanted(args)
    try:
        sizing.prepare(ctx, chosen)
        ctx.summary = summary = zoo.summarize(model, inputs, name=name,
                                              timeline=bool(args.plot))
        sizing.run(ctx, chosen)
    except sizing.SizingError as e:
        raise _UsageError(str(e)) from None
    except Exception as e:
        usage = _too_large(e, name)
        if usage is not None:
            raise usage from None
        print(f"subclass-kit shapes: error: the forward of {name} raised:", file=sys.stderr)
        import traceback
        traceback.print_exc(file=sys.stderr)
        return 1, None
    if args.plot:
        _plot(args.plot, ctx)
    options = {"attention": args.attention, "gpu_memory": args.gpu_memory}

    def render(model_warnings):
        if args.json:
            import json
            for message in model_warnings:
                print(f"subclass-kit shapes: warning: {message}", file=sys.stderr)
            return json.dumps(report.json_report(summary, ctx.results, chosen, notes=ctx.notes,
                                                 warnings=model_warnings, **options))
        extra = [line for f in chosen for line in f.format(ctx.results[f.NAME])]
        notes = ctx.notes + [f"warning: {m}" for m in model_warnings]
        return report.format_report(summary, ctx.results, extra, notes, ascii_only=not _can_print(
            "\u2013\u00d7"), **options)
    return 0, render


def _can_print(text: str) -> bool:
    """Whether stdout's encoding can write ``text`` (an ASCII terminal cannot write ``×``)."""
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _plot(path: str, ctx) -> None:
    """Draw the training step's timeline (``--train``) or the inference one into ``path``."""
    from .sizing import plot, timeline
    train = ctx.results.get("train")
    points = train.get("timeline") if isinstance(train, dict) else None
    what = "training step"
    if not points:
        points, what = ctx.summary.timeline, "inference forward"
    title = f"{ctx.name}: {what}"
    try:
        plot.draw(timeline.downsample(points), path, title=title)
    except OSError as e:
        raise _UsageError(f"--plot: cannot write {path}: {e}") from None
    except ValueError as e:      # no op ran: nothing to draw
        raise _UsageError(f"--plot: {ctx.name}: {e}") from None


def _port(args) -> int:
    """``subclass-kit port``: see _PORT_HELP."""
    import difflib

    from .port import port_source
    status = 0
    for path in args.files:
        try:
            with open(path, encoding="utf-8") as f:
                source = f.read()
            new, warnings = port_source(source)
        except (OSError, SyntaxError, UnicodeDecodeError) as e:
            print(f"subclass-kit port: error: {path}: {e}", file=sys.stderr)
            return 2
        for w in warnings:
            print(f"{path}:{w.line}: warning: {w.message}", file=sys.stderr)
        if args.write:
            if new != source:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print(f"rewrote {path}", file=sys.stderr)
                status = 1
        elif args.diff:
            diff = list(difflib.unified_diff(source.splitlines(True), new.splitlines(True),
                                             path, path))
            sys.stdout.writelines(line if line.endswith("\n") else line + "\n"
                                  for line in diff)
            status = 1 if diff else status
        else:
            if len(args.files) > 1:
                print(f"# ==> {path} <==")
            sys.stdout.write(new)
    sys.stdout.flush()
    return status


# -- building the model ------------------------------------------------------------------------
def _build(args):
    """(model, inputs, display name, config or None) for the target; raises _UsageError.

    A zoo name and a config.json are one path (the zoo's models are shipped config.json
    files). For them, resolves ``args.dtype`` (the --dtype given, else the config's
    ``torch_dtype``, else float32; ``args.dtype_from_config`` says which) and
    ``args.attention`` (default sdpa)."""
    target = args.target
    args.dtype_from_config = False
    path, sep, func = target.rpartition(":")
    if sep and path.endswith(".py"):
        if args.attention is not None:
            raise _UsageError(f"{target}: --attention chooses the attention of zoo models and "
                              "configs; a user function's code decides its own")
        return (*_build_from_file(path, func, args), None)
    if target.endswith(".py"):
        raise _UsageError(f"{target}: name the function to call: {target}:function")
    args.attention = args.attention or "sdpa"
    try:
        if target.endswith(".json"):
            config = zoo.config.load(target, {"name_or_path": target,
                                              "attn_implementation": args.attention})
        else:
            config = zoo.get_config(target, attn_implementation=args.attention)
        if args.dtype is None:
            named = getattr(config, "torch_dtype", None)
            args.dtype = zoo.config_dtype(config).name if named else "float32"
            args.dtype_from_config = bool(named)
        model = zoo.build(config, dtype=DTYPES[args.dtype], device="meta")
    except ValueError as e:
        raise _UsageError(str(e)) from None
    try:
        inputs = model.example_inputs(batch=args.batch or 1, seq=args.seq, device="meta")
    except ValueError as e:
        raise _UsageError(f"{target}: {e}") from None
    except RuntimeError as e:
        usage = _too_large(e, target)
        if usage is None:
            raise
        raise usage from None
    return model, inputs, target, config


def load_function(path: str, func: str):
    """The function ``func`` defined in the Python file ``path``; raises _UsageError for a
    missing file, a file that fails to import (syntax error...), or a missing function."""
    if not func:
        raise _UsageError(f"{path}: name the function to call: {path}:function")
    if not os.path.isfile(path):
        raise _UsageError(f"{path}: no such file")
    mod_name = "_subclass_kit_user_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)       # let the file import its neighbours
    sys.modules[mod_name] = module   # as an import would (dataclasses, pickle look it up)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        del sys.modules[mod_name]
        raise _UsageError(f"{path}: cannot load: SyntaxError: {e.msg} (line {e.lineno})") \
            from None
    except Exception as e:
        del sys.modules[mod_name]
        raise _UsageError(f"{path}: cannot load: {type(e).__name__}: {e}") from None
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    fn = getattr(module, func, None)
    if fn is None:
        names = sorted(n for n, v in vars(module).items()
                       if inspect.isfunction(v) and v.__module__ == mod_name)
        raise _UsageError(f"{path}: no function {func!r} (functions defined there: "
                          f"{', '.join(names) or 'none'})")
    if not callable(fn):
        raise _UsageError(f"{path}: {func!r} is not callable")
    return fn


def _call_kwargs(fn, args, label: str) -> dict:
    """The keyword arguments for the user function: given options, plus device="meta"."""
    given = {"batch": args.batch, "seq": args.seq,
             "dtype": DTYPES[args.dtype] if args.dtype else None}
    given = {k: v for k, v in given.items() if v is not None}
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for key in given:
        if not takes_any and key not in params:
            raise _UsageError(f"{label}() takes no {key!r} argument, so --{key} cannot be "
                              "used with it")
    if takes_any or "device" in params:
        given["device"] = "meta"
    for name, p in params.items():
        # A parameter only the command line could fill, and it cannot: a usage error, not a
        # TypeError traceback from the call.
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) \
                and name not in given:
            option = f"; give --{name}" if name in ("batch", "seq", "dtype") else ""
            raise _UsageError(f"{label}() needs a value for its parameter {name!r}, which the "
                              f"command line passes only for batch, seq, dtype and "
                              f"device{option}")
        if p.kind is p.POSITIONAL_ONLY and p.default is p.empty:
            raise _UsageError(f"{label}() has a required positional-only parameter {name!r}; "
                              "the command line passes keyword arguments only")
    return given


def _build_from_file(path, func, args):
    label = f"{path}:{func}"
    fn = load_function(path, func)
    kwargs = _call_kwargs(fn, args, label)
    try:
        result = fn(**kwargs)
    except Exception as e:
        raise _UserCodeError(label) from e
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and callable(result[0])):
        raise _UsageError(f"{label} must return (model, example_inputs) with a callable model; "
                          f"got {type(result).__name__}")
    model, inputs = result
    if not isinstance(inputs, (tuple, list, sk.Tensor)):
        raise _UsageError(f"{label} must return (model, example_inputs) with example_inputs a "
                          f"tuple of positional arguments or a single tensor; got "
                          f"{type(inputs).__name__}")
    return model, inputs, label


if __name__ == "__main__":
    sys.exit(main())
