"""NumPy's "Polynomials" section (its legacy poly1d functions): numpy.polyval, by Horner's rule in NumPy's promoted
dtype of the coefficients and x.
"""

from __future__ import annotations

import numpy as np

from ._common import A, _as, _promoted
from ._registry import implements, xp


@implements(np.polyval, arrays="p x")
def polyval(p: A, x: A) -> A:
    """numpy.polyval by Horner's rule, highest power first, in NumPy's promoted dtype of p and x."""
    if p.ndim == 0:
        raise TypeError("numpy.polyval(): p must be a sequence of coefficients, got a 0-d array")
    if p.shape[0] == 0:
        return xp.zeros_like(x)
    dtype = _promoted(p, x)
    p, x = _as(p, dtype), _as(x, dtype)
    y = xp.zeros_like(x)
    for coefficient in p:
        y = y * x + coefficient
    return y
