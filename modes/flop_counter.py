"""FLOP counting: how many floating-point operations a program's matrix products take.

What it is
    ``FlopCounterMode`` is a context manager around a dispatch mode. Every op reaching the mode
    whose op packet has a *FLOP formula* is counted, under ``"Global"`` and under every
    ``sk.nn`` module running at that moment (``ModuleTracker`` names: ``"MLP"``,
    ``"MLP.fc1"``), in the forward and, when ``.backward()`` runs inside the context, in the
    backward (the backward ops of a module are attributed to it, as PyTorch does)::

        with FlopCounterMode(display=False) as counter:
            model(x).sum().backward()
        counter.get_total_flops()          # int
        counter.get_flop_counts()          # {"Global": {sk.ops.mm: n, ...}, "MLP.fc1": {...}}
        print(counter.get_table(depth=2))

    Formulas (PyTorch's ``torch/utils/flop_counter.py``; a multiply-add counts 2, bias adds,
    softmax and pointwise ops count nothing): ``mm`` (m, k) @ (k, n) = ``2 m n k``; ``addmm``
    the same; ``bmm`` (b, m, k) @ (b, k, n) = ``2 b m n k``; ``baddbmm`` the same;
    ``_scaled_dot_product_flash_attention_for_cpu`` the two products of attention,
    ``2 b h_q s_q s_k (d_q + d_v)`` (causal masking not discounted, GQA heads counted at the
    query's count); its backward five products (the scores recomputed, then the gradients of
    scores, value, query and key). ``matmul``, ``linear``, ``einsum`` and the math attention
    decompose to these ops before the mode sees them, so they are counted through them.
    ``register_flop_formula(op)`` adds a formula for another op; ``custom_mapping`` does it
    for one counter.

Which PyTorch feature it mirrors
    ``torch.utils.flop_counter.FlopCounterMode`` and ``register_flop_formula``: same
    constructor (``mods`` is accepted and ignored, as PyTorch's now is), same formulas and the
    same counts (the suite compares with torch on twin models), same module names. Difference:
    PyTorch 2.13's registry has the fused attention of CUDA but not the CPU one, so torch on CPU
    counts 0 FLOPs for a fused ``scaled_dot_product_attention``; we count the CPU op with the
    formula PyTorch uses for the fused GPU ops (docs/differences.md). The table is plain text
    (PyTorch's needs ``tabulate``).

Where it sits in the mode stack
    An ordinary dispatch mode: it sees ops after composites decomposed and after the autograd
    layer (so the backward's ops too), runs each op below itself, then counts it. Ops that a
    subclass handler runs internally happen below it and are not counted.
"""

from __future__ import annotations

import functools
from collections import defaultdict

import subclass_kit as sk

from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula", "flop_registry"]

# ``sk.OpOverloadPacket`` (``sk.ops.mm``) -> formula(*args, out_val=..., **kwargs) -> int
flop_registry: dict = {}


def _packet(op):
    return op.overloadpacket if isinstance(op, sk.OpOverload) else op


def _shape(value):
    return value.shape if isinstance(value, sk.Tensor) else value


def _shapes(value):
    if isinstance(value, sk.Tensor):
        return value.shape
    if isinstance(value, (list, tuple)):
        return type(value)(_shapes(v) for v in value)
    if isinstance(value, dict):
        return {k: _shapes(v) for k, v in value.items()}
    return value


def _shape_wrapper(formula):
    """Call ``formula`` with every tensor argument (and the output, as ``out_shape``) replaced
    by its shape (PyTorch's ``shape_wrapper``)."""
    @functools.wraps(formula)
    def wrapped(*args, out_val=None, **kwargs):
        return formula(*_shapes(args), out_shape=_shapes(out_val), **_shapes(kwargs))
    return wrapped


def register_flop_formula(targets, get_raw: bool = False):
    """Decorator: ``formula`` counts the FLOPs of the op(s) ``targets`` (an ``sk.ops`` op, any
    overload standing for all, or a list of them). The formula receives the op's arguments
    with tensors replaced by their shapes and the output's shape as ``out_shape=``; with
    ``get_raw=True`` the tensors themselves and the output as ``out_val=``. Returns the
    formula unchanged (PyTorch's ``register_flop_formula``).

    Raises ValueError for a target that is not an op, RuntimeError when the op already has
    a formula.
    """
    def register(formula):
        wrapped = formula if get_raw else _shape_wrapper(formula)
        for target in (targets if isinstance(targets, (list, tuple)) else [targets]):
            if not isinstance(target, (sk.OpOverload, sk.OpOverloadPacket)):
                raise ValueError(f"register_flop_formula(targets): expected each target to be "
                                 f"an op (i.e. sk.ops.mylib.foo), got {target} which is of "
                                 f"type {type(target)}")
            packet = _packet(target)
            if packet in flop_registry:
                raise RuntimeError(f"duplicate registrations for {packet}")
            flop_registry[packet] = wrapped
        return formula
    return register


# -- the formulas ---------------------------------------------------------------------------
@register_flop_formula(sk.ops.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """``2 m n k`` for (m, k) @ (k, n) (a multiply-add is 2 FLOPs, as PyTorch counts)."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


@register_flop_formula(sk.ops.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """The product's FLOPs; the bias add is not counted."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(sk.ops.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """``2 b m n k`` for (b, m, k) @ (b, k, n)."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@register_flop_formula(sk.ops.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """The batched product's FLOPs; the added tensor is not counted."""
    return bmm_flop(a_shape, b_shape)


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Attention's two products, ``q @ k^T`` and ``scores @ v``, over ``b * h_q`` heads
    (GQA: key/value heads broadcast to the query's). Shapes ``(b, h, s, d)``."""
    b, h_q, s_q, d_q = query_shape
    b2, h_kv, s_k, d2 = key_shape
    b3, h3, s3, d_v = value_shape
    if not (b == b2 == b3 and h_kv == h3 and d_q == d2 and s_k == s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of "
                             f"key/value heads ({h_kv})")
    return (bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
            + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v)))


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """Attention's backward: the scores recomputed, then the products giving the gradients
    of the scores, value, query and key (five products, PyTorch's count)."""
    b, h_q, s_q, d_q = query_shape
    b2, h_kv, s_k, d2 = key_shape
    b3, h3, s3, d_v = value_shape
    b4, h4, s4, d4 = grad_out_shape
    if not (b == b2 == b3 == b4 and h_kv == h3 and h_q == h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a "
                             f"multiple of key/value heads ({h_kv})")
    if not (d_q == d2 and d_v == d4 and s_k == s3 and s_q == s4):
        raise AssertionError("sdpa_backward_flop_count: grad_out/value/key/query shapes are "
                             "incompatible")
    bh = b * h_q
    return (bmm_flop((bh, s_q, d_q), (bh, d_q, s_k))        # scores, recomputed
            + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))      # grad of the scores
            + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v))      # grad of value
            + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))      # grad of query
            + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k)))     # grad of key


@register_flop_formula(sk.ops._scaled_dot_product_flash_attention_for_cpu)
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """The fused attention's two products (causal masking not discounted, as PyTorch)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


@register_flop_formula(sk.ops._scaled_dot_product_flash_attention_for_cpu_backward)
def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs) -> int:
    """The fused attention backward's five products."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


# -- the table ------------------------------------------------------------------------------
_SUFFIXES = ["", "K", "M", "B", "T"]


def _suffix(number: int) -> str:
    # 1.01B shows as 1001M, as PyTorch's table does
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def _with_suffix(number: int, suffix: str) -> str:
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}{suffix}"


def _percent(num: int, denom: int) -> str:
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _op_label(op) -> str:
    return f"sk.ops.{op.name}" if isinstance(op, sk.OpOverload) else str(op)


class _Mode(sk.DispatchMode):
    def __init__(self, counter: "FlopCounterMode"):
        self.counter = counter

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        counter = self.counter
        packet = func.overloadpacket
        formula = counter.flop_registry.get(packet)
        if formula is not None:
            flops = formula(*args, **kwargs, out_val=out)
            for parent in set(counter.mod_tracker.parents):
                counter.flop_counts[parent][packet] += flops
        return out


class FlopCounterMode:
    """Count FLOPs per op and per module inside a ``with`` block (see the module docstring).

    ``mods``: ignored (PyTorch warns that it is no longer needed; so do we). ``depth``: the
    module depth ``get_table`` shows by default. ``display``: print the table on exit.
    ``custom_mapping``: ``{op: formula}`` added to (or replacing) the registry for this
    counter, formulas taking shapes as ``register_flop_formula`` ones do (or tensors, when
    marked ``formula._get_raw = True``). Not reentrant; entering again clears the counts.
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping: dict | None = None):
        self.flop_counts: dict = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        if mods is not None:
            import warnings
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        custom = {_packet(k): v if getattr(v, "_get_raw", False) else _shape_wrapper(v)
                  for k, v in (custom_mapping or {}).items()}
        self.flop_registry = {**flop_registry, **custom}
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self) -> int:
        """FLOPs of every counted op (the ``"Global"`` row)."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """``{module name or "Global": {op packet: FLOPs}}``: plain dicts, a copy."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """A text table of the counts per module (to ``depth`` levels, default the
        constructor's) and per op, with the share of the total (PyTorch's layout: the
        ``Global`` row only when some FLOPs fall outside every module)."""
        depth = self.depth if depth is None else depth
        if depth is None:
            depth = 999999
        total = self.get_total_flops()
        suffix = _suffix(total)
        subsumed = False

        def rows_of(name, level):
            nonlocal subsumed
            mod_total = sum(self.flop_counts[name].values())
            subsumed |= mod_total >= total
            pad = " " * level
            rows = [[pad + name, _with_suffix(mod_total, suffix), _percent(mod_total, total)]]
            for op, n in self.flop_counts[name].items():
                rows.append([pad + " - " + _op_label(op), _with_suffix(n, suffix),
                             _percent(n, total)])
            return rows

        rows = []
        for name in sorted(k for k in self.flop_counts if k != "Global"):
            level = name.count(".") + 1
            if level <= depth:
                rows.extend(rows_of(name, level - 1))
        if "Global" in self.flop_counts and not subsumed:
            for row in rows:
                row[0] = " " + row[0]
            rows = rows_of("Global", 0) + rows
        if not rows:
            rows = [["Global", "0", "0%"]]
        header = ["Module", "FLOP", "% Total"]
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(3)]

        def line(r):
            return (f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}").rstrip()
        rule = "  ".join("-" * w for w in widths)
        return "\n".join([line(header), rule] + [line(r) for r in rows])

    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _Mode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        mode, self.mode = self.mode, None
        result = mode.__exit__(*exc)
        self.mod_tracker.__exit__(*exc)
        if self.display:
            print(self.get_table(self.depth))
        return result
