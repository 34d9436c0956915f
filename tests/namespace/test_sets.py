"""unique_* and isin against NumPy's set functions: NaNs distinct, signed zeros merged, uint64 exact."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, INT_NAMES, arrays, assert_same, from_numpy, shapes


def _small_values(dtype_name):
    """Few distinct values, so duplicates are common (signed zeros, NaN and extremes included)."""
    dtype = np.dtype(dtype_name)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.sampled_from([0, 1, 2, int(info.min), int(info.max)])
    reals = st.sampled_from([0.0, -0.0, 1.0, -2.5, np.inf, np.nan])
    if dtype.kind == "f":
        return reals
    return st.builds(complex, reals.filter(lambda v: v == v), reals.filter(lambda v: v == v))


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@settings(max_examples=15)
@given(data=st.data())
def test_unique_all_matches_numpy(dtype_name, data):
    a = data.draw(arrays(dtype_name, shapes(max_side=5), elements=_small_values(dtype_name)))
    ref = np.unique_all(a)
    got = xp.unique_all(from_numpy(a))
    assert got._fields == ("values", "indices", "inverse_indices", "counts")
    assert_same(got.values, ref.values)  # assert_array_equal: -0.0 == 0.0 and NaN == NaN
    assert_same(got.indices, ref.indices.astype(np.int64))
    assert_same(got.inverse_indices, ref.inverse_indices.astype(np.int64).reshape(a.shape))
    assert_same(got.counts, ref.counts.astype(np.int64))
    counts = xp.unique_counts(from_numpy(a))
    assert counts._fields == ("values", "counts")
    assert_same(counts.counts, ref.counts.astype(np.int64))
    inverse = xp.unique_inverse(from_numpy(a))
    assert inverse._fields == ("values", "inverse_indices")
    assert_same(inverse.inverse_indices, ref.inverse_indices.astype(np.int64).reshape(a.shape))
    assert_same(xp.unique_values(from_numpy(a)), ref.values)


def test_nan_values_are_distinct():
    a = np.array([[np.nan, 1.0], [np.nan, -0.0], [0.0, 1.0]], np.float32)
    got = xp.unique_all(from_numpy(a))
    assert_same(got.values, np.array([0.0, 1.0, np.nan, np.nan], np.float32))
    assert_same(got.indices, np.array([3, 1, 0, 2]))
    assert_same(got.counts, np.array([2, 2, 1, 1]))
    assert_same(got.inverse_indices, np.array([[2, 1], [3, 0], [0, 1]]))
    c = np.array([1 + 1j, complex(np.nan, 0), 1 + 1j, complex(0, np.nan), complex(np.nan, 0)], np.complex64)
    got = xp.unique_counts(from_numpy(c))
    assert_same(got.counts, np.array([1, 2, 1, 1]))  # (0, nan) sorts first by its real part


def test_uint64_extremes_and_shapes():
    a = np.array([2**64 - 1, 0, 2**63, 2**64 - 1, 2**63 - 1], np.uint64)
    got = xp.unique_all(from_numpy(a))
    assert_same(got.values, np.array([0, 2**63 - 1, 2**63, 2**64 - 1], np.uint64))
    assert_same(got.indices, np.array([1, 4, 2, 0]))
    assert_same(xp.unique_inverse(from_numpy(np.array(7, np.uint16))).inverse_indices, np.array(0))
    empty = xp.unique_all(from_numpy(np.zeros((2, 0), np.int8)))
    assert_same(empty.values, np.zeros(0, np.int8))
    assert_same(empty.counts, np.zeros(0, np.int64))
    assert_same(empty.inverse_indices, np.zeros((2, 0), np.int64))


@pytest.mark.parametrize("dtype_name", INT_NAMES + ("bool", "float32", "float64", "complex64"))
@settings(max_examples=15)
@given(data=st.data())
def test_isin_matches_numpy(dtype_name, data):
    values = _small_values(dtype_name)
    a = data.draw(arrays(dtype_name, shapes(max_side=5), elements=values))
    b = data.draw(arrays(dtype_name, shapes(max_dims=2, max_side=4), elements=values))
    invert = data.draw(st.booleans())
    assert_same(xp.isin(from_numpy(a), from_numpy(b), invert=invert), np.isin(a, b, invert=invert))


def test_isin_scalars_nan_and_promotion():
    a = np.array([1, 5, 300], np.int16)
    assert_same(xp.isin(from_numpy(a), 5), np.array([False, True, False]))
    assert_same(xp.isin(5, from_numpy(a)), np.array(True))
    assert_same(xp.isin(7, from_numpy(a), invert=True), np.array(True))
    nan = from_numpy(np.array([np.nan, 0.0]))
    assert_same(xp.isin(nan, nan), np.array([False, True]))
    zeros = from_numpy(np.array([-0.0])), from_numpy(np.array([0.0], np.float32))
    assert_same(xp.isin(*zeros), np.array([True]))
    # uint8 and int8 promote to int16: 255 is not -1
    assert_same(xp.isin(from_numpy(np.array([255], np.uint8)), from_numpy(np.array([-1], np.int8))), np.array([False]))
    big = from_numpy(np.array([2**64 - 1, 3], np.uint64))
    assert_same(xp.isin(big, from_numpy(np.array([2**64 - 1], np.uint64))), np.array([True, False]))


def test_errors():
    with pytest.raises(TypeError, match=r"unique_values\(\) expects x to be a NeuronArray"):
        xp.unique_values([1, 2])
    with pytest.raises(TypeError, match=r"isin\(\) needs at least one NeuronArray operand"):
        xp.isin(1, 2)
    with pytest.raises(TypeError, match="no integer dtype holds both uint64 and int64"):
        xp.isin(from_numpy(np.array([1], np.uint64)), from_numpy(np.array([1], np.int64)))
