"""Edge cases of NumPy compatibility, each against NumPy's answer."""

from __future__ import annotations

import warnings

import numpy as np

import trn_backend as xp


def test_numpy_functions_on_bool_and_vector_edges() -> None:
    v, b = np.array([1.0, 2.0, 3.0]), np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(np.asarray(np.tril(xp.asarray(v))), np.tril(v))
    np.testing.assert_array_equal(np.asarray(np.triu(xp.asarray(v), 1)), np.triu(v, 1))
    assert int(np.trace(xp.asarray(b))) == np.trace(b) and np.trace(xp.asarray(b)).dtype == np.int64
    for call in (
        lambda m: np.min(m, initial=True),
        lambda m: np.max(m, axis=0, initial=False),
        lambda m: np.max(m[:0], axis=0, initial=True),
    ):
        ours, theirs = call(xp.asarray(b)), call(b)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(np.asarray(ours), theirs)
    ints = np.arange(3, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(np.full_like(xp.asarray(ints), 2.7)), np.full_like(ints, 2.7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(float(np.nanquantile(xp.asarray(np.zeros(0, np.int64)), 0.5)))
