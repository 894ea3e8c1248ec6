"""Weak references keyed by object identity (PyTorch's ``torch.utils.weak``).

A ``Tensor`` defines ``__eq__`` elementwise and is unhashable by value, so ordinary
``weakref.WeakKeyDictionary`` cannot hold tensors as keys. ``WeakIdRef`` hashes and compares by
the referent's ``id`` (while it is alive), and ``WeakIdKeyDictionary`` maps such references
to values, dropping an entry when its key is collected -- what subclass and mode authors use
to memoise per-tensor state (a tensor's wrapper, a fake twin) without keeping it alive.
"""

from __future__ import annotations

import weakref
from collections.abc import MutableMapping

__all__ = ["WeakIdRef", "WeakIdKeyDictionary"]


class WeakIdRef(weakref.ref):
    """A weak reference whose hash and equality are the referent's identity.

    Two live references are equal when they point to the same object; once the referent is
    gone a reference equals only itself (its hash, taken at creation, stays the same)."""

    __slots__ = ("_id",)

    def __new__(cls, key, callback=None):
        self = weakref.ref.__new__(cls, key, callback)
        self._id = id(key)
        return self

    def __init__(self, key, callback=None):
        super().__init__(key, callback)

    def __call__(self):
        return super().__call__()

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        if not isinstance(other, WeakIdRef):
            return NotImplemented
        a, b = self(), other()
        if a is not None and b is not None:
            return a is b
        return self is other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


class WeakIdKeyDictionary(MutableMapping):
    """A mapping from objects (compared by identity) to values that does not keep its keys
    alive: an entry disappears when its key is garbage-collected. ``torch.utils.weak``'s class
    of the same name; ``ref_type`` picks the reference class (``WeakIdRef`` by default)."""

    def __init__(self, dict=None, ref_type=WeakIdRef):
        self.data = {}
        self.ref_type = ref_type
        self_ref = weakref.ref(self)

        def remove(k, selfref=self_ref):
            owner = selfref()
            if owner is not None:
                owner.data.pop(k, None)

        self._remove = remove
        if dict is not None:
            self.update(dict)

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __setitem__(self, key, value):
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key):
        del self.data[self.ref_type(key)]

    def __contains__(self, key):
        try:
            r = self.ref_type(key)
        except TypeError:
            return False
        return r in self.data

    def __iter__(self):
        for r in list(self.data):
            obj = r()
            if obj is not None:
                yield obj

    def __len__(self):
        return sum(1 for r in list(self.data) if r() is not None)

    def get(self, key, default=None):
        return self.data.get(self.ref_type(key), default)

    def copy(self):
        new = WeakIdKeyDictionary(ref_type=self.ref_type)
        for k, v in self.items():
            new[k] = v
        return new

    def __repr__(self):
        return f"<WeakIdKeyDictionary at {id(self):#x}>"
