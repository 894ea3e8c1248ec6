"""``OpOverloadPacket`` (what ``sk.ops.<name>`` names: the overloads of one op, PyTorch's
structure) and ``_Namespace`` (``sk.ops`` and the custom-op namespaces that hold packets).

``registry.py`` creates and fills them (``_add_overload``); ``overload_of`` is how
registration APIs read a packet given where an overload is meant.
"""

from __future__ import annotations

__all__ = ["OpOverloadPacket", "overload_of"]


class OpOverloadPacket:
    """What ``sk.ops.<name>`` names: the overloads of one op (PyTorch's ``OpOverloadPacket``).

    Its overloads are attributes (``sk.ops.add.Tensor``; ``packet.overloads()`` lists their
    names, ``default`` exists only when the op has a "default" overload); an unknown name
    raises AttributeError "The underlying op of 'sk.ops.add' has no overload name 'nosuch'"
    followed by the overloads. Calling the packet runs its default overload, else the
    first-defined one (``add`` runs ``add.Tensor``), with that overload's argument binding and
    errors: PyTorch picks the overload from the arguments' types, see docs/differences.md.
    ``OpOverload.overloadpacket`` is the packet; a packet never equals an overload
    (``func == sk.ops.mul`` is False, ``func.overloadpacket is sk.ops.mul`` is True).

    Registration APIs that take an op (``register_kernel``, ``sk.library.impl`` ...) take a
    packet as its called overload (``overload_of``); the flop-formula table registers a packet
    for all its overloads, as PyTorch's does. Attributes of an op (``decomposition``,
    ``tags``, kernels) belong to overloads: setting an attribute on a packet raises
    AttributeError naming the overloads.
    """

    def __init__(self, name: str, namespace: str, base: str):
        d = self.__dict__
        d["name"] = name                     # "add", "mylib::scale"
        d["_qualified_op_name"] = name       # (no "aten::" here: built-ins have no namespace)
        d["__name__"] = base
        d["_repr"] = f"{namespace or 'sk.ops'}.{base}"
        d["_overloads"] = {}                 # overload name -> OpOverload, in definition order
        d["_op"] = None                      # what a call runs (``overload_of``)

    def _add(self, op) -> None:
        d = self.__dict__
        self._overloads[op.overload] = op
        if op.overload not in d and op.overload not in _PACKET_NAMES:
            d[op.overload] = op              # a plain attribute read: ``sk.ops.add.Tensor``
        if self._op is None or op.overload == "default":
            d["_op"] = op

    def __call__(self, /, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __getattr__(self, attr):
        # Only reached for names that are not overloads (those are instance attributes).
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)       # protocol probes (copy, pickle...)
        raise AttributeError(
            f"The underlying op of '{self._repr}' has no overload name '{attr}' (its "
            f"overloads: {', '.join(self._overloads)})", name=attr, obj=self)

    def __setattr__(self, attr, value):
        raise AttributeError(
            f"'{self._repr}' is an op packet: set '{attr}' on one of its overloads "
            f"({', '.join(self._repr + '.' + o for o in self._overloads)})")

    def overloads(self) -> list:
        """The names of the overloads, in definition order (PyTorch's ``overloads()``)."""
        return list(self._overloads)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) - {"_repr", "_op"})

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._repr}')>"

    def __str__(self):
        return self._repr

    def __deepcopy__(self, memo):
        return self                          # ops are singletons (PyTorch's too)


# The names an overload may not take as a packet attribute (``hasattr`` on the class would
# format an AttributeError per overload at import).
_PACKET_NAMES = frozenset(dir(OpOverloadPacket)) | frozenset(dir(type))


def overload_of(op):
    """``op`` itself for an ``OpOverload``; for an ``OpOverloadPacket`` the overload a call of
    it runs (its default overload, else its first-defined one). What registration APIs apply
    to an op given as a packet. Anything else is returned unchanged."""
    return op._op if type(op) is OpOverloadPacket else op


class _Namespace:
    """``sk.ops`` and custom-op namespaces: attribute access gives an op's packet."""

    def __init__(self, name: str):
        self._name = name
        self._packets: dict = {}

    def __getattr__(self, attr):
        # Only reached for names that are not ops: registered ops are instance attributes
        # (``_publish``), so ``sk.ops.add`` costs a plain attribute lookup on the hot path.
        raise AttributeError(f"'{self._name}' has no op named '{attr}'")

    def _publish(self, name, packet):
        self._packets[name] = packet
        self.__dict__[name] = packet

    def __dir__(self):
        return list(self._packets)

    def __iter__(self):
        """Every overload of every op in this namespace (not sub-namespaces)."""
        for packet in list(self._packets.values()):
            if isinstance(packet, OpOverloadPacket):
                yield from packet._overloads.values()

    def __repr__(self):
        return f"<op namespace '{self._name}'>"
