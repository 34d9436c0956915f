"""Sharded arrays: NeuronArrays partitioned over the ranks of a device mesh (1-D, or N-D from ``mesh``), on
torch.distributed's DTensor.

``shard``, ``replicate`` and ``from_local`` make a ``ShardedNeuronArray``; its ``device`` is a ``Sharding`` (the
mesh and, per mesh dimension, the partitioned axis, None or a pending sum). Every namespace function accepts
sharded arrays (importing this package registers its handler for them, see ``_dispatch``); each contraction step
is placed by the planner (``_strategy``: per mesh dimension, the label to partition, by modelled compute and
communication time, ``_comm``) and runs on each rank's blocks (``_contract``). ``record()`` shows the decisions
and modelled moves, ``count()`` the collectives torch runs, with their bytes. Programs are SPMD: every rank runs
the same calls, and plain arrays must hold the same
values on every rank. See docs/distributed.md.
"""

from __future__ import annotations

from . import _requires  # noqa: F401  (first: a clear ImportError on a torch without DTensor's public API)

# isort: split

from typing import Any, cast

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor

from .._array import NeuronArray
from .._helpers import normalize_axis, tensor
from .._overrides import OVERRIDES
from ..contraction import execute as _execute
from ..contraction import runner as _runner
from ..contraction.explain import PLACEMENTS as _PLACEMENTS
from . import _contract, _dispatch
from ._array import ShardedNeuronArray, Sharding, place, placement, wrap_dtensor
from ._comm import Link
from ._mesh import check_mesh, chunk_sizes, default_mesh, local_slice, mesh, whole_group
from ._record import Counted, Record, count, record, use_network
from ._strategy import Decision

__all__ = [
    "ShardedNeuronArray",
    "Sharding",
    "shard",
    "replicate",
    "from_local",
    "default_mesh",
    "mesh",
    "local_slice",
    "einsum",
    "record",
    "count",
    "use_network",
    "Link",
    "Decision",
    "Record",
    "Counted",
]


def shard(x: NeuronArray, axis: Any, mesh: DeviceMesh | None = None) -> ShardedNeuronArray:
    """``x`` partitioned along ``axis`` over ``mesh`` (default: every rank): each rank keeps its block of the
    whole array it holds, without communication. On an N-D mesh ``axis`` has one entry per mesh dimension (an
    axis, or None: whole over that dimension), e.g. ``(0, 1)`` or ``(0, None)``. A sharded ``x`` is
    redistributed."""
    t = tensor(x, "shard")
    mesh = check_mesh(mesh, "shard")
    target = Sharding(mesh, _axis(axis, t.dim(), "shard"))
    if target.pending:
        raise ValueError(
            f"shard(): axis {axis!r} asks for a pending sum; from_local(summand, ..., pending=True) makes one"
        )
    if isinstance(x, ShardedNeuronArray):
        return x.to_device(target)
    return wrap_dtensor(place(t, target, "shard"))


def _axis(axis: Any, ndim: int, func: str) -> Any:
    if isinstance(axis, (tuple, list)):
        return tuple(
            normalize_axis(a, ndim, func) if isinstance(a, int) and not isinstance(a, bool) else a for a in axis
        )
    return None if axis is None else normalize_axis(axis, ndim, func)


def replicate(x: NeuronArray, mesh: DeviceMesh | None = None) -> ShardedNeuronArray:
    """``x``, the same whole array on every rank, as a replicated sharded array (no communication). A sharded
    ``x`` is gathered."""
    t = tensor(x, "replicate")
    mesh = check_mesh(mesh, "replicate")
    target = Sharding(mesh, (None,) * mesh.ndim) if mesh.ndim > 1 else Sharding(mesh)
    if isinstance(x, ShardedNeuronArray):
        return x.to_device(target)
    return wrap_dtensor(place(t, target, "replicate"))


def from_local(
    local: NeuronArray, axis: Any, mesh: DeviceMesh | None = None, *, pending: bool = False
) -> ShardedNeuronArray:
    """The array whose block along ``axis`` each rank holds as ``local`` (blocks in rank order, sized as
    ``local_slice`` gives them; one all-gather of the shapes checks that). ``axis=None``: every rank holds the
    whole array, or with ``pending=True`` a summand of it. On an N-D mesh ``axis`` has one entry per mesh
    dimension: an axis partitioned over it, None (whole over it) or ``"sum"`` (a summand over it)."""
    t = tensor(local, "from_local", "local")
    if isinstance(local, ShardedNeuronArray):
        raise TypeError(
            "from_local(): local must be a plain NeuronArray (this rank's block), got a sharded "
            "array; its own block is local.local()"
        )
    mesh = check_mesh(mesh, "from_local")
    if pending and axis is not None:
        raise ValueError(f"from_local(): a pending sum has no partitioned axis; got axis={axis} with pending=True")
    sharding = Sharding(mesh, _axis(axis, t.dim(), "from_local"), pending)
    if sharding.pending and t.dtype is torch.bool:
        raise TypeError("from_local(): a pending sum of booleans is undefined; pass integer summands")
    placements = placement(sharding)
    if not any(p.is_shard() for p in placements):
        return wrap_dtensor(DTensor.from_local(t, mesh, placements, shape=t.shape, stride=t.stride()))
    shape = _global_shape(tuple(t.shape), sharding, mesh)
    return wrap_dtensor(
        DTensor.from_local(t, mesh, placements, shape=torch.Size(shape), stride=_contract.global_stride(t, shape))
    )


def _global_shape(local: tuple[int, ...], sharding: Sharding, mesh: DeviceMesh) -> tuple[int, ...]:
    """The whole shape from every rank's block shape, which must be DTensor's layout of it."""
    coordinate = tuple(mesh.get_coordinate() or (0,) * mesh.ndim)
    everyone: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((), ())] * mesh.size()
    dist.all_gather_object(everyone, (coordinate, local), group=whole_group(mesh))
    shapes = dict(everyone)
    split = {a: d for d, a in enumerate(sharding.axes) if isinstance(a, int)}
    held = [s for _, s in everyone]
    if (
        len({len(s) for s in held}) != 1
        or len({tuple(n for i, n in enumerate(s) if i not in split) for s in held}) != 1
    ):
        raise ValueError(
            f"from_local(): the blocks' shapes must agree except along the partitioned axes "
            f"{sorted(split)}; the ranks hold {held}"
        )
    whole = list(local)
    for a, d in split.items():
        along = [shapes[tuple(c if e == d else 0 for e in range(mesh.ndim))][a] for c in range(mesh.size(d))]
        rows = {tuple(shapes[k][a] for k in sorted(shapes) if k[d] == c) for c in range(mesh.size(d))}
        if along != chunk_sizes(sum(along), len(along)) or any(len(set(r)) != 1 for r in rows):
            raise ValueError(
                f"from_local(): blocks of sizes {along} along axis {a} over mesh dimension {d}; an "
                f"axis of length {sum(along)} is split as {chunk_sizes(sum(along), len(along))} "
                "(torch.chunk's layout, which local_slice(n, mesh, mesh_dim) gives each rank)"
            )
        whole[a] = sum(along)
    return tuple(whole)


def einsum(subscripts: str, /, *operands: Any, sharding: Sharding, **kwargs: Any) -> ShardedNeuronArray:
    """``trn_backend.einsum`` with the result placed as ``sharding`` by the planner itself: its last step is
    placed so (the step's other choices, and every earlier step's, stay the planner's), instead of being placed
    by cost and redistributed afterwards. ``sharding``'s axes are the result's."""
    from .. import _namespace

    spec_output = subscripts.replace(" ", "").partition("->")[2]
    if "->" not in subscripts:
        raise ValueError('einsum(sharding=...): give the output explicitly ("ij,jk->ik")')
    forced = tuple(spec_output[a] if isinstance(a, int) else a for a in _checked_axes(sharding, len(spec_output)))
    with _contract.forcing(spec_output, forced):
        # sharded operands make a sharded result (its last step placed as forced; plain operands alone would make
        # a plain one, which this function is not for)
        return cast(ShardedNeuronArray, _namespace.einsum(subscripts, *operands, **kwargs))


def _checked_axes(sharding: Sharding, ndim: int) -> tuple[Any, ...]:
    if not isinstance(sharding, Sharding):
        raise TypeError(f"einsum(): sharding must be a Sharding, got {type(sharding).__name__}")
    for a in sharding.axes:
        if isinstance(a, int) and not 0 <= a < ndim:
            raise ValueError(f"einsum(): sharding axis {a} is out of range for a result of {ndim} dimensions")
    return sharding.axes


# Registrations, no rebinding: the namespace's public functions hand calls with sharded arguments (or device= a
# Sharding) to _dispatch.call, and the planner runs DTensor operands on their blocks.
OVERRIDES[ShardedNeuronArray] = _dispatch.call
OVERRIDES[Sharding] = _dispatch.call
_execute.EXECUTORS[DTensor] = _contract.execute
# (the registries are keyed by tensor type: these functions get DTensors only, which the checker cannot express)
_runner.CASTS[DTensor] = _contract.cast  # type: ignore[assignment]
_runner.READS[DTensor] = DTensor.full_tensor  # type: ignore[assignment]
_PLACEMENTS[DTensor] = _contract.placements_of_program
