"""Sorting functions of the standard: sort and argsort.

Sorts are always stable (stable=False is allowed to be stable), descending ones included: torch's stable
descending sort keeps equal elements in their original order. NaN sorts after every number in ascending order
and before them in descending order (the mirror image, as NumPy's flip of an ascending sort would give).
uint64 sorts in the ordered domain, uint16/32 in a wider signed dtype; a 0-d array sorts as a single element.
"""

from __future__ import annotations

import torch

from .. import _dtypes
from .._helpers import NeuronArray, normalize_axis, tensor, wrap

__all__ = ["argsort", "sort"]


def order_key(t: torch.Tensor, func: str, arg: str = "x") -> torch.Tensor:
    """A tensor whose torch ordering is the standard's ordering of ``t`` (real-valued and boolean dtypes);
    ``_dtypes.unordered`` maps sorted keys back. Complex input is a TypeError: it has no order."""
    if t.dtype in _dtypes.COMPLEX_FLOAT:
        raise TypeError(
            f"{func}() needs {arg} of a real-valued or boolean dtype, got "
            f"{_dtypes.name(t.dtype)} (complex numbers have no order)"
        )
    if t.dtype is _dtypes.bool:
        return t.to(torch.uint8)
    return _dtypes.ordered(t, t.dtype)


def _sort(x: NeuronArray, axis: int, descending: bool, func: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted values (x's dtype) and the int64 indices that sort ``x`` along ``axis``."""
    t = tensor(x, func)
    key = order_key(t, func)
    if t.dim() == 0:
        normalize_axis(axis, 1, func)  # a 0-d array is one element: axis 0 or -1
        return t.clone(), torch.zeros((), dtype=torch.int64, device=t.device)
    dim = normalize_axis(axis, t.dim(), func)
    values, indices = torch.sort(key, dim=dim, descending=bool(descending), stable=True)
    return _dtypes.unordered(values, t.dtype), indices


def sort(x: NeuronArray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> NeuronArray:
    """A sorted copy of ``x`` along ``axis`` (stable; NaN last in ascending order)."""
    return wrap(_sort(x, axis, descending, "sort")[0])


def argsort(x: NeuronArray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> NeuronArray:
    """The int64 indices that sort ``x`` along ``axis`` (stable; NaN last in ascending order)."""
    return wrap(_sort(x, axis, descending, "argsort")[1])
