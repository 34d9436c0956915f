"""Torch reference implementations of the precision modes: the executable specification of each mode.

Each takes [..., M, K] and [..., K, N] tensors (2-D or batched 3-D) and returns the product. They run on any
torch device (CPU, CUDA, Neuron through torch-neuronx).
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import torch

from . import dtypes as _dtypes
from .bounds import (  # noqa: F401  (the numbers and bounds each mode is defined by, published here too)
    BF16X6_CHUNK,
    BF16X6_GROUP,
    DIGIT_GROWTH,
    MAX_SLICES,
    OZAKI_RANGE,
    SLICE_BITS,
    U_FP32,
    U_FP64,
    UNDERFLOW_ALLOWANCE,
    UNDERFLOW_TERM,
    gamma,
    magnitude_pass_growth,
    ozaki_default_slices,
    ozaki_error,
    small_terms_are_safe,
    underflow_floor,
)


def native(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The operand dtype and the device's own arithmetic; integer and bool products are exact (modular for
    integers, logical for bool, as in NumPy)."""
    if a.is_complex():
        return _textbook_specials(torch.matmul(a, b), a, b)
    if a.is_floating_point():
        return torch.matmul(a, b)
    return _exact(a, b)


def _textbook_specials(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A complex product ``c`` with the entries an inf or nan input feeds set as IEEE arithmetic on the textbook
    formula sets them (Re = sum ar br - ai bi, Im = sum ar bi + ai br: NumPy's and Python's ``inf+nanj`` for
    (inf+0j)(1+0j)). torch's complex GEMM makes all of them nan+nanj; four real products keep the pattern,
    and the emulated modes, which are four real products, give it too."""
    rows, cols = torch.isfinite(a).all(-1), torch.isfinite(b).all(-2)
    if bool(rows.all()) and bool(cols.all()):
        return c
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    textbook = torch.complex(torch.matmul(ar, br) - torch.matmul(ai, bi), torch.matmul(ar, bi) + torch.matmul(ai, br))
    return torch.where(rows.unsqueeze(-1) & cols.unsqueeze(-2), c, textbook)


def _exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Integer GEMM in a dtype torch supports (uint16/32/64 wrap back exactly, bool counts true products). torch
    has integer GEMM only on the CPU; elsewhere a broadcast multiply-sum (M*K*N memory) keeps it exact."""
    dtype = a.dtype
    if dtype is torch.bool:
        a, b = a.to(torch.int64), b.to(torch.int64)
    else:
        a, b = _dtypes.compute(a), _dtypes.compute(b)
    c = torch.matmul(a, b) if a.device.type == "cpu" else _multiply_sum(a, b)
    return c > 0 if dtype is torch.bool else _dtypes.restore(c, dtype)


def _multiply_sum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[..., M, K] x [..., K, N] as a broadcast product summed over K: exact integer arithmetic on any device."""
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


# --- Emulated Tensor Engine modes ---------------------------------------------------------------------------
# The Trainium Tensor Engine multiplies bf16 operands (a product of two 8-bit significands is exact in fp32)
# and accumulates in fp32 PSUM, so an fp32 matmul of bf16-representable values *is* one engine pass, up to the
# order of the fp32 additions (the bounds in docs/precision.md allow for any order). Every mode below is
# written in such passes; their error bounds live in kernels/bounds.py.

# The chunks of exact digit products: a chunk of EXACT_CHUNK digit products (each at most 2**16) sums to an
# integer below 2**24 (exact in fp32).
EXACT_CHUNK = 2 ** (24 - 2 * SLICE_BITS)
_GROUP_ELEMENTS = 2**22  # chunk products materialised at once (memory cap of the chunked passes)
_WARNED: set[str] = set()
_NARROW_BITS = {torch.bfloat16: 8, torch.float16: 11}  # significand bits of the sub-fp32 formats


class PrecisionWarning(UserWarning):
    """A precision mode ran as a cheaper one because the operands leave nothing more to gain."""


class PrecisionError(ValueError):
    """A precision mode or target that cannot be honoured (operands whose range a mode cannot vouch for, a target
    no mode reaches). The message starts with the function that raised it; the front doors (einsum, matmul, ...)
    rename it to the function the user called."""

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
        yield torch.matmul(x[..., start:start + step, :, :], y[..., start:start + step, :, :])


def _two_sum(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """s + e == a + b exactly, with s = fl(a + b) (Knuth's TwoSum: six fp32 operations, no branch)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _sum2(parts) -> torch.Tensor:
    """Ogita-Rump-Oishi Sum2: the parts added with TwoSum into a (hi, lo) pair, rounded once at the end;
    error <= u |sum| + gamma_{n-1}**2 sum |part|."""
    hi = lo = None
    for part in parts:
        if hi is None:
            hi, lo = part, torch.zeros_like(part)
        else:
            hi, err = _two_sum(hi, part)
            lo = lo + err
    return hi + lo


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
# ozaki's int8 GEMM sums at most MAX_SLICES digit-piece products of magnitude <= 2**14 per K index: int32 holds
# them exactly for K-blocks of up to this many (2**31 / (16 * 2**14) = 8192, halved for margin).
_INT_DEPTH = 2**30 // (MAX_SLICES * 2**14)


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


@_emulated
def fast(a: torch.Tensor, b: torch.Tensor, *, engine=torch.matmul) -> torch.Tensor:
    """Inputs rounded to bf16, one engine pass (fp32 accumulation), rounded to the operand dtype. ``engine``
    runs the pass on fp32 tensors holding bf16 values (the kernel layer's NKI route passes the NKI kernel)."""
    return _split_fp32(a, b, 1, "fast", engine=engine)


def _stochastic_round(y: torch.Tensor, dtype: torch.dtype, generator: torch.Generator | None) -> torch.Tensor:
    """y (float32 or float64) rounded to ``dtype`` up or down to a neighbour, up with probability equal to the
    fractional distance: unbiased. Exact values, inf, nan and overflow round as round-to-nearest does (a cast
    that rounds twice still lands on one of y's two neighbours, which is all ``nearest`` is used for)."""
    nearest = y.to(dtype)
    down = torch.nextafter(nearest, nearest.new_tensor(-torch.inf))
    below = torch.where(nearest.to(y.dtype) > y, down, nearest)
    above = torch.nextafter(below, below.new_tensor(torch.inf))
    fraction = (y - below.to(y.dtype)) / (above.to(y.dtype) - below.to(y.dtype))
    draw = torch.rand(y.shape, generator=generator, device=y.device)
    rounded = torch.where(draw < fraction, above, below)
    return torch.where(torch.isfinite(nearest), rounded, nearest)


@_emulated
def sr(a: torch.Tensor, b: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """fast, with stochastic rounding of the fp32 result when the output dtype is bf16 or fp16 (``generator``
    seeds it; tile by tile, in tile order); for float32/float64 outputs there is no rounding to randomise and sr
    equals fast."""
    if torch.finfo(a.dtype).eps <= torch.finfo(torch.float32).eps:
        return _split_fp32(a, b, 1, "sr")
    return _split_fp32(a, b, 1, "sr", finish=lambda y: _stochastic_round(y, a.dtype, generator))


@_emulated
def dd(a: torch.Tensor, b: torch.Tensor, *, fused=None) -> torch.Tensor:
    """Two-word bf16 split, three products (hi*hi, hi*lo, lo*hi), fp32 accumulation smallest products first:
    three engine passes. ``fused``: see _split_fp32 (the kernel layer's NKI route)."""
    return _split_fp32(a, b, 2, "dd", fused=fused)


@_emulated
def bf16x6(a: torch.Tensor, b: torch.Tensor, *, fused=None) -> torch.Tensor:
    """Three-word bf16 split, six products, PSUM chunks of BF16X6_CHUNK of K added in groups and combined with
    TwoSum: six engine passes, at least as accurate as an fp32 SGEMM. ``fused``: see _split_fp32."""
    return _split_fp32(a, b, 3, "bf16x6", BF16X6_CHUNK, fused=fused)


def _digits(x: torch.Tensor, slices: int) -> list[torch.Tensor]:
    """Signed base-2**SLICE_BITS digits q_t of x in [-1, 1] (x ~ sum_t q_t 2**(-SLICE_BITS t)), as
    integer-valued tensors of x's dtype; every step is exact (in float32 too, for float32 values)."""
    digits = []
    for _ in range(slices):
        x = x * 2.0**SLICE_BITS
        digits.append(torch.round(x))
        x = x - digits[-1]
    return digits


def _needed_slices(scaled: _Scaled, slices: int) -> int:
    """``slices``, raised until ozaki_error(s, rho) <= ozaki_error(slices), with rho = K / min |A'||B'| over the
    entries that have a nonzero term (a lower bound from one fast pass, tile by tile): an entry whose lower bound
    is not positive needs a range no slice count covers."""
    smallest = min((_magnitude_lower(scaled, *tile, math.ulp(0.0)).min().item() for tile in scaled.plan.tiles()),
                   default=math.inf)
    rho = 1.0 if smallest == math.inf else scaled.k / smallest if smallest > 0 else math.inf
    budget = ozaki_error(slices)
    needed = next((s for s in range(slices, MAX_SLICES + 1) if ozaki_error(s, rho) <= budget), None)
    if needed is None:
        raise PrecisionError(f"mode 'ozaki' would need more than {MAX_SLICES} slices for operands whose "
                             f"rows/columns span a dynamic range of {rho:.3g} (x K); use precision='kahan'")
    return needed


def _ozaki_scaled(a: torch.Tensor, b: torch.Tensor) -> tuple[_Scaled, object]:
    """ozaki's blocking (K-blocks short enough for exact int32 sums) and scaled operands, in [B, M, K] form."""
    a3, b3, restore = _batched(a, b)
    return _Scaled(a3, b3, _Plan(*a3.shape, b3.shape[-1], depth=_INT_DEPTH, deep=True)), restore


def ozaki_slices(a: torch.Tensor, b: torch.Tensor, slices: int | None = None) -> int:
    """The slice count ``ozaki`` uses on these finite real operands: ``slices`` (default: the dtype's), raised
    where the data's row/column dynamic range needs more to keep the published bound."""
    a, b = _operands(a, b, "ozaki")
    s = ozaki_default_slices(a.dtype) if slices is None else _check_slices(slices)
    if 0 in (*a.shape[-2:], b.shape[-1]):
        return s
    return _needed_slices(_ozaki_scaled(a, b)[0], s)


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


def _int8_pieces(digit: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
    """A digit block q (integer values in [-256, 256]) as weighted int8 pieces, q = sum w piece. int8 holds
    [-128, 127]: a block within it is one piece (digits past the data's significand, which are 0, or short
    blocks); any other is split as q = 2 h + l with h = min(floor(q / 2), 127) and l in {0, 1, 2}: the first
    digit (+-256), and most blocks of later digits, which reach 128 in about 1 entry of 500 (a fraction below
    2**-9 rounding down in the digit before). Every piece entry is at most 2**7 in magnitude."""
    low, high = torch.aminmax(digit)
    if low >= -128 and high <= 127:
        return [(1, digit.to(torch.int8))]
    whole = digit.to(torch.int16)  # exact: |q| <= 256
    half = (whole >> 1).clamp_(max=127)  # floor(q / 2)
    return [(2, half.to(torch.int8)), (1, whole.sub_(half, alpha=2).to(torch.int8))]


def _int8_levels(a_digits: list[torch.Tensor], b_digits: list[torch.Tensor],
                 sums: dict[int, torch.Tensor]) -> None:
    """Add every level's exact sum of digit products to ``sums`` (int64, created where missing) on the CPU's
    int8 GEMM: each digit as weighted int8 pieces (_int8_pieces), so a digit product is a weighted sum of piece
    products (q r = 4 h h' + 2 (h l' + l h') + l l' for two split digits, q r for two whole ones). Per level, the
    piece products of one weight run as one GEMM over the pairs joined along K: int32 sums, per K index and
    digit pair at most 2**14 in one GEMM, so a K-block of _INT_DEPTH keeps them below 2**31."""
    a_pieces, b_pieces = [_int8_pieces(d) for d in a_digits], [_int8_pieces(d) for d in b_digits]
    for level in range(len(a_digits) + 1, 1, -1):
        if level not in sums:
            sums[level] = torch.zeros(a_digits[0].shape[0], a_digits[0].shape[1], b_digits[0].shape[2],
                                      dtype=torch.int64)
        by_weight: dict[int, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        for i, j in _pairs(len(a_digits), level):
            for (wa, x), (wb, y) in itertools.product(a_pieces[i - 1], b_pieces[j - 1]):
                xs, ys = by_weight.setdefault(wa * wb, ([], []))
                xs.append(x)
                ys.append(y)
        # A weighted sum of piece products is at most (2 * 128 + 2)**2 per K index and pair: where K times that
        # for every pair stays below 2**31, the level's weights apply in int32 and it reaches int64 in one add.
        in_int32 = len(_pairs(len(a_digits), level)) * 258**2 * a_digits[0].shape[-1] < 2**31
        level_sums: list[torch.Tensor | None] = [None] * a_digits[0].shape[0]
        for weight, (xs, ys) in by_weight.items():
            x, y = (xs[0], ys[0]) if len(xs) == 1 else (torch.cat(xs, dim=-1), torch.cat(ys, dim=-2))
            for n in range(x.shape[0]):
                product = torch._int_mm(x[n], y[n])
                if not in_int32:
                    sums[level][n].add_(product, alpha=weight)
                elif level_sums[n] is None:
                    level_sums[n] = product if weight == 1 else product.mul_(weight)
                else:
                    level_sums[n].add_(product, alpha=weight)
        for n, level_sum in enumerate(level_sums):
            if level_sum is not None:
                sums[level][n].add_(level_sum)


def _block_levels(a_digits: list[torch.Tensor], b_digits: list[torch.Tensor], sums: dict[int, torch.Tensor]) -> None:
    """Add the exact level sums of one K-block of digits to ``sums``: int8 GEMMs where torch has them (the CPU,
    int64 sums), else the fp32 engine chunks of ``exact_levels`` (float64 sums). Exact either way."""
    if a_digits[0].device.type == "cpu" and hasattr(torch, "_int_mm"):
        _int8_levels(a_digits, b_digits, sums)
        return
    block = exact_levels([d.to(torch.bfloat16) for d in a_digits], [d.to(torch.bfloat16) for d in b_digits])
    for level, total in block.items():
        sums[level] = total if level not in sums else sums[level].add_(total)  # exact: below 2**53


def _ozaki_combine_levels(sums: dict[int, torch.Tensor], slices: int, scale: torch.Tensor,
                          dtype: torch.dtype) -> torch.Tensor:
    """The exact level sums combined by Sum2 in float64, scaled back by 2**(e_i + f_j) and rounded to ``dtype``."""
    total = _sum2(sums[level] * 2.0 ** (-SLICE_BITS * level) for level in range(slices + 1, 1, -1))
    return _round_to(_ldexp(total, scale), dtype)


@_emulated
def ozaki(a: torch.Tensor, b: torch.Tensor, *, slices: int | None = None, levels=exact_levels) -> torch.Tensor:
    """Ozaki scheme I on the bf16 engine: rows of A and columns of B scaled by powers of two, cut into signed
    8-bit digit slices, digit pairs with i + j <= s + 1 multiplied exactly, the exact level sums combined by Sum2
    in float64 on the host: s(s+1)/2 passes, plus one fast pass checking the dynamic range. ``levels(a_digits,
    b_digits)`` computes the exact level sums of the whole operands' digits (the kernel layer's NKI route passes
    the kernel); by default they are computed tile by tile and K-block by K-block (exact, so bit-identical)."""
    if _single_word(a, "ozaki"):
        return _split_fp32(a, b, 1, "ozaki")
    s = ozaki_default_slices(a.dtype) if slices is None else _check_slices(slices)
    scaled, restore = _ozaki_scaled(a, b)
    s = _needed_slices(scaled, s)
    if levels is not exact_levels:
        a_scaled, b_scaled = scaled.whole()
        sums = levels([d.to(torch.bfloat16) for d in _digits(restore(a_scaled), s)],  # exact
                      [d.to(torch.bfloat16) for d in _digits(restore(b_scaled), s)])
        sums = {level: total.reshape(a_scaled.shape[0], a_scaled.shape[1], -1) for level, total in sums.items()}
        return restore(_ozaki_combine_levels(sums, s, scaled.e + scaled.f, a.dtype))
    out = a.new_empty(scaled.a.shape[0], scaled.a.shape[1], scaled.b.shape[2])
    for bs, ms, ns in scaled.plan.tiles():
        sums: dict[int, torch.Tensor] = {}
        for ks in scaled.plan.depth:
            _block_levels(_digits(scaled.block_a(bs, ms, ks), s), _digits(scaled.block_b(bs, ks, ns), s), sums)
        sums = {level: total.double() for level, total in sums.items()}  # exact: below 2**53
        out[bs, ms, ns] = _ozaki_combine_levels(sums, s, scaled.e[bs, ms] + scaled.f[bs, :, ns], a.dtype)
    return restore(out)


def kahan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Promotion to float64 (complex128) on the host, one product there, rounded to the operand dtype. Real
    operands run tile by tile and K-block by K-block (float64 copies of one block at a time; any summation order
    keeps gamma_K)."""
    a, b = _operands(a, b, "kahan")
    if a.is_complex():
        return native(a.to(torch.complex128), b.to(torch.complex128)).to(a.dtype)
    a3, b3, restore = _batched(a, b)
    if 0 in (*a3.shape, b3.shape[-1]):
        return torch.matmul(a, b)
    plan = _Plan(*a3.shape, b3.shape[-1])
    out = a3.new_empty(a3.shape[0], a3.shape[1], b3.shape[2])
    for bs, ms, ns in plan.tiles():
        total = None
        for ks in plan.depth:
            total = _mac(total, a3[bs, ms, ks].double(), b3[bs, ks, ns].double())
        out[bs, ms, ns] = _round_to(total, a.dtype)
    return restore(out)


MODES = {
    "native": native,
    "fast": fast,
    "sr": sr,
    "dd": dd,
    "bf16x6": bf16x6,
    "ozaki": ozaki,
    "kahan": kahan,
    "fp64": kahan,
}
