"""The report of ``subclass-kit shapes``: the summary lines, the total memory and whether it
fits a GPU, the block table with repeated identical blocks collapsed, and the ``--json``
object. Pure formatting: everything here reads a ``zoo.Summary`` and the features' sections.
"""

from __future__ import annotations

import re

__all__ = ["human_bytes", "parse_size", "total_memory", "collapse_blocks", "format_report",
           "json_report"]

_BINARY = {"b": 1, "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4}
_DECIMAL = {"kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4}


def human_bytes(n: int) -> str:
    """``1536`` -> ``"1.5 KiB"`` (binary units)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def parse_size(text: str) -> int:
    """``"80GiB"`` -> ``85899345920``; ``"24GB"`` -> ``24000000000``: a number (decimals
    allowed) and a unit, B, KiB/MiB/GiB/TiB (powers of 1024) or KB/MB/GB/TB (powers of 1000,
    as GPU vendors count), case-insensitive, optional space. Raises ValueError naming the text
    for anything else (a bare number is refused: its unit would be a guess)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]+)\s*", text)
    unit = match and match.group(2).lower()
    scale = _BINARY.get(unit) or _DECIMAL.get(unit) if match else None
    if scale is None:
        raise ValueError(f"invalid size {text!r}: give a number and a unit, e.g. 80GiB or 24GB "
                         "(units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    return int(float(match.group(1)) * scale)


def total_memory(summary, results: dict) -> tuple:
    """``(bytes, basis)``: the memory the report says the run needs at its peak, and which
    figures it adds up. With sharding, the largest rank's peak (``per_rank.peak``); with
    ``--train``, the training step's peak (``train.peak``: parameters, gradients, optimizer
    states, activations and temporaries live at once); else inference: parameter bytes + KV
    cache bytes (with ``--kv-cache``) + peak activation bytes. Allocator rounding, the CUDA
    context and kernel workspaces are left out."""
    per_rank = results.get("per_rank")
    if isinstance(per_rank, dict) and "peak" in per_rank:
        return per_rank["peak"], "per_rank.peak (the largest rank's peak)"
    train = results.get("train")
    if isinstance(train, dict) and "peak" in train:
        return train["peak"], "train.peak (the training step's peak)"
    kv = results.get("kv_cache", {}).get("kv_cache_bytes")
    total = summary.parameter_bytes + summary.peak_activation_bytes + (kv or 0)
    basis = "parameter_bytes + " + ("kv_cache_bytes + " if kv is not None else "") + \
        "peak_activation_bytes"
    return total, basis


# JSON names in the total's basis -> the report's labels.
_LABELS = {"parameter_bytes": "parameter bytes", "kv_cache_bytes": "KV cache",
           "peak_activation_bytes": "peak activations"}

_INDEXED = re.compile(r"(.*)\.(\d+)$")


def collapse_blocks(blocks: list, *, dash: str = "\u2013", times: str = "\u00d7") -> list:
    """Table rows ``(label, row)``: consecutive rows ``prefix.i``, ``prefix.i+1``... with the
    same output shape, dtype, parameters and cumulative allocated bytes become one row labelled
    ``prefix.i–j ×n`` (``dash``/``times`` let an ASCII terminal get ``-``/``x``); every other
    row keeps its name."""
    out = []
    i = 0
    while i < len(blocks):
        row = blocks[i]
        match = _INDEXED.match(row.name)
        j = i + 1
        if match:
            prefix, start = match.group(1), int(match.group(2))
            while j < len(blocks):
                nxt = _INDEXED.match(blocks[j].name)
                if not (nxt and nxt.group(1) == prefix
                        and int(nxt.group(2)) == start + (j - i) and _same(row, blocks[j])):
                    break
                j += 1
        if j - i > 1:
            out.append((f"{prefix}.{start}{dash}{start + j - i - 1} {times}{j - i}", row))
        else:
            out.append((row.name, row))
        i = j
    return out


def _same(a, b) -> bool:
    return (a.output_shape == b.output_shape and a.dtype == b.dtype
            and a.parameters == b.parameters
            and a.cumulative_allocated_bytes == b.cumulative_allocated_bytes)


def _shape_text(shape) -> str:
    if shape is None:
        return "-"
    if shape and isinstance(shape[0], list):
        return ", ".join(_shape_text(s) for s in shape)
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _bytes_text(n: int) -> str:
    return f"{n:,} ({human_bytes(n)})"


def format_report(s, results: dict | None = None, extra=(), notes=(), *, attention=None,
                  gpu_memory=None, ascii_only: bool = False) -> str:
    """The human-readable report of a ``Summary``: the summary lines (model, inputs, output,
    parameters, weights, peak activations, then ``extra``, the features' ``(label, text)``
    pairs, then the total and whether it fits ``gpu_memory`` bytes), ``notes``, then the
    aligned block table with identical repeated blocks collapsed."""
    results = results or {}
    outputs = ", ".join(_shape_text(shape) for shape in s.output_shapes) or "-"
    inputs = ", ".join(f"{_shape_text(shape)} {dtype}"
                       for shape, dtype in zip(s.input_shapes, s.input_dtypes)) or "-"
    peak = _bytes_text(s.peak_activation_bytes) + " inference forward"
    if attention:
        peak += f", {attention} attention"
    head = [
        ("model", s.model),
        ("inputs", inputs),
        ("output", f"{outputs} {s.dtype or ''}".rstrip()),
        ("parameters", f"{s.parameters:,}"),
    ]
    active = getattr(s, "active_parameters", None)
    if active is not None:
        head.append(("active parameters", f"{active:,} per token (mixture of experts)"))
    head += [("parameter bytes", _bytes_text(s.parameter_bytes)), ("peak activations", peak)]
    head.extend(extra)
    total, basis = total_memory(s, results)
    for name, label in _LABELS.items():
        basis = basis.replace(name, label)
    head.append(("total", f"{_bytes_text(total)}: {basis}"))
    if gpu_memory is not None:
        verdict = "yes" if total <= gpu_memory else "no"
        head.append(("fits", f"{verdict}: {_bytes_text(total)} of {_bytes_text(gpu_memory)} "
                             f"({100 * total / gpu_memory:.0f}%)"))
    width = max(len(k) for k, _ in head)
    lines = [f"{k:<{width}}  {v}" for k, v in head]
    lines.extend(f"note: {note}" for note in notes)
    dash, times = ("-", "x") if ascii_only else ("\u2013", "\u00d7")
    table = [("block", "output shape", "parameters", "allocated (cumulative)")]
    rows = collapse_blocks(s.blocks, dash=dash, times=times)
    for label, row in rows:
        nbytes = row.cumulative_allocated_bytes
        table.append((label, _shape_text(row.output_shape), f"{row.parameters:,}",
                      f"{nbytes:,}  {human_bytes(nbytes):>9}"))
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines.append("")
    for i, r in enumerate(table):
        lines.append(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  "
                     f"{r[3]:>{widths[3]}}".rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    if len(rows) < len(s.blocks):
        lines.append(f"(a row name.i{dash}j {times}n stands for n identical blocks; its numbers "
                     "are those of one block)")
    return "\n".join(lines)


def json_report(s, results: dict, features: list, *, notes=(), warnings=(), attention=None,
                gpu_memory=None) -> dict:
    """The ``--json`` object: the summary's fields, each feature's section under its ``NAME``
    (or merged into the top level when the feature sets ``JSON_TOP_LEVEL``), ``attention``,
    ``total_memory_bytes`` with its ``total_memory_basis``, ``gpu_memory_bytes`` and ``fits``
    with ``--gpu-memory``, and the ``notes`` and ``warnings`` lists."""
    out = s.to_dict()
    for feature in features:
        section = results[feature.NAME]
        if getattr(feature, "JSON_TOP_LEVEL", False):
            out.update(section)
        else:
            out[feature.NAME] = section
    if attention is not None:
        out["attention"] = attention
    out["total_memory_bytes"], out["total_memory_basis"] = total_memory(s, results)
    if gpu_memory is not None:
        out["gpu_memory_bytes"] = gpu_memory
        out["fits"] = out["total_memory_bytes"] <= gpu_memory
    out["notes"] = list(notes)
    out["warnings"] = list(warnings)
    return out
