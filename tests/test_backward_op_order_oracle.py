"""Backward op streams of the binary (and ternary) pointwise formulas against PyTorch's: the ops a
dispatch mode sees during ``autograd.grad``, in order, with their arguments.

PyTorch's generated backward nodes do not compute their inputs' gradients in input order
(``MulBackward0`` computes ``other``'s before ``self``'s, ``PowBackward1`` the exponent's
first), and its C++ formulas evaluate operands in the compiler's order (``-grad * q``
computes ``q`` first). The engine still accumulates the gradients of one input in input order:
``x * x`` ends with ``add(self's, other's)``.

Arguments are compared by identity: the inputs are ``x0 x1 ...``, the incoming gradient ``g``,
each op's tensor result ``rN`` (N its position in the stream); other tensors by shape. The only
normalisation is the documented one of ``test_op_streams_oracle``: the Scalar overloads only
PyTorch's C++ formulas call (``mul.Scalar`` is ``mul.Tensor``), and PyTorch's ``layout``
argument, which we do not have.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) is not installed")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import subclass_kit as sk  # noqa: E402

# PyTorch's C++ formulas call Scalar overloads the Python API never picks (``mul.Scalar``...);
# the ones both libraries have (``pow.Tensor_Scalar``, ``ge.Scalar``...) are compared as they are.
_SCALAR_OVERLOADS = {"xlogy.Scalar_Other": "xlogy.Tensor", "xlogy.Scalar_Self": "xlogy.Tensor"}
for _op in ("add", "sub", "mul", "div"):
    _SCALAR_OVERLOADS[f"{_op}.Scalar"] = f"{_op}.Tensor"


class _Labels:
    def __init__(self, names):
        self.names = dict(names)

    def arg(self, a):
        for name, t in self.names.items():
            if a is t:
                return name
        if isinstance(a, (torch.Tensor, sk.Tensor)):
            return f"T{tuple(a.shape)}"
        if isinstance(a, (list, tuple)):
            return [self.arg(v) for v in a]
        if isinstance(a, (torch.dtype, sk.dtype, torch.device, sk.device)):
            return str(a).split(".")[-1]
        if isinstance(a, torch.memory_format) or type(a).__name__ == "_MemoryFormat":
            return str(a).split(".")[-1]
        if isinstance(a, float) and a != a:
            return "nan"
        return a

    def record(self, ops, name, args, kwargs, result):
        kw = {k: self.arg(v) for k, v in kwargs.items() if k not in ("layout", "pin_memory")}
        ops.append((name, [self.arg(a) for a in args], kw))
        if isinstance(result, (torch.Tensor, sk.Tensor)):
            self.names[f"r{len(ops) - 1}"] = result


class _TorchRec(TorchDispatchMode):
    def __init__(self, labels):
        super().__init__()
        self.labels, self.ops = labels, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = f"{func._overloadpacket.__name__}.{func._overloadname}"
        out = func(*args, **(kwargs or {}))
        self.labels.record(self.ops, _SCALAR_OVERLOADS.get(name, name), args, kwargs or {}, out)
        return out


class _SkRec(sk.DispatchMode):
    def __init__(self, labels):
        self.labels, self.ops = labels, []

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.labels.record(self.ops, func.__name__, args, kwargs or {}, out)
        return out


def _backward(m, program, values, needs):
    """The op stream of ``autograd.grad`` of ``program``'s output, and the gradients."""
    xs = [m.tensor(v).requires_grad_(n) for v, n in zip(values, needs)]
    out = program(m, *xs)
    grad = m.ones_like(out)
    wrt = [x for x in xs if x.requires_grad]
    labels = _Labels({**{f"x{i}": x for i, x in enumerate(xs)}, "g": grad})
    rec = _TorchRec(labels) if m is torch else _SkRec(labels)
    with rec:
        grads = m.autograd.grad(out, wrt, grad)
    return rec.ops, [np.asarray(g.detach().numpy() if m is torch else g.numpy()) for g in grads]


# (name, program, number of tensor inputs)
PROGRAMS = [
    ("mul", lambda m, a, b: a * b, 2),
    ("mul_self", lambda m, a, b: a * a + b, 2),
    ("add_alpha", lambda m, a, b: m.add(a, b, alpha=2), 2),
    ("sub_alpha", lambda m, a, b: m.sub(a, b, alpha=2), 2),
    ("rsub", lambda m, a, b: 2 - a * b, 2),
    ("div", lambda m, a, b: a / b, 2),
    ("div_rounding_none", lambda m, a, b: m.div(a, b, rounding_mode=None), 2),
    ("div_floor", lambda m, a, b: m.div(a, b, rounding_mode="floor"), 2),
    ("pow", lambda m, a, b: a ** b, 2),
    ("pow_self", lambda m, a, b: a ** a + b, 2),
    ("pow_scalar", lambda m, a, b: a ** 2.5 + b ** 0, 2),
    ("rpow", lambda m, a, b: 2 ** a + 0.0 ** b, 2),
    ("atan2", lambda m, a, b: m.atan2(a, b), 2),
    ("hypot", lambda m, a, b: m.hypot(a, b), 2),
    ("maximum", lambda m, a, b: m.maximum(a, b), 2),
    ("minimum", lambda m, a, b: m.minimum(a, b), 2),
    ("fmax", lambda m, a, b: m.fmax(a, b), 2),
    ("fmin", lambda m, a, b: m.fmin(a, b), 2),
    ("logaddexp", lambda m, a, b: m.logaddexp(a, b), 2),
    ("logaddexp2", lambda m, a, b: m.logaddexp2(a, b), 2),
    ("xlogy", lambda m, a, b: m.xlogy(a, b), 2),
    ("xlogy_numbers", lambda m, a, b: m.xlogy(2.0, a) + m.xlogy(b, 0.0), 2),
    ("remainder", lambda m, a, b: m.remainder(a, b), 2),
    ("fmod", lambda m, a, b: m.fmod(a, b), 2),
    ("where", lambda m, a, b: m.where(a > b.detach(), a, b), 2),
    ("where_number", lambda m, a, b: m.where(a > 1, a, 0.0) + m.where(b > 1, 1, b), 2),
    ("masked_fill_tensor", lambda m, a, b: a.masked_fill(a.detach() > 1, b.sum()), 2),
    ("lerp_scalar", lambda m, a, b: m.lerp(a, b, 0.3), 2),
    ("lerp_tensor", lambda m, a, b, c: m.lerp(a, b, c), 3),
    ("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=2), 3),
    ("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=2), 3),
]

# broadcastable shapes for up to three inputs
_SHAPES = [((3,), (3,), (3,)), ((2, 3), (3,), (1, 3)), ((3,), (2, 3), (2, 1)), ((), (2,), ())]


@pytest.mark.parametrize("name,program,n", PROGRAMS, ids=[p[0] for p in PROGRAMS])
@settings(max_examples=8)
@given(data=st.data())
def test_backward_stream_is_torchs(name, program, n, data):
    shapes = data.draw(st.sampled_from(_SHAPES))[:n]
    needs = data.draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    if name in ("pow", "pow_self"):
        # PyTorch's PowBackward1 saves (and unpacks: a ``detach``) the result even when the
        # exponent needs no gradient; ours saves it only for the exponent's gradient
        needs[1] = True
    seed = data.draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    # positive values away from ties, plus a tie now and then (maximum's split, pow at 1)
    values = [(rng.integers(1, 4, size=s) / 2).astype(np.float32) for s in shapes]
    theirs, t_grads = _backward(torch, program, values, needs)
    ours, s_grads = _backward(sk, program, values, needs)
    assert ours == theirs
    for a, b in zip(s_grads, t_grads):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_mul_computes_others_gradient_first():
    """The brief's case: ``x * y`` computes ``grad * x`` (other's) first; ``x * x``
    accumulates its two gradients as ``add(self's, other's)``."""
    ones = [np.ones(3, np.float32)] * 2
    ops, _ = _backward(sk, lambda m, a, b: a * b, ones, [True, True])
    assert ops == [("mul.Tensor", ["g", "x0"], {}), ("mul.Tensor", ["g", "x1"], {})]
    ops, _ = _backward(sk, lambda m, a, b: a * a, ones, [True, False])
    assert ops[-1] == ("add.Tensor", ["r1", "r0"], {})
    assert ops == _backward(torch, lambda m, a, b: a * a, ones, [True, False])[0]
