"""Mode ozaki: Ozaki scheme I on the bf16 engine (exact digit products, a float64 combination on the host)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

from ..bounds import MAX_SLICES, SLICE_BITS, ozaki_default_slices, ozaki_error
from . import _ozaki_f64
from ._common import (
    PrecisionError,
    Tiling,
    _batched,
    _dense,
    _emulated,
    _ldexp,
    _level,
    _NonFinite,
    _operands,
    _round_to,
    _Scaled,
    _single_word,
    _smallest_lower,
    _two_sum,
)
from ._split import _split_fp32

# Devices whose float64 GEMMs run ozaki's level sums (_ozaki_f64); elsewhere the fp32 engine chunks do.
_FLOAT64_GEMMS = ("cpu", "cuda")
# The chunks of exact digit products: a chunk of EXACT_CHUNK digit products (each at most 2**16) sums to an
# integer below 2**24 (exact in fp32).
EXACT_CHUNK = 2 ** (24 - 2 * SLICE_BITS)
_GROUP_ELEMENTS = 2**22  # chunk products materialised at once (memory cap of the chunked passes)


def _chunk_sums(x: torch.Tensor, y: torch.Tensor, chunk: int):
    """fp32 products of [..., M, K] x [..., K, N] over K-chunks of ``chunk`` terms, yielded as [..., G, M, N]
    groups of chunk sums (K is zero-padded to a multiple of ``chunk``)."""
    pad = -x.shape[-1] % chunk
    x = torch.nn.functional.pad(x, (0, pad))
    y = torch.nn.functional.pad(y, (0, 0, 0, pad))
    n = x.shape[-1] // chunk
    x = x.unflatten(-1, (n, chunk)).transpose(-3, -2)
    y = y.unflatten(-2, (n, chunk))
    step = max(1, _GROUP_ELEMENTS // max(1, x.shape[-2] * y.shape[-1]))
    for start in range(0, n, step):
        yield torch.matmul(x[..., start : start + step, :, :], y[..., start : start + step, :, :])


def _sum2(parts: Iterable[torch.Tensor]) -> torch.Tensor:
    """Ogita-Rump-Oishi Sum2: the parts added with TwoSum into a (hi, lo) pair, rounded once at the end;
    error <= u |sum| + gamma_{n-1}**2 sum |part|."""
    hi: torch.Tensor | None = None
    lo: torch.Tensor | None = None
    for part in parts:
        if hi is None:
            hi, lo = part, torch.zeros_like(part)
        else:
            assert lo is not None  # set with hi
            hi, err = _two_sum(hi, part)
            lo = lo + err
    assert hi is not None and lo is not None  # parts is never empty: slices >= 1 gives level 2
    return hi + lo


def _digits(x: torch.Tensor, slices: int) -> list[torch.Tensor]:
    """Signed base-2**SLICE_BITS digits q_t of x in [-1, 1] (x ~ sum_t q_t 2**(-SLICE_BITS t)), as
    integer-valued tensors of x's dtype; every step is exact (in float32 too, for float32 values)."""
    digits = []
    for _ in range(slices):
        x = x * 2.0**SLICE_BITS
        digits.append(torch.round(x))
        x = x - digits[-1]
    return digits


def _needed_slices(scaled: _Scaled, slices: int, magnitude: torch.Tensor | None = None) -> int:
    """``slices``, raised until ozaki_error(s, rho) <= ozaki_error(slices), with rho = K / min |A'||B'| over the
    entries that have a nonzero term (a lower bound from one fast pass, tile by tile, or the one ``magnitude``
    pass given for a plan of one tile): an entry whose lower bound is not positive needs a range no slice count
    covers."""
    smallest = min(
        (_smallest_lower(scaled, *tile, math.ulp(0.0), magnitude) for tile in scaled.plan.tiles()), default=math.inf
    )
    rho = 1.0 if smallest == math.inf else scaled.k / smallest if smallest > 0 else math.inf
    budget = ozaki_error(slices)
    needed = next((s for s in range(slices, MAX_SLICES + 1) if ozaki_error(s, rho) <= budget), None)
    if needed is None:
        raise PrecisionError(
            f"mode 'ozaki' would need more than {MAX_SLICES} slices for operands whose "
            f"rows/columns span a dynamic range of {rho:.3g} (x K); use precision='fp64'"
        )
    return needed


def _ozaki_scaled(
    a: torch.Tensor, b: torch.Tensor, dense: bool = True
) -> tuple[_Scaled, Callable[[torch.Tensor], torch.Tensor]]:
    """ozaki's blocking and scaled operands, in [B, M, K] form (``dense``: laid out by _dense), with the function
    that gives a [B, M, N] result the caller's shape."""
    a3, b3, restore = _batched(a, b)
    if dense:
        a3, b3, restore = _dense(a3, b3, restore)
    batch, m, k = a3.shape
    return _Scaled(a3, b3, Tiling(batch, m, k, b3.shape[-1]), ranges=False), restore


def ozaki_slices(a: torch.Tensor, b: torch.Tensor, slices: int | None = None) -> int:
    """The slice count ``ozaki`` uses on these finite real operands: ``slices`` (default: the dtype's), raised
    where the data's row/column dynamic range needs more to keep the published bound."""
    a, b = _operands(a, b, "ozaki")
    s = ozaki_default_slices(a.dtype) if slices is None else _check_slices(slices)
    if 0 in (*a.shape[-2:], b.shape[-1]):
        return s
    try:
        return _needed_slices(_ozaki_scaled(a, b, dense=a.device.type in _FLOAT64_GEMMS)[0], s)
    except _NonFinite:  # ozaki runs on the finite entries (see _emulated)
        finite_a, finite_b = (torch.where(torch.isfinite(x), x, 0) for x in (a, b))
        return ozaki_slices(finite_a, finite_b, s)


def _check_slices(slices: object) -> int:
    if not isinstance(slices, int) or isinstance(slices, bool):
        raise TypeError(f"kernels: ozaki slices must be an int, got {type(slices).__name__}")
    if not 1 <= slices <= MAX_SLICES:
        raise ValueError(f"kernels: ozaki slices must be in 1..{MAX_SLICES}, got {slices}")
    return slices


def _exact_level(a_digits: list[torch.Tensor], b_digits: list[torch.Tensor], level: int) -> torch.Tensor:
    """sum over i + j == level of the digit products, exactly: fp32 engine sums over EXACT_CHUNK-term chunks
    (integers below 2**24), chunks added in float64 (integers below 2**53: exact, so bit-identical to the
    device's exact int32 or TwoSum accumulation of the same chunk sums)."""
    a, b = _level(a_digits, b_digits, level)
    return sum(group.double().sum(-3) for group in _chunk_sums(a, b, EXACT_CHUNK))


def exact_levels(a_digits: list[torch.Tensor], b_digits: list[torch.Tensor]) -> dict[int, torch.Tensor]:
    """Every level s+1 .. 2 of the digit products, exactly (float64): what the NKI kernel's levels return too."""
    return {level: _exact_level(a_digits, b_digits, level) for level in range(len(a_digits) + 1, 1, -1)}


def _tile_levels(scaled: _Scaled, bs, ms, ns, slices: int) -> dict[int, torch.Tensor]:
    """One output tile's exact level sums (float64), K-block by K-block, from the fp32 engine chunks of
    ``exact_levels`` (devices without float64 GEMMs; exact, so the same as _ozaki_f64's)."""
    sums: dict[int, torch.Tensor] = {}
    for ks in scaled.plan.depth:
        block = exact_levels(
            [d.to(torch.bfloat16) for d in _digits(scaled.block_a(bs, ms, ks), slices)],  # exact
            [d.to(torch.bfloat16) for d in _digits(scaled.block_b(bs, ks, ns), slices)],
        )
        for level, total in block.items():
            sums[level] = total if level not in sums else sums[level].add_(total)  # exact: below 2**53
    return sums


def _ozaki_combine_levels(
    sums: dict[int, torch.Tensor], slices: int, scale: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """The exact level sums combined by Sum2 in float64, scaled back by 2**(e_i + f_j) and rounded to ``dtype``."""
    total = _sum2(sums[level] * 2.0 ** (-SLICE_BITS * level) for level in range(slices + 1, 1, -1))
    return _round_to(_ldexp(total, scale), dtype)


@_emulated
def ozaki(a: torch.Tensor, b: torch.Tensor, *, slices: int | None = None, levels=exact_levels) -> torch.Tensor:
    """Ozaki scheme I on the bf16 engine: rows of A and columns of B scaled by powers of two, cut into signed
    8-bit digit slices, digit pairs with i + j <= s + 1 multiplied exactly, the exact level sums combined by Sum2
    in float64 on the host: s(s+1)/2 passes, plus one fast pass checking the dynamic range. ``levels(a_digits,
    b_digits)`` computes the exact level sums of the whole operands' digits (the kernel layer's NKI route passes
    the kernel); by default they are computed tile by tile and K-block by K-block: in float64 GEMMs where the
    device has them (_ozaki_f64), else in fp32 engine chunks (exact either way, so bit-identical)."""
    if _single_word(a, "ozaki"):
        return _split_fp32(a, b, 1, "ozaki")
    s = ozaki_default_slices(a.dtype) if slices is None else _check_slices(slices)
    host = levels is exact_levels and a.device.type in _FLOAT64_GEMMS
    scaled, restore = _ozaki_scaled(a, b, dense=host)
    pair = _ozaki_f64.whole_pair(scaled) if host and _ozaki_f64.one_block(scaled.plan) else None
    s = _needed_slices(scaled, s, None if pair is None else _ozaki_f64.magnitude(pair, scaled))
    if levels is not exact_levels:
        a_scaled, b_scaled = scaled.whole()
        sums = levels(
            [d.to(torch.bfloat16) for d in _digits(restore(a_scaled), s)],  # exact
            [d.to(torch.bfloat16) for d in _digits(restore(b_scaled), s)],
        )
        sums = {level: total.reshape(a_scaled.shape[0], a_scaled.shape[1], -1) for level, total in sums.items()}
        return restore(_ozaki_combine_levels(sums, s, scaled.e + scaled.f, a.dtype))
    if host:
        return restore(_ozaki_f64.product(scaled, s, a.dtype, pair))
    out = a.new_empty(scaled.a.shape[0], scaled.a.shape[1], scaled.b.shape[2])
    for bs, ms, ns in scaled.plan.tiles():
        sums = _tile_levels(scaled, bs, ms, ns, s)
        out[bs, ms, ns] = _ozaki_combine_levels(sums, s, scaled.e[bs, ms] + scaled.f[bs, :, ns], a.dtype)
    return restore(out)
