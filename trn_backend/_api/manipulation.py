"""Manipulation functions of the standard: broadcasting, joining, reshaping and reordering arrays.

Shapes and axes are validated here, so a bad argument is a ValueError (shapes) or IndexError (axes) naming the
function and the values, never torch's RuntimeError. Functions torch lacks for uint16/32/64 run on the compute
dtype (``_dtypes.compute``) and come back unchanged in value; results may be views, as in NumPy.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np
import torch

from .. import _dtypes
from .._array import _ReversedView, numpy_view, readonly_view
from .._dtypes import via_compute
from .._helpers import (
    NeuronArray,
    broadcast_shape,
    check_same_device,
    normalize_axes,
    normalize_axis,
    tensor,
    tensors,
    wrap,
)
from .creation import int_arg, int_tuple
from .data_types import promoted

__all__ = [
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
]

Axes = int | tuple[int, ...]


def _axes_tuple(axis: object, func: str, arg: str = "axis") -> tuple[int, ...]:
    """An int (or 0-d integer array) or a tuple of ints as a tuple (range checks are ``normalize_axis``'s)."""
    if isinstance(axis, NeuronArray) and axis.ndim == 0 and axis._t.dtype in _dtypes.INTEGER:
        return (operator.index(axis),)
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return (int(axis),)
    if isinstance(axis, (tuple, list)):
        return tuple(axis)
    raise TypeError(f"{func}(): {arg} must be an int or a tuple of ints, got {type(axis).__name__}")


# ---------------------------------------------------------------- broadcasting


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape the given shapes broadcast to; incompatible shapes are a ValueError naming both."""
    dims = [int_tuple(s, "broadcast_shapes", f"shapes[{i}]", minimum=0) for i, s in enumerate(shapes)]
    return broadcast_shape(dims, "broadcast_shapes")


def broadcast_to(x: NeuronArray, /, shape: tuple[int, ...]) -> NeuronArray:
    """A read-only view of ``x`` with ``shape``, as NumPy's (its repeated elements share memory, so one write
    would change them all; ``y.flags.writeable = True`` allows writes, as NumPy does); x's axes must each be 1 or
    match (aligned from the right)."""
    t = x._base if type(x) is _ReversedView else tensor(x, "broadcast_to")
    target = int_tuple(shape, "broadcast_to", "shape", minimum=0)
    trailing = target[len(target) - t.dim() :]
    fits = t.dim() <= len(target) and all(d in (1, s) for d, s in zip(t.shape, trailing, strict=True))
    if not fits:
        raise ValueError(f"broadcast_to(): cannot broadcast an array of shape {tuple(t.shape)} to {target}")
    why = "broadcast_to returns a read-only view, as NumPy's: its repeated elements share memory"
    if type(x) is _ReversedView:
        return readonly_view(numpy_view(x, lambda a: np.broadcast_to(a, target)), why)
    return readonly_view(wrap(t.broadcast_to(target)), why)


def broadcast_arrays(*arrays: NeuronArray) -> tuple[NeuronArray, ...]:
    """Views of the arrays broadcast against one another."""
    ts = tensors(arrays, "broadcast_arrays")
    shape = broadcast_shape([t.shape for t in ts], "broadcast_arrays")
    return tuple(wrap(t.broadcast_to(shape)) for t in ts)


# ---------------------------------------------------------------- joining and splitting


def _joinable(arrays: Sequence[NeuronArray], func: str) -> list[torch.Tensor]:
    """The tensors of a non-empty list of arrays on one device, cast to their promoted dtype."""
    ts = tensors(arrays, func)
    if not ts:
        raise ValueError(f"{func}() needs at least one array")
    dtype = promoted(arrays, func)
    return [_dtypes.cast(t, dtype) for t in ts]


def concat(arrays: tuple[NeuronArray, ...] | list[NeuronArray], /, *, axis: int | None = 0) -> NeuronArray:
    """Join arrays along an existing axis (``axis=None``: flattened), promoting their dtypes."""
    ts = _joinable(arrays, "concat")
    if axis is None:
        return wrap(torch.cat([t.reshape(-1) for t in ts]))
    first = tuple(ts[0].shape)
    axis = normalize_axis(axis, len(first), "concat")
    for t in ts[1:]:
        shape = tuple(t.shape)
        if len(shape) != len(first) or shape[:axis] + shape[axis + 1 :] != first[:axis] + first[axis + 1 :]:
            raise ValueError(f"concat(): shapes {first} and {shape} differ outside axis {axis}")
    return wrap(torch.cat(ts, dim=axis))


def stack(arrays: tuple[NeuronArray, ...] | list[NeuronArray], /, *, axis: int = 0) -> NeuronArray:
    """Join arrays of one shape along a new axis, promoting their dtypes."""
    ts = _joinable(arrays, "stack")
    first = tuple(ts[0].shape)
    for t in ts[1:]:
        if tuple(t.shape) != first:
            raise ValueError(f"stack(): arrays must have one shape, got {first} and {tuple(t.shape)}")
    return wrap(torch.stack(ts, dim=normalize_axis(axis, len(first) + 1, "stack")))


def unstack(x: NeuronArray, /, *, axis: int = 0) -> tuple[NeuronArray, ...]:
    """The slices of ``x`` along ``axis``, as a tuple of views."""
    t = tensor(x, "unstack")
    return tuple(wrap(s) for s in torch.unbind(t, normalize_axis(axis, t.dim(), "unstack")))


# ---------------------------------------------------------------- shapes


def reshape(x: NeuronArray, /, shape: tuple[int, ...], *, copy: bool | None = None) -> NeuronArray:
    """``x`` with a new shape (one entry may be -1); ``copy=False`` refuses (ValueError) to copy."""
    t = x._base if type(x) is _ReversedView else tensor(x, "reshape")
    new = _resolve_shape(tuple(t.shape), int_tuple(shape, "reshape", "shape", minimum=-1))
    if type(x) is _ReversedView:
        return _reshaped_reversed(x, new, copy)
    if copy:
        return wrap(t.clone(memory_format=torch.contiguous_format).view(new))
    if copy is None:
        return wrap(t.reshape(new))
    try:
        return wrap(t.view(new))
    except RuntimeError:
        raise ValueError(
            f"reshape(copy=False): an array of shape {tuple(t.shape)} and strides {t.stride()} "
            f"cannot be viewed as shape {new}; pass copy=None to allow a copy"
        ) from None


def _reshaped_reversed(x: _ReversedView, new: tuple[int, ...], copy: bool | None) -> NeuronArray:
    """reshape of a view with negative steps: NumPy's view where its strides allow one (over x's memory,
    writes go through), else NumPy's copy, writeable and independent (which ``copy=False`` refuses)."""
    if not copy:
        try:
            return numpy_view(x, lambda a: np.reshape(a, new, copy=False))
        except ValueError:
            if copy is False:
                raise ValueError(
                    f"reshape(copy=False): a view with negative steps of shape {x.shape} and strides "
                    f"{x.strides} cannot be viewed as shape {new}; pass copy=None to allow a copy"
                ) from None
    return wrap(x._t.clone().reshape(new))  # x._t is a read-only copy; its clone is the writeable one


def _resolve_shape(old: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Fill in a -1 entry; the sizes must match."""
    size = math.prod(old)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    known = math.prod(d for d in shape if d != -1)
    if len(unknown) > 1:
        raise ValueError(f"reshape(): shape {shape} has more than one -1")
    if unknown and known and size % known == 0:
        return shape[: unknown[0]] + (size // known,) + shape[unknown[0] + 1 :]
    if not unknown and known == size:
        return shape
    raise ValueError(f"reshape(): cannot reshape an array of shape {old} (size {size}) into shape {shape}")


def expand_dims(x: NeuronArray, /, axis: Axes) -> NeuronArray:
    """Insert size-1 axes at the given positions of the result (each in [-M, M), M the result's ndim)."""
    t = x._base if type(x) is _ReversedView else tensor(x, "expand_dims")
    axes = _axes_tuple(axis, "expand_dims")
    if type(x) is _ReversedView:  # NumPy's view, over x's memory
        where = normalize_axes(axes, t.dim() + len(axes), "expand_dims")
        return numpy_view(x, lambda a: np.expand_dims(a, where))
    for position in sorted(normalize_axes(axes, t.dim() + len(axes), "expand_dims")):
        t = t.unsqueeze(position)
    return wrap(t)


def squeeze(x: NeuronArray, /, axis: Axes) -> NeuronArray:
    """Remove the given axes, which must have size 1 (ValueError otherwise)."""
    t = x._base if type(x) is _ReversedView else tensor(x, "squeeze")
    axes = normalize_axes(_axes_tuple(axis, "squeeze"), t.dim(), "squeeze")
    for a in axes:
        if t.shape[a] != 1:
            raise ValueError(f"squeeze(): axis {a} has size {t.shape[a]}, not 1 (shape {tuple(t.shape)})")
    if type(x) is _ReversedView:  # NumPy's view, over x's memory
        return numpy_view(x, lambda v: np.squeeze(v, axis=axes))
    return wrap(t[tuple(0 if i in axes else slice(None) for i in range(t.dim()))])


def tile(x: NeuronArray, repetitions: tuple[int, ...], /) -> NeuronArray:
    """Repeat the whole array along each axis; the shorter of shape and repetitions is padded with ones."""
    t = tensor(x, "tile")
    return wrap(torch.tile(t, int_tuple(repetitions, "tile", "repetitions", minimum=0)))


def repeat(x: NeuronArray, repeats: int | NeuronArray, /, *, axis: int | None = None) -> NeuronArray:
    """Repeat each element ``repeats`` times (an int, or a 1-D integer array of one count per element) along
    ``axis`` (None: the flattened array). An array of counts synchronizes with the device."""
    t = tensor(x, "repeat")
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.dim(), "repeat")
    counts = (
        _repeat_counts(t, repeats, axis)
        if isinstance(repeats, NeuronArray)
        else int_arg(repeats, "repeat", "repeats", minimum=0)
    )
    return wrap(via_compute(lambda c: torch.repeat_interleave(c, counts, dim=axis), t))


def _repeat_counts(x: torch.Tensor, repeats: NeuronArray, axis: int) -> torch.Tensor:
    r, size = repeats._t, x.shape[axis]
    check_same_device((x, r), "repeat", "x and repeats")
    if r.dtype not in _dtypes.INTEGER:
        raise TypeError(f"repeat(): repeats must have an integer dtype, got {_dtypes.name(r.dtype)}")
    if r.dim() == 0:  # broadcasts to every element along axis, as (1,) does
        r = r.reshape(1)
    if r.dim() != 1 or r.shape[0] not in (1, size):
        raise ValueError(f"repeat(): repeats must have shape (), (1,) or ({size},), got {tuple(r.shape)}")
    r = _dtypes.cast(r, torch.int64)  # uint64 counts above 2**63 turn negative and are refused below
    if bool((r < 0).any()):
        raise ValueError("repeat(): repeats must be non-negative")
    return r.expand(size)


# ---------------------------------------------------------------- reordering


def permute_dims(x: NeuronArray, /, axes: tuple[int, ...]) -> NeuronArray:
    """Reorder the axes: ``axes`` is a permutation of all of them (negative entries count from the end)."""
    t = x._base if type(x) is _ReversedView else tensor(x, "permute_dims")
    order = _axes_tuple(axes, "permute_dims", "axes")
    if len(order) != t.dim():
        raise ValueError(
            f"permute_dims(): axes {order} must list all {t.dim()} axes of an array of shape {tuple(t.shape)}"
        )
    order = normalize_axes(order, t.dim(), "permute_dims")
    if type(x) is _ReversedView:  # NumPy's view, over x's memory
        return numpy_view(x, lambda a: np.transpose(a, order))
    return wrap(t.permute(order))


def moveaxis(x: NeuronArray, source: Axes, destination: Axes, /) -> NeuronArray:
    """Move axes to new positions, keeping the order of the others."""
    t = x._base if type(x) is _ReversedView else tensor(x, "moveaxis")
    src = normalize_axes(_axes_tuple(source, "moveaxis", "source"), t.dim(), "moveaxis")
    dst = normalize_axes(_axes_tuple(destination, "moveaxis", "destination"), t.dim(), "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis(): source {source} and destination {destination} differ in length")
    if type(x) is _ReversedView:  # NumPy's view, over x's memory
        return numpy_view(x, lambda a: np.moveaxis(a, src, dst))
    return wrap(torch.movedim(t, src, dst))


def flip(x: NeuronArray, /, *, axis: Axes | None = None) -> NeuronArray:
    """Reverse the order of elements along the given axes (None: all)."""
    t = tensor(x, "flip")
    axes = normalize_axes(None if axis is None else _axes_tuple(axis, "flip"), t.dim(), "flip")
    return wrap(via_compute(lambda c: torch.flip(c, axes), t))


def roll(x: NeuronArray, /, shift: Axes, *, axis: Axes | None = None) -> NeuronArray:
    """Shift elements cyclically along axes (None: the flattened array); an int shift applies to each axis."""
    t = tensor(x, "roll")
    if isinstance(shift, NeuronArray) and shift.ndim == 0:  # a 0-d integer array is an int shift, as in NumPy
        shift = operator.index(shift)
    shifts = int_tuple(shift, "roll", "shift")
    if axis is None:
        if not isinstance(shift, (int, np.integer)):
            raise ValueError(f"roll(): a tuple shift {shift} needs a tuple axis of the same length")
        return wrap(torch.roll(t, shifts[0]))
    axes = tuple(normalize_axis(a, t.dim(), "roll") for a in _axes_tuple(axis, "roll"))
    if isinstance(shift, (int, np.integer)):
        shifts *= len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll(): shift {shift} and axis {axis} differ in length")
    return wrap(torch.roll(t, shifts, axes))
