"""Version counters, view tracking and the inference-mode tables of SEMANTICS.md §2 and §4.2,
run as the same program on subclass_kit and on torch (the oracle) and compared observation by
observation."""

import threading

import pytest
from oracle import torch_under_sk_modes

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")


def observe(L, t):
    """What we compare about a tensor: inference flag, version (or its error), view-ness,
    requires_grad, values."""
    try:
        version = t._version
    except RuntimeError as e:
        version = str(e)
    return {"inference": t.is_inference(), "version": version, "is_view": t._is_view(),
            "requires_grad": t.requires_grad, "values": t.detach().tolist()}


def run(L, program):
    """Run ``program(L, log)``; exceptions become ``(class name, message)`` log entries."""
    log = []
    try:
        program(L, log)
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        log.append(("raised", type(e).__name__, str(e)))
    return log


def same(program, ignore_values_after_raise=False):
    ours = run(sk, program)
    with torch_under_sk_modes():
        theirs = run(torch, program)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"


# -- §2.2 what bumps ------------------------------------------------------------------------------
def p_bumps(L, log):
    x = L.zeros(3, 4)
    y = x[0]
    y.add_(1)
    log.append((x._version, y._version))
    d = x.detach()
    d.mul_(2)
    log.append(x._version)
    x.add(1)
    x[0, 0] = 5
    x[:, 1] = L.ones(3)
    x[L.tensor([0, 1])] = 0.0
    x.copy_(L.ones(3, 4))
    x.zero_()
    x.fill_(2)
    L.add(x, 1, out=x)
    log.append(x._version)
    x.resize_(3, 4)
    log.append(x._version)
    x.resize_(2, 4)
    log.append(x._version)
    x.unsqueeze_(0)
    x.requires_grad_()
    log.append((x._version, x.data._version))
    o = L.empty(0)
    L.add(L.ones(3), 1, out=o)
    log.append(o._version)
    z = L.zeros(2)
    z.abs_().clamp_(0)
    z.t_()
    log.append(z._version)


def p_base_and_detach(L, log):
    x = L.zeros(3, 4)
    log.append(x[0][1]._base is x)
    d = x.detach()
    log.append((d._base is None, d[0]._base is d, d.untyped_storage().data_ptr() ==
                x.untyped_storage().data_ptr()))
    log.append([t._base is x for t in (x.reshape(12), x.flatten(), x.narrow(0, 0, 1), x.t(),
                                       x.mT, x.movedim(0, 1), x.view_as(x), x.expand(2, 3, 4))])
    log.append(x.reshape(12)._is_view())
    log.append(x.t().contiguous()._base is None)
    data = x.data
    data.add_(1)
    log.append((x._version, data._version, data._base is None))


@pytest.mark.parametrize("program", [p_bumps, p_base_and_detach])
def test_versions_and_views(program):
    same(program)


def test_version_is_read_only():
    x = sk.zeros(2)
    with pytest.raises(AttributeError, match="_version"):
        x._version = 3
    with pytest.raises(AttributeError, match="_version"):
        torch.zeros(2)._version = 3


# -- §4.2 inside inference mode -------------------------------------------------------------------
def p_inside_functional_and_views(L, log):
    n = L.ones(2, 3)
    rg = L.ones(2, 3, requires_grad=True)
    with L.inference_mode():
        log.append(observe(L, n * 2))
        log.append(observe(L, rg * 2))
        v = rg[0]
        log.append(observe(L, v))
        log.append(v.grad_fn is None)
        w = n.t()
        log.append(observe(L, w))
        n.add_(1)
        rg.add_(1)
        log.append((n._version, rg._version, rg.grad_fn is None))
        n.t_()
        L.add(n, 1, out=n)
        log.append(n._version)
        f = L.ones(2)
        frg = L.ones(2, requires_grad=True)
        log.append((observe(L, f), observe(L, frg)))
        f.add_(1)
        fv = f[0]
        log.append(observe(L, fv))
        f.requires_grad_()
        log.append(f.requires_grad)
        log.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))
        with L.inference_mode(False):
            log.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))
            log.append(observe(L, n + 1))
        with L.no_grad():
            log.append(L.is_inference_mode_enabled())
        with L.enable_grad():
            log.append((L.is_grad_enabled(), observe(L, n + 1)))
    log.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))


def p_inside_view_then_grad_fn(L, log):
    base = L.ones(3, requires_grad=True) * 1 if False else L.ones(3, requires_grad=True)
    with L.inference_mode():
        v = base[0:2]
    with L.no_grad():
        v.add_(1)
    v.grad_fn


# -- §4.2 outside inference mode ------------------------------------------------------------------
def _make_inference(L):
    with L.inference_mode():
        return L.ones(2, 3)


def p_outside_functional_view(L, log):
    it = _make_inference(L)
    n = L.ones(2, 3)
    log.append(observe(L, it * 2))
    log.append(observe(L, it + n))
    v = it[0]
    log.append(observe(L, v))
    log.append(observe(L, it.clone()))
    log.append(observe(L, L.tensor(it.tolist())))
    d = it.detach()
    log.append(observe(L, d))
    d.add_(1)
    log.append((d._version, it.detach()._version))
    n.copy_(it)
    n.add_(it)
    log.append(n._version)


def _inplace_outside(op):
    def program(L, log):
        it = _make_inference(L)
        op(L, it)
    program.__name__ = f"p_outside_{op.__name__}"
    return program


def _add_(L, t): t.add_(1)
def _copy_(L, t): t.copy_(L.zeros(2, 3))
def _setitem(L, t): t[0] = 2.0
def _out(L, t): L.add(L.ones(2, 3), 1, out=t)
def _t_(L, t): t.t_()
def _unsqueeze_(L, t): t.unsqueeze_(0)
def _transpose_(L, t): t.transpose_(0, 1)
def _resize_(L, t): t.resize_(6)
def _no_grad_add_(L, t):
    with L.no_grad():
        t.add_(1)
def _requires_grad_(L, t): t.requires_grad_()
def _version(L, t): t._version


@pytest.mark.parametrize("program", [
    p_inside_functional_and_views, p_inside_view_then_grad_fn, p_outside_functional_view,
] + [_inplace_outside(f) for f in (_add_, _copy_, _setitem, _out, _t_, _unsqueeze_, _transpose_,
                                   _resize_, _no_grad_add_, _requires_grad_, _version)])
def test_inference_tables(program):
    same(program)


def test_inplace_on_inference_outside_raises_before_writing():
    """Our deliberate difference (docs/differences.md): PyTorch writes, then raises."""
    it = _make_inference(sk)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
        it.add_(1)
    assert it.tolist() == [[1.0] * 3] * 2


def p_view_made_in_inference_mode(L, log):
    base = L.ones(3, requires_grad=True)
    with L.inference_mode():
        v = base[0:2]
    try:
        v.add_(1)
    except RuntimeError as e:
        log.append(str(e))
    w = v[0:1]
    try:
        w.add_(1)
    except RuntimeError as e:
        log.append(str(e))
    plain = L.ones(3)
    with L.inference_mode():
        pv = plain[0:2]
    pv.add_(1)
    log.append((plain._version, pv._version, plain.tolist()))


def test_views_made_in_inference_mode():
    same(p_view_made_in_inference_mode)


def test_grad_mode_context_and_decorator_thread_local():
    @sk.no_grad()
    def f():
        return sk.is_grad_enabled()

    assert f() is False and sk.is_grad_enabled()
    with sk.no_grad():
        assert not sk.is_grad_enabled()
        with sk.enable_grad():
            assert sk.is_grad_enabled()
        with sk.set_grad_enabled(True):
            assert sk.is_grad_enabled()
        seen = []
        th = threading.Thread(target=lambda: seen.append(sk.is_grad_enabled()))
        th.start()
        th.join()
        assert seen == [True]
    assert sk.is_grad_enabled()

    @sk.inference_mode()
    def g():
        return sk.ones(1).is_inference()

    assert g() is True and not sk.is_inference_mode_enabled()


def test_concurrent_bumps_through_views_are_exact():
    base = sk.zeros(8, 100)
    views = [base[i] for i in range(8)]

    def work(v):
        for _ in range(500):
            v.add_(1)

    threads = [threading.Thread(target=work, args=(v,)) for v in views]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert base._version == 8 * 500
    assert all(v._version == 8 * 500 for v in views)
    assert (base.numpy() == 500).all()
