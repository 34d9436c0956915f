"""NumPy's order of complex numbers (real part, then imaginary part, NaN placement as numpy.sort documents) in the
NumPy entry points that order their operand, against NumPy 2 on the same data."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest

import trn_backend as xp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

NAN = np.nan
DATA = np.array(
    [
        [1 + 2j, complex(NAN, 0), 1 + 1j, -1 + 5j, complex(2, NAN)],
        [3, 2, 1, 0, 1 + 1j],
        [complex(NAN, 1), complex(NAN, -1), complex(NAN, NAN), complex(-2, NAN), 5],
        [NAN, NAN, NAN, NAN, NAN],
        [1 + 1j, 1 + 1j, 1 - 1j, complex(np.inf, 0), complex(-np.inf, 3)],
    ]
)
FUNCTIONS = [
    np.sort,
    partial(np.argsort, kind="stable"),
    np.max,
    np.min,
    np.amax,
    np.amin,
    np.argmax,
    np.argmin,
    np.nanargmax,
    np.nanargmin,
    np.ptp,
    np.median,
    np.nanmax,
    np.nanmin,
]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("func", FUNCTIONS, ids=lambda f: getattr(f, "__name__", None) or f.func.__name__)
def test_orders_complex_as_numpy(func, axis, dtype):
    data = DATA.astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            want = func(data, axis=axis)
        except ValueError:  # nanargmax/nanargmin of an all-NaN slice
            with pytest.raises(ValueError, match="All-NaN"):
                func(xp.asarray(data), axis=axis)
            return
        got = np.asarray(func(xp.asarray(data), axis=axis))
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_keepdims_and_axis_tuple():
    a = xp.asarray(DATA)
    np.testing.assert_array_equal(
        np.asarray(np.max(a, axis=(0, 1), keepdims=True)), np.max(DATA, axis=(0, 1), keepdims=True)
    )
    np.testing.assert_array_equal(
        np.asarray(np.argmin(a, axis=1, keepdims=True)), np.argmin(DATA, axis=1, keepdims=True)
    )
    np.testing.assert_array_equal(np.asarray(np.max(a, axis=1, initial=3)), np.max(DATA, axis=1, initial=3))


def test_partition_is_a_valid_partition():
    got = np.asarray(np.partition(xp.asarray(DATA), 2, axis=1))
    np.testing.assert_array_equal(got, np.sort(DATA, axis=1))


def test_empty_reduction_is_a_value_error():
    with pytest.raises(ValueError, match="numpy.max"):
        np.max(xp.asarray(np.zeros((0, 2), complex)), axis=0)


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal", "maximum", "minimum"])
@pytest.mark.parametrize("other", ["reversed", "int", "complex scalar", "int array"])
def test_complex_comparisons(name, other):
    """NumPy's ordering ufuncs on complex NeuronArrays compare lexicographically (the real parts decide only where
    neither imaginary part is NaN), as NumPy's complex loops."""
    y = {"reversed": DATA[::-1, ::-1], "int": 1, "complex scalar": 2 + 0j, "int array": np.arange(5, dtype=np.int16)}[
        other
    ]
    yy = xp.asarray(y) if isinstance(y, np.ndarray) else y
    f = getattr(np, name)
    for got, want in ((f(xp.asarray(DATA), yy), f(DATA, y)), (f(yy, xp.asarray(DATA)), f(y, DATA))):
        assert isinstance(got, xp.NeuronArray)
        np.testing.assert_array_equal(np.asarray(got), want)
