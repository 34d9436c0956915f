"""NumPy's "Set routines": numpy.unique (of the flattened array, sorted, which sorted=False allows; NaNs merged
under equal_nan; the inverse in the input's shape, as in NumPy 2), the unique_* functions NumPy 2 took from the
standard, and numpy.isin.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ._common import A, _direct, _flat
from ._registry import implements, xp


def _run_starts(s: A, equal_nan: bool) -> A:
    """Mask of the first element of each run of equal values in the sorted 1-d ``s``."""
    if s.shape[0] == 0:
        return xp.zeros((0,), dtype=_dtypes.bool, device=s.device)
    new = xp.not_equal(s[1:], s[:-1])
    if equal_nan and s._t.dtype in _dtypes.FLOATING:
        new = xp.logical_and(new, xp.logical_not(xp.logical_and(xp.isnan(s[1:]), xp.isnan(s[:-1]))))
    return xp.concat([xp.ones((1,), dtype=_dtypes.bool, device=s.device), new])


@implements(np.unique, arrays="ar")
def unique(
    ar: A,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    equal_nan: bool = True,
    sorted: bool = True,
) -> A | tuple[A, ...]:
    """numpy.unique of the flattened array, sorted (which sorted=False allows), NaNs merged under equal_nan;
    the inverse has the input's shape, as in NumPy 2."""
    flat = _flat(ar)
    order = xp.argsort(flat, stable=True)  # stable: each run starts at the value's first occurrence
    starts = _run_starts(xp.take(flat, order), equal_nan)
    values = xp.take(flat, order)[starts]
    extras = []
    if return_index:
        extras.append(order[starts])
    if return_inverse:
        group = xp.cumulative_sum(starts, dtype=_dtypes.int64) - 1
        extras.append(xp.reshape(xp.take(group, xp.argsort(order)), ar.shape))
    if return_counts:
        first = xp.nonzero(starts)[0]
        extras.append(xp.diff(first, append=xp.asarray([flat.size], device=ar.device)))
    return (values, *extras) if extras else values


for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    _direct(getattr(np, _name), _name, arrays="x")


@implements(np.isin, arrays="element test_elements")
def isin(element: A, test_elements: A, assume_unique: bool = False, invert: bool = False, kind: str | None = None) -> A:
    """numpy.isin (assume_unique and kind are performance hints; the answer does not depend on them)."""
    return xp.isin(element, test_elements, invert=invert)
