"""``modes.AutocastMode``: torch.autocast's CUDA op lists as a function mode above autograd.
PyTorch's CPU autocast uses other lists, so the rules are checked directly: matmuls on 16-bit
copies (a parameter's copy made once), float32 ops upcast, the rest by type promotion, and
gradients reaching float32 parameters in float32 with the values of an explicit-cast program."""

from __future__ import annotations

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit.modes import AutocastMode


def _counting():
    seen = []

    class Count(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return func(*args, **(kwargs or {}))
    return Count(), seen


def test_op_lists_and_dtypes():
    w = sk.randn(4, 3, requires_grad=True)
    x = sk.randn(2, 3)
    with AutocastMode(sk.bfloat16):
        y = sk.nn.functional.linear(x, w)
        z = y.softmax(-1)
        r = y + x.sum(-1, keepdim=True)
    assert y.dtype == sk.bfloat16
    assert z.dtype == sk.float32                 # softmax is on the float32 list
    assert r.dtype == sk.float32                 # bf16 + f32 promotes
    z.sum().backward()
    assert w.grad.dtype == sk.float32


def test_a_parameter_is_cast_once_per_cache():
    w = sk.randn(4, 3, requires_grad=True)
    x = sk.randn(2, 3)
    count, seen = _counting()
    amp = AutocastMode(sk.bfloat16)
    with amp, count:
        sk.nn.functional.linear(x, w)
        sk.nn.functional.linear(x, w)
    assert seen.count("_to_copy") == 3          # x twice (not a leaf), w once
    assert len(amp.cache) == 1
    amp.clear_cache()
    assert not amp.cache


def test_gradients_equal_the_explicit_cast_program():
    rng = np.random.RandomState(0)
    w0, x0 = rng.randn(4, 3).astype(np.float32), rng.randn(2, 3).astype(np.float32)

    def grads(auto):
        w = sk.tensor(w0, requires_grad=True)
        x = sk.tensor(x0)
        if auto:
            with AutocastMode(sk.float16):
                loss = (x @ w.t()).log_softmax(-1).sum()
        else:
            loss = (x.half() @ w.half().t()).float().log_softmax(-1).sum()
        loss.backward()
        return w.grad.numpy()

    np.testing.assert_array_equal(grads(True), grads(False))


def test_dtype_must_be_16_bit():
    with pytest.raises(ValueError, match="16-bit floating dtype"):
        AutocastMode(sk.float64)
