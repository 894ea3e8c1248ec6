"""DTensor-style sharding (modes/sharding.py) against torch.distributed.tensor.

Two oracles:

- torch's ``_compute_local_shape_and_global_offset`` (the body of the public
  ``compute_local_shape_and_global_offset``, taking the mesh shape and coordinate as plain data),
  in this process, for hypothesis-drawn global shapes, mesh shapes and placements, every rank;
- a real ``DeviceMesh`` on torch's fake process-group backend, in a subprocess (the process
  group is global state): ``distribute_tensor(...).to_local().shape`` and the public
  ``compute_local_shape_and_global_offset`` on every rank, for a fixed list of cases.
"""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import subclass_kit as sk
from subclass_kit.modes.sharding import (DeviceMesh, DTensor, Partial, Replicate, Shard,
                                         distribute_tensor, local_shape_and_offset)

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis (the test extra) is missing")
st = hypothesis.strategies


def _torch_placements(placements):
    from torch.distributed.tensor import Partial as TP, Replicate as TR, Shard as TS
    return [TS(p.dim) if isinstance(p, Shard) else TR() if isinstance(p, Replicate) else TP()
            for p in placements]


@st.composite
def cases(draw):
    shape = draw(st.lists(st.integers(0, 13), min_size=1, max_size=3))
    mesh_shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    placement = st.one_of(st.builds(Shard, st.integers(0, len(shape) - 1)),
                          st.just(Replicate()), st.just(Partial()))
    placements = draw(st.lists(placement, min_size=len(mesh_shape), max_size=len(mesh_shape)))
    return shape, mesh_shape, placements


@hypothesis.given(cases())
def test_local_shapes_and_offsets_match_torch_every_rank(torch, case):
    from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset
    shape, mesh_shape, placements = case
    theirs_placements = _torch_placements(placements)
    for coordinate in itertools.product(*(range(k) for k in mesh_shape)):
        ours = local_shape_and_offset(shape, mesh_shape, coordinate, placements)
        theirs = _compute_local_shape_and_global_offset(shape, mesh_shape, list(coordinate),
                                                        theirs_placements)
        assert (tuple(ours[0]), ours[1]) == (tuple(theirs[0]), tuple(theirs[1])), coordinate


def _fixed_cases(n=24):
    rng = random.Random(16)
    out = []
    for _ in range(n):
        shape = [rng.randint(0, 11) for _ in range(rng.randint(1, 3))]
        mesh_shape = rng.choice([[2], [3], [4], [2, 2], [2, 3], [3, 2], [2, 4]])
        placements = [rng.choice(["R", "S"]) for _ in mesh_shape]
        placements = [("S", rng.randrange(len(shape))) if p == "S" else ("R",)
                      for p in placements]
        out.append((shape, mesh_shape, placements))
    out.append(([7, 5], [2, 4], [("S", 0), ("S", 1)]))
    out.append(([5, 3], [2, 4], [("S", 0), ("S", 0)]))
    return out


_FAKE_PG = textwrap.dedent("""
    import json, sys
    import torch, torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
    results = []
    for shape, mesh_shape, placements in json.loads(sys.stdin.read()):
        world = 1
        for k in mesh_shape:
            world *= k
        pl = [Shard(p[1]) if p[0] == "S" else Replicate() for p in placements]
        per_rank = []
        for rank in range(world):
            dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
            mesh = init_device_mesh("cpu", tuple(mesh_shape))
            d = distribute_tensor(torch.empty(shape, device="meta"), mesh, pl)
            local, offset = compute_local_shape_and_global_offset(shape, mesh, pl)
            per_rank.append([list(d.to_local().shape), list(local), list(offset),
                             list(d.shape)])
            dist.destroy_process_group()
        results.append(per_rank)
    print(json.dumps(results))
""")


def test_distribute_tensor_on_a_fake_process_group_matches_ours(torch):
    cases_ = _fixed_cases()
    proc = subprocess.run([sys.executable, "-c", _FAKE_PG], input=json.dumps(cases_),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for (shape, mesh_shape, placements), per_rank in zip(cases_, results):
        world = int(np.prod(mesh_shape))
        mesh = DeviceMesh("meta", np.arange(world).reshape(mesh_shape))
        pl = [Shard(p[1]) if p[0] == "S" else Replicate() for p in placements]
        for rank, (dt_local, local, offset, global_shape) in enumerate(per_rank):
            d = distribute_tensor(sk.empty(shape, device="meta"), mesh, pl, rank=rank)
            assert list(d.to_local().shape) == dt_local == local
            assert list(d.local_shape_and_offset()[1]) == offset
            assert list(d.shape) == global_shape
            assert d.local_shapes()[rank] == d.to_local().shape


# -- behaviour of our classes (values on cpu, errors) -----------------------------------------
def test_distribute_tensor_cpu_values_are_the_global_slices():
    x = sk.arange(7 * 5 * 1.0).view(7, 5)
    mesh = DeviceMesh("cpu", [[0, 1, 2, 3], [4, 5, 6, 7]], mesh_dim_names=("dp", "tp"))
    for rank in mesh.ranks():
        d = distribute_tensor(x, mesh, [Shard(0), Shard(1)], rank=rank)
        (rows, cols), (r0, c0) = d.local_shape_and_offset()
        np.testing.assert_array_equal(d.to_local().numpy(),
                                      x.numpy()[r0:r0 + rows, c0:c0 + cols])
        assert d.to_local().is_contiguous()
        assert d.to_local().untyped_storage() is not x.untyped_storage()


@hypothesis.given(cases())
def test_shards_tile_the_global_tensor(case):
    """Every element lies in exactly one rank's shard per replica: the ranks' local tensors,
    put back at their offsets, rebuild the global tensor (count = ranks / shards)."""
    shape, mesh_shape, placements = case
    placements = [Replicate() if isinstance(p, Partial) else p for p in placements]
    x = sk.arange(int(np.prod(shape)) * 1.0).view(shape)
    mesh = DeviceMesh("cpu", np.arange(int(np.prod(mesh_shape))).reshape(mesh_shape))
    hits = np.zeros(shape, dtype=np.int64)
    for rank in mesh.ranks():
        d = distribute_tensor(x, mesh, placements, rank=rank)
        local, offset = d.local_shape_and_offset()
        where = tuple(slice(o, o + n) for o, n in zip(offset, local))
        np.testing.assert_array_equal(d.to_local().numpy(), x.numpy()[where])
        np.testing.assert_array_equal((d * 2 + 1).to_local().numpy(), x.numpy()[where] * 2 + 1)
        hits[where] += 1
    shards = int(np.prod([k for k, p in zip(mesh_shape, placements) if isinstance(p, Shard)]))
    assert (hits == mesh.size() // shards).all()


def test_mesh_attributes():
    mesh = DeviceMesh("meta", [[0, 1, 2], [3, 4, 5]], mesh_dim_names=("dp", "tp"))
    assert mesh.shape == (2, 3) and mesh.ndim == 2 and mesh.size() == 6
    assert mesh.size(1) == mesh.size("tp") == 3
    assert mesh.get_coordinate(4) == (1, 1) and mesh.get_coordinate(9) is None
    with pytest.raises(ValueError, match="distinct"):
        DeviceMesh("meta", [0, 0])
    with pytest.raises(ValueError, match="mesh_dim_names"):
        DeviceMesh("meta", [0, 1], mesh_dim_names=("a", "b"))
    with pytest.raises(KeyError, match="'pp'"):
        mesh.size("pp")


def test_from_local_infers_the_even_global_shape_and_checks_the_shard():
    mesh = DeviceMesh("meta", [0, 1, 2, 3])
    d = DTensor.from_local(sk.empty(3, 4, device="meta"), mesh, [Shard(0)])
    assert tuple(d.shape) == (12, 4) and d.placements == (Shard(0),)
    d = DTensor.from_local(sk.empty(1, 4, device="meta"), mesh, [Shard(0)], rank=3,
                           shape=(10, 4))
    assert tuple(d.shape) == (10, 4) and d.rank == 3
    with pytest.raises(ValueError, match=r"has shape \(3, 4\)"):
        DTensor.from_local(sk.empty(2, 4, device="meta"), mesh, [Shard(0)], shape=(10, 4))
    with pytest.raises(ValueError, match="rank 7 is not in"):
        DTensor.from_local(sk.empty(3, 4, device="meta"), mesh, [Shard(0)], rank=7)
    with pytest.raises(IndexError, match="Shard"):
        DTensor.from_local(sk.empty(3, 4, device="meta"), mesh, [Shard(2)])


def test_elementwise_ops_and_factories_keep_the_spec():
    mesh = DeviceMesh("cpu", [0, 1])
    x = sk.arange(10.0).view(5, 2)
    d = distribute_tensor(x, mesh, [Shard(0)], rank=1)
    y = d * 2 + d
    assert isinstance(y, DTensor) and y.placements == d.placements and y.shape == d.shape
    np.testing.assert_array_equal(y.to_local().numpy(), x.numpy()[3:] * 3)
    z = sk.zeros_like(d, dtype=sk.float64)
    assert isinstance(z, DTensor) and z.to_local().dtype == sk.float64 == z.dtype
    assert tuple(z.to_local().shape) == (2, 2)
    out = d.mul_(0.5)
    assert out is d
    np.testing.assert_array_equal(d.to_local().numpy(), x.numpy()[3:] * 0.5)
    det = d.detach()
    assert isinstance(det, DTensor) and det.untyped_storage() is d.untyped_storage()


def test_unsupported_ops_name_the_op():
    mesh = DeviceMesh("meta", [0, 1])
    d = distribute_tensor(sk.empty(4, 4, device="meta"), mesh, [Shard(0)])
    with pytest.raises(NotImplementedError, match="mm"):
        d @ d
    with pytest.raises(NotImplementedError, match="sum"):
        d.sum()
    other = distribute_tensor(sk.empty(4, 4, device="meta"), mesh, [Replicate()])
    with pytest.raises(NotImplementedError, match="redistribution"):
        d + other
    p = DTensor.from_local(sk.empty(4, 4, device="meta"), mesh, [Partial()])
    assert isinstance(p + p, DTensor)
    with pytest.raises(NotImplementedError, match="Partial"):
        p * p
    with pytest.raises(NotImplementedError, match="Partial"):
        p + 1
    with pytest.raises(ValueError, match="Partial"):
        distribute_tensor(sk.empty(4, device="meta"), mesh, [Partial()])
