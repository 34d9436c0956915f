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
DATA = np.array([
    [1 + 2j, complex(NAN, 0), 1 + 1j, -1 + 5j, complex(2, NAN)],
    [3, 2, 1, 0, 1 + 1j],
    [complex(NAN, 1), complex(NAN, -1), complex(NAN, NAN), complex(-2, NAN), 5],
    [NAN, NAN, NAN, NAN, NAN],
    [1 + 1j, 1 + 1j, 1 - 1j, complex(np.inf, 0), complex(-np.inf, 3)],
])
FUNCTIONS = [np.sort, partial(np.argsort, kind="stable"), np.max, np.min, np.amax, np.amin, np.argmax, np.argmin,
             np.nanargmax, np.nanargmin,
             np.ptp, np.median, np.nanmax, np.nanmin]


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
    np.testing.assert_array_equal(np.asarray(np.max(a, axis=(0, 1), keepdims=True)),
                                  np.max(DATA, axis=(0, 1), keepdims=True))
    np.testing.assert_array_equal(np.asarray(np.argmin(a, axis=1, keepdims=True)),
                                  np.argmin(DATA, axis=1, keepdims=True))
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
    y = {"reversed": DATA[::-1, ::-1], "int": 1, "complex scalar": 2 + 0j,
         "int array": np.arange(5, dtype=np.int16)}[other]
    yy = xp.asarray(y) if isinstance(y, np.ndarray) else y
    f = getattr(np, name)
    for got, want in ((f(xp.asarray(DATA), yy), f(DATA, y)), (f(yy, xp.asarray(DATA)), f(y, DATA))):
        assert isinstance(got, xp.NeuronArray)
        np.testing.assert_array_equal(np.asarray(got), want)


def test_median_of_an_even_count_divides_as_numpy():
    """NumPy's mean divides the complex sum as a complex number: an infinite part makes the other one NaN."""
    data = np.array([-1 + 1j, -3 - 4j, 1 + 0j, complex(0, np.inf)])
    np.testing.assert_array_equal(np.asarray(np.median(xp.asarray(data))), np.median(data))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumulative_products_of_complex_infinities_as_numpy(dtype, axis):
    """NumPy's accumulate keeps the first element and multiplies by the textbook formula; torch's complex
    product of 0+inf j is NaN+NaN j."""
    rng = np.random.default_rng(0)
    specials = np.array([complex(0, np.inf), complex(np.inf, NAN), 1 + 1j, 2 - 1j, complex(1, 1e16),
                         complex(NAN, 0), -1 + 1j, 0.5j, 3 + 0j])
    x = rng.choice(specials, size=(3, 4, 5)).astype(dtype)
    for want, got in ((np.cumprod(x, axis=axis), np.cumprod(xp.asarray(x), axis=axis)),
                      (np.cumulative_prod(x, axis=axis, include_initial=True),
                       np.cumulative_prod(xp.asarray(x), axis=axis, include_initial=True))):
        got = np.asarray(got)
        assert got.dtype == want.dtype
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(got), part(want), rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_numpy_expm1_of_complex_values(dtype):
    """numpy.expm1's complex formula and special values (NaN + 0j gives NaN + NaN j), for the ufunc table; the
    namespace's expm1 keeps the standard's (NaN + 0j)."""
    from trn_backend.numpy_dispatch.mathematical import expm1

    x = np.array([-1 + 1j, -3 + 6.2628126e16j, complex(NAN, 0), complex(0, np.inf), 1e-8 + 1e-8j, 2 - 0.5j,
                  complex(np.inf, 0), complex(-np.inf, 1)], dtype=dtype)
    want = np.expm1(x)
    got = np.asarray(expm1(xp.asarray(x)))
    assert got.dtype == want.dtype
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(got), part(want), rtol=1e-5, atol=0, equal_nan=True)
    assert np.isnan(np.asarray(xp.expm1(xp.asarray(x)))[2].real)
    assert np.asarray(xp.expm1(xp.asarray(x)))[2].imag == 0


@pytest.mark.parametrize(("shape", "axis"), [((0, 3), -1), ((2, 0), 0), ((0, 3), 0), ((2, 0), None)])
def test_average_over_an_empty_axis(shape, axis):
    """NumPy's unweighted average divides a.size by the number of averages: none is its ZeroDivisionError."""
    x = np.zeros(shape)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.average(x, axis=axis)
    except ZeroDivisionError:
        with pytest.raises(ZeroDivisionError, match="numpy.average"):
            np.average(xp.asarray(x), axis=axis)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(np.asarray(np.average(xp.asarray(x), axis=axis)), want)


@pytest.mark.parametrize("a, b", [([-2.0, np.inf, 3.0, -np.inf], [np.inf, 3.0, -np.inf, 2.0]),
                                  ([7.0, -7.0], [0.0, 2.5])])
def test_floor_divide_ufunc_is_numpys_and_the_operator_the_standards(a, b):
    """np.floor_divide on NeuronArrays gives NumPy's values (-2 // inf is -1); the // operator keeps the array API
    standard's special cases (-0.0 there)."""
    x, y = xp.asarray(np.array(a)), xp.asarray(np.array(b))
    with np.errstate(all="ignore"):
        want = np.floor_divide(np.array(a), np.array(b))
    np.testing.assert_array_equal(np.asarray(np.floor_divide(x, y)), want)
    if a[0] == -2.0:
        assert np.signbit(np.asarray(x // y)[0]) and np.asarray(x // y)[0] == 0
