"""Note [Block replay]: ``summarize`` runs the forward of a block whose twin already ran once.

A 70B decoder is 80 copies of one layer; its inference trace on meta is the same ~70 ops 80
times over. When a block is about to run, ``summarize`` (through :class:`BlockReplay`) checks
whether an earlier block of the same forward was *the same computation*:

- both are zoo modules (every class in the block's tree is defined in ``subclass_kit``, whose
  ``forward`` methods are pure functions of their module state and inputs: no global state,
  no data on meta), with the same classes, the same plain attributes (numbers, strings,
  functions...), the same parameter and buffer metadata (class, shape, strides, offset,
  dtype, device, ``requires_grad``, version) and no hooks but ``summarize``'s own;
- called with arguments of the same metadata (a tensor: exact class ``Tensor``, shape,
  strides, offset, dtype, device, storage size, version, ``requires_grad``, whether the tally
  already knows its storage; the same storage-sharing pattern among the arguments; anything
  else equal), everything on meta, under the same grad / inference mode, with the tally as
  the only mode in the process (so no other mode could see the ops that are skipped), no
  global module hooks and no per-op timeline asked for;
- and the earlier run was *self-contained*: it freed every storage it created except its
  output's and freed nothing that existed before (the tally's registry of live storages is
  the same before and after, plus the output), its output is a fresh plain tensor (offset 0,
  no ``_base``, no attributes) over a storage of exactly its strided extent, and it did not
  bump the version of any argument, nor allocate under another block's row; and no garbage
  collection ran during it (so what it freed, reference counting freed: deterministic, not
  the timing of a collection of reference cycles).

Then the block's ops would allocate and free exactly what the earlier block's did, in the
same order, relative to the live total at entry; so instead of running them the replay adds
the earlier block's bytes to this block's row, raises the peak to ``live at entry + the
earlier block's largest excursion``, and returns a fresh ``empty_strided`` output of the
same metadata and version (allocated through the tally, like the real output). Every number
``summarize`` reports is the one the full run gives (tests/test_zoo_block_replay.py compares
both on every zoo model). Anything outside these conditions runs normally.
"""

from __future__ import annotations

import gc

import subclass_kit as sk

from .._state import flags, tls
from ..nn import hooks as _hooks
from ..nn.module import Module
from ..nn.parameter import Parameter

__all__ = ["BlockReplay"]

_Tensor = sk.Tensor
_META = sk.device("meta")
_PLAIN = (int, float, str, bool, type(None))
# Module.__dict__ entries that are stores, not attributes (compared through their contents).
_STORES = frozenset(("_parameters", "_buffers", "_modules", "_forward_pre_hooks",
                     "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                     "_non_persistent_buffers_set", "training"))


class _Unsigned(Exception):
    """The block or call falls outside Note [Block replay]: run it normally."""


def _value_key(v):
    if isinstance(v, _PLAIN):
        return (type(v), v)
    if isinstance(v, tuple):
        return tuple(_value_key(x) for x in v)
    if callable(v) and not isinstance(v, (Module, _Tensor)):
        return ("callable", id(v))      # a function: the same object computes the same
    raise _Unsigned


def _tensor_key(t):
    if t.__class__ is not _Tensor and t.__class__ is not Parameter:
        raise _Unsigned
    d = t.__dict__
    if t._storage.device is not _META or t._vc is None or (
            d and (len(d) > 1 or "_requires_grad" not in d)):
        raise _Unsigned
    return (t.__class__, t._layout, t._dtype, t._storage._nbytes, t._vc[0], t.requires_grad,
            t._base is None)


def _module_key(m: Module, top: bool):
    """``m``'s structure and state metadata, children included (raises _Unsigned outside the
    conditions). Attributes in insertion order: a different order only means no replay."""
    cls = type(m)
    d = m.__dict__
    if not cls.__module__.startswith("subclass_kit.") or "forward" in d:
        raise _Unsigned
    if ((m._forward_pre_hooks or m._forward_hooks) and not top) or m._backward_hooks \
            or m._backward_pre_hooks:
        raise _Unsigned
    attrs = tuple([(k, _value_key(v)) for k, v in d.items() if k not in _STORES])
    params = tuple([(k, None if p is None else _tensor_key(p))
                    for k, p in m._parameters.items()])
    buffers = tuple([(k, None if b is None else _tensor_key(b))
                     for k, b in m._buffers.items()])
    children = tuple([(k, None if c is None else _module_key(c, False))
                      for k, c in m._modules.items()])
    return (cls, m.training, attrs, params, buffers, tuple(sorted(m._non_persistent_buffers_set)),
            children)


class _Record:
    """What one self-contained run of a block did (Note [Block replay])."""

    __slots__ = ("allocated", "excursion", "out_key", "out_version")


class BlockReplay:
    """Per-``summarize`` state: block signatures, recordings, and the replayed forwards.

    ``tally`` is the ``ActivationTally``; ``enter(block, name, args)`` is called by the
    block's forward pre-hook (after the tally's row switched to ``name``) and ``leave(block,
    out)`` by its forward hook. ``replayed``: how many block calls were replayed."""

    def __init__(self, tally):
        self.tally = tally
        self._module_keys: dict = {}     # id(block) -> module key or None (unsigned)
        self._records: dict = {}         # call key -> _Record
        self._open: dict = {}            # id(block) -> state of a recording run
        self.replayed = 0

    def _call_key(self, block, args):
        if id(block) not in self._module_keys:
            try:
                self._module_keys[id(block)] = _module_key(block, top=True)
            except (_Unsigned, RecursionError):     # RecursionError: a module inside itself
                self._module_keys[id(block)] = None
        mkey = self._module_keys[id(block)]
        if mkey is None:
            raise _Unsigned
        tally = self.tally
        state = sk.mode_state()
        if (tally.points is not None or flags.interceptors != 1 or state.function_modes
                or state.dispatch_modes != (tally,) or tls.trace is not None
                or _hooks._global_forward_pre_hooks or _hooks._global_forward_hooks
                or _hooks._global_backward_hooks or _hooks._global_backward_pre_hooks):
            raise _Unsigned
        known = tally._known
        storages: list = []
        akeys = []
        for a in args:
            if isinstance(a, _Tensor):
                s = a._storage
                first = next((i for i, x in enumerate(storages) if x is s), None)
                storages.append(s)
                akeys.append((_tensor_key(a), first, id(s) in known))
            else:
                storages.append(None)
                akeys.append(_value_key(a))
        return (mkey, tuple(akeys), tls.grad_enabled, tls.inference)

    def enter(self, block, name, args):
        """Before ``block`` runs: replay it, or start recording it, or neither."""
        try:
            key = self._call_key(block, args)
        except _Unsigned:
            return
        record = self._records.get(key)
        if record is not None:
            def replay(*args, **kwargs):
                return self._replay(record, name)
            replay.block_replay = True
            block.__dict__["forward"] = replay
            return
        tally = self.tally
        self._open[id(block)] = (key, name, tally.live, tally.peak, dict(tally._known),
                                 dict(tally.allocated), [a._vc[0] for a in args
                                                          if isinstance(a, _Tensor)], args,
                                 _collections())
        tally.peak = tally.live     # the block's own high-water mark, restored in leave

    def leave(self, block, out):
        """After ``block`` ran: drop a replayed forward, or keep a recording."""
        if _drop_replay(block):
            return
        opened = self._open.pop(id(block), None)
        if opened is None:
            return
        key, name, live0, peak0, known0, allocated0, versions, args, collections = opened
        tally = self.tally
        excursion = tally.peak - live0
        tally.peak = max(peak0, tally.peak)
        if _collections() != collections:
            return
        record = self._self_contained(out, name, live0, known0, allocated0, versions, args)
        if record is not None:
            record.excursion = excursion
            self._records[key] = record

    def _self_contained(self, out, name, live0, known0, allocated0, versions, args):
        tally = self.tally
        if out.__class__ is not _Tensor or out._base is not None or out.__dict__ \
                or out.storage_offset() != 0 or out._storage.device is not _META:
            return None
        storage = out._storage
        nbytes = storage.nbytes()
        if nbytes != _extent(out) * out.element_size():
            return None
        known = tally._known
        if len(known) != len(known0) + 1 or id(storage) in known0 or id(storage) not in known:
            return None
        if any(known.get(k) is not ref for k, ref in known0.items()):
            return None
        if tally.live != live0 + nbytes:
            return None
        if [a._vc[0] for a in args if isinstance(a, _Tensor)] != versions:
            return None
        if any(v != allocated0.get(k, 0) for k, v in tally.allocated.items() if k != name):
            return None
        record = _Record()
        record.allocated = tally.allocated.get(name, 0) - allocated0.get(name, 0)
        record.out_key = (tuple(out.shape), out.stride(), out.dtype)
        record.out_version = out._version
        return record

    def close(self, blocks):
        """After the run (also when it raised): no replayed forward stays on a block."""
        for block in blocks:
            _drop_replay(block)
        self._open.clear()

    def _replay(self, record, name):
        tally = self.tally
        shape, stride, dtype = record.out_key
        live0 = tally.live
        out = sk.empty_strided(shape, stride, dtype=dtype, device="meta")   # tallied
        if out._vc is not None:
            out._vc[0] = record.out_version
        tally.allocated[name] = tally.allocated.get(name, 0) + record.allocated \
            - out._storage.nbytes()
        tally.peak = max(tally.peak, live0 + record.excursion)
        self.replayed += 1
        return out


def _collections() -> int:
    """Garbage collections run so far in this process (all generations)."""
    return sum(g["collections"] for g in gc.get_stats())


def _drop_replay(block) -> bool:
    """Remove the replayed forward installed on ``block``, if any; whether there was one."""
    if getattr(block.__dict__.get("forward"), "block_replay", False):
        del block.__dict__["forward"]
        return True
    return False


def _extent(t) -> int:
    """Elements between the first and one past the last element of ``t`` (offset 0)."""
    if t.numel() == 0:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
