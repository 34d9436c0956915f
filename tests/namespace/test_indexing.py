"""take and take_along_axis against NumPy on every dtype, with every integer index dtype."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, INT_NAMES, arrays, assert_same, from_numpy, shapes

names = st.sampled_from(DTYPE_NAMES)
index_names = st.sampled_from(INT_NAMES)


@settings(max_examples=60)
@given(names, index_names, st.data())
def test_take(name, index_name, data):
    a = data.draw(arrays(name, shapes(min_dims=1, max_side=4)))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[axis]
    low = 0 if np.dtype(index_name).kind == "u" else -n
    values = data.draw(st.lists(st.integers(low, n - 1), max_size=5)) if n else []
    indices = np.array(values, dtype=index_name)
    out = xp.take(from_numpy(a), from_numpy(indices), axis=axis)
    assert_same(out, np.take(a, indices.astype(np.int64), axis=axis))
    if a.ndim == 1:
        assert_same(xp.take(from_numpy(a), from_numpy(indices)), np.take(a, indices.astype(np.int64)))


@settings(max_examples=60)
@given(names, index_names, st.data())
def test_take_along_axis(name, index_name, data):
    a = data.draw(arrays(name, shapes(min_dims=1, max_side=4)))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[axis]
    # indices broadcast against x on the other axes: some of them may be 1
    ax = axis % a.ndim
    idx_shape = tuple(
        data.draw(st.integers(0, 4) if i == ax else st.sampled_from([d, 1])) for i, d in enumerate(a.shape)
    )
    low = 0 if np.dtype(index_name).kind == "u" else -n
    if n == 0:
        idx_shape = idx_shape[:ax] + (0,) + idx_shape[ax + 1 :]
    count = int(np.prod(idx_shape))
    values = data.draw(st.lists(st.integers(low, max(n - 1, low)), min_size=count, max_size=count))
    indices = np.array(values, dtype=index_name).reshape(idx_shape)
    out = xp.take_along_axis(from_numpy(a), from_numpy(indices), axis=axis)
    assert_same(out, np.take_along_axis(a, indices.astype(np.int64), axis=axis))


def test_default_axis_of_take_along_axis():
    a = np.arange(12, dtype=np.uint64).reshape(3, 4) + np.uint64(2**63)
    i = np.array([[3, -1], [0, 1], [2, 2]])
    assert_same(xp.take_along_axis(from_numpy(a), from_numpy(i)), np.take_along_axis(a, i, axis=-1))


def test_take_errors():
    x = xp.reshape(xp.arange(6), (2, 3))
    with pytest.raises(ValueError, match="axis is required for an array of 2 dimensions"):
        xp.take(x, xp.asarray([0]))
    with pytest.raises(TypeError, match="indices must have an integer dtype, got float32"):
        xp.take(x, xp.asarray([0.0], dtype=xp.float32), axis=0)
    with pytest.raises(ValueError, match="indices must be 1-dimensional"):
        xp.take(x, xp.asarray([[0]]), axis=0)
    with pytest.raises(IndexError, match=r"take\(\): an index is out of range \[-3, 3\)"):
        xp.take(x, xp.asarray([3]), axis=1)
    with pytest.raises(IndexError, match=r"out of range \[0, 3\)"):
        xp.take(x, xp.asarray([2**64 - 1], dtype=xp.uint64), axis=1)
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        xp.take(x, xp.asarray([0]), axis=2)
    with pytest.raises(TypeError, match="NeuronArray"):
        xp.take(x, [0], axis=0)


def test_take_along_axis_errors():
    x = xp.reshape(xp.arange(6), (2, 3))
    with pytest.raises(ValueError, match=r"indices of shape \(2,\) must have the 2 dimensions"):
        xp.take_along_axis(x, xp.asarray([0, 1]))
    with pytest.raises(ValueError, match="do not broadcast on axis 0"):
        xp.take_along_axis(x, xp.zeros((3, 1), dtype=xp.int64), axis=1)
    with pytest.raises(IndexError, match="take_along_axis.*out of range"):
        xp.take_along_axis(x, xp.asarray([[-4]]), axis=1)


def test_indices_on_another_device_are_refused():
    with pytest.raises(ValueError, match="take.*different devices"):
        xp.take(xp.ones(3), xp.asarray([0], device="meta"))
