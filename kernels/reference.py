"""Torch reference implementations of the precision modes: the executable specification of each mode.

Each takes [..., M, K] and [..., K, N] tensors (2-D or batched 3-D) and returns the product. They run on any
torch device (CPU, CUDA, Neuron through torch-neuronx).
"""

from __future__ import annotations

import functools
import math
import warnings

import torch

from .. import _dtypes


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
# written in such passes; their error bounds live in trn_backend/_precision.py.

U_FP32 = 2.0**-24
U_FP64 = 2.0**-53
# Ozaki-I digits: the first is in [-2**8, 2**8], later ones in [-2**7, 2**7], so every digit is exact in bf16,
# and a chunk of EXACT_CHUNK digit products (each at most 2**16) sums to an integer below 2**24 (exact).
SLICE_BITS = 8
EXACT_CHUNK = 2 ** (24 - 2 * SLICE_BITS)
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


def gamma(n: int, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n floating-point roundings."""
    return n * u / (1 - n * u) if n > 0 else 0.0


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
        finite_a, finite_b = torch.isfinite(a), torch.isfinite(b)
        if bool(finite_a.all()) and bool(finite_b.all()):
            return real_product(a, b, **params)
        c = real_product(torch.where(finite_a, a, 0), torch.where(finite_b, b, 0), **params)
        # Native arithmetic's inf/nan entries depend only on where the inf/nan, zero, positive and negative
        # entries are: the product of sign proxies (finite sums of +-1 elsewhere) has exactly those entries.
        proxy = torch.matmul(torch.where(finite_a, a.sign(), a).float(),
                             torch.where(finite_b, b.sign(), b).float())
        return torch.where(torch.isfinite(proxy), c, proxy.to(c.dtype))

    @functools.wraps(real_product)
    def mode(a: torch.Tensor, b: torch.Tensor, **params) -> torch.Tensor:
        a, b = _operands(a, b, real_product.__name__)
        if a.shape[-1] == 0:
            return torch.matmul(a, b)  # exact zeros
        if not a.is_complex():
            return finite_real(a, b, **params)
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return torch.complex(finite_real(ar, br, **params) - finite_real(ai, bi, **params),
                             finite_real(ar, bi, **params) + finite_real(ai, br, **params))

    return mode


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


def _chunked_engine_sum(a_words: list[torch.Tensor], b_words: list[torch.Tensor], chunk: int,
                        group: int) -> torch.Tensor:
    """Like _engine_sum on each K-chunk of ``chunk`` (one PSUM accumulation per chunk, smallest level first);
    each ``group`` consecutive chunk sums are added in fp32, and the group sums combined by Sum2 (vector-engine
    TwoSums): the error stops growing with K, and the TwoSums run once per ``group`` chunks."""
    k = a_words[0].shape[-1]
    pad = -k % chunk
    a_words = [torch.nn.functional.pad(w.float(), (0, pad)) for w in a_words]
    b_words = [torch.nn.functional.pad(w.float(), (0, 0, 0, pad)) for w in b_words]
    n = (k + pad) // chunk
    rows, cols = a_words[0].shape[-2], b_words[0].shape[-1]
    step = group * max(1, _GROUP_ELEMENTS // max(1, rows * cols * group))  # chunks at once: whole groups
    return _sum2(g for start in range(0, n, step)
                 for g in _group_sums(a_words, b_words, chunk, start, min(n, start + step), group))


def _group_sums(a_words, b_words, chunk: int, start: int, stop: int, group: int):
    """The group sums of chunks [start, stop): per chunk the levels smallest first, then ``group`` chunks added."""
    lo, hi = start * chunk, stop * chunk
    per_chunk = _engine_sum([w[..., lo:hi].unflatten(-1, (stop - start, chunk)).transpose(-3, -2) for w in a_words],
                            [w[..., lo:hi, :].unflatten(-2, (stop - start, chunk)) for w in b_words])
    for g in range(0, stop - start, group):
        parts = per_chunk[..., g:g + group, :, :].unbind(-3)
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        yield total


def _ldexp(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """x * 2**e (e broadcasts against x) exactly unless the result over/underflows. One factor where every
    2**e is a normal float64; else three factors of one sign (|e| <= 2148 keeps each finite and normal), so the
    magnitude moves monotonically and no intermediate leaves the range."""
    if bool((e.abs() <= 1022).all()):
        return x * torch.exp2(e.to(x.dtype))
    first = torch.div(e, 3, rounding_mode="floor")
    second = torch.div(e - first, 2, rounding_mode="floor")
    return x * torch.exp2(first.to(x.dtype)) * torch.exp2(second.to(x.dtype)) * torch.exp2(
        (e - first - second).to(x.dtype))


def _scaled(a: torch.Tensor, b: torch.Tensor):
    """A's rows and B's columns divided by powers of two 2**e_i, 2**f_j at or above their largest magnitude,
    in float64 (exact unless an entry is over 2**1022 times smaller than its row's largest), with the
    exponents: (A', e, B', f), |A'|, |B'| < 1."""
    a, b = a.double(), b.double()
    e = torch.frexp(a.abs().amax(-1, keepdim=True))[1]
    f = torch.frexp(b.abs().amax(-2, keepdim=True))[1]
    return _ldexp(a, -e), e, _ldexp(b, -f), f


def _split_fp32(a: torch.Tensor, b: torch.Tensor, words: int, mode: str, chunk: int | None = None,
                engine=torch.matmul, fused=None):
    """The engine result of a ``words``-word bf16 split of both operands (bf16 operands: one word), computed on
    power-of-two scaled rows of A and columns of B and scaled back in float64 (exact): a float64 tensor.
    ``fused(a_scaled, b_scaled, words)``, where given, computes the engine result from the scaled operands in
    one device program (the NKI kernels: split on chip, every product in PSUM); else the words are split here
    and each level is one ``engine`` pass."""
    if words > 1 and _single_word(a, mode):
        words = 1
    a_scaled, e, b_scaled, f = _split_operands(a, b, mode)
    if fused is not None:
        total = fused(a_scaled, b_scaled, words)
    else:
        a_words, b_words = _words(a_scaled, words), _words(b_scaled, words)
        total = (_engine_sum(a_words, b_words, engine) if chunk is None
                 else _chunked_engine_sum(a_words, b_words, chunk, BF16X6_GROUP))
    return _ldexp(total.double(), e + f)


def _split_operands(a: torch.Tensor, b: torch.Tensor, mode: str):
    """(A', e, B', f) as ``_scaled`` gives them, with the underflow of the split certified (or a PrecisionError):
    in float32 where float32 holds the scaled values exactly (the common case, and a faster split)."""
    if a.dtype is not torch.float64:
        scaled = _scaled_float32(a.float(), b.float())
        if scaled is not None:
            return scaled
    a_scaled, e, b_scaled, f = _scaled(a, b)
    if not _small_terms_are_safe(_min_nonzero(a_scaled), _min_nonzero(b_scaled)):
        _certify_underflow(a_scaled, b_scaled, mode)
    return a_scaled, e, b_scaled, f


def _scaled_float32(a: torch.Tensor, b: torch.Tensor):
    """``_scaled`` in float32, or None where that could lose a bit or leave the cheap underflow test unsure.
    Every row's (column's) smallest nonzero magnitude over its scale is at least the operand's smallest over
    twice its largest, so when those pass ``_small_terms_are_safe`` every scaled value is a normal float32."""
    row_max, col_max = a.abs().amax(-1, keepdim=True), b.abs().amax(-2, keepdim=True)
    e, f = torch.frexp(row_max)[1], torch.frexp(col_max)[1]
    if a.numel() == 0 or b.numel() == 0 or not (bool((e.abs() <= 126).all()) and bool((f.abs() <= 126).all())):
        return None
    largest = [row_max.max().item(), col_max.max().item()]
    ranges = [_min_nonzero(x) / (2 * top) if top > 0 else math.inf for x, top in zip((a, b), largest, strict=True)]
    if not _small_terms_are_safe(*ranges):
        return None
    return a * torch.exp2(-e.float()), e, b * torch.exp2(-f.float()), f


def _min_nonzero(x: torch.Tensor) -> float:
    """The smallest nonzero magnitude in x (inf when x has none)."""
    if x.numel() == 0:
        return math.inf
    magnitudes = x.abs()
    smallest = magnitudes.min().item()  # 0 when x holds a zero: then look again without the zeros
    return smallest if smallest > 0 else magnitudes.masked_fill_(magnitudes == 0, math.inf).min().item()


def _small_terms_are_safe(smallest_a: float, smallest_b: float) -> bool:
    """Whether every nonzero product term |a'| |b'| (scaled operands whose smallest nonzero magnitudes are
    these) is at least UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE: underflow then costs at most UNDERFLOW_ALLOWANCE
    of each term, hence of |A||B| (zero terms cost nothing)."""
    return smallest_a * smallest_b >= UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE


def _certify_underflow(a_scaled: torch.Tensor, b_scaled: torch.Tensor, mode: str) -> None:
    """Operands with tiny entries beside large ones: the underflow of a split (at most UNDERFLOW_TERM per term,
    K terms) must stay within UNDERFLOW_ALLOWANCE of every entry's |A'||B'|, measured from below by one pass."""
    floor = a_scaled.shape[-1] * UNDERFLOW_TERM / UNDERFLOW_ALLOWANCE
    if bool((_magnitude_lower(a_scaled, b_scaled, floor) < floor).any()):
        raise PrecisionError(f"mode {mode!r} cannot vouch for its bound on these operands: some rows of A "
                             "or columns of B hold entries so much smaller than their largest (beyond about "
                             "2**88 between the two operands) that their bf16 split underflows; use "
                             "precision='kahan'")


def _magnitude_lower(a_scaled: torch.Tensor, b_scaled: torch.Tensor, floor: float) -> torch.Tensor:
    """A lower bound of |A'||B'| (float64) from one fast pass, +inf where an entry has no nonzero term. The pass
    rounds |A'|, |B'| to bf16 (relative 2**-8 each), sums in fp32 (gamma_{K-1}) and may underflow (at most
    UNDERFLOW_TERM per term): undo all three. Only if some entry falls below ``floor`` does an exact pass over
    the 0/1 patterns find the entries without a nonzero term."""
    k = a_scaled.shape[-1]
    magnitude = _engine_sum([_round_to(a_scaled.abs(), torch.bfloat16)],
                            [_round_to(b_scaled.abs(), torch.bfloat16)]).double()
    lower = magnitude / ((1 + 2.0**-8) ** 2 * (1 + gamma(k - 1, U_FP32))) - k * UNDERFLOW_TERM
    if bool((lower < floor).any()):
        nonzero = torch.matmul((a_scaled != 0).float(), (b_scaled != 0).float()) > 0
        lower = torch.where(nonzero, lower, math.inf)
    return lower


@_emulated
def fast(a: torch.Tensor, b: torch.Tensor, *, engine=torch.matmul) -> torch.Tensor:
    """Inputs rounded to bf16, one engine pass (fp32 accumulation), rounded to the operand dtype. ``engine``
    runs the pass on fp32 tensors holding bf16 values (the kernel layer's NKI route passes the NKI kernel)."""
    return _round_to(_split_fp32(a, b, 1, "fast", engine=engine), a.dtype)


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
    seeds it); for float32/float64 outputs there is no rounding to randomise and sr equals fast."""
    y = _split_fp32(a, b, 1, "sr")
    if torch.finfo(a.dtype).eps <= torch.finfo(torch.float32).eps:
        return _round_to(y, a.dtype)
    return _stochastic_round(y, a.dtype, generator)


@_emulated
def dd(a: torch.Tensor, b: torch.Tensor, *, fused=None) -> torch.Tensor:
    """Two-word bf16 split, three products (hi*hi, hi*lo, lo*hi), fp32 accumulation smallest products first:
    three engine passes. ``fused``: see _split_fp32 (the kernel layer's NKI route)."""
    return _round_to(_split_fp32(a, b, 2, "dd", fused=fused), a.dtype)


@_emulated
def bf16x6(a: torch.Tensor, b: torch.Tensor, *, fused=None) -> torch.Tensor:
    """Three-word bf16 split, six products, PSUM chunks of BF16X6_CHUNK of K added in groups and combined with
    TwoSum: six engine passes, at least as accurate as an fp32 SGEMM. ``fused``: see _split_fp32."""
    return _round_to(_split_fp32(a, b, 3, "bf16x6", BF16X6_CHUNK, fused=fused), a.dtype)


def _digits(x: torch.Tensor, slices: int) -> list[torch.Tensor]:
    """Signed base-2**SLICE_BITS digits q_t of x in [-1, 1] (x ~ sum_t q_t 2**(-SLICE_BITS t)), as
    integer-valued float64 tensors; every step is exact."""
    digits = []
    for _ in range(slices):
        x = x * 2.0**SLICE_BITS
        digits.append(torch.round(x))
        x = x - digits[-1]
    return digits


def _needed_slices(a: torch.Tensor, b: torch.Tensor, slices: int) -> int:
    """``slices``, raised until ozaki_error(s, rho) <= ozaki_error(slices), with rho = K / min |A'||B'| over the
    entries that have a nonzero term (a lower bound from one fast pass): an entry whose lower bound is not
    positive needs a range no slice count covers."""
    smallest = _magnitude_lower(a, b, math.ulp(0.0)).min().item() if a.numel() and b.numel() else math.inf
    rho = 1.0 if smallest == math.inf else a.shape[-1] / smallest if smallest > 0 else math.inf
    budget = ozaki_error(slices)
    needed = next((s for s in range(slices, MAX_SLICES + 1) if ozaki_error(s, rho) <= budget), None)
    if needed is None:
        raise PrecisionError(f"mode 'ozaki' would need more than {MAX_SLICES} slices for operands whose "
                         f"rows/columns span a dynamic range of {rho:.3g} (x K); use precision='kahan'")
    return needed


def ozaki_slices(a: torch.Tensor, b: torch.Tensor, slices: int | None = None) -> int:
    """The slice count ``ozaki`` uses on these finite real operands: ``slices`` (default: the dtype's), raised
    where the data's row/column dynamic range needs more to keep the published bound."""
    a, b = _operands(a, b, "ozaki")
    s = ozaki_default_slices(a.dtype) if slices is None else _check_slices(slices)
    a, _, b, _ = _scaled(a, b)
    return _needed_slices(a, b, s)


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


@_emulated
def ozaki(a: torch.Tensor, b: torch.Tensor, *, slices: int | None = None, levels=exact_levels) -> torch.Tensor:
    """Ozaki scheme I on the bf16 engine: rows of A and columns of B scaled by powers of two, cut into signed
    8-bit digit slices, digit pairs with i + j <= s + 1 multiplied exactly per K-chunk, the exact level sums
    combined by Sum2 in float64 on the host: s(s+1)/2 passes, plus one fast pass checking the dynamic range.
    ``levels(a_digits, b_digits)`` computes the exact level sums (the kernel layer's NKI route passes the
    kernel; any exact computation gives bit-identical results)."""
    if _single_word(a, "ozaki"):
        return _round_to(_split_fp32(a, b, 1, "ozaki"), a.dtype)
    s = ozaki_default_slices(a.dtype) if slices is None else _check_slices(slices)
    a_scaled, e, b_scaled, f = _scaled(a, b)
    s = _needed_slices(a_scaled, b_scaled, s)
    a_digits = [d.to(torch.bfloat16) for d in _digits(a_scaled, s)]  # exact
    b_digits = [d.to(torch.bfloat16) for d in _digits(b_scaled, s)]
    sums = levels(a_digits, b_digits)
    total = _sum2(sums[level] * 2.0 ** (-SLICE_BITS * level) for level in range(s + 1, 1, -1))
    return _round_to(_ldexp(total, e + f), a.dtype)


def kahan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Promotion to float64 (complex128) on the host, one product there, rounded to the operand dtype."""
    a, b = _operands(a, b, "kahan")
    if a.is_complex():
        return native(a.to(torch.complex128), b.to(torch.complex128)).to(a.dtype)
    return _round_to(torch.matmul(a.double(), b.double()), a.dtype)


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
