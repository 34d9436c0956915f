"""``target_relative_error=`` on a whole expression of several rounding steps (a path, pre-sums, casts, slice
sums, a final rounding to a narrower dtype).

A single binary step is checked by ``posteriori`` against its own |A||B|. An expression of several steps is not
the sum of its steps' checks: an early step's error reaches the result through the later products, and a sum
that cancels late makes the result small against every earlier magnitude. So the whole expression is run under
forward targets and checked once, against its own absolute value (docs/precision.md, "Whole expressions"):

1. Run the program under ``target_forward_error=t`` (t starts at the relative target), carried in float64
   (complex128) through the steps: its roundings before the final one (casts, products, pre-sums, slice sums)
   compose to B (``_precision.compose``): ``|C^ - C| <= B S``, S the same expression on the absolute values of
   the operands. The final rounding to the result's dtype costs u relative to |C| (an intermediate rounded to
   float32 would cost u_fp32 of S however many bits the modes keep).
2. Compute an upper bound of S: the expression on |operands| in float64 native arithmetic, each operand first
   scaled by a power of two to at most 1 (exact; the expression is multilinear, so S scales back exactly),
   divided by (1 - B64) for its own rounding, by (1 - u) for each operand whose float64 magnitudes round, and
   raised by what float64 underflow can hide.
3. Add T, what gradual underflow can cost beyond the bounds (every scalar rounding the smallest subnormal, an
   over-estimate of the half that it loses, carried to the result by the largest operand magnitudes and all
   label sizes).
4. With r = (B S + T) / |C^| + u_out, each entry's relative error is at most r / (1 - r); entries fed by an inf
   or nan are left out, as in ``posteriori``. If the maximum misses the target, t shrinks by the measured
   |C^| / S and the expression runs again; when no mode reaches t any more, ``PrecisionError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .. import _dtypes, _precision
from ..kernels import bounds

__all__ = ["checked", "Runner"]

# run(request, tensors) -> (the result held before its final rounding, the bound of every rounding before it
# composed, the modes run): the program under ``request`` (a forward target, carried in float64; native on the
# float64 magnitudes)
Runner = Callable[[_precision.Request, Sequence[torch.Tensor]], tuple[torch.Tensor, float | None, str]]

# What one float64 rounding can lose to gradual underflow is half the smallest subnormal, 2**-1075, which is no
# float64 (it rounds to 0): the smallest subnormal itself stands for it
_SUBNORMAL64 = 2.0**-1074
_TRIES = 6


def checked(
    subscripts: str,
    run: Runner,
    tensors: Sequence[torch.Tensor],
    sizes: dict[str, int],
    output: str,
    target: float,
    out: torch.dtype,
) -> torch.Tensor:
    """The result of ``run`` on ``tensors`` (labelled by ``sizes``' labels; ``output`` the kept ones) in dtype
    ``out`` (inexact), with every entry's error within ``target`` relative to the exact entry, or a
    ``PrecisionError``."""
    K = math.prod(s for c, s in sizes.items() if c not in output)
    real = out.to_real() if out.is_complex else out
    # the final rounding, relative to |C|: float64 results are not rounded again (the steps' bounds hold it all)
    rounding = (
        0.0
        if real is torch.float64
        else bounds.unit(real) / (1 - bounds.unit(real)) * (math.sqrt(2) if out.is_complex else 1)
    )
    rounded = [
        bounds.cast_bound(t.dtype.to_real() if t.dtype.is_complex else t.dtype, torch.float64) or 0.0 for t in tensors
    ]
    scale, exact_zeros = _magnitude(run, tensors, sizes, rounded)
    special = _special(run, tensors)
    work = sum(math.prod(sizes.values()) for _ in tensors) + math.prod(sizes[c] for c in output)
    # the largest finite magnitudes (entries fed by inf or nan are left out of the check)
    largest = math.prod(max(1.0, float(_finite(_magnitudes(t)).max())) if t.numel() else 1.0 for t in tensors)
    eta_out = torch.finfo(real).smallest_normal * torch.finfo(real).eps  # the smallest subnormal (see above)
    forward, tried, error, result = target, [], None, None
    for _ in range(_TRIES):
        try:
            held, bound, label = run(_precision.request(None, (), forward), tensors)
        except _precision.PrecisionError as e:  # no mode reaches this share of the target: give up
            error = e
            break
        if bound is None:  # a mode without a published bound cannot be checked
            tried.append((label, math.inf))
            break
        result = held.to(out)  # the one rounding of a narrower result (see the module docstring)
        underflow = (1 + bound) * work * _SUBNORMAL64 * largest * math.prod(sizes.values()) + eta_out
        estimate, ratio = _estimate(result, scale, exact_zeros, bound, rounding, underflow, special)
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
            f"target_relative_error={target:g} is out of reach for {subscripts!r} as a whole ({_dtypes.name(out)}"
            f"): the best a posteriori estimate reached is {best:.3g} (tried: "
            f"{', '.join(f'{m} {e:.3g}' for m, e in tried) or 'none'}); |C| is too small against the expression "
            "on |operands| for this dtype, or underflows it",
            "contraction",
        ) from error
    assert result is not None  # met: the try that met the target rounded its result
    return result


def _magnitudes(t: torch.Tensor) -> torch.Tensor:
    """|t| in float64 (any dtype: bool and integers, unsigned ones among them, whose abs torch lacks)."""
    return t.abs().double() if t.is_complex() else t.double().abs()


_NATIVE = _precision.request("native", (), None)


def _magnitude(
    run: Runner, tensors: Sequence[torch.Tensor], sizes: dict[str, int], rounded: Sequence[float]
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """An upper bound of S (float64) and where S is exactly zero (None where underflow could hide a term);
    ``rounded``: per operand, what its float64 magnitudes may have lost (int64 beyond 2**53)."""
    scaled, exponent, smallest = [], 0, 1.0
    for t in tensors:
        m = _finite(_magnitudes(t))
        top = float(m.max()) if m.numel() else 0.0
        e = math.frexp(top)[1] if top > 0 else 0
        m = torch.ldexp(m, torch.tensor(-e, dtype=torch.float64)) if e else m
        nonzero = m[m > 0]
        smallest *= float(nonzero.min()) if nonzero.numel() else 1.0
        scaled.append(m)
        exponent += e
    s, b64, _ = run(_NATIVE, scaled)
    b64 = b64 or 0.0
    hidden = sum(math.prod(sizes.values()) for _ in tensors) * _SUBNORMAL64 * math.prod(sizes.values())
    up = (s + hidden) / (1 - b64) / math.prod(1 - u for u in rounded)
    # a product of one entry of each operand is at least ``smallest``: above float64's normal range, no term of
    # S underflows, so S^ = 0 means S = 0
    return torch.ldexp(up, torch.tensor(exponent, dtype=torch.float64)), (s == 0) if smallest >= 2.0**-1000 else None


def _finite(m: torch.Tensor) -> torch.Tensor:
    """Magnitudes with inf and nan as 0: what the entries they do not feed are computed from."""
    return torch.nan_to_num(m, nan=0.0, posinf=0.0)


def _special(run: Runner, tensors: Sequence[torch.Tensor]) -> torch.Tensor | None:
    """Entries of the result fed by an inf or nan operand entry (None when no operand has one)."""
    flags = [
        (~torch.isfinite(t)).double()
        if t.is_floating_point() or t.is_complex()
        else torch.zeros(t.shape, dtype=torch.float64, device=t.device)
        for t in tensors
    ]
    if not any(bool(f.any()) for f in flags):
        return None
    ones = [torch.ones_like(f) for f in flags]
    marks = None
    for i, f in enumerate(flags):  # an entry is fed by a special of operand i where sum over products with it > 0
        if bool(f.any()):
            hit = run(_NATIVE, [f if j == i else ones[j] for j in range(len(flags))])[0] > 0
            marks = hit if marks is None else marks | hit
    return marks


def _estimate(
    out: torch.Tensor,
    scale: torch.Tensor,
    exact_zeros: torch.Tensor | None,
    bound: float,
    rounding: float,
    underflow: float,
    special: torch.Tensor | None,
) -> tuple[float, float]:
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
