"""Running one plan on torch tensors: views, pre-reductions, one kernel call (one per entry of a batch axis
where the plan loops, ``Plan.loop``), the output layout (under target_relative_error=, the checked call of
``posteriori``: one more fast pass, and reruns on escalation). The runner (``runner``) calls it once per step
of every program.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import cast

import torch

from .. import _dtypes, _precision, kernels
from . import posteriori
from .plan import Plan

__all__ = ["execute", "EXECUTORS"]

# Tensor subclasses whose operands run a plan their own way: trn_backend.distributed registers DTensor (each
# rank runs the plan on its blocks, then places the result).
EXECUTORS: dict[type, Callable[[Plan, Sequence[torch.Tensor]], torch.Tensor]] = {}


def execute(plan: Plan, tensors: Sequence[torch.Tensor], check_specials: bool = True) -> torch.Tensor:
    """Run ``plan``; the only arithmetic outside the kernel is diagonal extraction and single-operand sums.
    ``check_specials=False``: a direct step (``Plan.direct``) leaves a complex native product's inf and nan
    entries as the GEMM makes them (``kernels.matmul``); the runner passes it where it checks the finished result
    instead (``runner.partial``). Other steps always check."""
    if EXECUTORS:
        for t in tensors:
            run = EXECUTORS.get(type(t))
            if run is not None:
                return run(plan, tensors)
    direct = plan.direct  # (input, perm, shape) of each kernel operand, kernel, mode
    if direct is not None:
        # the common step: each operand's permute and reshape (positional arguments parse faster than one
        # tuple), then the kernel
        i, perm, shape, j, perm_b, shape_b, kernel, mode = direct
        a, b = tensors[i], tensors[j]
        if perm is not None:
            a = a.permute(*perm)
        if shape is not None:
            # a view whenever the strides allow; torch copies only when the merged dimensions are not adjacent
            a = a.reshape(*shape)
        if perm_b is not None:
            b = b.permute(*perm_b)
        if shape_b is not None:
            b = b.reshape(*shape_b)
        if check_specials:
            out = getattr(kernels, kernel)(a, b, mode)
        else:
            out = getattr(kernels, kernel)(a, b, mode, check_specials=False)
    else:
        out = _general(plan, tensors)
    out_shape = plan.out_shape
    if out_shape is not None:
        out = out.reshape(*out_shape) if out_shape else out.reshape(())
    if plan.out_perm is not None:
        out = out.permute(*plan.out_perm)
    return out


def _general(plan: Plan, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Every other step (see ``Plan.direct``): diagonals, sums and broadcasts of the operands (already in the
    plan's dtype: the runner casts them, each cast a rounding the program counts), then the kernel call with its
    mode's parameters or a posteriori check; the result before the output layout."""
    ops = []
    sums = plan.sums or (None,) * len(plan.operands)
    for op, i, summing in zip(plan.operands, plan.order, sums, strict=True):
        t = tensors[i]
        for dim1, dim2 in op.diagonals:  # repeated indices: a view of the diagonal, moved to the last dimension
            t = t.diagonal(0, dim1, dim2)
        if op.summed:
            t = _sum(t, op.summed) if summing is None else _presum(t, op.summed, summing)
        if op.perm is not None:
            t = t.permute(op.perm)
        if op.expand is not None:
            t = t.reshape(op.expand[0]).expand(op.expand[1])
        if op.shape is not None:
            t = t.reshape(op.shape)
        ops.append(t)
    # read below only where the plan has a kernel: the compiler gives each kernel step its mode (``with_modes``)
    r = cast(_precision.Resolved, plan.resolved)
    if plan.kernel is None:
        out = ops[0]
    elif plan.kernel == "mul":
        out = kernels.mul(ops[0], ops[1], r.mode, **r.kwargs)
        if r.target_relative_error is not None:
            _check_product(plan, ops[0], ops[1], out)
    elif r.target_relative_error is not None:
        if plan.loop is None:
            out = posteriori.run(plan, ops[0], ops[1])
        else:  # the check covers one call: here the broadcast is materialised ([P*Q, ...])
            out = posteriori.run(plan, ops[0].flatten(0, 1), ops[1].flatten(0, 1)).unflatten(0, ops[0].shape[:2])
    elif plan.loop is not None:
        kernel, axis = getattr(kernels, plan.kernel), plan.loop[0]
        out = torch.stack(
            [kernel(a, b, r.mode, **r.kwargs) for a, b in zip(ops[0].unbind(axis), ops[1].unbind(axis), strict=True)],
            axis,
        )
    else:
        out = getattr(kernels, plan.kernel)(ops[0], ops[1], r.mode, **r.kwargs)
    return out


def _check_product(plan: Plan, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """target_relative_error= on a ``mul`` step: each entry is one product rounded once, so its error relative
    to the exact entry is at most the unit roundoff u of the output dtype (2u under stochastic rounding, sqrt(5) u
    for complex), plus, below the normal range, an absolute t (the smallest subnormal: what a stochastic rounding
    can lose, twice what a nearest rounding can) that counts t / (|C^| - t) relative; an entry rounded to zero
    that is not an exact zero, or that overflows from finite inputs, is out of reach. Entries fed by inf or nan
    are left out, as ``posteriori`` does. No mode does better than one rounding, so there is nothing to escalate
    to: a miss raises."""
    r = plan.resolved
    # ``_general`` calls this for a checked ``mul`` step only: it carries its mode and relative target
    assert r is not None and r.target_relative_error is not None
    real = plan.dtype.to_real() if plan.dtype.is_complex else plan.dtype
    stochastic = r.mode == "sr" and real in (torch.bfloat16, torch.float16)
    # complex: the textbook product's normwise error is sqrt(5) u (Brent, Percival, Zimmermann 2007), and both
    # parts may underflow
    unit = torch.finfo(real).eps / 2 * (2 if stochastic else 1) * (math.sqrt(5) if plan.dtype.is_complex else 1)
    tiny = torch.finfo(real).smallest_normal
    # the smallest subnormal, not half of it: half of float64's is no float64 and would round to an allowance of 0
    t = tiny * torch.finfo(real).eps * (2 if plan.dtype.is_complex else 1)
    estimate = 0.0
    if out.numel():
        c = out.abs().double()
        room = c - t
        e = torch.where(c >= tiny, unit, torch.where(room > 0, unit + t / room, math.inf))
        e = torch.where(torch.isfinite(c), e, math.inf)
        e = torch.where((c == 0) & ((a == 0) | (b == 0)), 0.0, e)  # an exact zero
        e = torch.where(torch.isfinite(a) & torch.isfinite(b), e, 0.0)
        estimate = e.max().item()
    target = r.target_relative_error
    check = _precision.Check(plan.subscripts, 1, target, ((r.label, estimate),))
    _precision.record(check)
    if not check.met:
        raise _precision.PrecisionError(
            f"target_relative_error={target:g} is out of reach for {plan.subscripts!r} (nothing to contract, "
            f"{_dtypes.name(plan.dtype)}): each entry is one product rounded once, and the estimate reached is "
            f"{estimate:.3g}",
            "contraction",
        )


def _presum(t: torch.Tensor, dims: tuple[int, ...], plan: Plan) -> torch.Tensor:
    """Sum out indices of one operand under the mode of its pre-sum ``plan`` (see ``Plan.sums``): native is
    torch's sum in the operand's dtype, whose error any order of summation keeps within native's bound
    gamma_Ks(u); other modes run [R, Ks] @ ones[Ks, 1] through the kernel layer (a posteriori checked under a
    relative target), so the sum has the mode's bound like any contraction."""
    r = cast(_precision.Resolved, plan.resolved)  # the compiler gives each pre-sum plan its mode (``with_modes``)
    if r.mode == "native" and r.target_relative_error is None:
        return _sum(t, dims)
    kept = [d for d in range(t.dim()) if d not in dims]
    shape = [t.shape[d] for d in kept]
    flat = t.permute(*kept, *dims).reshape(plan.bmkn[1], plan.bmkn[2])
    ones = torch.ones(plan.bmkn[2], 1, dtype=t.dtype, device=t.device)
    if r.target_relative_error is not None:
        out = posteriori.run(plan, flat, ones)
    else:
        out = kernels.matmul(flat, ones, r.mode, **r.kwargs)
    return out.reshape(shape)


def _sum(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """Sum out indices of one operand in its own dtype: logical or for bool, modular for integers."""
    if t.dtype is torch.bool:
        return t.any(dim=dims)
    if t.dtype in _dtypes.INTEGER:
        c = _dtypes.compute(t)
        return _dtypes.restore(c.sum(dims, dtype=c.dtype), t.dtype)
    return t.sum(dims)
