"""Element-wise functions of the standard.

Every function promotes with the standard's rules (0-d arrays included), accepts a Python scalar for one operand of
a binary function, and checks dtypes by the standard's categories. uint16/32/64 run in torch's compute dtypes and
wrap back (``_dtypes.compute``). Functions of a floating-point category promote integer input to the default
floating dtype, as NumPy and torch do.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from .. import _dtypes
from .._array import register_inplace
from .._helpers import (
    NeuronArray,
    binary_operands,
    broadcast_shape,
    numpy_scalar,
    scalar_dtype,
    scalar_to_tensor,
    tensor,
    wrap,
)
from .._indexing import overlaps

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_invert",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clip",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "reciprocal",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "square",
    "sqrt",
    "subtract",
    "tan",
    "tanh",
    "trunc",
]

Tensor = torch.Tensor

# the generated functions' types, with the standard's positional-only parameters
Unary = Callable[[NeuronArray], NeuronArray]
Binary = Callable[[NeuronArray | complex, NeuronArray | complex], NeuronArray]


def _to_floating(t: Tensor) -> Tensor:
    """Integer and boolean input of a floating-point function computes in the default floating dtype."""
    return t if t.dtype in _dtypes.FLOATING else _dtypes.cast(t, _dtypes.default_float(t.device))


def _define_unary(name: str, impl: Unary, doc: str) -> Unary:
    """Give a generated function the standard's name, positional-only signature and a docstring."""

    def f(x: NeuronArray, /) -> NeuronArray:
        return impl(x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


def _define_binary(name: str, impl: Binary, doc: str) -> Binary:
    """Give a generated function the standard's name, positional-only signature and a docstring."""

    def f(x1: NeuronArray | complex, x2: NeuronArray | complex, /) -> NeuronArray:
        return impl(x1, x2)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


# ---------------------------------------------------------------- unary


def _unary_float(name: str, op: Callable[[Tensor], Tensor], *, real_only: bool = False) -> Unary:
    """A floating-point function: integers promote to the default float, complex is rejected if real_only."""

    def impl(x: NeuronArray) -> NeuronArray:
        t = tensor(x, name)
        if real_only and t.dtype in _dtypes.COMPLEX_FLOAT:
            raise TypeError(f"{name}() needs a real-valued dtype, got {_dtypes.name(t.dtype)}")
        return wrap(op(_to_floating(t)))

    return _define_unary(name, impl, f"Element-wise {name} (floating-point; integers promote to the default float).")


def _acos(t: Tensor) -> Tensor:
    if not t.is_complex():
        return torch.acos(t)
    # torch computes pi/2 - asin(z), which cancels to nothing near z = 1 (acos(1 + 1e-300j) came out 0). Kahan's
    # formulas have no cancellation there and give C99's signed zeros on the cut (acos(x + 0j) = acos(x) - 0j);
    # they are used where |z| <= 2, beyond which torch is accurate and the products below could overflow.
    x, y = t.real, t.imag
    s1 = torch.sqrt(torch.complex(1 + x, y))
    s2 = torch.sqrt(torch.complex(1 - x, -y))
    real = 2 * torch.atan2(s2.real, s1.real)
    imag = torch.asinh(s1.real * s2.imag - s1.imag * s2.real)
    near = (x.abs() <= 2) & (y.abs() <= 2)
    return torch.where(near, torch.complex(real, imag), torch.acos(t))


def _expm1(t: Tensor) -> Tensor:
    if not t.is_complex():
        return torch.expm1(t)
    # Where |x| < 1/2, expm1(x) cos y - 2 sin^2(y/2) keeps the digits that exp(z) - 1 cancels away near 0 (and the
    # standard's expm1(-0 + 0j) is 0 + 0j, not -0). Elsewhere |expm1(z)| >= 1 - e^(-1/2), so exp(z) - 1 loses
    # nothing, and torch's exp scales past overflow (e^710 sin(1e-300) is finite) and has C99's special values.
    x, y = t.real, t.imag
    e = torch.exp(t)
    near = torch.where(t == 0, 0.0, torch.expm1(x) * torch.cos(y) - 2 * torch.sin(y / 2) ** 2)
    return torch.complex(torch.where(x.abs() < 0.5, near, e.real - 1), e.imag)


def _log1p(t: Tensor) -> Tensor:
    if not t.is_complex():
        return torch.log1p(t)
    # log1p(z) = log|1 + z| + i atan2(y, 1 + x). Near 0, |1 + z| rounds to 1 and takes every digit of its log with it
    # (torch's own complex log1p does better, but turns subnormal parts into nan): there log|1 + z| is
    # log1p(x(2 + x) + y^2) / 2. Elsewhere log(1 + z) is accurate, does not overflow in |1 + z|, and has C99's
    # special values at infinity.
    x, y = t.real, t.imag
    far = torch.log(torch.complex(1 + x, y))
    near = 0.5 * torch.log1p(x * (2 + x) + y * y)
    return torch.complex(torch.where((x.abs() < 0.5) & (y.abs() < 0.5), near, far.real), far.imag)


acos = _unary_float("acos", _acos)
acosh = _unary_float("acosh", torch.acosh)
asin = _unary_float("asin", torch.asin)
asinh = _unary_float("asinh", torch.asinh)
atan = _unary_float("atan", torch.atan)
atanh = _unary_float("atanh", torch.atanh)
cos = _unary_float("cos", torch.cos)
cosh = _unary_float("cosh", torch.cosh)
exp = _unary_float("exp", torch.exp)
expm1 = _unary_float("expm1", _expm1)
log = _unary_float("log", torch.log)
log1p = _unary_float("log1p", _log1p)
log2 = _unary_float("log2", torch.log2)
log10 = _unary_float("log10", torch.log10)
sin = _unary_float("sin", torch.sin)
sinh = _unary_float("sinh", torch.sinh)
sqrt = _unary_float("sqrt", torch.sqrt)
tan = _unary_float("tan", torch.tan)


def _tanh(t: Tensor) -> Tensor:
    out = torch.tanh(t)
    if t.is_complex():
        # the standard: tanh(±inf + iy) = ±1 + 0j with the zero signed like y (torch signs it like sin(2y))
        at_inf = torch.isinf(t.real) & torch.isfinite(t.imag)
        limit = torch.complex(torch.sign(t.real), torch.copysign(torch.zeros_like(t.imag), t.imag))
        out = torch.where(at_inf, limit, out)
    return out


tanh = _unary_float("tanh", _tanh)


def _scaled(t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The parts of complex t divided by m = max(|re|, |im|), and m: |z| and 1/z of the scaled parts neither overflow
    nor underflow, where torch's |z| overflows past 1.3e154 and underflows below 1e-154 (1/(1e308 + 1e308j) came out
    0, sign(5e-324 + 5e-324j) came out 1 + 1j). A part that is the only infinite one scales to +-1 (not inf/inf)."""
    x, y = t.real, t.imag
    m = torch.maximum(x.abs(), y.abs())
    one_inf = torch.isinf(x) != torch.isinf(y)
    sx = torch.where(one_inf & torch.isinf(x), torch.sign(x), x / m)
    sy = torch.where(one_inf & torch.isinf(y), torch.sign(y), y / m)
    return sx, sy, m


def _reciprocal(t: Tensor) -> Tensor:
    if not t.is_complex():
        return torch.reciprocal(t)
    # 1/z = conj(z)/|z|^2 on the scaled parts (torch's 1/(1e-300j) is nan - inf j); 1/0 is an infinity, as 1/z
    sx, sy, m = _scaled(t)
    d = sx * sx + sy * sy
    out = torch.complex(sx / d / m, -sy / d / m)
    return torch.where(m == 0, torch.full_like(t, complex(math.inf, math.nan)), out)


reciprocal = _unary_float("reciprocal", _reciprocal)
signbit = _unary_float("signbit", torch.signbit, real_only=True)


def _unary_numeric(
    name: str, op: Callable[[Tensor], Tensor], category: str = "numeric", returns_bool: bool = False
) -> Unary:
    """A same-dtype function; unsigned types go through their compute dtype and wrap back."""

    def impl(x: NeuronArray) -> NeuronArray:
        t = tensor(x, name)
        _dtypes.check(t.dtype, category, name)
        out = op(_dtypes.compute(t))
        return wrap(out if returns_bool else _dtypes.restore(out, t.dtype))

    return _define_unary(name, impl, f"Element-wise {name} ({category} dtypes).")


def _integral_identity(op: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """Rounding functions are the identity on integers (torch has no integer kernels for some)."""
    return lambda t: op(t) if t.is_floating_point() else t.clone()


def _round(t: Tensor) -> Tensor:
    if t.is_complex():
        return torch.complex(torch.round(t.real), torch.round(t.imag))
    return torch.round(t) if t.is_floating_point() else t.clone()


def _square(t: Tensor) -> Tensor:
    return t * t


ceil = _unary_numeric("ceil", _integral_identity(torch.ceil), "real numeric")
floor = _unary_numeric("floor", _integral_identity(torch.floor), "real numeric")
trunc = _unary_numeric("trunc", _integral_identity(torch.trunc), "real numeric")
round = _unary_numeric("round", _round)  # noqa: A001
negative = _unary_numeric("negative", torch.negative)
positive = _unary_numeric("positive", torch.clone)
square = _unary_numeric("square", _square)
bitwise_invert = _unary_numeric("bitwise_invert", torch.bitwise_not, "integer or boolean")
isfinite = _unary_numeric("isfinite", torch.isfinite, returns_bool=True)
isinf = _unary_numeric("isinf", torch.isinf, returns_bool=True)
isnan = _unary_numeric("isnan", torch.isnan, returns_bool=True)


def abs(x: NeuronArray, /) -> NeuronArray:  # noqa: A001
    """Element-wise absolute value; complex input gives the real dtype of matching precision."""
    t = tensor(x, "abs")
    _dtypes.check(t.dtype, "numeric", "abs")
    if t.dtype in _dtypes.UNSIGNED_INT:
        return wrap(t.clone())
    return wrap(torch.abs(t))


def sign(x: NeuronArray, /) -> NeuronArray:
    """Element-wise sign: -1, 0 or 1 for real input (nan stays nan), ``x / |x|`` for complex input."""
    t = tensor(x, "sign")
    _dtypes.check(t.dtype, "numeric", "sign")
    if t.dtype in _dtypes.UNSIGNED_INT:
        return wrap(
            (t != 0).to(t.dtype)
            if t.dtype is torch.uint8
            else _dtypes.restore((_dtypes.compute(t) != 0).to(_dtypes.compute(t).dtype), t.dtype)
        )
    if t.is_complex():
        # z/|z| on the scaled parts (torch's sgn(inf j) is nan); zero stays zero, a nan part makes nan + nan j
        sx, sy, m = _scaled(t)
        h = torch.hypot(sx, sy)
        out = torch.complex(sx / h, sy / h)
        return wrap(torch.where(m == 0, torch.zeros_like(t), out))
    out = torch.sign(t)
    return wrap(torch.where(torch.isnan(t), t, out) if t.is_floating_point() else out)


def logical_not(x: NeuronArray, /) -> NeuronArray:
    """Element-wise logical NOT; non-boolean input is read as its truth value."""
    return wrap(torch.logical_not(_truth(tensor(x, "logical_not"))))


def real(x: NeuronArray, /) -> NeuronArray:
    """Real part; a real array is returned unchanged (as a new array)."""
    t = tensor(x, "real")
    _dtypes.check(t.dtype, "numeric", "real")
    return wrap(t.real.clone() if t.is_complex() else t.clone())


def imag(x: NeuronArray, /) -> NeuronArray:
    """Imaginary part; zeros of the same dtype for a real array."""
    t = tensor(x, "imag")
    _dtypes.check(t.dtype, "numeric", "imag")
    return wrap(t.imag.clone() if t.is_complex() else torch.zeros_like(t))


def conj(x: NeuronArray, /) -> NeuronArray:
    """Complex conjugate (materialized, not torch's lazy conjugate view); real input unchanged."""
    t = tensor(x, "conj")
    _dtypes.check(t.dtype, "numeric", "conj")
    return wrap(torch.conj_physical(t) if t.is_complex() else t.clone())


# ---------------------------------------------------------------- binary


class _Fast(NamedTuple):
    """Where torch's own function is a binary function of the standard exactly, so a call skips promotion,
    checks and casts: two arrays of one of ``dtypes``, of one shape, on one device; or one such array and a
    Python scalar that ``_dtypes.WEAK_SCALARS`` admits, passed to torch as it is (either side), for an array on
    the CPU, or with ``cuda_scalars`` also on a CUDA device (torch's CUDA division by a scalar multiplies by its
    reciprocal, which rounds twice). Everything else (broadcasting, mixed dtypes, 0-d promotion, NumPy
    scalars, complex or out-of-range scalars, other devices) takes the general path."""

    op: Callable[..., Tensor]  # torch's function, which takes a Python scalar on either side
    inplace: Callable[[Tensor, Any], Tensor]  # torch's in-place method: a tensor or a scalar _scalar_fits admits
    dtypes: frozenset[torch.dtype]
    cuda_scalars: bool


def _scalar_fits(t: Tensor, value: object, fast: _Fast) -> bool:
    """Whether torch combines the Python scalar ``value``, as it is, with ``t`` as the general path would."""
    bounds = _dtypes.WEAK_SCALARS.get((t.dtype, type(value)))
    # bounds is found only for the int and float keys of WEAK_SCALARS, so value is a number where it compares
    return (
        bounds is not None
        and t.dtype in fast.dtypes
        and bounds[0] <= value <= bounds[1]  # type: ignore[operator]
        and (t.is_cpu or (fast.cuda_scalars and t.is_cuda))
    )


def _same_layout(t1: Tensor, t2: Tensor, fast: _Fast) -> bool:
    """Two arrays torch's function takes as they are: one fast dtype, one shape, one device."""
    return (
        t1.dtype is t2.dtype
        and t1.dtype in fast.dtypes
        and t1.shape == t2.shape
        and (t1.is_cpu and t2.is_cpu or t1.device == t2.device)
    )  # two CPU tensors: no device objects to compare


def _with_fast_path(name: str, general: Binary, fast: _Fast, doc: str) -> Binary:
    """``general`` (a binary function) behind the fast path of ``fast``; the in-place operator of the same name
    gets the in-place form (``register_inplace``)."""
    op = fast.op

    def f(x1: NeuronArray | complex, x2: NeuronArray | complex, /) -> NeuronArray:
        # exact types: a registered subclass (sharded arrays) keeps the general path
        if type(x1) is NeuronArray:
            t1 = x1._t
            if type(x2) is NeuronArray:
                if _same_layout(t1, x2._t, fast):
                    return wrap(op(t1, x2._t))
            elif _scalar_fits(t1, x2, fast):
                return wrap(op(t1, x2))
        elif type(x2) is NeuronArray and _scalar_fits(x2._t, x1, fast):
            return wrap(op(x1, x2._t))
        return general(x1, x2)

    def inplace(t: Tensor, other: object) -> bool:
        if type(other) is NeuronArray:
            u = other._t
            # torch reads an operand overlapping the target as it writes it: NumPy reads it first
            if not (_same_layout(t, u, fast) and (u is t or not overlaps(u, t))):
                return False
        elif not _scalar_fits(t, other, fast):
            return False
        else:
            u = other  # type: ignore[assignment]  # a Python int or float (_scalar_fits), which torch takes as u
        fast.inplace(t, u)
        return True

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    register_inplace(name, f, inplace)
    return f


def _binary(
    name: str,
    op: Callable[[Tensor, Tensor, torch.dtype], Tensor],
    category: str,
    result: str = "same",
    doc: str = "",
    compare: Callable[[int, int], bool] | None = None,
    fast: _Fast | None = None,
) -> Binary:
    """A binary function: promote, check the category, compute, and bring unsigned results back.

    result: "same" (the promoted dtype, wrapped back from the compute dtype), "bool" (comparisons) or
    "float" (true division: integers promote to the default float first). doc: more of the docstring.
    compare: the Python operator of a comparison, which answers for a Python int beyond the array's integer
    dtype (``_beyond_range``); every other function keeps the OverflowError of such an int. fast: where torch's
    own function answers directly (``_Fast``).
    """
    floating = result == "float"

    def impl(x1: NeuronArray | complex, x2: NeuronArray | complex) -> NeuronArray:
        try:
            t1, t2, dtype = binary_operands(x1, x2, name, broadcast=True, floating=floating)
        except OverflowError:
            answer = None if compare is None else _beyond_range(x1, x2, compare, name)
            if answer is None:
                raise
            return answer
        if floating and dtype not in _dtypes.FLOATING:
            dtype = _dtypes.default_float(t1.device)
            t1, t2 = _dtypes.cast(t1, dtype), _dtypes.cast(t2, dtype)
        _dtypes.check(dtype, category, name, "x1 and x2")
        out = op(t1, t2, dtype)
        if result == "bool" or out.dtype is dtype:
            return wrap(out)
        return wrap(_dtypes.restore(out, dtype))

    doc = f"Element-wise {name} ({category} dtypes, standard type promotion).{doc}"
    if fast is not None:
        return _with_fast_path(name, impl, fast, doc)
    return _define_binary(name, impl, doc)


def _beyond_range(x1: object, x2: object, compare: Callable[[int, int], bool], name: str) -> NeuronArray | None:
    """A comparison of an integer array with a Python int its dtype cannot hold (uint8 array > -1): every
    element lies on the same side of the int, so the answer for the dtype's smallest value is every element's,
    as NumPy 2 answers. None where the operands are not that case."""
    array, value = (x1, x2) if isinstance(x1, NeuronArray) else (x2, x1)
    if not isinstance(array, NeuronArray) or not isinstance(value, int) or array._t.dtype is _dtypes.bool:
        return None  # NumPy converts an int beside a bool array to int64: beyond it, its OverflowError stands
    dtype = scalar_dtype(value, array._t.dtype, name)
    if dtype not in _dtypes.INTEGER:
        return None
    lo, hi = _dtypes.int_range(dtype)
    if lo <= value <= hi:
        return None
    answer = compare(lo, value) if array is x1 else compare(value, lo)
    return wrap(torch.full_like(array._t, answer, dtype=torch.bool))


def _plain(op: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor, torch.dtype], Tensor]:
    """Operations whose result on the compute dtype's bits is right for unsigned types too (modular)."""
    return lambda a, b, dtype: op(_dtypes.compute(a), _dtypes.compute(b))


def _ordered(op: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor, torch.dtype], Tensor]:
    """Comparisons: uint64 compares with the sign bit flipped."""
    return lambda a, b, dtype: op(_dtypes.ordered(a, dtype), _dtypes.ordered(b, dtype))


def _ordered_select(op: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor, torch.dtype], Tensor]:
    """maximum/minimum: select in the ordered domain and map back."""
    return lambda a, b, dtype: _dtypes.unordered(op(_dtypes.ordered(a, dtype), _dtypes.ordered(b, dtype)), dtype)


def _integer_division(op: Callable[[Tensor, Tensor], Tensor], a: Tensor, b: Tensor) -> Tensor:
    """Integer floor division or remainder, 0 where the divisor is 0 as in NumPy (torch raises on the CPU and
    gives garbage on other devices, so the zeros are divided by 1 and masked). INT_MIN // -1 wraps to INT_MIN
    and INT_MIN % -1 is 0 in torch, as in NumPy."""
    zero = b == 0
    return op(a, b.masked_fill(zero, 1)).masked_fill(zero, 0)


def _floor_divide(a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
    if dtype is _dtypes.uint64:
        return _udivmod64(a, b)[0]
    a, b = _dtypes.compute(a), _dtypes.compute(b)
    if not a.is_floating_point():
        return _integer_division(torch.floor_divide, a, b)
    # the standard (unlike Python) has inf // 2 == inf and 5 // -inf == -0: plain division there
    return torch.where(torch.isinf(a) | torch.isinf(b), a / b, torch.floor_divide(a, b))


def _remainder(a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
    if dtype is _dtypes.uint64:
        return _udivmod64(a, b)[1]
    a, b = _dtypes.compute(a), _dtypes.compute(b)
    if not a.is_floating_point():
        return _integer_division(torch.remainder, a, b)
    # Python's %: a zero result carries the divisor's sign (torch keeps the dividend's)
    r = torch.remainder(a, b)
    return torch.where(r == 0, torch.copysign(torch.zeros_like(r), b), r)


def _udivmod64(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Unsigned 64-bit floor division and remainder on int64 bit patterns (shift-and-correct long division);
    both are 0 for a zero divisor, as in NumPy."""
    x, d = torch.broadcast_tensors(_dtypes.compute(a), _dtypes.compute(b))
    flip = _dtypes._SIGN_BIT
    ge = lambda p, q: (p ^ flip) >= (q ^ flip)  # noqa: E731 - unsigned >=
    big_d = d < 0  # divisor >= 2**63: the quotient is 0 or 1
    zero = d == 0
    safe_d = torch.where(big_d | zero, torch.ones_like(d), d)
    # x >> 1 is non-negative, so signed division is exact there; the doubled quotient is off by at most one
    q = torch.div(torch.bitwise_right_shift(x, 1) & ~flip, safe_d, rounding_mode="floor") << 1
    r = x - q * safe_d
    fix = ge(r, safe_d)
    q = q + fix.to(q.dtype)
    r = torch.where(fix, r - safe_d, r)
    q = torch.where(big_d, ge(x, d).to(q.dtype), q)
    r = torch.where(big_d, torch.where(ge(x, d), x - d, x), r)
    return q.masked_fill(zero, 0), r.masked_fill(zero, 0)


def _right_shift(a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
    x, n = _dtypes.compute(a), _dtypes.compute(b)
    if dtype is _dtypes.uint64:
        # logical shift of the bit pattern: clear the sign copies an arithmetic shift brings in. Counts from 64
        # up shift every bit out, those from 2**63 up included, which read negative in the int64 view.
        out = (n < 0) | (n >= 64)
        n = n.clamp(min=0)
        shifted = torch.bitwise_right_shift(x, n.clamp(max=63))
        keep = torch.bitwise_left_shift(torch.ones_like(x), (64 - n).clamp(min=0, max=63)) - 1
        keep = torch.where(n == 0, torch.full_like(x, -1), keep)
        return torch.where(out, torch.zeros_like(x), shifted & keep)
    return torch.bitwise_right_shift(x, n)


def _pow(a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
    if dtype in _dtypes.SIGNED_INT and bool((b < 0).any()):
        # torch answers 0 (or 1, -1) where the true power is a fraction; an integer result cannot hold it
        raise ValueError(
            f"pow(): integer {_dtypes.name(dtype)} arrays cannot be raised to negative integer "
            "powers; convert to a floating dtype first"
        )
    base = _dtypes.compute(a)
    if dtype in _dtypes.INTEGER:
        # torch's integer powers square and multiply, wrapping as NumPy's do; a uint64 exponent from 2**63 up
        # reads negative in the int64 view: b**e = b**(e - 2**63) * (b**(2**62))**2, modulo 2**64 throughout
        e = _dtypes.compute(b)
        if dtype is not _dtypes.uint64:
            return torch.pow(base, e)
        high = torch.where(e < 0, torch.pow(torch.pow(base, 2**62), 2), 1)
        return torch.pow(base, e & ~_dtypes._SIGN_BIT) * high
    if b.dim() == 0 and b.is_cpu:
        # a scalar exponent (a Python number, or 0-d) as a number: torch's scalar path squares exactly (x * x),
        # where its tensor path computes exp(2 log x), leaving spurious imaginary parts on complex squares and
        # results that depend on the array's length
        exponent = b.item()
        out = torch.pow(base, exponent)
        if out.is_complex() and exponent == 0:
            out = torch.ones_like(out)  # x**0 is 1 for every x, 0 included
        return out
    out = torch.pow(base, _dtypes.compute(b))
    if out.is_complex():
        # torch computes exp(b*log(a)), which makes 0**0 nan; x**0 is 1 for every x
        out = torch.where(b == 0, torch.ones_like(out), out)
    return out


def _truth(t: Tensor) -> Tensor:
    """The truth values of ``t`` as bool: torch has no logical kernels for uint16, uint32 and uint64, so every
    operand is compared with zero in its compute dtype (the same bits) first."""
    return t if t.dtype is torch.bool else _dtypes.compute(t) != 0


def _logical(op: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor, torch.dtype], Tensor]:
    return lambda a, b, dtype: op(_truth(a), _truth(b))


def _real_float(op: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor, torch.dtype], Tensor]:
    return lambda a, b, dtype: op(_to_floating(a), _to_floating(b))


def _complex_safe(op: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor, torch.dtype], Tensor]:
    """torch's complex add/subtract multiply the second operand by alpha=1, which turns 0+inf*j into nan+inf*j;
    complex operands are combined part by part instead."""

    def run(a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
        if a.is_complex():
            return torch.complex(op(a.real, b.real), op(a.imag, b.imag))
        return op(_dtypes.compute(a), _dtypes.compute(b))

    return run


_NATIVE = _dtypes.NATIVE_ARITHMETIC
add = _binary("add", _complex_safe(torch.add), "numeric", fast=_Fast(torch.add, Tensor.add_, _NATIVE, True))
subtract = _binary(
    "subtract", _complex_safe(torch.subtract), "numeric", fast=_Fast(torch.subtract, Tensor.sub_, _NATIVE, True)
)
multiply = _binary(
    "multiply", _plain(torch.multiply), "numeric", fast=_Fast(torch.multiply, Tensor.mul_, _NATIVE, True)
)
divide = _binary(
    "divide",
    lambda a, b, d: torch.divide(a, b),
    "floating-point",
    result="float",
    fast=_Fast(torch.divide, Tensor.div_, frozenset(_dtypes.REAL_FLOAT), False),
)
floor_divide = _binary(
    "floor_divide",
    _floor_divide,
    "real numeric",
    doc=(
        " Rounds the quotient toward -inf. Integer division by zero gives 0, as in NumPy (which also warns), and "
        "INT_MIN // -1 wraps to INT_MIN; floating inf // finite is inf and finite // inf a signed zero, as the "
        "standard asks."
    ),
)
remainder = _binary(
    "remainder",
    _remainder,
    "real numeric",
    doc=(" The result has the divisor's sign, as Python's %. Integer x % 0 gives 0, as in NumPy (which also warns)."),
)
pow = _binary("pow", _pow, "numeric")  # noqa: A001
_BEYOND = (
    " A Python int beyond the array's integer dtype compares by its value (uint8 array > -1 is all True), "
    "as in NumPy 2."
)
equal = _binary("equal", _plain(torch.eq), "any", "bool", _BEYOND, operator.eq)
not_equal = _binary("not_equal", _plain(torch.ne), "any", "bool", _BEYOND, operator.ne)
less = _binary("less", _ordered(torch.lt), "real numeric", "bool", _BEYOND, operator.lt)
less_equal = _binary("less_equal", _ordered(torch.le), "real numeric", "bool", _BEYOND, operator.le)
greater = _binary("greater", _ordered(torch.gt), "real numeric", "bool", _BEYOND, operator.gt)
greater_equal = _binary("greater_equal", _ordered(torch.ge), "real numeric", "bool", _BEYOND, operator.ge)
maximum = _binary("maximum", _ordered_select(torch.maximum), "real numeric")
minimum = _binary("minimum", _ordered_select(torch.minimum), "real numeric")
bitwise_and = _binary("bitwise_and", _plain(torch.bitwise_and), "integer or boolean")
bitwise_or = _binary("bitwise_or", _plain(torch.bitwise_or), "integer or boolean")
bitwise_xor = _binary("bitwise_xor", _plain(torch.bitwise_xor), "integer or boolean")
bitwise_left_shift = _binary("bitwise_left_shift", _plain(torch.bitwise_left_shift), "integer")
bitwise_right_shift = _binary("bitwise_right_shift", _right_shift, "integer")


def _scalar_truth(value: NeuronArray | complex, name: str) -> NeuronArray | complex:
    """A Python scalar operand of a logical function as its truth value, as NumPy reads it: a Python int beside
    a narrow array is no overflow there (logical_or(607, uint8 array) is True), but NumPy converts it to int64
    first, so one beyond int64 is its OverflowError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
        return value
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise OverflowError(f"{name}(): Python int {value} is beyond int64, which NumPy converts it to")
    return bool(value)


def _logical_function(name: str, op: Callable[[Tensor, Tensor], Tensor]) -> Binary:
    f = _binary(name, _logical(op), "any", result="bool")

    @functools.wraps(f)
    def logical(x1: NeuronArray | complex, x2: NeuronArray | complex, /) -> NeuronArray:
        return f(_scalar_truth(x1, name), _scalar_truth(x2, name))

    return logical


logical_and = _logical_function("logical_and", torch.logical_and)
logical_or = _logical_function("logical_or", torch.logical_or)
logical_xor = _logical_function("logical_xor", torch.logical_xor)
atan2 = _binary("atan2", _real_float(torch.atan2), "real numeric", result="float")
copysign = _binary("copysign", _real_float(torch.copysign), "real numeric", result="float")
hypot = _binary("hypot", _real_float(torch.hypot), "real numeric", result="float")
logaddexp = _binary("logaddexp", _real_float(torch.logaddexp), "real numeric", result="float")
nextafter = _binary("nextafter", _real_float(torch.nextafter), "real numeric", result="float")


def clip(
    x: NeuronArray,
    /,
    min: NeuronArray | float | None = None,  # noqa: A002
    max: NeuronArray | float | None = None,
) -> NeuronArray:  # noqa: A002
    """Clamp to [min, max]; bounds are arrays broadcast with x, or Python scalars. x's dtype is kept."""
    t = tensor(x, "clip")
    _dtypes.check(t.dtype, "real numeric", "clip")
    broadcast_shape([t.shape] + [b._t.shape for b in (min, max) if isinstance(b, NeuronArray)], "clip")
    result = x
    if min is not None:
        result = maximum(result, _bound(min, t, "min", math.ceil))
    if max is not None:
        result = minimum(result, _bound(max, t, "max", math.floor))
    # the result has the broadcast shape of x, min and max, as the standard's maximum(minimum(x, max), min)
    return result if result is not x else wrap(t.clone())


def _bound(b: NeuronArray | float, t: Tensor, arg: str, to_int: Callable[[float], int]) -> NeuronArray | complex:
    """A clip bound in x's dtype: arrays (and NumPy scalars, 0-d arrays of their dtype) are cast, a float bound on
    integer x rounds inward, and a bound beyond integer x's range is held at it."""
    if isinstance(b, np.generic):
        b = numpy_scalar(b, t.device, "clip")
    if isinstance(b, NeuronArray):
        if b._t.device != t.device:
            raise ValueError(f"clip(): {arg} is on {b._t.device}, x on {t.device}")
        if b._t.dtype is t.dtype:
            return b
        bound = b._t
        if t.dtype in _dtypes.INTEGER and not _dtypes.safe_cast(bound.dtype, t.dtype):
            bound = _saturated(bound, t.dtype, arg, to_int)
        return wrap(_dtypes.cast(bound, t.dtype))
    if t.dtype in _dtypes.INTEGER and isinstance(b, (int, float)) and not isinstance(b, bool):
        if isinstance(b, float):
            if not math.isfinite(b):
                raise ValueError(f"clip(): {arg}={b} is not a finite bound for an integer array")
            b = to_int(b)
        lo, hi = _dtypes.int_range(t.dtype)
        return builtins.min(builtins.max(b, lo), hi)
    return b


def _saturated(bound: Tensor, dtype: torch.dtype, arg: str, to_int: Callable[[float], int]) -> Tensor:
    """An integer or floating bound of an integer x as x's ``dtype``: a float rounds inward (ceil for min, floor
    for max, as a Python float bound; a cast would truncate), and values beyond the dtype's range are held at it
    (a cast would wrap: an int16 min of 300 clips int8 x to 127, not to 44)."""
    if bound.dtype in _dtypes.FLOATING:
        if bool(torch.isnan(bound).any()):
            raise ValueError(f"clip(): {arg} holds NaN, which is no bound for an integer array")
        bound = torch.ceil(bound) if to_int is math.ceil else torch.floor(bound)
    lo, hi = _dtypes.int_range(dtype)
    b = wrap(bound)
    ends = [_dtypes.compute(scalar_to_tensor(v, dtype, bound.device, "clip")) for v in (lo, hi)]
    held = torch.where(
        less(b, lo)._t, ends[0], torch.where(greater(b, hi)._t, ends[1], _dtypes.compute(_dtypes.cast(bound, dtype)))
    )
    return _dtypes.restore(held, dtype)
