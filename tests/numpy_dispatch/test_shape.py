"""NumPy's array manipulation routines of trn_backend/numpy_dispatch/shape.py (shapes, transposes, dimensions,
rearranging) against NumPy on the same data: the table's cases, hypothesis-drawn arrays, rot90, and
moveaxis's axes as any sequence of ints (a range, an ndarray), as NumPy takes them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.numpy_dispatch.calls import (
    T3,
    Case,
    M,
    V,
    _apply,
    _neuron,
    _numpy_tree,
    agree,
    array_and_axis,
    raises_like_numpy,
    run_both,
)
from tests.support import DTYPE_NAMES, assert_same, assert_same_results

rng = np.random.default_rng(7)


CASES = [
    Case(np.transpose, (T3,)),
    Case(np.transpose, (T3,), {"axes": (1, -1, 0)}),
    Case(np.moveaxis, (T3, 0, -1)),
    Case(np.swapaxes, (T3, 0, 2)),
    Case(np.reshape, (T3, (4, -1))),
    Case(np.reshape, (T3, 24)),
    Case(np.ravel, (T3,)),
    Case(np.atleast_1d, (M,)),
    Case(np.atleast_1d, (np.float64(2.0), V)),
    Case(np.atleast_2d, (V,)),
    Case(np.atleast_3d, (V, M)),
    Case(np.squeeze, (M[None, :, None],)),
    Case(np.squeeze, (M[None],), {"axis": 0}),
    Case(np.expand_dims, (M, (0, 3))),
    Case(np.broadcast_to, (V, (3, 4))),
    Case(np.broadcast_arrays, (V, M[:, :1])),
    Case(np.flip, (T3,)),
    Case(np.flip, (T3,), {"axis": (0, 2)}),
    Case(np.unstack, (T3,), {"axis": 1}),
    Case(np.unstack, (V,)),
    Case(np.roll, (T3, 2)),
    Case(np.roll, (T3, (1, -1)), {"axis": (0, 2)}),
    Case(np.shape, (T3,)),
    Case(np.ndim, (T3,)),
    Case(np.size, (T3,)),
    Case(np.size, (T3, -1)),
    Case(np.matrix_transpose, (T3,)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, atol=case.atol)


@settings(max_examples=60)
@given(data=array_and_axis(DTYPE_NAMES, min_dims=1), shift=st.integers(-5, 5))
def test_manipulation_matches_numpy(data, shift) -> None:
    a, axis = data
    axis = 0 if axis is None else axis
    assert_same_results(*run_both(np.transpose, a))
    assert_same_results(*run_both(np.moveaxis, a, axis, 0))
    assert_same_results(*run_both(np.swapaxes, a, axis, -1))
    assert_same_results(*run_both(np.ravel, a))
    assert_same_results(*run_both(np.reshape, a, (-1, 1)))
    assert_same_results(*run_both(np.squeeze, a))
    assert_same_results(*run_both(np.expand_dims, a, axis))
    assert_same_results(*run_both(np.flip, a, axis))
    assert_same_results(*run_both(np.roll, a, shift, axis))
    assert_same_results(*run_both(np.stack, [a, a], axis))
    assert_same_results(*run_both(np.concatenate, [a, a], axis))
    assert_same_results(*run_both(np.tile, a, (2,)))


# ---------------------------------------------------------------- rot90


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 6])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (2, 0), (-1, 1)])
def test_rot90(k: int, axes: tuple[int, int]) -> None:
    agree(np.rot90, rng.integers(0, 99, (2, 3, 4)).astype(np.uint16), k, axes)


def test_rot90_errors() -> None:
    raises_like_numpy(ValueError, np.rot90, M, axes=(0,))
    raises_like_numpy(ValueError, np.rot90, M, axes=(1, 1), match="different")
    raises_like_numpy(ValueError, np.rot90, M, axes=(0, -2), match="different")
    raises_like_numpy(ValueError, np.rot90, M, axes=(0, 3), match="out of range")


@pytest.mark.parametrize(
    ("source", "destination"), [(range(2), [2, 3]), (np.array([0, 1]), (2, 3)), (np.arange(1), range(3, 4))]
)
def test_moveaxis_takes_any_sequence_of_axes(source, destination) -> None:
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    assert_same(np.moveaxis(xp.asarray(x), source, destination), np.moveaxis(x, source, destination))
