"""Sharded arrays: NeuronArrays partitioned over the ranks of a 1-D device mesh, on torch.distributed's DTensor.

``shard``, ``replicate`` and ``from_local`` make a ``ShardedNeuronArray``; its ``device`` is a ``Sharding``
(mesh, partitioned axis, pending sum). Every namespace function accepts sharded arrays (importing this package
registers its handler for them, see ``_dispatch``); contractions run through the planner on each rank's blocks
(``_contract``), so an output-parallel contraction communicates nothing and a contraction over a partitioned
index leaves a pending sum. Programs are SPMD: every rank runs the same calls, and plain arrays must hold the same
values on every rank. See docs/distributed.md.
"""

from __future__ import annotations

from . import _requires  # noqa: F401  (first: a clear ImportError on a torch without DTensor's public API)

# isort: split

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

from .._array import NeuronArray, wrap
from .._helpers import normalize_axis, tensor
from .._overrides import OVERRIDES
from ..contraction import execute as _execute
from ..contraction import runner as _runner
from . import _contract, _dispatch
from ._array import ShardedNeuronArray, Sharding, place
from ._mesh import check_mesh, chunk_sizes, default_mesh, local_slice

__all__ = ["ShardedNeuronArray", "Sharding", "shard", "replicate", "from_local", "default_mesh", "local_slice"]


def shard(x: NeuronArray, axis: int, mesh: DeviceMesh | None = None) -> ShardedNeuronArray:
    """``x`` partitioned along ``axis`` over ``mesh`` (default: every rank): each rank keeps its block of the
    whole array it holds, without communication. A sharded ``x`` is redistributed."""
    t = tensor(x, "shard")
    mesh = check_mesh(mesh, "shard")
    target = Sharding(mesh, normalize_axis(axis, t.dim(), "shard"))
    if isinstance(x, ShardedNeuronArray):
        return x.to_device(target)
    return wrap(place(t, target, "shard"))


def replicate(x: NeuronArray, mesh: DeviceMesh | None = None) -> ShardedNeuronArray:
    """``x``, the same whole array on every rank, as a replicated sharded array (no communication). A sharded
    ``x`` is gathered."""
    t = tensor(x, "replicate")
    target = Sharding(check_mesh(mesh, "replicate"))
    if isinstance(x, ShardedNeuronArray):
        return x.to_device(target)
    return wrap(place(t, target, "replicate"))


def from_local(local: NeuronArray, axis: int | None, mesh: DeviceMesh | None = None, *,
               pending: bool = False) -> ShardedNeuronArray:
    """The array whose block along ``axis`` each rank holds as ``local`` (blocks in rank order, sized as
    ``local_slice`` gives them; one all-gather of the shapes checks that). ``axis=None``: every rank holds the
    whole array, or with ``pending=True`` a summand of it."""
    t = tensor(local, "from_local", "local")
    if isinstance(local, ShardedNeuronArray):
        raise TypeError("from_local(): local must be a plain NeuronArray (this rank's block), got a sharded "
                        "array; its own block is local.local()")
    mesh = check_mesh(mesh, "from_local")
    if pending and t.dtype is torch.bool:
        raise TypeError("from_local(): a pending sum of booleans is undefined; pass integer summands")
    if axis is None:
        where = Partial("sum") if pending else Replicate()
        return wrap(DTensor.from_local(t, mesh, (where,), shape=t.shape, stride=t.stride()))
    if pending:
        raise ValueError(f"from_local(): a pending sum has no partitioned axis; got axis={axis} with pending=True")
    axis = normalize_axis(axis, t.dim(), "from_local")
    shape = _global_shape(tuple(t.shape), axis, mesh)
    return wrap(DTensor.from_local(t, mesh, (Shard(axis),), shape=torch.Size(shape),
                                   stride=_contract.global_stride(t, shape)))


def _global_shape(local: tuple[int, ...], axis: int, mesh: DeviceMesh) -> tuple[int, ...]:
    """The whole shape from every rank's block shape, which must be DTensor's layout of it."""
    shapes: list[tuple[int, ...]] = [()] * mesh.size()
    dist.all_gather_object(shapes, local, group=mesh.get_group())
    others = {s[:axis] + s[axis + 1:] for s in shapes}
    if len(others) != 1 or len({len(s) for s in shapes}) != 1:
        raise ValueError(f"from_local(): the blocks' shapes must agree except along axis {axis}; the ranks hold "
                         f"{shapes}")
    sizes = [s[axis] for s in shapes]
    if sizes != chunk_sizes(sum(sizes), len(sizes)):
        raise ValueError(f"from_local(): blocks of sizes {sizes} along axis {axis}; an axis of length "
                         f"{sum(sizes)} is split as {chunk_sizes(sum(sizes), len(sizes))} (torch.chunk's layout, "
                         "which local_slice(n) gives each rank)")
    return local[:axis] + (sum(sizes),) + local[axis + 1:]


# Registrations, no rebinding: the namespace's public functions hand calls with sharded arguments (or device= a
# Sharding) to _dispatch.call, and the planner runs DTensor operands on their blocks.
OVERRIDES[ShardedNeuronArray] = _dispatch.call
OVERRIDES[Sharding] = _dispatch.call
_execute.EXECUTORS[DTensor] = _contract.execute
_runner.CASTS[DTensor] = _contract.cast
_runner.READS[DTensor] = DTensor.full_tensor
