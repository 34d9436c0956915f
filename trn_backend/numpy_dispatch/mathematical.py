"""NumPy's "Mathematical functions" that are neither ufuncs (``ufuncs``) nor reductions (``reductions``):
differences (diff, ediff1d, gradient) and cross, rounding (round), handling complex numbers (real, imag), and the
miscellaneous convolve, clip and interp.

Result dtypes are NumPy's: dtypes promote by NumPy's rules (``np.result_type``, Python scalars weakly), which differ
from the standard's where kinds mix (float32 with int64 is float64 here, as in NumPy). Functions NumPy computes in
float64 (interp, gradient of integers) do so here too, except on devices without float64 (Neuron), where the default
float (float32) stands in. Integer convolutions are exact, with the dtype's wraparound.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np
import torch

from .. import _dtypes
from .._array import wrap
from .._helpers import normalize_axes, normalize_axis
from .._scalars import convert_scalar
from ._common import (
    A,
    _along,
    _as,
    _axis,
    _check_sequences,
    _correlate,
    _flat,
    _float_for,
    _lags,
    _mode,
    _promoted,
    _warn,
)
from ._registry import can_cast, implements, xp

# ---------------------------------------------------------------- sums, products, differences


@implements(np.diff, arrays="a prepend append")
def diff(a: A, n: int = 1, axis: int = -1, prepend: A | None = None, append: A | None = None) -> A:
    """numpy.diff; a 0-d prepend or append is repeated along the axis, as in NumPy."""
    axis = normalize_axis(axis, a.ndim, "numpy.diff")
    edge = tuple(1 if i == axis else d for i, d in enumerate(a.shape))
    prepend, append = (v if v is None or v.ndim else xp.broadcast_to(v, edge) for v in (prepend, append))
    return xp.diff(a, axis=axis, n=n, prepend=prepend, append=append)


def _axes(axis: Any, ndim: int, func: str) -> tuple[int, ...]:
    try:
        return normalize_axes(axis, ndim, func)
    except IndexError as e:
        raise np.exceptions.AxisError(str(e)) from None


@implements(np.gradient, arrays="f varargs", weak="varargs")
def gradient(f: A, *varargs: Any, axis: Any = None, edge_order: int = 1) -> A | tuple[A, ...]:
    """numpy.gradient: central differences inside, one-sided ones of order edge_order (1 or 2) at the ends;
    spacings as one scalar, one scalar per axis, or coordinate arrays; a tuple of arrays for several axes."""
    func = "numpy.gradient"
    axes = _axes(axis, f.ndim, func)
    spacings = _gradient_spacings(f, axes, varargs, func)
    if edge_order > 2:
        raise ValueError(f"{func}(): edge_order greater than 2 is not supported, got {edge_order}")
    if f._t.dtype is _dtypes.bool:
        raise TypeError(f"{func}(): f is boolean; differences of booleans are undefined (cast it first)")
    out_dtype = f._t.dtype if f._t.dtype in _dtypes.FLOATING else _float_for(f.device)
    f = _as(f, out_dtype)
    grads = tuple(
        _as(_gradient_along(f, ax, dx, edge_order, func), out_dtype) for ax, dx in zip(axes, spacings, strict=True)
    )
    return grads[0] if len(grads) == 1 else grads


def _gradient_spacings(f: A, axes: tuple[int, ...], varargs: tuple[Any, ...], func: str) -> list[Any]:
    """Per axis: a scalar step (Python scalar or 0-d array) or a 1-d array of the steps between coordinates."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [varargs[0]] * len(axes)
    if len(varargs) != len(axes):
        raise TypeError(
            f"{func}(): give no spacing, one scalar, or one spacing per axis ({len(axes)}); got {len(varargs)}"
        )
    return [_axis_spacing(f, ax, spacing, func) for ax, spacing in zip(axes, varargs, strict=True)]


def _axis_spacing(f: A, axis: int, spacing: Any, func: str) -> Any:
    if not isinstance(spacing, A) or spacing.ndim == 0:
        return spacing
    if spacing.ndim != 1:
        raise ValueError(f"{func}(): spacings must be scalars or 1-d coordinates, got shape {spacing.shape}")
    if spacing.shape[0] != f.shape[axis]:
        raise ValueError(
            f"{func}(): coordinates of length {spacing.shape[0]} do not match the length {f.shape[axis]} of axis {axis}"
        )
    if spacing._t.dtype in _dtypes.INTEGER or spacing._t.dtype is _dtypes.bool:
        spacing = _as(spacing, _float_for(spacing.device))
    steps = xp.diff(spacing)
    # evenly spaced coordinates take the scalar formulas, as in NumPy
    if steps.shape[0] > 0 and builtins.bool(xp.all(steps == steps[0])):
        return steps[0]
    return steps


def _gradient_along(f: A, axis: int, dx: Any, edge_order: int, func: str) -> A:
    n = f.shape[axis]
    if n < edge_order + 1:
        raise ValueError(
            f"{func}(): axis {axis} has {n} elements; edge_order={edge_order} needs at least {edge_order + 1}"
        )

    def at(i: int | slice) -> A:
        return f[_along(axis, slice(i, i + 1 or None) if isinstance(i, int) else i)]

    uniform = not isinstance(dx, A) or dx.ndim == 0
    if uniform:
        inner = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * dx)
    else:
        shape = tuple(-1 if i == axis else 1 for i in range(f.ndim))
        d1, d2 = dx[:-1], dx[1:]
        a, b, c = (xp.reshape(w, shape) for w in (-d2 / (d1 * (d1 + d2)), (d2 - d1) / (d1 * d2), d1 / (d2 * (d1 + d2))))
        inner = a * at(slice(None, -2)) + b * at(slice(1, -1)) + c * at(slice(2, None))
    if edge_order == 1:
        first = (at(1) - at(0)) / (dx if uniform else dx[0])
        last = (at(-1) - at(-2)) / (dx if uniform else dx[-1])
    else:
        first_weights = _second_order_weights(dx, uniform, at_start=True)
        last_weights = _second_order_weights(dx, uniform, at_start=False)
        first = first_weights[0] * at(0) + first_weights[1] * at(1) + first_weights[2] * at(2)
        last = last_weights[0] * at(-3) + last_weights[1] * at(-2) + last_weights[2] * at(-1)
    dtype = xp.result_type(first, inner, last)
    return xp.concat([_as(first, dtype), _as(inner, dtype), _as(last, dtype)], axis=axis)


def _second_order_weights(dx: Any, uniform: bool, *, at_start: bool) -> tuple[Any, Any, Any]:
    """Weights of the three values nearest an end in NumPy's second-order one-sided difference."""
    if uniform:
        return (-1.5 / dx, 2.0 / dx, -0.5 / dx) if at_start else (0.5 / dx, -2.0 / dx, 1.5 / dx)
    if at_start:
        d1, d2 = dx[0], dx[1]
        return -(2.0 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
    d1, d2 = dx[-2], dx[-1]
    return d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2.0 * d2 + d1) / (d2 * (d1 + d2))


@implements(np.ediff1d, arrays="ary to_end to_begin")
def ediff1d(ary: A, to_end: A | None = None, to_begin: A | None = None) -> A:
    """numpy.ediff1d: differences of the flattened array in its dtype, to_begin and to_end (flattened, cast
    under same_kind) around them."""
    flat = _flat(ary)
    dtype = flat._t.dtype
    if dtype is _dtypes.bool:
        raise TypeError("numpy.ediff1d(): ary is boolean; differences of booleans are undefined")
    parts = [xp.subtract(flat[1:], flat[:-1])]
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is None:
            continue
        if not can_cast(extra._t.dtype, dtype, "same_kind"):
            raise TypeError(
                f"numpy.ediff1d(): {name} of dtype {_dtypes.name(extra._t.dtype)} cannot be cast to "
                f"ary's dtype {_dtypes.name(dtype)} under the same_kind rule"
            )
        extra = _as(_flat(extra), dtype)
        parts = [extra, *parts] if name == "to_begin" else [*parts, extra]
    return xp.concat(parts) if len(parts) > 1 else parts[0]


@implements(np.cross, arrays="a b")
def cross(a: A, b: A, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> A:
    """numpy.cross of 3-vectors (or 2-vectors, deprecated in NumPy 2.0 and warned about as there: a pair of
    2-vectors gives the z component alone), vectors along axisa/axisb, the result's along axisc."""
    func = "numpy.cross"
    if axis is not None:
        axisa = axisb = axisc = axis
    a = xp.moveaxis(a, _axis(axisa, a.ndim, func), -1) if a.ndim else a
    b = xp.moveaxis(b, _axis(axisb, b.ndim, func), -1) if b.ndim else b
    la, lb = a.shape[-1] if a.ndim else 0, b.shape[-1] if b.ndim else 0
    if la not in (2, 3) or lb not in (2, 3):
        raise ValueError(
            f"{func}(): incompatible dimensions for cross product (dimension must be 2 or 3), got "
            f"vectors of length {la} and {lb}"
        )
    if la == 2 or lb == 2:
        _warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
            "instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
        )
    dtype = _promoted(a, b)
    a, b = _as(a, dtype), _as(b, dtype)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if la == 2 and lb == 2:
        return z
    if la == 3 and lb == 3:
        a2, b2 = a[..., 2], b[..., 2]
        x_part, y_part = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    elif la == 2:
        b2 = b[..., 2]
        x_part, y_part = a1 * b2, -(a0 * b2)
    else:
        a2 = a[..., 2]
        x_part, y_part = -(a2 * b1), a2 * b0
    result = xp.stack(xp.broadcast_arrays(x_part, y_part, z), axis=-1)
    return xp.moveaxis(result, -1, _axis(axisc, result.ndim, func))


# ---------------------------------------------------------------- rounding


def floor_divide(x1: Any, x2: Any) -> A:
    """numpy.floor_divide's values: for floats, NumPy's divmod (the quotient of x1 - fmod(x1, x2), stepped down
    where the remainder's sign differs from x2's, snapped to an integer), so -2 // inf is -1 and inf // 3 NaN
    where the standard's special cases (the namespace's floor_divide) give -0 and inf. Integers as the
    namespace's."""
    r = xp.floor_divide(x1, x2)
    if r._t.dtype not in _dtypes.REAL_FLOAT:
        return r
    arr1, arr2 = (
        xp.astype(x, r.dtype) if isinstance(x, A) else xp.asarray(x, dtype=r.dtype, device=r.device) for x in (x1, x2)
    )
    arr1, arr2 = xp.broadcast_arrays(arr1, arr2)
    # float16 and bfloat16 compute in float32, as NumPy's half loops
    work = torch.float32 if r._t.dtype in _dtypes.EXTENSION_FLOAT else r._t.dtype
    a, b = arr1._t.to(work), arr2._t.to(work)
    mod = torch.fmod(a, b)
    div = (a - mod) / b
    step = (mod != 0) & ((b < 0) != (mod < 0))
    div = torch.where(step, div - 1, div)
    floor = torch.floor(div)
    snapped = torch.where(div - floor > 0.5, floor + 1, floor)
    zero = torch.copysign(torch.zeros_like(div), a / b)
    out = torch.where(div != 0, snapped, zero)
    out = torch.where(b == 0, a / b, out)
    return wrap(_dtypes.cast(out, r._t.dtype))


def expm1(x: A) -> A:
    """numpy.expm1's values: complex input by NumPy's formula, expm1(a) cos b - 2 sin^2(b/2) + i e^a sin b, whose
    special values differ from the standard's (the namespace's expm1): NaN + 0j gives NaN + NaN j here."""
    if x._t.dtype not in _dtypes.COMPLEX_FLOAT:
        return xp.expm1(x)
    t = x._t
    a, b = t.real, t.imag
    half = torch.sin(b / 2)
    return wrap(torch.complex(torch.expm1(a) * torch.cos(b) - 2 * half * half, torch.exp(a) * torch.sin(b)))


def rint(a: A) -> A:
    """numpy.rint's values: half to even; integer and bool input (which NumPy's rint has no loop for) computes
    in the default floating dtype, as every floating operation's does."""
    if a._t.dtype in _dtypes.FLOATING:
        return xp.round(a)
    return xp.astype(a, _dtypes.default_float(a._t.device))


@implements(np.round, np.around, arrays="a")
def round(a: A, decimals: int = 0) -> A:
    """numpy.round: half to even at ``decimals`` places. Floats scale, round and unscale as NumPy does;
    integers round exactly to tens, hundreds, ... for negative decimals (NumPy's float64 detour is exact only
    below 2**53), and a result beyond the dtype wraps modulo 2**bits, as integer multiplication does."""
    decimals = operator.index(decimals)  # as a Python int: NumPy refuses 10 ** -np.int64(2)
    if a._t.dtype is _dtypes.bool:
        # NumPy rounds bools with the floating ufunc rint (float16 there; here, the rule for integer input of
        # floating operations: the default float), and other decimals fail on its bool scaling
        if decimals != 0:
            raise TypeError(
                f"numpy.round(): cannot round a bool array to {decimals} decimals (NumPy's scaling "
                "of bools fails too); cast it to a number first"
            )
        return rint(a)
    if decimals == 0 or (decimals > 0 and a._t.dtype not in _dtypes.FLOATING):
        return xp.round(a) if a._t.dtype in _dtypes.FLOATING else xp.asarray(a, copy=True)
    if a._t.dtype in _dtypes.FLOATING:
        scale = 10.0 ** abs(decimals)
        if decimals > 0:
            return xp.divide(xp.round(xp.multiply(a, scale)), scale)
        return xp.multiply(xp.round(xp.divide(a, scale)), scale)
    return _round_integer(a, 10**-decimals)


def _round_integer(a: A, step: int) -> A:
    """Integers rounded half to even to a multiple of ``step`` (10, 100, ...), exactly. The magnitude rounds in
    uint64, which holds every |x| and every step up to 10**19 (no intermediate overflows: r > step - r is the
    test, not 2 * r > step); half to even is symmetric, so the sign comes back after, and the result wraps back
    into a's dtype."""
    u64 = _dtypes.uint64
    if step > _dtypes.int_range(u64)[1]:  # 10**20 and up: every |x| < 2**64 is under half a step, so 0
        return xp.zeros_like(a)
    negative = xp.less(a, 0)
    bits = xp.astype(a, u64)  # a negative x as its two's complement, so negating it gives |x|
    magnitude = xp.where(negative, xp.negative(bits), bits)
    q, r = xp.floor_divide(magnitude, step), xp.remainder(magnitude, step)
    rest = xp.subtract(step, r)
    up = xp.logical_or(xp.greater(r, rest), xp.logical_and(xp.equal(r, rest), xp.equal(xp.remainder(q, 2), 1)))
    rounded = xp.multiply(xp.add(q, xp.astype(up, u64)), step)
    return xp.astype(xp.where(negative, xp.negative(rounded), rounded), a.dtype)


# ---------------------------------------------------------------- handling complex numbers


@implements(np.real, arrays="val")
def real(val: A) -> A:
    """numpy.real (a real array is its own real part)."""
    return xp.real(val) if val._t.dtype in _dtypes.COMPLEX_FLOAT else val


@implements(np.imag, arrays="val")
def imag(val: A) -> A:
    """numpy.imag (zeros for a real array)."""
    return xp.imag(val) if val._t.dtype in _dtypes.COMPLEX_FLOAT else xp.zeros_like(val)


# ---------------------------------------------------------------- miscellaneous


@implements(np.convolve, arrays="a v")
def convolve(a: A, v: A, mode: str = "full") -> A:
    """numpy.convolve of two 1-d sequences (0-d counts as 1-d) in their promoted dtype: integers exactly, with
    the dtype's wraparound."""
    func = "numpy.convolve"
    mode = _mode(mode, func)
    a, v = (xp.reshape(s, (1,)) if s.ndim == 0 else s for s in (a, v))
    _check_sequences(a, v, func)
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    return correlation(a, xp.flip(v), mode)


_SPECIAL_CHUNK = 1 << 22  # products held at once by the direct correlation of data with an inf or nan


def correlation(a: A, v: A, mode: str) -> A:
    """sum_n a[n + k] * v[n] over the lags of ``mode`` (the core of convolve and correlate), each lag summing only
    the products of overlapping entries, as NumPy's direct sum does. A convolution's zero padding would add
    0 * v[n] at the edges, which is NaN where v[n] is inf or nan: data holding one is summed directly here."""
    dtype = _promoted(a, v)
    if dtype not in _dtypes.FLOATING or (_all_finite(a._t) and _all_finite(v._t)):
        return _correlate(a, v, mode)
    return _lags(_direct_full_correlation(_as(a, dtype)._t, _as(v, dtype)._t), a, v, mode)


def _all_finite(t: torch.Tensor) -> bool:
    return bool(torch.isfinite(t).all())


def _direct_full_correlation(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Every lag k from -(len(v) - 1) to len(a) - 1 of sum_n a[n + k] * v[n], over the n where a[n + k] exists
    (no product with padding). Complex products follow the textbook formula on the parts (NumPy's and Python's
    (ar br - ai bi) + (ar bi + ai br)j), so an inf or nan reaches the parts it reaches there."""
    a, v = (t.resolve_conj().resolve_neg() for t in (a, v))
    lv = v.shape[0]
    pad = (lv - 1, lv - 1)
    windows = torch.nn.functional.pad(a, pad).unfold(0, lv, 1)
    inside = torch.nn.functional.pad(torch.ones(a.shape, dtype=torch.bool, device=a.device), pad).unfold(0, lv, 1)
    rows = builtins.max(1, _SPECIAL_CHUNK // lv)
    parts = []
    for i in range(0, windows.shape[0], rows):
        w, keep = windows[i : i + rows], inside[i : i + rows]
        if a.is_complex():
            wr, wi, vr, vi = w.real, w.imag, v.real, v.imag
            re = torch.where(keep, wr * vr - wi * vi, 0).sum(-1)
            im = torch.where(keep, wr * vi + wi * vr, 0).sum(-1)
            parts.append(torch.complex(re, im))
        else:
            parts.append(torch.where(keep, w * v, 0).sum(-1))
    return torch.cat(parts)


@implements(np.nan_to_num, arrays="x")
def nan_to_num(x: A, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> A:
    """numpy.nan_to_num: NaN, inf and -inf replaced (by default by 0 and the dtype's largest and smallest finite
    values), in the real and imaginary parts of complex data; integer and bool data unchanged. The replacements
    convert to the dtype as NumPy stores a Python scalar (1e300 into float32 is inf); copy=False writes into x."""
    t = x._t
    if t.dtype not in _dtypes.FLOATING:
        return xp.asarray(x, copy=True) if copy else x
    real = _dtypes.real_of(t.dtype)
    largest = float(torch.finfo(real).max)
    values = [
        convert_scalar(v, real, t.device, "numpy.nan_to_num")
        for v in (nan, largest if posinf is None else posinf, -largest if neginf is None else neginf)
    ]

    def replaced(part: torch.Tensor) -> torch.Tensor:
        out = torch.where(torch.isnan(part), values[0], part)
        out = torch.where(part == math.inf, values[1], out)
        return torch.where(part == -math.inf, values[2], out)

    r = torch.complex(replaced(t.real), replaced(t.imag)) if t.is_complex() else replaced(t)
    if copy:
        return wrap(r)
    x[...] = wrap(r)
    return x


_PYTHON_REAL = frozenset((type(None), bool, int, float))  # exact types: NumPy scalars subclass float and int


@implements(np.clip, arrays="a a_min a_max min max", weak="a_min a_max min max")
def clip(a: A, a_min: Any = None, a_max: Any = None, min: Any = None, max: Any = None) -> A:
    """numpy.clip: the bounds promote with a (NumPy 2: an int array clipped at 0.5 becomes floating)."""
    if (a_min is not None and min is not None) or (a_max is not None and max is not None):
        raise ValueError("numpy.clip(): give a_min/a_max or min/max, not both spellings of one bound")
    lo, hi = (a_min if min is None else min), (a_max if max is None else max)
    if a._t.dtype in _dtypes.REAL_FLOAT and type(lo) in _PYTHON_REAL and type(hi) in _PYTHON_REAL:
        return xp.clip(a, lo, hi)  # Python bounds are weak: a real floating array keeps its dtype (result_type)
    bounds = [b for b in (lo, hi) if b is not None]
    dtype = xp.result_type(a, *bounds)
    lo, hi = (b if b is None or not isinstance(b, A) else xp.astype(b, dtype) for b in (lo, hi))
    return xp.clip(a if a.dtype == dtype else xp.astype(a, dtype), lo, hi)


@implements(np.interp, arrays="x xp fp")
def interp(x: A, xp: A, fp: A, left: Any = None, right: Any = None, period: Any = None) -> A:
    """numpy.interp: piecewise-linear interpolation in float64 (complex128 for complex fp), left/right beyond
    the ends, or periodic x-coordinates under ``period``."""
    return _interp(x, xp, fp, left, right, period)


def _interp(x: A, points: A, values: A, left: Any, right: Any, period: Any) -> A:
    func = "numpy.interp"
    real = _float_for(x.device)
    complex_values = values._t.dtype in _dtypes.COMPLEX_FLOAT
    x, points = _real_coordinates(x, real, func, "x"), _real_coordinates(points, real, func, "xp")
    values = _as(values, _dtypes.complex_of(real) if complex_values else real)
    if points.ndim != 1 or values.ndim != 1:
        raise ValueError(f"{func}(): xp and fp must be 1-d, got shapes {points.shape} and {values.shape}")
    if points.shape[0] != values.shape[0]:
        raise ValueError(f"{func}(): fp and xp are not of the same length ({values.shape[0]} and {points.shape[0]})")
    if points.shape[0] == 0:
        raise ValueError(f"{func}(): the array of sample points xp is empty")
    if period is not None:
        x, points, values = _periodic(x, points, values, period, func)
        left = right = None
    left_value = values[0] if left is None else _end_value(left, complex_values, func, "left")
    right_value = values[-1] if right is None else _end_value(right, complex_values, func, "right")
    if not complex_values:
        return _interp_real(x, points, values, left_value, right_value)
    parts = [
        _interp_real(
            x, points, part(values), part(_as_array_like(left_value, values)), part(_as_array_like(right_value, values))
        )
        for part in (xp.real, xp.imag)
    ]
    return wrap(torch.complex(parts[0]._t, parts[1]._t))


def _real_coordinates(a: A, real: torch.dtype, func: str, arg: str) -> A:
    if a._t.dtype in _dtypes.COMPLEX_FLOAT:
        raise TypeError(f"{func}(): {arg} must be real, got {_dtypes.name(a._t.dtype)}")
    return _as(a, real)


def _periodic(x: A, points: A, values: A, period: Any, func: str) -> tuple[A, A, A]:
    """x and the sample points reduced modulo the period, the points sorted and extended by one period-shifted
    point at each end, so that interpolation wraps around."""
    period = float(period)
    if period == 0:
        raise ValueError(f"{func}(): period must be a non-zero value")
    period = abs(period)
    x, points = xp.remainder(x, period), xp.remainder(points, period)
    order = xp.argsort(points, stable=True)
    points, values = xp.take(points, order), xp.take(values, order)
    points = xp.concat([points[-1:] - period, points, points[:1] + period])
    values = xp.concat([values[-1:], values, values[:1]])
    return x, points, values


def _end_value(value: Any, complex_values: bool, func: str, arg: str) -> complex | float:
    try:
        return complex(value) if complex_values else float(value)
    except TypeError:
        kind = "a complex" if complex_values else "a real"
        raise TypeError(f"{func}(): {arg} must be {kind} number, got {type(value).__name__}") from None


def _as_array_like(value: Any, like: A) -> A:
    return value if isinstance(value, A) else xp.asarray(value, dtype=like._t.dtype, device=like.device)


def _interp_real(x: A, points: A, values: A, left: Any, right: Any) -> A:
    """NumPy's rules on real data: left below the first point, right above the last, the last value at it,
    the value of a sample point at it exactly, else the line through the neighbours (retried from the right
    neighbour where that gives NaN, as with infinite values); NaN x gives NaN, except with a single sample
    point, whose value NumPy gives for every x between left and right."""
    first, last = points[0], points[-1]
    if points.shape[0] == 1:
        return xp.where(x < first, left, xp.where(x > last, right, xp.broadcast_to(values[0], x.shape)))
    j = _flat(xp.clip(xp.searchsorted(points, x, side="right") - 1, 0, points.shape[0] - 2))
    x0, x1, y0, y1 = (
        xp.reshape(xp.take(v, i), x.shape) for v, i in ((points, j), (points, j + 1), (values, j), (values, j + 1))
    )
    slope = (y1 - y0) / (x1 - x0)
    inner = slope * (x - x0) + y0
    inner = xp.where(xp.isnan(inner), slope * (x - x1) + y1, inner)
    inner = xp.where(xp.logical_and(xp.isnan(inner), y0 == y1), y0, inner)
    inner = xp.where(x == x0, y0, inner)
    inner = xp.where(x == last, values[-1], inner)
    result = xp.where(x < first, left, xp.where(x > last, right, inner))
    return xp.where(xp.isnan(x), x, result)
