"""DTensor-style sharding: a device mesh, placements and a wrapper subclass holding one rank's
shard, after ``torch.distributed.tensor`` (``DeviceMesh``, ``Shard`` / ``Replicate`` / ``Partial``,
``DTensor``, ``distribute_tensor``), without processes or communication.

A ``DTensor`` presents the *global* tensor (its ``shape``, dtype and device) and holds the local
tensor of one rank of the mesh (rank 0 unless another is given). The local shape of every rank
is known without building it: :func:`local_shape_and_offset` is torch's
``compute_local_shape_and_global_offset``. Placements apply left to right over the mesh
dimensions; ``Shard(d)`` splits the current local size of dimension ``d`` as ``torch.chunk``
does: chunks of ``ceil(n / k)`` elements, so with an uneven split the last ranks get fewer
elements, possibly none.

    >>> import subclass_kit as sk
    >>> from subclass_kit.modes.sharding import DeviceMesh, Shard, distribute_tensor
    >>> mesh = DeviceMesh("meta", [0, 1, 2, 3])
    >>> w = distribute_tensor(sk.empty(10, 4, device="meta"), mesh, [Shard(0)])
    >>> tuple(w.shape), tuple(w.to_local().shape)
    ((10, 4), (3, 4))
    >>> [tuple(s) for s in w.local_shapes().values()]
    [(3, 4), (3, 4), (3, 4), (1, 4)]

Ops on a DTensor run on the local tensor when their result is placed as their inputs are:
elementwise ops between DTensors of one spec (or with Python numbers / 0-dim tensors),
``*_like`` factories, ``clone``, ``detach``, ``_to_copy`` and their in-place forms. Any other
op raises NotImplementedError naming it (torch would redistribute; there is no communication
here).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import subclass_kit as sk

__all__ = ["DeviceMesh", "Placement", "Shard", "Replicate", "Partial", "DTensor",
           "distribute_tensor", "local_shape_and_offset"]


# -- the mesh ---------------------------------------------------------------------------------
class DeviceMesh:
    """An n-dimensional array of global ranks (torch's ``DeviceMesh``, no process group).

    ``mesh``: an int list, nested list or array of distinct non-negative ranks;
    ``mesh_dim_names``: one distinct name per mesh dimension (optional).

    Raises ValueError for an empty or ragged mesh, repeated or negative ranks, or names that do
    not match the dimensions; TypeError for non-integer ranks.
    """

    def __init__(self, device_type: str, mesh, *, mesh_dim_names=None):
        try:
            arr = np.array(mesh)
        except ValueError:
            raise ValueError("DeviceMesh: mesh must be a rectangular (nested) list of ranks") \
                from None
        if arr.dtype == object:
            raise ValueError("DeviceMesh: mesh must be a rectangular (nested) list of ranks")
        if arr.size == 0 or arr.ndim == 0:
            raise ValueError(f"DeviceMesh: mesh must hold at least one rank in at least one "
                             f"dimension, got shape {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise TypeError(f"DeviceMesh: ranks must be integers, got dtype {arr.dtype}")
        if (arr < 0).any() or len(np.unique(arr)) != arr.size:
            raise ValueError(f"DeviceMesh: ranks must be distinct and non-negative, got "
                             f"{arr.tolist()}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != arr.ndim or len(set(mesh_dim_names)) != arr.ndim:
                raise ValueError(f"DeviceMesh: mesh_dim_names {mesh_dim_names} must name each "
                                 f"of the mesh's {arr.ndim} dimensions once")
        arr = arr.astype(np.int64)
        arr.flags.writeable = False
        self.device_type = str(device_type)
        self.mesh = arr
        self.mesh_dim_names = mesh_dim_names
        self._coordinates = {int(arr[i]): tuple(int(c) for c in i)
                             for i in np.ndindex(arr.shape)}

    @property
    def shape(self) -> tuple:
        """Ranks per mesh dimension."""
        return tuple(int(s) for s in self.mesh.shape)

    @property
    def ndim(self) -> int:
        return self.mesh.ndim

    def size(self, mesh_dim: int | str | None = None) -> int:
        """Number of ranks, in all (``None``) or along one mesh dimension (index or name)."""
        if mesh_dim is None:
            return int(self.mesh.size)
        return self.shape[self._dim(mesh_dim)]

    def _dim(self, mesh_dim) -> int:
        if isinstance(mesh_dim, str):
            if not self.mesh_dim_names or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"DeviceMesh: no mesh dimension named {mesh_dim!r} (names: "
                               f"{self.mesh_dim_names})")
            return self.mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"DeviceMesh: mesh_dim {mesh_dim} out of range for a "
                             f"{self.ndim}-d mesh")
        return mesh_dim % self.ndim

    def ranks(self) -> list:
        """The global ranks in row-major mesh order."""
        return [int(r) for r in self.mesh.ravel()]

    def get_coordinate(self, rank: int) -> tuple | None:
        """The coordinate of global ``rank`` in the mesh, or None when it is not in it."""
        return self._coordinates.get(rank)

    def __eq__(self, other):
        return (isinstance(other, DeviceMesh) and self.device_type == other.device_type
                and self.mesh.shape == other.mesh.shape and (self.mesh == other.mesh).all()
                and self.mesh_dim_names == other.mesh_dim_names)

    def __hash__(self):
        return hash((self.device_type, self.mesh.tobytes(), self.mesh.shape,
                     self.mesh_dim_names))

    def __repr__(self):
        names = "" if self.mesh_dim_names is None else f", mesh_dim_names={self.mesh_dim_names}"
        return f"DeviceMesh({self.device_type!r}, {self.mesh.tolist()}{names})"


# -- placements ---------------------------------------------------------------------------------
class Placement:
    """How a tensor lies along one mesh dimension."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicate(self) -> bool:
        return False

    def is_partial(self) -> bool:
        return False


@dataclass(frozen=True)
class Shard(Placement):
    """Split tensor dimension ``dim`` across the mesh dimension, as ``torch.chunk`` does."""

    dim: int

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def __repr__(self):
        return f"Shard(dim={self.dim})"


@dataclass(frozen=True)
class Replicate(Placement):
    """Every rank of the mesh dimension holds the whole (current local) tensor."""

    def is_replicate(self) -> bool:
        return True

    def __repr__(self):
        return "Replicate()"


@dataclass(frozen=True)
class Partial(Placement):
    """Every rank holds a full-shape partial value; the global value is their ``reduce_op``
    (pending reduction, e.g. after a row-parallel matmul)."""

    reduce_op: str = "sum"

    def is_partial(self) -> bool:
        return True

    def __repr__(self):
        return f"Partial({self.reduce_op})"


def _normalize(placements, mesh_ndim: int, ndim: int) -> tuple:
    """Placements as a tuple with non-negative shard dims; checks their number and dims."""
    placements = tuple(placements)
    if len(placements) != mesh_ndim:
        raise ValueError(f"placements {placements} must have one entry per mesh dimension "
                         f"({mesh_ndim})")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Shard, Replicate or Partial, got "
                            f"{type(p).__name__}")
        if isinstance(p, Shard):
            if not -ndim <= p.dim < max(ndim, 1) or ndim == 0:
                raise IndexError(f"Shard(dim={p.dim}) is out of range for a {ndim}-d tensor")
            p = Shard(p.dim % ndim)
        out.append(p)
    return tuple(out)


def local_shape_and_offset(global_shape, mesh_shape, coordinate, placements) -> tuple:
    """``(local_shape, global_offset)`` of the shard at mesh ``coordinate``: torch's
    ``compute_local_shape_and_global_offset`` for ``Shard`` / ``Replicate`` / ``Partial``.

    Placements apply left to right; ``Shard(d)`` along a mesh dimension of size ``k`` gives
    coordinate ``c`` the elements ``[c * ceil(n / k), min(n, (c + 1) * ceil(n / k)))`` of the
    current local size ``n``. The offset of a dimension is where the shard starts in the global
    tensor; for an empty shard it is the dimension's global size (as torch reports it).
    Shard dims must be non-negative (see :func:`_normalize`).
    """
    local = list(global_shape)
    start = [0] * len(local)
    for size, c, p in zip(mesh_shape, coordinate, placements):
        if not isinstance(p, Shard):
            continue
        n = local[p.dim]
        chunk = -(-n // size)       # ceil, as torch.chunk
        begin = min(n, chunk * c)
        local[p.dim] = max(0, min(n, begin + chunk) - begin)
        start[p.dim] += begin
    offset = tuple(start[d] if local[d] or d not in _shard_dims(placements)
                   else global_shape[d] for d in range(len(local)))
    return sk.Size(local), offset


def _shard_dims(placements) -> set:
    return {p.dim for p in placements if isinstance(p, Shard)}


# -- the tensor ----------------------------------------------------------------------------------
class DTensor(sk.Tensor):
    """The global tensor of shape ``shape`` lying on ``device_mesh`` as ``placements`` say,
    holding the local tensor of global rank ``rank`` (see the module docstring).

    Build one with :func:`distribute_tensor` (from a global tensor) or :meth:`from_local`.
    """

    __tensor_function__ = sk.disabled_tensor_function

    @staticmethod
    def _wrap(local, mesh, placements, shape, rank) -> DTensor:
        w = sk.make_wrapper_subclass(DTensor, tuple(shape), dtype=local.dtype,
                                     device=local.device, requires_grad=False)
        w._local_tensor = local
        w._device_mesh = mesh
        w._placements = placements
        w._rank = rank
        return w

    @staticmethod
    def from_local(local_tensor, device_mesh: DeviceMesh, placements, *, rank: int = 0,
                   shape=None) -> DTensor:
        """A DTensor whose rank ``rank`` holds ``local_tensor`` (torch's
        ``DTensor.from_local``). Without ``shape`` the global shape assumes an even split, as
        torch does: a dimension sharded over mesh dimensions of sizes k1, k2... is
        ``local * k1 * k2...``. Raises ValueError when ``rank`` is not in the mesh or the
        local shape is not ``rank``'s shard of ``shape``."""
        coordinate = _coordinate(device_mesh, rank)
        placements = _normalize(placements, device_mesh.ndim, local_tensor.ndim)
        if shape is None:
            shape = list(local_tensor.shape)
            for size, p in zip(device_mesh.shape, placements):
                if isinstance(p, Shard):
                    shape[p.dim] *= size
        shape = sk.Size(shape)
        expected, _ = local_shape_and_offset(shape, device_mesh.shape, coordinate, placements)
        if tuple(expected) != tuple(local_tensor.shape):
            raise ValueError(f"DTensor.from_local: rank {rank}'s shard of a tensor of shape "
                             f"{tuple(shape)} with placements {placements} has shape "
                             f"{tuple(expected)}, got a local tensor of shape "
                             f"{tuple(local_tensor.shape)}")
        return DTensor._wrap(local_tensor, device_mesh, placements, shape, rank)

    def to_local(self):
        """The local tensor of this rank (the object held, not a copy)."""
        return self._local_tensor

    @property
    def placements(self) -> tuple:
        return self._placements

    @property
    def device_mesh(self) -> DeviceMesh:
        return self._device_mesh

    @property
    def rank(self) -> int:
        """The global rank whose shard this object holds."""
        return self._rank

    def local_shape_and_offset(self, rank: int | None = None) -> tuple:
        """``(local shape, global offset)`` of ``rank`` (default: the rank held)."""
        rank = self._rank if rank is None else rank
        return local_shape_and_offset(self.shape, self._device_mesh.shape,
                                      _coordinate(self._device_mesh, rank), self._placements)

    def local_shapes(self) -> dict:
        """``{global rank: local shape}`` for every rank of the mesh, in mesh order."""
        return {r: self.local_shape_and_offset(r)[0] for r in self._device_mesh.ranks()}

    def __repr__(self):
        return (f"DTensor(local_tensor={self._local_tensor!r}, device_mesh="
                f"{self._device_mesh!r}, placements={self._placements}, rank={self._rank})")

    def __tensor_flatten__(self):
        return ["_local_tensor"], (self._device_mesh, self._placements, self._rank)

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        mesh, placements, rank = ctx
        return DTensor._wrap(inner["_local_tensor"], mesh, placements, outer_size, rank)

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in _LOCAL_OPS:
            raise NotImplementedError(
                f"DTensor: {func} is not supported (sharding propagation is implemented for "
                f"elementwise ops, *_like factories, clone, detach and _to_copy)")
        spec = None
        flat, _ = sk.pytree.tree_flatten((args, kwargs))
        for a in flat:
            if isinstance(a, DTensor):
                key = (a._device_mesh, a._placements, tuple(a.shape), a._rank)
                if spec is None:
                    spec = key
                elif key != spec:
                    raise NotImplementedError(
                        f"DTensor: {func} on DTensors of different meshes, placements, shapes "
                        f"or ranks needs a redistribution, which is not implemented")
            elif isinstance(a, sk.Tensor) and a.ndim != 0:
                raise NotImplementedError(f"DTensor: {func} got mixed sk.Tensor and DTensor "
                                          f"arguments; wrap the tensor with distribute_tensor")
        mesh, placements, shape, rank = spec
        if any(p.is_partial() for p in placements) and (
                func not in _LINEAR_OPS or (func.__name__.split(".")[0] in _SUMS
                                            and not all(isinstance(a, DTensor)
                                                        for a in args[:2]))):
            # A pending sum stays one through ops linear in every DTensor argument; adding a
            # plain number on every rank would add it world-size times.
            raise NotImplementedError(f"DTensor: {func} on a Partial placement would need the "
                                      f"pending reduction first")
        out = func(*sk.pytree.tree_map_only(DTensor, DTensor.to_local, args),
                   **sk.pytree.tree_map_only(DTensor, DTensor.to_local, kwargs))
        out = sk.pytree.tree_map_only(
            sk.Tensor, lambda t: DTensor._wrap(t, mesh, placements, shape, rank), out)
        return sk.return_and_correct_aliasing(func, args, kwargs, out)


def _coordinate(mesh: DeviceMesh, rank: int) -> tuple:
    coordinate = mesh.get_coordinate(rank)
    if coordinate is None:
        raise ValueError(f"rank {rank} is not in {mesh!r}")
    return coordinate


def distribute_tensor(tensor, device_mesh: DeviceMesh, placements, *, rank: int = 0) -> DTensor:
    """Rank ``rank``'s shard of the global ``tensor`` as a DTensor (torch's
    ``distribute_tensor``, without the scatter: the shard is cut out locally). The local tensor
    is a contiguous copy of the slice (on meta, its shape only).

    Raises ValueError for ``Partial`` placements (as torch) or a rank not in the mesh,
    IndexError for a shard dim out of range.
    """
    placements = _normalize(placements, device_mesh.ndim, tensor.ndim)
    if any(p.is_partial() for p in placements):
        raise ValueError("distribute_tensor: Partial placements are not supported; build a "
                         "partial DTensor with DTensor.from_local")
    local_shape, offset = local_shape_and_offset(tensor.shape, device_mesh.shape,
                                                 _coordinate(device_mesh, rank), placements)
    local = tensor
    for d in _shard_dims(placements):
        start = min(offset[d], tensor.shape[d])
        local = local.narrow(d, start, local_shape[d])
    # A copy even when the slice is contiguous: each rank owns its shard.
    return DTensor._wrap(local.clone(memory_format=sk.contiguous_format), device_mesh,
                         placements, tensor.shape, rank)


def _ops(*names) -> set:
    found = set()
    for name in names:
        for base in (name, name + "_"):
            packet = getattr(sk.ops, base, None)
            if packet is not None:
                found.update(getattr(packet, o) for o in packet.overloads() if o != "out")
    return found


_SUMS = {"add", "add_", "sub", "sub_"}
# Ops linear in every DTensor argument: a Partial (pending sum) stays a Partial through them.
_LINEAR_OPS = _ops("add", "sub", "neg", "clone", "detach", "alias", "_to_copy", "copy",
                   "zero", "empty_like", "zeros_like")
# Ops whose result lies exactly as their (same-spec) DTensor inputs do: elementwise ops and
# the factories that copy their input's geometry.
_LOCAL_OPS = _LINEAR_OPS | _ops(
    "mul", "div", "pow", "sqrt", "rsqrt", "abs", "exp", "log", "sign", "maximum", "minimum",
    "clamp", "lerp", "addcmul", "addcdiv", "fill", "ones_like", "full_like", "rand_like",
    "randn_like", "silu", "sigmoid", "tanh", "relu", "gelu", "eq", "ne", "lt", "le", "gt", "ge")
