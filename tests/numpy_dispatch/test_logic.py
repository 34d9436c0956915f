"""NumPy's logic functions of trn_backend/numpy_dispatch/logic.py (isclose, allclose, array_equal) against NumPy on
the same data: the table's cases."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_dispatch.calls import WITH_NAN, Case, I, M, _apply, _neuron, _numpy_tree, run_both
from tests.support import assert_same_results

CASES = [
    Case(np.isclose, (M, M + 1e-9)),
    Case(
        np.isclose, (np.array([np.inf, np.nan, 1.0, 0.0]), np.array([np.inf, np.nan, 1.1, 1e-9])), {"equal_nan": True}
    ),
    Case(np.isclose, (I, I + 1), {"atol": 1.0}),
    Case(np.isclose, (M, 0.0), {"atol": 0.5}),
    Case(np.allclose, (M, M + 1e-9)),
    Case(np.allclose, (M, M + 1e-3)),
    Case(np.array_equal, (M, M)),
    Case(np.array_equal, (M, M[:2])),
    Case(np.array_equal, (WITH_NAN, WITH_NAN), {"equal_nan": True}),
    Case(np.array_equal, (WITH_NAN, WITH_NAN)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, atol=case.atol)
