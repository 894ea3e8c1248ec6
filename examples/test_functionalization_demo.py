"""The functionalization example runs and checks itself (functionalization_demo.py)."""

import subclass_kit as sk
from functionalization_demo import main


def test_demo_runs_and_its_graph_only_mutates_the_input():
    graph = main(n=5, verbose=False)
    assert [c.op.__name__ for c in graph.calls if c.op.is_mutable] == ["copy_.default"]
    x = sk.ones(3, 5)
    graph.run(x)
    assert x[1].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
