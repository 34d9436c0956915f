"""Indexing functions of the standard: take and take_along_axis.

Indices of any integer dtype are accepted (unsigned ones are read as unsigned); negative indices count from
the end. Out-of-range indices are an IndexError naming the function (the standard leaves them unspecified;
silently wrapping them would be a wrong answer). The bounds check synchronizes with the device.
"""

from __future__ import annotations

import torch

from .. import _dtypes
from .._dtypes import via_compute
from .._helpers import NeuronArray, check_same_device, normalize_axis, tensor, wrap

__all__ = ["take", "take_along_axis"]


def _positions(x: torch.Tensor, indices: NeuronArray, axis: int, func: str) -> torch.Tensor:
    """int64 positions in [0, size) from integer indices in [-size, size) along ``axis`` of ``x``."""
    i = tensor(indices, func, "indices")
    check_same_device((x, i), func, "x and indices")
    size = x.shape[axis]
    if i.dtype not in _dtypes.INTEGER:
        raise TypeError(f"{func}(): indices must have an integer dtype, got {_dtypes.name(i.dtype)}")
    # uint64 indices above 2**63 turn negative here; an unsigned index may not be negative, so they fail below
    p = _dtypes.cast(i, torch.int64)
    low = 0 if i.dtype in _dtypes.UNSIGNED_INT else -size
    if p.numel() and bool(((p < low) | (p >= size)).any()):
        raise IndexError(f"{func}(): an index is out of range [{low}, {size}) for an axis of size {size}")
    return torch.where(p < 0, p + size, p)


def take(x: NeuronArray, indices: NeuronArray, /, *, axis: int | None = None) -> NeuronArray:
    """Elements of ``x`` at 1-D ``indices`` along ``axis`` (which an ``x`` of more than one dimension must give;
    a 0-d ``x`` without it is taken as its one element, as NumPy flattens it)."""
    t = tensor(x, "take")
    if axis is None:
        if t.dim() > 1:
            raise ValueError(f"take(): axis is required for an array of {t.dim()} dimensions")
        t, axis = t.reshape(-1), 0
    axis = normalize_axis(axis, t.dim(), "take")
    if tensor(indices, "take", "indices").dim() != 1:
        raise ValueError(f"take(): indices must be 1-dimensional, got shape {indices.shape}")
    p = _positions(t, indices, axis, "take")
    return wrap(via_compute(lambda c: torch.index_select(c, axis, p), t))


def take_along_axis(x: NeuronArray, indices: NeuronArray, /, *, axis: int = -1) -> NeuronArray:
    """Elements of ``x`` at ``indices`` along ``axis``; the other axes of x and indices broadcast."""
    t = tensor(x, "take_along_axis")
    axis = normalize_axis(axis, t.dim(), "take_along_axis")
    shape = tuple(tensor(indices, "take_along_axis", "indices").shape)
    if len(shape) != t.dim():
        raise ValueError(f"take_along_axis(): indices of shape {shape} must have the {t.dim()} dimensions of x")
    for i, (a, b) in enumerate(zip(t.shape, shape, strict=True)):
        if i != axis and a != b and 1 not in (a, b):
            raise ValueError(
                f"take_along_axis(): x of shape {tuple(t.shape)} and indices of shape {shape} "
                f"do not broadcast on axis {i}"
            )
    p = _positions(t, indices, axis, "take_along_axis")
    return wrap(via_compute(lambda c: torch.take_along_dim(c, p, dim=axis), t))
