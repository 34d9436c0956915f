"""numpy.polyval (trn_backend/numpy_dispatch/polynomials.py) against NumPy on the same data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.numpy_dispatch.calls import agree

rng = np.random.default_rng(7)
M = rng.standard_normal((3, 4))
I = rng.integers(-5, 6, (3, 4))


@pytest.mark.parametrize(
    "case",
    [
        (np.array([3.0, 0.0, -1.0]), M),
        (np.array([2, -1, 5]), I),
        (np.array([2, -1, 5]), M.astype(np.float32)),
        (np.array([1.5, 2.0], dtype=np.float32), np.arange(4, dtype=np.int64)),
        (np.array([], dtype=np.float64), I),
        (np.array([1, 2j]), M),
        (np.array([4, 3], dtype=np.int8), np.array([100, 7], dtype=np.int8)),
        (np.array([1.0, -2.0]), 3.0),
    ],
)
def test_polyval(case: tuple[np.ndarray, Any]) -> None:
    # Horner's rule, with fused multiply-adds on some devices
    agree(np.polyval, *case, rtol=1e-12)
