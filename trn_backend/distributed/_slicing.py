"""Sliced contractions (``contract(..., memory_limit=...)``) over the ranks of a process group.

The slicing itself, the odometer over the slices and the slice program are ``contraction.slicing``'s; this module
only shares the slices out; the package registers it in ``contraction.slicing.OVER_RANKS``, importing it on the first
sliced contraction. The tree is decided once, on the mesh's first rank, and broadcast, so every rank sums the same
slices (cotengra's search is randomized). Operands that are whole on every rank share the slices out (each rank a
contiguous block of them) and sum them as a pending sum; sharded operands keep their partition (each rank contracts
every slice of its own blocks, see ``_contract``). Without sharded operands or a process group, the slices run in
``contraction.slicing``.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Replicate

from .._precision import Request
from ..contraction import program as programs
from ..contraction import runner, slicing
from ..contraction.compiler import compile
from ..contraction.parse import Spec
from ..contraction.plan import result_dtype
from ..contraction.program import shape_of
from . import _contract
from ._array import as_dtensor, is_partitioned, is_pending
from ._mesh import default_mesh, whole_group

__all__ = ["contract"]


def contract(
    request: Request | None,
    spec: Spec,
    ts: list[torch.Tensor],
    limit: object,
    optimize: object,
    progress: bool | None,
    out: torch.dtype | None,
) -> torch.Tensor | None:
    """The sliced contraction of ``ts`` over the ranks (see the module docstring), or None where no operand is
    sharded and no process group runs. Called by ``contraction.slicing.contract`` after its checks."""
    if not any(isinstance(t, DTensor) for t in ts) and not dist.is_initialized():
        return None
    shape = shape_of(spec.output, list(zip(spec.inputs, (tuple(t.shape) for t in ts), strict=True)))
    mesh = next((t.device_mesh for t in ts if isinstance(t, DTensor)), None) or default_mesh()
    dtype = result_dtype(tuple(t.dtype for t in ts), "contract")
    if any(isinstance(t, DTensor) and (is_partitioned(t) or is_pending(t)) for t in ts):
        dts, chosen = _contract.localize(ts, spec.inputs, spec.output, dtype, spec.subscripts, mesh)
        placements, spread = chosen.output, False
    else:  # whole operands on every rank share the slices out: the result is a pending sum of their parts
        dts, placements, spread = [as_dtensor(t, mesh) for t in ts], _contract.summands(mesh), True
    blocks = [t.to_local() for t in dts]
    shapes = tuple(tuple(b.shape) for b in blocks)
    path, sliced = _decided(slicing.slicing(spec, shapes, limit, optimize), mesh)
    if spread and not sliced:  # nothing to share out (the limit needs no slicing): every rank computes it all
        placements, spread = tuple(Replicate() for _ in placements), False
    if dist.is_initialized() and dist.get_rank() != 0:
        progress = False  # one bar, not one per rank
    pending = any(p.is_partial() for p in placements)
    c = compile(
        programs.sliced(spec, shapes, path, sliced),
        request,
        tuple(b.dtype for b in blocks),
        blocks[0].device,
        result=dtype,
        out=out,
        ranks=mesh.size() if pending else 1,
    )
    coordinate = mesh.get_coordinate() or [0] * mesh.ndim
    share = (mesh.size(), int(np.ravel_multi_index(tuple(coordinate), tuple(mesh.shape)))) if spread else (1, 0)
    held = runner.partial(c, blocks, progress=progress, share=share)
    return runner.finish(c, _contract.finish(held, mesh, placements, shape), dts)


def _decided(
    choice: tuple[slicing.Path, tuple[str, ...]], mesh: DeviceMesh | None
) -> tuple[slicing.Path, tuple[str, ...]]:
    """The first rank's choice, on every rank (one broadcast)."""
    if mesh is None or mesh.size() == 1:
        return choice
    box = [choice]
    group = whole_group(mesh)
    dist.broadcast_object_list(box, src=int(mesh.mesh.flatten()[0]), group=group)
    return box[0]
