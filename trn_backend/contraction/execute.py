"""Running a plan on torch tensors: views, pre-reductions, exactly one kernel call, the output layout (under
target_relative_error=, the checked call of ``posteriori``: one more fast pass, and reruns on escalation).

``contract`` is the single entry every contraction of the package goes through (einsum, tensordot, matmul,
vecdot, each step of an opt_einsum or multi-operand path): plan (cached), then execute.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .. import _dtypes, kernels
from . import posteriori
from .plan import Operand, Plan, plan_for

__all__ = ["contract", "execute", "EXECUTORS"]

# Tensor subclasses whose operands run a plan their own way: trn_backend.distributed registers DTensor (each
# rank runs the plan on its blocks, then places the result).
EXECUTORS: dict[type, Callable[[Plan, Sequence[torch.Tensor]], torch.Tensor]] = {}


def contract(inputs: tuple[str, ...], output: str, tensors: list[torch.Tensor] | tuple[torch.Tensor, ...],
             precision: str | None = None, target_forward_error: float | None = None) -> torch.Tensor:
    """Contract one or two tensors labelled by ``inputs`` into ``output`` (labels already validated)."""
    # the per-call path of every contraction: plan lookup, then execute, with as little Python as possible
    a = tensors[0]
    if len(tensors) == 2:
        b = tensors[1]
        plan = plan_for(inputs, output, (a.shape, b.shape), (a.dtype, b.dtype), a.device, precision,
                        target_forward_error)
    else:
        plan = plan_for(inputs, output, (a.shape,), (a.dtype,), a.device, precision, target_forward_error)
    return execute(plan, tensors)


def execute(plan: Plan, tensors: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Run ``plan``; the only arithmetic outside the kernel is diagonal extraction and single-operand sums."""
    if EXECUTORS:
        for t in tensors:
            run = EXECUTORS.get(type(t))
            if run is not None:
                return run(plan, tensors)
    dtype = plan.dtype
    ops = []
    for op, i in zip(plan.operands, plan.order, strict=True):
        t = tensors[i]
        if t.dtype is not dtype:
            t = _dtypes.cast(t, dtype)
        if op.diagonals or op.summed:
            t = _reduce(op, t)
        if op.perm is not None:
            t = t.permute(op.perm)
        if op.expand is not None:
            t = t.reshape(op.expand[0]).expand(op.expand[1])
        if op.shape is not None:
            # a view whenever the strides allow; torch copies only when the merged dimensions are not adjacent
            t = t.reshape(op.shape)
        ops.append(t)
    r = plan.resolved
    if plan.kernel is None:
        out = ops[0]
    elif r.target_relative_error is not None:
        out = posteriori.run(plan, ops[0], ops[1])
    elif r.params:
        out = getattr(kernels, plan.kernel)(ops[0], ops[1], r.mode, **r.kwargs)
    else:
        out = getattr(kernels, plan.kernel)(ops[0], ops[1], r.mode)
    if plan.out_shape is not None:
        out = out.reshape(plan.out_shape)
    if plan.out_perm is not None:
        out = out.permute(plan.out_perm)
    return out


def _reduce(op: Operand, t: torch.Tensor) -> torch.Tensor:
    """Diagonals of repeated indices, then sums of indices this operand alone has (not contractions)."""
    for dim1, dim2 in op.diagonals:
        t = t.diagonal(0, dim1, dim2)
    return _sum(t, op.summed) if op.summed else t


def _sum(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """Sum out indices of one operand in its own dtype: logical or for bool, modular for integers."""
    if t.dtype is torch.bool:
        return t.any(dim=dims)
    if t.dtype in _dtypes.INTEGER:
        c = _dtypes.compute(t)
        return _dtypes.restore(c.sum(dims, dtype=c.dtype), t.dtype)
    return t.sum(dims)
