"""Set functions of the standard: isin and the unique_* family.

Uniqueness is value equality (``equal``), which torch.unique does not implement: it merges NaNs. Here the flat
array is sorted stably (complex lexicographically by real then imaginary part) and a new unique value starts
wherever a sorted element differs from its predecessor under ``!=``. So every NaN (and every complex value
with a NaN component) is its own unique value with count 1, -0.0 and 0.0 are one value, each value's index is
its first occurrence, and uint64 is exact (its bits compare as int64 bits). Values come out in ascending
order.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .. import _dtypes
from .._helpers import NeuronArray, binary_operands, tensor, wrap
from .sorting import order_key

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]

Tensor = torch.Tensor

# Complex isin compares every pair; chunks of x1 bound the temporary to about this many elements.
_PAIRWISE_CHUNK = 1 << 22


class UniqueAllResult(NamedTuple):
    values: NeuronArray
    indices: NeuronArray
    inverse_indices: NeuronArray
    counts: NeuronArray


class UniqueCountsResult(NamedTuple):
    values: NeuronArray
    counts: NeuronArray


class UniqueInverseResult(NamedTuple):
    values: NeuronArray
    inverse_indices: NeuronArray


def _stable_order(flat: Tensor) -> Tensor:
    """Indices that sort a 1-D tensor stably; complex lexicographically (real part, then imaginary part)."""
    if flat.is_complex():
        order = torch.sort(flat.imag, stable=True).indices
        return order[torch.sort(flat.real[order], stable=True).indices]
    return torch.sort(order_key(flat, "unique"), stable=True).indices


def _unique(x: NeuronArray, func: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(flat x, first-occurrence indices, inverse indices in x's shape, counts) of the unique values of x."""
    t = tensor(x, func)
    flat = t.reshape(-1)
    order = _stable_order(flat)
    in_order = _dtypes.compute(flat)[order]
    starts_mask = torch.ones_like(order, dtype=torch.bool)
    starts_mask[1:] = in_order[1:] != in_order[:-1]
    starts = torch.nonzero(starts_mask).reshape(-1)
    inverse = torch.empty_like(order)
    inverse[order] = torch.cumsum(starts_mask, 0) - 1
    counts = torch.diff(starts, append=torch.tensor([flat.numel()], device=flat.device))
    return flat, order[starts], inverse.reshape(t.shape), counts


def unique_all(x: NeuronArray, /) -> UniqueAllResult:
    """Unique values of flattened ``x``, first-occurrence indices, inverse indices (x's shape) and counts."""
    flat, indices, inverse, counts = _unique(x, "unique_all")
    return UniqueAllResult(wrap(flat[indices]), wrap(indices), wrap(inverse), wrap(counts))


def unique_counts(x: NeuronArray, /) -> UniqueCountsResult:
    """Unique values of flattened ``x`` and how often each occurs (each NaN once)."""
    flat, indices, _, counts = _unique(x, "unique_counts")
    return UniqueCountsResult(wrap(flat[indices]), wrap(counts))


def unique_inverse(x: NeuronArray, /) -> UniqueInverseResult:
    """Unique values of flattened ``x`` and the indices into them that rebuild ``x`` (in x's shape)."""
    flat, indices, inverse, _ = _unique(x, "unique_inverse")
    return UniqueInverseResult(wrap(flat[indices]), wrap(inverse))


def unique_values(x: NeuronArray, /) -> NeuronArray:
    """Unique values of flattened ``x``, ascending; every NaN is distinct, -0.0 and 0.0 are one value."""
    flat, indices, _, _ = _unique(x, "unique_values")
    return wrap(flat[indices])


def isin(x1: NeuronArray | int, x2: NeuronArray | int, /, *, invert: bool = False) -> NeuronArray:
    """Whether each element of ``x1`` equals some element of ``x2`` (NaN equals nothing); a Python scalar x1
    gives a 0-d result."""
    a, b, dtype = binary_operands(x1, x2, "isin")
    a, b = _dtypes.compute(a), _dtypes.compute(b).reshape(-1)
    if dtype in _dtypes.COMPLEX_FLOAT:
        found = _isin_pairwise(a, b)
    else:
        if dtype is _dtypes.bool:
            a, b = a.to(torch.uint8), b.to(torch.uint8)
        found = torch.isin(a, b)
        if dtype in _dtypes.REAL_FLOAT:
            found &= ~torch.isnan(a)  # equality never holds for NaN, whichever algorithm torch.isin picks
    return wrap(~found if invert else found)


def _isin_pairwise(a: Tensor, b: Tensor) -> Tensor:
    """isin by comparing every pair (torch.isin has no complex kernel); NaN compares unequal by itself."""
    flat = a.reshape(-1)
    step = max(1, _PAIRWISE_CHUNK // max(1, b.numel()))
    parts = [(flat[i : i + step, None] == b[None, :]).any(dim=1) for i in range(0, flat.numel(), step)]
    if not parts:
        return torch.zeros(a.shape, dtype=torch.bool, device=a.device)
    return torch.cat(parts).reshape(a.shape)
