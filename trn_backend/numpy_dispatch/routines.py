"""NumPy array routines on NeuronArray: manipulation, numerics, linalg.lstsq and the host-copying I/O functions.

Each routine follows NumPy's semantics, result dtypes included: dtypes promote by NumPy's rules (``np.result_type``,
Python scalars weakly), which differ from the standard's where kinds mix (float32 with int64 is float64 here, as
in NumPy). Functions NumPy computes in float64 (interp, gradient of integers, lstsq of integers) do so here too,
except on devices without float64 (Neuron), where the default float (float32) stands in.

Index arguments that decide a result's shape (insert/delete positions, pad widths, stat lengths) are read on the
host; the data stays on its device. The I/O functions (save, savez, savez_compressed, savetxt) write host data:
they copy NeuronArrays to the host explicitly and call NumPy's function on the copies.
"""

from __future__ import annotations

import builtins
import math
import operator
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import trn_backend as xp

from .. import _dtypes
from .._array import wrap
from .._helpers import NeuronArray, normalize_axes, normalize_axis
from ._registry import as_array, can_cast, device_of, implements

A = NeuronArray
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


# ---------------------------------------------------------------- shared helpers

def _numpy_dtype(x: A) -> np.dtype:
    return _dtypes.public(x._t.dtype)


def _promoted(*operands: Any) -> torch.dtype:
    """NumPy's result dtype of NeuronArrays and Python scalars (which promote weakly, as in NumPy 2)."""
    described = [_numpy_dtype(o) if isinstance(o, A) else o for o in operands]
    return _dtypes.to_dtype(np.result_type(*described), "numpy result dtype")


def _as(x: A, dtype: torch.dtype) -> A:
    return xp.astype(x, dtype, copy=False)


def _flat(x: A) -> A:
    return xp.reshape(x, (-1,))


def _along(axis: int, key: Any) -> tuple[Any, ...]:
    """An index that applies ``key`` to ``axis`` and takes every other axis whole."""
    return (slice(None),) * axis + (key,)


def _float_for(device: torch.device) -> torch.dtype:
    """NumPy's float64, or the default float where the device has no float64."""
    return _dtypes.default_float(device)


def _is_integral(x: A) -> bool:
    return x._t.dtype in _dtypes.INTEGER


def _index_array(positions: np.ndarray, device: torch.device) -> A:
    return xp.asarray(np.asarray(positions, dtype=np.int64), device=device)


def _axis(axis: Any, ndim: int, func: str) -> int:
    """A normalized axis; out of range is NumPy's AxisError (both a ValueError and an IndexError)."""
    try:
        return normalize_axis(axis, ndim, func)
    except IndexError as e:
        raise np.exceptions.AxisError(str(e)) from None


def _axes(axis: Any, ndim: int, func: str) -> tuple[int, ...]:
    try:
        return normalize_axes(axis, ndim, func)
    except IndexError as e:
        raise np.exceptions.AxisError(str(e)) from None


def _warn_caller(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside trn_backend (the user's NumPy call), as NumPy's
    own warnings are: DeprecationWarning is shown by default only where it names the caller's code."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


# ---------------------------------------------------------------- diagonals

@implements(np.diag, arrays="v")
def diag(v: A, k: int = 0) -> A:
    """numpy.diag: a 1-d v becomes a square matrix with v on diagonal k; a 2-d v gives its diagonal k (a copy,
    where NumPy gives a read-only view)."""
    k = operator.index(k)
    if v.ndim == 1:
        return wrap(_dtypes.via_compute(lambda t: torch.diag(t, k), v._t))
    if v.ndim == 2:
        return xp.asarray(xp.linalg.diagonal(v, offset=k), copy=True)
    raise ValueError(f"numpy.diag(): v must be 1-d or 2-d, got shape {v.shape}")


@implements(np.diagflat, arrays="v")
def diagflat(v: A, k: int = 0) -> A:
    """numpy.diagflat: the flattened v on diagonal k of a square matrix."""
    return diag(_flat(v), k)


# ---------------------------------------------------------------- interpolation

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
        raise ValueError(f"{func}(): fp and xp are not of the same length ({values.shape[0]} and "
                         f"{points.shape[0]})")
    if points.shape[0] == 0:
        raise ValueError(f"{func}(): the array of sample points xp is empty")
    if period is not None:
        x, points, values = _periodic(x, points, values, period, func)
        left = right = None
    left_value = values[0] if left is None else _end_value(left, complex_values, func, "left")
    right_value = values[-1] if right is None else _end_value(right, complex_values, func, "right")
    if not complex_values:
        return _interp_real(x, points, values, left_value, right_value)
    parts = [_interp_real(x, points, part(values), part(_as_array_like(left_value, values)),
                          part(_as_array_like(right_value, values))) for part in (xp.real, xp.imag)]
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
    x0, x1, y0, y1 = (xp.reshape(xp.take(v, i), x.shape) for v, i in ((points, j), (points, j + 1),
                                                                       (values, j), (values, j + 1)))
    slope = (y1 - y0) / (x1 - x0)
    inner = slope * (x - x0) + y0
    inner = xp.where(xp.isnan(inner), slope * (x - x1) + y1, inner)
    inner = xp.where(xp.logical_and(xp.isnan(inner), y0 == y1), y0, inner)
    inner = xp.where(x == x0, y0, inner)
    inner = xp.where(x == last, values[-1], inner)
    result = xp.where(x < first, left, xp.where(x > last, right, inner))
    return xp.where(xp.isnan(x), x, result)


# ---------------------------------------------------------------- differences

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
    grads = tuple(_as(_gradient_along(f, ax, dx, edge_order, func), out_dtype) for ax, dx in zip(axes, spacings,
                                                                                                    strict=True))
    return grads[0] if len(grads) == 1 else grads


def _gradient_spacings(f: A, axes: tuple[int, ...], varargs: tuple[Any, ...], func: str) -> list[Any]:
    """Per axis: a scalar step (Python scalar or 0-d array) or a 1-d array of the steps between coordinates."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [varargs[0]] * len(axes)
    if len(varargs) != len(axes):
        raise TypeError(f"{func}(): give no spacing, one scalar, or one spacing per axis ({len(axes)}); got "
                        f"{len(varargs)}")
    return [_axis_spacing(f, ax, spacing, func) for ax, spacing in zip(axes, varargs, strict=True)]


def _axis_spacing(f: A, axis: int, spacing: Any, func: str) -> Any:
    if not isinstance(spacing, A) or spacing.ndim == 0:
        return spacing
    if spacing.ndim != 1:
        raise ValueError(f"{func}(): spacings must be scalars or 1-d coordinates, got shape {spacing.shape}")
    if spacing.shape[0] != f.shape[axis]:
        raise ValueError(f"{func}(): coordinates of length {spacing.shape[0]} do not match the length "
                         f"{f.shape[axis]} of axis {axis}")
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
        raise ValueError(f"{func}(): axis {axis} has {n} elements; edge_order={edge_order} needs at least "
                         f"{edge_order + 1}")

    def at(i: int | slice) -> A:
        return f[_along(axis, slice(i, i + 1 or None) if isinstance(i, int) else i)]

    uniform = not isinstance(dx, A) or dx.ndim == 0
    if uniform:
        inner = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * dx)
    else:
        shape = tuple(-1 if i == axis else 1 for i in range(f.ndim))
        d1, d2 = dx[:-1], dx[1:]
        a, b, c = (xp.reshape(w, shape) for w in (-d2 / (d1 * (d1 + d2)), (d2 - d1) / (d1 * d2),
                                                   d1 / (d2 * (d1 + d2))))
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
            raise TypeError(f"numpy.ediff1d(): {name} of dtype {_dtypes.name(extra._t.dtype)} cannot be cast to "
                            f"ary's dtype {_dtypes.name(dtype)} under the same_kind rule")
        extra = _as(_flat(extra), dtype)
        parts = [extra, *parts] if name == "to_begin" else [*parts, extra]
    return xp.concat(parts) if len(parts) > 1 else parts[0]


# ---------------------------------------------------------------- convolution and correlation

_MODES = {"valid": "valid", "same": "same", "full": "full", 0: "valid", 1: "same", 2: "full"}
_EXACT_CHUNK = 1 << 22  # products held at once by the integer correlation


def _mode(mode: Any, func: str) -> str:
    try:
        return _MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"{func}(): mode must be one of 'valid', 'same', or 'full' (got {mode!r})") from None


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
    return _correlate(a, xp.flip(v), mode)


@implements(np.correlate, arrays="a v")
def correlate(a: A, v: A, mode: str = "valid") -> A:
    """numpy.correlate: c[k] = sum_n a[n + k] * conj(v[n]) for two 1-d sequences, in their promoted dtype."""
    func = "numpy.correlate"
    mode = _mode(mode, func)
    if a.ndim == 0 or v.ndim == 0:
        raise ValueError(f"{func}(): a and v must be 1-d, got shapes {a.shape} and {v.shape}")
    _check_sequences(a, v, func)
    if v._t.dtype in _dtypes.COMPLEX_FLOAT:
        v = xp.conj(v)
    return _correlate(a, v, mode)


def _check_sequences(a: A, v: A, func: str) -> None:
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{func}(): a and v must be 1-d, got shapes {a.shape} and {v.shape}")
    for name, s in (("a", a), ("v", v)):
        if s.shape[0] == 0:
            raise ValueError(f"{func}(): {name} cannot be empty")


def _correlate(a: A, v: A, mode: str) -> A:
    """sum_n a[n + k] * v[n] (no conjugation) over the lags of ``mode``. NumPy computes with the longer sequence
    first and reverses the result when it swapped them, which moves the 'same' window by one for an even
    shorter length: the window below follows that."""
    dtype = _promoted(a, v)
    full = _full_correlation(_as(a, dtype)._t, _as(v, dtype)._t, dtype)
    long, short = builtins.max(a.shape[0], v.shape[0]), builtins.min(a.shape[0], v.shape[0])
    if mode == "full":
        return wrap(full)
    if mode == "valid":
        return wrap(full[short - 1:long])
    start = short - 1 - short // 2 if a.shape[0] >= v.shape[0] else short // 2
    return wrap(full[start:start + long])


def _full_correlation(a: torch.Tensor, v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Every lag of sum_n a[n + k] * v[n], k from -(len(v) - 1) to len(a) - 1."""
    if dtype in _dtypes.FLOATING:
        pad = v.shape[0] - 1
        return F.conv1d(a[None, None], v[None, None], padding=pad)[0, 0]
    # integers and booleans: exact sums of products in int64, wrapped back into the dtype (modular arithmetic
    # commutes with the wrap); torch's convolutions have no integer kernels
    a64, v64 = (_dtypes.compute(t).to(torch.int64) for t in (a, v))
    windows = F.pad(a64, (v64.shape[0] - 1, v64.shape[0] - 1)).unfold(0, v64.shape[0], 1)
    rows = builtins.max(1, _EXACT_CHUNK // v64.shape[0])
    sums = torch.cat([(windows[i:i + rows] * v64).sum(-1) for i in range(0, windows.shape[0], rows)])
    return sums != 0 if dtype is _dtypes.bool else _dtypes.restore(sums, dtype)


# ---------------------------------------------------------------- cross product

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
        raise ValueError(f"{func}(): incompatible dimensions for cross product (dimension must be 2 or 3), got "
                         f"vectors of length {la} and {lb}")
    if la == 2 or lb == 2:
        _warn_caller("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
                     "instead. (deprecated in NumPy 2.0)", DeprecationWarning)
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


# ---------------------------------------------------------------- padding

_PAD_OPTIONS = {
    "constant": ("constant_values",), "edge": (), "linear_ramp": ("end_values",), "maximum": ("stat_length",),
    "mean": ("stat_length",), "median": ("stat_length",), "minimum": ("stat_length",),
    "reflect": ("reflect_type",), "symmetric": ("reflect_type",), "wrap": (), "empty": (),
}


class _Unset:
    """The default of pad's mode options: NumPy refuses an option the mode does not take even at its default
    value, so an option given must be told from one left out."""

    def __repr__(self) -> str:
        return "<not given>"


_UNSET: Any = _Unset()
Pairs = list[tuple[Any, Any]]


@implements(np.pad, arrays="array")
def pad(array: A, pad_width: Any, mode: Any = "constant", constant_values: Any = _UNSET, end_values: Any = _UNSET,
        stat_length: Any = _UNSET, reflect_type: Any = _UNSET) -> A:
    """numpy.pad in every named mode, pad_width in each of NumPy's spellings (an int, a pair, a pair per axis,
    a dict of axis -> int or pair). Axes pad one after another, so corners come from the later axes, as in
    NumPy. A callable mode runs Python per vector and is refused."""
    func = "numpy.pad"
    if callable(mode):
        raise TypeError(f"{func}(): a callable mode is not supported on NeuronArray (it runs Python on every "
                        "vector); use one of the named modes, or call numpy.pad on np.asarray(array)")
    if mode not in _PAD_OPTIONS:
        raise ValueError(f"{func}(): mode {mode!r} is not supported; use one of {', '.join(_PAD_OPTIONS)}")
    options = {"constant_values": constant_values, "end_values": end_values, "stat_length": stat_length,
               "reflect_type": reflect_type}
    given = {k: v for k, v in options.items() if v is not _UNSET}
    unsupported = sorted(set(given) - set(_PAD_OPTIONS[mode]))
    if unsupported:
        raise ValueError(f"{func}(): unsupported keyword arguments for mode {mode!r}: {', '.join(unsupported)}")
    widths = _pad_widths(pad_width, array.ndim, func)
    if mode in ("constant", "empty"):
        return _pad_constant(array, widths, given.get("constant_values", 0), mode == "empty", func)
    if array.size == 0:
        for ax, (before, after) in enumerate(widths):
            if array.shape[ax] == 0 and (before or after):
                raise ValueError(f"{func}(): can't extend empty axis {ax} using modes other than 'constant' or "
                                 "'empty'")
        shape = tuple(d + before + after for d, (before, after) in zip(array.shape, widths, strict=True))
        return xp.empty(shape, dtype=array._t.dtype, device=array.device)
    if mode == "edge":
        return _pad_each_axis(array, widths, _edge_blocks)
    if mode == "wrap":
        return _pad_each_axis(array, widths, _wrap_blocks)
    if mode == "linear_ramp":
        ends = _pairs(given.get("end_values", 0), array.ndim, func, "end_values", as_index=False)
        return _pad_each_axis(array, widths, lambda x, ax, w: _ramp_blocks(x, ax, w, ends[ax]))
    if mode in ("reflect", "symmetric"):
        kind = given.get("reflect_type", "even")
        if kind not in ("even", "odd"):
            raise ValueError(f"{func}(): reflect_type must be 'even' or 'odd', got {kind!r}")
        return _pad_each_axis(array, widths, lambda x, ax, w: _reflect_blocks(x, ax, w, mode == "symmetric",
                                                                              kind == "odd"))
    lengths = _pairs(given.get("stat_length"), array.ndim, func, "stat_length", as_index=True)
    return _pad_each_axis(array, widths, lambda x, ax, w: _stat_blocks(x, ax, w, lengths[ax], mode, func))


def _pad_widths(pad_width: Any, ndim: int, func: str) -> list[tuple[int, int]]:
    if isinstance(pad_width, dict):
        pairs = [(0, 0)] * ndim
        for ax, width in pad_width.items():
            ax = _axis(ax, ndim, func)
            if isinstance(width, (int, np.integer)):
                pairs[ax] = (int(width), int(width))
            elif (isinstance(width, tuple) and len(width) == 2
                  and builtins.all(isinstance(w, (int, np.integer)) for w in width)):
                pairs[ax] = (int(width[0]), int(width[1]))
            else:
                raise TypeError(f"{func}(): pad_width[{ax}] must be an int or a pair of ints, got {width!r}")
        pad_width = pairs
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError(f"{func}(): pad_width must be of integral type, got {widths.dtype}")
    return [(int(before), int(after)) for before, after in _pairs(widths, ndim, func, "pad_width", as_index=True)]


def _pairs(value: Any, ndim: int, func: str, arg: str, *, as_index: bool) -> Pairs:
    """A (before, after) pair per axis from NumPy's spellings: one value, one pair for every axis, or a pair
    per axis (anything that broadcasts to (ndim, 2)); index pairs are rounded to ints and must not be negative."""
    if value is None:
        return [(None, None)] * ndim
    x = np.asarray(value)
    if as_index:
        x = np.round(x).astype(np.intp)
    if x.ndim < 3 and x.size == 1:
        pairs = [(x.flat[0], x.flat[0])] * ndim
    elif x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        pairs = [(x.flat[0], x.flat[1])] * ndim
    else:
        try:
            pairs = [tuple(p) for p in np.broadcast_to(x, (ndim, 2)).tolist()]
        except ValueError:
            raise ValueError(f"{func}(): {arg} of shape {x.shape} does not give a (before, after) pair for each "
                             f"of {ndim} axes") from None
    if as_index and builtins.any(v < 0 for pair in pairs for v in pair):
        raise ValueError(f"{func}(): {arg} can't contain negative values")
    return pairs


def _pad_each_axis(array: A, widths: list[tuple[int, int]],
                   blocks: Callable[[A, int, tuple[int, int]], tuple[A, A]]) -> A:
    """Pad axis after axis: ``blocks(x, axis, widths)`` gives the (before, after) blocks of x along axis, x
    already padded along the earlier axes."""
    x = array
    for ax, (before, after) in enumerate(widths):
        if before or after:
            left, right = blocks(x, ax, (before, after))
            x = xp.concat([left, x, right], axis=ax)
    return x if x is not array else xp.asarray(array, copy=True)


def _block_shape(x: A, axis: int, width: int) -> tuple[int, ...]:
    return tuple(width if i == axis else d for i, d in enumerate(x.shape))


def _pad_constant(array: A, widths: list[tuple[int, int]], values: Any, empty: bool, func: str) -> A:
    fills = None if empty else _pairs(values, array.ndim, func, "constant_values", as_index=False)

    def blocks(x: A, ax: int, w: tuple[int, int]) -> tuple[A, A]:
        if fills is None:
            return tuple(xp.empty(_block_shape(x, ax, n), dtype=x._t.dtype, device=x.device) for n in w)
        return tuple(xp.broadcast_to(_fill(v, x, func), _block_shape(x, ax, n)) for v, n in zip(fills[ax], w,
                                                                                                  strict=True))
    return _pad_each_axis(array, widths, blocks)


def _fill(value: Any, like: A, func: str) -> A:
    """A constant as a 0-d array of like's dtype, cast as NumPy's assignment casts it."""
    dtype = like._t.dtype
    source = torch.as_tensor(np.asarray(value))
    if source.is_complex() and dtype not in _dtypes.COMPLEX_FLOAT:
        raise TypeError(f"{func}(): cannot pad a {_dtypes.name(dtype)} array with the complex value {value!r}")
    if source.is_floating_point() and dtype in _dtypes.INTEGER and not torch.isfinite(source).all():
        raise ValueError(f"{func}(): cannot pad an integer array with the value {value!r}")
    return wrap(_dtypes.cast(source, dtype).to(like.device))


def _edge_blocks(x: A, axis: int, widths: tuple[int, int]) -> tuple[A, A]:
    ends = (x[_along(axis, slice(0, 1))], x[_along(axis, slice(-1, None))])
    return tuple(xp.broadcast_to(e, _block_shape(x, axis, n)) for e, n in zip(ends, widths, strict=True))


def _wrap_blocks(x: A, axis: int, widths: tuple[int, int]) -> tuple[A, A]:
    """Periodic continuation: position p (before the data: negative) holds element p mod n."""
    n, (before, after) = x.shape[axis], widths
    left = np.arange(-before, 0) % n
    right = np.arange(n, n + after) % n
    return xp.take(x, _index_array(left, x.device), axis=axis), xp.take(x, _index_array(right, x.device), axis=axis)


def _ramp_blocks(x: A, axis: int, widths: tuple[int, int], ends: tuple[Any, Any]) -> tuple[A, A]:
    """Linear ramps from the end values toward the edge values, as np.linspace(end, edge, width,
    endpoint=False) computes them in float64 (complex128), floored for integer arrays."""
    edges = (x[_along(axis, slice(0, 1))], x[_along(axis, slice(-1, None))])
    left, right = (_ramp(edge, end, n, axis) for edge, end, n in zip(edges, ends, widths, strict=True))
    return left, xp.flip(right, axis=axis)


def _ramp(edge: A, end: Any, n: int, axis: int) -> A:
    dtype = edge._t.dtype
    real = _float_for(edge.device)
    work = _dtypes.complex_of(real) if dtype in _dtypes.COMPLEX_FLOAT or np.iscomplexobj(end) else real
    start = xp.asarray(np.asarray(end), dtype=work, device=edge.device)
    delta = _as(edge, work) - start
    k = xp.reshape(xp.arange(n, dtype=real, device=edge.device), tuple(-1 if i == axis else 1
                                                                       for i in range(edge.ndim)))
    step = delta / n
    # np.linspace's two formulas: k * step, or (k / n) * delta where some step underflows to zero
    ramp = (k / n) * delta if builtins.bool(xp.any(step == 0)) else k * step
    ramp = ramp + start
    if dtype in _dtypes.INTEGER:
        ramp = xp.floor(ramp)
    if dtype not in _dtypes.COMPLEX_FLOAT and ramp._t.dtype in _dtypes.COMPLEX_FLOAT:
        ramp = xp.real(ramp)
    return _as(ramp, dtype)


def _reflect_blocks(x: A, axis: int, widths: tuple[int, int], symmetric: bool, odd: bool) -> tuple[A, A]:
    """Mirror images, grown as NumPy grows them: each round mirrors the part filled so far (a whole number of
    periods of the original, the edge itself included only for 'symmetric'), so that 'odd' reflects about the
    current edge each time. A length-1 axis repeats its value (NumPy's legacy rule)."""
    n, (before, after) = x.shape[axis], widths
    if n == 1:
        return _edge_blocks(x, axis, widths)
    skip = 0 if symmetric else 1  # 'reflect' leaves the edge value out of the mirror image
    period = n - skip
    filled, todo_before, todo_after = x, before, after
    while todo_before or todo_after:
        length = filled.shape[axis]
        usable = (length - skip) // period * period
        left_count, right_count = builtins.min(usable, todo_before), builtins.min(usable, todo_after)
        left = xp.flip(filled[_along(axis, slice(skip, skip + left_count))], axis=axis)
        right = xp.flip(filled[_along(axis, slice(length - skip - right_count, length - skip))], axis=axis)
        if odd:
            left = _odd(left, filled[_along(axis, slice(0, 1))])
            right = _odd(right, filled[_along(axis, slice(-1, None))])
        filled = xp.concat([left, filled, right], axis=axis)
        todo_before, todo_after = todo_before - left_count, todo_after - right_count
    total = filled.shape[axis]
    return filled[_along(axis, slice(0, before))], filled[_along(axis, slice(total - after, total))]


def _odd(chunk: A, edge: A) -> A:
    """2 * edge - chunk in the array's dtype (booleans compute in int64 and keep their truth, as NumPy's
    assignment does)."""
    dtype = chunk._t.dtype
    if dtype is _dtypes.bool:
        reflected = 2 * _as(edge, _dtypes.int64) - _as(chunk, _dtypes.int64)
        return xp.astype(reflected, _dtypes.bool)
    return 2 * edge - chunk


def _stat_blocks(x: A, axis: int, widths: tuple[int, int], lengths: tuple[Any, Any], mode: str,
                 func: str) -> tuple[A, A]:
    """Blocks filled with a statistic of the first/last ``lengths`` values (all of them for None); rounded
    half to even for integer arrays, as NumPy rounds them."""
    n = x.shape[axis]
    counts = [n if length is None else builtins.min(int(length), n) for length in lengths]
    if 0 in counts and mode in ("maximum", "minimum"):
        raise ValueError(f"{func}(): stat_length of 0 yields no value for padding")
    chunks = (x[_along(axis, slice(0, counts[0]))], x[_along(axis, slice(n - counts[1], n))])
    stats = [_statistic(chunk, axis, mode) for chunk in chunks]
    return tuple(xp.broadcast_to(_as_pad_value(s, x._t.dtype), _block_shape(x, axis, w))
                 for s, w in zip(stats, widths, strict=True))


def _statistic(chunk: A, axis: int, mode: str) -> A:
    if mode in ("maximum", "minimum"):
        if chunk._t.dtype in _dtypes.COMPLEX_FLOAT:  # NumPy orders complex values by real, then imaginary part
            n = chunk.shape[axis]
            at = n - 1 if mode == "maximum" else 0
            extreme = _argsort_along(chunk, axis)[_along(axis, slice(at, at + 1))]
            return xp.take_along_axis(chunk, extreme, axis=axis)
        return (xp.max if mode == "maximum" else xp.min)(chunk, axis=axis, keepdims=True)
    if mode == "mean":
        return xp.mean(_mean_operand(chunk), axis=axis, keepdims=True)
    return _median(chunk, axis)


def _mean_operand(x: A) -> A:
    """Integers and booleans average in float64, as in NumPy."""
    return x if x._t.dtype in _dtypes.FLOATING else _as(x, _float_for(x.device))


def _median(x: A, axis: int) -> A:
    """NumPy's median along axis, kept: the middle value, or the mean of the two middle ones; NaN where the
    values hold a NaN; complex values ordered by real part, then imaginary part."""
    n = x.shape[axis]
    values = _mean_operand(x)
    if n == 0:
        return xp.mean(values, axis=axis, keepdims=True)
    ordered = xp.take_along_axis(values, _argsort_along(values, axis), axis=axis)
    upper = ordered[_along(axis, slice(n // 2, n // 2 + 1))]
    middle = upper if n % 2 else (ordered[_along(axis, slice(n // 2 - 1, n // 2))] + upper) / 2
    if values._t.dtype in _dtypes.FLOATING:
        has_nan = xp.any(xp.isnan(values), axis=axis, keepdims=True)
        middle = xp.where(has_nan, xp.asarray(math.nan, dtype=values._t.dtype, device=x.device), middle)
    return middle


def _as_pad_value(stat: A, dtype: torch.dtype) -> A:
    if dtype in _dtypes.INTEGER and stat._t.dtype in _dtypes.FLOATING:
        stat = xp.round(stat)
    return _as(stat, dtype)


# ---------------------------------------------------------------- rearranging

@implements(np.rot90, arrays="m")
def rot90(m: A, k: int = 1, axes: Sequence[int] = (0, 1)) -> A:
    """numpy.rot90: k quarter turns in the plane of axes, from the first axis toward the second."""
    func = "numpy.rot90"
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"{func}(): axes must name 2 axes, got {axes!r}")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError(f"{func}(): the axes must be different, got {axes!r}")
    if not builtins.all(-m.ndim <= ax < m.ndim for ax in axes):
        raise ValueError(f"{func}(): axes={axes!r} out of range for an array of ndim={m.ndim}")
    first, second = (ax % m.ndim for ax in axes)
    k = operator.index(k) % 4
    if k == 0:
        return m[...]
    if k == 2:
        return xp.flip(m, axis=(first, second))
    order = list(range(m.ndim))
    order[first], order[second] = order[second], order[first]
    if k == 1:
        return xp.permute_dims(xp.flip(m, axis=second), tuple(order))
    return xp.flip(xp.permute_dims(m, tuple(order)), axis=second)


@implements(np.append, arrays="arr values")
def append(arr: A, values: A, axis: int | None = None) -> A:
    """numpy.append: values after arr along axis, both flattened for axis=None; the dtypes promote."""
    if axis is None:
        arr, values, axis = _flat(arr), _flat(values), 0
    dtype = _promoted(arr, values)
    return xp.concat([_as(arr, dtype), _as(values, dtype)], axis=axis)


def _axis_or_flat(arr: A, axis: int | None, func: str) -> tuple[A, int]:
    if axis is None:
        return _flat(arr), 0
    return arr, _axis(axis, arr.ndim, func)


def _host_indices(obj: Any) -> np.ndarray:
    """An index argument on the host (NeuronArrays are copied there explicitly)."""
    return np.asarray(obj)


def _check_integer_indices(indices: np.ndarray, func: str) -> None:
    if indices.dtype.kind not in "iu":
        raise IndexError(f"{func}(): obj must hold integers or booleans, got {indices.dtype}")


@implements(np.insert, arrays="arr values")
def insert(arr: A, obj: Any, values: A, axis: int | None = None) -> A:
    """numpy.insert: values (cast to arr's dtype) before the positions obj (an int, a slice, a sequence of
    ints, or a 1-d boolean mask whose True entries are positions) along axis; the flattened arr for None."""
    func = "numpy.insert"
    arr, axis = _axis_or_flat(arr, axis, func)
    n = arr.shape[axis]
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n))
    else:
        indices = _host_indices(obj)
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise ValueError(f"{func}(): a boolean obj must be 1-d, got shape {indices.shape}")
            indices = np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ValueError(f"{func}(): obj must be a scalar or 1-d, got shape {indices.shape}")
        elif indices.size == 0 and not isinstance(obj, (np.ndarray, A)):
            indices = indices.astype(np.intp)
    _check_integer_indices(indices, func)
    outside = np.atleast_1d((indices < -n) | (indices > n))
    if outside.any():
        raise IndexError(f"{func}(): index {np.atleast_1d(indices)[outside][0]} is out of bounds for axis {axis} "
                         f"with size {n}")
    values = _as(values, arr._t.dtype)
    if indices.size == 1:
        index = int(indices.flat[0])
        return _insert_block(arr, index + n if index < 0 else index, values, axis, scalar=indices.ndim == 0,
                             func=func)
    positions = np.where(indices < 0, indices + n, indices)
    order = np.argsort(positions, kind="stable")
    positions[order] += np.arange(positions.size)  # each value lands after the ones inserted before it
    values = _broadcast_to(values, _block_shape(arr, axis, positions.size), func)
    total = n + positions.size
    source = np.empty(total, dtype=np.int64)
    kept = np.ones(total, dtype=bool)
    kept[positions] = False
    source[kept] = np.arange(n)
    source[positions] = n + np.arange(positions.size)
    return xp.take(xp.concat([arr, values], axis=axis), _index_array(source, arr.device), axis=axis)


def _insert_block(arr: A, index: int, values: A, axis: int, *, scalar: bool, func: str) -> A:
    """One insertion point: values take at least arr's rank (leading axes added); a scalar obj inserts one
    slice per first axis of values, which becomes the insertion axis."""
    if values.ndim < arr.ndim:
        values = xp.reshape(values, (1,) * (arr.ndim - values.ndim) + values.shape)
    if scalar:
        values = xp.moveaxis(values, 0, axis)
    values = _broadcast_to(values, _block_shape(arr, axis, values.shape[axis]), func)
    return xp.concat([arr[_along(axis, slice(None, index))], values, arr[_along(axis, slice(index, None))]],
                     axis=axis)


def _broadcast_to(values: A, shape: tuple[int, ...], func: str) -> A:
    try:
        return xp.broadcast_to(values, shape)
    except (ValueError, RuntimeError):
        raise ValueError(f"{func}(): values of shape {values.shape} do not broadcast to the inserted shape "
                         f"{shape}") from None


@implements(np.delete, arrays="arr")
def delete(arr: A, obj: Any, axis: int | None = None) -> A:
    """numpy.delete: arr without the entries obj names along axis (an int, a slice, ints, or a boolean mask of
    the axis's length); the flattened arr for axis=None. A boolean NeuronArray mask stays on its device."""
    func = "numpy.delete"
    arr, axis = _axis_or_flat(arr, axis, func)
    n = arr.shape[axis]
    if isinstance(obj, A) and obj._t.dtype is _dtypes.bool:
        _check_mask(obj.shape, n, func)
        return xp.take(arr, xp.nonzero(xp.logical_not(obj))[0], axis=axis)
    keep = np.ones(n, dtype=bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        indices = _host_indices(obj)
        if indices.size == 0 and not isinstance(obj, (np.ndarray, A)):
            indices = indices.astype(np.intp)
        if indices.dtype == bool:
            _check_mask(indices.shape, n, func)
            keep = ~indices
        else:
            _check_integer_indices(indices, func)
            outside = np.atleast_1d((indices < -n) | (indices >= n))
            if outside.any():
                raise IndexError(f"{func}(): index {np.atleast_1d(indices)[outside][0]} is out of bounds for "
                                 f"axis {axis} with size {n}")
            keep[indices] = False
    return xp.take(arr, _index_array(np.flatnonzero(keep), arr.device), axis=axis)


def _check_mask(shape: tuple[int, ...], n: int, func: str) -> None:
    if tuple(shape) != (n,):
        raise ValueError(f"{func}(): a boolean obj must be 1-d and match the axis length {n}, got shape "
                         f"{tuple(shape)}")


# ---------------------------------------------------------------- searching and choosing

@implements(np.argwhere, arrays="a")
def argwhere(a: A) -> A:
    """numpy.argwhere: the indices of the nonzero elements, one row each (int64, shape (N, a.ndim))."""
    if a.ndim == 0:
        count = int(xp.count_nonzero(a))
        return xp.zeros((count, 0), dtype=_dtypes.int64, device=a.device)
    return xp.stack(xp.nonzero(a), axis=-1)


@implements(np.select, sequences="condlist")
def select(condlist: Sequence[A], choicelist: Sequence[Any], default: Any = 0) -> A:
    """numpy.select: at each position, the choice of the first true condition, else default; the choices and
    default promote as in NumPy (Python scalars weakly)."""
    func = "numpy.select"
    if len(condlist) != len(choicelist):
        raise ValueError(f"{func}(): {len(condlist)} conditions but {len(choicelist)} choices; they must match")
    if not condlist:
        raise ValueError(f"{func}(): select with an empty condition list is not possible")
    device = device_of((condlist, choicelist, default))
    choices = [_select_operand(c, device) for c in (*choicelist, default)]
    dtype = _promoted(*choices)
    for i, cond in enumerate(condlist):
        if cond._t.dtype is not _dtypes.bool:
            raise TypeError(f"{func}(): condlist[{i}] has dtype {_dtypes.name(cond._t.dtype)}; conditions must be "
                            "boolean")
    shape = xp.broadcast_shapes(*(c.shape for c in condlist), *(c.shape for c in choices if isinstance(c, A)))
    choices = [_as(c, dtype) if isinstance(c, A) else xp.asarray(c, dtype=dtype, device=device) for c in choices]
    result = xp.broadcast_to(choices[-1], shape)
    for cond, choice in zip(reversed(condlist), reversed(choices[:-1]), strict=True):
        result = xp.where(cond, choice, result)
    return xp.asarray(xp.broadcast_to(result, shape), copy=True)


def _select_operand(value: Any, device: torch.device) -> Any:
    """Python int, float and complex stay scalars, which promote weakly (NumPy checks the exact type: a Python
    bool is a boolean array)."""
    if type(value) in (int, float, complex):
        return value
    return as_array(value, device)


@implements(np.lexsort, sequences="keys")
def lexsort(keys: Sequence[A], axis: int = -1) -> A:
    """numpy.lexsort: the stable order by the last key, ties broken by the keys before it (composed stable
    sorts, least significant key first); complex keys order by real part, then imaginary part."""
    func = "numpy.lexsort"
    if len(keys) == 0:
        raise TypeError(f"{func}(): need a sequence of keys with len > 0")
    shapes = {k.shape for k in keys}
    if len(shapes) != 1:
        raise ValueError(f"{func}(): all keys need to be the same shape, got {sorted(shapes)}")
    if keys[0].ndim == 0:
        return xp.asarray(0, dtype=_dtypes.int64, device=keys[0].device)
    axis = _axis(axis, keys[0].ndim, func)
    return _lexsort(list(keys), axis)


def _lexsort(keys: list[A], axis: int) -> A:
    order = None
    for key in _real_keys(keys):
        if order is None:
            order = xp.argsort(key, axis=axis, stable=True)
        else:
            ranked = xp.argsort(xp.take_along_axis(key, order, axis=axis), axis=axis, stable=True)
            order = xp.take_along_axis(order, ranked, axis=axis)
    return order


def _real_keys(keys: list[A]) -> list[A]:
    """Complex keys as two real keys: the imaginary part, then the more significant real part."""
    out = []
    for key in keys:
        out += [xp.imag(key), xp.real(key)] if key._t.dtype in _dtypes.COMPLEX_FLOAT else [key]
    return out


def _argsort_along(x: A, axis: int) -> A:
    return _lexsort([x], axis)


# ---------------------------------------------------------------- least squares and polynomials

@implements(np.linalg.lstsq, arrays="a b")
def lstsq(a: A, b: A, rcond: Any = None) -> tuple[A, A, np.int32, A]:
    """numpy.linalg.lstsq through the SVD: (x, residuals, rank, s) with NumPy's conventions: singular values at
    or below rcond * max(s) count as zero (rcond=None: eps * max(M, N); negative: eps); residuals hold the
    squared 2-norm of each column of b - a @ x, and are empty when rank < N or M <= N; rank is np.int32."""
    func = "numpy.linalg.lstsq"
    if a.ndim != 2:
        raise np.linalg.LinAlgError(f"{func}(): a is {a.ndim}-dimensional; it must be two-dimensional")
    if b.ndim not in (1, 2):
        raise np.linalg.LinAlgError(f"{func}(): b must be 1-d or 2-d, got shape {b.shape}")
    m, n = a.shape
    if b.shape[0] != m:
        raise np.linalg.LinAlgError(f"{func}(): incompatible dimensions: a is {a.shape}, b is {b.shape}")
    dtype = _linalg_dtype(a, b, func)
    real = _dtypes.real_of(dtype)
    eps = float(torch.finfo(real).eps)
    cutoff_ratio = eps * builtins.max(m, n) if rcond is None else float(rcond)
    if cutoff_ratio < 0:
        cutoff_ratio = eps
    a, rhs = _as(a, dtype), _as(b if b.ndim == 2 else xp.reshape(b, (m, 1)), dtype)
    x, s, rank = _svd_solve(a, rhs, cutoff_ratio)
    if rank == n and m > n:
        residuals = xp.sum(xp.square(xp.abs(rhs - xp.matmul(a, x))), axis=0)
    else:
        residuals = xp.zeros((0,), dtype=real, device=a.device)
    return (x if b.ndim == 2 else x[:, 0]), residuals, np.int32(rank), s


def _linalg_dtype(a: A, b: A, func: str) -> torch.dtype:
    """NumPy linalg's common dtype: integers and booleans as float64, float32 only if nothing needs more."""
    dtype = None
    for x in (a, b):
        d = x._t.dtype
        if d in _dtypes.EXTENSION_FLOAT:
            raise TypeError(f"{func}(): array type {_dtypes.name(d)} is unsupported in linalg")
        d = d if d in _dtypes.FLOATING else _float_for(x.device)
        dtype = d if dtype is None else _dtypes.promote(dtype, d)
    return dtype


def _svd_solve(a: A, rhs: A, cutoff_ratio: float) -> tuple[A, A, int]:
    """The minimum-norm least-squares solution, the singular values and the rank."""
    m, n = a.shape
    real = _dtypes.real_of(a._t.dtype)
    if m == 0 or n == 0:
        x = xp.zeros((n, rhs.shape[1]), dtype=a._t.dtype, device=a.device)
        return x, xp.zeros((0,), dtype=real, device=a.device), 0
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    kept = xp.greater(s, s[0] * cutoff_ratio)
    inverse = xp.where(kept, 1 / xp.where(kept, s, 1), 0)
    projected = xp.matmul(xp.conj(xp.matrix_transpose(u)), rhs) * xp.reshape(_as(inverse, a._t.dtype), (-1, 1))
    x = xp.matmul(xp.conj(xp.matrix_transpose(vh)), projected)
    return x, s, int(xp.count_nonzero(kept))


@implements(np.polyval, arrays="p x")
def polyval(p: A, x: A) -> A:
    """numpy.polyval by Horner's rule, highest power first, in NumPy's promoted dtype of p and x."""
    if p.ndim == 0:
        raise TypeError("numpy.polyval(): p must be a sequence of coefficients, got a 0-d array")
    if p.shape[0] == 0:
        return xp.zeros_like(x)
    dtype = _promoted(p, x)
    p, x = _as(p, dtype), _as(x, dtype)
    y = xp.zeros_like(x)
    for coefficient in p:
        y = y * x + coefficient
    return y


# ---------------------------------------------------------------- memory overlap

@implements(np.may_share_memory)
def may_share_memory(a: Any, b: Any, /, max_work: Any = 0) -> bool:
    """numpy.may_share_memory: two NeuronArrays may share memory when their byte ranges overlap on the same
    device; a NeuronArray and an ndarray only on the CPU. max_work as in NumPy (0: bounds only)."""
    return _share_test(np.may_share_memory, a, b, max_work, exact=False)


@implements(np.shares_memory)
def shares_memory(a: Any, b: Any, /, max_work: Any = -1) -> bool:
    """numpy.shares_memory, exact: NumPy's solver on descriptions of the two memory layouts (address, shape,
    byte strides), which it reads without touching the data, so device memory is compared without a copy."""
    return _share_test(np.shares_memory, a, b, max_work, exact=True)


def _share_test(numpy_test: Callable[..., bool], a: Any, b: Any, max_work: Any, exact: bool) -> bool:
    devices = {x.device for x in (a, b) if isinstance(x, A)}
    if len(devices) > 1:
        return False
    (device,) = devices
    if device.type != "cpu" and not (isinstance(a, A) and isinstance(b, A)):
        return False  # device memory and host memory never overlap
    layouts = [_layout(x) if isinstance(x, A) else np.asarray(x) for x in (a, b)]
    if builtins.any(layout is None for layout in layouts):
        # a tensor without addresses (a lazy or distributed tensor): only its storage can be compared
        if exact:
            raise np.exceptions.TooHardError(f"{numpy_test.__name__}(): arrays on {device} have no memory "
                                             "addresses to compare exactly")
        return True
    return builtins.bool(numpy_test(*layouts, max_work=max_work))


class _MemoryLayout:
    """Where a tensor's elements lie, as NumPy's array interface describes memory: NumPy builds an ndarray over
    the address without reading it, which is all its overlap tests need."""

    def __init__(self, t: torch.Tensor) -> None:
        size = t.element_size()
        self.__array_interface__ = {"version": 3, "shape": tuple(t.shape), "typestr": f"|V{size}",
                                    "strides": tuple(s * size for s in t.stride()), "data": (t.data_ptr(), True)}


def _layout(x: A) -> np.ndarray | None:
    t = x._t
    if t.numel() == 0:
        return np.empty((0,), dtype=np.uint8)  # an empty array shares memory with nothing
    try:
        return np.asarray(_MemoryLayout(t))
    except (RuntimeError, NotImplementedError, TypeError):
        return None


# ---------------------------------------------------------------- I/O: host data

def _host(value: Any) -> Any:
    """A NeuronArray copied to the host (explicitly: its data leaves the device); anything else unchanged."""
    return np.asarray(value) if isinstance(value, A) else value


@implements(np.save)
def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    """numpy.save of a NeuronArray on any device: the host copy is written."""
    np.save(file, _host(arr), allow_pickle=allow_pickle)


@implements(np.savez)
def savez(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """numpy.savez: NeuronArrays (positional or named) are written as their host copies."""
    np.savez(file, *map(_host, args), allow_pickle=allow_pickle, **{k: _host(v) for k, v in kwds.items()})


@implements(np.savez_compressed)
def savez_compressed(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """numpy.savez_compressed: NeuronArrays (positional or named) are written as their host copies."""
    np.savez_compressed(file, *map(_host, args), allow_pickle=allow_pickle,
                        **{k: _host(v) for k, v in kwds.items()})


@implements(np.savetxt)
def savetxt(fname: Any, X: Any, fmt: Any = "%.18e", delimiter: str = " ", newline: str = "\n", header: str = "",
            footer: str = "", comments: str = "# ", encoding: Any = None) -> None:
    """numpy.savetxt of a NeuronArray on any device: the host copy is written."""
    np.savetxt(fname, _host(X), fmt=fmt, delimiter=delimiter, newline=newline, header=header, footer=footer,
               comments=comments, encoding=encoding)
