"""ozaki's exact level sums and their Sum2 where the device has float64 GEMMs (the CPU, CUDA): the same bits as the
level sums of ``exact_levels`` combined by ``_sum2`` (``_ozaki``), in fewer and larger passes.

Digits (``_digits``): A' = sum_i q_i 2**(-8 i), B' = sum_j r_j 2**(-8 j), |q_1|, |r_1| <= 2**8, later ones <= 2**7,
so per K index a level's digit products (i + j = l) sum to at most c_l = 2**16 (l = 2), (l + 1) 2**14 (l > 2).
Counted in units of 2**(-8 (s + 1)), level l weighs 2**(8 (s + 1 - l)) and every term is an integer. The levels
from ``start`` to s + 1 (the prefix) sum to at most sum_l K c_l 2**(8 (s + 1 - l)) in those units; where that is
below 2**53, every partial sum of their terms is an exact float64 integer, whatever the order. The prefix is then
s float64 GEMMs, sum_i q_i Band_i with Band_i = sum_j r_j 2**(8 (s + 1 - i - j)) over the j of the prefix's pairs
with i (a band of B's digits, itself an exact integer), accumulated in one float64 sum: s(s+1)/2 digit-pair passes
in s. Sum2 adds those levels without a rounding error: after them its (hi, lo) pair is (prefix, 0). Each level
below ``start`` is its pairs' GEMMs (its integer sum is far below 2**53) and one TwoSum step, as in Sum2. Scaling
by a power of two changes no rounding of any of it, as long as every count stays in float64's normal range.
float32 operands take s = 4: their prefix is all of it (start = 2) up to K = 8159.

The larger operand is cut into tiles (the product is computed as (B^T A^T)^T where B is the larger); the smaller
one's digits are made per tile and kept, the larger one's streamed into bands (_block_sums). Blocks and tiles are
1/share of the plan's budget, since the digits, bands and the tile's level sums take several float64 copies.
"""

from __future__ import annotations

import math

import torch

from ..bounds import SLICE_BITS
from ._common import _ldexp, _Plan, _round_to, _Scaled, _two_sum

_RADIX = 2.0**SLICE_BITS


def _level_bound(level: int) -> int:
    """The largest |sum over i + j == level of q_i r_j| per K index: 2**16 at level 2, else (level + 1) 2**14."""
    return 2**16 if level == 2 else (level + 1) * 2**14


def prefix_start(slices: int, k: int) -> int:
    """The lowest level whose levels up to slices + 1 sum exactly in float64 over K (see the module docstring)."""
    total = 0
    for level in range(slices + 1, 1, -1):
        total += k * _level_bound(level) * 2 ** (SLICE_BITS * (slices + 1 - level))
        if total >= 2**53:
            return level + 1
    return 2


def _block_sums(a: torch.Tensor, b: torch.Tensor, slices: int, start: int, alpha: float, sums: dict) -> None:
    """Add one K-block pair's prefix (``sums["prefix"]``) and levels below ``start`` (``sums[level]``), counted in
    ``alpha``s, to ``sums``: a = A' block [b, m, k], b = B' block [b, k, n] (float64, both overwritten; B's the
    smaller). B's digits r_1 .. r_s are made first and kept; A's follow one at a time. Band_j over A's digits i of
    the prefix's pairs with r_j is complete with digit i = s + 1 - j: its GEMM runs at once and the band is
    dropped, and so is r_j unless a level below the prefix needs it (as A's digits below start - 1 are kept for
    those levels). The bands reaching down to i = 1 are the nested truncations, one tensor updated in place."""
    kept = [None]
    for j in range(1, slices + 1):  # exact, as _digits
        kept.append(torch.round(b.mul_(_RADIX)))
        if j < slices:
            b.sub_(kept[j])
    low = start - 2
    raw, scratch, truncation, windows = [None], None, None, {}
    for i in range(1, slices + 1):
        a.mul_(_RADIX)
        digit = torch.round(a) if i <= low or i == 1 else torch.round(a, out=scratch)
        scratch = None if i <= low or i == 1 else digit
        if i < slices:
            a.sub_(digit)
        if i <= low:
            raw.append(digit)
        j = slices + 1 - i
        if j >= start - 1:  # Band_j = 2**8 Band_{j+1} + q_i, down to q_1
            if i == 1:
                truncation = digit.clone() if low else digit
            else:
                torch.add(digit, truncation, alpha=_RADIX, out=truncation)
            sums["prefix"] = _mac(sums.get("prefix"), truncation, kept[j], alpha)
        for w in range(max(1, start - i), min(low, slices + 1 - i) + 1):  # windows q_{start-w} .. q_{s+1-w}
            windows[w] = digit.clone() if i == start - w else torch.add(digit, windows[w], alpha=_RADIX,
                                                                        out=windows[w])
            if i == slices + 1 - w:
                sums["prefix"] = _mac(sums.get("prefix"), windows.pop(w), kept[w], alpha)
        if j > low:
            kept[j] = None
    for level in range(start - 1, 1, -1):
        for j in range(1, level):
            sums[level] = _mac(sums.get(level), raw[level - j], kept[j],
                               alpha * 2.0 ** (SLICE_BITS * (slices + 1 - level)))


def _scaled_pair(scaled: _Scaled, bs, ms, ns, ks) -> torch.Tensor:
    """[A' block | B' block], flat, float64: the scaled values of ``_Scaled`` (exact)."""
    a, b = scaled.a[bs, ms, ks], scaled.b[bs, ks, ns]
    x = torch.empty(a.numel() + b.numel(), dtype=torch.float64, device=a.device)
    for value, e, e_range, part in ((a, scaled.e[bs, ms], scaled.e_range, x[:a.numel()]),
                                    (b, scaled.f[bs, :, ns], scaled.f_range, x[a.numel():])):
        if max(-e_range[0], e_range[1]) <= 1022:  # _ldexp's one factor
            torch.mul(value, torch.exp2(-e.double()), out=part.view(value.shape))
        else:
            part.view(value.shape).copy_(_ldexp(value.double(), -e))
    return x


_EVERYTHING = slice(None)


def one_block(plan: _Plan) -> bool:
    """Whether the plan has one tile and one K-block."""
    return len(plan.batches) == len(plan.rows) == len(plan.cols) == len(plan.depth) == 1


def whole_pair(scaled: _Scaled) -> torch.Tensor:
    """[A' | B'] of the whole operands (see _scaled_pair)."""
    return _scaled_pair(scaled, _EVERYTHING, _EVERYTHING, _EVERYTHING, _EVERYTHING)


def magnitude(pair: torch.Tensor, scaled: _Scaled) -> torch.Tensor:
    """The fast pass of _magnitude on the whole operands, from their scaled pair."""
    na = scaled.a.numel()
    magnitudes = pair.float().abs_()
    return torch.bmm(magnitudes[:na].view(scaled.a.shape), magnitudes[na:].view(scaled.b.shape))


def _mac(acc: torch.Tensor | None, x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """acc + alpha x @ y (alpha a power of two: exact on these integers)."""
    if acc is None:
        return torch.baddbmm(x.new_empty(x.shape[0], x.shape[1], y.shape[2]), x, y, beta=0, alpha=alpha)
    return acc.baddbmm_(x, y, alpha=alpha)


def _tile_total(scaled: _Scaled, plan: _Plan, bs, ms, ns, slices: int, start: int, unit: float,
                pair: torch.Tensor | None = None) -> torch.Tensor:
    """One output tile's Sum2 of the exact level sums (float64), the integer sums of digit products counted in
    ``unit``s (a power of two in place of 2**(-8 (s + 1)); no count leaves float64's normal range). ``pair``: the
    scaled pair of a plan's one block, made already."""
    sums: dict = {}
    for ks in plan.depth:
        x = _scaled_pair(scaled, bs, ms, ns, ks) if pair is None else pair
        pair = None
        a_shape = (bs.stop - bs.start, ms.stop - ms.start, ks.stop - ks.start)
        b_shape = (a_shape[0], a_shape[2], ns.stop - ns.start)
        na = a_shape[0] * a_shape[1] * a_shape[2]
        a, b = x[:na].view(a_shape), x[na:].view(b_shape)
        del x
        _block_sums(a, b, slices, start, unit, sums)
        del a, b  # before the next block's are made
    prefix = sums["prefix"]
    if start == 2:
        return prefix
    hi, lo = prefix, torch.zeros_like(prefix)
    for level in range(start - 1, 1, -1):
        hi, err = _two_sum(hi, sums[level])
        lo.add_(err)
    return hi + lo


def product(scaled: _Scaled, slices: int, dtype: torch.dtype, pair: torch.Tensor | None = None) -> torch.Tensor:
    """ozaki's result on the scaled operands of ``scaled`` ([B, M, N], rounded to ``dtype``); ``pair``: their
    whole scaled pair, made already (used where the plan has one block)."""
    result = out = scaled.a.new_empty(scaled.a.shape[0], scaled.a.shape[1], scaled.b.shape[2], dtype=dtype)
    if scaled.b.shape[2] > scaled.a.shape[1]:  # tiles of the larger operand
        scaled, out, pair = scaled.transposed(), out.mT, None
    batch, m, k = scaled.a.shape
    n = scaled.b.shape[2]
    start = prefix_start(slices, k)
    # float64 copies held per element of a block or tile, at most: the kept digits and scaled values of the
    # smaller block (s + 1), the streamed block, its digit, truncation, windows and kept digits (2 start - 1), the
    # tile's sums, Sum2's pair and temporaries (start + 6). The plan's blocks and tiles are 1/(16 share) of inputs
    # and output, of which the memory bound allows twice the bytes. (Blocks that depend on the dtype change no bit:
    # every sum here is exact.)
    share = math.ceil(8 * (slices + 3 * start + 6) / (2 * 16 * dtype.itemsize))
    plan = _Plan(batch, m, k, n, share=share)
    if not one_block(plan):
        pair = None
    (e_low, e_high), (f_low, f_high) = scaled.e_range, scaled.f_range
    # The digit products count in units of 2**(e_low + f_low - 8 (s + 1)) (|sum| <= 2 K 2**(e_high + f_high)):
    # where every row's and column's scale is the same, the sums are the result before its rounding; else rows
    # and columns scale up by 2**(e_i - e_low) and 2**(f_j - f_low) (no rounding). Where some count would leave
    # float64's normal range on the way, they count in 2**(-8 (s + 1)) and _ldexp scales back (one rounding, as
    # the reference's).
    unit_exponent = e_low + f_low - SLICE_BITS * (slices + 1)
    direct = unit_exponent >= -1022 and e_high + f_high + math.log2(2 * k) <= 1022
    unit = 2.0**unit_exponent if direct else 2.0 ** (-SLICE_BITS * (slices + 1))
    tiles = list(plan.tiles())
    for bs, ms, ns in tiles:
        total = _tile_total(scaled, plan, bs, ms, ns, slices, start, unit, pair)
        e, f = scaled.e[bs, ms], scaled.f[bs, :, ns]
        if not direct:
            total = _ldexp(total, e + f)
        else:
            if e_high > e_low:
                total.mul_(torch.exp2((e - e_low).double()))
            if f_high > f_low:
                total.mul_(torch.exp2((f - f_low).double()))
        if len(tiles) == 1 and out is result:
            return _round_to(total, dtype)
        out[bs, ms, ns] = _round_to(total, dtype)
    return result
