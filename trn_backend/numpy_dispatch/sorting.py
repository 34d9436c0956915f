"""NumPy's "Sorting, searching, and counting" section (numpy.where and numpy.nonzero, which NumPy lists there too,
are in ``indexing``).

Sorts are stable whatever ``kind`` says, which every kind allows; axis=None sorts the flattened array. partition and
argpartition (which dask's topk and argtopk call) are stable sorts, a valid partition for every kth. lexsort
composes stable sorts. Complex numbers order as in NumPy: by real part, then imaginary part, NaN last (the helpers
in ``_common``). nanargmax and nanargmin raise NumPy's ValueError for all-NaN and empty slices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .. import _dtypes
from .._array import wrap
from .._helpers import normalize_axis
from ._common import (
    A,
    _axis,
    _check_reducible,
    _complex_argsort,
    _complex_extreme,
    _complex_sort,
    _flat,
    _is_complex,
    _lexsort,
    _without_nan,
)
from ._registry import implements, xp

# ---------------------------------------------------------------- sorting


def _check_kind(kind: str | None, stable: bool | None, func: str) -> None:
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"{func}(): unknown kind={kind!r}; use 'quicksort', 'mergesort', 'heapsort' or 'stable'")
    if kind is not None and stable is not None:
        raise ValueError(f"{func}(): give kind= or stable=, not both")


@implements(np.sort, arrays="a")
def sort(a: A, axis: int | None = -1, kind: str | None = None, stable: bool | None = None) -> A:
    """numpy.sort (always stable, which every kind allows; axis=None sorts the flattened array)."""
    _check_kind(kind, stable, "numpy.sort")
    if axis is None:
        a, axis = _flat(a), -1
    if _is_complex(a._t):
        return _complex_sort(a, normalize_axis(axis, a.ndim, "numpy.sort"))
    return xp.sort(a, axis=axis, stable=True)


@implements(np.argsort, arrays="a")
def argsort(a: A, axis: int | None = -1, kind: str | None = None, stable: bool | None = None) -> A:
    """numpy.argsort (always stable, which every kind allows; axis=None on the flattened array)."""
    _check_kind(kind, stable, "numpy.argsort")
    if axis is None:
        a, axis = _flat(a), -1
    if _is_complex(a._t):
        return _complex_argsort(a, normalize_axis(axis, a.ndim, "numpy.argsort"))
    return xp.argsort(a, axis=axis, stable=True)


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


def _sort_as_partition(a: A, kth: Any, axis: int | None, func: str) -> tuple[A, int]:
    """``a`` (flattened for axis=None) and the axis, with every kth checked as NumPy checks it."""
    if axis is None:
        a, axis = _flat(a), 0
    axis = normalize_axis(axis, a.ndim, func)
    n = a.shape[axis]
    for k in np.atleast_1d(np.asarray(kth)).ravel():
        if not isinstance(k.item(), int) or isinstance(k.item(), bool):
            raise TypeError(f"{func}(): kth must be an integer or a sequence of integers, got {kth!r}")
        if not -n <= k < n:
            raise ValueError(f"{func}(): kth(={int(k)}) out of bounds ({n}) on axis {axis}")
    return a, axis


@implements(np.partition, arrays="a")
def partition(a: A, kth: Any, axis: int | None = -1) -> A:
    """numpy.partition: a sorted copy, which puts every kth element where a partition must (smaller ones
    before it, the rest after); the order inside each part is unspecified in NumPy."""
    a, axis = _sort_as_partition(a, kth, axis, "numpy.partition")
    return _complex_sort(a, axis) if _is_complex(a._t) else xp.sort(a, axis=axis, stable=True)


@implements(np.argpartition, arrays="a")
def argpartition(a: A, kth: Any, axis: int | None = -1) -> A:
    """numpy.argpartition: the indices that sort ``a`` (stably), a valid partition for every kth."""
    a, axis = _sort_as_partition(a, kth, axis, "numpy.argpartition")
    return _complex_argsort(a, axis) if _is_complex(a._t) else xp.argsort(a, axis=axis, stable=True)


# ---------------------------------------------------------------- searching


@implements(np.argmax, arrays="a")
def argmax(a: A, axis: int | None = None, keepdims: bool = False) -> A:
    """numpy.argmax (the first NaN counts as the maximum; complex numbers in NumPy's lexicographic order)."""
    if _is_complex(a._t):
        return _complex_extreme("max", a, axis, keepdims, "numpy.argmax", arg=True)
    return xp.argmax(a, axis=axis, keepdims=keepdims)


@implements(np.argmin, arrays="a")
def argmin(a: A, axis: int | None = None, keepdims: bool = False) -> A:
    """numpy.argmin (the first NaN counts as the minimum; complex numbers in NumPy's lexicographic order)."""
    if _is_complex(a._t):
        return _complex_extreme("min", a, axis, keepdims, "numpy.argmin", arg=True)
    return xp.argmin(a, axis=axis, keepdims=keepdims)


def _nan_arg_extreme(which: str, a: A, axis: int | None, keepdims: bool) -> A:
    """nanargmax/nanargmin as NumPy: NaN becomes -inf (+inf) and argmax (argmin) runs; an all-NaN slice is a
    ValueError."""
    func = f"numpy.nanarg{which}"
    if axis is not None:
        axis = normalize_axis(axis, a.ndim, func)
    _check_reducible(a, axis, func, f"the arg{which}")
    fill = -math.inf if which == "max" else math.inf
    if _is_complex(a._t):
        # NumPy replaces a complex number with a NaN part by fill + 0j, then takes the lexicographic argmax
        t = a._t
        has_nan = torch.isnan(t.real) | torch.isnan(t.imag)
        if bool(xp.any(xp.all(wrap(has_nan), axis=axis))):
            raise ValueError(f"{func}(): All-NaN slice encountered")
        filled = wrap(torch.where(has_nan, torch.tensor(complex(fill, 0), dtype=t.dtype, device=t.device), t))
        return _complex_extreme(which, filled, axis, keepdims, func, arg=True)
    filled, mask = _without_nan(a, fill)
    if mask is not None and bool(xp.any(xp.all(wrap(mask), axis=axis))):
        raise ValueError(f"{func}(): All-NaN slice encountered")
    return getattr(xp, f"arg{which}")(filled, axis=axis, keepdims=keepdims)


@implements(np.nanargmax, arrays="a")
def nanargmax(a: A, axis: int | None = None, keepdims: bool = False) -> A:
    """numpy.nanargmax."""
    return _nan_arg_extreme("max", a, axis, keepdims)


@implements(np.nanargmin, arrays="a")
def nanargmin(a: A, axis: int | None = None, keepdims: bool = False) -> A:
    """numpy.nanargmin."""
    return _nan_arg_extreme("min", a, axis, keepdims)


@implements(np.argwhere, arrays="a")
def argwhere(a: A) -> A:
    """numpy.argwhere: the indices of the nonzero elements, one row each (int64, shape (N, a.ndim))."""
    if a.ndim == 0:
        count = int(xp.count_nonzero(a))
        return xp.zeros((count, 0), dtype=_dtypes.int64, device=a.device)
    return xp.stack(xp.nonzero(a), axis=-1)


@implements(np.flatnonzero, arrays="a")
def flatnonzero(a: A) -> A:
    """numpy.flatnonzero: indices of the nonzero elements of the flattened array."""
    return xp.nonzero(_flat(a))[0]


@implements(np.searchsorted, arrays="a v sorter", weak="v")
def searchsorted(a: A, v: Any, side: str = "left", sorter: A | None = None) -> A:
    """numpy.searchsorted."""
    return xp.searchsorted(a, v, side=side, sorter=sorter)


# ---------------------------------------------------------------- counting


@implements(np.count_nonzero, arrays="a")
def count_nonzero(a: A, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> A:
    """numpy.count_nonzero (a 0-d array where NumPy gives an int for axis=None: it stays on the device)."""
    return xp.count_nonzero(a, axis=axis, keepdims=keepdims)
