"""NumPy's "Array manipulation routines": basic operations (shape, ndim, size), changing array shape, transpose-like
operations, changing number of dimensions and rearranging elements. Joining, splitting, tiling and adding or
removing elements, the rest of that section, are in ``joins``.

NumPy's spellings are taken as NumPy takes them: an int where a shape is a tuple, lists of axes, transpose reversing
the axes by default, squeeze removing every length-1 axis; reshape and ravel are in C order.
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Sequence

import numpy as np

from .._array import numpy_view, readonly_view, viewable
from .._helpers import normalize_axes, normalize_axis
from ._common import A, Shape, _at_least, _axis_arg, _direct, _flat, _shape
from ._registry import implements, xp

# ---------------------------------------------------------------- basic operations


@implements(np.shape, arrays="a")
def shape(a: A) -> Shape:
    """numpy.shape (a tuple of ints, as in NumPy)."""
    return a.shape


@implements(np.ndim, arrays="a")
def ndim(a: A) -> int:
    """numpy.ndim."""
    return a.ndim


@implements(np.size, arrays="a")
def size(a: A, axis: int | None = None) -> int:
    """numpy.size: of the array, or of one axis."""
    return a.size if axis is None else a.shape[normalize_axis(axis, a.ndim, "numpy.size")]


# ---------------------------------------------------------------- changing array shape


@implements(np.reshape, arrays="a")
def reshape(a: A, shape: int | Sequence[int], copy: bool | None = None) -> A:
    """numpy.reshape (C order)."""
    return xp.reshape(a, _shape(shape), copy=copy)


@implements(np.ravel, arrays="a")
def ravel(a: A) -> A:
    """numpy.ravel (C order)."""
    return _flat(a)


# ---------------------------------------------------------------- transpose-like operations


@implements(np.transpose, arrays="a")
def transpose(a: A, axes: Sequence[int] | None = None) -> A:
    """numpy.transpose (also numpy.permute_dims): reversed axes by default."""
    ndim = a.ndim
    if axes is None:  # reversed: valid axes already
        return xp.permute_dims(a, tuple(range(ndim - 1, -1, -1)))
    return xp.permute_dims(a, tuple(normalize_axis(i, ndim, "numpy.transpose") for i in axes))


@implements(np.moveaxis, arrays="a")
def moveaxis(a: A, source: int | Sequence[int], destination: int | Sequence[int]) -> A:
    """numpy.moveaxis (NumPy takes any sequence of axes: a range, an ndarray)."""
    return xp.moveaxis(a, _axis_arg(source), _axis_arg(destination))


@implements(np.swapaxes, arrays="a")
def swapaxes(a: A, axis1: int, axis2: int) -> A:
    """numpy.swapaxes."""
    order = list(range(a.ndim))
    i, j = (normalize_axis(k, a.ndim, "numpy.swapaxes") for k in (axis1, axis2))
    order[i], order[j] = j, i
    return xp.permute_dims(a, tuple(order))


_direct(np.matrix_transpose, "matrix_transpose", arrays="x")


# ---------------------------------------------------------------- changing number of dimensions


def _at_least_all(arys: Sequence[A], ndim: int) -> A | tuple[A, ...]:
    out = tuple(_at_least(x, ndim) for x in arys)
    return out[0] if len(out) == 1 else out


@implements(np.atleast_1d, arrays="arys")
def atleast_1d(*arys: A) -> A | tuple[A, ...]:
    """numpy.atleast_1d."""
    return _at_least_all(arys, 1)


@implements(np.atleast_2d, arrays="arys")
def atleast_2d(*arys: A) -> A | tuple[A, ...]:
    """numpy.atleast_2d."""
    return _at_least_all(arys, 2)


@implements(np.atleast_3d, arrays="arys")
def atleast_3d(*arys: A) -> A | tuple[A, ...]:
    """numpy.atleast_3d."""
    return _at_least_all(arys, 3)


@implements(np.broadcast_to, arrays="array")
def broadcast_to(array: A, shape: int | Sequence[int]) -> A:
    """numpy.broadcast_to."""
    return xp.broadcast_to(array, _shape(shape))


@implements(np.broadcast_arrays, arrays="args")
def broadcast_arrays(*args: A) -> tuple[A, ...]:
    """numpy.broadcast_arrays."""
    return tuple(xp.broadcast_arrays(*args))


@implements(np.expand_dims, arrays="a")
def expand_dims(a: A, axis: int | Sequence[int]) -> A:
    """numpy.expand_dims (one axis or several)."""
    return xp.expand_dims(a, axis=_axis_arg(axis))


@implements(np.squeeze, arrays="a")
def squeeze(a: A, axis: int | tuple[int, ...] | None = None) -> A:
    """numpy.squeeze: every length-1 axis by default."""
    axes = tuple(i for i, d in enumerate(a.shape) if d == 1) if axis is None else axis
    return xp.squeeze(a, axis=axes)


# ---------------------------------------------------------------- rearranging elements


@implements(np.flip, arrays="m")
def flip(m: A, axis: int | Sequence[int] | None = None) -> A:
    """numpy.flip: a view, as NumPy's (negative strides: writes go through to m)."""
    if viewable(m):
        axes = normalize_axes(_axis_arg(axis), m.ndim, "numpy.flip")
        return numpy_view(m, lambda a: np.flip(a, axes))
    # a sharded array: a copy (DTensor has no negative strides), read-only so that writes are refused, not lost
    return readonly_view(xp.flip(m, axis=_axis_arg(axis)), _SHARDED_COPY.format("numpy.flip"))


@implements(np.unstack, arrays="x")
def unstack(x: A, /, *, axis: int = 0) -> tuple[A, ...]:
    """numpy.unstack: the slices along axis, views of x as NumPy's are (of a view with negative steps too)."""
    if x.ndim == 0:
        raise ValueError("numpy.unstack(): x must have at least one dimension, got a 0-d array")
    axis = normalize_axis(axis, x.ndim, "numpy.unstack")
    if x.ndim == 1:  # NumPy reads the elements, copies
        return tuple(x[i] for i in range(x.shape[0]))
    if viewable(x):
        return tuple(numpy_view(x, functools.partial(_moved_slice, axis=axis, i=i)) for i in range(x.shape[axis]))
    return xp.unstack(x, axis=axis)


def _moved_slice(a: np.ndarray, axis: int, i: int) -> np.ndarray:
    """Slice i of ``a`` along ``axis`` (unstack's view of one slice)."""
    return np.moveaxis(a, axis, 0)[i]


@implements(np.roll, arrays="a")
def roll(a: A, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> A:
    """numpy.roll."""
    return xp.roll(a, shift=_axis_arg(shift), axis=_axis_arg(axis))


@implements(np.rot90, arrays="m")
def rot90(m: A, k: int = 1, axes: Sequence[int] = (0, 1)) -> A:
    """numpy.rot90: k quarter turns in the plane of axes, from the first axis toward the second; a view, as
    NumPy's (of a sharded array: a copy)."""
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
    if viewable(m):  # a view, as NumPy's (writes go through to m)
        return numpy_view(m, lambda a: np.rot90(a, k, (first, second)))
    if k == 0:
        return m[...]
    why = _SHARDED_COPY.format("numpy.rot90")  # a sharded array: a copy, read-only as for flip
    if k == 2:
        return readonly_view(xp.flip(m, axis=(first, second)), why)
    order = list(range(m.ndim))
    order[first], order[second] = order[second], order[first]
    if k == 1:
        return readonly_view(xp.permute_dims(xp.flip(m, axis=second), tuple(order)), why)
    return readonly_view(xp.flip(xp.permute_dims(m, tuple(order)), axis=second), why)


_SHARDED_COPY = (
    "{} of a sharded array is a copy (DTensor has no negative strides), which refuses writes rather "
    "than losing them; write into the array itself"
)
