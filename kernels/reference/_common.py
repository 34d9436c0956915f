"""The pieces every emulated mode shares: the kernel contract (common dtype, K = 0, complex operands, inf/nan
where native arithmetic puts them: ``_emulated``), the errors, the bf16 word split and its engine passes
(their engine result: ``_split``), the power-of-two scaling with its underflow certificate, and the blocking that
bounds the reference's memory.

The Trainium Tensor Engine multiplies bf16 operands (a product of two 8-bit significands is exact in fp32) and
accumulates in fp32 PSUM, so an fp32 matmul of bf16-representable values *is* one engine pass, up to the order of
the fp32 additions (the bounds in docs/precision.md allow for any order). Every emulated mode is written in such
passes; their error bounds live in kernels/bounds.py.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterator

import torch

from ...errors import PrecisionError, PrecisionWarning
from ..bounds import UNDERFLOW_TERM, bits, magnitude_pass_growth, small_terms_are_safe, underflow_floor

_WARNED: set[str] = set()
_NARROW_BITS = {torch.bfloat16: 8, torch.float16: 11}  # significand bits of the sub-fp32 formats


def _operands(a: torch.Tensor, b: torch.Tensor, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Both operands in their common floating dtype (the output dtype); integers are exact only in native."""
    dtype = torch.promote_types(a.dtype, b.dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(
            f"kernels: mode {mode!r} needs floating-point operands, got {a.dtype} and {b.dtype} "
            "(integer and bool products are exact in mode 'native')"
        )
    # the modes split operands into real parts and reinterpret their bits (``.view(int32)``), which torch refuses
    # on its lazy conjugate and negative views (``t.conj()``, ``t.conj().imag``): those are made real data here
    return _resolved(a.to(dtype)), _resolved(b.to(dtype))


def _resolved(t: torch.Tensor) -> torch.Tensor:
    """``t`` with torch's lazy conjugate and negative bits applied (``t`` itself when neither is set)."""
    return t.resolve_conj().resolve_neg()


def _emulated(real_product):
    """Lift a mode written for finite real operands to the kernel contract: common dtype, K = 0, complex
    operands (four real products), and inf/nan exactly where native arithmetic puts them."""

    def finite_real(a: torch.Tensor, b: torch.Tensor, **params) -> torch.Tensor:
        try:
            return real_product(a, b, **params)  # its _Scaled finds any inf or nan in its first pass
        except _NonFinite:
            pass
        finite_a, finite_b = torch.isfinite(a), torch.isfinite(b)
        c = real_product(torch.where(finite_a, a, 0), torch.where(finite_b, b, 0), **params)
        # Native arithmetic's inf/nan entries depend only on where the inf/nan, zero, positive and negative
        # entries are: the product of sign proxies (finite sums of +-1 elsewhere) has exactly those entries.
        proxy = torch.matmul(torch.where(finite_a, a.sign(), a).float(), torch.where(finite_b, b.sign(), b).float())
        return torch.where(torch.isfinite(proxy), c, proxy.to(c.dtype))

    @functools.wraps(real_product)
    def mode(a: torch.Tensor, b: torch.Tensor, **params) -> torch.Tensor:
        a, b = _operands(a, b, real_product.__name__)
        if a.numel() == 0 or b.numel() == 0:
            return torch.matmul(a, b)  # exact zeros, or no entries
        if not a.is_complex():
            return finite_real(a, b, **params)
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return torch.complex(
            finite_real(ar, br, **params) - finite_real(ai, bi, **params),
            finite_real(ar, bi, **params) + finite_real(ai, br, **params),
        )

    return mode


class _NonFinite(Exception):  # noqa: N818 (a signal between _Scaled and _emulated, never seen outside)
    """Raised by _Scaled where an operand holds an inf or nan: _emulated then runs the mode on the finite entries
    and puts native arithmetic's inf and nan in place."""


def _single_word(x: torch.Tensor, mode: str) -> bool:
    """bf16 operands are one bf16 word already: a split mode then runs as fast (warned once per mode)."""
    if x.dtype is not torch.bfloat16:
        return False
    if mode not in _WARNED:
        _WARNED.add(mode)
        warnings.warn(
            f"kernels: bf16 operands are single bf16 words, so mode {mode!r} runs as 'fast' "
            "(one pass, fp32 accumulation)",
            PrecisionWarning,
            stacklevel=2,
        )
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


def _nearest_bf16_bits(x: torch.Tensor, half_up: torch.Tensor | None = None) -> torch.Tensor:
    """x (float64; every nonzero |x| in bf16's normal range, at least 2**-126) rounded to the nearest bf16 value,
    ties away from zero, on its bit pattern as _nearest_bf16 rounds float32: the 52 stored significand bits
    rounded to 7 (a carry moves into the exponent). ``half_up``: x's bits plus 2**44 already (overwritten)."""
    if half_up is None:
        half_up = x.view(torch.int64) + 2**44
    return half_up.bitwise_and_(-(2**45)).view(torch.float64)


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
    return (
        torch.cat([a_words[i - 1] for i, _ in pairs], dim=-1).float(),
        torch.cat([b_words[j - 1] for _, j in pairs], dim=-2).float(),
    )


def _engine_sum(a_words: list[torch.Tensor], b_words: list[torch.Tensor], engine=torch.matmul) -> torch.Tensor:
    """Sum of w_i v_j over i + j <= n + 1: one fp32 PSUM accumulation per level, smallest level first; each
    level is one ``engine`` pass (torch.matmul, or an NKI kernel: the kernel layer passes one)."""
    n = len(a_words)
    total = None
    for level in range(n + 1, 1, -1):
        part = engine(*_level(a_words, b_words, level))
        total = part if total is None else total + part
    assert total is not None  # n >= 1 words: level 2 at least ran
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
    three = (
        x
        * torch.exp2(first.to(x.dtype))
        * torch.exp2(second.to(x.dtype))
        * torch.exp2((e - first - second).to(x.dtype))
    )
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


class Tiling:
    """Output tiles (batch, row and column ranges) and K-blocks of [B, M, K] x [B, K, N]. ``align``: K-blocks are
    multiples of it (bf16x6's chunk groups); ``share``: blocks and tiles of 1/share of that (ozaki's, whose digits
    and level sums take several float64 copies of each), never less than MIN_BLOCK_ELEMENTS."""

    def __init__(self, batch: int, m: int, k: int, n: int, align: int = 1, share: int = 1) -> None:
        total = batch * (m * k + k * n + m * n)
        self.budget = budget = max(MIN_BLOCK_ELEMENTS, total // (BLOCK_FRACTION * share))
        # Tiles span the shorter of M and N whole where the budget allows and cut the longer one, so the longer
        # operand's blocks (split into words, cut into digits) are made about once, the shorter one's per tile.
        if n > m:
            self.rows = _ranges(m, budget)
            self.cols = _ranges(n, budget // self.rows[0].stop)
        else:
            self.cols = _ranges(n, budget)
            self.rows = _ranges(m, budget // self.cols[0].stop)
        mb, nb = self.rows[0].stop, self.cols[0].stop
        self.batches = _ranges(batch, budget // (mb * nb))
        kb = budget // (self.batches[0].stop * max(mb, nb))
        self.depth = _ranges(k, kb, align)

    def tiles(self) -> Iterator[tuple[slice, slice, slice]]:
        return ((bs, ms, ns) for bs in self.batches for ms in self.rows for ns in self.cols)

    def a_blocks(self) -> Iterator[tuple[slice, slice, slice]]:
        return ((bs, ms, ks) for bs in self.batches for ms in self.rows for ks in self.depth)

    def b_blocks(self) -> Iterator[tuple[slice, slice, slice]]:
        return ((bs, ks, ns) for bs in self.batches for ks in self.depth for ns in self.cols)


def _batched(a: torch.Tensor, b: torch.Tensor):
    """[..., M, K] and [..., K, N] as [B, M, K] and [B, K, N] (views where the batch is one or no dimension),
    with the function that gives a [B, M, N] result the caller's shape back."""
    lead = a.shape[:-2]
    if a.dim() == 2:
        return a.unsqueeze(0), b.unsqueeze(0), lambda c: c.squeeze(0)
    if a.dim() == 3:
        return a, b, lambda c: c
    return (a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]), lambda c: c.reshape(*lead, *c.shape[-2:]))


def _dense(a3: torch.Tensor, b3: torch.Tensor, restore):
    """[B, M, K] x [B, K, N] as the same product on operands laid out row by row, with ``restore`` (which gives a
    [B, M, N] result the caller's shape) extended to the result of that product. Where one operand repeats one
    matrix over the batch (a stride-0 batch, as einsum's broadcasts make), the other's rows (or columns) meet that
    matrix in one [1, ...] product: no copy of the repeated operand, one GEMM. Operands whose rows are not
    contiguous (transposed views) are copied: one pass, where every later pass over them would stride."""
    batch, m, k = a3.shape
    n = b3.shape[2]
    if batch > 1 and b3.stride(0) == 0:
        return (_rows(a3.reshape(1, batch * m, k)), _rows(b3[:1]), lambda c: restore(c.view(batch, m, n)))
    if batch > 1 and a3.stride(0) == 0:
        return (
            _rows(a3[:1]),
            _rows(b3.permute(1, 0, 2).reshape(1, k, batch * n)),
            lambda c: restore(c.view(m, batch, n).transpose(0, 1).contiguous()),
        )
    return _rows(a3), _rows(b3), restore


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x if x.stride(-1) == 1 else x.contiguous()


def _min_magnitude(magnitudes: torch.Tensor) -> float:
    """The smallest nonzero entry of ``magnitudes`` (|x|, a temporary: overwritten), inf when it has none."""
    if magnitudes.numel() == 0:
        return math.inf
    smallest = magnitudes.min().item()  # 0 when there is a zero: then look again without the zeros
    return smallest if smallest > 0 else magnitudes.masked_fill_(magnitudes == 0, math.inf).min().item()


def _min_nonzero(x: torch.Tensor) -> float:
    """The smallest nonzero magnitude in x (inf when x has none)."""
    return _min_magnitude(x.abs())


def _unscaled_exact(dtype: torch.dtype, words: int, k: int, smallest: list[float], largest: list[float]) -> bool:
    """Whether a ``words``-word split of A and B themselves (float32 or float64, nonzero magnitudes between
    ``smallest`` and ``largest``) gives exactly 2**(e_i + f_j) times the engine result of the scaled operands, so
    that neither the scaling nor the scaling back need to run. Power-of-two scaling commutes with the split and
    with every fp32 product and sum as long as nothing leaves fp32's normal range in either: every nonzero rest
    of the split (at least |x| 2**-(p+1) for p significand bits; the value itself for one word) stays a normal
    bf16 value, so the bit-pattern rounding sees the same significand; every word product (at least
    ``smallest_a smallest_b`` times 2**-2 for one word, 2**-(p+2) for two, 2**-(2p+2) for three) is exact
    (a 16-bit significand at or above 2**-134); no word, product or partial sum overflows (|sum| <= 1.1 K
    max|A| max|B|); sums that fall below 2**-126 are exact anyway (both terms are multiples of 2**-149). The
    scaled operands' smallest magnitudes are at least smallest / (2 largest), so both sides are checked; the
    split modes' underflow certificate must hold at once as well."""
    if dtype not in (torch.float32, torch.float64) or not all(0 < s < math.inf for s in smallest):
        return False
    p = 24 if dtype is torch.float32 else 53
    rest = 1.0 if words == 1 else 2.0 ** -(p + 1)
    product = {1: 2.0**-2, 2: 2.0 ** -(p + 2)}.get(words, 2.0 ** (-2 * p - 2))
    ranges = [s / (2 * top) for s, top in zip(smallest, largest, strict=True)]
    return (
        max(largest) <= 2.0**125
        and k * largest[0] * largest[1] <= 2.0**124
        and min(smallest) * rest >= 2.0**-126
        and min(ranges) * rest >= 2.0**-126
        and smallest[0] * smallest[1] * product >= 2.0**-134
        and ranges[0] * ranges[1] * product >= 2.0**-134
        and small_terms_are_safe(*ranges)
    )


class _Scaled:
    """A [B, M, K] and B [B, K, N] with A's rows and B's columns scaled as ``_scaled`` does, handed out block by
    block: in float32 where float32 holds every scaled value exactly (the common case, and a faster split), else
    in float64. One pass over each operand finds its range, a second its scales; ``underflow_safe`` tells whether
    the split modes' underflow is certified at once (else ``certify`` checks each tile's entries).

    ``words`` (> 0: a split mode's word count) lets the operands run unscaled where that gives the same result
    exactly (``unscaled``, see _unscaled_exact): the blocks are then A and B themselves, and ``finish`` only
    rounds. ``split_into`` writes a block's bf16 words, ``finish`` scales a tile's engine result back. Without
    ``ranges`` (ozaki, which needs only the scales) the first pass is left out: blocks are then float64 and the
    underflow certificate is decided by ``certify``."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor, plan: Tiling, words: int = 0, ranges: bool = True) -> None:
        self.a, self.b, self.plan, self.k = a, b, plan, a.shape[-1]
        self.unscaled = self.bit_split = False
        self.underflow_safe: bool | None = None  # None: decided by certify
        if ranges:
            magnitudes = a.abs(), b.abs()
            self._ranges(magnitudes, words)
            if self.unscaled:
                self.float32 = a.dtype is torch.float32
                self.owns_a = self.owns_b = False
                return
            row_max, col_max = magnitudes[0].amax(-1).double(), magnitudes[1].amax(-2).double()
            del magnitudes
        else:  # the largest magnitudes from the extremes (no copy of the operands)
            row_max, col_max = (
                torch.maximum(-low, high).double() for low, high in (torch.aminmax(a, dim=-1), torch.aminmax(b, dim=-2))
            )
        self.e = torch.frexp(row_max)[1].unsqueeze(-1)  # [B, M, 1]
        self.f = torch.frexp(col_max)[1].unsqueeze(-2)  # [B, 1, N]
        *exponents, row_top, col_top = torch.stack(
            [
                self.e.min().double(),
                self.e.max().double(),
                self.f.min().double(),
                self.f.max().double(),
                row_max.max(),
                col_max.max(),
            ]
        ).tolist()
        if not (math.isfinite(row_top) and math.isfinite(col_top)):  # an inf or nan (amax propagates it)
            raise _NonFinite
        e_low, e_high, f_low, f_high = (int(x) for x in exponents)
        self.e_range, self.f_range = (e_low, e_high), (f_low, f_high)
        self.float32 = (
            a.dtype is not torch.float64
            and -126 <= min(e_low, f_low)
            and max(e_high, f_high) <= 126
            and self.underflow_safe is True
        )
        if self.float32:
            self.a_factor = None if e_low == e_high == 0 else torch.exp2(-self.e.float())
            self.b_factor = None if f_low == f_high == 0 else torch.exp2(-self.f.float())
        elif max(-e_low, e_high, -f_low, f_high) <= 1022:  # _ldexp's one-factor case
            self.a_factor, self.b_factor = torch.exp2(-self.e.double()), torch.exp2(-self.f.double())
        else:
            self.a_factor = self.b_factor = None
        # whether block_a and block_b hand out new tensors (a split may then overwrite them)
        self.owns_a = not self.float32 or self.a_factor is not None or a.dtype is not torch.float32
        self.owns_b = not self.float32 or self.b_factor is not None or b.dtype is not torch.float32
        self._finish_scales(e_low, e_high, f_low, f_high)

    def _ranges(self, magnitudes: tuple[torch.Tensor, torch.Tensor], words: int) -> None:
        """Each operand's smallest nonzero and largest magnitude (one pass, any inf or nan raises _NonFinite):
        the underflow certificate where it holds at once, ``unscaled`` and ``bit_split``."""
        extremes = torch.stack([x for m in magnitudes for x in torch.aminmax(m)]).double().tolist()
        if not (math.isfinite(extremes[1]) and math.isfinite(extremes[3])):  # inf, or nan (aminmax propagates it)
            raise _NonFinite
        smallest = [
            low if low > 0 else torch.where(m > 0, m, math.inf).amin().item()  # inf: no nonzero entry
            for low, m in zip(extremes[::2], magnitudes, strict=True)
        ]
        largest = [extremes[1], extremes[3]]
        # Every row's (column's) smallest nonzero magnitude over its scale is at least the operand's smallest over
        # twice its largest: when those pass small_terms_are_safe, every scaled value is a normal float32.
        ranges = [s / (2 * top) if top > 0 else math.inf for s, top in zip(smallest, largest, strict=True)]
        if small_terms_are_safe(*ranges):
            self.underflow_safe = True
        self.unscaled = words > 0 and _unscaled_exact(self.a.dtype, words, self.k, smallest, largest)
        # float64 blocks split by the bit pattern where every nonzero rest is a normal bf16 value (p bits: rests
        # are at least |x'| 2**-p)
        self.bit_split = self.unscaled or min(ranges) * 2.0 ** -(bits(self.a.dtype) + 1) >= 2.0**-126

    def _finish_scales(self, e_low: int, e_high: int, f_low: int, f_high: int) -> None:
        """The factors ``finish`` scales an fp32 engine result (|total| < 2 K) back with, where two in-place
        products give the exactly scaled value rounded once: in float32, 2**(e_i - e_low) (at least 1, exact
        unless it overflows, which the range excludes) and then 2**(f_j + e_low) (a normal float32: one
        rounding); in float64, 2**e_i (exact: no intermediate leaves float64's normal range) and then 2**f_j."""
        log_k = math.ceil(math.log2(2 * self.k))
        self.fp32_scales = self.fp64_scales = None
        if e_high - e_low + log_k <= 126 and -126 <= f_low + e_low and f_high + e_low <= 127:
            self.fp32_scales = (
                None if e_low == e_high else torch.exp2((self.e - e_low).float()),
                None if f_low + e_low == 0 == f_high + e_low else torch.exp2((self.f + e_low).float()),
            )
        if e_low - 149 >= -1022 and e_high + log_k <= 1022 and -1022 <= f_low and f_high <= 1023:
            self.fp64_scales = (
                None if e_low == e_high == 0 else torch.exp2(self.e.double()),
                None if f_low == f_high == 0 else torch.exp2(self.f.double()),
            )

    def block_a(self, bs, ms, ks) -> torch.Tensor:
        """The scaled block (A itself where ``unscaled``: read only)."""
        x = self.a[bs, ms, ks]
        if self.unscaled:
            return x
        if self.float32:
            return x.float() if self.a_factor is None else x.float() * self.a_factor[bs, ms]
        if self.a_factor is not None:
            return torch.mul(x, self.a_factor[bs, ms])  # float64, as _ldexp's one factor
        return _ldexp(x.double(), -self.e[bs, ms])

    def block_b(self, bs, ks, ns) -> torch.Tensor:
        x = self.b[bs, ks, ns]
        if self.unscaled:
            return x
        if self.float32:
            return x.float() if self.b_factor is None else x.float() * self.b_factor[bs, :, ns]
        if self.b_factor is not None:
            return torch.mul(x, self.b_factor[bs, :, ns])
        return _ldexp(x.double(), -self.f[bs, :, ns])

    def transposed(self) -> _Scaled:
        """The same scales for B^T A^T (B^T's rows are B's columns, scaled by 2**-f_j): operands, scales and their
        ranges, as _ozaki_f64 reads them; the plan stays this one's."""
        t = object.__new__(_Scaled)
        t.a, t.b, t.plan, t.k = self.b.mT, self.a.mT, self.plan, self.k
        t.e, t.f, t.e_range, t.f_range = self.f.mT, self.e.mT, self.f_range, self.e_range
        return t

    def whole(self) -> tuple[torch.Tensor, torch.Tensor]:
        everything = slice(None)
        return self.block_a(everything, everything, everything), self.block_b(everything, everything, everything)

    def split_into(self, x: torch.Tensor, words: list[torch.Tensor], owned: bool = False) -> None:
        """The bf16 words of the block ``x`` (as ``_words`` gives them) written into the float32 tensors ``words``
        (views of x's shape), largest first: float32 by the bit pattern, float64 by its 64-bit analogue
        (_nearest_bf16_bits) where ``bit_split`` vouches that every rest is a normal bf16 value, else by
        _nearest_bf16. ``x`` is overwritten where ``owned``, else only read; float64's rounding takes one scratch
        tensor for every word."""
        rest, scratch = x, None
        for t, word in enumerate(words):
            if rest.dtype is torch.float32:  # the rounding runs in the word's own bits
                torch.add(rest.view(torch.int32), 0x8000, out=word.view(torch.int32)).bitwise_and_(-0x10000)
                value = word
            else:
                if self.bit_split:
                    scratch = torch.add(rest.view(torch.int64), 2**44, out=scratch)
                    value = _nearest_bf16_bits(rest, scratch)
                else:
                    value = _nearest_bf16(rest)
                word.copy_(value)  # exact
            if t + 1 < len(words):
                rest = rest.sub_(value) if owned or t > 0 else rest - value  # exact

    def finish(self, total: torch.Tensor, bs, ms, ns, dtype: torch.dtype, finish=None) -> torch.Tensor:
        """A tile's fp32 engine result scaled back by 2**(e_i + f_j) and rounded once to ``dtype`` (or passed
        through ``finish``): as _ldexp in float64 then _round_to, in fewer passes where the range allows."""
        if self.unscaled:
            return total.to(dtype)  # no scale: exact (float32: the result itself)
        if finish is None and dtype is torch.float32 and self.fp32_scales is not None:
            rows, cols = self.fp32_scales
            if rows is not None:
                total.mul_(rows[bs, ms])
            if cols is not None:
                total.mul_(cols[bs, :, ns])
            return total
        if finish is None and dtype in (torch.float32, torch.float64) and self.fp64_scales is not None:
            rows, cols = self.fp64_scales
            y = total.double()
            if rows is not None:
                y.mul_(rows[bs, ms])
            if cols is not None:
                y.mul_(cols[bs, :, ns])
            return y.to(dtype)
        finish = finish or (lambda y: _round_to(y, dtype))
        return finish(_ldexp(total.double(), self.e[bs, ms] + self.f[bs, :, ns]))

    def certify(self, mode: str, tile=None) -> None:
        """The split's underflow certificate for one output tile (None: all of them), or a PrecisionError. The
        scaled operands' smallest nonzero magnitudes settle it at once for nearly all data; else each entry's
        |A'||B'| is bounded from below (_magnitude_lower) and must reach K UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE."""
        if self.underflow_safe is None:
            smallest = [
                min((_min_nonzero(self.block_a(*blk)) for blk in self.plan.a_blocks()), default=math.inf),
                min((_min_nonzero(self.block_b(*blk)) for blk in self.plan.b_blocks()), default=math.inf),
            ]
            self.underflow_safe = small_terms_are_safe(*smallest)
        if self.underflow_safe:
            return
        floor = underflow_floor(self.k)
        for bs, ms, ns in self.plan.tiles() if tile is None else [tile]:
            if bool((_magnitude_lower(self, bs, ms, ns, floor) < floor).any()):
                raise PrecisionError(
                    f"mode {mode!r} cannot vouch for its bound on these operands: some rows of A "
                    "or columns of B hold entries so much smaller than their largest (beyond "
                    "about 2**88 between the two operands) that their bf16 split underflows; "
                    "use precision='fp64'"
                )


def _mac(acc: torch.Tensor | None, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """acc + x @ y on [B, M, K] x [B, K, N], accumulated in place (x @ y where acc is None): every product of x @ y
    is added after acc's sum is complete, as the next products of one PSUM accumulation are."""
    return torch.bmm(x, y) if acc is None else acc.baddbmm_(x, y)


def _magnitude(scaled: _Scaled, bs, ms, ns) -> torch.Tensor:
    """One fast pass over |A'| and |B'| on one output tile, in fp32 over K-blocks: at most (1 + 2**-8)**2
    (1 + gamma_{K-1}) times |A'||B'| (magnitude_pass_growth: the inputs rounded to fp32, relative 2**-24 each, the
    products too, any summation order) plus what underflow takes (2**-149 per term, within UNDERFLOW_TERM)."""
    magnitude = None
    for ks in scaled.plan.depth:
        magnitude = _mac(magnitude, scaled.block_a(bs, ms, ks).float().abs(), scaled.block_b(bs, ks, ns).float().abs())
    assert magnitude is not None  # K > 0: the plan has a K-block
    return magnitude


def _magnitude_lower(scaled: _Scaled, bs, ms, ns, floor: float, magnitude: torch.Tensor | None = None) -> torch.Tensor:
    """A lower bound of |A'||B'| (float64) on one output tile from one fast pass (_magnitude, unless given), +inf
    where an entry has no nonzero term: the pass's growth and underflow undone. Only if some entry falls below
    ``floor`` does an exact pass over the 0/1 patterns find the entries without a nonzero term."""
    if magnitude is None:
        magnitude = _magnitude(scaled, bs, ms, ns)
    lower = magnitude.double() / magnitude_pass_growth(scaled.k) - scaled.k * UNDERFLOW_TERM
    if bool((lower < floor).any()):
        lower = torch.where(_has_terms(scaled, bs, ms, ns), lower, math.inf)
    return lower


def _smallest_lower(scaled: _Scaled, bs, ms, ns, floor: float, magnitude: torch.Tensor | None = None) -> float:
    """The smallest entry of _magnitude_lower on one tile (its fast pass given or made here), from the pass's
    smallest entry where that clears ``floor`` (x / growth - K UNDERFLOW_TERM is monotone, in float64 too)."""
    if magnitude is None:
        magnitude = _magnitude(scaled, bs, ms, ns)
    smallest = magnitude.min().item() / magnitude_pass_growth(scaled.k) - scaled.k * UNDERFLOW_TERM
    if smallest >= floor:
        return smallest
    return _magnitude_lower(scaled, bs, ms, ns, floor, magnitude).min().item()


def _has_terms(scaled: _Scaled, bs, ms, ns) -> torch.Tensor:
    """Where an entry of the tile has a nonzero term: sums of ones, positive exactly there whatever the rounding."""
    count = None
    for ks in scaled.plan.depth:
        count = _mac(count, (scaled.block_a(bs, ms, ks) != 0).float(), (scaled.block_b(bs, ks, ns) != 0).float())
    assert count is not None  # K > 0: the plan has a K-block
    return count > 0


def _pairs(n: int, level: int) -> list[tuple[int, int]]:
    """The word (digit) pairs (i, j), 1-based, of one level i + j == level among n words."""
    return [(i, level - i) for i in range(1, level) if i <= n and level - i <= n]
