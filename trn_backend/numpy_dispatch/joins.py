"""NumPy's "Array manipulation routines": joining arrays, splitting arrays, tiling arrays, adding and removing
elements (append, insert, delete) and padding arrays (pad). The rest of that section is in ``shape``.

NumPy's meanings where they differ from the standard's: axis=None joins the flattened arrays, concatenate, stack,
vstack and hstack take ``dtype=`` and ``casting=``, split needs equal sections (array_split does not), append
promotes its dtypes by NumPy's rules. Index arguments that decide a result's shape (insert and delete positions, pad
widths and stat lengths) are read on the host; the data stays on its device. pad computes its ramps and means as
NumPy does, in float64 (the default float on devices without float64, Neuron).
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .. import _dtypes
from .._array import wrap
from .._helpers import normalize_axis
from .._scalars import as_py_scalar, convert_scalar
from ._common import A, _along, _as, _at_least, _axis, _cast_all, _flat, _float_for, _lexsort, _promoted, _shape
from ._registry import as_array, implements, xp

# ---------------------------------------------------------------- joining arrays


@implements(np.concatenate, sequences="arrays")
def concatenate(arrays: Sequence[A], axis: int | None = 0, dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.concatenate (also numpy.concat); axis=None joins the flattened arrays."""
    return xp.concat(_cast_all(arrays, dtype, casting, "numpy.concatenate"), axis=axis)


@implements(np.stack, sequences="arrays")
def stack(arrays: Sequence[A], axis: int = 0, dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.stack."""
    return xp.stack(_cast_all(arrays, dtype, casting, "numpy.stack"), axis=axis)


@implements(np.vstack, sequences="tup")
def vstack(tup: Sequence[A], dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.vstack: 1-d arrays become rows."""
    return xp.concat([_at_least(x, 2) for x in _cast_all(tup, dtype, casting, "numpy.vstack")], axis=0)


@implements(np.hstack, sequences="tup")
def hstack(tup: Sequence[A], dtype: Any = None, casting: str = "same_kind") -> A:
    """numpy.hstack: along axis 1, or axis 0 for 1-d arrays."""
    arrays = [_at_least(x, 1) for x in _cast_all(tup, dtype, casting, "numpy.hstack")]
    return xp.concat(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1)


@implements(np.dstack, sequences="tup")
def dstack(tup: Sequence[A]) -> A:
    """numpy.dstack: along the third axis."""
    return xp.concat([_at_least(x, 3) for x in tup], axis=2)


@implements(np.column_stack, sequences="tup")
def column_stack(tup: Sequence[A]) -> A:
    """numpy.column_stack: 1-d arrays become columns."""
    return xp.concat([xp.reshape(x, (-1, 1)) if x.ndim < 2 else x for x in tup], axis=1)


# ---------------------------------------------------------------- splitting arrays


def _split(ary: A, indices_or_sections: Any, axis: int, func: str, *, equal: bool) -> list[A]:
    axis = normalize_axis(axis, ary.ndim, func)
    n = ary.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"{func}(): the number of sections must be positive, got {sections}")
        if equal and n % sections:
            raise ValueError(
                f"{func}(): an axis of length {n} does not split into {sections} equal sections "
                "(numpy.array_split allows unequal ones)"
            )
        size, extra = divmod(n, sections)
        bounds = [i * size + builtins.min(i, extra) for i in range(sections + 1)]
    else:
        bounds = [0, *(int(i) for i in indices_or_sections), n]
    lead = (slice(None),) * axis
    return [ary[lead + (slice(lo, hi),)] for lo, hi in itertools.pairwise(bounds)]


@implements(np.split, arrays="ary")
def split(ary: A, indices_or_sections: Any, axis: int = 0) -> list[A]:
    """numpy.split: N equal sections, or cuts at the given indices."""
    return _split(ary, indices_or_sections, axis, "numpy.split", equal=True)


@implements(np.array_split, arrays="ary")
def array_split(ary: A, indices_or_sections: Any, axis: int = 0) -> list[A]:
    """numpy.array_split: like split, the first n % N sections one longer."""
    return _split(ary, indices_or_sections, axis, "numpy.array_split", equal=False)


def _split_at_least(ary: A, indices_or_sections: Any, ndim: int, axis: int, func: str) -> list[A]:
    if ary.ndim < ndim:
        raise ValueError(f"{func}() needs an array of at least {ndim} dimensions, got shape {ary.shape}")
    return _split(ary, indices_or_sections, axis, func, equal=True)


@implements(np.hsplit, arrays="ary")
def hsplit(ary: A, indices_or_sections: Any) -> list[A]:
    """numpy.hsplit: along axis 1 (axis 0 for 1-d arrays)."""
    return _split_at_least(ary, indices_or_sections, 1, 1 if ary.ndim > 1 else 0, "numpy.hsplit")


@implements(np.vsplit, arrays="ary")
def vsplit(ary: A, indices_or_sections: Any) -> list[A]:
    """numpy.vsplit: along axis 0."""
    return _split_at_least(ary, indices_or_sections, 2, 0, "numpy.vsplit")


@implements(np.dsplit, arrays="ary")
def dsplit(ary: A, indices_or_sections: Any) -> list[A]:
    """numpy.dsplit: along axis 2."""
    return _split_at_least(ary, indices_or_sections, 3, 2, "numpy.dsplit")


# ---------------------------------------------------------------- tiling arrays


@implements(np.tile, arrays="A")
def tile(A: A, reps: int | Sequence[int]) -> A:
    """numpy.tile."""
    return xp.tile(A, _shape(reps))


@implements(np.repeat, arrays="a repeats", weak="repeats")
def repeat(a: A, repeats: int | A, axis: int | None = None) -> A:
    """numpy.repeat."""
    return xp.repeat(a, repeats, axis=axis)


# ---------------------------------------------------------------- adding and removing elements


def _index_array(positions: np.ndarray, device: torch.device) -> A:
    return xp.asarray(np.asarray(positions, dtype=np.int64), device=device)


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


@implements(np.insert, arrays="arr")
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
        raise IndexError(
            f"{func}(): index {np.atleast_1d(indices)[outside][0]} is out of bounds for axis {axis} with size {n}"
        )
    if type(values) in (bool, int, float, complex, list, tuple):  # not NumPy scalars: strong arrays, cast
        # Python data converts to arr's dtype element by element, as NumPy's array(values, dtype=arr.dtype) does
        # (an int beyond the dtype is an OverflowError there, not a wrapped value)
        values = xp.asarray(values, dtype=arr._t.dtype, device=arr.device)
    values = _as(as_array(values, arr.device), arr._t.dtype)
    if indices.size == 1:
        index = int(indices.flat[0])
        return _insert_block(arr, index + n if index < 0 else index, values, axis, scalar=indices.ndim == 0, func=func)
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
    return xp.concat([arr[_along(axis, slice(None, index))], values, arr[_along(axis, slice(index, None))]], axis=axis)


def _broadcast_to(values: A, shape: tuple[int, ...], func: str) -> A:
    try:
        return xp.broadcast_to(values, shape)
    except (ValueError, RuntimeError):
        raise ValueError(
            f"{func}(): values of shape {values.shape} do not broadcast to the inserted shape {shape}"
        ) from None


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
                raise IndexError(
                    f"{func}(): index {np.atleast_1d(indices)[outside][0]} is out of bounds for "
                    f"axis {axis} with size {n}"
                )
            keep[indices] = False
    return xp.take(arr, _index_array(np.flatnonzero(keep), arr.device), axis=axis)


def _check_mask(shape: tuple[int, ...], n: int, func: str) -> None:
    if tuple(shape) != (n,):
        raise ValueError(f"{func}(): a boolean obj must be 1-d and match the axis length {n}, got shape {tuple(shape)}")


# ---------------------------------------------------------------- padding arrays

_PAD_OPTIONS = {
    "constant": ("constant_values",),
    "edge": (),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "minimum": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
    "wrap": (),
    "empty": (),
}


class _Unset:
    """The default of pad's mode options: NumPy refuses an option the mode does not take even at its default
    value, so an option given must be told from one left out."""

    def __repr__(self) -> str:
        return "<not given>"


_UNSET: Any = _Unset()
Pairs = list[tuple[Any, Any]]


@implements(np.pad, arrays="array")
def pad(
    array: A,
    pad_width: Any,
    mode: Any = "constant",
    constant_values: Any = _UNSET,
    end_values: Any = _UNSET,
    stat_length: Any = _UNSET,
    reflect_type: Any = _UNSET,
) -> A:
    """numpy.pad in every named mode, pad_width in each of NumPy's spellings (an int, a pair, a pair per axis,
    a dict of axis -> int or pair). Axes pad one after another, so corners come from the later axes, as in
    NumPy. A callable mode runs Python per vector and is refused."""
    func = "numpy.pad"
    if callable(mode):
        raise TypeError(
            f"{func}(): a callable mode is not supported on NeuronArray (it runs Python on every "
            "vector); use one of the named modes, or call numpy.pad on np.asarray(array)"
        )
    if mode not in _PAD_OPTIONS:
        raise ValueError(f"{func}(): mode {mode!r} is not supported; use one of {', '.join(_PAD_OPTIONS)}")
    options = {
        "constant_values": constant_values,
        "end_values": end_values,
        "stat_length": stat_length,
        "reflect_type": reflect_type,
    }
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
                raise ValueError(f"{func}(): can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
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
        return _pad_each_axis(
            array, widths, lambda x, ax, w: _reflect_blocks(x, ax, w, mode == "symmetric", kind == "odd")
        )
    lengths = _pairs(given.get("stat_length"), array.ndim, func, "stat_length", as_index=True)
    return _pad_each_axis(array, widths, lambda x, ax, w: _stat_blocks(x, ax, w, lengths[ax], mode, func))


def _pad_widths(pad_width: Any, ndim: int, func: str) -> list[tuple[int, int]]:
    if isinstance(pad_width, dict):
        pairs = [(0, 0)] * ndim
        for ax, width in pad_width.items():
            ax = _axis(ax, ndim, func)
            if isinstance(width, (int, np.integer)):
                pairs[ax] = (int(width), int(width))
            elif (
                isinstance(width, tuple)
                and len(width) == 2
                and builtins.all(isinstance(w, (int, np.integer)) for w in width)
            ):
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
            raise ValueError(
                f"{func}(): {arg} of shape {x.shape} does not give a (before, after) pair for each of {ndim} axes"
            ) from None
    if as_index and builtins.any(v < 0 for pair in pairs for v in pair):
        raise ValueError(f"{func}(): {arg} can't contain negative values")
    return pairs


def _pad_each_axis(
    array: A, widths: list[tuple[int, int]], blocks: Callable[[A, int, tuple[int, int]], tuple[A, A]]
) -> A:
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
            before, after = (xp.empty(_block_shape(x, ax, n), dtype=x._t.dtype, device=x.device) for n in w)
        else:
            before, after = (
                xp.broadcast_to(_fill(v, x, func), _block_shape(x, ax, n)) for v, n in zip(fills[ax], w, strict=True)
            )
        return before, after

    return _pad_each_axis(array, widths, blocks)


def _fill(value: Any, like: A, func: str) -> A:
    """A constant as a 0-d array of like's dtype, converted as NumPy stores a Python scalar (``convert_scalar``):
    an int beyond the dtype is an OverflowError and NaN into an integer dtype a ValueError, as NumPy's pad of an
    int8 array raises (NumPy wraps the int into some unsigned dtypes and stores 0 for NaN there: refused here in
    every integer dtype); a complex value into a real array is a TypeError (NumPy drops its imaginary part)."""
    value = as_py_scalar(value)
    if isinstance(value, complex) and like._t.dtype not in _dtypes.COMPLEX_FLOAT and like._t.dtype is not _dtypes.bool:
        raise TypeError(f"{func}(): cannot pad a {_dtypes.name(like._t.dtype)} array with the complex value {value!r}")
    return wrap(convert_scalar(value, like._t.dtype, like.device, func))


def _edge_blocks(x: A, axis: int, widths: tuple[int, int]) -> tuple[A, A]:
    ends = (x[_along(axis, slice(0, 1))], x[_along(axis, slice(-1, None))])
    before, after = (xp.broadcast_to(e, _block_shape(x, axis, n)) for e, n in zip(ends, widths, strict=True))
    return before, after


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
    k = xp.reshape(
        xp.arange(n, dtype=real, device=edge.device), tuple(-1 if i == axis else 1 for i in range(edge.ndim))
    )
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


def _stat_blocks(
    x: A, axis: int, widths: tuple[int, int], lengths: tuple[Any, Any], mode: str, func: str
) -> tuple[A, A]:
    """Blocks filled with a statistic of the first/last ``lengths`` values (all of them for None); rounded
    half to even for integer arrays, as NumPy rounds them."""
    n = x.shape[axis]
    counts = [n if length is None else builtins.min(int(length), n) for length in lengths]
    if 0 in counts and mode in ("maximum", "minimum"):
        raise ValueError(f"{func}(): stat_length of 0 yields no value for padding")
    chunks = (x[_along(axis, slice(0, counts[0]))], x[_along(axis, slice(n - counts[1], n))])
    stats = [_statistic(chunk, axis, mode) for chunk in chunks]
    before, after = (
        xp.broadcast_to(_as_pad_value(s, x._t.dtype), _block_shape(x, axis, w))
        for s, w in zip(stats, widths, strict=True)
    )
    return before, after


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


def _argsort_along(x: A, axis: int) -> A:
    return _lexsort([x], axis)


def _as_pad_value(stat: A, dtype: torch.dtype) -> A:
    if dtype in _dtypes.INTEGER and stat._t.dtype in _dtypes.FLOATING:
        stat = xp.round(stat)
    return _as(stat, dtype)
