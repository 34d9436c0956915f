"""Casting edges as NumPy 2 casts: fills and conversions of floats into integer dtypes, exact integer matrix
powers, and np.einsum's casting= rule for out=.

Where NumPy raises (a Python int beyond the dtype, a Python float that is NaN or whose integer part does not fit),
the same exception type is raised. Where NumPy only warns and stores a platform-dependent value (NaN, infinities
and out-of-range values in a float *array* cast to an integer dtype, or a float fill of np.full_like), this
library raises too, as it never returns a result it cannot vouch for: ValueError for NaN, OverflowError for the
rest, naming the operation, the dtype and the value.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import INT_NAMES, assert_same, from_numpy, to_numpy


def _numpy_outcome(fn):
    """NumPy's result, or the exception type it raises; None where NumPy only warns of an invalid value (an
    undefined result). Dropping an imaginary part (ComplexWarning) is defined: not an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        try:
            return fn()
        except RuntimeWarning:
            return None
        except (ValueError, OverflowError, TypeError) as e:
            return type(e)


def _int_part_fits(value: float, dtype: str) -> bool:
    """The independent oracle of a defined float -> integer cast: finite, integer part in the dtype's range."""
    info = np.iinfo(dtype)
    return math.isfinite(value) and info.min <= math.trunc(value) <= info.max


FLOATS = st.one_of(
    st.floats(-1e3, 1e3),
    st.floats(allow_subnormal=False),
    st.sampled_from(
        [
            0.5,
            -0.5,
            -1.5,
            127.9,
            128.0,
            -128.9,
            -129.0,
            255.5,
            256.0,
            2.0**31,
            2.0**63,
            -(2.0**63),
            2.0**64,
            math.nan,
            math.inf,
            -math.inf,
        ]
    ),
)
INTS = st.one_of(st.integers(-300, 300), st.integers(-(2**65), 2**65))


# ---------------------------------------------------------------- np.full_like


@given(dtype=st.sampled_from(INT_NAMES + ("bool", "float32", "float64")), fill=st.one_of(INTS, FLOATS))
def test_np_full_like_fill_casts_as_numpy(dtype, fill):
    like = np.zeros(3, dtype=dtype)
    expected = _numpy_outcome(lambda: np.full_like(like, fill))
    if isinstance(fill, float) and np.dtype(dtype).kind in "iu" and not _int_part_fits(fill, dtype):
        # NumPy stores an undefined value here (or, beyond int64, raises): raised here
        error = ValueError if math.isnan(fill) else OverflowError
        with pytest.raises(error, match=f"numpy.full_like.*{dtype}"):
            np.full_like(from_numpy(like), fill)
        return
    if isinstance(expected, type):
        with pytest.raises(expected):
            np.full_like(from_numpy(like), fill)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a float overflowing to inf in float32, as in NumPy
        assert_same(np.full_like(from_numpy(like), fill), expected)


@pytest.mark.parametrize(
    ("dtype", "fill", "error"),
    [
        ("int8", 300, OverflowError),
        ("uint8", -1, OverflowError),
        ("int64", 2**64, OverflowError),
        ("int8", 300.0, OverflowError),
        ("uint8", -1.5, OverflowError),
        ("int32", math.nan, ValueError),
        ("int16", math.inf, OverflowError),
    ],
)
def test_np_full_like_refuses_values_beyond_the_dtype(dtype, fill, error):
    with pytest.raises(error, match=f"full_like.*{dtype}"):
        np.full_like(xp.zeros(2, dtype=dtype), fill)


def test_np_full_like_truncates_floats_and_wraps_numpy_integers_as_numpy():
    assert_same(np.full_like(xp.zeros(2, dtype=xp.int8), -2.7), np.full(2, -2, dtype=np.int8))
    # a NumPy integer is a strong 0-d array: cast as NumPy casts it (300 wraps to 44 in int8)
    assert_same(
        np.full_like(xp.zeros(2, dtype=xp.int8), np.int64(300)), np.full_like(np.zeros(2, np.int8), np.int64(300))
    )


# ---------------------------------------------------------------- asarray of floats into integer dtypes


def _asarray_case(values: list[float], dtype: str, route: str):
    if route == "scalar":
        return values[0]
    if route == "list":
        return values
    return np.asarray(values, dtype=np.float64 if route == "float64 array" else np.float32)


@given(
    dtype=st.sampled_from(INT_NAMES),
    values=st.lists(FLOATS, min_size=1, max_size=4),
    route=st.sampled_from(["scalar", "list", "float64 array", "float32 array"]),
)
def test_asarray_floats_into_integers(dtype, values, route):
    obj = _asarray_case(values, dtype, route)
    read = [float(v) for v in np.asarray(obj, dtype=np.float64).reshape(-1)]  # what the source holds
    if all(_int_part_fits(v, dtype) for v in read):
        expected = np.asarray([math.trunc(v) for v in read], dtype=dtype).reshape(np.shape(obj))
        assert_same(xp.asarray(obj, dtype=dtype), expected)
        return
    error = ValueError if any(math.isnan(v) for v in read) else OverflowError
    if route in ("scalar", "list"):
        assert _numpy_outcome(lambda: np.asarray(obj, dtype=dtype)) is error  # NumPy raises the same
    with pytest.raises(error, match=f"asarray.*{dtype}"):
        xp.asarray(obj, dtype=dtype)


@pytest.mark.parametrize(
    ("obj", "dtype", "error", "match"),
    [
        (math.nan, "int64", ValueError, r"asarray\(\): cannot convert float NaN to int64"),
        ([1.0, math.nan], "int32", ValueError, "NaN to int32"),
        (np.array([np.nan]), "int64", ValueError, "NaN to int64"),  # NumPy: RuntimeWarning and garbage
        (np.array([300.0]), "int8", OverflowError, r"300 is out of range for int8 \[-128, 127\]"),  # NumPy: 44
        (math.inf, "int8", OverflowError, "cannot convert float inf to int8"),
        ([-1.5], "uint8", OverflowError, "-1 is out of range for uint8"),
        (2.0**64, "uint64", OverflowError, "out of range for uint64"),
    ],
)
def test_asarray_float_errors(obj, dtype, error, match):
    with pytest.raises(error, match=match):
        xp.asarray(obj, dtype=dtype)


def test_asarray_float_edges_that_fit():
    assert_same(xp.asarray(2.0**63, dtype=xp.uint64), np.asarray(2**63, dtype=np.uint64))
    assert_same(xp.asarray(-(2.0**63), dtype=xp.int64), np.asarray(-(2**63), dtype=np.int64))
    assert_same(xp.asarray(np.array([-0.5, 255.9]), dtype=xp.uint8), np.array([0, 255], dtype=np.uint8))


# ---------------------------------------------------------------- matrix_power of integer matrices


def _exact_power(rows: list[list[int]], n: int, dtype: str) -> np.ndarray:
    """Python-int matrix power, reduced to the dtype's range as its modular arithmetic does."""
    size = len(rows)
    result = [[int(i == j) for j in range(size)] for i in range(size)]
    for _ in range(n):
        result = [[sum(result[i][k] * rows[k][j] for k in range(size)) for j in range(size)] for i in range(size)]
    info = np.iinfo(dtype)
    span = 2**info.bits
    return np.array([[(v - int(info.min)) % span + int(info.min) for v in row] for row in result], dtype=dtype)


@given(
    dtype=st.sampled_from(INT_NAMES),
    size=st.integers(1, 3),
    n=st.integers(0, 9),
    data=st.data(),
    numpy_route=st.booleans(),
)
def test_integer_matrix_power_is_exact(dtype, size, n, data, numpy_route):
    info = np.iinfo(dtype)
    rows = data.draw(
        st.lists(
            st.lists(st.integers(int(info.min), int(info.max)), min_size=size, max_size=size),
            min_size=size,
            max_size=size,
        )
    )
    x = xp.asarray(np.array(rows, dtype=dtype))
    got = np.linalg.matrix_power(x, n) if numpy_route else xp.linalg.matrix_power(x, n)
    assert_same(got, _exact_power(rows, n, dtype))


def test_integer_matrix_power_beyond_float64_digits():
    a = np.array([[2**40 + 1, 3], [5, 2**35 + 7]], dtype=np.int64)
    assert_same(xp.linalg.matrix_power(xp.asarray(a), 2), _exact_power(a.tolist(), 2, "int64"))


def test_negative_power_of_an_integer_matrix_inverts_in_float_as_numpy():
    a = np.array([[2, 1], [1, 1]], dtype=np.int32)
    expected = np.linalg.matrix_power(a, -2)  # NumPy 2: inv first, float64
    assert_same(xp.linalg.matrix_power(xp.asarray(a), -2), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="singular"):  # NumPy: LinAlgError, a ValueError
        xp.linalg.matrix_power(xp.asarray(np.ones((2, 2), dtype=np.int64)), -1)


# ---------------------------------------------------------------- np.einsum's casting= for out=

CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
EINSUM_DTYPES = ("int32", "int64", "float32", "float64", "complex64", "complex128")


@given(
    src=st.sampled_from(EINSUM_DTYPES), dst=st.sampled_from(EINSUM_DTYPES), casting=st.sampled_from(CASTINGS + (None,))
)
def test_einsum_out_follows_numpy_casting(src, dst, casting):
    a = np.arange(4).reshape(2, 2).astype(src)
    kwargs = {} if casting is None else {"casting": casting}
    out_np = np.zeros((2, 2), dtype=dst)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        warnings.simplefilter("ignore", UserWarning)  # torch's own warning for the same cast
        expected = _numpy_outcome(lambda: np.einsum("ij,jk->ik", a, a, out=out_np, **kwargs))
        out = xp.zeros((2, 2), dtype=dst)
        if isinstance(expected, type):
            with pytest.raises(expected, match="numpy.einsum"):
                np.einsum("ij,jk->ik", from_numpy(a), from_numpy(a), out=out, **kwargs)
            assert not to_numpy(out).any()  # nothing written
            return
        result = np.einsum("ij,jk->ik", from_numpy(a), from_numpy(a), out=out, **kwargs)
    assert result is out
    assert_same(out, out_np)


def test_einsum_out_error_says_what_to_pass():
    a = xp.ones((2, 2))
    with pytest.raises(TypeError, match=r"float64 result into out of dtype float32.*safe.*casting='same_kind'"):
        np.einsum("ij,jk->ik", a, a, out=xp.zeros((2, 2), dtype=xp.float32))
    out = xp.zeros((2, 2), dtype=xp.float32)
    np.einsum("ij,jk->ik", a, a, out=out, casting="same_kind")
    assert_same(out, np.full((2, 2), 2.0, dtype=np.float32))
