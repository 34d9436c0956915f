"""sort and argsort against NumPy's stable sort: every real dtype and bool, NaN, ties, descending, 0-d."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import REAL_NAMES, arrays, assert_same, from_numpy, shapes

ORDERED_NAMES = ("bool",) + REAL_NAMES


def _descending_argsort(a: np.ndarray, axis: int) -> np.ndarray:
    """Stable descending order: ties keep their original order (sort the reversed array, map indices back)."""
    rev = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return a.shape[axis] - 1 - rev


@st.composite
def array_and_axis(draw, dtype_name):
    a = draw(arrays(dtype_name, shapes(min_dims=1)))
    return a, draw(st.integers(-a.ndim, a.ndim - 1))


@pytest.mark.parametrize("dtype_name", ORDERED_NAMES)
@settings(max_examples=15)
@given(data=st.data())
def test_sort_and_argsort_match_numpy(dtype_name, data):
    a, axis = data.draw(array_and_axis(dtype_name))
    descending = data.draw(st.booleans())
    x = from_numpy(a)
    idx = _descending_argsort(a, axis) if descending else np.argsort(a, axis=axis, kind="stable")
    assert_same(xp.argsort(x, axis=axis, descending=descending), idx.astype(np.int64))
    assert_same(xp.sort(x, axis=axis, descending=descending), np.take_along_axis(a, idx, axis))


def test_ties_stay_in_order_when_descending():
    a = np.array([1, 0, 1, 0, 1, 2, 2], dtype=np.int16)
    assert_same(xp.argsort(from_numpy(a), descending=True), np.array([5, 6, 0, 2, 4, 1, 3]))


def test_nan_last_ascending_first_descending():
    a = np.array([3.0, np.nan, 1.0, np.nan, -0.0, 0.0], dtype=np.float32)
    assert_same(xp.argsort(from_numpy(a)), np.array([4, 5, 2, 0, 1, 3]))
    assert_same(xp.argsort(from_numpy(a), descending=True), np.array([1, 3, 0, 2, 4, 5]))


@pytest.mark.parametrize("dtype_name", ["uint16", "uint32", "uint64"])
def test_unsigned_extremes(dtype_name):
    top = np.iinfo(dtype_name).max
    a = np.array([top, 0, top // 2 + 1, 5, top - 1], dtype=dtype_name)
    assert_same(xp.sort(from_numpy(a)), np.sort(a))
    assert_same(xp.argsort(from_numpy(a), descending=True), np.array([0, 4, 2, 3, 1]))


def test_zero_dim_and_empty():
    x = from_numpy(np.array(2.5))
    assert_same(xp.sort(x), np.array(2.5))
    assert_same(xp.argsort(x), np.array(0))
    assert_same(xp.sort(from_numpy(np.zeros((2, 0), np.uint64)), axis=1), np.zeros((2, 0), np.uint64))


def test_stable_false_is_accepted():
    assert_same(xp.sort(from_numpy(np.array([2, 1], np.int8)), stable=False), np.array([1, 2], np.int8))


def test_errors():
    with pytest.raises(TypeError, match=r"sort\(\) needs x of a real-valued or boolean dtype, got complex64"):
        xp.sort(from_numpy(np.ones(3, np.complex64)))
    with pytest.raises(IndexError, match=r"argsort\(\): axis 2 is out of bounds"):
        xp.argsort(from_numpy(np.ones((2, 2))), axis=2)
    with pytest.raises(IndexError, match="out of bounds"):
        xp.sort(from_numpy(np.array(1.0)), axis=1)
    with pytest.raises(TypeError, match=r"sort\(\) expects x to be a NeuronArray"):
        xp.sort(np.ones(3))
