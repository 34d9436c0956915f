"""NumPy's nan-functions on NeuronArray against NumPy on the same data, with NumPy's warnings: the nan-reductions of
trn_backend/numpy_dispatch/reductions.py (nansum, nanprod, nanmax, nanmin, nancumsum, nancumprod), sorting.py
(nanargmax, nanargmin) and statistics.py (nanmean, nanvar, nanstd), over one table of data with NaNs and all-NaN
slices (the data of test_statistics.py, drawn again from the same seed). nanmedian, nanquantile and nanpercentile:
test_statistics.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.numpy_dispatch.calls import STATISTICS, agrees
from tests.support import assert_same_results, from_numpy

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


NAN_REDUCTIONS = [np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanstd, np.nanmax, np.nanmin]


@pytest.mark.parametrize("func", NAN_REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_nan_reductions_match_numpy(func: Callable[..., Any], data: str, axis: Any) -> None:
    agrees(func, DATA[data], axis=axis)
    agrees(func, DATA[data], axis=axis, keepdims=True)


@pytest.mark.parametrize("func", [np.nanargmax, np.nanargmin, np.nancumsum, np.nancumprod], ids=lambda f: f.__name__)
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
        assert_same_results(func(from_numpy(WITH_NAN), axis=0), func(WITH_NAN, axis=0), rtol=STATISTICS, atol=1e-12)


def test_nanargmax_counts_nan_as_minus_infinity_as_numpy() -> None:
    agrees(np.nanargmax, np.array([np.nan, -np.inf, -np.inf]))
    agrees(np.nanargmin, np.array([np.nan, np.inf]))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda a: np.nanmax(a[:0]), ValueError, r"numpy.nanmax\(\): the maximum of an empty slice"),
        (lambda a: np.nanmin(a[:0], axis=0), ValueError, r"numpy.nanmin\(\): the minimum of an empty slice"),
        (lambda a: np.nanargmax(a[:0]), ValueError, r"numpy.nanargmax\(\): the argmax of an empty slice"),
        (lambda a: np.nanargmin(a, axis=2), IndexError, "axis 2 is out of bounds"),
        (lambda a: np.nanvar(a, ddof=1, correction=1), ValueError, "give ddof= or correction=, not both"),
        (
            lambda a: np.nanmean(a, where=a > 0),
            TypeError,
            r"numpy.nanmean\(\) on NeuronArray does not support the "
            "argument where=",
        ),
    ],
)
def test_nan_reduction_errors_are_clear(call: Callable[[Any], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(from_numpy(F64[0]))


def test_warnings_point_at_the_caller() -> None:
    with pytest.warns(RuntimeWarning, match=re.escape("All-NaN slice encountered")) as record:
        np.nanmax(from_numpy(WITH_NAN), axis=1)
    assert record[0].filename == __file__
