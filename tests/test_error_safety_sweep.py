"""Errors leave no trace, part two (``test_errors_oracle.py`` covers the op catalogue).

1. Bad argument *types* that PyTorch's argument parser rejects (``out=`` that is not a tensor,
   a float ``dim``, a non-bool ``requires_grad_``, float sizes / offsets in ``set_``): same
   exception class as torch, a message naming the argument, inputs untouched.
2. The thread's dispatch state -- dispatch and function mode stacks, grad / inference flags,
   ``no_dispatch``, "below autograd" -- is exactly as before after an exception raised inside a
   mode handler, a subclass handler, a custom-op kernel, nested modes and the ``with`` block of
   every context manager; inputs' values and versions are unchanged by the failed op.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import Wrapper

import subclass_kit as sk
from subclass_kit._state import flags

torch = pytest.importorskip("torch")


def _snap(t):
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t._version,
            t.requires_grad, np.array(t.detach().numpy(), copy=True))


def _same(a, b):
    return a[:5] == b[:5] and np.array_equal(a[5], b[5])


def _kind(e):
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")


# -- 1. bad argument types, differential -------------------------------------------------------
BAD_TYPES = {
    "out_str": (lambda L, x: L.exp(x, out="a"), "argument 'out' must be Tensor, not str"),
    "out_list_binary": (lambda L, x: L.add(x, x, out=[1, 2]), "must be Tensor, not"),
    "out_object_cat": (lambda L, x: L.cat([x, x], out=object()),
                       "argument 'out' must be Tensor, not object"),
    "requires_grad_str": (lambda L, x: x.requires_grad_("yes"),
                          "argument 'requires_grad' (position 1) must be bool, not str"),
    "requires_grad_int": (lambda L, x: x.requires_grad_(1), "must be bool, not int"),
    "softmax_float_dim": (lambda L, x: x.softmax(1.5), "argument 'dim'"),
    "transpose_float_dim": (lambda L, x: x.transpose(0, 2.0), "must be int, not float"),
    "unsqueeze_bool_dim": (lambda L, x: x.unsqueeze(True), "must be int, not bool"),
    "transpose__float_dim": (lambda L, x: x.transpose_(0, 1.5), "must be int, not float"),
    "set_float_size": (lambda L, x: x.set_(L.zeros(8).untyped_storage(), 0, (2.5,), (1,)),
                       None),
    "set_float_stride": (lambda L, x: x.set_(L.zeros(8).untyped_storage(), 0, (2,), (1.0,)),
                         None),
    "set_bool_size": (lambda L, x: x.set_(L.zeros(8).untyped_storage(), 0, (True,), (1,)),
                      None),
    "set_float_offset": (lambda L, x: x.set_(L.zeros(8).untyped_storage(), 1.5, (2,), (1,)),
                         None),
}


@pytest.mark.parametrize("name", sorted(BAD_TYPES))
def test_bad_argument_type_raises_like_torch_and_changes_nothing(name):
    call, fact = BAD_TYPES[name]
    with pytest.raises(Exception) as t_info:
        call(torch, torch.ones(2, 3))
    x = sk.ones(2, 3)
    before = _snap(x)
    with pytest.raises(Exception) as s_info:
        call(sk, x)
    assert _kind(s_info.value) == _kind(t_info.value) == "TypeError", (s_info.value,
                                                                        t_info.value)
    if fact is not None:
        assert fact in str(s_info.value)
    assert _same(before, _snap(x))


def test_set_storage_in_range_int_like_values_still_work():
    s = sk.zeros(8).untyped_storage()
    x = sk.zeros(3).set_(s, np.int64(1), sk.Size([2, 3]), (3, 1))
    assert (tuple(x.shape), x.stride(), x.storage_offset()) == ((2, 3), (3, 1), 1)


# -- 2. dispatch state after exceptions ----------------------------------------------------------
def _state():
    return (sk.get_mode_stack(), sk.get_function_mode_stack(), sk.is_grad_enabled(),
            sk.is_inference_mode_enabled(), sk.is_below_autograd(), flags.interceptors,
            (sk.ones(1) + 1).tolist())


class Boom(Exception):
    pass


class RaisingMode(sk.DispatchMode):
    """Raises from its handler; optionally only after calling ``func`` (the op then ran)."""

    def __init__(self, after=False):
        self.after = after

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        if self.after:
            func(*args, **(kwargs or {}))
        with sk.no_grad(), sk.no_dispatch():
            raise Boom(func)


class RaisingFnMode(sk.FunctionMode):
    def __tensor_function__(self, func, types, args=(), kwargs=None):
        with sk.enable_grad():
            raise Boom(func)


class PassMode(sk.DispatchMode):
    pass


class RaisingWrapper(Wrapper):
    @classmethod
    def wrap(cls, elem):
        w = sk.make_wrapper_subclass(cls, elem.shape, elem.stride(), elem.storage_offset(),
                                     dtype=elem.dtype, device=elem.device)
        w.elem = elem
        return w

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        with sk.no_grad():
            raise Boom(func)


_LIB = {}


def _raising_custom_op():
    if "op" not in _LIB:
        op = sk.library.define("errsweep::boom_(Tensor(a!) x) -> ()")

        def kernel(x):
            assert sk.is_below_autograd()
            with sk.no_grad():
                raise Boom("kernel")

        sk.library.impl(op, "cpu", kernel)
        _LIB["op"] = op
    return _LIB["op"]


def _raise_in(where, x):
    """Make ``x.add_(1)`` (or a custom op on ``x``) fail inside ``where``."""
    if where == "mode":
        with RaisingMode():
            x.add_(1)
    elif where == "nested_modes":
        with PassMode(), RaisingMode(), PassMode():
            x.add_(1)
    elif where == "function_mode":
        with RaisingFnMode():
            x.add_(1)
    elif where == "subclass":
        RaisingWrapper.wrap(x).add_(1)
    elif where == "subclass_in_mode":
        with PassMode():
            RaisingWrapper.wrap(x).add_(1)
    elif where == "custom_op":
        _raising_custom_op()(x)
    elif where == "custom_op_in_mode":
        with PassMode():
            _raising_custom_op()(x)
    # Only under no_dispatch (which skips modes and subclass handlers) do we get here.
    raise Boom("not intercepted")


WHERE = ["mode", "nested_modes", "function_mode", "subclass", "subclass_in_mode", "custom_op",
         "custom_op_in_mode"]
CONTEXTS = {
    "none": lambda: _Null(),
    "no_grad": sk.no_grad,
    "enable_grad": sk.enable_grad,
    "set_grad_enabled": lambda: sk.set_grad_enabled(False),
    "inference_mode": sk.inference_mode,
    "no_inference": lambda: sk.inference_mode(False),
    "no_dispatch": sk.no_dispatch,
    "dispatch_trace": lambda: sk.dispatch_trace(lambda e: None),
    "dispatch_mode": PassMode,
    "function_mode": sk.FunctionMode,
}


def _expected(ctxs, where):
    # Under no_dispatch a wrapper's op reaches the kernel, which has no data to read.
    if "no_dispatch" in ctxs and where.startswith("subclass"):
        return RuntimeError
    return Boom


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("ctx", sorted(CONTEXTS))
def test_state_restored_after_exception(where, ctx):
    before = _state()
    x = sk.arange(4.)
    xb = _snap(x)
    with pytest.raises(_expected((ctx,), where)):
        with CONTEXTS[ctx]():
            inner = _state()
            try:
                _raise_in(where, x)
            finally:
                # inside the block, the state is what the block set up
                assert _state()[:6] == inner[:6]
    assert _state() == before
    if ctx != "no_dispatch":        # no_dispatch skips modes and handlers: add_ ran
        assert _same(xb, _snap(x))


def test_mode_that_ran_func_then_raised_leaves_the_stack():
    x = sk.zeros(2)
    before = _state()
    with pytest.raises(Boom):
        with PassMode(), RaisingMode(after=True):
            x.add_(1)
    assert _state() == before
    assert x.tolist() == [1.0, 1.0] and x._version == 1     # func did run: one bump


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(CONTEXTS)), min_size=1, max_size=4),
       st.sampled_from(WHERE))
def test_state_restored_after_exception_in_nested_contexts(ctxs, where):
    before = _state()
    x = sk.arange(3.)

    def nest(i):
        if i == len(ctxs):
            _raise_in(where, x)
            return
        with CONTEXTS[ctxs[i]]():
            nest(i + 1)

    with pytest.raises(_expected(ctxs, where)):
        nest(0)
    assert _state() == before
