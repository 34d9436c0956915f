"""Test support: conversions to and from NumPy and hypothesis strategies over the standard's dtypes."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp

DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float32", "float64", "complex64", "complex128")
INT_NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_NAMES = ("float32", "float64")
COMPLEX_NAMES = ("complex64", "complex128")
REAL_NAMES = INT_NAMES + FLOAT_NAMES
NUMERIC_NAMES = REAL_NAMES + COMPLEX_NAMES


def from_numpy(a: np.ndarray) -> xp.NeuronArray:
    """A NeuronArray holding a copy of a NumPy array (independent of the namespace's asarray)."""
    return xp.NeuronArray(torch.from_numpy(np.array(a, copy=True, order="C")))


def to_numpy(x: xp.NeuronArray) -> np.ndarray:
    return x._t.detach().cpu().resolve_conj().numpy()


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side)


def arrays(dtype_name: str, shape, *, elements=None) -> st.SearchStrategy:
    """NumPy arrays of a dtype; floats without subnormals (torch flushes them on some CPUs)."""
    dtype = np.dtype(dtype_name)
    if elements is None and dtype.kind in "fc":
        width = 32 if dtype_name in ("float32", "complex64") else 64
        floats = st.floats(width=width, allow_subnormal=False)
        elements = floats if dtype.kind == "f" else st.builds(complex, floats, floats)
    return hnp.arrays(dtype, shape, elements=elements)


def assert_same(actual: xp.NeuronArray, expected: np.ndarray, *, rtol: float | None = None,
                atol: float = 0.0) -> None:
    """Same dtype, same shape, and the same values (exactly for exact dtypes; NaNs in the same places)."""
    assert isinstance(actual, xp.NeuronArray), type(actual)
    got = to_numpy(actual)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if rtol is None or got.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, expected)
    elif got.dtype.kind == "c":
        # compare parts (complex infinities make a complex difference nan), each relative to the magnitude
        scale = np.where(np.isfinite(expected), np.abs(expected), 0) * rtol
        for part in (np.real, np.imag):
            g, e = part(got), part(expected)
            with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
                ok = (g == e) | (np.isnan(g) & np.isnan(e)) | (np.abs(g - e) <= scale)
            assert ok.all(), f"{part.__name__} parts differ:\n{got}\n{expected}"
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
