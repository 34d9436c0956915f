"""A posteriori checks for ``target_relative_error=``: run one binary contraction, bound the error of every
entry relative to |C|, and rerun under the next mode (``next_mode``: the cheapest on the device with a smaller
bound) until the bound meets the target.

A mode's published bound b (units of |A||B|, output rounding included) gives |C^ - C| <= b S, S = |A||B|. A real
float32 result of an emulated mode or fp64 is that mode's result on the same values as float64, rounded once to
float32 (splits, digits and accumulations do not depend on the storage dtype;
tests/contraction/test_precision_paths.py checks it bit for bit), so there the error is at most b64 S + u |C64| <=
b64 S + u/(1-u) |C^| with the mode's float64 bound b64: the output rounding counts relative to |C|, not |A||B|.
native float32 accumulates in float32, so its published bound is used as it is.

One extra fast pass through the kernel layer computes S^ = |A| @ |B|, after scaling the rows of |A| and the
columns of |B| by powers of two (so it covers the whole float64 range); its own error is at most b_fast S, so
S <= S^ / (1 - b_fast). With E the resulting bound on |C^ - C|, r = E / |C^| and |C| >= |C^| - E, each entry's
error relative to the exact |C| is at most r / (1 - r): infinite where r >= 1, where C^ = 0 < S, and where C^
or S^ is not finite although the entry's inputs are. Entries fed by an inf or nan input are left out: every
mode gives native arithmetic's inf or nan there. The pass raises tiny nonzero magnitudes to 2**-44 (still an
upper bound), so it never underflows and an S^ of zero is an exact zero. Every published mode bound holds for
any finite operands (the split modes scale by powers of two and certify their underflow, or raise), so the
estimate never vouches for arithmetic that left its range. K = 0 gives exact zeros, with nothing to check.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .. import _dtypes, _precision, kernels
from ..kernels import reference
from .plan import Plan

__all__ = ["run"]


def run(plan: Plan, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The kernel call of ``plan`` on operands in kernel layout, checked against the plan's relative target
    and rerun one rung up the ladder while the estimate misses; the modes tried are recorded (a ``Check``)."""
    start = plan.resolved
    # the runner sends only a checked plan here: a kernel step whose mode carries the relative target
    assert plan.kernel is not None and start is not None and start.target_relative_error is not None
    kernel = getattr(kernels, plan.kernel)
    K, target = plan.bmkn[2], start.target_relative_error
    if K == 0 or a.numel() == 0 or b.numel() == 0:  # an empty sum, or an empty result: exact, nothing to check
        _precision.record(_precision.Check(plan.subscripts, K, target, ((start.label, 0.0),)))
        return kernel(a, b, start.mode, **start.kwargs)
    scale, zero = _magnitude(kernel, a, b, K)
    special = _special(a, b)
    resolved: _precision.Resolved | None = start
    tried, error = [], None
    while resolved is not None:
        try:
            out = kernel(a, b, resolved.mode, **resolved.kwargs)
            estimate = _estimate(out, scale, zero, *_terms(resolved, plan.dtype, K), special)
        except _precision.PrecisionError as e:  # the mode cannot vouch for these operands (ozaki's slices): a miss
            error, estimate = e, math.inf
        tried.append((resolved.label, estimate))
        if estimate <= target:
            break
        resolved = _escalate(resolved, plan.dtype, K, a.device, plan.bmkn)
    check = _precision.Check(plan.subscripts, K, target, tuple(tried))
    _precision.record(check)
    if not check.met:
        label, best = min(tried, key=lambda t: t[1])
        steps = ", ".join(f"{m} {e:.3g}" for m, e in tried)
        raise _precision.PrecisionError(
            f"target_relative_error={target:g} is out of reach for {plan.subscripts!r} (K={K}, "
            f"{_dtypes.name(plan.dtype)}): the best a posteriori estimate reached is {best:.3g}, with {label} "
            f"(tried: {steps}); |C| is too small "
            "against |A||B| for this dtype, or underflows it",
            "contraction",
        ) from error
    return out


def _terms(resolved: _precision.Resolved, dtype: torch.dtype, K: int) -> tuple[float, float, float]:
    """(b, e, t) with |C^ - C| <= b |A||B| + e |C^| + t entrywise: the float64 bound and the output rounding for
    a float32 result (see the module docstring), else the published bound and 0; t, what gradual underflow of
    the result and of float64 products can cost beyond the bounds (at most K + 1 roundings to a subnormal,
    half the smallest subnormal each, doubled for the two parts of a complex entry)."""
    real = dtype.to_real() if dtype.is_complex else dtype
    underflow = (K + 1) * torch.finfo(real).smallest_normal * torch.finfo(real).eps  # (K + 1) * 2 * eta
    if dtype is not torch.float32 or resolved.mode == "native":  # native float32 sums in float32: no refinement
        # a checked mode has a bound: the check starts at one that publishes it (``_checked``), escalates to others
        assert resolved.bound is not None
        return resolved.bound, 0.0, underflow
    u = _precision.U_FP32
    params: dict[str, Any] = resolved.kwargs  # the mode's own parameters (slices, generator), never ``ranks``
    bound = _precision.error_bound(resolved.mode, torch.float64, K, **params)
    assert bound is not None  # every mode publishes a float64 bound
    return bound, u / (1 - u), underflow


def _escalate(
    resolved: _precision.Resolved, dtype: torch.dtype, K: int, device: torch.device, bmkn: tuple[int, int, int, int]
) -> _precision.Resolved | None:
    """The next mode (``next_mode``, in cost order on ``device``) that at least halves the bound the estimate
    uses: modes that improve it less (float32 ozaki past its output rounding, say) barely move the estimate and
    are skipped."""
    limit = _terms(resolved, dtype, K)[0] / 2
    nxt = _precision.next_mode(resolved, dtype, K, device=device, bmkn=bmkn)
    while nxt is not None and _terms(nxt, dtype, K)[0] > limit:
        nxt = _precision.next_mode(nxt, dtype, K, device=device, bmkn=bmkn)
    return nxt


# Nonzero magnitudes below this are raised to it before the fast pass: an upper bound of |A'| stays one, and
# every nonzero product term is then at least 2**-88, so the pass underflows nowhere (its zeros are exact).
_FLOOR = 2.0**-44


def _magnitude(kernel, a: torch.Tensor, b: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """An upper bound of |A||B| per entry (float64) from one fast pass, divided by (1 - its own bound), and
    where the entries are exact zeros. The rows of |A| and columns of |B| are scaled by powers of two to at
    most 1 first (exact; ozaki's scaling) and tiny nonzero magnitudes raised to _FLOOR, so neither range nor
    underflow limits the pass."""
    a_scaled, e, b_scaled, f = reference._common._scaled(a.abs(), b.abs())
    a_up = torch.where(a_scaled != 0, a_scaled.clamp(min=_FLOOR), 0.0)
    b_up = torch.where(b_scaled != 0, b_scaled.clamp(min=_FLOOR), 0.0)
    fast = kernel(a_up, b_up, "fast")
    bound = _precision.error_bound("fast", torch.float64, K)
    assert bound is not None  # fast publishes a float64 bound
    return reference._common._ldexp(fast / (1 - bound), e + f), fast == 0


def _special(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor | None:
    """Entries with an inf or nan among their inputs (None when no input has one)."""
    rows, cols = torch.isfinite(a).all(-1), torch.isfinite(b).all(-2)
    if bool(rows.all()) and bool(cols.all()):
        return None
    return ~(rows.unsqueeze(-1) & cols.unsqueeze(-2))


def _estimate(
    out: torch.Tensor,
    scale: torch.Tensor,
    zero: torch.Tensor,
    bound: float,
    rounding: float,
    underflow: float,
    special: torch.Tensor | None,
) -> float:
    """max over entries of r / (1 - r), r = (bound * scale + underflow) / |out| + rounding (see the module
    docstring)."""
    c = out.abs().double()
    trusted = torch.isfinite(c) & torch.isfinite(scale) & (scale > 0)
    r = torch.where(trusted, (bound * scale + underflow) / c + rounding, math.inf)  # C^ = 0 < S gives inf as well
    r = torch.where(r < 1, r / (1 - r), math.inf)
    r = torch.where(zero & (c == 0), 0.0, r)
    if special is not None:
        r = torch.where(special, 0.0, r)
    return r.max().item() if r.numel() else 0.0
