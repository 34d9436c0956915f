"""all, any and diff against NumPy: every dtype, axes, keepdims, empties, prepend/append, uint wrapping."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, arrays, assert_same, from_numpy, shapes


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@settings(max_examples=12)
@given(data=st.data())
def test_all_any_match_numpy(dtype_name, data):
    a = data.draw(arrays(dtype_name, shapes(max_side=4)))  # NaN, infinities and zeros included
    axis = data.draw(st.none() | st.lists(st.integers(0, a.ndim - 1), unique=True).map(tuple) if a.ndim else st.none())
    keepdims = data.draw(st.booleans())
    for f, ref in ((xp.all, np.all), (xp.any, np.any)):
        expected = np.asarray(ref(a, axis=axis, keepdims=keepdims))
        assert_same(f(from_numpy(a), axis=axis, keepdims=keepdims), expected)


def test_all_any_special_values():
    assert_same(xp.all(from_numpy(np.array([np.nan, -np.inf, 1j]))), np.array(True))
    assert_same(xp.any(from_numpy(np.array([0.0, -0.0, 0j]))), np.array(False))
    assert_same(xp.all(from_numpy(np.zeros((0, 2), np.uint64)), axis=0), np.array([True, True]))
    assert_same(xp.any(from_numpy(np.array([2**63], np.uint64))), np.array(True))
    with pytest.raises(IndexError, match=r"all\(\): axis -3 is out of bounds"):
        xp.all(from_numpy(np.ones((2, 2))), axis=-3)


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@settings(max_examples=12)
@given(data=st.data())
def test_diff_matches_numpy(dtype_name, data):
    a = data.draw(arrays(dtype_name, shapes(min_dims=1, max_side=5)))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = data.draw(st.integers(1, 3))
    edges = {}
    for arg in ("prepend", "append"):
        if data.draw(st.booleans()):
            shape = list(a.shape)
            shape[axis] = data.draw(st.integers(0, 2))
            edges[arg] = data.draw(arrays(dtype_name, tuple(shape)))
    with np.errstate(all="ignore"):
        expected = np.diff(a, axis=axis, n=n, **edges)
    got = xp.diff(from_numpy(a), axis=axis, n=n, **{k: from_numpy(v) for k, v in edges.items()})
    assert_same(got, expected, rtol=1e-6)


def test_diff_unsigned_wraps_and_bool_is_xor():
    assert_same(xp.diff(from_numpy(np.array([1, 0, 5], np.uint16))), np.array([65535, 5], np.uint16))
    assert_same(xp.diff(from_numpy(np.array([0, 2**64 - 1], np.uint64))), np.array([2**64 - 1], np.uint64))
    assert_same(xp.diff(from_numpy(np.array([True, False, False, True]))), np.array([True, False, True]))


def test_diff_n_zero_prepend_and_promotion():
    x = from_numpy(np.array([1, 4, 9], np.int16))
    # n=0 still joins prepend/append: the result has M + N1 + N2 - n elements along the axis
    zero = from_numpy(np.array([0], np.int16))
    assert_same(xp.diff(x, n=0, prepend=zero), np.array([0, 1, 4, 9], np.int16))
    assert_same(xp.diff(x, n=5), np.zeros(0, np.int16))
    assert_same(xp.diff(x, append=from_numpy(np.array([16.5]))), np.array([3.0, 5.0, 7.5]))


def test_diff_errors():
    x = from_numpy(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"diff\(\): x must have at least one dimension"):
        xp.diff(from_numpy(np.array(1.0)))
    with pytest.raises(ValueError, match=r"diff\(\): n must be non-negative, got -1"):
        xp.diff(x, n=-1)
    with pytest.raises(TypeError, match=r"diff\(\): n must be an int, got float"):
        xp.diff(x, n=1.0)
    with pytest.raises(ValueError, match=r"prepend must have x's shape \(2, 3\) except along axis 1"):
        xp.diff(x, prepend=from_numpy(np.ones((3, 1))))
    with pytest.raises(ValueError, match=r"append must have x's shape"):
        xp.diff(x, append=from_numpy(np.ones(3)))
    with pytest.raises(TypeError, match=r"diff\(\) expects append to be a NeuronArray"):
        xp.diff(x, append=np.ones((2, 1)))
    with pytest.raises(IndexError, match=r"diff\(\): axis 2 is out of bounds"):
        xp.diff(x, axis=2)
