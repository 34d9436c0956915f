"""NumPy's indexing routines (trn_backend/numpy_dispatch/indexing.py) against NumPy on the same data: the table's
cases, numpy.where with Python scalars, diag and diagflat, and select (hypothesis draws its conditions and
choices)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.numpy_dispatch.calls import (
    T3,
    Case,
    I,
    M,
    V,
    _apply,
    _neuron,
    _numpy_tree,
    agree,
    nd,
    raises_like_numpy,
    run_both,
)
from tests.support import assert_same_results, from_numpy

rng = np.random.default_rng(7)


CASES = [
    Case(np.diagonal, (T3,), {"offset": -1, "axis1": 2, "axis2": 0}),
    Case(np.where, (M > 0, M, 0.0)),
    Case(np.where, (I, I, -I)),
    Case(np.where, (M > 0,)),
    Case(np.nonzero, (I,)),
    Case(np.take, (M, [[0, 2], [1, 1]]), {"axis": 1}),
    Case(np.take, (M, [5, -1])),
    Case(np.take_along_axis, (M, np.argsort(M, axis=1)), {"axis": 1}),
    Case(np.take_along_axis, (V, np.argsort(V), None)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, atol=case.atol)


def test_where_with_python_scalars_follows_numpy() -> None:
    c = np.array([True, False, True])
    for x, y in ((1, 2), (1, 2.0), (True, 2), (1, 1j), (True, False), (0.5, 2)):
        assert_same_results(np.where(from_numpy(c), x, y), np.where(c, x, y))
    assert_same_results(np.where(from_numpy(np.array([0, 3, 0])), 1, 2), np.where(np.array([0, 3, 0]), 1, 2))
    i8 = np.array([1, 2, 3], np.int8)
    # the scalar is weak beside an array
    assert_same_results(np.where(from_numpy(c), from_numpy(i8), 1), np.where(c, i8, 1))
    assert_same_results(np.where(from_numpy(c)), np.where(c))
    assert_same_results(np.where(from_numpy(np.array([[0, 1], [2, 0]]))), np.where(np.array([[0, 1], [2, 0]])))


# ---------------------------------------------------------------- diagonals


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "uint64", "float32", "complex64"])
@pytest.mark.parametrize("k", [-2, 0, 1, 5])
def test_diag_and_diagflat(dtype: str, k: int) -> None:
    v = rng.integers(0, 3, 4).astype(dtype)
    m = rng.integers(0, 9, (3, 4)).astype(dtype)
    agree(np.diag, v, k)
    agree(np.diag, m, k=k)
    agree(np.diagflat, m, k)
    agree(np.diagflat, np.asarray(v[0]), k)


def test_diag_of_a_matrix_is_a_copy() -> None:
    m = nd(np.arange(9.0).reshape(3, 3))
    d = np.diag(m)
    d[0] = 100.0
    assert float(m[0, 0]) == 0.0


def test_diag_errors() -> None:
    raises_like_numpy(ValueError, np.diag, np.zeros((2, 2, 2)), match="1-d or 2-d")


# ---------------------------------------------------------------- select


@pytest.mark.parametrize(
    "case",
    [
        (([I > 0, I < -2], [I, -I]), {}),
        (([I > 0, I < -2], [I, 2.5]), {"default": -1}),
        (([I > 0], [I.astype(np.int8)]), {"default": 0}),
        (([I > 0], [I.astype(np.int8)]), {"default": np.int64(3)}),
        (([M > 0, np.array([True, False, True, False])], [1, 2]), {"default": 3.5}),
        (([np.array(True), M < 0], [M, 1j]), {}),
        (([I[0] > 0, I[:, :1] > 1], [I[0], I[:, 0:1]]), {}),
    ],
)
def test_select(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.select, *args, **kwargs)


@settings(max_examples=40)
@given(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), st.integers(1, 4), st.data())
def test_select_matches_numpy(shape: tuple[int, ...], count: int, data: Any) -> None:
    conditions = [data.draw(hnp.arrays(np.bool_, shape)) for _ in range(count)]
    choices = [
        data.draw(
            st.one_of(
                hnp.arrays(np.int16, shape, elements=st.integers(-99, 99)), st.integers(-99, 99), st.floats(-9, 9)
            )
        )
        for _ in range(count)
    ]
    agree(np.select, conditions, choices, default=data.draw(st.sampled_from([0, -1.5, np.int8(2)])))


def test_select_errors() -> None:
    raises_like_numpy(ValueError, np.select, [I > 0], [I, I], match="must match")
    raises_like_numpy(ValueError, np.select, [], [], match="empty")
    raises_like_numpy(TypeError, np.select, [I], [I], match="boolean")
