"""Module backward hooks against torch: ``register_full_backward_hook``,
``register_full_backward_pre_hook``, the legacy ``register_backward_hook`` and the global
``register_module_*`` ones. The same program runs in both libraries (torch's weights loaded
into ours); each hook records ``(tag, module name, grad_input / grad_output)`` and we compare
the records (order, None entries, shapes, values), the gradients that reach the leaves when a
hook replaces one, the op stream a mode sees, warnings, and errors (class and text)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit import nn

torch = pytest.importorskip("torch", reason="torch is the oracle for module hooks")
pytest.importorskip("hypothesis", reason="hypothesis generates the inputs")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import SkOpLog, normalize_message, to_sk, torch_op_log  # noqa: E402

tnn = torch.nn
LIBS = (sk, torch)


def _nn(lib):
    return nn if lib is sk else tnn


def _hooks_module(lib):
    return sk.nn.hooks if lib is sk else torch.nn.modules.module


@pytest.fixture(autouse=True)
def _reset_global_kind():
    """Which kind the global backward hooks are sticks once set (in both libraries)."""
    yield
    for lib in LIBS:
        _hooks_module(lib)._global_is_full_backward_hook = None


def _net_class(N):
    class Net(N.Module):
        def __init__(self):
            super().__init__()
            self.l1 = N.Linear(3, 4)
            self.act = N.Tanh()
            self.l2 = N.Linear(4, 2)

        def forward(self, x):
            return self.l2(self.act(self.l1(x)))
    return Net


def _net(lib, seed=0):
    """A Linear/Tanh/Linear net of ``lib`` with torch's initial weights for ``seed``."""
    torch.manual_seed(seed)
    theirs = _net_class(tnn)()
    if lib is torch:
        return theirs
    ours = _net_class(nn)()
    ours.load_state_dict({k: to_sk(v) for k, v in theirs.state_dict().items()})
    return ours


def _obs(grads):
    """A gradient tuple as comparable data: None, or (shape, values)."""
    return tuple(None if g is None else (tuple(g.shape), np.asarray(g.detach().tolist()))
                 for g in grads)


def _same(ours, theirs):
    """Records of both libraries equal, arrays compared with a float tolerance."""
    if isinstance(theirs, np.ndarray):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
    else:
        assert ours == theirs


def _record_all(lib, net, log):
    names = {id(m): n for n, m in net.named_modules()}

    def full(tag):
        return lambda m, gi, go: log.append((tag, names[id(m)], _obs(gi), _obs(go)))

    def pre(m, go):
        log.append(("pre", names[id(m)], _obs(go)))
    for _, m in net.named_modules():
        m.register_full_backward_hook(full("full"))
        m.register_full_backward_pre_hook(pre)
        m.register_full_backward_hook(full("first"), prepend=True)


def _mlp_run(lib, batch, seed):
    net = _net(lib, seed)
    log = []
    _record_all(lib, net, log)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, 3, generator=gen)
    x = (to_sk(x) if lib is sk else x).requires_grad_()
    y = net(x)
    facts = [type(y).__name__, y.grad_fn.name(), y._base is not None, y.requires_grad]
    y.sum().backward()
    return facts, log, _obs((x.grad, net.l1.weight.grad, net.l2.bias.grad))


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_full_hooks_on_an_mlp_see_torchs_gradients_in_torchs_order(batch, seed):
    ours, theirs = _mlp_run(sk, batch, seed), _mlp_run(torch, batch, seed)
    _same(ours, theirs)
    order = [(tag, name) for tag, name, *_ in theirs[1]]
    assert order[:4] == [("pre", ""), ("pre", "l2"), ("first", "l2"), ("full", "l2")]
    assert order[-2:] == [("first", ""), ("full", "")]


def _replaced(lib):
    net = _net(lib)
    x = (to_sk(torch.ones(2, 3)) if lib is sk else torch.ones(2, 3)).requires_grad_()
    out = []
    h = net.l2.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0,))
    net(x).sum().backward()
    out.append(_obs((x.grad, net.l1.weight.grad, net.l2.weight.grad)))
    h.remove()
    net.zero_grad()
    x.grad = None
    with net.act.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,)):
        net(x).sum().backward()
    out.append(_obs((x.grad, net.l1.weight.grad, net.l2.weight.grad)))
    net.zero_grad()
    x.grad = None
    net(x).sum().backward()         # both hooks removed
    out.append(_obs((x.grad, net.l1.weight.grad)))
    return out


def test_hooks_replace_gradients_and_handles_remove_them():
    _same(_replaced(sk), _replaced(torch))


def _mixed_args(lib):
    """Tensor, float and no-grad tensor arguments, a keyword argument, a tuple output."""
    N = _nn(lib)

    class Two(N.Module):
        def forward(self, a, scale, b, *, c):
            return a * scale + b * c, b * 2, (a * b).sum(), 7

    m = Two()
    log = []
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", _obs(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("full", _obs(gi), _obs(go))))
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, -1.0])
    c = lib.tensor([0.5, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y, d, s, k = m(a, 2.0, b, c=c)
    (y.sum() + s).backward()
    return (log, k, [normalize_message(str(w.message)) for w in caught],
            _obs((a.grad, c.grad)), [type(y).__name__, y.grad_fn.name(), s.grad_fn.name(),
                                     d.grad_fn, d._base is not None])


def test_non_tensor_and_no_grad_arguments_give_none_entries():
    ours, theirs = _mixed_args(sk), _mixed_args(torch)
    _same(ours, theirs)
    grad_a, grad_scale, grad_b = theirs[0][1][1]    # keywords have no entry
    assert grad_scale is None and not grad_b[1].any()   # a no-grad tensor: zeros


def _no_input_grad(lib):
    net = _net(lib)
    log = []
    _record_all(lib, net, log)
    x = to_sk(torch.ones(1, 3)) if lib is sk else torch.ones(1, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net(x).sum().backward()
    bad = _net(lib)
    bad.l1.register_full_backward_hook(lambda m, gi, go: (lib.ones(1, 3),))
    with pytest.raises(RuntimeError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad(x).sum().backward()
    return log, [str(w.message) for w in caught], str(err.value)


def test_hooks_fire_on_outputs_when_no_input_requires_grad():
    ours, theirs = _no_input_grad(sk), _no_input_grad(torch)
    _same(ours, theirs)
    assert len(theirs[1]) == 2 and "no inputs require gradients" in theirs[1][0]


def _errors(lib):
    N = _nn(lib)
    hooks = _hooks_module(lib)
    x = lib.ones(2, 3, requires_grad=True)
    msgs = []

    def run(fn):
        try:
            fn()
        except Exception as e:      # noqa: BLE001 - the error is what we compare
            msgs.append((type(e).__name__, normalize_message(str(e))))
        else:
            msgs.append(None)
    m = N.Linear(3, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    run(lambda: m(x).sum().backward())
    m = N.Linear(3, 2)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    run(lambda: m(x).sum().backward())
    m = N.Linear(3, 2)
    m.register_full_backward_hook(lambda *a: None)
    run(lambda: m(x).add_(1))          # in place on a view made by the hook function
    run(lambda: m.register_backward_hook(lambda *a: None))
    m = N.Linear(3, 2)
    m.register_backward_hook(lambda *a: None)
    run(lambda: m.register_full_backward_hook(lambda *a: None))
    h = hooks.register_module_full_backward_hook(lambda *a: None)
    run(lambda: hooks.register_module_backward_hook(lambda *a: None))
    h.remove()
    return msgs


def test_errors_match_torch():
    ours, theirs = _errors(sk), _errors(torch)
    assert ours == theirs
    assert all(theirs)


def _legacy(lib):
    log = []
    m = _net(lib).l1
    m.register_backward_hook(lambda mod, gi, go: log.append(("legacy", _obs(gi), _obs(go))))
    x = (to_sk(torch.ones(2, 3)) if lib is sk else torch.ones(2, 3)).requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = m(x)
        y.sum().backward()
        t = _nn(lib).Tanh()
        t.register_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
        z = x * 1
        t(z).sum().backward()
    return log, [(w.category.__name__, str(w.message)) for w in caught], \
        type(y).__name__, y.grad_fn.name(), _obs((x.grad,))


def test_legacy_backward_hook_runs_on_the_output_node():
    _same(_legacy(sk), _legacy(torch))


def _globals_and_order(lib):
    N = _nn(lib)
    hooks = _hooks_module(lib)
    log = []
    m = N.Linear(3, 2)
    handles = [
        m.register_full_backward_hook(lambda *a: log.append("own 1")),
        m.register_full_backward_hook(lambda *a: log.append("own 0"), prepend=True),
        m.register_full_backward_pre_hook(lambda *a: log.append("own pre 1")),
        m.register_full_backward_pre_hook(lambda *a: log.append("own pre 0"), prepend=True),
        hooks.register_module_full_backward_hook(lambda *a: log.append("global")),
        hooks.register_module_full_backward_pre_hook(lambda *a: log.append("global pre")),
    ]
    x = lib.ones(1, 3, requires_grad=True)
    m(x).sum().backward()
    for h in handles[4:]:
        h.remove()
    log.append("--")
    m(x).sum().backward()
    handles[0].remove()
    handles[3].remove()
    log.append("--")
    m(x).sum().backward()
    with lib.no_grad():
        y = m(x)
    return log, y._base is None, len(m._backward_hooks), len(m._backward_pre_hooks)


def test_global_hooks_first_prepend_and_removal_order():
    assert _globals_and_order(sk) == _globals_and_order(torch)


def _op_stream(lib, log):
    m = _nn(lib).Linear(3, 2)
    m.register_full_backward_hook(lambda *a: None)
    x = lib.ones(2, 3, requires_grad=True)
    with log:
        m(x).sum().backward()
    return log.ops


def test_modes_see_torchs_op_stream():
    assert _op_stream(sk, SkOpLog()) == _op_stream(torch, torch_op_log())
