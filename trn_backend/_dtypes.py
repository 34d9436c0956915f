"""Data types of the standard, their promotion rules, and the compute dtypes behind torch's thin uint support.

Two spellings of each dtype, one per side of the boundary. Users see NumPy dtype objects, as in CuPy and JAX
(``x.dtype == np.float32`` holds and NumPy-based libraries such as dask read ``x.dtype.kind``): ``PUBLIC`` maps
the torch dtype of a tensor to its NumPy dtype, and ``to_dtype`` turns any user spelling (NumPy dtypes and types,
their names, torch dtypes) into the torch dtype. Inside the package every dtype is the tensor's torch dtype; the
names below (``_dtypes.float32``, ...) are torch's objects.

float16 and bfloat16 are extension dtypes (bfloat16 is ml_dtypes' NumPy type, as in JAX): they work wherever
torch has kernels for them, promote as in JAX and torch (with each other to float32), and are not among the
standard's dtypes that ``__array_namespace_info__().dtypes()`` lists. Promotion follows the standard's table
exactly, 0-d arrays included (torch lets a 0-d tensor lose to a higher-rank one of the same kind; the standard
does not).
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import torch

from .kernels.dtypes import COMPUTE, compute, restore

bool = torch.bool  # noqa: A001 - the standard's name
int8 = torch.int8
int16 = torch.int16
int32 = torch.int32
int64 = torch.int64
uint8 = torch.uint8
uint16 = torch.uint16
uint32 = torch.uint32
uint64 = torch.uint64
float16 = torch.float16
bfloat16 = torch.bfloat16
float32 = torch.float32
float64 = torch.float64
complex64 = torch.complex64
complex128 = torch.complex128

# What a dtype argument of the namespace may be (``to_dtype`` reads it): a NumPy dtype (``trn_backend.float32``), a
# type or name NumPy reads as one (``np.float32``, ``float``, ``"float32"``), or a torch dtype
DType = np.dtype[Any] | type | str | torch.dtype

SIGNED_INT = (int8, int16, int32, int64)
UNSIGNED_INT = (uint8, uint16, uint32, uint64)
INTEGER = SIGNED_INT + UNSIGNED_INT
EXTENSION_FLOAT = (float16, bfloat16)  # not the standard's: kept out of info.dtypes()
REAL_FLOAT = EXTENSION_FLOAT + (float32, float64)
COMPLEX_FLOAT = (complex64, complex128)
FLOATING = REAL_FLOAT + COMPLEX_FLOAT
NUMERIC = INTEGER + FLOATING
ALL = (bool,) + NUMERIC  # every dtype a NeuronArray may hold
STANDARD = tuple(d for d in ALL if d not in EXTENSION_FLOAT)  # the standard's 13

NAMES = {
    bool: "bool",
    int8: "int8",
    int16: "int16",
    int32: "int32",
    int64: "int64",
    uint8: "uint8",
    uint16: "uint16",
    uint32: "uint32",
    uint64: "uint64",
    float16: "float16",
    bfloat16: "bfloat16",
    float32: "float32",
    float64: "float64",
    complex64: "complex64",
    complex128: "complex128",
}

# torch dtype -> the NumPy dtype users see, and back
PUBLIC: dict[torch.dtype, np.dtype] = {
    d: np.dtype(ml_dtypes.bfloat16) if d is bfloat16 else np.dtype(n) for d, n in NAMES.items()
}
# NumPy dtype -> torch dtype, for the NumPy dtypes a NeuronArray may hold
TORCH_OF_PUBLIC: dict[np.dtype, torch.dtype] = {v: k for k, v in PUBLIC.items()}


def host_scalar(value: np.generic) -> torch.Tensor:
    """A NumPy scalar of a supported dtype as a 0-d CPU tensor of its dtype (its bits, bfloat16 included)."""
    a = np.asarray(value)
    target = TORCH_OF_PUBLIC[a.dtype]
    if target is bfloat16:
        return torch.from_numpy(a.reshape(1).view(np.uint16)).view(target).reshape(())
    return torch.from_numpy(a.reshape(1).view(PUBLIC[target])).reshape(()).clone()


# Kind names of isdtype(), and the groups of dtypes each function category accepts.
KINDS = {
    "bool": (bool,),
    "signed integer": SIGNED_INT,
    "unsigned integer": UNSIGNED_INT,
    "integral": INTEGER,
    "real floating": REAL_FLOAT,
    "complex floating": COMPLEX_FLOAT,
    "numeric": NUMERIC,
}
CATEGORIES = {
    "any": ALL,
    "boolean": (bool,),
    "integer": INTEGER,
    "integer or boolean": INTEGER + (bool,),
    "real numeric": INTEGER + REAL_FLOAT,
    "numeric": NUMERIC,
    "real floating-point": REAL_FLOAT,
    "floating-point": FLOATING,
    "complex floating-point": COMPLEX_FLOAT,
}

_BITS = {int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8, uint16: 16, uint32: 32, uint64: 64}


def _build_table() -> dict[tuple[torch.dtype, torch.dtype], torch.dtype]:
    table: dict[tuple[torch.dtype, torch.dtype], torch.dtype] = {}
    for family in (SIGNED_INT, UNSIGNED_INT, REAL_FLOAT, COMPLEX_FLOAT):
        for i, a in enumerate(family):
            for b in family[i:]:
                table[a, b] = b
    table[float16, bfloat16] = float32  # neither holds the other (range against precision), as in JAX and torch
    # mixed sign: the smallest signed type that holds both ranges; uint64 has none.
    for u in (uint8, uint16, uint32):
        for s in SIGNED_INT:
            bits = max(_BITS[s], 2 * _BITS[u])
            if bits <= 64:
                table[u, s] = {8: int8, 16: int16, 32: int32, 64: int64}[bits]
    # real with complex: the complex type with the larger precision
    for f in REAL_FLOAT:
        for c in COMPLEX_FLOAT:
            table[f, c] = complex128 if (c is complex128 or f is float64) else complex64
    table.update({(b, a): c for (a, b), c in list(table.items())})
    for d in ALL:
        table[d, d] = d
    return table


PROMOTION_TABLE = _build_table()


def int_range(dtype: torch.dtype) -> tuple[int, int]:
    """The closed range of an integer dtype, as Python ints."""
    bits = _BITS[dtype]
    if dtype in UNSIGNED_INT:
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


# The dtypes whose arithmetic torch's own kernels implement exactly as the standard asks (wrapping for integers);
# uint16/32/64 compute elsewhere (COMPUTE).
NATIVE_ARITHMETIC = frozenset((float32, float64) + SIGNED_INT + (uint8,))


def _weak_scalars() -> dict[tuple[torch.dtype, type], tuple[float, float]]:
    """(array dtype, Python scalar type) -> the closed range of values for which torch, given the scalar as it is,
    combines it with an array of that dtype as the standard's weak-scalar rule does (the scalar converted to the
    array's dtype, the result of that dtype): a float with a real floating array (torch rounds it to the dtype
    once, as a 0-d array of that dtype holds it); an int with a real floating array up to 2**53 in magnitude
    (exact in a double, so every route to the dtype rounds once); an int with an integer array within the dtype's
    range (beyond it the standard raises, torch wraps silently). NaN compares false with every range: it takes
    the general path. bool is missing: torch refuses bool operands of subtraction."""
    table: dict[tuple[torch.dtype, type], tuple[float, float]] = {}
    for d in (float32, float64):  # float16/bfloat16 arithmetic runs in float32 in torch: no scalar rule there
        table[d, float] = (-float("inf"), float("inf"))
        table[d, int] = (-(2**53), 2**53)
    for d in NATIVE_ARITHMETIC - {float32, float64}:
        table[d, int] = int_range(d)
    return table


WEAK_SCALARS = _weak_scalars()


# Significand bits of the real floating dtypes, the implicit leading one included.
PRECISION = {float16: 11, bfloat16: 8, float32: 24, float64: 53}
EXACT_INT_IN_DOUBLE = 2**53  # every int up to this magnitude is a float64
_LARGEST_DOUBLE = (2**53 - 1) << (1024 - 53)


def round_int(value: int, dtype: torch.dtype, func: str) -> int:
    """A Python int for a tensor of the floating ``dtype``, rounded once to the dtype's precision (to nearest,
    ties to even). torch converts a Python int through a double, which rounds it first beyond 2**53; the int
    rounded here is a double, so that conversion is exact, or overflows to infinity where rounding once does
    (beyond float64's range, float64's largest value stands for it). An int whose float64 rounding is beyond
    float64's range is an OverflowError, as in NumPy."""
    if -EXACT_INT_IN_DOUBLE <= value <= EXACT_INT_IN_DOUBLE:
        return value
    try:
        float(value)
    except OverflowError:
        raise OverflowError(
            f"{func}(): a Python int of {value.bit_length()} bits is beyond float64's range, so "
            f"it has no {name(dtype)} value; pass a float (inf) if that is meant"
        ) from None
    magnitude = abs(value)
    shift = magnitude.bit_length() - PRECISION[real_of(dtype)]  # > 0 beyond 2**53
    kept, dropped = divmod(magnitude, 1 << shift)
    half = 1 << (shift - 1)
    kept += dropped > half or (dropped == half and kept & 1)
    rounded = min(kept << shift, _LARGEST_DOUBLE)
    return rounded if value > 0 else -rounded


def name(dtype: torch.dtype | np.dtype) -> str:
    """The dtype's name (``float32``); NumPy dtypes name themselves."""
    return NAMES.get(dtype, str(dtype))  # type: ignore[arg-type]  # a NumPy dtype is no key: it names itself


def kind_rank(dtype: torch.dtype) -> int:
    """0 bool, 1 integer, 2 real floating, 3 complex floating."""
    if dtype is bool:
        return 0
    if dtype in INTEGER:
        return 1
    if dtype in REAL_FLOAT:
        return 2
    return 3


def promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """The standard's promotion; across kinds, the higher kind wins (as in torch and NumPy) with enough precision."""
    try:
        return PROMOTION_TABLE[a, b]
    except KeyError:
        pass
    ka, kb = kind_rank(a), kind_rank(b)
    if ka == kb:  # only uint64 with a signed integer lands here
        raise TypeError(f"no integer dtype holds both {name(a)} and {name(b)}; cast one of them explicitly")
    lo, hi = (a, b) if ka < kb else (b, a)
    if lo is bool or kind_rank(lo) == 1:
        return hi
    # real floating with complex
    return PROMOTION_TABLE[lo, hi]


def default_float(device: torch.device | None = None) -> torch.dtype:
    """float64 as in NumPy, except on Neuron devices (the default one when ``device`` is None), whose engines
    have no float64: float32 there."""
    if device is None:
        from . import _device

        device = _device.default_device()
    return float32 if device.type in NO_FLOAT64_DEVICES else float64


def default_complex(device: torch.device | None = None) -> torch.dtype:
    return complex128 if default_float(device) is float64 else complex64


def default_int() -> torch.dtype:
    return int64


def complex_of(dtype: torch.dtype) -> torch.dtype:
    return complex128 if dtype in (float64, complex128) else complex64


def real_of(dtype: torch.dtype) -> torch.dtype:
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def check(dtype: torch.dtype, category: str, func: str, arg: str = "x") -> None:
    """Raise TypeError if ``dtype`` is outside the standard's dtype category for ``func``."""
    if dtype not in CATEGORIES[category]:
        raise TypeError(f"{func}() needs {arg} of a {category} dtype, got {name(dtype)}")


# The device types (torch.device.type) of Neuron devices: no float64 there.
NO_FLOAT64_DEVICES = frozenset({"neuron", "xla"})

# Dtype spellings converted so far: np.dtype(value) costs microseconds. Only spellings whose meaning cannot
# change are kept (types, strings, dtype objects); equal ones are the same dtype.
_SEEN: dict[object, torch.dtype] = {}


def to_dtype(dtype: object, func: str = "dtype") -> torch.dtype:
    """The torch dtype of a dtype argument: a NumPy dtype (``trn_backend.float32``, ``np.dtype("float32")``),
    anything NumPy reads as one (``np.float32``, ``"float32"``, ``float``), or a torch dtype; TypeError for
    anything else and for dtypes a NeuronArray cannot hold, naming the supported ones."""
    if isinstance(dtype, torch.dtype):
        if dtype in NAMES:
            return dtype
        raise TypeError(f"{func}: torch dtype {dtype} is not supported; supported: {', '.join(NAMES.values())}")
    try:
        return _SEEN[dtype]
    except (KeyError, TypeError):  # TypeError: unhashable
        pass
    if dtype is None or isinstance(dtype, (int, float, complex)):  # np.dtype(None) is float64: not a dtype here
        raise TypeError(f"{func}: {dtype!r} is not a dtype (use e.g. trn_backend.float32)")
    try:
        np_dtype = np.dtype(dtype)  # type: ignore[call-overload]  # any object: what is no dtype raises TypeError
    except TypeError:
        raise TypeError(f"{func}: {dtype!r} is not a dtype (use e.g. trn_backend.float32)") from None
    found = TORCH_OF_PUBLIC.get(np_dtype)
    if found is None:
        raise TypeError(
            f"{func}: dtype {np_dtype} is not supported on NeuronArray; supported: {', '.join(NAMES.values())}"
        )
    if isinstance(dtype, (type, str, np.dtype)):
        _SEEN[dtype] = found
    return found


@functools.cache  # a few dtype pairs; NumPy's answer costs microseconds
def same_kind(src: torch.dtype, dst: torch.dtype) -> builtins.bool:
    """NumPy's same_kind casting rule (what in-place operators and ``out=`` allow); never to a lower kind (ml_dtypes
    lets complex cast to bfloat16 under same_kind, which would drop the imaginary part)."""
    if kind_rank(src) > kind_rank(dst):
        return False
    return builtins.bool(np.can_cast(PUBLIC[src], PUBLIC[dst], "same_kind"))


@functools.cache
def safe_cast(src: torch.dtype, dst: torch.dtype) -> builtins.bool:
    """NumPy's safe casting rule."""
    return builtins.bool(np.can_cast(PUBLIC[src], PUBLIC[dst], "safe"))


def public(dtype: torch.dtype) -> np.dtype:
    """The NumPy dtype users see for a tensor dtype."""
    return PUBLIC[dtype]


# --- uint16/32/64: torch stores them but implements few kernels. Arithmetic runs in a wider (or same-width
# signed) compute dtype and is wrapped back (``COMPUTE``, ``compute``, ``restore``: the kernel layer's, which needs
# them itself). ---

_SIGN_BIT = -(2**63)


def via_compute(op: Callable[[torch.Tensor], torch.Tensor], t: torch.Tensor) -> torch.Tensor:
    """Run a data-movement op that torch lacks for uint16/32/64 on the compute dtype and come back (exact:
    moving values never leaves their range)."""
    return restore(op(compute(t)), t.dtype)


def ordered(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A tensor whose signed order equals the unsigned order of uint64 data (flip the sign bit); other dtypes
    come back through ``compute``."""
    c = compute(t)
    if dtype is uint64:
        return c ^ _SIGN_BIT
    return c


def unordered(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Inverse of ``ordered``."""
    if dtype is uint64:
        return (t ^ _SIGN_BIT).view(uint64)
    return restore(t, dtype)


def to_float(t: torch.Tensor, target: torch.dtype) -> torch.Tensor:
    """Convert integer data of any width to a floating dtype, rounding once (to nearest, ties to even), as NumPy.

    Below 2**63 every value goes through torch's own int64 conversion, which rounds once. A uint64 value v from
    2**63 up is stored as a negative int64, so it converts as 2 * float(w), w = (v >> 1) | (v & 1): halving
    with the dropped bit kept sticky in the lowest bit leaves w (63 significant bits) on the same side of every
    rounding tie and representable value as v / 2 (those lie on multiples of 2**9 at least, as no float keeps
    more than 53 bits), so float(w) rounds v / 2 correctly and doubling is exact. Rounding through float64
    first would round twice, which is wrong for float32 (and complex64) near their ties. Complex targets take
    the real conversion as their real part. (Into float16 and bfloat16, ``cast`` takes uint32 and uint64 on its
    round-to-odd path instead: torch converts them through float32, rounding twice.)
    """
    real = real_of(target)
    if t.dtype is uint64:
        s = t.view(int64)
        half = torch.bitwise_right_shift(s, 1) & ~_SIGN_BIT  # a logical shift: clear the copied sign bit
        w = half | (s & 1)
        f = torch.where(s < 0, w.to(real) * 2, s.to(real))
    else:
        f = compute(t).to(real)
    return f if real is target else f.to(target)


def from_float(t: torch.Tensor, target: torch.dtype) -> torch.Tensor:
    """Convert floating data to an unsigned type through int64 (values beyond int64 go through uint64 bits)."""
    if target is uint64:
        big = t >= 2.0**63
        low = torch.where(big, t - 2.0**64, t).to(int64)
        return low.view(uint64)
    return t.to(int64).to(target) if target in COMPUTE else t.to(target)


def cast(t: torch.Tensor, target: torch.dtype) -> torch.Tensor:
    """``t.to(target)`` that is also right for every uint16/32/64 source and target, and that rounds once (to
    nearest, ties to even) into float16 and bfloat16 from the sources torch converts through float32, which
    rounds twice: float64, and integers wider than 16 bits (float32 holds narrower ones exactly)."""
    src = t.dtype
    if src is target:
        return t
    if target in EXTENSION_FLOAT:
        odd = _ODD_FLOAT32.get(src)
        if odd is not None:
            return odd(t).to(target)
    if src in COMPUTE:
        if target in FLOATING:
            return to_float(t, target)
        if target is uint64 or target is int64:
            return compute(t).to(int64).view(target) if src is uint64 else compute(t).to(int64).to(target)
        return compute(t).to(target)
    if target in COMPUTE:
        if src in FLOATING:
            return from_float(t.real if src in COMPLEX_FLOAT else t, target)
        if target is uint64:
            return t.to(int64).view(uint64)
        return t.to(int64).to(target)
    return t.to(target)


_LARGEST_FLOAT32_BELOW_2_63 = float(2**63 - 2**39)


def _round_to_odd_float32_from_int(t: torch.Tensor) -> torch.Tensor:
    """Integer data as float32 rounded to odd (see ``_round_to_odd_float32``), in integer arithmetic. torch's
    float32 of each value is one of the two float32s next to it, whatever route its conversion takes (through a
    double it rounds twice); the exact remainder v - float32, in int64, says whether that one is the truncation.
    float32's 2**63 is no int64: the float32 below it, the truncation there, takes its place. uint64 values from
    2**63 up (negative int64 bits) convert as 2 * w, w = (v >> 1) | (v & 1), as in ``to_float``: the bit halving
    drops is kept sticky below the 24 that rounding to odd keeps, and doubling is exact."""
    s = compute(t).to(int64)
    big = None
    if t.dtype is uint64:
        big = s < 0
        s = torch.where(big, (torch.bitwise_right_shift(s, 1) & ~_SIGN_BIT) | (s & 1), s)
    nearest = s.to(float32).clamp(max=_LARGEST_FLOAT32_BELOW_2_63)
    error = s - nearest.to(int64)
    inexact = error != 0
    odd = _to_odd(nearest, inexact, inexact & ((error ^ s) < 0))  # away from zero: error and v differ in sign
    return odd if big is None else torch.where(big, odd * 2, odd)


def _round_to_odd_float32(t: torch.Tensor) -> torch.Tensor:
    """float64 data as float32 rounded to odd (truncated, lowest bit set where inexact). From the round-to-odd
    value, whose 24 bits exceed the 11 or 8 of float16 and bfloat16 by at least 2, torch's conversion rounds
    once, correctly. Values beyond float32's range stay infinite, as they overflow float16 and bfloat16 anyway
    (bfloat16 shares float32's range)."""
    nearest = t.to(float32).resolve_neg()  # _to_odd reinterprets its bits: no lazy negative view (conj().imag)
    wide = nearest.to(float64)
    inexact = (wide != t) & torch.isfinite(wide)
    return _to_odd(nearest, inexact, inexact & (wide.abs() > t.abs()))


def _to_odd(near: torch.Tensor, inexact: torch.Tensor, away: torch.Tensor) -> torch.Tensor:
    """float32s next to some values (either neighbour of each) as the values rounded to odd: one unit toward zero
    where ``near`` lies away from zero, then the lowest bit set where it was inexact."""
    bits = near.view(int32)
    bits = torch.where(away, bits - 1, bits)  # one unit toward zero (sign-magnitude bits: the same for both signs)
    bits = torch.where(inexact, bits | 1, bits)
    return bits.view(float32)


# The sources that torch converts to float16 and bfloat16 through float32, rounding twice, which misses the
# nearest value where the first rounding lands on a tie of the second (NumPy rounds once; integers of up to 16
# bits are exact in float32): their float32 rounded to odd, from which torch's conversion rounds once.
_ODD_FLOAT32 = {
    float64: _round_to_odd_float32,
    **dict.fromkeys((int32, int64, uint32, uint64), _round_to_odd_float32_from_int),
}
