"""Sums, products, extrema and truth tests (trn_backend/numpy_dispatch/reductions.py) against NumPy on the same data:
the table's cases, hypothesis-drawn reductions, extremes and cumulative functions, and NumPy's cumulative products
of complex infinities. The nan-versions: test_nan_functions.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.numpy_dispatch.calls import (
    BOOL,
    OTHER_ORDER,
    T3,
    WITH_NAN,
    Case,
    I,
    M,
    V,
    _apply,
    _neuron,
    _numpy_tree,
    _small,
    array_and_axis,
    run_both,
)
from tests.support import DTYPE_NAMES, REAL_NAMES, assert_same_array, assert_same_results

NAN = np.nan


CASES = [
    Case(np.sum, (I,)),
    Case(np.sum, (M,), {"axis": 1, "keepdims": True}),
    Case(np.sum, (M, 0, "float32")),
    Case(np.sum, (I,), {"initial": 10}),
    Case(np.prod, (I,), {"axis": 0}),
    Case(np.prod, (M,), {"initial": 2.0}),
    Case(np.max, (M,)),
    Case(np.max, (M,), {"axis": 0, "initial": 0.5}),
    Case(np.amax, (I,), {"axis": 1}),
    Case(np.min, (T3,), {"axis": (0, 2), "keepdims": True}),
    Case(np.amin, (WITH_NAN,)),
    Case(np.min, (np.zeros((0, 3)),), {"axis": 0, "initial": 7.0}),
    Case(np.cumsum, (M,)),
    Case(np.cumsum, (I,), {"axis": 1}),
    Case(np.cumsum, (BOOL,), {"axis": 0}),
    Case(np.cumprod, (M,), {"axis": 0}),
    Case(np.cumprod, (I, None, np.float64)),
    Case(np.cumulative_sum, (I,), {"axis": 1, "include_initial": True}),
    Case(np.cumulative_prod, (V,)),
    Case(np.all, (BOOL,), {"axis": 0}),
    Case(np.all, (I,)),
    Case(np.any, (BOOL,), {"axis": 1, "keepdims": True}),
    Case(np.any, (I,)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, rtol=OTHER_ORDER, atol=case.atol)


@settings(max_examples=60)
@given(
    data=array_and_axis(elements=_small),
    keepdims=st.booleans(),
    func=st.sampled_from([np.sum, np.prod, np.all, np.any, np.count_nonzero]),
)
def test_reductions_match_numpy(data, keepdims, func) -> None:
    a, axis = data
    assert_same_results(*run_both(func, a, axis=axis, keepdims=keepdims), rtol=OTHER_ORDER)


@settings(max_examples=60)
@given(
    data=array_and_axis(REAL_NAMES, min_dims=1, elements=_small),
    keepdims=st.booleans(),
    func=st.sampled_from([np.max, np.min, np.amax, np.amin, np.argmax, np.argmin, np.ptp]),
)
def test_extremes_match_numpy(data, keepdims, func) -> None:
    a, axis = data
    if a.size == 0:
        return
    assert_same_results(*run_both(func, a, axis=axis, keepdims=keepdims), rtol=OTHER_ORDER)


@settings(max_examples=40)
@given(data=array_and_axis(DTYPE_NAMES, min_dims=1, elements=_small), func=st.sampled_from([np.cumsum, np.cumprod]))
def test_cumulative_match_numpy(data, func) -> None:
    a, axis = data
    assert_same_results(*run_both(func, a, axis=axis), rtol=OTHER_ORDER)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumulative_products_of_complex_infinities_as_numpy(dtype, axis):
    """NumPy's accumulate keeps the first element and multiplies by the textbook formula; torch's complex
    product of 0+inf j is NaN+NaN j."""
    rng = np.random.default_rng(0)
    specials = np.array(
        [
            complex(0, np.inf),
            complex(np.inf, NAN),
            1 + 1j,
            2 - 1j,
            complex(1, 1e16),
            complex(NAN, 0),
            -1 + 1j,
            0.5j,
            3 + 0j,
        ]
    )
    x = rng.choice(specials, size=(3, 4, 5)).astype(dtype)
    for want, got in (
        (np.cumprod(x, axis=axis), np.cumprod(xp.asarray(x), axis=axis)),
        (
            np.cumulative_prod(x, axis=axis, include_initial=True),
            np.cumulative_prod(xp.asarray(x), axis=axis, include_initial=True),
        ),
    ):
        got = np.asarray(got)
        assert got.dtype == want.dtype
        for part in (np.real, np.imag):
            assert_same_array(part(got), part(want), rtol=1e-5, what=part.__name__)  # each part relative to itself
