"""Searching functions of the standard: argmax, argmin, count_nonzero, nonzero, searchsorted, where.

Ordering runs in ``_dtypes.ordered`` (uint64 compares with its sign bit flipped, uint16/32 in a wider signed
type). NaN follows NumPy: argmax/argmin return the first NaN, and searchsorted places NaN after every number,
matching ``sort``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import _dtypes
from .._helpers import (
    NeuronArray,
    as_py_scalar,
    binary_operands,
    broadcast_shape,
    check_same_device,
    normalize_axis,
    tensor,
    wrap,
)
from .sorting import order_key
from .statistical import Axis, reduce_axes

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]

Tensor = torch.Tensor


def _arg_extreme(x: NeuronArray, axis: int | None, keepdims: bool, func: str, op: Callable[..., Tensor]) -> NeuronArray:
    t = tensor(x, func)
    key = order_key(t, func)
    if axis is None:
        key, dim = key.reshape(-1), 0
    else:
        dim = normalize_axis(axis, t.dim(), func)
    if key.shape[dim] == 0:
        raise ValueError(f"{func}(): attempt to search an empty axis (x has shape {tuple(t.shape)}, axis={axis})")
    idx = op(key, dim=dim)
    if key.is_floating_point():
        # torch's vectorized kernels may skip NaN; NumPy returns the first NaN
        nan = torch.isnan(key)
        idx = torch.where(nan.any(dim=dim), nan.to(torch.uint8).argmax(dim=dim), idx)
    if keepdims:
        idx = idx.reshape([1] * t.dim()) if axis is None else idx.unsqueeze(dim)
    return wrap(idx)


def argmax(x: NeuronArray, /, *, axis: int | None = None, keepdims: bool = False) -> NeuronArray:
    """Index (int64) of the first maximum along ``axis`` (of the flattened array if None); first NaN wins."""
    return _arg_extreme(x, axis, keepdims, "argmax", torch.argmax)


def argmin(x: NeuronArray, /, *, axis: int | None = None, keepdims: bool = False) -> NeuronArray:
    """Index (int64) of the first minimum along ``axis`` (of the flattened array if None); first NaN wins."""
    return _arg_extreme(x, axis, keepdims, "argmin", torch.argmin)


def truth(t: Tensor) -> Tensor:
    """Truth value of every element (complex: either component non-zero; NaN is true)."""
    return t if t.dtype is _dtypes.bool else _dtypes.compute(t) != 0


def count_nonzero(x: NeuronArray, /, *, axis: Axis = None, keepdims: bool = False) -> NeuronArray:
    """Number of non-zero elements over ``axis`` (all axes by default), as int64."""
    nz = truth(tensor(x, "count_nonzero"))
    return wrap(reduce_axes(nz, axis, keepdims, "count_nonzero", lambda f: f.sum(dim=-1)))


def nonzero(x: NeuronArray, /) -> tuple[NeuronArray, ...]:
    """Indices of the non-zero elements, one int64 array per dimension, in row-major order."""
    t = tensor(x, "nonzero")
    if t.dim() == 0:
        raise ValueError(
            "nonzero(): x must have at least one dimension, got a 0-dimensional array (use reshape(x, (1,)) first)"
        )
    return tuple(wrap(i) for i in torch.nonzero(truth(t), as_tuple=True))


def searchsorted(
    x1: NeuronArray, x2: NeuronArray | int | float, /, *, side: str = "left", sorter: NeuronArray | None = None
) -> NeuronArray:
    """Insertion indices (int64) of ``x2`` into the ascending 1-D ``x1`` (or x1[sorter]) keeping order."""
    t1 = tensor(x1, "searchsorted", "x1")
    if t1.dim() != 1:
        raise ValueError(f"searchsorted(): x1 must be 1-dimensional, got shape {tuple(t1.shape)}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted(): side must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        t1 = t1[_sorter_index(sorter, t1)]
    value = as_py_scalar(x2)
    if isinstance(value, int) and t1.dtype in _dtypes.INTEGER:
        lo, hi = _dtypes.int_range(t1.dtype)
        if not lo <= value <= hi:
            # a Python int beyond x1's dtype (which could not hold it) lies beyond every element, as in NumPy 2
            return wrap(torch.tensor(0 if value < lo else t1.shape[0], dtype=torch.int64, device=t1.device))
    a, v, dtype = binary_operands(wrap(t1), x2, "searchsorted")
    a, v = order_key(a, "searchsorted", "x1 and x2").contiguous(), order_key(v, "searchsorted", "x1 and x2")
    right = side == "right"
    if not a.is_floating_point():
        return wrap(torch.searchsorted(a, v, right=right))
    # NaNs sit at the end of a sorted x1 (as sort puts them); a NaN value goes after the numbers (left) or
    # after everything (right), as in NumPy.
    n = int((~torch.isnan(a)).sum())
    out = torch.searchsorted(a[:n], v, right=right)
    return wrap(torch.where(torch.isnan(v), torch.full_like(out, a.shape[0] if right else n), out))


def _sorter_index(sorter: object, t1: Tensor) -> Tensor:
    s = tensor(sorter, "searchsorted", "sorter")
    check_same_device((t1, s), "searchsorted", "x1 and sorter")
    if s.dtype not in _dtypes.INTEGER:
        raise TypeError(f"searchsorted(): sorter must have an integer dtype, got {_dtypes.name(s.dtype)}")
    if s.shape != t1.shape:
        raise ValueError(f"searchsorted(): sorter must have x1's shape {tuple(t1.shape)}, got {tuple(s.shape)}")
    return _dtypes.cast(s, torch.int64)


def where(condition: NeuronArray, x1: NeuronArray | complex, x2: NeuronArray | complex, /) -> NeuronArray:
    """Elements of ``x1`` where ``condition`` is true, else of ``x2``; x1 and x2 promote and broadcast.

    Either of x1 and x2 may be a Python scalar (weak, as in binary functions), but not both: the standard asks for
    at least one array to take the result dtype from.
    """
    c = tensor(condition, "where", "condition")
    if c.dtype is not _dtypes.bool:
        raise TypeError(f"where(): condition must have a boolean dtype, got {_dtypes.name(c.dtype)}")
    if not isinstance(x1, NeuronArray) and not isinstance(x2, NeuronArray):
        raise TypeError(
            f"where(): x1 and x2 are both scalars ({type(x1).__name__} and {type(x2).__name__}); "
            "the standard needs at least one of them to be an array (e.g. asarray(x1))"
        )
    t1, t2, dtype = binary_operands(x1, x2, "where", broadcast=True)
    check_same_device((c, t1, t2), "where", "condition, x1 and x2")
    if not c.shape == t1.shape == t2.shape:  # x1 and x2 broadcast (binary_operands); the condition must too
        broadcast_shape((c.shape, t1.shape, t2.shape), "where")
    return wrap(_dtypes.restore(torch.where(c, _dtypes.compute(t1), _dtypes.compute(t2)), dtype))
