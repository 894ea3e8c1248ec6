"""Random sampling API: ``sk.Generator``, ``sk.default_generator``, ``sk.seed``,
``sk.initial_seed``, ``sk.get_rng_state`` / ``sk.set_rng_state``, ``sk.randperm``,
``sk.multinomial``, ``sk.bernoulli``, ``sk.normal`` and the methods ``Tensor.multinomial``,
``Tensor.bernoulli``, ``Tensor.bernoulli_``. Each call reaches the overload PyTorch's reaches
(``generator=`` only when given; ``randperm.generator`` when it is). Values come from numpy's
stream, not PyTorch's (docs/differences.md); shapes, dtypes, strides and errors are PyTorch's.
"""

from __future__ import annotations

from .._argcheck import type_error
from ..function import public_api
from ..generator import Generator, default_generator
from ..registry import ops
from ..tensor import Tensor
from ._register import method, size_args
from .creation import _kw, factory

__all__ = ["Generator", "default_generator", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "randperm", "multinomial", "bernoulli", "normal"]


def _gen(generator) -> dict:
    return {} if generator is None else {"generator": generator}


def seed() -> int:
    """Seed the default generator with fresh entropy; return the seed (``torch.seed``)."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's seed (``torch.initial_seed``)."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state, a ``uint8`` tensor (``torch.get_rng_state``)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state (``torch.set_rng_state``)."""
    default_generator.set_state(new_state)


@factory
def randperm(n, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    """A random permutation of ``0 .. n-1`` (``torch.randperm``): int64 by default; shape
    ``(n,)``. RuntimeError for negative ``n`` or an ``n`` the dtype cannot count to,
    NotImplementedError for bool; ``layout`` / ``pin_memory`` as ``sk.zeros``."""
    kw = _kw(dtype, device, layout, pin_memory)
    if generator is not None:
        return ops.randperm.generator(n, generator=generator, **kw)
    return ops.randperm.default(n, **kw)


@method("multinomial")
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """``num_samples`` category indices per row of the probabilities ``input`` (1-d: ``(n,)``,
    2-d: ``(rows, n)``; int64), with or without replacement (``torch.multinomial``). Weights
    need not sum to 1. Raises RuntimeError as PyTorch: not 1-d/2-d, non-floating input,
    ``num_samples <= 0`` or more than the categories without replacement, negative / inf / nan
    weights, a row summing to 0."""
    if out is not None:
        return ops.multinomial.out(input, num_samples, replacement, out=out, **_gen(generator))
    if replacement:
        return ops.multinomial.default(input, num_samples, replacement, **_gen(generator))
    return ops.multinomial.default(input, num_samples, **_gen(generator))


@method("bernoulli")
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 draws (``torch.bernoulli``): with probabilities ``input`` (floating; values in
    [0, 1]), or with the float ``p`` for every element of ``input``'s shape and dtype
    (``bernoulli.p``). The result is contiguous, ``input``'s dtype. ``out=`` only without
    ``p``, as PyTorch's signatures."""
    if p is None:
        if out is not None:
            return ops.bernoulli.out(input, out=out, **_gen(generator))
        return ops.bernoulli.default(input, **_gen(generator))
    if out is not None:
        raise TypeError(
            "bernoulli() received an invalid combination of arguments - got (Tensor, float, "
            "out=Tensor), but expected one of:\n"
            " * (Tensor input, *, sk.Generator generator = None, Tensor out = None)\n"
            " * (Tensor input, float p, *, sk.Generator generator = None)\n")
    return ops.bernoulli.p(input, p, **_gen(generator))


@method("bernoulli_")
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill ``self`` with 0/1 draws of probability ``p`` (a float: ``bernoulli_.float``; a
    tensor broadcast to ``self``: ``bernoulli_.Tensor``). Bumps ``_version``."""
    if isinstance(p, Tensor):
        return ops.bernoulli_.Tensor(self, p, **_gen(generator))
    return ops.bernoulli_.float(self, p, **_gen(generator))


@public_api
def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None, device=None,
           pin_memory=None, requires_grad=False, out=None):
    """Normal samples (``torch.normal``), one overload per argument kind:

    - ``normal(mean: Tensor, std: Tensor)``: shape broadcast, ``mean``'s dtype;
    - ``normal(mean: Tensor, std: float = 1.0)``: ``mean``'s shape and dtype;
    - ``normal(mean: float, std: Tensor)``: ``std``'s shape and dtype;
    - ``normal(mean: float, std: float, size)``: a factory (``dtype=``, ``device=``,
      ``layout=`` / ``pin_memory=`` as ``sk.zeros``).

    Results are contiguous. RuntimeError for ``std < 0`` (for a tensor ``std``, any element),
    NotImplementedError for non-floating results."""
    kw = _gen(generator)
    if isinstance(mean, Tensor):
        name = "Tensor_Tensor" if isinstance(std, Tensor) else "Tensor_float"
        args = (mean, std)
    elif isinstance(std, Tensor):
        name, args = "float_Tensor", (mean, std)
    else:
        if size is None:
            raise type_error("normal", "size", "tuple of ints", size, 3)
        name, args = "float_float", (mean, std, list(size_args((size,))))
        if out is None:
            t = ops.normal.float_float(*args, **kw, **_kw(dtype, device, layout, pin_memory))
            if requires_grad:
                t.requires_grad_(True)
            return t
    if out is not None:
        return getattr(ops.normal, name + "_out")(*args, out=out, **kw)
    return getattr(ops.normal, name)(*args, **kw)

