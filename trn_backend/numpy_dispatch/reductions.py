"""Reductions: from NumPy's "Mathematical functions", sums and products (cumulative ones included) and extrema, each
with its nan-version; from its "Logic functions", truth value testing (all, any).

Integers accumulate in int64 or uint64, as in NumPy and the standard; ``initial`` combines with the result, and is
the value of an empty max or min; axis=None of cumsum and cumprod works on the flattened array. The nan-versions
count NaN as the operation's identity; nanmax and nanmin without ``initial`` give NaN with NumPy's RuntimeWarning
for an all-NaN slice and NumPy's ValueError for no elements, and their complex input is a TypeError (NumPy orders
complex numbers lexicographically, torch does not).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .._array import wrap
from ._common import (
    A,
    _axis_arg,
    _check_reducible,
    _complex_compare,
    _complex_extreme,
    _direct,
    _extreme,
    _fill_nan,
    _flat,
    _is_complex,
    _reduced_shape,
    _warn,
    _without_nan,
)
from ._registry import implements, xp

# ---------------------------------------------------------------- sums and products


@implements(np.sum, arrays="a")
def sum(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.sum (integers accumulate in int64/uint64, as in NumPy and the standard)."""
    r = xp.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return r if initial is None else xp.add(r, initial)


@implements(np.prod, arrays="a")
def prod(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.prod (integers accumulate in int64/uint64)."""
    r = xp.prod(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return r if initial is None else xp.multiply(r, initial)


@implements(np.nansum, arrays="a")
def nansum(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.nansum: NaN counts as zero (integers sum as numpy.sum: in int64/uint64)."""
    filled, _ = _without_nan(a, 0.0)
    r = xp.sum(filled, axis=_axis_arg(axis), dtype=dtype, keepdims=keepdims)
    return r if initial is None else xp.add(r, initial)


@implements(np.nanprod, arrays="a")
def nanprod(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.nanprod: NaN counts as one."""
    filled, _ = _without_nan(a, 1.0)
    r = xp.prod(filled, axis=_axis_arg(axis), dtype=dtype, keepdims=keepdims)
    return r if initial is None else xp.multiply(r, initial)


def _flattened(x: A) -> A:
    """``x`` flattened, as an operand only (a 1-d ``x`` itself: a reshape costs microseconds)."""
    return x if x.ndim == 1 else _flat(x)


@implements(np.cumsum, arrays="a")
def cumsum(a: A, axis: int | None = None, dtype: Any = None) -> A:
    """numpy.cumsum (axis=None on the flattened array)."""
    if axis is None:
        a, axis = _flattened(a), 0
    return xp.cumulative_sum(a, axis=axis, dtype=dtype)


@implements(np.cumprod, arrays="a")
def cumprod(a: A, axis: int | None = None, dtype: Any = None) -> A:
    """numpy.cumprod (axis=None on the flattened array)."""
    if axis is None:
        a, axis = _flattened(a), 0
    return xp.cumulative_prod(a, axis=axis, dtype=dtype)


_direct(np.cumulative_sum, "cumulative_sum", arrays="x")


_direct(np.cumulative_prod, "cumulative_prod", arrays="x")


def _nan_cumulative(which: str, a: A, axis: int | None, dtype: Any, value: float) -> A:
    filled, _ = _without_nan(a, value)
    if axis is None:
        filled, axis = xp.reshape(filled, (-1,)), 0
    return getattr(xp, which)(filled, axis=axis, dtype=dtype)


@implements(np.nancumsum, arrays="a")
def nancumsum(a: A, axis: int | None = None, dtype: Any = None) -> A:
    """numpy.nancumsum: NaN counts as zero (axis=None on the flattened array)."""
    return _nan_cumulative("cumulative_sum", a, axis, dtype, 0.0)


@implements(np.nancumprod, arrays="a")
def nancumprod(a: A, axis: int | None = None, dtype: Any = None) -> A:
    """numpy.nancumprod: NaN counts as one (axis=None on the flattened array)."""
    return _nan_cumulative("cumulative_prod", a, axis, dtype, 1.0)


# ---------------------------------------------------------------- extrema


@implements(np.max, np.amax, arrays="a")
def max(a: A, axis: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.max / numpy.amax (NaN propagates)."""
    return _extreme("max", a, axis, keepdims, initial)


@implements(np.min, np.amin, arrays="a")
def min(a: A, axis: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.min / numpy.amin (NaN propagates)."""
    return _extreme("min", a, axis, keepdims, initial)


def _nan_extreme(which: str, a: A, axis: Any, keepdims: bool, initial: Any) -> A:
    """nanmax/nanmin: NaNs are skipped; an all-NaN slice is NaN with a warning, or ``initial`` when given."""
    func = f"numpy.nan{which}"
    axis = _axis_arg(axis)
    if _is_complex(a._t):
        return _complex_nan_extreme(which, a, axis, keepdims, initial, func)
    shape = _reduced_shape(a, axis, keepdims, func)
    if initial is None:
        _check_reducible(a, axis, func, f"the {which}imum")
    elif a.size == 0:
        return xp.full(shape, initial, dtype=a._t.dtype, device=a.device)
    fill = -math.inf if which == "max" else math.inf
    filled, mask = _without_nan(a, fill)
    combine = xp.maximum if which == "max" else xp.minimum
    r = getattr(xp, which)(filled, axis=axis, keepdims=keepdims)
    if initial is not None:
        return combine(r, initial)
    if mask is not None:
        all_nan = xp.all(wrap(mask), axis=axis, keepdims=keepdims)
        if bool(xp.any(all_nan)):
            _warn("All-NaN slice encountered")
            r = wrap(_fill_nan(r._t, all_nan._t, math.nan))
    return r


def _complex_nan_extreme(which: str, a: A, axis: Any, keepdims: bool, initial: Any, func: str) -> A:
    """nanmax/nanmin of complex numbers as NumPy's fmax/fmin reduction: elements with a NaN part are passed
    over, in NumPy's lexicographic order; an all-NaN slice gives a NaN, with NumPy's warning."""
    shape = _reduced_shape(a, axis, keepdims, func)
    if initial is None:
        _check_reducible(a, axis, func, f"the {which}imum")
    elif a.size == 0:
        return xp.full(shape, initial, dtype=a._t.dtype, device=a.device)
    r = _complex_extreme(which, a, axis, keepdims, func, skip_nan=True)
    if initial is not None:
        other = xp.asarray(initial, dtype=r.dtype, device=r.device)
        better = _complex_compare("greater" if which == "max" else "less", other, r)
        return wrap(torch.where(better._t | torch.isnan(r._t.real) | torch.isnan(r._t.imag), other._t, r._t))
    if bool(torch.any(torch.isnan(r._t.real) | torch.isnan(r._t.imag))):
        _warn("All-NaN slice encountered")
    return r


@implements(np.nanmax, arrays="a")
def nanmax(a: A, axis: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.nanmax."""
    return _nan_extreme("max", a, axis, keepdims, initial)


@implements(np.nanmin, arrays="a")
def nanmin(a: A, axis: Any = None, keepdims: bool = False, initial: Any = None) -> A:
    """numpy.nanmin."""
    return _nan_extreme("min", a, axis, keepdims, initial)


# ---------------------------------------------------------------- truth value testing


@implements(np.all, arrays="a")
def all(a: A, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.all."""
    return xp.all(a, axis=axis, keepdims=keepdims)


@implements(np.any, arrays="a")
def any(a: A, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.any."""
    return xp.any(a, axis=axis, keepdims=keepdims)
