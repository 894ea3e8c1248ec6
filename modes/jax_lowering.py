"""``Graph.to_jax()``: lower a functional graph to a pure ``jax.numpy`` function.

A graph captured from ``functionalize(fn)`` has no mutating op except the input-mutation
epilogue (``copy_(x, new)``, after ``as_strided_(x, ...)`` for a metadata mutation). JAX arrays are
immutable, so the lowered function returns the outputs and, when the graph mutates inputs,
``(outputs, new_inputs)`` where ``new_inputs`` holds the final value of each mutated input in
placeholder order (``fn.mutated_inputs`` lists their positions): what a compiler's caller copies
back. Any other mutating node makes lowering fail with a ValueError naming the node.

Lowerings take JAX arrays (``jnp``) for tensors and Python values for the rest. ``jnp`` arrays
have no strides, so ``as_strided`` / ``as_strided_scatter`` / ``unfold`` index the row-major
flattening of their input: right for the contiguous bases functionalization produces, and a
documented limit otherwise (docs/functionalization.md). Integer and float64 results keep their
dtype only with ``jax.config.update("jax_enable_x64", True)``.
"""

from __future__ import annotations

import numpy as np

import subclass_kit as sk

__all__ = ["lower", "LOWERINGS"]


def _jnp():
    try:
        import jax.numpy as jnp
    except ImportError as e:     # the optional extra
        raise ImportError("Graph.to_jax() needs JAX: pip install 'subclass-kit[jax]' "
                          "(or pip install jax)") from e
    return jnp


def _dt(jnp, dtype):
    return None if dtype is None else getattr(jnp, dtype.name)


def _norm_dim(d, n):
    return d % n if n else 0


def _slices(x, dim, start, end, step):
    n = x.ndim
    dim = _norm_dim(dim, n)
    idx = [slice(None)] * n
    idx[dim] = slice(start, end, step)
    return tuple(idx)


def _strided_index(shape_in, size, stride, offset):
    grids = np.indices(tuple(size), dtype=np.int64) if size else np.zeros((0,), np.int64)
    flat = np.full(tuple(size), offset or 0, dtype=np.int64)
    for g, s in zip(grids, stride):
        flat = flat + g * s
    return flat


def _diag_index(shape, offset, d1, d2):
    n = len(shape)
    d1, d2 = _norm_dim(d1, n), _norm_dim(d2, n)
    rows = shape[d1] - max(-offset, 0)
    cols = shape[d2] - max(offset, 0)
    k = max(min(rows, cols), 0)
    i = np.arange(k) + max(-offset, 0)
    j = np.arange(k) + max(offset, 0)
    return d1, d2, i, j


def _build(jnp):
    L = {}

    def reg(names, fn):
        for name in names.split():
            L[name] = fn

    ident = lambda x, *a, **k: x                                          # noqa: E731
    reg("alias.default alias_copy.default detach.default detach_copy.default clone.default "
        "lift_fresh_copy.default lift_fresh.default", ident)
    reg("view.default view_copy.default _unsafe_view.default",
        lambda x, size: jnp.reshape(x, tuple(size)))
    def view_dtype(x, dtype):
        import jax
        return jax.lax.bitcast_convert_type(x, _dt(jnp, dtype))     # same itemsize only
    reg("view.dtype view_copy.dtype", view_dtype)
    reg("t.default t_copy.default", lambda x: x.T if x.ndim == 2 else x)
    reg("transpose.int transpose_copy.int", lambda x, a, b: jnp.swapaxes(x, a, b))
    reg("permute.default permute_copy.default", lambda x, dims: jnp.transpose(x, tuple(dims)))

    def expand(x, size, implicit=False):
        lead = len(size) - x.ndim
        shape = [x.shape[i - lead] if s == -1 else s for i, s in enumerate(size)]
        return jnp.broadcast_to(x, tuple(shape))
    reg("expand.default expand_copy.default", expand)

    def squeeze(x, dims):
        ds = tuple(d for d in {_norm_dim(d, x.ndim) for d in dims} if x.shape[d] == 1)
        return jnp.squeeze(x, ds) if ds else x
    reg("squeeze.dims squeeze_copy.dims", squeeze)
    reg("unsqueeze.default unsqueeze_copy.default",
        lambda x, d: jnp.expand_dims(x, _norm_dim(d, x.ndim + 1)))
    reg("select.int select_copy.int", lambda x, d, i: jnp.take(x, i, axis=d))
    reg("slice.Tensor slice_copy.Tensor",
        lambda x, dim=0, start=None, end=None, step=1: x[_slices(x, dim, start, end, step)])

    def diagonal(x, offset=0, d1=0, d2=1):
        return jnp.diagonal(x, offset, d1, d2)
    reg("diagonal.default diagonal_copy.default", diagonal)

    def split(x, size, dim=0):
        n = x.shape[_norm_dim(dim, x.ndim)]
        return [x[_slices(x, dim, s, min(s + size, n), 1)] for s in range(0, n, size)] or [x]
    reg("split.Tensor split_copy.Tensor", split)

    def split_sizes(x, sizes, dim=0):
        starts = np.cumsum([0] + list(sizes))
        return [x[_slices(x, dim, int(a), int(b), 1)] for a, b in zip(starts, starts[1:])]
    reg("split_with_sizes.default split_with_sizes_copy.default", split_sizes)
    reg("unbind.int unbind_copy.int",
        lambda x, dim=0: [jnp.take(x, i, axis=dim) for i in range(x.shape[dim])])

    def as_strided(x, size, stride, offset=None):
        return jnp.ravel(x)[_strided_index(x.shape, size, stride, offset)]
    reg("as_strided.default as_strided_copy.default", as_strided)

    def unfold(x, dim, size, step):
        probe = sk.empty_strided(x.shape, sk.empty(x.shape, device="meta").stride(),
                                 device="meta").unfold(dim, size, step)
        return as_strided(x, probe.shape, probe.stride(), 0)
    reg("unfold.default unfold_copy.default", unfold)

    # scatters
    def select_scatter(x, src, dim, i):
        idx = [slice(None)] * x.ndim
        idx[_norm_dim(dim, x.ndim)] = i
        return x.at[tuple(idx)].set(src.astype(x.dtype))
    reg("select_scatter.default", select_scatter)
    reg("slice_scatter.default", lambda x, src, dim=0, start=None, end=None, step=1:
        x.at[_slices(x, dim, start, end, step)].set(src.astype(x.dtype)))

    def diagonal_scatter(x, src, offset=0, d1=0, d2=1):
        d1, d2, i, j = _diag_index(x.shape, offset, d1, d2)
        moved = jnp.moveaxis(x, (d1, d2), (-2, -1))
        moved = moved.at[..., i, j].set(src.astype(x.dtype))
        return jnp.moveaxis(moved, (-2, -1), (d1, d2))
    reg("diagonal_scatter.default", diagonal_scatter)

    def as_strided_scatter(x, src, size, stride, offset=None):
        flat = jnp.ravel(x).at[_strided_index(x.shape, size, stride, offset)].set(
            src.astype(x.dtype))
        return jnp.reshape(flat, x.shape)
    reg("as_strided_scatter.default", as_strided_scatter)
    # the views' backward ops: their scatter into zeros of input_sizes (grad broadcast)
    reg("select_backward.default", lambda g, sizes, dim, i:
        select_scatter(jnp.zeros(tuple(sizes), g.dtype), g, dim, i))

    def slice_backward(g, sizes, dim, start, end, step):
        zeros = jnp.zeros(tuple(sizes), g.dtype)
        return zeros.at[_slices(zeros, dim, start, end, step)].set(g)
    reg("slice_backward.default", slice_backward)
    reg("diagonal_backward.default", lambda g, sizes, offset, d1, d2:
        diagonal_scatter(jnp.zeros(tuple(sizes), g.dtype), g, offset, d1, d2))

    # functional variants and factories
    reg("copy.default", lambda x, src, non_blocking=False:
        jnp.broadcast_to(src, x.shape).astype(x.dtype))
    reg("fill.Scalar fill.Tensor", lambda x, v: jnp.full_like(x, v))
    reg("zero.default", lambda x: jnp.zeros_like(x))
    reg("full.default", lambda size, v, dtype=None, device=None, **k:
        jnp.full(tuple(size), v, dtype=_dt(jnp, dtype)))
    reg("empty.memory_format", lambda size, dtype=None, device=None, memory_format=None, **k:
        jnp.zeros(tuple(size), dtype=_dt(jnp, dtype) or jnp.float32))
    reg("_to_copy.default", lambda x, dtype=None, **k: x.astype(_dt(jnp, dtype) or x.dtype))

    def resize(x, size, memory_format=None):
        n = int(np.prod(size)) if size else 1
        flat = jnp.ravel(x)
        flat = flat[:n] if flat.size >= n else jnp.pad(flat, (0, n - flat.size))
        return jnp.reshape(flat, tuple(size))
    reg("resize.default", resize)

    # math the corpus uses
    reg("add.Tensor add.Scalar", lambda a, b, alpha=1: a + alpha * b)
    reg("sub.Tensor sub.Scalar", lambda a, b, alpha=1: a - alpha * b)
    reg("mul.Tensor mul.Scalar", lambda a, b: a * b)
    reg("div.Tensor div.Scalar", lambda a, b: a / b)
    reg("rsub.Tensor rsub.Scalar", lambda a, b, alpha=1: b - alpha * a)
    reg("reciprocal.default", lambda a: 1 / a)
    reg("floor_divide.default", jnp.floor_divide)
    reg("neg.default", lambda a: -a)
    reg("relu.default", lambda a: jnp.maximum(a, 0))
    reg("exp.default", jnp.exp)
    reg("clamp.default", lambda a, lo=None, hi=None: jnp.clip(a, lo, hi))
    reg("bitwise_and.Tensor bitwise_and.Scalar", lambda a, b: a & b)
    for name, fn in (("gt", jnp.greater), ("lt", jnp.less), ("ge", jnp.greater_equal),
                     ("le", jnp.less_equal), ("eq", jnp.equal), ("ne", jnp.not_equal)):
        reg(f"{name}.Tensor {name}.Scalar", fn)
    reg("sum.default", lambda a, dtype=None: jnp.sum(a))
    reg("sum.dim_IntList", lambda a, dims, keepdim=False, dtype=None:
        jnp.sum(a, axis=tuple(dims) if dims else None, keepdims=keepdim))
    reg("masked_fill.Scalar masked_fill.Tensor", lambda a, m, v: jnp.where(m, v, a))
    reg("where.self", lambda c, a, b: jnp.where(c, a, b))
    reg("cat.default", lambda ts, dim=0: jnp.concatenate(ts, axis=dim))
    reg("stack.default", lambda ts, dim=0: jnp.stack(ts, axis=dim))
    reg("mm.default", jnp.matmul)

    def index_put(x, indices, values, accumulate=False):
        if len(indices) == 1 and indices[0] is not None and indices[0].dtype == jnp.bool_ \
                and indices[0].shape == x.shape:      # a full mask: traceable as a where
            return jnp.where(indices[0], x + values if accumulate else values, x).astype(x.dtype)
        idx = tuple(slice(None) if i is None else i for i in indices)
        ref = x.at[idx]
        return ref.add(values) if accumulate else ref.set(values)
    reg("index_put.default", index_put)

    def scatter(x, dim, index, src):
        grids = list(np.indices(index.shape))
        grids[dim] = index
        return x.at[tuple(grids)].set(src[tuple(slice(0, s) for s in index.shape)])
    reg("scatter.src", scatter)

    def index_add(x, dim, index, source, alpha=1):
        idx = [slice(None)] * x.ndim
        idx[dim] = index
        return x.at[tuple(idx)].add(alpha * source)
    reg("index_add.default", index_add)
    return L


LOWERINGS: dict = {}


def _epilogue_target(graph, node):
    """The placeholder an epilogue ``copy_`` / ``as_strided_`` / ``resize_`` writes, or None."""
    if node.op.__name__ not in ("copy_.default", "as_strided_.default", "resize_.default"):
        return None
    target = node.args[0]
    while target.node.kind == "call" and target.node.op.is_inplace:
        target = target.node.args[0]
    return target.node if target.node.kind == "placeholder" else None


def lower(graph):
    """See the module docstring (``Graph.to_jax``)."""
    jnp = _jnp()
    if not LOWERINGS:
        LOWERINGS.update(_build(jnp))
    from .graph import Ref
    placeholders = graph.placeholders
    writes = {}
    for n in graph.calls:
        if n.op.is_mutable:
            target = _epilogue_target(graph, n)
            if target is None:
                raise ValueError(
                    f"Graph.to_jax(): node {n.name} = {n.target}(...) mutates "
                    f"{', '.join(n.op.mutated_args)}; only functional graphs can be lowered "
                    f"(capture functionalize(fn) instead of fn)")
            if n.op.__name__ == "copy_.default":
                writes[target] = n
        elif n.op.__name__ not in LOWERINGS:
            raise NotImplementedError(f"Graph.to_jax(): no JAX lowering for {n.target} "
                                      f"(node {n.name})")
    mutated = [i for i, p in enumerate(placeholders) if p in writes]

    def fn(*inputs):
        env = {}
        it = iter(inputs)

        def resolve(x):
            if isinstance(x, Ref):
                v = env[x.node]
                return v if x.index is None else v[x.index]
            return x

        for node in graph.nodes:
            if node.kind == "placeholder":
                env[node] = next(it)
            elif node.kind == "constant":
                v = node.value
                env[node] = jnp.asarray(v.numpy()) if isinstance(v, sk.Tensor) else v
            elif node.kind == "call":
                if node.op.is_mutable:
                    target = _epilogue_target(graph, node)
                    if node.op.__name__ == "copy_.default":
                        env[node] = resolve(node.args[1])
                    else:
                        env[node] = env[target]
                    continue
                args = sk.pytree.tree_map(resolve, node.args)
                kwargs = sk.pytree.tree_map(resolve, node.kwargs)
                env[node] = LOWERINGS[node.op.__name__](*args, **kwargs)
            else:
                out = sk.pytree.tree_map(resolve, node.args[0])
                if not mutated:
                    return out
                return out, tuple(env[writes[placeholders[i]]] for i in mutated)
        return None

    fn.mutated_inputs = mutated
    return fn
