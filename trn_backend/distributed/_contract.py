"""Contractions of sharded operands: the planner's plan, run by every rank on its own blocks.

A one- or two-operand contraction step is local once at most one label is partitioned: every operand holding
that label holds the same block of it, the others hold all of theirs. Then each rank runs the ordinary plan
(one kernel call) on its blocks, and the result is partitioned along the label when the output keeps it
(output-parallel: no communication) or a pending sum when the label is contracted or summed (reduce-parallel:
DTensor's ``Partial``, resolved later by one all-reduce or reduce-scatter). A pending operand times operands
that are whole on every rank stays pending (the step is linear in it). Anything else is first brought to that
form by DTensor's collectives: the smaller of two pending operands is all-reduced, a pending operand meeting a
partitioned label is reduce-scattered along it, an operand partitioned along a second label is all-gathered.
Plain tensors count as replicated. Plans are per shapes, so each rank plans its own (possibly uneven) blocks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Placement, Replicate, Shard

from .. import _dtypes, _precision
from .._precision import PrecisionError
from ..contraction import execute as _execute
from ..contraction.plan import Plan, entry
from ._array import as_dtensor, redistribute

__all__ = ["execute", "cast", "localize", "finish", "pending", "global_stride"]

# The fields of a plan that depend on operand shapes; the others (precision) come from the caller's plan.
_LAYOUT = ("operands", "order", "kernel", "bmkn", "out_shape", "out_perm", "shape")


def execute(plan: Plan, tensors: Sequence[torch.Tensor]) -> DTensor:
    """Run ``plan`` (made for the global shapes, in the dtype the program computes in) on operands of which at
    least one is a DTensor. A pending result stays pending: its sum over the ranks happens where it is next
    redistributed, in that dtype (the compiler counts it, ``compiler.Rounding`` "sum over ranks")."""
    inputs, output = _labels(plan.subscripts)
    dts, label = localize(tensors, inputs, plan.dtype, plan.subscripts)
    blocks = [t.to_local() for t in dts]
    local = _local_plan(plan, inputs, output, blocks)
    if not _may_refuse(plan):  # the global plan: every rank decides alike (a block may sum too few terms to round)
        return finish(_execute.execute(local, blocks), dts, label, output, plan.shape)
    try:
        out, refusal = _execute.execute(local, blocks), None
    except PrecisionError as e:  # this rank's blocks are beyond the mode: every rank must know before going on
        out, refusal = None, e
    _agree(refusal, dts[0].device_mesh, blocks[0].device, plan.subscripts)
    return finish(out, dts, label, output, plan.shape)


def _may_refuse(plan: Plan) -> bool:
    """Whether running ``plan`` may raise PrecisionError on some ranks' blocks only (a mode that certifies its
    bound on the data, see ``_precision.Mode.refuses``)."""
    modes = [plan.resolved] + [s.resolved for s in plan.sums if s is not None]
    return any(r is not None and _precision.MODES[r.mode].refuses for r in modes)


def _agree(refusal: PrecisionError | None, mesh: DeviceMesh, device: torch.device, what: str) -> None:
    """One all-reduce (on the blocks' ``device``) of whether any rank refused its blocks: then every rank raises
    (SPMD programs must not split into ranks that go on and ranks that stopped)."""
    flag = torch.tensor([0 if refusal is None else 1], dtype=torch.int64, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=mesh.get_group())
    if refusal is not None:
        raise refusal
    if int(flag.item()):
        raise PrecisionError(f"another rank's blocks of {what!r} are beyond what the mode can vouch for (it raised "
                             "there, with the reason); use precision='kahan'", "contraction")


def cast(t: DTensor, dtype: torch.dtype) -> DTensor:
    """A DTensor in ``dtype``: a pending sum is resolved first (one all-reduce, in its own dtype), since the
    rounding of each rank's summand is not the rounding of the sum."""
    if t.placements[0].is_partial():
        t = redistribute(t, Replicate())
    return _dtypes.cast(t, dtype)


def localize(tensors: Sequence[torch.Tensor], inputs: Sequence[str], dtype: torch.dtype, what: str,
             mesh: DeviceMesh | None = None) -> tuple[list[DTensor], str | None]:
    """The operands as DTensors on ``mesh`` (default: the first DTensor's) that every rank can contract block
    by block (see the module docstring), and the partitioned label (None when none is)."""
    mesh = mesh or next(t.device_mesh for t in tensors if isinstance(t, DTensor))
    dts = [as_dtensor(t, mesh) for t in tensors]
    for t in dts:
        if t.device_mesh != mesh:
            raise ValueError(f"contraction {what!r}: operands live on different device meshes, {mesh} and "
                             f"{t.device_mesh}; move one with x.to_device(y.device)")
    dts = _localizable(dts, inputs, dtype)
    label = next((inputs[i][p.dim] for i, t in enumerate(dts) if (p := t.placements[0]).is_shard()), None)
    if label is not None and any(c.count(label) > 1 and _whole_along(t, c, label)
                                 for t, c in zip(dts, inputs, strict=True)):
        # an operand takes a diagonal along the label ("ddd"): one block of one of its dimensions is not a block
        # of the diagonal, so the partitioned operands are gathered instead
        dts = [redistribute(t, Replicate()) if t.placements[0].is_shard() else t for t in dts]
        label = None
    if label is not None:  # every operand holding the label takes the same block of it (a local chunk)
        dts = [redistribute(t, Shard(c.index(label))) if _whole_along(t, c, label) else t
               for t, c in zip(dts, inputs, strict=True)]
    return dts, label


def finish(out: torch.Tensor, dts: Sequence[DTensor], label: str | None, output: str, shape: Sequence[int],
           summand: bool = False) -> DTensor:
    """This rank's result block as the DTensor of the whole result: partitioned along the label when the output
    keeps it, a pending sum when it was contracted, an operand was pending or ``out`` is one ``summand``,
    else replicated."""
    is_pending = summand or pending(dts, label, output)
    where: Placement = Partial("sum") if is_pending else Replicate() if label is None else Shard(output.index(label))
    if is_pending and out.dtype is torch.bool:  # a pending logical or: count, all-reduce, compare
        counts = _dtensor(out.to(torch.int64), dts[0], where, shape)
        return _dtensor(redistribute(counts, Replicate()).to_local() > 0, dts[0], Replicate(), shape)
    return _dtensor(out, dts[0], where, shape)


def pending(dts: Sequence[DTensor], label: str | None, output: str) -> bool:
    """Whether the step's result is a sum over the ranks: an operand is one, or the partitioned label is summed."""
    return any(t.placements[0].is_partial() for t in dts) or (label is not None and label not in output)


def _whole_along(t: DTensor, labels: str, label: str) -> bool:
    """Whether ``t`` holds all of ``label`` on every rank (and does not broadcast it from size 1)."""
    return label in labels and not t.placements[0].is_shard() and t.shape[labels.index(label)] != 1


def _labels(subscripts: str) -> tuple[tuple[str, ...], str]:
    inputs, output = subscripts.split("->")
    return tuple(inputs.split(",")), output


def _localizable(dts: list[DTensor], inputs: Sequence[str], dtype: torch.dtype) -> list[DTensor]:
    """The operands redistributed (only where needed) so that at most one label is partitioned and a pending
    operand meets only whole ones."""
    dts = [t if _plain_placement(t, labels, dtype) else redistribute(t, Replicate())
           for t, labels in zip(dts, inputs, strict=True)]
    pending = [i for i, t in enumerate(dts) if t.placements[0].is_partial()]
    while len(pending) > 1:  # a contraction is linear in each operand, not in two at once: resolve the smaller
        i = min(pending, key=lambda j: dts[j].numel())
        dts[i] = redistribute(dts[i], Replicate())
        pending.remove(i)
    sharded = [i for i, t in enumerate(dts) if t.placements[0].is_shard()]
    if len({inputs[i][dts[i].placements[0].dim] for i in sharded}) > 1:  # keep the largest operand's label
        keep = max(sharded, key=lambda j: dts[j].numel())
        for i in sharded:
            if inputs[i][dts[i].placements[0].dim] != inputs[keep][dts[keep].placements[0].dim]:
                dts[i] = redistribute(dts[i], Replicate())
        sharded = [i for i in sharded if dts[i].placements[0].is_shard()]
    if pending and sharded:  # a pending sum meeting a partitioned label: reduce-scatter along it if it has it
        (i,), j = pending, sharded[0]
        label = inputs[j][dts[j].placements[0].dim]
        dim = inputs[i].find(label)
        dts[i] = redistribute(dts[i], Shard(dim) if dim >= 0 and dts[i].shape[dim] == dts[j].shape[
            dts[j].placements[0].dim] else Replicate())
    return dts


def _plain_placement(t: DTensor, labels: str, dtype: torch.dtype) -> bool:
    """Whether ``t`` can take part as placed: replicated, a pending sum (unless cast to a wider integer type,
    where wrapped summands would disagree), or partitioned along a label it holds once and not at size 1."""
    (p,) = t.placements
    if type(p) is Replicate:
        return True
    if type(p) is Partial:
        return p.reduce_op == "sum" and (t.dtype == dtype or t.dtype.is_floating_point or t.dtype.is_complex)
    if type(p) is not Shard:
        return False
    label = labels[p.dim]
    return labels.count(label) == 1 and t.shape[p.dim] != 1


def _local_plan(plan: Plan, inputs: tuple[str, ...], output: str, blocks: list[torch.Tensor]) -> Plan:
    """The plan for this rank's blocks, under the precision the caller's plan resolved."""
    base = entry(inputs, output, tuple(tuple(b.shape) for b in blocks), tuple(b.dtype for b in blocks)).base
    # each pre-sum of the blocks under the mode resolved for the global one (its bound, for the longer global
    # sum, covers the block's)
    # (a block may sum fewer terms than the whole: one term is exact, and has no pre-sum plan)
    sums = tuple(None if mine is None else dataclasses.replace(mine, resolved=theirs.resolved)
                 for mine, theirs in zip(base.sums, plan.sums, strict=True)) if base.sums else ()
    if base.kernel is None:
        return dataclasses.replace(base, sums=sums)
    return dataclasses.replace(plan, sums=sums, **{f: getattr(base, f) for f in _LAYOUT})


def _dtensor(local: torch.Tensor, like: DTensor, where: Placement, shape: tuple[int, ...]) -> DTensor:
    return DTensor.from_local(local, like.device_mesh, (where,), shape=torch.Size(shape),
                              stride=global_stride(local, shape))


def global_stride(local: torch.Tensor, shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a tensor of the global ``shape`` laid out in the dimension order of ``local``'s (a permuted
    block stays a permuted array, as DTensor expects)."""
    order = sorted(range(local.dim()), key=lambda d: (-local.stride(d), d))
    strides = [0] * local.dim()
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(int(shape[d]), 1)
    return tuple(strides)

