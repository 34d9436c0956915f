"""``target_relative_error=`` on a whole expression of several rounding steps (a path, pre-sums, slice sums).

A single binary step is checked by ``posteriori`` against its own |A||B|. An expression of several steps is not
the sum of its steps' checks: an early step's error reaches the result through the later products, and a sum
that cancels late makes the result small against every earlier magnitude. So the whole expression is run under
forward targets and checked once, against its own absolute value (docs/precision.md, "Whole expressions"):

1. Run every step under ``target_forward_error=t`` (t starts at the relative target), each step's mode the
   cheapest meeting its share (``_precision.share``); the modes' bounds compose to B (``_precision.compose``):
   ``|C^ - C| <= B S``, S the same expression on the absolute values of the operands. Data narrower than
   float64 is carried in float64 through the steps and rounded to its dtype once, at the end: an intermediate
   rounded to float32 would cost u_fp32 of S however many bits the modes keep, and the final rounding costs u
   relative to |C| (every mode computes the same splits and digits whatever the storage dtype).
2. Compute an upper bound of S: the expression on |operands| in float64 native arithmetic, each operand first
   scaled by a power of two to at most 1 (exact; the expression is multilinear, so S scales back exactly),
   divided by (1 - B64) for its own rounding and raised by what float64 underflow can hide.
3. Add T, what gradual underflow can cost beyond the bounds (every scalar rounding the smallest subnormal, an
   over-estimate of the half that it loses, carried to the result by the largest operand magnitudes and all
   label sizes).
4. With r = (B S + T) / |C^|, each entry's relative error is at most r / (1 - r); entries fed by an inf or nan
   are left out, as in ``posteriori``. If the maximum misses the target, t shrinks by the measured |C^| / S
   and the expression runs again; when no mode reaches t any more, ``PrecisionError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .. import _dtypes, _precision
from .plan import Plan

__all__ = ["checked", "rounding_steps", "Runner"]

# run(tensors) -> (result, (mode label, bound) of every rounding step it ran, each bound in units of that step's
# absolute value)
Runner = Callable[[Sequence[torch.Tensor]], tuple[torch.Tensor, list[tuple[str, float | None]]]]

# What one float64 rounding can lose to gradual underflow is half the smallest subnormal, 2**-1075, which is no
# float64 (it rounds to 0): the smallest subnormal itself stands for it
_SUBNORMAL64 = 2.0**-1074
_TRIES = 6


def rounding_steps(plans: Sequence[Plan]) -> list[tuple[str, float | None]]:
    """(mode label, bound) of each plan run that rounds: what a ``Runner`` reports."""
    return [(p.label, p.bound) for p in plans if p.roundings]


def checked(subscripts: str, run: Runner, tensors: Sequence[torch.Tensor], sizes: dict[str, int],
            output: str, target: float) -> torch.Tensor:
    """The result of ``run`` on ``tensors`` (labelled by ``sizes``' labels; ``output`` the kept ones; of one
    inexact dtype) with every entry's error within ``target`` relative to the exact entry, or a
    ``PrecisionError``."""
    K = math.prod(s for c, s in sizes.items() if c not in output)
    dtype = tensors[0].dtype
    real = dtype.to_real() if dtype.is_complex else dtype
    wide = torch.complex128 if dtype.is_complex else torch.float64
    rounding = _precision.U_FP64 if real is torch.float64 else torch.finfo(real).eps / 2
    rounding = rounding / (1 - rounding) * (math.sqrt(2) if dtype.is_complex and real is not torch.float64 else 1)
    if real is torch.float64:
        rounding = 0.0  # float64 results are not rounded again: the steps' bounds hold all of it
    tensors = [t.to(wide) for t in tensors]
    scale, exact_zeros = _magnitude(run, tensors, sizes)
    special = _special(run, tensors)
    work = sum(math.prod(sizes.values()) for _ in tensors) + math.prod(sizes[c] for c in output)
    # the largest finite magnitudes (entries fed by inf or nan are left out of the check)
    largest = math.prod(max(1.0, float(_finite(t.abs()).max())) if t.numel() else 1.0 for t in tensors)
    eta_out = torch.finfo(real).smallest_normal * torch.finfo(real).eps  # the smallest subnormal (see above)
    forward, tried, error, out = target, [], None, None
    for _ in range(_TRIES):
        try:
            with _precision.precision(target_forward_error=forward):
                out, steps = run(tensors)
        except _precision.PrecisionError as e:  # no mode reaches this share of the target: give up
            error = e
            break
        bound = _precision.compose(b for _, b in steps)
        label = "+".join(dict.fromkeys(m for m, _ in steps)) or "exact"
        if bound is None:  # a mode without a published bound cannot be checked
            tried.append((label, math.inf))
            break
        out = out.to(dtype)  # the one rounding of a narrower result (see the module docstring)
        underflow = (1 + bound) * work * _SUBNORMAL64 * largest * math.prod(sizes.values()) + eta_out
        estimate, ratio = _estimate(out, scale, exact_zeros, bound, rounding, underflow, special)
        tried.append((label, estimate))
        if estimate <= target or (len(tried) > 1 and estimate >= tried[-2][1]):
            break  # met, or a tighter target no longer helps (what is left is rounding and underflow)
        nxt = min(forward / 2, 0.5 * target / (1 + target) * ratio)
        if not nxt > 0:
            break
        forward = nxt
    check = _precision.Check(subscripts, K, target, tuple(tried) or (("-", math.inf),))
    _precision.record(check)
    if not tried or not check.met:
        best = min((e for _, e in tried), default=math.inf)
        raise _precision.PrecisionError(
            f"target_relative_error={target:g} is out of reach for {subscripts!r} as a whole ({_dtypes.name(real)}"
            f"): the best a posteriori estimate reached is {best:.3g} (tried: "
            f"{', '.join(f'{m} {e:.3g}' for m, e in tried) or 'none'}); |C| is too small against the expression "
            "on |operands| for this dtype, or underflows it", "contraction") from error
    return out


def _magnitude(run: Runner, tensors: Sequence[torch.Tensor], sizes: dict[str, int]
               ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """An upper bound of S (float64) and where S is exactly zero (None where underflow could hide a term)."""
    scaled, exponent, smallest = [], 0, 1.0
    for t in tensors:
        m = _finite(t.abs().double())
        top = float(m.max()) if m.numel() else 0.0
        e = math.frexp(top)[1] if top > 0 else 0
        m = torch.ldexp(m, torch.tensor(-e, dtype=torch.float64)) if e else m
        nonzero = m[m > 0]
        smallest *= float(nonzero.min()) if nonzero.numel() else 1.0
        scaled.append(m)
        exponent += e
    with _precision.precision("native"):
        s, steps = run(scaled)
    b64 = _precision.compose(b for _, b in steps) or 0.0
    hidden = sum(math.prod(sizes.values()) for _ in tensors) * _SUBNORMAL64 * math.prod(sizes.values())
    up = (s + hidden) / (1 - b64)
    # a product of one entry of each operand is at least ``smallest``: above float64's normal range, no term of
    # S underflows, so S^ = 0 means S = 0
    return torch.ldexp(up, torch.tensor(exponent, dtype=torch.float64)), (s == 0) if smallest >= 2.0**-1000 else None


def _finite(m: torch.Tensor) -> torch.Tensor:
    """Magnitudes with inf and nan as 0: what the entries they do not feed are computed from."""
    return torch.nan_to_num(m, nan=0.0, posinf=0.0)


def _special(run: Runner, tensors: Sequence[torch.Tensor]) -> torch.Tensor | None:
    """Entries of the result fed by an inf or nan operand entry (None when no operand has one)."""
    flags = [(~torch.isfinite(t)).double() for t in tensors]
    if not any(bool(f.any()) for f in flags):
        return None
    ones = [torch.ones_like(f) for f in flags]
    marks = None
    for i, f in enumerate(flags):  # an entry is fed by a special of operand i where sum over products with it > 0
        if bool(f.any()):
            with _precision.precision("native"):
                hit = run([f if j == i else ones[j] for j in range(len(flags))])[0] > 0
            marks = hit if marks is None else marks | hit
    return marks


def _estimate(out: torch.Tensor, scale: torch.Tensor, exact_zeros: torch.Tensor | None, bound: float,
              rounding: float, underflow: float, special: torch.Tensor | None) -> tuple[float, float]:
    """(max over entries of r / (1 - r), r = (bound * scale + underflow) / |out| + rounding; min |out| /
    scale)."""
    c = out.abs().double()
    trusted = torch.isfinite(c) & torch.isfinite(scale)
    r = torch.where(trusted, (bound * scale + underflow) / c + rounding, math.inf)
    r = torch.where(r < 1, r / (1 - r), math.inf)
    if exact_zeros is not None:
        r = torch.where(exact_zeros & (c == 0), 0.0, r)
    ratio = torch.where(trusted & (scale > 0), c / scale, math.inf)
    if special is not None:
        r = torch.where(special, 0.0, r)
        ratio = torch.where(special, math.inf, ratio)
    if not r.numel():
        return 0.0, math.inf
    return r.max().item(), ratio.min().item()
