"""NumPy statistics on NeuronArray (trn_backend.numpy_dispatch.statistics) against NumPy on the same data.

Every function is run on NeuronArrays and on the ndarrays they were made from; results must be NeuronArrays with
NumPy's dtype, shape and values (NaN in the same places), and NumPy's warnings. Inputs are float64, float32 and
integers (small values: NumPy's integer quantiles subtract neighbours in the integer dtype, which can wrap).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import from_numpy, to_numpy
from trn_backend.numpy_dispatch import handled_functions
from trn_backend.numpy_dispatch.statistics import QUANTILE_METHODS

rng = np.random.default_rng(7)

F64 = rng.standard_normal((3, 4, 5))
F32 = F64.astype(np.float32)
I64 = rng.integers(-20, 20, (3, 4, 5))
I8 = I64.astype(np.int8)
WITH_NAN = F64.copy()
WITH_NAN[0, 1, 2] = np.nan
WITH_NAN[1, :, 3] = np.nan  # an all-NaN slice along axis 1
WITH_NAN_NO_EMPTY = F64.copy()
WITH_NAN_NO_EMPTY[0, 1, 2] = WITH_NAN_NO_EMPTY[2, 0, 0] = np.nan
DATA = {"float64": F64, "float32": F32, "int64": I64, "int8": I8, "nan": WITH_NAN_NO_EMPTY}
AXES = [None, 0, -1, (0, 2)]

REGISTERED = (
    "numpy.average", "numpy.bincount", "numpy.corrcoef", "numpy.cov", "numpy.histogram", "numpy.median",
    "numpy.nanargmax", "numpy.nanargmin", "numpy.nancumprod", "numpy.nancumsum", "numpy.nanmax", "numpy.nanmean",
    "numpy.nanmedian", "numpy.nanmin", "numpy.nanpercentile", "numpy.nanprod", "numpy.nanquantile",
    "numpy.nanstd", "numpy.nansum", "numpy.nanvar", "numpy.percentile", "numpy.quantile")


def _rtol(dtype: np.dtype) -> float:
    return {"f": {2: 1e-2, 4: 2e-5}, "c": {8: 2e-5}}.get(dtype.kind, {}).get(dtype.itemsize, 1e-10)


def check(ours: Any, theirs: Any) -> None:
    """ours (NeuronArrays, or tuples of them) equals NumPy's answer in dtype, shape and values."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs, strict=True):
            check(o, t)
        return
    assert isinstance(ours, xp.NeuronArray), type(ours)
    got, expected = to_numpy(ours), np.asarray(theirs)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=_rtol(got.dtype), atol=1e-12, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def _neuron(value: Any) -> Any:
    return from_numpy(value) if isinstance(value, np.ndarray) else value


def numpy_quietly(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """NumPy's answer and the messages of its RuntimeWarnings other than floating-point errors (which torch
    does not report)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, sorted({str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)})


def agrees(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """func on NeuronArrays gives NumPy's result on ndarrays, with the same RuntimeWarnings."""
    expected, numpy_warnings = numpy_quietly(func, *args, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = func(*(_neuron(a) for a in args), **{k: _neuron(v) for k, v in kwargs.items()})
    assert sorted({str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)}) == numpy_warnings
    check(ours, expected)
    return ours


def test_every_function_is_registered() -> None:
    assert set(REGISTERED) <= set(handled_functions())


# ---------------------------------------------------------------- median, quantile, percentile

@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_median_matches_numpy(data: str, axis: Any, keepdims: bool) -> None:
    agrees(np.median, DATA[data], axis=axis, keepdims=keepdims)
    agrees(np.nanmedian, DATA[data], axis=axis, keepdims=keepdims)


def test_median_dtypes_follow_numpy() -> None:
    assert np.asarray(np.median(from_numpy(I64))).dtype == np.float64
    assert np.asarray(np.median(from_numpy(F32))).dtype == np.float32
    agrees(np.median, F64.astype(np.float16), axis=1)
    agrees(np.median, I64 > 0, axis=0)
    agrees(np.median, I64.astype(np.uint16) + 20, axis=2)


def test_median_of_even_and_odd_lengths_and_infinities() -> None:
    agrees(np.median, np.array([4.0, 1.0, 3.0, 2.0]))
    agrees(np.median, np.array([5.0, 1.0, 3.0]))
    agrees(np.median, np.array([-np.inf, np.inf]))  # NaN, as NumPy's mean of the two
    agrees(np.median, np.array([[1.0, np.nan, 2.0], [3.0, 4.0, 5.0]]), axis=1)


@pytest.mark.parametrize("method", QUANTILE_METHODS)
@pytest.mark.parametrize("data", DATA, ids=str)
def test_quantile_methods_match_numpy(method: str, data: str) -> None:
    a = DATA[data]
    for q in (0.3, [0.0, 0.25, 0.5, 1.0], np.array([0.1, 0.9], dtype=np.float32), 1):
        for axis in (None, 1, (0, 2)):
            agrees(np.quantile, a, q, axis=axis, method=method)
            agrees(np.nanquantile, a, q, axis=axis, method=method, keepdims=True)
    # a 2-d q (NumPy's nan-versions place its axes oddly for reductions over several axes: not compared there)
    agrees(np.quantile, a, np.array([[0.2], [0.7]]), axis=(0, 2), method=method, keepdims=True)
    agrees(np.nanquantile, a, np.array([[0.2], [0.7]]), axis=1, method=method)
    agrees(np.percentile, a, [10, 50.5, 99], axis=2, method=method)
    agrees(np.nanpercentile, a, 37, axis=0, method=method)


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)


@settings(max_examples=40)
@given(data=st.data(), method=st.sampled_from(QUANTILE_METHODS), dtype=st.sampled_from(["float64", "float32",
                                                                                        "int64", "int16"]))
def test_quantile_family_matches_numpy_on_drawn_arrays(data: Any, method: str, dtype: str) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), label="shape")
    elements = finite if dtype.startswith("float") else st.integers(-1000, 1000)
    a = data.draw(hnp.arrays(dtype, shape, elements=elements), label="a")
    q = data.draw(st.one_of(st.floats(0, 1), hnp.arrays("float64", st.integers(0, 3), elements=st.floats(0, 1))),
                  label="q")
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    agrees(np.quantile, a, q, axis=axis, method=method, keepdims=keepdims)
    agrees(np.percentile, a, np.multiply(q, 100), axis=axis, method=method, keepdims=keepdims)
    if dtype.startswith("float"):
        holes = data.draw(hnp.arrays(bool, shape), label="nan places")
        a = np.where(holes, np.nan, a).astype(dtype)
        agrees(np.nanquantile, a, q, axis=axis, method=method, keepdims=keepdims)
        agrees(np.nanmedian, a, axis=axis, keepdims=keepdims)


def test_quantile_with_weights_matches_numpy() -> None:
    weights = rng.random(F64.shape)
    weights[0, 0, :2] = 0  # leading zero weights are never picked
    for a in (F64, I64, WITH_NAN_NO_EMPTY):
        agrees(np.quantile, a, [0.0, 0.3, 1.0], axis=(0, 2), method="inverted_cdf", weights=weights)
        agrees(np.quantile, a, 0.6, axis=1, method="inverted_cdf", weights=weights[0, :, 0])
        agrees(np.nanquantile, a, 0.5, axis=2, method="inverted_cdf", weights=weights)
        agrees(np.percentile, a, 40, method="inverted_cdf", weights=weights)


def test_quantile_takes_q_as_a_neuron_array() -> None:
    q = np.array([0.2, 0.8])
    check(np.quantile(from_numpy(F64), from_numpy(q), axis=0), np.quantile(F64, q, axis=0))
    check(np.quantile(F64, from_numpy(q), axis=0), np.quantile(F64, q, axis=0))  # the data moves to q's device


def test_quantile_writes_out() -> None:
    out = from_numpy(np.zeros((4, 5)))
    result = np.median(from_numpy(F64), axis=0, out=out)
    assert result is out
    np.testing.assert_allclose(to_numpy(out), np.median(F64, axis=0))


def test_all_nan_slices_warn_and_give_nan() -> None:
    for func in (np.nanmedian, lambda a, axis: np.nanquantile(a, [0.5, 0.9], axis=axis),
                 lambda a, axis: np.nanpercentile(a, 50, axis=axis, method="lower")):
        agrees(func, WITH_NAN, axis=1)
    agrees(np.nanmedian, np.array([np.nan, np.nan]))
    agrees(np.median, np.zeros((0, 3)), axis=0)  # Mean of empty slice
    agrees(np.nanmedian, np.zeros((2, 0)), axis=1)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda a: np.quantile(a, 1.5), ValueError, r"numpy.quantile\(\): q must be in the range \[0, 1\]"),
    (lambda a: np.quantile(a, np.nan), ValueError, r"q must be in the range"),
    (lambda a: np.percentile(a, -1), ValueError, r"numpy.percentile\(\): q must be in the range \[0, 100\]"),
    (lambda a: np.quantile(a, 0.5, method="bogus"), ValueError, r"method='bogus' is not one of NumPy's"),
    (lambda a: np.quantile(a, np.zeros((1, 1, 1))), ValueError, r"q must be a scalar, 1-d or 2-d"),
    (lambda a: np.quantile(a, 0.5, weights=np.ones(a.shape)), ValueError, "only method='inverted_cdf'"),
    (lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(5)), TypeError, "need axis="),
    (lambda a: np.quantile(a, 0.5, axis=0, method="inverted_cdf", weights=np.ones(5)), ValueError,
     r"weights of shape \(5,\) do not match"),
    (lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=-np.ones(a.shape)), ValueError,
     "non-negative"),
    (lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=np.zeros(a.shape)), ValueError,
     "sum to zero"),
    (lambda a: np.quantile(a[:, :0], 0.5, axis=1), IndexError, "axes of total length 0"),
    (lambda a: np.quantile(a, 0.5, axis=3), IndexError, "axis 3 is out of bounds"),
    (lambda a: np.quantile(a + 1j, 0.5), TypeError, r"numpy.quantile\(\): complex128 input is not supported"),
    (lambda a: np.nanmedian(a + 1j), TypeError, r"numpy.nanmedian\(\): complex128"),
    (lambda a: np.quantile(a > 0, 0.5), TypeError, r"numpy.quantile\(\): bool input is not supported with "
                                                   "method='linear'"),
    (lambda a: np.quantile(a, 1j), TypeError, "q must be real"),
])
def test_quantile_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(F64[0]))


# ---------------------------------------------------------------- nan-reductions

NAN_REDUCTIONS = [np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanstd, np.nanmax, np.nanmin]


@pytest.mark.parametrize("func", NAN_REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_nan_reductions_match_numpy(func: Callable[..., Any], data: str, axis: Any) -> None:
    agrees(func, DATA[data], axis=axis)
    agrees(func, DATA[data], axis=axis, keepdims=True)


@pytest.mark.parametrize("func", [np.nanargmax, np.nanargmin, np.nancumsum, np.nancumprod],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_nan_arg_and_cumulative_functions_match_numpy(func: Callable[..., Any], data: str, axis: Any) -> None:
    agrees(func, DATA[data] / (8 if func is np.nancumprod and data != "int8" else 1), axis=axis)


def test_nan_reduction_dtypes_follow_numpy() -> None:
    for dtype in (np.int32, np.int8, np.uint8, np.bool_):
        a = (I64 % 3).astype(dtype)
        for func in (np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanmax, np.nancumsum):
            agrees(func, a, axis=0)
    agrees(np.nansum, I64, dtype=np.float32)
    agrees(np.nansum, WITH_NAN_NO_EMPTY, axis=1, initial=10.0)
    agrees(np.nanprod, WITH_NAN_NO_EMPTY, axis=1, initial=2.0)
    agrees(np.nancumsum, WITH_NAN_NO_EMPTY, axis=2, dtype=np.float32)
    agrees(np.nanmax, WITH_NAN, axis=1, initial=0.5)  # all-NaN slices give initial, without a warning
    agrees(np.nanmin, np.zeros((0, 3)), axis=0, initial=1.0)


def test_nan_variance_options_match_numpy() -> None:
    for ddof in (0, 1, 2):
        agrees(np.nanvar, WITH_NAN_NO_EMPTY, axis=1, ddof=ddof)
        agrees(np.nanstd, WITH_NAN_NO_EMPTY, axis=(0, 2), ddof=ddof, keepdims=True)
    agrees(np.nanvar, WITH_NAN_NO_EMPTY, axis=0, correction=1)
    agrees(np.nanvar, I64, axis=0, ddof=1)
    agrees(np.nanvar, np.array([[np.nan, 3.0], [1.0, 2.0]]), axis=1, ddof=1)  # dof <= 0: NaN and a warning


def test_complex_nan_reductions_follow_numpy() -> None:
    c = WITH_NAN_NO_EMPTY + 1j * F64[::-1]
    for func in (np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanstd):
        agrees(func, c, axis=1)
    agrees(np.nancumsum, c, axis=0)


def test_all_nan_slices_of_nan_reductions() -> None:
    for func in (np.nanmax, np.nanmin, np.nanmean, np.nanvar, np.nanstd, np.nansum, np.nanprod):
        agrees(func, WITH_NAN, axis=1)
    for func in (np.nanargmax, np.nanargmin):
        with pytest.raises(ValueError, match=rf"numpy.{func.__name__}\(\): All-NaN slice encountered"):
            func(from_numpy(WITH_NAN), axis=1)
        check(func(from_numpy(WITH_NAN), axis=0), func(WITH_NAN, axis=0))


def test_nanargmax_counts_nan_as_minus_infinity_as_numpy() -> None:
    agrees(np.nanargmax, np.array([np.nan, -np.inf, -np.inf]))
    agrees(np.nanargmin, np.array([np.nan, np.inf]))


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda a: np.nanmax(a[:0]), ValueError, r"numpy.nanmax\(\): the maximum of an empty slice"),
    (lambda a: np.nanmin(a[:0], axis=0), ValueError, r"numpy.nanmin\(\): the minimum of an empty slice"),
    (lambda a: np.nanargmax(a[:0]), ValueError, r"numpy.nanargmax\(\): the argmax of an empty slice"),
    (lambda a: np.nanargmin(a, axis=2), IndexError, "axis 2 is out of bounds"),
    (lambda a: np.nanvar(a, ddof=1, correction=1), ValueError, "give ddof= or correction=, not both"),
    (lambda a: np.nanmean(a, where=a > 0), TypeError, r"numpy.nanmean\(\) on NeuronArray does not support the "
                                                       "argument where="),
])
def test_nan_reduction_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(F64[0]))


# ---------------------------------------------------------------- average, cov, corrcoef

@pytest.mark.parametrize("data", ["float64", "float32", "int64"])
def test_average_matches_numpy(data: str) -> None:
    a, weights = DATA[data], rng.random(F64.shape)
    for axis in (None, 1, (0, 2)):
        for keepdims in (False, True):
            agrees(np.average, a, axis=axis, keepdims=keepdims)
            agrees(np.average, a, axis=axis, weights=weights, keepdims=keepdims)
            agrees(np.average, a, axis=axis, weights=weights, returned=True, keepdims=keepdims)
            agrees(np.average, a, axis=axis, returned=True, keepdims=keepdims)
    agrees(np.average, a, axis=1, weights=weights[0, :, 0], returned=True)
    agrees(np.average, a, axis=(2, 0), weights=weights[:, 0, :].T)
    agrees(np.average, a + 1j, axis=0, weights=weights)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda a: np.average(a, weights=np.ones(4)), TypeError, r"numpy.average\(\): axis must be given"),
    (lambda a: np.average(a, axis=0, weights=np.ones(3)), ValueError, r"weights of shape \(3,\) do not match"),
    (lambda a: np.average(a, axis=1, weights=np.zeros(5)), ZeroDivisionError, "the weights sum to zero"),
])
def test_average_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(F64[0]))


M = rng.standard_normal((3, 6))
Y = rng.standard_normal((2, 6))
FW = np.array([1, 2, 0, 3, 1, 1])
AW = rng.random(6)


@pytest.mark.parametrize("m", [M, M.astype(np.float32), rng.integers(0, 5, (3, 6)), M + 1j * M[::-1], M[0]],
                         ids=["float64", "float32", "int64", "complex128", "1-d"])
def test_cov_and_corrcoef_match_numpy(m: np.ndarray) -> None:
    for options in ({}, {"rowvar": False}, {"bias": True}, {"ddof": 0}, {"fweights": FW}, {"aweights": AW},
                    {"fweights": FW, "aweights": AW, "ddof": 2}, {"dtype": np.complex64}):
        agrees(np.cov, m, **options)
    for options in ({}, {"rowvar": False}, {"dtype": np.complex128}):
        agrees(np.corrcoef, m, **options)
    y = Y if m.ndim == 2 else Y[0]
    agrees(np.cov, m, y)
    agrees(np.corrcoef, m, y)
    agrees(np.cov, m.T if m.ndim == 2 else m, y.T if y.ndim == 2 else y, rowvar=False)


def test_cov_edge_cases_match_numpy() -> None:
    agrees(np.cov, np.array([[1.0, 2.0, 4.0]]))  # one variable: 0-d
    agrees(np.corrcoef, np.array([1.0, 2.0, 4.0]))  # cov / cov
    agrees(np.cov, np.array([[1.0], [2.0]]))  # one observation: degrees of freedom <= 0
    agrees(np.cov, np.zeros((0, 3)))
    agrees(np.cov, M, dtype=np.float32)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda m: np.cov(m, ddof=1.5), ValueError, r"numpy.cov\(\): ddof must be an integer"),
    (lambda m: np.cov(from_numpy(np.zeros((2, 2, 2)))), ValueError, "m has 3 dimensions"),
    (lambda m: np.cov(m, Y[:, :4]), ValueError, "m has 6 observations but y has 4"),
    (lambda m: np.cov(m, fweights=FW + 0.5), TypeError, "fweights must be integers"),
    (lambda m: np.cov(m, fweights=FW[:4]), RuntimeError, "fweights has 4 entries for 6 observations"),
    (lambda m: np.cov(m, aweights=np.ones((2, 6))), RuntimeError, "aweights must be 1-dimensional"),
    (lambda m: np.cov(m, aweights=-AW), ValueError, "aweights cannot be negative"),
    (lambda m: np.cov(m + 1j, dtype=np.float32), TypeError, "would drop its imaginary part"),
    (lambda m: np.corrcoef(m + 1j, dtype=np.float64), TypeError, r"numpy.corrcoef\(\): m is complex128"),
])
def test_cov_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(M))


# ---------------------------------------------------------------- histogram, bincount

SAMPLES = {"float64": rng.standard_normal(500), "float32": rng.standard_normal(500).astype(np.float32),
           "int64": rng.integers(-5, 50, 300), "uint8": rng.integers(0, 200, 300).astype(np.uint8),
           "constant": np.array([1.0, 1.0, 1.0]), "empty": np.array([])}


@pytest.mark.parametrize("data", SAMPLES, ids=str)
def test_histogram_matches_numpy(data: str) -> None:
    a = SAMPLES[data]
    # float32 data give float32 weights, which NumPy sums in float32 (we in float64, then round once)
    weights = np.abs(a) + 0.5
    for options in ({}, {"bins": 7}, {"bins": [-1, 0, 0.5, 2]}, {"bins": np.array([-3, 0, 10, 40])},
                    {"range": (-1, 1)}, {"range": (-1, 1), "bins": 3, "density": True}, {"weights": weights},
                    {"weights": (weights * 3).astype(np.int64)}, {"weights": weights.astype(np.float32), "bins": 4},
                    {"bins": [0, 1, 2], "weights": weights.astype(np.float64), "density": True},
                    {"weights": weights + 1j}):
        if "density" in options and a.size == 0:
            continue  # 0 / 0: NaN, and NumPy's floating-point warning, which torch does not give
        counts, edges = agrees(np.histogram, a, **options)
        assert np.asarray(counts).dtype == np.histogram(a, **options)[0].dtype


def test_histogram_counts_are_int64_and_the_last_bin_is_closed() -> None:
    a = np.array([0.0, 1.0, 2.0, 3.0, 4.0])  # values on every edge of 4 bins over [0, 4]
    counts, edges = np.histogram(from_numpy(a), bins=4)
    assert isinstance(counts, xp.NeuronArray) and isinstance(edges, xp.NeuronArray)
    assert np.asarray(counts).dtype == np.int64
    np.testing.assert_array_equal(np.asarray(counts), [1, 1, 1, 2])
    counts, _ = np.histogram(from_numpy(a), bins=[0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(counts), [2, 3])
    agrees(np.histogram, np.array([1.0, np.nan, 0.5, 7.0]), range=(0, 2))  # NaN and values outside dropped
    agrees(np.histogram, rng.standard_normal((4, 5)), bins=3)  # flattened
    agrees(np.histogram, np.array([0.1, 0.2, 0.30000000000000004, 0.3]), bins=[0.1, 0.2, 0.3])


def test_histogram_of_bool_converts_with_numpy_s_warning() -> None:
    agrees(np.histogram, np.array([True, False, True]))


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda a: np.histogram(from_numpy(np.array([1.0, np.nan]))), ValueError,
     r"numpy.histogram\(\): the data's range \[nan, nan\] is not finite"),
    (lambda a: np.histogram(a, range=(0, np.inf)), ValueError, r"range=\(0, inf\) is not finite"),
    (lambda a: np.histogram(a, range=(2, 1)), ValueError, "has max below min"),
    (lambda a: np.histogram(a, bins=0), ValueError, "bins must be positive, got 0"),
    (lambda a: np.histogram(a, bins=2.5), TypeError, "bins must be an integer or an array of edges"),
    (lambda a: np.histogram(a, bins=[1, 0, 2]), ValueError, "must increase monotonically"),
    (lambda a: np.histogram(a, bins=[[1, 0, 2]]), ValueError, r"bins must be 1-d when an array"),
    (lambda a: np.histogram(a, bins=[1]), ValueError, "at least 2 edges"),
    (lambda a: np.histogram(a, bins="auto"), TypeError, "bins='auto' .* is not supported on NeuronArray"),
    (lambda a: np.histogram(a, weights=np.ones(3)), ValueError, r"weights have shape \(3,\), a has \(4,\)"),
    (lambda a: np.histogram(a + 1j), TypeError, r"numpy.histogram\(\): complex128 input is not supported"),
    (lambda a: np.histogram(a, bins=10, range=(1.0, 1.0 + 1e-15)), ValueError, "too many for the range"),
])
def test_histogram_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(np.array([1.0, 2.0, 3.0, 4.0])))


@pytest.mark.parametrize("x", [np.array([0, 1, 1, 5]), np.array([0, 3], np.uint8), np.array([True, False, True]),
                               np.array([], np.int64), np.array([2, 2], np.int32)], ids=str)
def test_bincount_matches_numpy(x: np.ndarray) -> None:
    agrees(np.bincount, x)
    agrees(np.bincount, x, minlength=8)
    agrees(np.bincount, x, weights=np.arange(x.size, dtype=np.float32) + 0.5)
    agrees(np.bincount, x, weights=np.arange(x.size), minlength=2)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: np.bincount(from_numpy(np.array([0, -1]))), ValueError, r"numpy.bincount\(\): x must have no "
                                                                      "negative elements"),
    (lambda: np.bincount(from_numpy(np.array([0.0, 1.0]))), TypeError, "x must hold integers, got float64"),
    (lambda: np.bincount(from_numpy(np.array([[0, 1]]))), ValueError, r"x must be 1-dimensional, got shape"),
    (lambda: np.bincount(from_numpy(np.array([0, 1])), minlength=-1), ValueError, "minlength must not be "
                                                                                  "negative"),
    (lambda: np.bincount(from_numpy(np.array([0, 1])), minlength=None), TypeError, "minlength=None"),
    (lambda: np.bincount(from_numpy(np.array([0, 1])), weights=np.ones(3)), ValueError,
     r"weights have shape \(3,\), x has \(2,\)"),
    (lambda: np.bincount(from_numpy(np.array([0, 1])), weights=np.ones(2) * 1j), TypeError,
     "weights must be real, got complex128"),
])
def test_bincount_errors_are_clear(call: Callable[[], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------- results stay on the device

def test_results_are_neuron_arrays() -> None:
    a = from_numpy(WITH_NAN_NO_EMPTY)
    results = [np.median(a), np.quantile(a, 0.5), np.percentile(a, [5, 95]), np.nanmedian(a),
               np.nanquantile(a, 0.5), np.nanpercentile(a, 50), np.nansum(a), np.nanmean(a), np.nanstd(a),
               np.nanvar(a), np.nanmax(a), np.nanmin(a), np.nanargmax(a), np.nanargmin(a), np.nanprod(a),
               np.nancumsum(a), np.nancumprod(a), np.average(a), np.cov(a[0]), np.corrcoef(a[0]),
               *np.histogram(a[0, 0]), np.bincount(from_numpy(np.array([1, 2]))), *np.average(a, returned=True)]
    for r in results:
        assert isinstance(r, xp.NeuronArray), type(r)


def test_warnings_point_at_the_caller() -> None:
    with pytest.warns(RuntimeWarning, match=re.escape("All-NaN slice encountered")) as record:
        np.nanmax(from_numpy(WITH_NAN), axis=1)
    assert record[0].filename == __file__
