"""NumPy statistics on NeuronArray (trn_backend.numpy_dispatch.statistics) against NumPy on the same data.

Every function is run on NeuronArrays and on the ndarrays they were made from; results must be NeuronArrays with
NumPy's dtype, shape and values (NaN in the same places), and NumPy's warnings. Inputs are float64, float32 and
integers (small values: NumPy's integer quantiles subtract neighbours in the integer dtype, which can wrap).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.numpy_dispatch.calls import (
    CPLX,
    OTHER_ORDER,
    STATISTICS,
    T3,
    Case,
    I,
    M,
    _apply,
    _neuron,
    _numpy_tree,
    _small,
    agrees,
    array_and_axis,
    run_both,
)
from tests.support import assert_same, assert_same_results, from_numpy
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
    "numpy.average",
    "numpy.bincount",
    "numpy.corrcoef",
    "numpy.cov",
    "numpy.histogram",
    "numpy.median",
    "numpy.nanargmax",
    "numpy.nanargmin",
    "numpy.nancumprod",
    "numpy.nancumsum",
    "numpy.nanmax",
    "numpy.nanmean",
    "numpy.nanmedian",
    "numpy.nanmin",
    "numpy.nanpercentile",
    "numpy.nanprod",
    "numpy.nanquantile",
    "numpy.nanstd",
    "numpy.nansum",
    "numpy.nanvar",
    "numpy.percentile",
    "numpy.quantile",
)


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
@given(
    data=st.data(),
    method=st.sampled_from(QUANTILE_METHODS),
    dtype=st.sampled_from(["float64", "float32", "int64", "int16"]),
)
def test_quantile_family_matches_numpy_on_drawn_arrays(data: Any, method: str, dtype: str) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), label="shape")
    elements = finite if dtype.startswith("float") else st.integers(-1000, 1000)
    a = data.draw(hnp.arrays(dtype, shape, elements=elements), label="a")
    q = data.draw(
        st.one_of(st.floats(0, 1), hnp.arrays("float64", st.integers(0, 3), elements=st.floats(0, 1))), label="q"
    )
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
    assert_same_results(
        np.quantile(from_numpy(F64), from_numpy(q), axis=0), np.quantile(F64, q, axis=0), rtol=STATISTICS, atol=1e-12
    )
    # the data moves to q's device
    assert_same_results(
        np.quantile(F64, from_numpy(q), axis=0), np.quantile(F64, q, axis=0), rtol=STATISTICS, atol=1e-12
    )


def test_quantile_writes_out() -> None:
    out = from_numpy(np.zeros((4, 5)))
    result = np.median(from_numpy(F64), axis=0, out=out)
    assert result is out
    assert_same(out, np.median(F64, axis=0), rtol=1e-7)


def test_all_nan_slices_warn_and_give_nan() -> None:
    for func in (
        np.nanmedian,
        lambda a, axis: np.nanquantile(a, [0.5, 0.9], axis=axis),
        lambda a, axis: np.nanpercentile(a, 50, axis=axis, method="lower"),
    ):
        agrees(func, WITH_NAN, axis=1)
    agrees(np.nanmedian, np.array([np.nan, np.nan]))
    agrees(np.median, np.zeros((0, 3)), axis=0)  # Mean of empty slice
    agrees(np.nanmedian, np.zeros((2, 0)), axis=1)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda a: np.quantile(a, 1.5), ValueError, r"numpy.quantile\(\): q must be in the range \[0, 1\]"),
        (lambda a: np.quantile(a, np.nan), ValueError, r"q must be in the range"),
        (lambda a: np.percentile(a, -1), ValueError, r"numpy.percentile\(\): q must be in the range \[0, 100\]"),
        (lambda a: np.quantile(a, 0.5, method="bogus"), ValueError, r"method='bogus' is not one of NumPy's"),
        (lambda a: np.quantile(a, np.zeros((1, 1, 1))), ValueError, r"q must be a scalar, 1-d or 2-d"),
        (lambda a: np.quantile(a, 0.5, weights=np.ones(a.shape)), ValueError, "only method='inverted_cdf'"),
        (lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(5)), TypeError, "need axis="),
        (
            lambda a: np.quantile(a, 0.5, axis=0, method="inverted_cdf", weights=np.ones(5)),
            ValueError,
            r"weights of shape \(5,\) do not match",
        ),
        (lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=-np.ones(a.shape)), ValueError, "non-negative"),
        (lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=np.zeros(a.shape)), ValueError, "sum to zero"),
        (lambda a: np.quantile(a[:, :0], 0.5, axis=1), IndexError, "axes of total length 0"),
        (lambda a: np.quantile(a, 0.5, axis=3), IndexError, "axis 3 is out of bounds"),
        (lambda a: np.quantile(a + 1j, 0.5), TypeError, r"numpy.quantile\(\): complex128 input is not supported"),
        (lambda a: np.nanmedian(a + 1j), TypeError, r"numpy.nanmedian\(\): complex128"),
        (
            lambda a: np.quantile(a > 0, 0.5),
            TypeError,
            r"numpy.quantile\(\): bool input is not supported with "
            "method='linear'",
        ),
        (lambda a: np.quantile(a, 1j), TypeError, "q must be real"),
    ],
)
def test_quantile_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
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


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda a: np.average(a, weights=np.ones(4)), TypeError, r"numpy.average\(\): axis must be given"),
        (lambda a: np.average(a, axis=0, weights=np.ones(3)), ValueError, r"weights of shape \(3,\) do not match"),
        (lambda a: np.average(a, axis=1, weights=np.zeros(5)), ZeroDivisionError, "the weights sum to zero"),
    ],
)
def test_average_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(F64[0]))


MV = rng.standard_normal((3, 6))
Y = rng.standard_normal((2, 6))
FW = np.array([1, 2, 0, 3, 1, 1])
AW = rng.random(6)


@pytest.mark.parametrize(
    "m",
    [MV, MV.astype(np.float32), rng.integers(0, 5, (3, 6)), MV + 1j * MV[::-1], MV[0]],
    ids=["float64", "float32", "int64", "complex128", "1-d"],
)
def test_cov_and_corrcoef_match_numpy(m: np.ndarray) -> None:
    for options in (
        {},
        {"rowvar": False},
        {"bias": True},
        {"ddof": 0},
        {"fweights": FW},
        {"aweights": AW},
        {"fweights": FW, "aweights": AW, "ddof": 2},
        {"dtype": np.complex64},
    ):
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
    agrees(np.cov, MV, dtype=np.float32)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda m: np.cov(m, ddof=1.5), ValueError, r"numpy.cov\(\): ddof must be an integer"),
        (lambda m: np.cov(from_numpy(np.zeros((2, 2, 2)))), ValueError, "m has 3 dimensions"),
        (lambda m: np.cov(m, Y[:, :4]), ValueError, "m has 6 observations but y has 4"),
        (lambda m: np.cov(m, fweights=FW + 0.5), TypeError, "fweights must be integers"),
        (lambda m: np.cov(m, fweights=FW[:4]), RuntimeError, "fweights has 4 entries for 6 observations"),
        (lambda m: np.cov(m, aweights=np.ones((2, 6))), RuntimeError, "aweights must be 1-dimensional"),
        (lambda m: np.cov(m, aweights=-AW), ValueError, "aweights cannot be negative"),
        (lambda m: np.cov(m + 1j, dtype=np.float32), TypeError, "would drop its imaginary part"),
        (lambda m: np.corrcoef(m + 1j, dtype=np.float64), TypeError, r"numpy.corrcoef\(\): m is complex128"),
    ],
)
def test_cov_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(MV))


# ---------------------------------------------------------------- histogram, bincount

SAMPLES = {
    "float64": rng.standard_normal(500),
    "float32": rng.standard_normal(500).astype(np.float32),
    "int64": rng.integers(-5, 50, 300),
    "uint8": rng.integers(0, 200, 300).astype(np.uint8),
    "constant": np.array([1.0, 1.0, 1.0]),
    "empty": np.array([]),
}


@pytest.mark.parametrize("data", SAMPLES, ids=str)
def test_histogram_matches_numpy(data: str) -> None:
    a = SAMPLES[data]
    # float32 data give float32 weights, which NumPy sums in float32 (we in float64, then round once)
    weights = np.abs(a) + 0.5
    for options in (
        {},
        {"bins": 7},
        {"bins": [-1, 0, 0.5, 2]},
        {"bins": np.array([-3, 0, 10, 40])},
        {"range": (-1, 1)},
        {"range": (-1, 1), "bins": 3, "density": True},
        {"weights": weights},
        {"weights": (weights * 3).astype(np.int64)},
        {"weights": weights.astype(np.float32), "bins": 4},
        {"bins": [0, 1, 2], "weights": weights.astype(np.float64), "density": True},
        {"weights": weights + 1j},
    ):
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


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda a: np.histogram(from_numpy(np.array([1.0, np.nan]))),
            ValueError,
            r"numpy.histogram\(\): the data's range \[nan, nan\] is not finite",
        ),
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
    ],
)
def test_histogram_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(np.array([1.0, 2.0, 3.0, 4.0])))


@pytest.mark.parametrize(
    "x",
    [
        np.array([0, 1, 1, 5]),
        np.array([0, 3], np.uint8),
        np.array([True, False, True]),
        np.array([], np.int64),
        np.array([2, 2], np.int32),
    ],
    ids=str,
)
def test_bincount_matches_numpy(x: np.ndarray) -> None:
    agrees(np.bincount, x)
    agrees(np.bincount, x, minlength=8)
    agrees(np.bincount, x, weights=np.arange(x.size, dtype=np.float32) + 0.5)
    agrees(np.bincount, x, weights=np.arange(x.size), minlength=2)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: np.bincount(from_numpy(np.array([0, -1]))),
            ValueError,
            r"numpy.bincount\(\): x must have no "
            "negative elements",
        ),
        (lambda: np.bincount(from_numpy(np.array([0.0, 1.0]))), TypeError, "x must hold integers, got float64"),
        (lambda: np.bincount(from_numpy(np.array([[0, 1]]))), ValueError, r"x must be 1-dimensional, got shape"),
        (lambda: np.bincount(from_numpy(np.array([0, 1])), minlength=-1), ValueError, "minlength must not be negative"),
        (lambda: np.bincount(from_numpy(np.array([0, 1])), minlength=None), TypeError, "minlength=None"),
        (
            lambda: np.bincount(from_numpy(np.array([0, 1])), weights=np.ones(3)),
            ValueError,
            r"weights have shape \(3,\), x has \(2,\)",
        ),
        (
            lambda: np.bincount(from_numpy(np.array([0, 1])), weights=np.ones(2) * 1j),
            TypeError,
            "weights must be real, got complex128",
        ),
    ],
)
def test_bincount_errors_are_clear(call: Callable[[], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------- results stay on the device


def test_results_are_neuron_arrays() -> None:
    a = from_numpy(WITH_NAN_NO_EMPTY)
    results = [
        np.median(a),
        np.quantile(a, 0.5),
        np.percentile(a, [5, 95]),
        np.nanmedian(a),
        np.nanquantile(a, 0.5),
        np.nanpercentile(a, 50),
        np.nansum(a),
        np.nanmean(a),
        np.nanstd(a),
        np.nanvar(a),
        np.nanmax(a),
        np.nanmin(a),
        np.nanargmax(a),
        np.nanargmin(a),
        np.nanprod(a),
        np.nancumsum(a),
        np.nancumprod(a),
        np.average(a),
        np.cov(a[0]),
        np.corrcoef(a[0]),
        *np.histogram(a[0, 0]),
        np.bincount(from_numpy(np.array([1, 2]))),
        *np.average(a, returned=True),
    ]
    for r in results:
        assert isinstance(r, xp.NeuronArray), type(r)


CASES = [
    Case(np.ptp, (M,), {"axis": 1}),
    Case(np.mean, (M,)),
    Case(np.mean, (M,), {"axis": (0, 1), "keepdims": True}),
    Case(np.mean, (CPLX, 0)),
    Case(np.mean, (I,)),
    Case(np.mean, (I,), {"dtype": np.float64}),
    Case(np.var, (M,), {"ddof": 1}),
    Case(np.var, (M,), {"axis": 0, "correction": 1}),
    Case(np.std, (T3,), {"axis": 1}),
    Case(np.std, (I,)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, rtol=OTHER_ORDER, atol=case.atol)


@settings(max_examples=40)
@given(
    data=array_and_axis(("float32", "float64", "complex128"), elements=_small),
    ddof=st.integers(0, 1),
    func=st.sampled_from([np.mean, np.var, np.std]),
)
def test_moments_match_numpy(data, ddof, func) -> None:
    a, axis = data
    kwargs = {"axis": axis} if func is np.mean else {"axis": axis, "ddof": ddof}
    ours, theirs = run_both(func, a, **kwargs)
    assert_same_results(ours, theirs, atol=1e-5, rtol=OTHER_ORDER)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_median_of_an_even_count_divides_as_numpy():
    """NumPy's mean divides the complex sum as a complex number: an infinite part makes the other one NaN."""
    data = np.array([-1 + 1j, -3 - 4j, 1 + 0j, complex(0, np.inf)])
    np.testing.assert_array_equal(np.asarray(np.median(xp.asarray(data))), np.median(data))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
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
