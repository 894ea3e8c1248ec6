"""``sk.optim`` against ``torch.optim``: the same parameters and the same gradient sequence in
both libraries; after every step compare parameters and optimizer states (float64, tight
tolerance), the ``state_dict`` structure, ``load_state_dict`` round trips, the learning-rate
schedules, and the constructor errors."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="torch is the oracle for sk.optim")
pytest.importorskip("hypothesis", reason="hypothesis draws the optimizer options")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from oracle import assert_same_error, to_sk  # noqa: E402

SHAPES = [(3, 4), (5,), ()]


def _params(seed=0):
    gen = torch.Generator().manual_seed(seed)
    theirs = [torch.nn.Parameter(torch.randn(s, generator=gen, dtype=torch.float64))
              for s in SHAPES]
    ours = [sk.nn.Parameter(to_sk(p.detach().clone())) for p in theirs]
    return ours, theirs


def _run(name, kwargs, steps=6, seed=0, skip_grad_of=None):
    ours, theirs = _params(seed)
    opt = getattr(sk.optim, name)(ours, **kwargs)
    topt = getattr(torch.optim, name)(theirs, **kwargs)
    gen = torch.Generator().manual_seed(seed + 1)
    for step in range(steps):
        for i, (p, tp) in enumerate(zip(ours, theirs)):
            if skip_grad_of == i and step % 2:
                p.grad = tp.grad = None
                continue
            g = torch.randn(tp.shape, generator=gen, dtype=torch.float64)
            tp.grad, p.grad = g, to_sk(g.clone())
        opt.step()
        topt.step()
        for p, tp in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-13,
                                       atol=1e-15)
    for p, tp in zip(ours, theirs):
        s, ts = opt.state[p], topt.state[tp]
        assert list(s) == list(ts)
        for k in ts:
            if isinstance(ts[k], torch.Tensor):
                assert s[k].dtype.name == str(ts[k].dtype).replace("torch.", "")
                np.testing.assert_allclose(s[k].numpy(), ts[k].numpy(), rtol=1e-13, atol=1e-15)
            else:
                assert s[k] == ts[k]
    return opt, topt


@settings(max_examples=25)
@given(lr=st.sampled_from([1e-3, 0.1]), momentum=st.sampled_from([0.0, 0.9]),
       dampening=st.sampled_from([0.0, 0.3]), wd=st.sampled_from([0.0, 0.01]),
       nesterov=st.booleans(), maximize=st.booleans())
def test_sgd_matches(lr, momentum, dampening, wd, nesterov, maximize):
    if nesterov and (momentum == 0 or dampening != 0):
        return
    _run("SGD", dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=wd,
                     nesterov=nesterov, maximize=maximize), skip_grad_of=1)


@settings(max_examples=25)
@given(name=st.sampled_from(["Adam", "AdamW"]), lr=st.sampled_from([1e-3, 0.05]),
       betas=st.sampled_from([(0.9, 0.999), (0.5, 0.9)]), wd=st.sampled_from([0.0, 0.1]),
       amsgrad=st.booleans(), maximize=st.booleans())
def test_adam_family_matches(name, lr, betas, wd, amsgrad, maximize):
    _run(name, dict(lr=lr, betas=betas, weight_decay=wd, amsgrad=amsgrad, maximize=maximize),
         skip_grad_of=2)


@pytest.mark.parametrize("name, kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                          ("Adam", dict(lr=0.01, amsgrad=True)),
                                          ("AdamW", dict())])
def test_state_dict_format_and_round_trip(name, kwargs):
    opt, topt = _run(name, kwargs, steps=3)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert list(sd["state"]) == list(tsd["state"])
    assert [list(v) for v in sd["state"].values()] == [list(v) for v in tsd["state"].values()]
    ours, _ = _params()
    fresh = getattr(sk.optim, name)(ours, **kwargs)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for p, q in zip(ours, opt.param_groups[0]["params"]):
        for k, v in opt.state[q].items():
            assert sk.equal(fresh.state[p][k], v)
            assert fresh.state[p][k] is not v            # copied, not shared


def test_zero_grad_and_param_groups():
    ours, theirs = _params()
    opt = sk.optim.SGD([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.5}], lr=0.1)
    topt = torch.optim.SGD([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5}], lr=0.1)
    assert [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups] == \
           [{k: v for k, v in g.items() if k != "params"} for g in topt.param_groups]
    for p in ours:
        p.grad = sk.ones_like(p)
    opt.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in ours)
    opt.zero_grad()
    assert all(p.grad is None for p in ours)


@pytest.mark.parametrize("case", [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(momentum=-0.1)), ("SGD", dict(weight_decay=-1.0)),
    ("SGD", dict(nesterov=True)), ("Adam", dict(lr=-1.0)), ("Adam", dict(eps=-1.0)),
    ("Adam", dict(betas=(1.0, 0.9))), ("Adam", dict(betas=(0.9, -0.1))),
    ("AdamW", dict(weight_decay=-1.0)), ("SGD", "empty"), ("SGD", "tensor"),
    ("SGD", "duplicate"), ("SGD", "not_tensor")], ids=str)
def test_constructor_errors(case):
    name, kwargs = case

    def make(optim, params):
        if kwargs == "empty":
            return getattr(optim, name)([])
        if kwargs == "tensor":
            return getattr(optim, name)(params[0])
        if kwargs == "duplicate":
            return getattr(optim, name)([{"params": params[:1]}, {"params": params[:1]}])
        if kwargs == "not_tensor":
            return getattr(optim, name)([params[0], 3])
        return getattr(optim, name)(params, **kwargs)
    ours, theirs = _params()
    assert_same_error(lambda: make(sk.optim, ours), lambda: make(torch.optim, theirs))


@pytest.mark.parametrize("sched, kwargs", [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.9 ** e)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("CosineAnnealingLR", dict(T_max=4))])
def test_lr_schedules_match(sched, kwargs):
    ours, theirs = _params()
    opt, topt = sk.optim.SGD(ours, lr=0.2), torch.optim.SGD(theirs, lr=0.2)
    s = getattr(sk.optim.lr_scheduler, sched)(opt, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, sched)(topt, **kwargs)
    for _ in range(14):
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-15)
        assert opt.param_groups[0]["lr"] == pytest.approx(topt.param_groups[0]["lr"], rel=1e-15)
        topt.step()
        opt.step()
        s.step()
        ts.step()
    assert s.last_epoch == ts.last_epoch


def test_training_step_is_in_place_and_versioned():
    """Updates mutate the parameters in place (one version bump per in-place op), so the
    version-counter rules and the debug-assert mode see real steps."""
    ours, _ = _params()
    opt = sk.optim.SGD(ours, lr=0.1)
    storages = [p.untyped_storage() for p in ours]
    versions = [p._version for p in ours]
    for p in ours:
        p.grad = sk.ones_like(p)
    opt.step()
    assert [p.untyped_storage() for p in ours] == storages
    assert [p._version for p in ours] == [v + 1 for v in versions]
