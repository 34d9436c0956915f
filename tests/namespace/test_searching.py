"""argmax, argmin, count_nonzero, nonzero, searchsorted and where against NumPy, all dtypes, NaN, uints."""

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, FLOAT_NAMES, INT_NAMES, REAL_NAMES, arrays, assert_same, from_numpy, shapes

ORDERED_NAMES = ("bool",) + REAL_NAMES


def _axis_or_none(ndim):
    return st.none() | st.integers(-ndim, ndim - 1) if ndim else st.none()


# ---------------------------------------------------------------- argmax / argmin


@pytest.mark.parametrize("dtype_name", ORDERED_NAMES)
@settings(max_examples=15)
@given(data=st.data())
def test_argmax_argmin_match_numpy(dtype_name, data):
    a = data.draw(arrays(dtype_name, shapes(max_side=5)))
    axis = data.draw(_axis_or_none(a.ndim))
    keepdims = data.draw(st.booleans())
    assume(a.size > 0 if axis is None else a.shape[axis] > 0)
    for f, ref in ((xp.argmax, np.argmax), (xp.argmin, np.argmin)):
        assert_same(
            f(from_numpy(a), axis=axis, keepdims=keepdims),
            np.asarray(ref(a, axis=axis, keepdims=keepdims), dtype=np.int64),
        )


def test_first_nan_wins_in_long_arrays():
    # torch's vectorized argmax skips NaN in long arrays; NumPy returns the first NaN
    a = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    a[[333, 500]] = np.nan
    a[250] = 100.0
    assert_same(xp.argmax(from_numpy(a)), np.array(333))
    assert_same(xp.argmin(from_numpy(a)), np.array(333))


def test_argmax_uint64_extremes_and_ties():
    a = np.array([5, 2**64 - 1, 2**63, 2**64 - 1, 0, 0], dtype=np.uint64)
    assert_same(xp.argmax(from_numpy(a)), np.array(1))
    assert_same(xp.argmin(from_numpy(a)), np.array(4))


def test_argmax_errors():
    with pytest.raises(ValueError, match=r"argmax\(\): attempt to search an empty axis"):
        xp.argmax(from_numpy(np.zeros((0, 3))))
    with pytest.raises(ValueError, match=r"argmin\(\): attempt to search an empty axis.*axis=0"):
        xp.argmin(from_numpy(np.zeros((0, 3))), axis=0)
    assert_same(xp.argmin(from_numpy(np.zeros((0, 3))), axis=1), np.zeros(0, np.int64))
    with pytest.raises(TypeError, match=r"argmax\(\) needs x of a real-valued or boolean dtype, got complex"):
        xp.argmax(from_numpy(np.ones(2, np.complex128)))
    with pytest.raises(IndexError, match="axis 1 is out of bounds"):
        xp.argmax(from_numpy(np.ones(2)), axis=1)


# ---------------------------------------------------------------- count_nonzero / nonzero


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@settings(max_examples=10)
@given(data=st.data())
def test_count_nonzero_and_nonzero_match_numpy(dtype_name, data):
    a = data.draw(
        arrays(
            dtype_name, shapes(), elements=st.integers(0, 2).map(bool) if dtype_name == "bool" else st.integers(0, 2)
        )
    )
    axis = data.draw(st.none() | st.lists(st.integers(0, a.ndim - 1), unique=True).map(tuple) if a.ndim else st.none())
    keepdims = data.draw(st.booleans())
    assert_same(
        xp.count_nonzero(from_numpy(a), axis=axis, keepdims=keepdims),
        np.asarray(np.count_nonzero(a, axis=axis, keepdims=keepdims), dtype=np.int64),
    )
    if a.ndim:
        got = xp.nonzero(from_numpy(a))
        assert isinstance(got, tuple) and len(got) == a.ndim
        for g, e in zip(got, np.nonzero(a), strict=True):
            assert_same(g, e.astype(np.int64))


def test_nonzero_special_values():
    a = np.array([0.0, -0.0, np.nan, np.inf, 1j, 0j], dtype=np.complex64)
    assert_same(xp.nonzero(from_numpy(a))[0], np.array([2, 3, 4]))
    assert_same(xp.count_nonzero(from_numpy(np.array([2**63], np.uint64))), np.array(1))
    with pytest.raises(ValueError, match=r"nonzero\(\): x must have at least one dimension"):
        xp.nonzero(from_numpy(np.array(1)))


# ---------------------------------------------------------------- searchsorted


@pytest.mark.parametrize("dtype_name", ORDERED_NAMES)
@settings(max_examples=15)
@given(data=st.data())
def test_searchsorted_matches_numpy(dtype_name, data):
    x1 = np.sort(data.draw(arrays(dtype_name, st.integers(0, 8))), kind="stable")
    x2 = data.draw(arrays(dtype_name, shapes(max_dims=2)))
    side = data.draw(st.sampled_from(["left", "right"]))
    assert_same(
        xp.searchsorted(from_numpy(x1), from_numpy(x2), side=side), np.searchsorted(x1, x2, side=side).astype(np.int64)
    )


@pytest.mark.parametrize("dtype_name", ["int8", "uint64", "float32"])
@settings(max_examples=15)
@given(data=st.data())
def test_searchsorted_with_sorter(dtype_name, data):
    x1 = data.draw(arrays(dtype_name, st.integers(0, 8)))
    sorter = np.argsort(x1, kind="stable")
    x2 = data.draw(arrays(dtype_name, st.integers(0, 4)))
    for side in ("left", "right"):
        assert_same(
            xp.searchsorted(from_numpy(x1), from_numpy(x2), side=side, sorter=from_numpy(sorter)),
            np.searchsorted(x1, x2, side=side, sorter=sorter).astype(np.int64),
        )


def test_searchsorted_nan_and_scalars():
    x1 = np.array([1.0, 2.0, np.inf, np.nan, np.nan])
    for side in ("left", "right"):
        for v in (np.nan, np.inf, 2.0, -1.0):
            assert_same(
                xp.searchsorted(from_numpy(x1), v, side=side),
                np.asarray(np.searchsorted(x1, v, side=side), dtype=np.int64),
            )
    # a Python int against int8 stays int8; a float promotes to the default float
    x = from_numpy(np.array([1, 3, 5], np.int8))
    assert_same(xp.searchsorted(x, 3, side="right"), np.array(2))
    assert_same(xp.searchsorted(x, 2.5), np.array(1))
    # mixed dtypes promote (uint8 with int16 compare as int16)
    small, wide = from_numpy(np.array([0, 200], np.uint8)), from_numpy(np.array([-1, 100], np.int16))
    assert_same(xp.searchsorted(small, wide), np.array([0, 1]))


@pytest.mark.parametrize("dtype_name", INT_NAMES)
def test_searchsorted_python_ints_beyond_the_dtype_go_first_or_last(dtype_name):
    lo, hi = int(np.iinfo(dtype_name).min), int(np.iinfo(dtype_name).max)
    x1 = np.array([lo, lo, 0, hi, hi], dtype=dtype_name)
    for v in (lo - 2**65, lo - 1, lo, hi, hi + 1, hi + 2**65):
        # exactly: left counts the elements below v, right those not above it (NumPy agrees except that it
        # compares int64 with 2**63 in float64, where the two are equal)
        left, right = sum(int(e) < v for e in x1), sum(int(e) <= v for e in x1)
        assert_same(xp.searchsorted(from_numpy(x1), v), np.array(left))
        assert_same(xp.searchsorted(from_numpy(x1), v, side="right"), np.array(right))


def test_searchsorted_errors():
    x = from_numpy(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"searchsorted\(\): x1 must be 1-dimensional, got shape \(1, 2\)"):
        xp.searchsorted(from_numpy(np.ones((1, 2))), x)
    with pytest.raises(ValueError, match="side must be 'left' or 'right', got 'middle'"):
        xp.searchsorted(x, x, side="middle")
    with pytest.raises(TypeError, match="sorter must have an integer dtype, got float64"):
        xp.searchsorted(x, x, sorter=x)
    with pytest.raises(ValueError, match=r"sorter must have x1's shape \(2,\), got \(3,\)"):
        xp.searchsorted(x, x, sorter=from_numpy(np.arange(3)))
    with pytest.raises(TypeError, match="needs x1 and x2 of a real-valued or boolean dtype, got complex64"):
        xp.searchsorted(from_numpy(np.ones(2, np.complex64)), 1.0)


# ---------------------------------------------------------------- where

PAIRS = [
    ("int8", "int16"),
    ("uint8", "int8"),
    ("uint16", "uint64"),
    ("uint32", "int64"),
    ("float32", "float64"),
    ("bool", "bool"),
    ("float32", "complex64"),
    ("int64", "float32"),
    ("uint64", "uint64"),
]
# The standard leaves mixed kinds to the implementation; an integer with a float gives that float.
EXPECTED = {("int64", "float32"): np.float32}


@pytest.mark.parametrize("pair", PAIRS)
@settings(max_examples=10)
@given(data=st.data())
def test_where_matches_numpy(pair, data):
    shape = data.draw(shapes(max_dims=2))
    c = data.draw(arrays("bool", shape))
    a = data.draw(arrays(pair[0], data.draw(st.sampled_from([shape, shape[1:], ()]))))
    b = data.draw(arrays(pair[1], data.draw(st.sampled_from([shape, shape[-1:], ()]))))
    expected = np.where(c, a, b).astype(EXPECTED.get(pair, np.result_type(a, b)))
    assert_same(xp.where(from_numpy(c), from_numpy(a), from_numpy(b)), expected)


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_where_with_python_scalars(dtype_name):
    c = np.array([True, False, True])
    a = np.array([1, 0, 1]).astype(dtype_name)
    x, cond = from_numpy(a), from_numpy(c)
    one, zero = (True, False) if dtype_name == "bool" else (1, 0)
    assert_same(xp.where(cond, x, one), np.where(c, a, one).astype(a.dtype))
    assert_same(xp.where(cond, zero, x), np.where(c, zero, a).astype(a.dtype))
    if dtype_name in FLOAT_NAMES:
        assert_same(xp.where(cond, 0.5, x), np.where(c, 0.5, a).astype(a.dtype))


def test_where_uint64_keeps_bits():
    big = np.array([2**64 - 1, 2**63], np.uint64)
    got = xp.where(from_numpy(np.array([True, False])), from_numpy(big), 7)
    assert_same(got, np.array([2**64 - 1, 7], np.uint64))


def test_where_errors():
    x = from_numpy(np.ones(3))
    with pytest.raises(TypeError, match=r"where\(\): condition must have a boolean dtype, got float64"):
        xp.where(x, x, x)
    with pytest.raises(ValueError, match=r"where\(\): shapes \(2,\) and \(3,\) cannot be broadcast together"):
        xp.where(from_numpy(np.ones(2, bool)), x, x)
    with pytest.raises(ValueError, match=r"where\(\): shapes \(3,\) and \(2,\) cannot be broadcast together"):
        xp.where(from_numpy(np.ones(3, bool)), x, from_numpy(np.ones(2)))
    # the standard (2024.12 on) allows a Python scalar for x1 or x2, but asks for at least one array
    for x1, x2 in ((1, 2), (1, 2.0), (True, 0j)):
        with pytest.raises(TypeError, match=r"where\(\): x1 and x2 are both scalars .* at least one of them"):
            xp.where(from_numpy(np.ones(2, bool)), x1, x2)
    with pytest.raises(TypeError, match=r"where\(\) expects condition to be a NeuronArray"):
        xp.where(np.ones(3, bool), x, x)
    with pytest.raises(ValueError, match=r"where\(\): condition, x1 and x2 are on different devices"):
        xp.where(xp.NeuronArray(torch.ones(3, dtype=torch.bool, device="meta")), x, x)
