"""``modes.ModuleTracker``, the global module hooks of ``sk.nn.module`` and the engine's graph
tasks against torch: the modules open at every matrix product of a forward and a backward
(``torch.utils.module_tracker.ModuleTracker``), hook order and results, ``queue_callback``."""

from __future__ import annotations

import pytest

import subclass_kit as sk
from subclass_kit.modes import ModuleTracker

torch = pytest.importorskip("torch", reason="torch is the oracle for module tracking")
from oracle import assert_same_error  # noqa: E402
from torch.utils.module_tracker import ModuleTracker as TorchModuleTracker  # noqa: E402


def _net(lib):
    nn = lib.nn

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4, bias=False)

        def forward(self, x):
            return self.b(lib.tanh(self.a(x))) + x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(3, 4)
            self.inner = Inner()
            self.heads = nn.ModuleList([nn.Linear(4, 2), nn.Linear(4, 2)])

        def forward(self, x):
            h = self.inner(self.first(x))
            return self.heads[0](h) * self.heads[1](h)

    return Net()


def _trace(lib, backward):
    """(op, sorted open modules, in backward) at every mm/addmm of the program."""
    model = _net(lib)
    tracker = ModuleTracker() if lib is sk else TorchModuleTracker()
    seen = []
    if lib is sk:
        class Spy(sk.DispatchMode):
            def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
                if func.name in ("mm", "addmm"):
                    seen.append((func.name, sorted(tracker.parents), tracker.is_bw))
                return func(*args, **(kwargs or {}))
    else:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Spy(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = func._schema.name.split("::")[1]
                if name in ("mm", "addmm"):
                    seen.append((name, sorted(tracker.parents), tracker.is_bw))
                return func(*args, **(kwargs or {}))
    x = lib.ones(5, 3)
    with tracker, Spy():
        out = model(x)
        if backward:
            out.sum().backward()
        after = sorted(tracker.parents)
    return seen, after


@pytest.mark.parametrize("backward", [False, True])
def test_open_modules_at_every_product_equal_torch(backward):
    assert _trace(sk, backward) == _trace(torch, backward)


def test_global_hooks_run_before_the_modules_own_and_can_replace(capsys):
    def program(lib):
        module = lib.nn.modules.module if lib is torch else lib.nn.module
        calls = []
        lin = lib.nn.Linear(2, 2)
        with lib.no_grad():     # the same bias in both: (b + 1) - b rounds by b's value
            lin.bias.fill_(0.25)
        lin.register_forward_pre_hook(lambda m, a: calls.append("own pre"))
        lin.register_forward_hook(lambda m, a, o: calls.append("own post"))
        h1 = module.register_module_forward_pre_hook(
            lambda m, a: (calls.append("global pre"), (a[0] * 0,))[1])
        h2 = module.register_module_forward_hook(
            lambda m, a, o: (calls.append("global post"), o + 1)[1])
        h3 = module.register_module_forward_hook(
            lambda m, a, kw, o: calls.append(f"kwargs {sorted(kw)}"), with_kwargs=True)
        try:
            out = lin(lib.ones(1, 2))
        finally:
            for h in (h1, h2, h3):
                h.remove()
        lin(lib.ones(1, 2))          # removed: nothing more recorded
        return calls, (out - lin.bias).tolist()
    assert program(sk) == program(torch)


def test_queue_callback_and_graph_task_ids():
    engine = sk.autograd.engine
    assert engine.current_graph_task_id() == -1
    assert_same_error(lambda: engine.queue_callback(lambda: None),
                      lambda: torch.autograd.Variable._execution_engine.queue_callback(
                          lambda: None))
    order = []
    x = sk.ones(2, requires_grad=True)
    y = (x * 2).sum()

    def hook(grad):
        order.append(("hook", engine.current_graph_task_id() != -1))
        engine.queue_callback(lambda: order.append(("callback", engine.current_graph_task_id())))
    y.register_hook(hook)
    y.backward()
    assert order[0] == ("hook", True) and order[1][0] == "callback" and order[1][1] != -1
    assert engine.current_graph_task_id() == -1
