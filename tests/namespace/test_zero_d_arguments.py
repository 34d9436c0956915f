"""0-d arrays where a function takes a number (the creation functions' sizes, counts and fill values,
axes, repeats, shifts, spacings and clip's bounds), as NumPy takes them."""

from __future__ import annotations

import numpy as np
import pytest

import trn_backend as xp


def test_zero_d_integer_arrays_are_sizes_and_counts() -> None:
    n = xp.asarray(4)
    assert xp.zeros((n, 2)).shape == (4, 2)
    assert xp.ones(n).shape == (4,)
    assert xp.eye(n, k=xp.asarray(1)).shape == (4, 4)
    np.testing.assert_array_equal(np.asarray(xp.arange(n)), np.arange(np.array(4)))
    np.testing.assert_allclose(np.asarray(xp.linspace(0.0, xp.asarray(2.5), n)), np.linspace(0.0, np.array(2.5), 4))


def test_zero_d_arrays_are_fill_values_with_their_dtype() -> None:
    f = xp.asarray(np.float32(2.5))
    full = xp.full(3, f)
    assert full.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(full), np.full(3, np.float32(2.5)))
    like = xp.full_like(xp.zeros(2, dtype=xp.int32), f)  # cast as NumPy casts: truncation
    assert like.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(like), np.full_like(np.zeros(2, np.int32), np.float32(2.5)))


def test_arrays_that_are_not_numbers_are_refused() -> None:
    with pytest.raises(TypeError, match="arange.*start"):
        xp.arange(xp.asarray([1, 2]))
    with pytest.raises(TypeError, match="zeros.*shape"):
        xp.zeros(xp.asarray(2.0))
    with pytest.raises(ValueError, match="full.*0-d"):
        xp.full(3, xp.asarray([1.0, 2.0]))


def test_clip_with_a_0d_float_bound_rounds_inward_on_integers() -> None:
    a = np.arange(5, dtype=np.int16)
    x = xp.asarray(a)
    np.testing.assert_array_equal(np.asarray(xp.clip(x, xp.asarray(np.array(2.7)))), np.asarray(xp.clip(x, 2.7)))
    np.testing.assert_array_equal(np.asarray(xp.clip(x, max=xp.asarray(np.array(2.7)))), [0, 1, 2, 2, 2])


def test_0d_integer_arrays_as_axes_counts_and_shifts() -> None:
    a = np.arange(6.0).reshape(2, 3)
    x, i1 = xp.asarray(a), xp.asarray(1)
    np.testing.assert_array_equal(np.asarray(xp.sum(x, axis=i1)), a.sum(axis=1))
    assert xp.expand_dims(x, axis=i1).shape == (2, 1, 3)
    np.testing.assert_array_equal(np.asarray(xp.repeat(x, xp.asarray(2), axis=1)), np.repeat(a, 2, axis=1))
    np.testing.assert_array_equal(np.asarray(xp.roll(x, i1)), np.roll(a, 1))
    np.testing.assert_array_equal(np.asarray(xp.fft.fftfreq(4, d=xp.asarray(0.5))), np.fft.fftfreq(4, d=0.5))
