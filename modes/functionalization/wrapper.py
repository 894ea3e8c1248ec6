"""FunctionalTensorWrapper and FunctionalStorage (PyTorch's C++ classes of the same names,
SEMANTICS.md §6.1-6.2), written as a wrapper subclass over the public extension API.

- :class:`FunctionalStorage`: one per alias family. ``base`` (a plain tensor, never a wrapper),
  a FIFO of pending updates ``(new_value, view_metas)``, ``generation`` (+1 per update),
  ``frozen`` (after ``set_`` replaced it), and ``storage``: the data-less ``sk.Storage`` every
  wrapper of the family reports as ``untyped_storage()`` (Note [Views share Storage]: the
  debug-assert mode's view rules then hold for wrappers).
- :class:`FunctionalTensorWrapper`: ``value`` (the current plain tensor), ``storage``, the
  ``view_metas`` from the storage base, ``generation`` it last synced to, and the flags
  ``has_metadata_mutation`` / ``was_storage_changed``. Its sizes, strides and offset mirror
  ``value``'s.

Regeneration is lazy and local: a mutation applies one update to the base (one ``*_scatter`` or
inverse view per view step of the mutated tensor) and regenerates only the mutated tensor; any
other alias is regenerated from the base, in time proportional to its own view chain, when it
is next used. So a program with ``M`` mutations runs ``O(M)`` ops (PyTorch regenerates all
outputs of a multi-output view each time: quadratic on ``unbind`` loops). When no mode below
observes the ops, an update through a region view is written in place into the storage's private
copy of the base instead of scattered (``FunctionalStorage.apply_updates``): ``O(M)`` time too,
not ``O(M)`` copies of the base.
"""

from __future__ import annotations

import numpy as np

import subclass_kit as sk

__all__ = ["FunctionalStorage", "FunctionalTensorWrapper", "from_functional",
           "is_functional", "replay", "storage_image", "to_functional"]

_AS_STRIDED_BANNED = (
    "During torch.compile, encountered a mutation on a view chain of length {n}, where view {i} "
    "was an as_strided() call. as_strided() is non-compositional, and therefore is not possible "
    "to functionalize properly today,so this behavior is banned in compile. As a workaround, you "
    "can either remove the mutation from the model code, or you can insert a graph break right "
    "before the mutation with torch._dynamo.graph_break(). If you would like this behavior to "
    "work properly, please comment on https://github.com/pytorch/pytorch/issues/104505.")

ON_ITS_OWN = ("Attempting to use FunctionalTensorWrapper on its own. Instead, please use it with "
              "a corresponding FunctionalizeMode()")

DATA_PTR = (
    "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using "
    "torch.compile/export/fx, it is likely that we are erroneously tracing into a custom kernel. "
    "To fix this, please wrap the custom kernel into an opaque custom op. Please see the "
    "following for details: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html")


class FunctionalStorage:
    """The shared state of an alias family (see the module docstring)."""

    __slots__ = ("base", "eager", "frozen", "generation", "holders", "image", "private",
                 "storage", "updates", "written", "__weakref__")

    def __init__(self, base, storage):
        self.base = base
        # The layout eager mode gives the base (sizes, strides, offset in its storage), which
        # ``as_strided`` addresses; ``base``'s own layout differs when ``*_copy`` views (which
        # are contiguous) led to it. ``image``: ``(base, the base laid out that way)``, cached.
        # See Note [as_strided addresses the eager storage].
        self.eager = base._layout
        self.image = None
        self.updates: list = []
        self.generation = 0
        self.frozen = False
        self.storage = storage
        self.holders: list = []     # wrappers regenerated from the current base (see add_update)
        # True while ``base`` is a buffer this storage made itself (a ``*_scatter`` result) and
        # nothing outside the family can see: updates may then be written into it in place
        # (``apply_updates``). Cleared when the base is replaced or its values leave the family.
        self.private = False
        # ``(metas, region)`` of the last update written in place: ``region`` is the real view
        # the wrapper that made the update regenerates to (saves replaying it once more).
        self.written = None

    def add_update(self, value, metas):
        """Queue ``value`` as the new content of the view reached by ``metas`` from the base.
        Raises RuntimeError on frozen storage and on an ``as_strided`` view step after the
        first (PyTorch's texts)."""
        if self.frozen:
            raise RuntimeError("cannot mutate tensors with frozen storage")
        for i, m in enumerate(metas):
            if i > 0 and m.is_as_strided:
                raise RuntimeError(_AS_STRIDED_BANNED.format(n=len(metas), i=i))
        self.updates.append((value, metas))
        self.generation += 1
        # Wrappers regenerated from the base being replaced are stale now: drop their values so
        # they do not keep every old base alive (a loop of M mutations would otherwise hold M
        # copies of the base: quadratic memory, and page faults on each new allocation). A
        # dropped value is regenerated when next needed (``FunctionalTensorWrapper.current``).
        for w in self.holders:
            w.value = None
        self.holders.clear()

    def apply_updates(self) -> bool:
        """Write every queued update into ``base`` (in order); whether any was applied.

        An update replaces the base by a new one: one inverse per view step (a ``*_scatter``
        copies the whole base), the functional program a graph capture records. When nothing
        can observe the ops (:func:`_unobserved`) and the base is private, an update whose view
        steps write through (``ViewMeta.writes_through``, the first one a scatter) is instead
        copied into its region of the base in place: the same values and geometry, in time
        proportional to the region, so ``M`` mutations of an ``(8, N)`` base through the views of
        ``x.unbind(1)`` cost ``O(N + M)``, not ``O(M N)``. The first such update makes the
        private copy (its scatter's result)."""
        if not self.updates:
            return False
        base = self.base
        in_place = _unobserved()
        self.written = None
        for value, metas in self.updates:
            if not metas:
                base, self.private = value, False
                continue
            if (self.private and in_place and value.__class__ is sk.Tensor
                    and not value.requires_grad and value.device == base.device
                    and _writes_through(metas)):
                region = base
                for m in metas:
                    region = m.view(region)
                if base.device.type != "meta":
                    # a write nobody can see: numpy's copy, not the copy_ op (whose checks
                    # would cost as much as the rest of the update)
                    np.copyto(region.numpy(), value.numpy(), casting="unsafe")
                self.written = (metas, region)
                continue
            # an as_strided step comes first (add_update): it writes into the eager layout
            tmps = [storage_image(self, base) if metas[0].addresses_storage else base]
            for m in metas[:-1]:
                tmps.append(m.forward(tmps[-1]))
            t = value
            for i in range(len(metas) - 1, -1, -1):
                t = metas[i].reverse(tmps[i], t)
            base, self.written = t, None
            # a scatter's result is a fresh buffer (the new base is it, or views of it): nobody
            # else holds it unless a mode saw it
            self.private = (in_place and _scatters_first(metas) and base.__class__ is sk.Tensor
                            and not base.requires_grad)
        self.base = base
        self.updates.clear()
        return True


def _scatters_first(metas) -> bool:
    """Whether the first step of ``metas`` that is not a rearranging view (``view``, ``t``,
    ...) selects a region: the update's new base is then a ``*_scatter`` result."""
    for m in metas:
        if m.scatters:
            return True
        if not m.writes_through:
            return False
    return False


def _writes_through(metas) -> bool:
    """Whether writing into the real views of ``metas`` (of a private base) gives what the
    update's inverses would: exactly inverted rearrangements (``t``, ``permute``, ...) first,
    then a region (its scatter keeps the geometry those give), then any steps that write
    through. Values and the base's sizes, strides and offset are then the same."""
    region = False
    for m in metas:
        if m.addresses_storage:
            return False        # its region is in the eager layout, not the base's
        if region:
            if not m.writes_through:
                return False
        elif m.scatters:
            region = True
        elif not m.exact_inverse:
            return False
    return region


# Note [as_strided addresses the eager storage]
# ``as_strided`` reads its input's storage, not its input: its result depends on the layout of
# the tensor that owns the storage. With ``remove="mutations_and_views"`` views are replayed
# with ``*_copy`` ops, which return contiguous tensors, so a base computed from them (``x.t() *
# 1``) can be laid out otherwise than in eager mode, and ``as_strided_copy`` of a ``*_copy``
# result reads another storage altogether. So each wrapper keeps ``eager_layout`` (the layout
# eager mode gives it: view ops and ops on inputs whose layout differs are replayed on meta
# stand-ins, mode.py), each storage the base's (``FunctionalStorage.eager``), and an
# ``as_strided`` step without views is replayed, whatever steps precede it, from the base laid
# out in its eager layout (``storage_image``), its inverse ``as_strided_scatter`` written into
# that image. PyTorch replays ``as_strided_copy`` on the previous step's ``*_copy`` result and
# gets other values than eager mode (docs/differences.md). With views kept, values have the
# eager layouts already.


def storage_image(fs: FunctionalStorage, base=None):
    """``base`` (default ``fs.base``) laid out in the base's eager layout: ``base`` itself when
    its layout is that one, else a copy with those strides (``empty_strided`` + ``copy``,
    functional ops), made once per base value."""
    base = fs.base if base is None else base
    eager = fs.eager
    lay = base._layout
    if lay == eager or eager.sizes != lay.sizes or eager.offset != lay.offset:
        return base
    cached = fs.image
    if cached is not None and cached[0] is base:
        return cached[1]
    empty = sk.ops.empty_strided.default(list(eager.sizes), list(eager.strides),
                                         dtype=base.dtype, device=base.device)
    image = sk.ops.copy.default(empty, base)
    fs.image = (base, image)
    return image


def replay(fs: FunctionalStorage, metas, t=None):
    """The tensor ``metas`` reach from ``t`` (default: the storage's base)."""
    t = fs.base if t is None else t
    for m in metas:
        t = m.forward(storage_image(fs) if m.addresses_storage else t)
    return t


def _unobserved() -> bool:
    """Whether ops run now reach their kernels unseen: no dispatch mode below but
    functionalization itself (a graph capture must record functional ops only)."""
    return all(m.__class__ is _mode_class() for m in sk.get_mode_stack())


def _mode_class():
    global _MODE_CLASS
    if _MODE_CLASS is None:
        from .mode import FunctionalizeMode     # mode.py imports this module
        _MODE_CLASS = FunctionalizeMode
    return _MODE_CLASS


_MODE_CLASS = None


class FunctionalTensorWrapper(sk.Tensor):
    """A functional tensor: reads as ``value``; views and mutations of it are recorded instead
    of performed (module docstring). Made by :func:`to_functional` and by ops under
    :class:`~subclass_kit.modes.FunctionalizeMode`; used outside that mode it raises
    RuntimeError, as PyTorch's ``FunctionalTensor`` does."""

    __tensor_function__ = sk.disabled_tensor_function

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(ON_ITS_OWN)

    def __tensor_flatten__(self):
        self.current()
        self.fstorage.private = False       # ``value`` leaves the family
        return ["value"], (self.fstorage, self.view_metas, self.generation)

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        storage, metas, generation = ctx
        return _new_wrapper(inner["value"], storage, metas, generation)

    # -- the algorithm ------------------------------------------------------------------------
    def sync(self):
        """Bring ``value`` up to date: apply the storage's pending updates, then replay this
        tensor's view steps from the base (not counted as a mutation)."""
        fs = self.fstorage
        if self.generation == fs.generation:
            return
        fs.apply_updates()
        self.regenerate()

    def regenerate(self):
        fs = self.fstorage
        written = fs.written
        if (written is not None and written[0] is self.view_metas
                and all(m.reapply for m in self.view_metas)):
            t = written[1]          # the real view the update was just written through
        else:
            t = replay(fs, self.view_metas)
        self.set_value(t)
        self.generation = fs.generation
        if self.view_metas:
            fs.holders.append(self)

    def current(self):
        """``value``, regenerated first if it was dropped (only stale values are dropped)."""
        if self.value is None:
            self.sync()
        return self.value

    def set_value(self, value):
        """``value := value``, the wrapper's geometry mirroring it."""
        self.value = value
        self._layout = value._layout
        self._np_buf = None

    def commit_update(self):
        self.fstorage.add_update(self.value, self.view_metas)

    def replace(self, value):
        """PyTorch's ``replace_``: a mutation result becomes this tensor's value (cast back to
        its dtype if the op promoted). An in-place op keeps the eager layout; an ``out=`` op
        that resized gives the value's."""
        if value.dtype != self.dtype:
            value = sk.ops._to_copy.default(value, dtype=self.dtype)
        self.set_value(value)
        if value._layout.sizes != self.eager_layout.sizes:
            self.set_eager_layout(value._layout)

    def set_eager_layout(self, layout):
        """The layout eager mode gives this tensor (Note [as_strided addresses the eager
        storage]); the storage's too when this wrapper is its base."""
        self.eager_layout = layout
        if not self.view_metas:
            self.fstorage.eager = layout

    @property
    def has_data_mutation(self) -> bool:
        return self.fstorage.generation > 0

    # -- what PyTorch's FunctionalTensor does for Python-level access ------------------------
    def data_ptr(self):
        raise RuntimeError(DATA_PTR)

    def __repr__(self):
        self.sync()
        return f"FunctionalTensorWrapper({self.value!r})"


def _new_wrapper(value, fstorage, metas, generation) -> FunctionalTensorWrapper:
    lay = value._layout
    if fstorage is None:
        w = sk.make_wrapper_subclass(FunctionalTensorWrapper, lay.sizes, lay.strides,
                                     lay.offset, dtype=value.dtype, device=value.device)
        fstorage = FunctionalStorage(value, w._storage)
    else:
        # A view: its storage is the family's, so the geometry given here (one the wrapper
        # factory has memoised) only has to be valid; the real one is set below.
        w = sk.make_wrapper_subclass(FunctionalTensorWrapper, (), None, 0,
                                     dtype=value.dtype, device=value.device)
        w._storage = fstorage.storage
    w._layout = w.eager_layout = lay
    w.value = value
    w.fstorage = fstorage
    w.view_metas = metas
    w.generation = generation
    w.has_metadata_mutation = False
    w.was_storage_changed = False
    return w


def wrap_fresh(value) -> FunctionalTensorWrapper:
    """A wrapper over a tensor no other wrapper aliases: its own storage, base ``value``."""
    return _new_wrapper(value, None, (), 0)


def wrap_view(value, of: FunctionalTensorWrapper, meta) -> FunctionalTensorWrapper:
    """A wrapper for a view of ``of``: same storage, one more view step. Its generation starts
    at 0, so it is regenerated at first use once its storage has seen a mutation (PyTorch)."""
    return _new_wrapper(value, of.fstorage, of.view_metas + (meta,), 0)


def is_functional(t) -> bool:
    return isinstance(t, FunctionalTensorWrapper)


def to_functional(t):
    """Wrap a plain tensor (or each tensor of a pytree) in a new FunctionalTensorWrapper with a
    storage of its own (PyTorch's ``torch._to_functional_tensor``). Raises TypeError for a
    wrapper (functionalizing twice is not supported)."""
    def one(x):
        if isinstance(x, FunctionalTensorWrapper):
            raise TypeError("to_functional(): the tensor is already a FunctionalTensorWrapper")
        return wrap_fresh(x)
    return sk.pytree.tree_map_only(sk.Tensor, one, t)


def from_functional(t):
    """The current value of a wrapper (synced first), or ``t`` unchanged for anything else;
    maps over pytrees (PyTorch's ``torch._from_functional_tensor`` after ``_sync``)."""
    def one(x):
        if isinstance(x, FunctionalTensorWrapper):
            x.sync()
            x.fstorage.private = False      # the value leaves the family: no more writes into it
            return x.value
        return x
    return sk.pytree.tree_map_only(sk.Tensor, one, t)
