"""Deliberately buggy custom ops, modes and subclasses: each breaks exactly one rule of
``modes.DebugAssertMode`` (the rule is in ``CATALOGUE``, read by ``test_faults.py``).

Custom kernels run below autograd (Note [Version counters]): ops they call do not bump versions
and views they make are untracked, so a kernel that mutates an argument through an in-place op
changes its data (``unexpected_mutation``) without moving its ``_version``. Buggy modes run
above, so their in-place calls do bump: the catalogue uses that to isolate
``version_not_bumped``.

Every buggy op has a cpu and a meta kernel with the same bug (meta tensors share views' storage
too), except ``meta_view_alloc`` whose bug lives in its meta kernel only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import subclass_kit as sk

lib = sk.library
HOARD: list = []   # outputs kept alive by the "hoard" kernel and the hoarding mode/subclass


def _both(op, fn):
    lib.impl(op, "cpu")(fn)
    lib.impl(op, "meta")(fn)
    return op


def _define(schema, fn):
    name = schema.split("(")[0].split("::")[1]
    base = name.split(".")[0]
    space = getattr(sk.ops, "faults", None)
    if space is not None and base in dir(space):
        packet = getattr(space, base)
        overload = name.split(".")[1] if "." in name else "default"
        existing = packet._overloads.get(overload)
        if existing is not None:   # re-imported module: reuse the op, refresh the kernels
            return _both(existing, fn)
    return _both(lib.define(schema), fn)


# -- custom ops ---------------------------------------------------------------------------------
view_copy = _define("faults::view_copy(Tensor(a) self) -> Tensor(a)",
                    lambda self: self.clone())                                # view returns a copy
identity = _define("faults::identity(Tensor self) -> Tensor",
                   lambda self: self)                                         # returns its input
view_of_input = _define("faults::view_of_input(Tensor self) -> Tensor",
                        lambda self: sk.ops.alias(self))                      # out-of-place view


def _two_views(self):
    c = self.clone()
    return c, sk.ops.alias(c)


two_outputs = _define("faults::two_outputs(Tensor self) -> (Tensor, Tensor)", _two_views)


def _new_instead(self):
    sk.ops.add_(self, 1)
    return self.clone()                                                       # not self


inplace_new = _define("faults::inplace_new_(Tensor(a!) self) -> Tensor(a!)", _new_instead)


def _sneaky(self, other):
    sk.ops.add_(other, 1)                                                     # other is not (a!)
    return sk.ops.add(self, 1)


sneaky = _define("faults::sneaky(Tensor self, Tensor other) -> Tensor", _sneaky)


def _reshapes_input(self):
    sk.ops.unsqueeze_(self, 0)                       # metadata of a non-mutable argument
    return self.clone()


reshapes_input = _define("faults::reshapes_input(Tensor self) -> Tensor", _reshapes_input)


def _hoard(self):
    out = self.clone()
    HOARD.append(out)                                                         # a global ref
    return out


hoard = _define("faults::hoard(Tensor self) -> Tensor", _hoard)

meta_view_alloc = lib.define("faults::meta_view_alloc(Tensor(a) self) -> Tensor(a)")
lib.impl(meta_view_alloc, "cpu")(lambda self: sk.ops.alias(self))
lib.impl(meta_view_alloc, "meta")(                                            # new meta storage
    lambda self: sk.empty(self.shape, dtype=self.dtype, device="meta"))


def _swap_storage(self):
    sk.ops.set_.source_Tensor(self, self.clone())    # same data, another Storage
    return sk.ops.add(self, 1)


swap_storage = _define("faults::swap_storage(Tensor self) -> Tensor", _swap_storage)


def _split_copy(self):
    return [sk.ops.alias(self), self.clone()]                                 # [1] is a copy


split_copy = _define("faults::split_copy(Tensor(a -> *) self) -> Tensor(a)[]", _split_copy)


def _fresh_out(self, k, *, out):
    return sk.ops.mul(self, k)                                                # not out


scale_out = _define("faults::scale.out(Tensor self, float k, *, Tensor(a!) out) -> Tensor(a!)",
                    _fresh_out)


def _same_twice(self):
    c = self.clone()
    return c, c


same_twice = _define("faults::same_twice(Tensor self) -> (Tensor, Tensor)", _same_twice)


# -- modes (enter them OUTSIDE the checker, so it checks what they return) -----------------------
class _Mode(sk.DispatchMode):
    target = None

    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is self.target:
            return self.bug(func, args, kwargs)
        return func(*args, **kwargs)


class CloneReturnsInput(_Mode):
    """A 'copy elision' mode: clone returns its input."""
    target = sk.ops.clone.default

    def bug(self, func, args, kwargs):
        return args[0]


class AliasReturnsInput(_Mode):
    """A view op answered with the input itself."""
    target = sk.ops.alias.default

    def bug(self, func, args, kwargs):
        return args[0]


class SetInsteadOfWrite(_Mode):
    """add_ done by computing out of place and ``set_``-ing self onto the result: one bump
    (from set_), self returned, but self now has another Storage."""
    target = sk.ops.add_.Tensor

    def bug(self, func, args, kwargs):
        self_, other = args[0], args[1]
        return self_.set_(sk.ops.add(self_, other, **kwargs))


class ReplacesListElement(_Mode):
    """cat with the caller's list edited in place."""
    target = sk.ops.cat.default

    def bug(self, func, args, kwargs):
        tensors = args[0]
        tensors[0] = sk.ops.clone(tensors[0])
        return func(*args, **kwargs)


class WritesWithoutResolving(_Mode):
    """mul_ written through numpy: the data changes, the op never resolves, nothing bumps."""
    target = sk.ops.mul_.Tensor

    def bug(self, func, args, kwargs):
        self_ = args[0]
        with sk.no_dispatch():
            result = sk.ops.mul(self_, args[1])
        self_.numpy()[...] = result.numpy()
        return self_


class ResolvesTwice(_Mode):
    """add_ run twice with alpha halved: right data, but two bumps."""
    target = sk.ops.add_.Tensor

    def bug(self, func, args, kwargs):
        alpha = kwargs.get("alpha", 1)
        func(args[0], args[1], alpha=alpha / 2)
        return func(args[0], args[1], alpha=alpha / 2)


class TouchesOther(_Mode):
    """add bumps its second argument (an in-place add of 0: the data stays the same)."""
    target = sk.ops.add.Tensor

    def bug(self, func, args, kwargs):
        sk.ops.add_(args[1], 0)
        return func(*args, **kwargs)


class HoardingMode(_Mode):
    """A logging mode that keeps every output of mul (and does not say so)."""
    target = sk.ops.mul.Tensor

    def bug(self, func, args, kwargs):
        out = func(*args, **kwargs)
        HOARD.append(out)
        return out


class DeclaredHoardingMode(HoardingMode):
    """The same, with the documented opt-out: no violation."""
    keeps_output_references = True


# -- subclasses ----------------------------------------------------------------------------------
class ForgetfulWrapper(sk.Tensor):
    """A wrapper subclass that forgets ``sk.return_and_correct_aliasing``: its view outputs get
    their own (data-less) Storage and its in-place ops return a new wrapper."""

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def wrap(elem):
        w = sk.make_wrapper_subclass(ForgetfulWrapper, elem.shape, elem.stride(),
                                     elem.storage_offset(), dtype=elem.dtype, device=elem.device)
        w.elem = elem
        return w

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(t):
            return t.elem if isinstance(t, ForgetfulWrapper) else t
        out = func(*sk.pytree.tree_map(unwrap, args),
                   **sk.pytree.tree_map(unwrap, kwargs or {}))
        return sk.pytree.tree_map_only(sk.Tensor, ForgetfulWrapper.wrap, out)

    def __tensor_flatten__(self):
        return ["elem"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return ForgetfulWrapper.wrap(inner["elem"])


class LazyClone(sk.Tensor):
    """A direct subclass whose handler elides clone (returns the argument)."""

    __tensor_function__ = sk.disabled_tensor_function

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is sk.ops.clone.default:
            return args[0]
        with sk.no_dispatch():
            return func(*args, **(kwargs or {}))


class CachingWrapper(ForgetfulWrapper):
    """A wrapper that caches its results of ``neg`` (keeps references) and aliases correctly."""

    cache: list = []

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(t):
            return t.elem if isinstance(t, ForgetfulWrapper) else t
        out = func(*sk.pytree.tree_map(unwrap, args),
                   **sk.pytree.tree_map(unwrap, kwargs or {}))
        out = sk.pytree.tree_map_only(sk.Tensor, cls.wrap_as, out)
        cls.cache.append(out)
        return sk.return_and_correct_aliasing(func, args, kwargs, out)

    @classmethod
    def wrap_as(cls, elem):
        w = sk.make_wrapper_subclass(cls, elem.shape, elem.stride(), elem.storage_offset(),
                                     dtype=elem.dtype, device=elem.device)
        w.elem = elem
        return w


class DeclaredCachingWrapper(CachingWrapper):
    cache: list = []
    keeps_output_references = True


# -- the catalogue -------------------------------------------------------------------------------
def _t(device):
    """A fresh (2, 3) float32 tensor: 0..5 on cpu, data-less on meta."""
    if device == "meta":
        return sk.empty(2, 3, device="meta")
    return sk.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])


@dataclass
class Fault:
    """One buggy piece: ``run(device)`` calls it (under the checker); it must be reported as
    exactly ``rule``. ``outside`` is a mode to enter OUTSIDE the checker (so the checker sees
    what it returns)."""

    name: str
    rule: str
    run: Callable
    devices: tuple = ("cpu", "meta")
    outside: Callable | None = None
    check_data: bool = True


def _run_op(op, *extra):
    def run(device):
        return op(_t(device), *extra)
    return run


def _with_out(device):
    x = _t(device)
    return scale_out(x, 2.0, out=sk.empty_like(x))


def _sneaky_run(device):
    return sneaky(_t(device), _t(device))


def _method(name, *a):
    def run(device):
        return getattr(_t(device), name)(*a)
    return run


def _wrapped(cls, op_name, *a):
    def run(device):
        w = cls.wrap(_t(device)) if cls is ForgetfulWrapper else cls.wrap_as(_t(device))
        return getattr(w, op_name)(*a)
    return run


def _lazy_clone(device):
    return sk.make_subclass(LazyClone, _t(device)).clone()


def _cat(device):
    return sk.cat([_t(device), _t(device)])


def _add_two(device):
    return _t(device).add(_t(device))


def _mul_(device):
    x = _t(device)
    return x.mul_(x)


CATALOGUE = [
    Fault("view kernel returns a copy", "view_not_aliased", _run_op(view_copy)),
    Fault("meta view kernel allocates a new storage", "view_not_aliased",
          _run_op(meta_view_alloc), devices=("meta",)),
    Fault("multi-output view returns a copy", "view_not_aliased", _run_op(split_copy)),
    Fault("out-of-place kernel returns its input", "output_not_fresh", _run_op(identity)),
    Fault("out-of-place kernel returns a view of its input", "output_aliases_input",
          _run_op(view_of_input)),
    Fault("two outputs share a storage", "output_aliases_input", _run_op(two_outputs)),
    Fault("the same tensor returned twice", "output_aliases_input", _run_op(same_twice)),
    Fault("in-place kernel returns a new tensor", "inplace_not_self", _run_op(inplace_new)),
    Fault("out= kernel returns a new tensor", "inplace_not_self", _with_out),
    Fault("kernel mutates an argument not declared mutable", "unexpected_mutation",
          _sneaky_run, devices=("cpu",)),
    Fault("kernel changes an argument's metadata", "input_metadata", _run_op(reshapes_input)),
    Fault("kernel keeps a global reference to its output", "output_not_fresh", _run_op(hoard)),
    Fault("kernel swaps an argument's storage", "input_replaced", _run_op(swap_storage)),
    Fault("mode returns the input for clone", "output_not_fresh", _method("clone"),
          outside=CloneReturnsInput),
    Fault("mode returns the input for a view op", "output_not_fresh", _method("alias"),
          outside=AliasReturnsInput),
    Fault("mode swaps an input's storage (set_ instead of writing)", "input_replaced",
          _method("add_", 1.0), outside=SetInsteadOfWrite),
    Fault("mode replaces an element of a TensorList argument", "input_replaced", _cat,
          outside=ReplacesListElement),
    Fault("mode writes without resolving the op (no bump)", "version_not_bumped", _mul_,
          devices=("cpu",), outside=WritesWithoutResolving),
    Fault("mode resolves an in-place op twice", "version_not_bumped", _method("add_", 1.0),
          outside=ResolvesTwice),
    Fault("mode bumps an argument that is not mutated", "version_not_bumped",
          _add_two, outside=TouchesOther),
    Fault("mode keeps references to outputs", "output_not_fresh", _method("mul", 2.0),
          outside=HoardingMode),
    Fault("wrapper subclass forgets return_and_correct_aliasing (view)", "view_not_aliased",
          _wrapped(ForgetfulWrapper, "t")),
    Fault("wrapper subclass forgets return_and_correct_aliasing (in-place)", "inplace_not_self",
          _wrapped(ForgetfulWrapper, "add_", 1.0)),
    Fault("wrapper subclass caches its outputs", "output_not_fresh",
          _wrapped(CachingWrapper, "neg")),
    Fault("direct subclass elides clone", "output_not_fresh", _lazy_clone),
]

# Correct counterparts of catalogue entries: the documented opt-outs (no violation at all).
OPT_OUTS = [
    Fault("mode declares keeps_output_references", "", _method("mul", 2.0),
          outside=DeclaredHoardingMode),
    Fault("wrapper declares keeps_output_references", "",
          _wrapped(DeclaredCachingWrapper, "neg")),
]
