"""The error-bound mathematics of the precision modes, in one place: the numbers each emulated mode is defined by
that enter its bound, the componentwise a priori bounds themselves (in units of |A||B|, for K contracted terms,
output rounding included), and the bounds the references certify on the fly (ozaki's slice count, the split
modes' underflow). The precision registry (``trn_backend._precision``) publishes these bounds; the references
(``reference/``) use the same functions, so a mode and its bound cannot drift apart.

Notation: u is a unit roundoff, gamma_n = n u / (1 - n u) (Higham); derivations and measurements in
docs/precision.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

U_BF16 = 2.0**-8
U_FP32 = 2.0**-24
U_FP64 = 2.0**-53
# Ozaki-I digits: the first is in [-2**8, 2**8], later ones in [-2**7, 2**7], so every digit is exact in bf16.
SLICE_BITS = 8
# bf16x6 accumulates the products of at most this many K per PSUM chunk, adds BF16X6_GROUP chunk sums in fp32
# and combines those with TwoSum: its error stops growing with K, which keeps it at least as accurate as an fp32
# SGEMM (plain PSUM accumulation is not), and the TwoSums cost the vector engine once per group, not per chunk.
BF16X6_CHUNK = 256
BF16X6_GROUP = 4
# Ozaki's error is relative to 2**e_i * 2**f_j (row and column scales). Its published bound assumes rho, the
# ratio K * 2**e_i * 2**f_j / (|A||B|)_ij, is at most OZAKI_RANGE; one fast pass over |A|, |B| measures rho
# and the kernel adds slices where the data needs them, so the bound holds for any input (barring underflow).
OZAKI_RANGE = 64.0
DIGIT_GROWTH = (2 + 1 / (1 - 2.0**-SLICE_BITS)) ** 2
MAX_SLICES = 16
# Split modes work on rows of A and columns of B scaled by powers of two to magnitudes at most 1 (exact), so
# neither bf16's range nor fp32 overflow limits them. Only gradual underflow remains: a bf16 word or an fp32
# product below the normal range loses at most UNDERFLOW_TERM in absolute terms (bf16 subnormal words of both
# operands and up to three dropped word pairs, 2**-131 together, with 8x to spare). Each call certifies that
# this costs at most UNDERFLOW_ALLOWANCE of |A||B| per entry (it is part of every split bound), or raises.
UNDERFLOW_TERM = 2.0**-128
UNDERFLOW_ALLOWANCE = 2.0**-40


def gamma(n: int, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n floating-point roundings."""
    return n * u / (1 - n * u) if n > 0 else 0.0


def unit(dtype: torch.dtype) -> float:
    """The unit roundoff of a real floating dtype."""
    return torch.finfo(dtype).eps / 2


def bits(dtype: torch.dtype) -> int:
    """The significand bits of a real floating dtype."""
    return round(1 - math.log2(torch.finfo(dtype).eps))


def rounded(pre: float, dtype: torch.dtype, work_unit: float) -> float:
    """Bound ``pre`` of a result computed with unit roundoff ``work_unit``, plus its rounding to ``dtype``."""
    u = unit(dtype)
    return pre + u * (1 + pre) if u > work_unit else pre


# --- the bf16 split modes (fast, sr, dd, bf16x6) ---


def split_pre(words: int, dtype: torch.dtype, K: int, chunk: int | None = None, group: int = 1) -> float:
    """The fp32 engine result of a ``words``-word bf16 split: representation error of the kept word products,
    plus the fp32 accumulation (of all K at once, or per ``chunk`` of K with ``group`` chunk sums added in fp32
    and those combined by Sum2), plus what gradual underflow may cost (each call certifies it stays within
    UNDERFLOW_ALLOWANCE, or raises)."""
    n = 1 if bits(dtype) <= 8 else words
    pre = split_representation(n, dtype)
    if chunk is None:
        error, total = accumulation(n, K)
        return pre + error + UNDERFLOW_ALLOWANCE
    error, total = accumulation(n, min(K, chunk))
    chunks = math.ceil(K / chunk)
    grouped = gamma(min(group, chunks) - 1, U_FP32) * total  # chunk sums added in fp32, ``group`` at a time
    # Sum2 of the group sums adds u |s| + gamma_{m-1}^2 sum |p|
    sum2 = (U_FP32 + gamma(math.ceil(chunks / group) - 1, U_FP32) ** 2) * total * (1 + grouped)
    return pre + error + grouped + sum2 + UNDERFLOW_ALLOWANCE


def split_representation(n: int, dtype: torch.dtype) -> float:
    """What an n-word split of both operands loses before any addition, in units of |A||B|: the words' remainder
    and the dropped word products (i + j > n + 1)."""
    u, grow = U_BF16, (1 + U_BF16) ** 2  # |w_t| <= (1 + u) u**(t-1) |x|
    eps = u**n if 8 * n < bits(dtype) else 0.0  # what n words leave of x; 0 when they hold all its bits
    dropped = sum(grow * u ** (i + j - 2) for i in range(1, n + 1) for j in range(1, n + 1) if i + j > n + 1)
    return eps + (1 + eps) * eps + dropped


def accumulation(n: int, K: int) -> tuple[float, float]:
    """(error, magnitude) in units of |A||B| of accumulating the kept word products over K in fp32, levels of
    products smallest first (level l holds (l - 1) K products of size up to grow u**(l-2)), in any order within
    a level, and in any grouping of sequential partial sums: each product is part of at most as many roundings
    as there are products from its level's first to the last (one fewer for the first level). This covers the
    reference (a pass per level, levels added smallest first) and the NKI kernels (one PSUM accumulation per K
    block, levels smallest first, K-block partials added in SBUF)."""
    u, grow = U_BF16, (1 + U_BF16) ** 2
    levels = [((level - 1) * K, (level - 1) * grow * u ** (level - 2)) for level in range(n + 1, 1, -1)]
    remaining = sum(terms for terms, _ in levels)
    error = 0.0
    for i, (terms, size) in enumerate(levels):
        error += gamma(remaining - (1 if i == 0 else 0), U_FP32) * size
        remaining -= terms
    return error, sum(size for _, size in levels) + error


def small_terms_are_safe(smallest_a: float, smallest_b: float) -> bool:
    """Whether every nonzero product term |a'| |b'| (scaled operands whose smallest nonzero magnitudes are
    these) is at least UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE: underflow then costs at most UNDERFLOW_ALLOWANCE
    of each term, hence of |A||B| (zero terms cost nothing)."""
    return smallest_a * smallest_b >= UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE


def underflow_floor(k: int) -> float:
    """The smallest |A'||B'| entry (scaled operands, K = ``k``) whose underflow stays within UNDERFLOW_ALLOWANCE:
    each of its at most K terms loses at most UNDERFLOW_TERM."""
    return k * UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE


def magnitude_pass_growth(k: int) -> float:
    """How much larger than |A'||B'| one fast pass over |A'|, |B'| can come out (before underflow): both inputs
    rounded to bf16 (relative 2**-8 each), summed in fp32 over K (gamma_{K-1} in any order)."""
    return (1 + 2.0**-8) ** 2 * (1 + gamma(k - 1, U_FP32))


# --- ozaki ---


def _ozaki_truncation(slices: int) -> float:
    """Digit truncation plus the dropped digit pairs (i + j > slices + 1), in units of K 2**e_i 2**f_j."""
    t = 2.0 ** (-SLICE_BITS * slices)
    return t * (1 + t / 4 + (slices - 1) / (4 * (1 - 2.0**-SLICE_BITS)))


def _ozaki_combine(slices: int, truncation: float) -> float:
    """Sum2 of the slices exact level sums in float64, in units of |A||B|: u |C^| + gamma_{s-1}**2 sum |level|
    (the digits of x sum to at most sqrt(DIGIT_GROWTH) |x| in magnitude)."""
    return U_FP64 * (1 + truncation) + gamma(slices - 1, U_FP64) ** 2 * DIGIT_GROWTH


def ozaki_error(slices: int, rho: float = OZAKI_RANGE) -> float:
    """Ozaki-I error before the output rounding, in units of |A||B|, for data of dynamic range ``rho`` (where
    K 2**e_i 2**f_j = rho |A||B|)."""
    truncation = rho * _ozaki_truncation(slices)
    return truncation + _ozaki_combine(slices, truncation)


def ozaki_default_slices(dtype: torch.dtype) -> int:
    """Fewest slices whose truncation error (for data of range OZAKI_RANGE) is below the unit roundoff of
    ``dtype``: the dtype's own accuracy (float32: 4, float64: 8)."""
    u = torch.finfo(dtype).eps / 2
    return next(s for s in range(1, MAX_SLICES + 1) if OZAKI_RANGE * _ozaki_truncation(s) <= max(u, U_FP64))


# --- each mode's bound on a real dtype: bound(dtype, K, **params), K >= 1 ---


def native_bound(dtype: torch.dtype, K: int) -> float | None:
    # bf16/fp16 accumulation is the device's own business: no bound is published for it
    return gamma(K, unit(dtype)) if dtype in (torch.float32, torch.float64) else None


def fast_bound(dtype: torch.dtype, K: int) -> float:
    return rounded(split_pre(1, dtype, K), dtype, U_FP32)


def sr_bound(dtype: torch.dtype, K: int) -> float:
    pre = split_pre(1, dtype, K)
    u = unit(dtype)
    return pre + 2 * u * (1 + pre) if u > U_FP32 else pre  # a stochastic rounding moves by less than one ulp


def dd_bound(dtype: torch.dtype, K: int) -> float:
    return rounded(split_pre(2, dtype, K), dtype, U_FP32)


def bf16x6_bound(dtype: torch.dtype, K: int) -> float:
    return rounded(split_pre(3, dtype, K, BF16X6_CHUNK, BF16X6_GROUP), dtype, U_FP32)


def ozaki_bound(dtype: torch.dtype, K: int, slices: int | None = None) -> float:
    if bits(dtype) <= 8:
        return rounded(split_pre(1, dtype, K), dtype, U_FP32)  # bf16 operands run as fast
    s = ozaki_default_slices(dtype) if slices is None else slices
    return rounded(ozaki_error(s), dtype, U_FP64)


def fp64_bound(dtype: torch.dtype, K: int) -> float:
    return rounded(gamma(K, U_FP64), dtype, U_FP64)


# --- complex operands, reduced-precision GEMMs, partial sums, whole expressions ---


def complex_native(real: torch.dtype, K: int) -> float:
    """native on complex operands of real dtype ``real``: Higham's complex inner product bound."""
    return math.sqrt(2) * gamma(K + 2, unit(real))


def complex_fp64(real: torch.dtype, K: int) -> float:
    """fp64 on complex operands: Higham's complex inner product bound in float64, then the rounding to the
    output dtype."""
    return rounded(math.sqrt(2) * gamma(K + 2, U_FP64), real, U_FP64)


def complex_of_real(b: float, real: torch.dtype) -> float:
    """An emulated mode of real bound ``b`` on complex operands: four real products combined in the real dtype,
    so |Re| and |Im| errors are each at most b + u (1 + b) of |A||B|."""
    u = unit(real)
    return math.sqrt(2) * (b + u * (1 + b))


def reduced_native(u_in: float, K: int, is_complex: bool) -> float:
    """native on float32/complex64 when the device's GEMM rounds its inputs with unit ``u_in``: each product off
    by (1 + u_in)**2 - 1 (exact in fp32: at most 2 x 11 significand bits), summed in fp32 (gamma_K, of the
    rounded products); complex as native's complex bound (sqrt(2), K + 2 real roundings)."""
    grow = (1 + u_in) ** 2
    if is_complex:
        return math.sqrt(2) * (grow - 1 + gamma(K + 2, U_FP32) * grow)
    return grow - 1 + gamma(K, U_FP32) * grow


def over_ranks(bound: float, ranks: int, u_held: float, u_out: float, is_complex: bool) -> float:
    """A step of bound ``bound`` whose K is partitioned over ``ranks`` ranks, the R partial products summed with
    unit ``u_held`` (gamma_{R-1} of their magnitudes, at most (1 + b) |A||B|) and rounded once more to the output
    (unit ``u_out``); sqrt(2) more for complex parts."""
    parts = math.sqrt(2) if is_complex else 1.0
    return bound + parts * gamma(ranks - 1, u_held) * (1 + bound) * (1 + u_out)  # (1 + u_out): a final rounding


def compose(bounds: Iterable[float | None]) -> float | None:
    """The bound of a whole expression, in units of its absolute value (the same expression on |operands|), from
    the bounds of its rounding steps (each in units of that step's own absolute value): prod(1 + b_i) - 1. A
    step's error grows by (1 + b) the magnitudes later steps work on, whatever the tree. None if any is None."""
    total = 1.0
    for b in bounds:
        if b is None:
            return None
        total *= 1.0 + b
    return total - 1.0


def share(target: float, roundings: int) -> float:
    """The bound each of ``roundings`` steps must meet so that their composition meets ``target``:
    (1 + target)**(1/n) - 1, rounded down so that composing n of them never exceeds ``target``."""
    if roundings <= 1:
        return target
    return math.expm1(math.log1p(target) / roundings) * (1 - 4 * U_FP64 * roundings)


def sum_bound(dtype: torch.dtype, terms: int) -> float:
    """Adding ``terms`` partial results in ``dtype`` (a slice sum, a sum over ranks): gamma_{n-1}(u) of their
    magnitudes, sqrt(2) more for complex parts; 0 for exact (integer, bool) dtypes."""
    if not (dtype.is_floating_point or dtype.is_complex) or terms <= 1:
        return 0.0
    real = dtype.to_real() if dtype.is_complex else dtype
    return (math.sqrt(2) if dtype.is_complex else 1.0) * gamma(terms - 1, unit(real))


def product_bound(dtype: torch.dtype, stochastic: bool = False) -> float:
    """One product per entry, rounded once to ``dtype`` (a step with nothing to contract), in units of |a||b|: u,
    twice that under a stochastic rounding (which moves by less than one ulp); for complex operands the textbook
    product's sqrt(5) u (Brent, Percival and Zimmermann 2007; 2u with a fused multiply-add), rounded in each part.
    0 for exact (integer, bool) dtypes."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return 0.0
    real = dtype.to_real() if dtype.is_complex else dtype
    return unit(real) * (2 if stochastic else 1) * (math.sqrt(5) if dtype.is_complex else 1)


def cast_bound(source: torch.dtype, target: torch.dtype) -> float | None:
    """What casting ``source`` data to ``target`` costs each entry, relative to it: 0 where every value of
    ``source`` is a value of ``target`` (bool to anything, float32 to float64, int32 to float64, ...), the unit
    roundoff of ``target`` where values round to it (int64 to float64, float64 to float32, real parts of
    complex), None where the cast is no rounding at all (complex to real drops the imaginary part, floating to
    integer truncates). Integers to a narrower integer wrap, as integer arithmetic does: 0. A rounding cast may
    also leave the target's range (float64 to float32, int32 to float16): the caller checks the data where a
    target is promised."""
    if source == target or source == torch.bool:
        return 0.0
    if source.is_complex and not target.is_complex:
        return None
    if not (target.is_floating_point or target.is_complex):
        # integers to integers wrap, as all integer arithmetic does (modular): exact in that arithmetic
        return None if source.is_floating_point or source.is_complex else 0.0
    t = target.to_real() if target.is_complex else target
    s = source.to_real() if source.is_complex else source
    if s == t:
        return 0.0
    if not s.is_floating_point:  # integers: exact while every magnitude fits the significand
        info = torch.iinfo(s)
        largest = max(-info.min, info.max)
        fits = largest <= 2 ** bits(t) and largest <= torch.finfo(t).max
        return 0.0 if fits else unit(t)
    wider = (
        bits(t) >= bits(s)
        and torch.finfo(t).max >= torch.finfo(s).max
        and torch.finfo(t).smallest_normal <= torch.finfo(s).smallest_normal
    )
    return 0.0 if wider else unit(t)
