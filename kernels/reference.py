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
    if a.is_floating_point() or a.is_complex():
        return torch.matmul(a, b)
    return _exact(a, b)


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
# bf16x6 accumulates at most this many products per PSUM chunk and adds the chunks with TwoSum: its error
# stops growing with K, which keeps it at least as accurate as an fp32 SGEMM (plain PSUM accumulation is not).
BF16X6_CHUNK = 256
# Ozaki's error is relative to 2**e_i * 2**f_j (row and column scales). Its published bound assumes rho, the
# ratio K * 2**e_i * 2**f_j / (|A||B|)_ij, is at most OZAKI_RANGE; one fast pass over |A|, |B| measures rho
# and the kernel adds slices where the data needs them, so the bound holds for any input (barring underflow).
OZAKI_RANGE = 64.0
DIGIT_GROWTH = (2 + 1 / (1 - 2.0**-SLICE_BITS)) ** 2
MAX_SLICES = 16
_GROUP_ELEMENTS = 2**22  # chunk products materialised at once (memory cap of the chunked passes)
_WARNED: set[str] = set()
_NARROW_BITS = {torch.bfloat16: 8, torch.float16: 11}  # significand bits of the sub-fp32 formats


class PrecisionWarning(UserWarning):
    """A precision mode ran as a cheaper one because the operands leave nothing more to gain."""


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


def _words(x: torch.Tensor, n: int, mode: str) -> list[torch.Tensor]:
    """x as n bf16 words, largest first: each word is the nearest bf16 to what the previous ones leave, and
    the remainders are exact in float32 (float64 for float64 data)."""
    rest = x if x.dtype is torch.float64 else x.float()
    words = [_round_to(rest, torch.bfloat16)]
    if bool(torch.isinf(words[0]).any()):
        big = rest[torch.isinf(words[0])][0].item()
        raise ValueError(f"kernels: mode {mode!r} cannot represent the finite operand value {big:g} in bf16 "
                         "(its range ends near 3.39e38); use precision='ozaki' or 'kahan'")
    for _ in range(n - 1):
        rest = rest - words[-1].to(rest.dtype)
        words.append(_round_to(rest, torch.bfloat16))
    return words


def _level(a_words: list[torch.Tensor], b_words: list[torch.Tensor], level: int):
    """The products w_i v_j with i + j == level (1-based) as one engine pass: operands joined along K."""
    pairs = [(i, level - i) for i in range(1, level) if i <= len(a_words) and level - i <= len(b_words)]
    return (torch.cat([a_words[i - 1] for i, _ in pairs], dim=-1).float(),
            torch.cat([b_words[j - 1] for _, j in pairs], dim=-2).float())


def _engine_sum(a_words: list[torch.Tensor], b_words: list[torch.Tensor]) -> torch.Tensor:
    """Sum of w_i v_j over i + j <= n + 1: one fp32 PSUM accumulation per level, smallest level first."""
    n = len(a_words)
    total = None
    for level in range(n + 1, 1, -1):
        part = torch.matmul(*_level(a_words, b_words, level))
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


def _compensated_engine_sum(a_words: list[torch.Tensor], b_words: list[torch.Tensor],
                            chunk: int) -> torch.Tensor:
    """Like _engine_sum, but each PSUM accumulation covers at most ``chunk`` products and the chunk sums are
    added with Sum2 in fp32 (vector-engine TwoSums)."""
    n = len(a_words)
    return _sum2(part for level in range(n + 1, 1, -1)
                 for group in _chunk_sums(*_level(a_words, b_words, level), chunk) for part in group.unbind(-3))


def _split_fp32(a: torch.Tensor, b: torch.Tensor, words: int, mode: str, chunk: int | None = None):
    """The fp32 engine result of a ``words``-word bf16 split of both operands (bf16 operands: one word)."""
    if words > 1 and _single_word(a, mode):
        words = 1
    a_words, b_words = _words(a, words, mode), _words(b, words, mode)
    if chunk is None:
        return _engine_sum(a_words, b_words)
    return _compensated_engine_sum(a_words, b_words, chunk)


@_emulated
def fast(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Inputs rounded to bf16, one engine pass (fp32 accumulation), rounded to the operand dtype."""
    return _split_fp32(a, b, 1, "fast").to(a.dtype)


def _stochastic_round(y: torch.Tensor, dtype: torch.dtype, generator: torch.Generator | None) -> torch.Tensor:
    """y (fp32) rounded to ``dtype`` up or down to a neighbour, up with probability equal to the fractional
    distance: unbiased. Exact values, inf, nan and overflow round as round-to-nearest does."""
    nearest = y.to(dtype)
    down = torch.nextafter(nearest, nearest.new_tensor(-torch.inf))
    below = torch.where(nearest.float() > y, down, nearest)
    above = torch.nextafter(below, below.new_tensor(torch.inf))
    fraction = (y - below.float()) / (above.float() - below.float())
    draw = torch.rand(y.shape, generator=generator, device=y.device)
    rounded = torch.where(draw < fraction, above, below)
    return torch.where(torch.isfinite(nearest), rounded, nearest)


@_emulated
def sr(a: torch.Tensor, b: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """fast, with stochastic rounding of the fp32 result when the output dtype is bf16 or fp16 (``generator``
    seeds it); for float32/float64 outputs there is no rounding to randomise and sr equals fast."""
    y = _split_fp32(a, b, 1, "sr")
    if torch.finfo(a.dtype).eps <= torch.finfo(torch.float32).eps:
        return y.to(a.dtype)
    return _stochastic_round(y, a.dtype, generator)


@_emulated
def dd(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Two-word bf16 split, three products (hi*hi, hi*lo, lo*hi), fp32 accumulation: three engine passes."""
    return _split_fp32(a, b, 2, "dd").to(a.dtype)


@_emulated
def bf16x6(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Three-word bf16 split, six products, chunked PSUM accumulation added with TwoSum: six engine passes, at
    least as accurate as an fp32 SGEMM."""
    return _split_fp32(a, b, 3, "bf16x6", BF16X6_CHUNK).to(a.dtype)


def _ldexp(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """x * 2**e exactly unless the result over/underflows: three factors of one sign (|e| <= 2148 keeps each
    finite and normal in float64), so the magnitude moves monotonically and no intermediate leaves range."""
    first = torch.div(e, 3, rounding_mode="floor")
    second = torch.div(e - first, 2, rounding_mode="floor")
    return x * torch.exp2(first.to(x.dtype)) * torch.exp2(second.to(x.dtype)) * torch.exp2(
        (e - first - second).to(x.dtype))


def _scaled(a: torch.Tensor, b: torch.Tensor):
    """A's rows and B's columns divided by powers of two 2**e_i, 2**f_j at or above their largest magnitude,
    in float64 (exact), with the exponents: (A', e, B', f), |A'|, |B'| <= 1."""
    a, b = a.double(), b.double()
    e = torch.frexp(a.abs().amax(-1, keepdim=True))[1]
    f = torch.frexp(b.abs().amax(-2, keepdim=True))[1]
    return _ldexp(a, -e), e, _ldexp(b, -f), f


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
    """``slices``, raised until ozaki_error(s, rho) <= ozaki_error(slices): rho comes from one fast pass of
    |A'| @ |B'|, a lower bound of |A||B| / (2**e_i 2**f_j) once divided by its rounding factor."""
    magnitude = _engine_sum([_round_to(a.abs(), torch.bfloat16)], [_round_to(b.abs(), torch.bfloat16)])
    positive = magnitude[magnitude > 0]
    k = a.shape[-1]
    rho = k * (1 + 2.0**-8) ** 2 * (1 + gamma(k - 1, U_FP32)) / positive.min().item() if positive.numel() else 1
    if positive.numel() < magnitude.numel():
        # a zero may be exact or every product of the entry underflowed in bf16: an exact pass over the 0/1
        # patterns tells them apart, and underflow means a range no slice count can cover
        nonzero = torch.matmul((a != 0).float(), (b != 0).float())
        rho = math.inf if bool(((magnitude == 0) & (nonzero > 0)).any()) else rho
    budget = ozaki_error(slices)
    needed = next((s for s in range(slices, MAX_SLICES + 1) if ozaki_error(s, rho) <= budget), None)
    if needed is None:
        raise ValueError(f"kernels: mode 'ozaki' would need more than {MAX_SLICES} slices for operands whose "
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


@_emulated
def ozaki(a: torch.Tensor, b: torch.Tensor, *, slices: int | None = None) -> torch.Tensor:
    """Ozaki scheme I on the bf16 engine: rows of A and columns of B scaled by powers of two, cut into signed
    8-bit digit slices, digit pairs with i + j <= s + 1 multiplied exactly per K-chunk, the exact level sums
    combined by Sum2 in float64 on the host: s(s+1)/2 passes, plus one fast pass checking the dynamic range."""
    if _single_word(a, "ozaki"):
        return _split_fp32(a, b, 1, "ozaki").to(a.dtype)
    s = ozaki_default_slices(a.dtype) if slices is None else _check_slices(slices)
    a_scaled, e, b_scaled, f = _scaled(a, b)
    s = _needed_slices(a_scaled, b_scaled, s)
    a_digits = [d.to(torch.bfloat16) for d in _digits(a_scaled, s)]  # exact
    b_digits = [d.to(torch.bfloat16) for d in _digits(b_scaled, s)]
    total = _sum2(_exact_level(a_digits, b_digits, level) * 2.0 ** (-SLICE_BITS * level)
                  for level in range(s + 1, 1, -1))
    return _round_to(_ldexp(total, e + f), a.dtype)


def kahan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Promotion to float64 (complex128) on the host, one product there, rounded to the operand dtype."""
    a, b = _operands(a, b, "kahan")
    wide = torch.complex128 if a.is_complex() else torch.float64
    return _round_to(torch.matmul(a.to(wide), b.to(wide)), a.dtype)


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
