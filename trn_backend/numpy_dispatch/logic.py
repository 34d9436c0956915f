"""NumPy's "Logic functions": array contents and comparison (isclose, allclose, array_equal). all and any are in
``reductions``, the comparison ufuncs in ``ufuncs``. isclose and allclose compare integers as float64, as NumPy
does; allclose and array_equal answer with a Python bool, as NumPy does.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import _dtypes
from .._helpers import check_broadcastable
from ._common import A
from ._registry import implements, xp


def _close_operands(a: Any, b: Any, func: str) -> tuple[Any, Any]:
    """a and b in their common floating dtype (NumPy's: integers compare as float64); their shapes must
    broadcast."""
    if isinstance(b, A) and a.shape != b.shape:
        check_broadcastable(a.shape, b.shape, func)
    dtype = _dtypes.to_dtype(xp.result_type(a, b))
    dtype = dtype if dtype in _dtypes.FLOATING else _dtypes.float64
    return xp.astype(a, dtype, copy=False), xp.asarray(b, dtype=dtype, device=a.device)


@implements(np.isclose, arrays="a b", weak="b")
def isclose(a: A, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> A:
    """numpy.isclose: |a - b| <= atol + rtol * |b| where b is finite; equal values (infinities) always."""
    return _isclose(a, b, rtol, atol, equal_nan, "numpy.isclose")


def _isclose(a: A, b: Any, rtol: float, atol: float, equal_nan: bool, func: str) -> A:
    a, b = _close_operands(a, b, func)
    close = xp.less_equal(xp.abs(xp.subtract(a, b)), xp.add(atol, xp.multiply(rtol, xp.abs(b))))
    result = xp.logical_or(xp.logical_and(close, xp.isfinite(b)), xp.equal(a, b))
    if equal_nan:
        result = xp.logical_or(result, xp.logical_and(xp.isnan(a), xp.isnan(b)))
    return result


@implements(np.allclose, arrays="a b", weak="b")
def allclose(a: A, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """numpy.allclose (a Python bool, as in NumPy)."""
    return builtins.bool(xp.all(_isclose(a, b, rtol, atol, equal_nan, "numpy.allclose")))


@implements(np.array_equal, arrays="a1 a2")
def array_equal(a1: A, a2: A, equal_nan: bool = False) -> bool:
    """numpy.array_equal (a Python bool): same shape and elements, NaNs equal under equal_nan."""
    if a1.shape != a2.shape:
        return False
    same = xp.equal(a1, a2)
    if equal_nan and _dtypes.to_dtype(xp.result_type(a1, a2)) in _dtypes.FLOATING:
        same = xp.logical_or(same, xp.logical_and(xp.isnan(a1), xp.isnan(a2)))
    return builtins.bool(xp.all(same))
