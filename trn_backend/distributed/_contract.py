"""Contractions of sharded operands: each step placed by the planner (``_strategy``), then run by every rank
on its own blocks.

For each step ``_strategy.decide`` picks, per mesh dimension, the label partitioned over it (or none, or a pending
operand kept pending) by modelled time, and the operands are redistributed to that placement (``_array
.redistribute``, one mesh dimension at a time, the collectives the model predicts). Then each rank runs the
ordinary plan (one kernel call) on its blocks, and the result is partitioned along each partitioned label the
output keeps, a pending sum over each dimension whose label was contracted or whose pending operand was kept, and
replicated over the rest. Plain tensors count as replicated. Plans are per shapes, so each rank plans its own
(possibly uneven) blocks. ``forcing`` requires a placement of a call's result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import typing
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Placement, Replicate, Shard

from .. import _dtypes, _precision
from .._precision import PrecisionError
from ..contraction import execute as _execute
from ..contraction.plan import Plan, entry
from . import _record, _strategy
from ._array import as_dtensor, is_pending, redistribute
from ._mesh import whole_group

__all__ = ["execute", "cast", "localize", "finish", "summands", "global_stride", "forcing", "decision"]

# The fields of a plan that depend on operand shapes; the others (precision) come from the caller's plan.
_LAYOUT = ("operands", "order", "kernel", "bmkn", "out_shape", "out_perm", "shape")

_FORCED = threading.local()  # per thread: a rank of the threaded process group is a thread


@contextlib.contextmanager
def forcing(output: str, forced: _strategy.Forced) -> Iterator[None]:
    """Steps whose output labels are ``output`` get their result placed as ``forced`` in the block."""
    before = getattr(_FORCED, "value", None)
    _FORCED.value = (output, forced)
    try:
        yield
    finally:
        _FORCED.value = before


def _forced(output: str) -> _strategy.Forced | None:
    value = getattr(_FORCED, "value", None)
    return value[1] if value is not None and value[0] == output else None


def execute(plan: Plan, tensors: Sequence[torch.Tensor]) -> DTensor:
    """Run ``plan`` (made for the global shapes, in the dtype the program computes in) on operands of which at
    least one is a DTensor. A pending result stays pending: its sum over the ranks happens where it is next
    redistributed, in that dtype (the compiler counts it, ``compiler.Rounding`` "sum over ranks")."""
    inputs, output = _labels(plan.subscripts)
    dts, chosen = localize(tensors, inputs, output, plan.dtype, plan.subscripts)
    blocks = [t.to_local() for t in dts]
    local = _local_plan(plan, inputs, output, blocks)
    if not _may_refuse(plan):  # the global plan: every rank decides alike (a block may sum too few terms to round)
        return finish(_execute.execute(local, blocks), dts[0].device_mesh, chosen.output, plan.shape)
    try:
        out, refusal = _execute.execute(local, blocks), None
    except PrecisionError as e:  # this rank's blocks are beyond the mode: every rank must know before going on
        out, refusal = None, e
    _agree(refusal, dts[0].device_mesh, blocks[0].device, plan.subscripts)
    assert out is not None  # _agree raised where this rank refused
    return finish(out, dts[0].device_mesh, chosen.output, plan.shape)


def decision(
    tensors: Sequence[torch.Tensor | _Placed],
    inputs: Sequence[str],
    output: str,
    dtype: torch.dtype,
    what: str,
    mesh: DeviceMesh | None = None,
) -> tuple[DeviceMesh, _strategy.Decision]:
    """The mesh of the sharded operands and the planner's placement of the step (without running it)."""
    mesh = mesh or next(t.device_mesh for t in tensors if isinstance(t, DTensor))
    for t in tensors:
        if isinstance(t, (DTensor, _Placed)) and t.device_mesh != mesh:
            raise ValueError(
                f"contraction {what!r}: operands live on different device meshes, {mesh} and "
                f"{t.device_mesh}; move one with x.to_device(y.device)"
            )
    placements = tuple(
        tuple(t.placements) if isinstance(t, (DTensor, _Placed)) else (Replicate(),) * mesh.ndim for t in tensors
    )
    coordinate = tuple(mesh.get_coordinate() or (0,) * mesh.ndim)
    chosen = _strategy.decide(
        tuple(inputs),
        output,
        tuple(tuple(t.shape) for t in tensors),
        placements,
        dtype,
        tuple(mesh.shape),
        coordinate,
        _record.network(mesh.ndim),
        _forced(output),
    )
    return mesh, chosen


def localize(
    tensors: Sequence[torch.Tensor],
    inputs: Sequence[str],
    output: str,
    dtype: torch.dtype,
    what: str,
    mesh: DeviceMesh | None = None,
) -> tuple[list[DTensor], _strategy.Decision]:
    """The operands as DTensors placed as the planner decides for the step (see the module docstring), and the
    decision (recorded where a ``td.record()`` block records)."""
    mesh, chosen = decision(tensors, inputs, output, dtype, what, mesh)
    _record.decided(chosen)
    dts = [as_dtensor(t, mesh) for t in tensors]
    dts = [redistribute(t, target) for t, target in zip(dts, chosen.operands, strict=True)]
    return dts, chosen


def placements_of_program(
    program: Any, plans: Sequence[Plan], tensors: Sequence[torch.Tensor]
) -> tuple[_strategy.Decision, ...]:
    """explain()'s view: the planner's decision for every step of ``program`` on operands placed as ``tensors``
    are (plain ones replicated), each step's result placed as decided, without running anything."""
    mesh = next(t.device_mesh for t in tensors if isinstance(t, DTensor))
    registers: list[Any] = [*tensors, *([None] * len(program.steps))]
    decisions = []
    for step, plan in zip(program.steps, plans, strict=True):
        args = [registers[i] for i in step.operands]
        _, chosen = decision(
            [_Placed(a, step.shapes[k], mesh) for k, a in enumerate(args)],
            step.inputs,
            step.output,
            plan.dtype,
            step.subscripts,
            mesh,
        )
        decisions.append(chosen)
        output = chosen.output
        if step.perm is not None:  # the result's axes permuted: a partition follows its axis
            output = tuple(Shard(step.perm.index(p.dim)) if isinstance(p, Shard) else p for p in output)
        registers[step.register] = _Placed(None, tuple(plan.shape), mesh, output)
    return tuple(decisions)


class _Placed:
    """A stand-in for a step's operand in a dry run: its global shape and placements (a DTensor's own, else
    replicated)."""

    shape: tuple[int, ...]
    placements: tuple[Placement, ...]
    device_mesh: DeviceMesh

    def __init__(
        self, t: Any, shape: Sequence[int], mesh: DeviceMesh, placements: tuple[Placement, ...] | None = None
    ) -> None:
        if isinstance(t, _Placed):
            shape, placements = t.shape, t.placements
        elif isinstance(t, DTensor):
            placements = tuple(t.placements)
        self.shape = tuple(shape)
        self.placements = placements or (Replicate(),) * mesh.ndim
        self.device_mesh = mesh


def _may_refuse(plan: Plan) -> bool:
    """Whether running ``plan`` may raise PrecisionError on some ranks' blocks only (a mode that certifies its
    bound on the data, see ``_precision.Mode.refuses``)."""
    modes = [plan.resolved] + [s.resolved for s in plan.sums if s is not None]
    return any(r is not None and _precision.MODES[r.mode].refuses for r in modes)


def _agree(refusal: PrecisionError | None, mesh: DeviceMesh, device: torch.device, what: str) -> None:
    """One all-reduce (on the blocks' ``device``) of whether any rank refused its blocks: then every rank raises
    (SPMD programs must not split into ranks that go on and ranks that stopped)."""
    flag = torch.tensor([0 if refusal is None else 1], dtype=torch.int64, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=whole_group(mesh))
    if refusal is not None:
        raise refusal
    if int(flag.item()):
        raise PrecisionError(
            f"another rank's blocks of {what!r} are beyond what the mode can vouch for (it raised "
            "there, with the reason); use precision='fp64'",
            "contraction",
        )


def cast(t: DTensor, dtype: torch.dtype) -> DTensor:
    """A DTensor in ``dtype``: pending sums are resolved first (all-reduces, in their own dtype), since the
    rounding of each rank's summand is not the rounding of the sum."""
    if is_pending(t):
        t = redistribute(t, tuple(Replicate() if p.is_partial() else p for p in t.placements))
    return typing.cast(DTensor, _dtypes.cast(t, dtype))  # torch's ops on a DTensor make a DTensor


def finish(out: torch.Tensor, mesh: DeviceMesh, placements: Sequence[Placement], shape: Sequence[int]) -> DTensor:
    """This rank's result block as the DTensor of the whole result, placed as the step's decision says."""
    where = tuple(placements)
    if out.dtype is torch.bool and any(p.is_partial() for p in where):  # a pending logical or: count, add, compare
        counts = _dtensor(out.to(torch.int64), mesh, where, shape)
        resolved = tuple(Replicate() if p.is_partial() else p for p in where)
        return _dtensor(redistribute(counts, resolved).to_local() > 0, mesh, resolved, shape)
    return _dtensor(out, mesh, where, shape)


def summands(mesh: DeviceMesh) -> tuple[Placement, ...]:
    """A pending sum over every mesh dimension (each rank holds one summand)."""
    return (Partial("sum"),) * mesh.ndim


def _labels(subscripts: str) -> tuple[tuple[str, ...], str]:
    inputs, output = subscripts.split("->")
    return tuple(inputs.split(",")), output


def _local_plan(plan: Plan, inputs: tuple[str, ...], output: str, blocks: list[torch.Tensor]) -> Plan:
    """The plan for this rank's blocks, under the precision the caller's plan resolved."""
    base = entry(inputs, output, tuple(tuple(b.shape) for b in blocks), tuple(b.dtype for b in blocks)).base
    # each pre-sum of the blocks under the mode resolved for the global one (its bound, for the longer global
    # sum, covers the block's)
    # (a block may sum fewer terms than the whole: one term is exact, and has no pre-sum plan)
    # where a block sums (more than one term), the whole sums more: ``theirs`` is a plan too
    sums = (
        tuple(
            None if mine is None else dataclasses.replace(mine, resolved=typing.cast(Plan, theirs).resolved)
            for mine, theirs in zip(base.sums, plan.sums, strict=True)
        )
        if base.sums
        else ()
    )
    if base.kernel is None:
        return dataclasses.replace(base, sums=sums)
    return dataclasses.replace(plan, sums=sums, **{f: getattr(base, f) for f in _LAYOUT})


def _dtensor(local: torch.Tensor, mesh: DeviceMesh, where: tuple[Placement, ...], shape: Sequence[int]) -> DTensor:
    return DTensor.from_local(local, mesh, where, shape=torch.Size(shape), stride=global_stride(local, shape))


def global_stride(local: torch.Tensor, shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a tensor of the global ``shape`` laid out in the dimension order of ``local``'s (a permuted
    block stays a permuted array, as DTensor expects)."""
    # (mypy types this lambda before it knows d is an int, and takes stride()'s tuple overload)
    order = sorted(range(local.dim()), key=lambda d: (-local.stride(d), d))  # type: ignore[operator]
    strides = [0] * local.dim()
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(int(shape[d]), 1)
    return tuple(strides)
