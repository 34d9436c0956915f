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

The route that runs (``rectangles``, below) needs fewer GEMMs still: windows of consecutive digits of A against
windows of B, each pair of windows one exact float64 GEMM of a whole rectangle of digit pairs (s = 8 at K = 512:
11 GEMMs where the prefix and levels take 18), the windows made in cache-sized pieces. The prefix and level route
(_block_sums, _tile_total) stays where the rectangles cannot vouch for exactness (K beyond 2**37).

The larger operand is cut into tiles (the product is computed as (B^T A^T)^T where B is the larger); the smaller
one's digits are made per tile and kept, the larger one's streamed into bands (_block_sums). Blocks and tiles are
1/share of the plan's budget, since the digits, bands and the tile's level sums take several float64 copies.
"""

from __future__ import annotations

import functools
import math

import torch

from ..bounds import SLICE_BITS
from ._common import Tiling, _ldexp, _ranges, _round_to, _Scaled, _two_sum

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
    kept: dict[int, torch.Tensor] = {}  # r_j by j, dropped once no GEMM needs it
    for j in range(1, slices + 1):  # exact, as _digits
        kept[j] = torch.round(b.mul_(_RADIX))
        if j < slices:
            b.sub_(kept[j])
    low = start - 2
    raw: dict[int, torch.Tensor] = {}  # A's digits q_i, i <= low, for the levels below the prefix
    scratch: torch.Tensor | None = None
    truncation: torch.Tensor | None = None
    windows: dict[int, torch.Tensor] = {}
    for i in range(1, slices + 1):
        a.mul_(_RADIX)
        digit = torch.round(a) if i <= low or i == 1 else torch.round(a, out=scratch)
        scratch = None if i <= low or i == 1 else digit
        if i < slices:
            a.sub_(digit)
        if i <= low:
            raw[i] = digit
        j = slices + 1 - i
        if j >= start - 1:  # Band_j = 2**8 Band_{j+1} + q_i, down to q_1
            if truncation is None:  # i == 1 (the bands are i = 1 .. s + 2 - start)
                truncation = digit.clone() if low else digit
            else:
                torch.add(digit, truncation, alpha=_RADIX, out=truncation)
            sums["prefix"] = _mac(sums.get("prefix"), truncation, kept[j], alpha)
        for w in range(max(1, start - i), min(low, slices + 1 - i) + 1):  # windows q_{start-w} .. q_{s+1-w}
            windows[w] = digit.clone() if i == start - w else torch.add(digit, windows[w], alpha=_RADIX, out=windows[w])
            if i == slices + 1 - w:
                sums["prefix"] = _mac(sums.get("prefix"), windows.pop(w), kept[w], alpha)
        if j > low:
            del kept[j]
    for level in range(start - 1, 1, -1):
        for j in range(1, level):
            sums[level] = _mac(
                sums.get(level), raw[level - j], kept[j], alpha * 2.0 ** (SLICE_BITS * (slices + 1 - level))
            )


# --- Rectangles: the digit pairs in few float64 GEMMs ------------------------------------------------------------
# The kept pairs (i, j), i + j <= s + 1, cut into rectangles of consecutive digits of A (i0 .. i0 + a - 1) and of
# B (j0 .. j0 + b - 1): a window of digits is one integer, W = sum_t q_t 2**(8 (i0 + a - 1 - t)), and one GEMM of
# the two windows gives every pair of the rectangle at its weight, exactly where K max|W_A| max|W_B| <= 2**53.
# Rectangles join into groups whose products add exactly in one float64 sum (their windows side by side along K,
# B's scaled to the group's unit: one GEMM per group). The groups' exact sums, added by TwoSum with the errors in
# an exact float64 sum (every value is a multiple of the finest unit and the errors stay far below 2**53 of it),
# give the exact total rounded once: the value the level sums' Sum2 gives (its error sum is exact for the same
# reason), so the same bits in fewer passes.


def _window_bound(start: int, length: int) -> int:
    """The largest |window| of digits start .. start + length - 1: |q_1| <= 2**8, later ones <= 2**7."""
    return sum(
        (2**8 if t == 1 else 2**7) << (SLICE_BITS * (start + length - 1 - t)) for t in range(start, start + length)
    )


@functools.cache
def rectangles(slices: int, k: int) -> tuple[tuple[tuple[int, int, int, int], ...], ...] | None:
    """The groups of rectangles (i0, a, j0, b) that cover the kept digit pairs once, each rectangle exact in one
    float64 GEMM over K and each group exact in one float64 sum, coarsest group first; None where not even one
    digit pair sums exactly (K beyond 2**37)."""
    limit = 2**53

    def fits(i0: int, a: int, j0: int, b: int) -> bool:
        return k * _window_bound(i0, a) * _window_bound(j0, b) <= limit

    @functools.cache
    def cover(i0: int, a: int, j: int):
        """Fewest rectangles covering rows i0 .. i0 + a - 1 from column j to each row's last, s + 1 - i."""
        if j > slices + 1 - i0:
            return ()
        last_width = slices + 1 - (i0 + a - 1)
        options = [_joined(cover(i0, c, j), cover(i0 + c, a - c, j)) for c in range(1, a)]
        if j > last_width:
            options.append(cover(i0, a - 1, j))
        else:
            rects, j0 = [], j
            while j0 <= last_width:
                b = max((b for b in range(1, last_width - j0 + 2) if fits(i0, a, j0, b)), default=0)
                if b == 0:
                    break
                rects.append((i0, a, j0, b))
                j0 += b
            else:
                options.append(_joined(tuple(rects), cover(i0, a - 1, last_width + 1) if a > 1 else ()))
        options = [o for o in options if o is not None and sum(r[1] * r[3] for r in o) == _count(slices, i0, a, j)]
        return min(options, key=len, default=None)

    rects = cover(1, slices, 1)
    if rects is None:
        return None
    # finest first (the level i + j of a rectangle's last pair), each group as long as its sum stays exact
    rects = sorted(rects, key=lambda r: (-(r[0] + r[1] + r[2] + r[3]), r))
    groups: list[tuple[tuple[int, int, int, int], ...]] = []
    current: list[tuple[int, int, int, int]] = []
    total, finest = 0, None
    for r in rects:
        level = r[0] + r[1] + r[2] + r[3] - 2
        bound = k * _window_bound(r[0], r[1]) * _window_bound(r[2], r[3])
        if current and total + (bound << (SLICE_BITS * (finest - level))) <= limit:
            current.append(r)
            total += bound << (SLICE_BITS * (finest - level))
        else:
            if current:
                groups.append(tuple(current))
            current, total, finest = [r], bound, level
    groups.append(tuple(current))
    return tuple(reversed(groups))


def _joined(first, second):
    return None if first is None or second is None else first + second


def _count(slices: int, i0: int, a: int, j: int) -> int:
    """The kept pairs of rows i0 .. i0 + a - 1 from column j on."""
    return sum(max(0, slices + 2 - i - j) for i in range(i0, i0 + a))


def _finest(group) -> int:
    """The level of a group's finest pair (its unit: 2**(-8 level))."""
    return max(r[0] + r[1] + r[2] + r[3] - 2 for r in group)


# Elements of one operand piece whose windows are made at once: its rounded multiples and windows stay in the CPU's
# cache (a pass over a tensor beyond it runs at memory speed, several times slower), and each pass is large enough
# for torch's threads and its call overhead.
_PIECE = 2**16
# Window elements of one K-piece where the output is thin (a K-block's windows are then made and used piece by piece)
_WINDOWS = 2**19


def _scaled_piece(scaled: _Scaled, x: torch.Tensor, e: torch.Tensor, e_range: tuple[int, int]) -> torch.Tensor:
    """A piece of an operand scaled by 2**-e, in float64 (a new tensor): as _scaled_pair makes it (exact)."""
    if max(-e_range[0], e_range[1]) <= 1022:  # _ldexp's one factor
        return torch.mul(x, torch.exp2(-e.double()))
    return _ldexp(x.double(), -e)


def _fill_windows(x: torch.Tensor, windows: list[tuple[int, int, float, torch.Tensor]]) -> None:
    """Write the windows of digits of x (scaled, float64, |x| < 1) into their places: (start, length, shift, out)
    puts shift W(start, length) into ``out``. The first t digits make the integer N_t = round(2**(8 t) x) (each
    digit rounds 2**8 times the previous remainder, and 2**8 N_{t-1} is even, so the ties go the same way), so
    W = N_{start+length-1} - 2**(8 length) N_{start-1} with N_0 = 0: every value exact (integers, and shift a
    power of two)."""
    needed = {t for start, length, _, _ in windows for t in (start - 1, start + length - 1)} - {0}
    rounded = {t: torch.mul(x, _RADIX**t).round_() for t in needed}
    for start, length, shift, out in windows:
        last = rounded[start + length - 1]
        if start == 1:
            torch.mul(last, shift, out=out)
        else:
            torch.add(last, rounded[start - 1], alpha=-(_RADIX**length), out=out)
            if shift != 1.0:
                out.mul_(shift)


def _pieces(n: int, size: int) -> list[slice]:
    step = max(1, size)
    return [slice(i, min(n, i + step)) for i in range(0, n, step)]


def _piece(scaled: _Scaled, job) -> None:
    x, e, e_range, windows = job
    _fill_windows(x if e is None else _scaled_piece(scaled, x, e, e_range), windows)


def _group_sums(
    scaled: _Scaled,
    bs,
    ms,
    ns,
    ks,
    slices: int,
    groups,
    unit: float,
    sums: list,
    pair: torch.Tensor | None,
    size: int = _PIECE,
) -> None:
    """Add one K-block pair's group sums to ``sums``: every group's windows of A's block side by side along K
    (A's [b, m, r k]) and B's scaled to the group's unit ([b, r k, n]), made piece by piece (of about ``size``
    elements), then one float64 GEMM per group. ``pair``: the scaled pair of a plan's one block (else the pieces
    are scaled here)."""
    a, b = scaled.a[bs, ms, ks], scaled.b[bs, ks, ns]
    e, f = scaled.e[bs, ms], scaled.f[bs, :, ns]
    if pair is not None:
        a, b = pair[: a.numel()].view(a.shape), pair[a.numel() :].view(b.shape)
    batch, m, k = a.shape
    n = b.shape[2]
    lefts = [a.new_empty(batch, m, len(g) * k, dtype=torch.float64) for g in groups]
    rights = [b.new_empty(batch, len(g) * k, n, dtype=torch.float64) for g in groups]
    rects = [(index, r, rect) for index, g in enumerate(groups) for r, rect in enumerate(g)]
    finest = [_finest(g) for g in groups]
    jobs = []
    # A's pieces: batches, rows and columns of about _PIECE elements
    rows = max(1, size // k)
    for bp in _pieces(batch, max(1, rows // m)):
        for mp in _pieces(m, rows):
            for kp in _pieces(k, size):
                jobs.append(
                    (
                        a[bp, mp, kp],
                        None if pair is not None else e[bp, mp],
                        scaled.e_range,
                        [
                            (i0, width, 1.0, lefts[index][bp, mp, r * k + kp.start : r * k + kp.stop])
                            for index, r, (i0, width, _, _) in rects
                        ],
                    )
                )
    # B's pieces: batches and rows (K indices) of about _PIECE elements
    rows = max(1, size // n)
    for bp in _pieces(batch, max(1, rows // k)):
        for kp in _pieces(k, rows):
            jobs.append(
                (
                    b[bp, kp],
                    None if pair is not None else f[bp],
                    scaled.f_range,
                    [
                        (
                            j0,
                            height,
                            2.0 ** (SLICE_BITS * (finest[index] - (i0 + width + j0 + height - 2))),
                            rights[index][bp, r * k + kp.start : r * k + kp.stop],
                        )
                        for index, r, (i0, width, j0, height) in rects
                    ],
                )
            )
    for job in jobs:
        _piece(scaled, job)
    for index in range(len(groups)):
        left, right = lefts.pop(0), rights.pop(0)  # the lists let go of each group's windows
        sums[index] = _mac(sums[index], left, right, unit * 2.0 ** (SLICE_BITS * (slices + 1 - finest[index])))
        del left, right  # before the next group's GEMM


def _square_tiles(plan: Tiling, batch: int, m: int, k: int, n: int) -> None:
    """The rectangles' tiling within the plan's budget: tiles about square (each operand's windows are made once
    per tile of the other's side, so neither is remade many times), K-blocks as deep as the budget allows (fewer,
    larger GEMMs). Blocking changes no bit here: every sum is exact."""
    budget = plan.budget
    side = max(1, math.isqrt(budget))
    plan.rows = _ranges(m, side if n > side else budget // max(1, n))
    plan.cols = _ranges(n, budget // plan.rows[0].stop)
    mb, nb = plan.rows[0].stop, plan.cols[0].stop
    plan.batches = _ranges(batch, budget // (mb * nb))
    plan.depth = _ranges(k, budget // (plan.batches[0].stop * max(mb, nb)))


def _rect_total(
    scaled: _Scaled, plan: Tiling, bs, ms, ns, slices: int, groups, unit: float, pair: torch.Tensor | None = None
) -> torch.Tensor:
    """One output tile's exact total of the kept digit pairs rounded once (float64), as _tile_total gives it."""
    sums: list = [None] * len(groups)
    batch, m, n = (bs.stop - bs.start, ms.stop - ms.start, ns.stop - ns.start)
    per_k = batch * (m + n) * sum(map(len, groups))  # window elements per K index
    piece = max(1, _WINDOWS // per_k)
    size = max(1, min(_PIECE, plan.budget // 4))  # a piece's temporaries: a small part of the plan's budget
    for ks in plan.depth:
        if piece < ks.stop - ks.start and 8 * batch * m * n * len(groups) <= piece * per_k:
            # a thin output (a dot product): K in pieces whose windows stay in cache, each piece's GEMMs at once
            for start in range(ks.start, ks.stop, piece):
                _group_sums(
                    scaled,
                    bs,
                    ms,
                    ns,
                    slice(start, min(ks.stop, start + piece)),
                    slices,
                    groups,
                    unit,
                    sums,
                    None,
                    size,
                )
        else:
            _group_sums(scaled, bs, ms, ns, ks, slices, groups, unit, sums, pair, size)
    total = sums[0]
    if len(sums) == 1:
        return total
    flat = [x.view(-1) for x in sums]
    for piece in _pieces(flat[0].numel(), _PIECE):  # TwoSum's passes on pieces that stay in cache
        hi, lo = _two_sum(flat[0][piece], flat[1][piece])  # two sums at least (len(sums) > 1)
        for part in flat[2:]:
            hi, err = _two_sum(hi, part[piece])
            lo.add_(err)
        torch.add(hi, lo, out=flat[0][piece])
    return total


def _exact_errors(slices: int, k: int, groups) -> bool:
    """Whether the TwoSum errors add exactly, in the groups' Sum2 here and in the levels' Sum2 it stands in for:
    every value is a multiple of the finest unit 2**(-8 (s + 1)), each error is at most 2**-53 of a partial sum
    (at most the bounds' total, S), and the errors' partial sums stay below 2**53 units (so the result is the exact
    total rounded once, both ways). Else ozaki keeps the levels' route."""
    total = sum(
        k * _window_bound(r[0], r[1]) * _window_bound(r[2], r[3])
        << (SLICE_BITS * (slices + 1 - (r[0] + r[1] + r[2] + r[3] - 2)))
        for g in groups
        for r in g
    )
    errors = max(len(groups) - 1, prefix_start(slices, k) - 2, 1)
    return 2 * errors * total <= 2**106


def _scaled_pair(scaled: _Scaled, bs, ms, ns, ks) -> torch.Tensor:
    """[A' block | B' block], flat, float64: the scaled values of ``_Scaled`` (exact)."""
    a, b = scaled.a[bs, ms, ks], scaled.b[bs, ks, ns]
    x = torch.empty(a.numel() + b.numel(), dtype=torch.float64, device=a.device)
    for value, e, e_range, part in (
        (a, scaled.e[bs, ms], scaled.e_range, x[: a.numel()]),
        (b, scaled.f[bs, :, ns], scaled.f_range, x[a.numel() :]),
    ):
        if max(-e_range[0], e_range[1]) <= 1022:  # _ldexp's one factor
            torch.mul(value, torch.exp2(-e.double()), out=part.view(value.shape))
        else:
            part.view(value.shape).copy_(_ldexp(value.double(), -e))
    return x


_EVERYTHING = slice(None)


def one_block(plan: Tiling) -> bool:
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


def _takes_rectangles(slices: int, k: int, start: int, groups) -> bool:
    """Whether the rectangles' route runs: where it vouches for the same bits and needs fewer GEMMs than the
    prefix (s) and the levels below it ((start - 1)(start - 2) / 2) take; with as many, the prefix's nested bands
    make the operands' digits in fewer passes."""
    return (
        groups is not None
        and _exact_errors(slices, k, groups)
        and sum(map(len, groups)) < slices + (start - 1) * (start - 2) // 2
    )


def _mac(acc: torch.Tensor | None, x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """acc + alpha x @ y (alpha a power of two: exact on these integers)."""
    if acc is None:
        return torch.baddbmm(x.new_empty(x.shape[0], x.shape[1], y.shape[2]), x, y, beta=0, alpha=alpha)
    return acc.baddbmm_(x, y, alpha=alpha)


def _tile_total(
    scaled: _Scaled, plan: Tiling, bs, ms, ns, slices: int, start: int, unit: float, pair: torch.Tensor | None = None
) -> torch.Tensor:
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
    groups = rectangles(slices, k)
    if not _takes_rectangles(slices, k, start, groups):
        groups = None
    # float64 copies held per element of a block or tile, at most: the kept digits and scaled values of the
    # smaller block (s + 1), the streamed block, its digit, truncation, windows and kept digits (2 start - 1), the
    # tile's sums, Sum2's pair and temporaries (start + 6). The plan's blocks and tiles are 1/(16 share) of inputs
    # and output, of which the memory bound allows twice the bytes. (Blocks that depend on the dtype change no bit:
    # every sum here is exact.)
    share = math.ceil(8 * (slices + 3 * start + 6) / (2 * 16 * dtype.itemsize))
    if groups is not None:  # the rectangles' route: remainders of both blocks, one group's windows, the sums
        copies = sum(map(len, groups)) + len(groups) + 3  # every group's windows, the sums, TwoSum's
        share = math.ceil(8 * copies / (2 * 16 * dtype.itemsize))
    plan = Tiling(batch, m, k, n, share=share)
    if groups is not None:
        _square_tiles(plan, batch, m, k, n)
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
        total = (
            _tile_total(scaled, plan, bs, ms, ns, slices, start, unit, pair)
            if groups is None
            else _rect_total(scaled, plan, bs, ms, ns, slices, groups, unit, pair)
        )
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
