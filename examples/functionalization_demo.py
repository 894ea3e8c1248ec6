"""Functionalization end to end: a mutation-heavy eager program becomes a functional graph,
a compiler pass cleans it, and (if JAX is installed) XLA compiles and runs it.

    python examples/functionalization_demo.py

1. ``scale_columns`` mutates its input through the outputs of ``unbind`` (views) in place.
2. ``functionalize`` gives the same results and the same input mutation without mutating
   anything but the input at the end (one ``copy_``); ``make_graph`` captures that program.
3. ``Graph.eliminate_dead_code`` removes the regeneration nodes nothing reads.
4. ``Graph.to_jax`` lowers the graph to ``jax.numpy``; ``jax.jit`` compiles it.
"""

import numpy as np

import subclass_kit as sk
from subclass_kit.modes import functionalize, make_graph


def scale_columns(x):
    """Multiply column ``i`` of ``x`` by ``i + 1``, in place, through views."""
    for i, col in enumerate(x.unbind(1)):
        col.mul_(i + 1)
    x[0] = x[0] - 1          # a __setitem__ on a row
    return x.sum(0)


def main(n=4, verbose=True):
    x = sk.ones(3, n)
    eager_in = x.clone()
    eager_out = scale_columns(eager_in)

    graph = make_graph(functionalize(scale_columns))(x.clone())
    mutating = [c for c in graph.calls if c.op.is_mutable]
    assert [c.op.__name__ for c in mutating] == ["copy_.default"]   # only the input epilogue
    before = len(graph.calls)
    graph.eliminate_dead_code()
    if verbose:
        print(f"captured {before} ops, {len(graph.calls)} after dead-code elimination:")
        graph.print_code()

    fresh = x.clone()
    out = graph.run(fresh)
    assert out.tolist() == eager_out.tolist() and fresh.tolist() == eager_in.tolist()

    try:
        import jax
    except ImportError:
        if verbose:
            print("JAX not installed (pip install 'subclass-kit[jax]'): skipping to_jax")
        return graph
    lowered = graph.to_jax()
    jout, (new_x,) = jax.jit(lowered)(jax.numpy.asarray(x.numpy()))
    np.testing.assert_allclose(np.asarray(jout), eager_out.numpy())
    np.testing.assert_allclose(np.asarray(new_x), eager_in.numpy())
    if verbose:
        print("jax.jit(graph.to_jax()) gives the eager results")
    return graph


if __name__ == "__main__":
    main()
