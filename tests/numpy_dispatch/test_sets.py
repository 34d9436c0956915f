"""NumPy's set routines (trn_backend/numpy_dispatch/sets.py: unique, the unique_* functions, isin) against NumPy on
the same data: the table's cases."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_dispatch.calls import WITH_NAN, Case, I, _apply, _neuron, _numpy_tree, run_both
from tests.support import assert_same_results

CASES = [
    Case(np.isin, (I, [0, 1, 2])),
    Case(np.isin, (I, [0, 1]), {"invert": True}),
    Case(np.unique, (I,)),
    Case(np.unique, (WITH_NAN,)),
    Case(np.unique, (WITH_NAN,), {"equal_nan": False}),
    Case(np.unique, (I,), {"return_index": True, "return_inverse": True, "return_counts": True}),
    Case(np.unique_values, (np.array([3, 1, 1, 2]),), post=np.sort),
    Case(np.unique_counts, (np.array([3, 1, 1]),), post=lambda r: np.sort(np.stack(r), axis=1)),
    Case(np.unique_inverse, (np.array([[3, 1], [1, 2]]),), post=lambda r: tuple(r)),
    Case(np.unique_all, (np.array([3, 1, 1, 2]),), post=lambda r: tuple(r)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, atol=case.atol)
