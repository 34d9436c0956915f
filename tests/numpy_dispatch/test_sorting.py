"""NumPy's sorting, searching and counting (trn_backend/numpy_dispatch/sorting.py) against NumPy on the same data:
the table's cases, hypothesis-drawn sorts and searches, argwhere and lexsort."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.numpy_dispatch.calls import (
    SORTED,
    WITH_NAN,
    Case,
    I,
    M,
    V,
    _apply,
    _neuron,
    _numpy_tree,
    agree,
    array_and_axis,
    nd,
    raises_like_numpy,
    run_both,
)
from tests.support import REAL_NAMES, arrays, assert_same_results, shapes

rng = np.random.default_rng(7)


CASES = [
    Case(np.flatnonzero, (I,)),
    Case(np.count_nonzero, (I,), {"axis": 0}),
    Case(np.searchsorted, (SORTED, V)),
    Case(np.searchsorted, (SORTED, 0.5), {"side": "right"}),
    Case(np.searchsorted, (SORTED[::-1], V), {"sorter": np.arange(5, -1, -1)}),
    Case(np.sort, (M,)),
    Case(np.sort, (M,), {"axis": None}),
    Case(np.sort, (WITH_NAN,), {"kind": "stable"}),
    Case(np.argsort, (I,), {"kind": "stable"}),
    Case(np.argsort, (M,), {"axis": 0, "stable": True}),
    Case(np.argmax, (M,)),
    Case(np.argmax, (M,), {"axis": 1, "keepdims": True}),
    Case(np.argmin, (WITH_NAN,)),
    Case(np.argmin, (I,), {"axis": 0}),
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
@given(data=array_and_axis(REAL_NAMES + ("bool",), min_dims=1))
def test_sorting_and_unique_match_numpy(data) -> None:
    a, axis = data
    axis = -1 if axis is None else axis
    assert_same_results(*run_both(np.sort, a, axis=axis))
    assert_same_results(*run_both(np.argsort, a, axis=axis, kind="stable"))
    assert_same_results(*run_both(np.sort, a, axis=None))
    assert_same_results(*run_both(np.unique, a, return_index=True, return_inverse=True, return_counts=True))


@settings(max_examples=40)
@given(a=arrays("float64", shapes(1, 1, 8)), v=arrays("float64", shapes(0, 2)), side=st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(a, v, side) -> None:
    assert_same_results(*run_both(np.searchsorted, np.sort(a), v, side=side))


# ---------------------------------------------------------------- argwhere and lexsort


@pytest.mark.parametrize("a", [I, I > 0, np.array(3), np.array(0.0), np.zeros((2, 0)), rng.standard_normal(4) > 0])
def test_argwhere(a: np.ndarray) -> None:
    agree(np.argwhere, a)


@pytest.mark.parametrize(
    "case",
    [
        (((np.array([1, 1, 0, 0, 1]), np.array([3, 1, 2, 1, 3])),), {}),
        ((np.array([[1, 1, 0, 0, 1], [3, 1, 2, 1, 3], [0, 1, 1, 0, 0]]),), {}),
        (((rng.integers(0, 2, (3, 6)), rng.integers(0, 3, (3, 6))),), {"axis": 0}),
        (((rng.integers(0, 2, (3, 6)).astype(np.uint64), rng.standard_normal((3, 6)) > 0),), {"axis": -1}),
        (((np.array([1.0, np.nan, 1.0, 0.0]), np.array([2.0, 2.0, np.nan, 2.0])),), {}),
        (((np.array([3, 1, 2, 1]), np.array([1 + 2j, 1 + 1j, 0 + 5j, 1 + 1j])),), {}),
        ((np.array([3, 1, 2]),), {}),
    ],
)
def test_lexsort(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.lexsort, *args, **kwargs)


def test_lexsort_errors() -> None:
    raises_like_numpy(ValueError, np.lexsort, (np.ones(3), np.ones(4)), match="same shape")
    with pytest.raises(TypeError, match="len > 0"):
        np.lexsort(nd(np.zeros((0, 3))))
