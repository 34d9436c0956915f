"""NumPy's "Indexing routines": generating index arrays (nonzero, where, ravel_multi_index, unravel_index; dask's
arg reductions over all axes call the last) and indexing-like operations (take, take_along_axis, diag, diagflat,
diagonal, select). NumPy also lists diag and diagflat under "Array creation routines: building matrices"; they stay
beside diagonal here.

NumPy's meanings where they differ from the standard's: axis=None takes from the flattened array, where takes any
array as its condition (its truth values) and alone is numpy.nonzero, take's indices may have any shape, diagonal
takes any two axes; select promotes its choices by NumPy's rules (Python scalars weakly).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .. import _dtypes
from .._array import numpy_view, readonly_view, viewable, wrap
from .._helpers import normalize_axis
from ._common import A, _as, _flat, _promoted, _shape, _to_end
from ._registry import as_array, device_of, implements, xp

# ---------------------------------------------------------------- generating index arrays


@implements(np.nonzero, arrays="a")
def nonzero(a: A) -> tuple[A, ...]:
    """numpy.nonzero: one index array per axis."""
    return tuple(xp.nonzero(a))


def _truth(x: A) -> A:
    """NumPy takes any array as a condition: its elements' truth values."""
    return x if x._t.dtype is _dtypes.bool else xp.astype(x, _dtypes.bool)


@implements(np.where, arrays="condition x y", weak="x y")
def where(condition: A, x: Any = None, y: Any = None) -> A | tuple[A, ...]:
    """numpy.where: choose from x and y, or with the condition alone, numpy.nonzero of it."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("numpy.where(): give both x and y, or neither")
    if not isinstance(x, A) and not isinstance(y, A):
        # two Python scalars: NumPy types each by its value alone (1 is int64, 2.0 float64), as arrays
        x, y = as_array(x, condition.device), as_array(y, condition.device)
    return xp.where(_truth(condition), x, y)


def _index_mode(index: A, d: int, mode: str, axis: int) -> A:
    """One coordinate made valid for a dimension of length ``d`` under NumPy's ``mode``."""
    if mode == "wrap":
        return xp.remainder(index, d)
    if mode == "clip":
        return xp.clip(index, 0, d - 1)
    if mode != "raise":
        raise ValueError(f"numpy.ravel_multi_index(): mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if index.size and (int(xp.min(index)) < 0 or int(xp.max(index)) >= d):
        raise ValueError(
            f"numpy.ravel_multi_index(): invalid entry in coordinates array for dimension {axis} of length {d}"
        )
    return index


@implements(np.ravel_multi_index, sequences="multi_index")
def ravel_multi_index(multi_index: Sequence[A], dims: Any, mode: Any = "raise", order: str = "C") -> A:
    """numpy.ravel_multi_index: flat int64 indices of coordinate arrays (modes raise, wrap, clip: one for all
    dimensions or one each; C or Fortran order)."""
    dims = _shape(dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"numpy.ravel_multi_index(): {len(multi_index)} coordinate arrays for {len(dims)} dimensions")
    if order not in ("C", "F"):
        raise ValueError(f"numpy.ravel_multi_index(): order must be 'C' or 'F', got {order!r}")
    modes = [mode] * len(dims) if isinstance(mode, str) else list(mode)
    coords = []
    for axis, (index, d, m) in enumerate(zip(multi_index, dims, modes, strict=True)):
        if index._t.dtype not in _dtypes.INTEGER:
            raise TypeError(
                f"numpy.ravel_multi_index(): coordinates must be integers, got "
                f"{_dtypes.name(index.dtype)} for dimension {axis}"
            )
        coords.append(_index_mode(xp.astype(index, _dtypes.int64), d, m, axis))
    if not coords:
        raise ValueError("numpy.ravel_multi_index(): dims must name at least one dimension")
    broadcast = xp.broadcast_arrays(*coords)
    slowest_first = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    flat = None
    for axis in slowest_first:  # Horner's rule
        flat = broadcast[axis] if flat is None else xp.add(xp.multiply(flat, dims[axis]), broadcast[axis])
    assert flat is not None  # dims is not empty (checked above)
    return flat


@implements(np.unravel_index, arrays="indices")
def unravel_index(indices: A, shape: Any, order: str = "C") -> tuple[A, ...]:
    """numpy.unravel_index: one int64 index array per dimension of ``shape`` (C or Fortran order)."""
    if order not in ("C", "F"):
        raise ValueError(f"numpy.unravel_index(): order must be 'C' or 'F', got {order!r}")
    if indices._t.dtype not in _dtypes.INTEGER:
        raise TypeError(f"numpy.unravel_index(): only integer indices are allowed, got {_dtypes.name(indices.dtype)}")
    dims = _shape(shape)
    size = math.prod(dims)
    flat = xp.astype(indices, _dtypes.int64)
    if flat.size:
        low, high = int(xp.min(flat)), int(xp.max(flat))
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise ValueError(f"numpy.unravel_index(): index {bad} is out of bounds for array with size {size}")
    coords = []
    for d in reversed(dims) if order == "C" else dims:  # the fastest-varying dimension first
        coords.append(xp.remainder(flat, d) if d else flat)
        flat = xp.floor_divide(flat, d) if d else flat
    return tuple(reversed(coords)) if order == "C" else tuple(coords)


# ---------------------------------------------------------------- indexing-like operations


@implements(np.take, arrays="a indices")
def take(a: A, indices: A, axis: int | None = None) -> A:
    """numpy.take: indices of any shape, which replaces the taken axis (the flattened array for axis=None)."""
    if axis is None:
        a, axis = _flat(a), 0
    axis = normalize_axis(axis, a.ndim, "numpy.take")
    taken = xp.take(a, _flat(indices), axis=axis)
    return xp.reshape(taken, a.shape[:axis] + indices.shape + a.shape[axis + 1 :])


@implements(np.take_along_axis, arrays="arr indices")
def take_along_axis(arr: A, indices: A, axis: int | None = -1) -> A:
    """numpy.take_along_axis (axis=None on the flattened array)."""
    if axis is None:
        arr, axis = _flat(arr), 0
    return xp.take_along_axis(arr, indices, axis=axis)


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


@implements(np.diagonal, arrays="a")
def diagonal(a: A, offset: int = 0, axis1: int = 0, axis2: int = 1) -> A:
    """numpy.diagonal: the diagonal over any two axes, appended as the last axis; a read-only view of a, as
    NumPy's (``d.flags.writeable = True`` allows writes into a, as NumPy does; of a sharded array: a copy)."""
    if not viewable(a):  # a copy (sharded): read-only still, so that a write meant for a is refused
        return readonly_view(
            xp.linalg.diagonal(_to_end(a, axis1, axis2), offset=offset),
            "numpy.diagonal of a sharded array is a copy, read-only as NumPy's view is",
        )
    func = "numpy.diagonal"
    if a.ndim < 2:
        raise ValueError(f"{func}(): needs an array of at least 2 dimensions, got shape {a.shape}")
    i, j = normalize_axis(axis1, a.ndim, func), normalize_axis(axis2, a.ndim, func)
    if i == j:
        raise ValueError(f"{func}(): axis1 and axis2 cannot be the same axis ({i}) of an array of shape {a.shape}")
    k = operator.index(offset)
    return readonly_view(numpy_view(a, lambda d: np.diagonal(d, k, i, j)), "numpy.diagonal's view is read-only")


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
            raise TypeError(
                f"{func}(): condlist[{i}] has dtype {_dtypes.name(cond._t.dtype)}; conditions must be boolean"
            )
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
