"""Eager overhead: a chain of ~1000 small ops on 64-float tensors.

Per-op dispatch cost dominates at this size, so this measures the Python dispatch path
(OpOverload.__call__, rules, version bumps) against torch eager's C++ path and raw numpy.
One step is 10 ops: add, mul, view, transpose, sum(dim, keepdim), broadcasting mul, reshape
(a copy: the input is transposed), add_, mul_, sum. Target: sk <= 3x torch.

Variants (same chain, sk and torch side by side): under a no-op dispatch mode (target sk <=
0.5x torch), on a pass-through wrapper subclass (sk <= 0.33x torch) and on a direct subclass
with no overrides (sk <= 1x torch). inference.py times it under inference mode and
debug_assert.py under the debug-assert mode.

To add a variant: append a Case whose function calls ``chain_case`` with a context factory
and/or an input factory for sk and for torch.
"""

from __future__ import annotations

import contextlib

import numpy as np
from harness import NUMPY, SK, TORCH, Case, Result, Skip, import_torch, measure, median_seconds

STEPS = 100
OPS_PER_STEP = 10
N_OPS = STEPS * OPS_PER_STEP
DEFAULT_REPEATS = 21


def chain(x, w):
    """The op chain for sk and torch tensors (same method names)."""
    for _ in range(STEPS):
        a = x + w                         # add
        b = a * w                         # mul
        c = b.view(4, 16)                 # view
        d = c.transpose(0, 1)             # transpose -> (16, 4), non-contiguous
        e = d.sum(1, keepdim=True)        # sum(dim, keepdim) -> (16, 1)
        f = d * e                         # broadcasting mul -> (16, 4)
        g = f.reshape(8, 8)               # reshape (copy)
        g.add_(x)                         # add_
        g.mul_(0.5)                       # mul_
        s = g.sum()                       # sum
    return s


def chain_numpy(x, w):
    """The same chain on numpy arrays (numpy spells a few ops differently)."""
    for _ in range(STEPS):
        a = x + w
        b = a * w
        c = b.reshape(4, 16)
        d = c.transpose(1, 0)
        e = d.sum(1, keepdims=True)
        f = d * e
        g = f.reshape(8, 8)
        g += x
        g *= 0.5
        s = g.sum()
    return s


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((8, 8)).astype(np.float32),
            rng.uniform(0.5, 1.0, (8, 8)).astype(np.float32))


def _check(s, xn, wn):
    """The chain must compute the same value as numpy (a benchmark of wrong code is moot)."""
    expected = float(chain_numpy(xn.copy(), wn.copy()))
    np.testing.assert_allclose(float(s.item()), expected, rtol=1e-4)


def _us_per_op(fn, repeats):
    return median_seconds(fn, repeats) / N_OPS * 1e6


def _check_type(s, x, cls):
    """With subclass inputs the chain's result must still be that subclass (else the benchmark
    timed the plain-tensor path)."""
    if cls is not None and not (type(x) is cls and type(s) is cls):
        raise AssertionError(f"expected {cls.__name__} inputs and result, got "
                             f"{type(x).__name__} and {type(s).__name__}")


def chain_case(name: str, repeats, sk_context=contextlib.nullcontext,
               torch_context=contextlib.nullcontext, with_numpy=True, target=3.0,
               sk_make=None, torch_make=None) -> list:
    """Time the chain for sk and torch (each inside its context factory) and numpy.

    ``sk_make(sk, array)`` / ``torch_make(torch, array)`` build an input tensor (default a plain
    tensor); a factory's ``cls`` attribute, when set, is the class inputs and result must have.
    """
    repeats = repeats or DEFAULT_REPEATS
    xn, wn = _inputs()
    result = Result(name, "us/op", target=target)

    def run_sk():
        try:
            import subclass_kit as sk
        except ImportError as e:
            raise Skip(f"subclass_kit not importable ({e})") from None
        make = sk_make or (lambda sk, a: sk.tensor(a))
        x, w = make(sk, xn), make(sk, wn)
        with sk_context():
            try:
                s = chain(x, w)
                _check(s, xn, wn)
            except (AttributeError, NotImplementedError) as e:
                raise Skip(f"missing piece: {type(e).__name__}: {e}") from None
            _check_type(s, x, getattr(make, "cls", None))
            return _us_per_op(lambda: chain(x, w), repeats)

    def run_torch():
        torch = import_torch()
        make = torch_make or (lambda torch, a: torch.from_numpy(a.copy()))
        x, w = make(torch, xn), make(torch, wn)
        with torch_context():
            s = chain(x, w)
            _check(s, xn, wn)
            _check_type(s, x, getattr(make, "cls", None))
            return _us_per_op(lambda: chain(x, w), repeats)

    measure(result, SK, run_sk)
    measure(result, TORCH, run_torch)
    if with_numpy:
        measure(result, NUMPY, lambda: _us_per_op(lambda: chain_numpy(xn, wn), repeats))
    return [result]


def eager_chain(repeats=None) -> list:
    return chain_case("eager_chain", repeats)


def _sk_noop_mode():
    import subclass_kit as sk

    class NoOpMode(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return NoOpMode()


def _torch_noop_mode():
    import_torch()
    from torch.utils._python_dispatch import TorchDispatchMode

    class NoOpMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return NoOpMode()


def eager_chain_noop_mode(repeats=None) -> list:
    """The chain under a DispatchMode that forwards every op (mode overhead)."""
    return chain_case("eager_chain_noop_mode", repeats, _sk_noop_mode, _torch_noop_mode,
                      with_numpy=False, target=0.5)


def _sk_wrapper_factory():
    """A pass-through wrapper subclass: metadata-only outer tensor, the real one in ``elem``."""
    import subclass_kit as sk
    from subclass_kit.pytree import tree_map_only

    class Wrapper(sk.Tensor):
        __tensor_function__ = sk.disabled_tensor_function

        @staticmethod
        def wrap(elem):
            w = sk.make_wrapper_subclass(Wrapper, elem.shape, elem.stride(),
                                         elem.storage_offset(), dtype=elem.dtype,
                                         device=elem.device)
            w.elem = elem
            return w

        @classmethod
        def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            unwrap = lambda t: t.elem
            out = func(*tree_map_only(Wrapper, unwrap, args),
                       **tree_map_only(Wrapper, unwrap, kwargs))
            out = tree_map_only(sk.Tensor, Wrapper.wrap, out)
            return sk.return_and_correct_aliasing(func, args, kwargs, out)

        def __tensor_flatten__(self):
            return ["elem"], None

        @staticmethod
        def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
            return Wrapper.wrap(inner["elem"])

    def make(sk, a):
        return Wrapper.wrap(sk.tensor(a))

    make.cls = Wrapper
    return make


def _torch_wrapper_factory():
    """The same wrapper in torch: _make_wrapper_subclass + __torch_dispatch__."""
    torch = import_torch()
    from torch.utils._python_dispatch import return_and_correct_aliasing
    from torch.utils._pytree import tree_map_only

    class Wrapper(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl

        @staticmethod
        def __new__(cls, elem):
            w = torch.Tensor._make_wrapper_subclass(
                cls, elem.shape, strides=elem.stride(), storage_offset=elem.storage_offset(),
                dtype=elem.dtype, device=elem.device, requires_grad=False)
            w.elem = elem
            return w

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            unwrap = lambda t: t.elem
            out = func(*tree_map_only(Wrapper, unwrap, args),
                       **tree_map_only(Wrapper, unwrap, kwargs))
            out = tree_map_only(torch.Tensor, Wrapper, out)
            return return_and_correct_aliasing(func, args, kwargs, out)

        def __tensor_flatten__(self):
            return ["elem"], None

        @staticmethod
        def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
            return Wrapper(inner["elem"])

    def make(torch, a):
        return Wrapper(torch.from_numpy(a.copy()))

    make.cls = Wrapper
    return make


def eager_chain_wrapper(repeats=None) -> list:
    """The chain on pass-through wrapper subclass inputs (unwrap, run, rewrap, fix aliasing)."""
    sk_make = torch_make = None
    try:
        sk_make = _sk_wrapper_factory()
    except ImportError:
        pass                        # chain_case reports subclass_kit as skipped
    try:
        torch_make = _torch_wrapper_factory()
    except (Skip, ImportError):
        pass
    return chain_case("eager_chain_wrapper", repeats, sk_make=sk_make, torch_make=torch_make,
                      with_numpy=False, target=0.33)


def _direct_subclass_factories():
    def sk_make(sk, a):
        return sk.make_subclass(sk_make.cls, sk.tensor(a))

    def torch_make(torch, a):
        return torch.from_numpy(a.copy()).as_subclass(torch_make.cls)

    sk_make.cls = torch_make.cls = None
    try:
        import subclass_kit as sk

        class MyTensor(sk.Tensor):
            pass

        sk_make.cls = MyTensor
    except ImportError:
        pass
    try:
        torch = import_torch()

        class MyTorchTensor(torch.Tensor):
            pass

        torch_make.cls = MyTorchTensor
    except Skip:
        pass
    return sk_make, torch_make


def eager_chain_direct_subclass(repeats=None) -> list:
    """The chain on direct ("is-a") subclass inputs with no overrides: the default
    ``__tensor_function__`` / ``__torch_function__`` keeps the class through every op."""
    sk_make, torch_make = _direct_subclass_factories()
    return chain_case("eager_chain_direct_subclass", repeats, sk_make=sk_make,
                      torch_make=torch_make, with_numpy=False, target=1.0)


CASES = [
    Case("eager_chain", eager_chain, "~1000 small ops on 64 floats: us/op, sk vs torch vs numpy"),
    Case("eager_chain_noop_mode", eager_chain_noop_mode,
         "the same chain under a no-op DispatchMode / TorchDispatchMode"),
    Case("eager_chain_wrapper", eager_chain_wrapper,
         "the same chain on a pass-through wrapper subclass (__tensor/torch_dispatch__)"),
    Case("eager_chain_direct_subclass", eager_chain_direct_subclass,
         "the same chain on a direct subclass with no overrides (make_subclass / as_subclass)"),
]
