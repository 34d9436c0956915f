"""The pieces every emulated mode shares: the kernel contract (common dtype, K = 0, complex operands, inf/nan
where native arithmetic puts them: ``_emulated``), the errors, the bf16 word split and its engine passes
(``_split_fp32``, which fast, sr, dd and bf16x6 are, and ozaki on bf16 operands), the power-of-two scaling with its
underflow certificate, and the blocking that bounds the reference's memory.

The Trainium Tensor Engine multiplies bf16 operands (a product of two 8-bit significands is exact in fp32) and
accumulates in fp32 PSUM, so an fp32 matmul of bf16-representable values *is* one engine pass, up to the order of
the fp32 additions (the bounds in docs/precision.md allow for any order). Every emulated mode is written in such
passes; their error bounds live in kernels/bounds.py.
"""

from __future__ import annotations

import functools
import math
import warnings

import torch

from ..bounds import BF16X6_GROUP, UNDERFLOW_TERM, magnitude_pass_growth, small_terms_are_safe, underflow_floor

_WARNED: set[str] = set()
_NARROW_BITS = {torch.bfloat16: 8, torch.float16: 11}  # significand bits of the sub-fp32 formats


class PrecisionWarning(UserWarning):
    """A precision mode ran as a cheaper one because the operands leave nothing more to gain."""

    __module__ = "trn_backend.kernels.reference"  # where it is published: the name warnings and tracebacks show


class PrecisionError(ValueError):
    """A precision mode or target that cannot be honoured (operands whose range a mode cannot vouch for, a target
    no mode reaches). The message starts with the function that raised it; the front doors (einsum, matmul, ...)
    rename it to the function the user called."""

    __module__ = "trn_backend.kernels.reference"  # where it is published: the name tracebacks show

    def __init__(self, message: str, func: str = "kernels") -> None:
        super().__init__(f"{func}: {message}")
        self.message = message

    def named(self, func: str) -> PrecisionError:
        """The same error, as raised by ``func`` (the cause travels along)."""
        renamed = PrecisionError(self.message, func)
        renamed.__cause__ = self.__cause__
        return renamed


def _operands(a: torch.Tensor, b: torch.Tensor, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Both operands in their common floating dtype (the output dtype); integers are exact only in native."""
    dtype = torch.promote_types(a.dtype, b.dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"kernels: mode {mode!r} needs floating-point operands, got {a.dtype} and {b.dtype} "
                        "(integer and bool products are exact in mode 'native')")
    return a.to(dtype), b.to(dtype)


def _emulated(real_product):
    """Lift a mode written for finite real operands to the kernel contract: common dtype, K = 0, complex
    operands (four real products), and inf/nan exactly where native arithmetic puts them."""

    def finite_real(a: torch.Tensor, b: torch.Tensor, **params) -> torch.Tensor:
        if _all_finite(a) and _all_finite(b):
            return real_product(a, b, **params)
        finite_a, finite_b = torch.isfinite(a), torch.isfinite(b)
        c = real_product(torch.where(finite_a, a, 0), torch.where(finite_b, b, 0), **params)
        # Native arithmetic's inf/nan entries depend only on where the inf/nan, zero, positive and negative
        # entries are: the product of sign proxies (finite sums of +-1 elsewhere) has exactly those entries.
        proxy = torch.matmul(torch.where(finite_a, a.sign(), a).float(),
                             torch.where(finite_b, b.sign(), b).float())
        return torch.where(torch.isfinite(proxy), c, proxy.to(c.dtype))

    @functools.wraps(real_product)
    def mode(a: torch.Tensor, b: torch.Tensor, **params) -> torch.Tensor:
        a, b = _operands(a, b, real_product.__name__)
        if 0 in (a.shape[-1], a.shape[-2], b.shape[-1]):
            return torch.matmul(a, b)  # exact zeros, or no entries
        if not a.is_complex():
            return finite_real(a, b, **params)
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return torch.complex(finite_real(ar, br, **params) - finite_real(ai, bi, **params),
                             finite_real(ar, bi, **params) + finite_real(ai, br, **params))

    return mode


def _all_finite(x: torch.Tensor) -> bool:
    """Whether x holds no inf or nan: its min and max (nan propagates), one pass and no copy."""
    return x.numel() == 0 or bool(torch.isfinite(torch.stack(torch.aminmax(x))).all())


def _single_word(x: torch.Tensor, mode: str) -> bool:
    """bf16 operands are one bf16 word already: a split mode then runs as fast (warned once per mode)."""
    if x.dtype is not torch.bfloat16:
        return False
    if mode not in _WARNED:
        _WARNED.add(mode)
        warnings.warn(f"kernels: bf16 operands are single bf16 words, so mode {mode!r} runs as 'fast' "
                      "(one pass, fp32 accumulation)", PrecisionWarning, stacklevel=2)
    return True


def _round_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x rounded once to the nearest ``dtype`` value (ties to even). torch's float64 -> bf16/fp16 casts round
    twice, through float32, so float64 is first rounded to the target's significand width (exactly)."""
    bits = _NARROW_BITS.get(dtype)
    if x.dtype is torch.float64 and bits is not None:
        m, e = torch.frexp(x)
        x = torch.round(m * 2.0**bits) * torch.exp2((e - bits).to(x.dtype))
    return x.to(dtype)


def _nearest_bf16(x: torch.Tensor) -> torch.Tensor:
    """x (float32 or float64, finite) rounded to the nearest bf16 value, ties away from zero, in x's dtype. On
    float32 this is the kernels' on-chip integer split, (bits + 0x8000) & 0xFFFF0000 on the sign-magnitude bit
    pattern: it depends on no rounding mode (the device's stochastic-rounding switch cannot reach it)."""
    if x.dtype is torch.float32:
        return ((x.view(torch.int32) + 0x8000) & -0x10000).view(torch.float32)
    # |x| = m 2**e, m in [0.5, 1): 8 significant bits step by 2**(e-8); bf16's subnormals by 2**-133
    quantum = torch.exp2(torch.clamp(torch.frexp(x)[1] - 8, min=-133).to(x.dtype))
    return torch.sign(x) * torch.floor(x.abs() / quantum + 0.5) * quantum


def _words(x: torch.Tensor, n: int) -> list[torch.Tensor]:
    """x (scaled, |x| <= 1) as n bf16 words, largest first: each word is the nearest bf16 (ties away) to what
    the previous ones leave, and the remainders are exact in x's dtype (float32 or float64)."""
    rest = x
    words = []
    for _ in range(n):
        words.append(_nearest_bf16(rest))
        rest = rest - words[-1]
    return [w.to(torch.bfloat16) for w in words]  # exact


def _level(a_words: list[torch.Tensor], b_words: list[torch.Tensor], level: int):
    """The products w_i v_j with i + j == level (1-based) as one engine pass: operands joined along K."""
    pairs = [(i, level - i) for i in range(1, level) if i <= len(a_words) and level - i <= len(b_words)]
    return (torch.cat([a_words[i - 1] for i, _ in pairs], dim=-1).float(),
            torch.cat([b_words[j - 1] for _, j in pairs], dim=-2).float())


def _engine_sum(a_words: list[torch.Tensor], b_words: list[torch.Tensor], engine=torch.matmul) -> torch.Tensor:
    """Sum of w_i v_j over i + j <= n + 1: one fp32 PSUM accumulation per level, smallest level first; each
    level is one ``engine`` pass (torch.matmul, or an NKI kernel: the kernel layer passes one)."""
    n = len(a_words)
    total = None
    for level in range(n + 1, 1, -1):
        part = engine(*_level(a_words, b_words, level))
        total = part if total is None else total + part
    return total


def _two_sum(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """s + e == a + b exactly, with s = fl(a + b) (Knuth's TwoSum: six fp32 operations, no branch)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _ldexp(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """x * 2**e (e broadcasts against x) exactly unless the result over/underflows. One factor where 2**e is a
    normal float64; elsewhere three factors of one sign (|e| <= 2148 keeps each finite and normal), so the
    magnitude moves monotonically and no intermediate leaves the range. The choice is made per entry, so an
    entry's result does not depend on which other entries share the call (a tile or the whole product)."""
    small = e.abs() <= 1022
    one = x * torch.exp2(torch.where(small, e, 0).to(x.dtype))
    if bool(small.all()):
        return one
    first = torch.div(e, 3, rounding_mode="floor")
    second = torch.div(e - first, 2, rounding_mode="floor")
    three = x * torch.exp2(first.to(x.dtype)) * torch.exp2(second.to(x.dtype)) * torch.exp2(
        (e - first - second).to(x.dtype))
    return torch.where(small, one, three)


def _scaled(a: torch.Tensor, b: torch.Tensor):
    """A's rows and B's columns divided by powers of two 2**e_i, 2**f_j at or above their largest magnitude,
    in float64 (exact unless an entry is over 2**1022 times smaller than its row's largest), with the
    exponents: (A', e, B', f), |A'|, |B'| < 1."""
    a, b = a.double(), b.double()
    e = torch.frexp(a.abs().amax(-1, keepdim=True))[1]
    f = torch.frexp(b.abs().amax(-2, keepdim=True))[1]
    return _ldexp(a, -e), e, _ldexp(b, -f), f


# --- Blocking: the memory bound of the reference ---------------------------------------------------------
# The reference computes every emulated mode over output tiles and K-blocks, so what it holds at once (scaled
# blocks, words or digits, a tile's accumulators) is a fixed fraction of the problem: an operand block or an
# output tile has at most 1/BLOCK_FRACTION of the elements of A, B and C together (and at most
# MIN_BLOCK_ELEMENTS where that is more: small products run as one block). The block sizes depend on the shapes
# alone, never on the dtype, so float32 and float64 operands of the same values add in the same order
# (contraction/posteriori.py relies on it). Hooks (``fused``, ``engine``, ``levels``) get whole operands.
BLOCK_FRACTION = 16
MIN_BLOCK_ELEMENTS = 2**18


def _ranges(n: int, size: int, align: int = 1) -> list[slice]:
    """[0, n) cut into about equal slices of at most ``size`` (rounded up to a multiple of ``align``)."""
    count = -(-n // max(1, size))
    step = -(-n // max(1, count))
    step = max(align, -(-step // align) * align)
    return [slice(i, min(n, i + step)) for i in range(0, n, step)]


class _Plan:
    """Output tiles (batch, row and column ranges) and K-blocks of [B, M, K] x [B, K, N]. ``align``: K-blocks are
    multiples of it (bf16x6's chunk groups); ``depth``: a cap on a K-block (ozaki's int32 sums); ``deep``: batched
    products keep K whole rather than the batch (ozaki)."""

    def __init__(self, batch: int, m: int, k: int, n: int, align: int = 1, depth: int | None = None,
                 deep: bool = False) -> None:
        budget = max(MIN_BLOCK_ELEMENTS, batch * (m * k + k * n + m * n) // BLOCK_FRACTION)
        self.cols = _ranges(n, budget)
        nb = self.cols[0].stop
        self.rows = _ranges(m, budget // nb)
        mb = self.rows[0].stop
        wide = budget // (mb * nb)
        # ``deep``: as few batch entries per tile as keep K in one block where the budget allows: ozaki's int8
        # GEMMs run per batch entry, so a wide batch only makes them shallow (its digits are cut once per K-block
        # too); the fp32 modes' batched GEMMs measured no faster deep than wide.
        self.batches = _ranges(batch, max(1, min(wide, budget // (k * max(mb, nb)))) if deep else wide)
        kb = budget // (self.batches[0].stop * max(mb, nb))
        self.depth = _ranges(k, kb if depth is None else min(kb, depth), align)

    def tiles(self):
        return ((bs, ms, ns) for bs in self.batches for ms in self.rows for ns in self.cols)

    def a_blocks(self):
        return ((bs, ms, ks) for bs in self.batches for ms in self.rows for ks in self.depth)

    def b_blocks(self):
        return ((bs, ks, ns) for bs in self.batches for ks in self.depth for ns in self.cols)


def _batched(a: torch.Tensor, b: torch.Tensor):
    """[..., M, K] and [..., K, N] as [B, M, K] and [B, K, N] (views where the batch is one or no dimension),
    with the function that gives a [B, M, N] result the caller's shape back."""
    lead = a.shape[:-2]
    if a.dim() == 2:
        return a.unsqueeze(0), b.unsqueeze(0), lambda c: c.squeeze(0)
    if a.dim() == 3:
        return a, b, lambda c: c
    return (a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]),
            lambda c: c.reshape(*lead, *c.shape[-2:]))


def _min_magnitude(magnitudes: torch.Tensor) -> float:
    """The smallest nonzero entry of ``magnitudes`` (|x|, a temporary: overwritten), inf when it has none."""
    if magnitudes.numel() == 0:
        return math.inf
    smallest = magnitudes.min().item()  # 0 when there is a zero: then look again without the zeros
    return smallest if smallest > 0 else magnitudes.masked_fill_(magnitudes == 0, math.inf).min().item()


def _min_nonzero(x: torch.Tensor) -> float:
    """The smallest nonzero magnitude in x (inf when x has none)."""
    return _min_magnitude(x.abs())


class _Scaled:
    """A [B, M, K] and B [B, K, N] with A's rows and B's columns scaled as ``_scaled`` does, handed out block by
    block: in float32 where float32 holds every scaled value exactly (the common case, and a faster split), else
    in float64. One pass over each operand finds the scales; ``underflow_safe`` tells whether the split modes'
    underflow is certified at once (else ``certify`` checks each tile's entries, see _certify)."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor, plan: _Plan) -> None:
        self.a, self.b, self.plan, self.k = a, b, plan, a.shape[-1]
        row_max = a.new_zeros(a.shape[:-1], dtype=torch.float64)  # exact: maxima of magnitudes
        col_max = b.new_zeros(b.shape[0], b.shape[2], dtype=torch.float64)
        smallest = [math.inf, math.inf]
        for bs, ms, ks in plan.a_blocks():
            magnitudes = a[bs, ms, ks].abs()
            row_max[bs, ms] = torch.maximum(row_max[bs, ms], magnitudes.amax(-1))
            smallest[0] = min(smallest[0], _min_magnitude(magnitudes))
        for bs, ks, ns in plan.b_blocks():
            magnitudes = b[bs, ks, ns].abs()
            col_max[bs, ns] = torch.maximum(col_max[bs, ns], magnitudes.amax(-2))
            smallest[1] = min(smallest[1], _min_magnitude(magnitudes))
        self.e = torch.frexp(row_max)[1].unsqueeze(-1)  # [B, M, 1]
        self.f = torch.frexp(col_max)[1].unsqueeze(-2)  # [B, 1, N]
        # Every row's (column's) smallest nonzero magnitude over its scale is at least the operand's smallest over
        # twice its largest: when those pass _small_terms_are_safe, every scaled value is a normal float32.
        largest = [row_max.max().item() if row_max.numel() else 0.0, col_max.max().item() if col_max.numel() else 0.0]
        ranges = [s / (2 * top) if top > 0 else math.inf for s, top in zip(smallest, largest, strict=True)]
        self.float32 = (a.dtype is not torch.float64 and bool((self.e.abs() <= 126).all())
                        and bool((self.f.abs() <= 126).all()) and small_terms_are_safe(*ranges))
        if self.float32:
            self.a_factor, self.b_factor = torch.exp2(-self.e.float()), torch.exp2(-self.f.float())
            self.underflow_safe = True
        else:
            self.underflow_safe = None  # decided by the first call to certify (a second pass)

    def block_a(self, bs, ms, ks) -> torch.Tensor:
        if self.float32:
            return self.a[bs, ms, ks].float() * self.a_factor[bs, ms]
        return _ldexp(self.a[bs, ms, ks].double(), -self.e[bs, ms])

    def block_b(self, bs, ks, ns) -> torch.Tensor:
        if self.float32:
            return self.b[bs, ks, ns].float() * self.b_factor[bs, :, ns]
        return _ldexp(self.b[bs, ks, ns].double(), -self.f[bs, :, ns])

    def whole(self) -> tuple[torch.Tensor, torch.Tensor]:
        everything = slice(None)
        return self.block_a(everything, everything, everything), self.block_b(everything, everything, everything)

    def certify(self, mode: str, tile=None) -> None:
        """The split's underflow certificate for one output tile (None: all of them), or a PrecisionError. The
        scaled operands' smallest nonzero magnitudes settle it at once for nearly all data; else each entry's
        |A'||B'| is bounded from below (_magnitude_lower) and must reach K UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE."""
        if self.underflow_safe is None:
            smallest = [min((_min_nonzero(self.block_a(*blk)) for blk in self.plan.a_blocks()), default=math.inf),
                        min((_min_nonzero(self.block_b(*blk)) for blk in self.plan.b_blocks()), default=math.inf)]
            self.underflow_safe = small_terms_are_safe(*smallest)
        if self.underflow_safe:
            return
        floor = underflow_floor(self.k)
        for bs, ms, ns in self.plan.tiles() if tile is None else [tile]:
            if bool((_magnitude_lower(self, bs, ms, ns, floor) < floor).any()):
                raise PrecisionError(f"mode {mode!r} cannot vouch for its bound on these operands: some rows of A "
                                     "or columns of B hold entries so much smaller than their largest (beyond "
                                     "about 2**88 between the two operands) that their bf16 split underflows; "
                                     "use precision='kahan'")


def _mac(acc: torch.Tensor | None, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """acc + x @ y on [B, M, K] x [B, K, N], accumulated in place (x @ y where acc is None): every product of x @ y
    is added after acc's sum is complete, as the next products of one PSUM accumulation are."""
    return torch.bmm(x, y) if acc is None else acc.baddbmm_(x, y)


def _magnitude_lower(scaled: _Scaled, bs, ms, ns, floor: float) -> torch.Tensor:
    """A lower bound of |A'||B'| (float64) on one output tile from one fast pass, +inf where an entry has no
    nonzero term. The pass rounds |A'|, |B'| to bf16 (relative 2**-8 each), sums in fp32 over K-blocks
    (gamma_{K-1} in any order) and may underflow (at most UNDERFLOW_TERM per term): undo all three. Only if some
    entry falls below ``floor`` does an exact pass over the 0/1 patterns find the entries without a nonzero term."""
    k, plan = scaled.k, scaled.plan
    magnitude = None
    for ks in plan.depth:
        magnitude = _mac(magnitude, _round_to(scaled.block_a(bs, ms, ks).abs(), torch.bfloat16).float(),
                         _round_to(scaled.block_b(bs, ks, ns).abs(), torch.bfloat16).float())
    lower = magnitude.double() / magnitude_pass_growth(k) - k * UNDERFLOW_TERM
    if bool((lower < floor).any()):
        count = None  # sums of ones: positive exactly where a nonzero term is, whatever the rounding
        for ks in plan.depth:
            count = _mac(count, (scaled.block_a(bs, ms, ks) != 0).float(), (scaled.block_b(bs, ks, ns) != 0).float())
        lower = torch.where(count > 0, lower, math.inf)
    return lower


def _split(x: torch.Tensor, n: int) -> list[torch.Tensor]:
    """The n bf16 words of x (scaled, float32 or float64) as ``_words`` gives them, held in float32 (exact) for
    the fp32 GEMMs that emulate the engine passes."""
    words, rest = [], x
    for t in range(n):
        word = _nearest_bf16(rest)
        words.append(word.float())
        if t + 1 < n:
            rest = rest - word
    return words


def _pairs(n: int, level: int) -> list[tuple[int, int]]:
    """The word (digit) pairs (i, j), 1-based, of one level i + j == level among n words."""
    return [(i, level - i) for i in range(1, level) if i <= n and level - i <= n]


def _passes(acc, a_words, b_words, columns=slice(None)):
    """acc plus the products w_i v_j, i + j <= n + 1, over K ``columns``, level by level, smallest first."""
    n = len(a_words)
    for level in range(n + 1, 1, -1):
        for i, j in _pairs(n, level):
            acc = _mac(acc, a_words[i - 1][..., columns], b_words[j - 1][..., columns, :])
    return acc


def _plain_tile(scaled: _Scaled, bs, ms, ns, words: int) -> torch.Tensor:
    """One output tile of the engine sum of w_i v_j over i + j <= n + 1: each level accumulated in fp32 over all
    of K (its own accumulator, K-block after K-block), then the levels added smallest first."""
    levels: dict[int, torch.Tensor] = {}
    for ks in scaled.plan.depth:
        a_words, b_words = _split(scaled.block_a(bs, ms, ks), words), _split(scaled.block_b(bs, ks, ns), words)
        for level in range(words + 1, 1, -1):
            for i, j in _pairs(words, level):
                levels[level] = _mac(levels.get(level), a_words[i - 1], b_words[j - 1])
    total = levels[words + 1]
    for level in range(words, 1, -1):
        total += levels[level]
    return total


def _chunked_tile(scaled: _Scaled, bs, ms, ns, words: int, chunk: int, group: int) -> torch.Tensor:
    """One output tile of bf16x6's accumulation: each K-chunk of ``chunk`` one accumulation (levels smallest
    first), each ``group`` consecutive chunk sums added in fp32, the group sums combined by Sum2 in K order.
    K-blocks are multiples of ``chunk`` (the plan's ``align``) and the group count carries from one K-block to
    the next, so the chunks, groups and Sum2 order are those of an unblocked pass."""
    hi = lo = partial = None
    count = 0
    for ks in scaled.plan.depth:
        a_words, b_words = _split(scaled.block_a(bs, ms, ks), words), _split(scaled.block_b(bs, ks, ns), words)
        for start in range(0, ks.stop - ks.start, chunk):
            part = _passes(None, a_words, b_words, slice(start, start + chunk))
            partial = part if count % group == 0 else partial.add_(part)
            count += 1
            if count % group == 0:
                hi, lo = _sum2_step(hi, lo, partial)
    if count % group:
        hi, lo = _sum2_step(hi, lo, partial)
    return hi + lo


def _sum2_step(hi: torch.Tensor | None, lo: torch.Tensor | None, part: torch.Tensor):
    """One part into Sum2's (hi, lo) pair (see _sum2)."""
    if hi is None:
        return part, torch.zeros_like(part)
    hi, err = _two_sum(hi, part)
    return hi, lo.add_(err)


def _split_fp32(a: torch.Tensor, b: torch.Tensor, words: int, mode: str, chunk: int | None = None,
                engine=torch.matmul, fused=None, finish=None) -> torch.Tensor:
    """The engine result of a ``words``-word bf16 split of both operands (bf16 operands: one word), computed on
    power-of-two scaled rows of A and columns of B, scaled back in float64 (exact) and passed through
    ``finish`` (default: rounded to the operand dtype), tile by tile. ``chunk``: bf16x6's chunked accumulation.
    ``fused(a_scaled, b_scaled, words)``, where given, computes the engine result from the whole scaled operands
    in one device program (the NKI kernels: split on chip, every product in PSUM); ``engine``, where not
    torch.matmul, runs each level of the whole operands as one pass (fast's NKI route)."""
    dtype = a.dtype
    finish = finish or (lambda y: _round_to(y, dtype))
    if words > 1 and _single_word(a, mode):
        words = 1
    a3, b3, restore = _batched(a, b)
    plan = _Plan(*a3.shape, b3.shape[-1], align=chunk or 1)
    scaled = _Scaled(a3, b3, plan)
    if fused is not None or engine is not torch.matmul:
        scaled.certify(mode)
        a_scaled, b_scaled = scaled.whole()
        if fused is not None:
            total = fused(restore(a_scaled), restore(b_scaled), words)
        else:
            total = _engine_sum(_words(restore(a_scaled), words), _words(restore(b_scaled), words), engine)
        return restore(finish(_ldexp(total.double().reshape(a3.shape[0], a3.shape[1], -1), scaled.e + scaled.f)))
    out = None
    for bs, ms, ns in plan.tiles():
        scaled.certify(mode, (bs, ms, ns))
        total = (_plain_tile(scaled, bs, ms, ns, words) if chunk is None
                 else _chunked_tile(scaled, bs, ms, ns, words, chunk, BF16X6_GROUP))
        tile = finish(_ldexp(total.double(), scaled.e[bs, ms] + scaled.f[bs, :, ns]))
        if out is None:
            out = tile.new_empty(a3.shape[0], a3.shape[1], b3.shape[2])
        out[bs, ms, ns] = tile
    return restore(out)
