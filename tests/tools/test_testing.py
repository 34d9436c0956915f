"""``trn_backend.testing.reset_caches``: every cache empties, and answers are the same after."""

from __future__ import annotations

import numpy as np
import opt_einsum

import trn_backend as xp
from trn_backend import _precision, testing
from trn_backend.contraction import COMPILED
from trn_backend.contraction import plan as planner


def test_reset_caches_empties_the_planner_precision_and_backend_caches():
    rng = np.random.default_rng(0)
    a, b = xp.asarray(rng.standard_normal((3, 4))), xp.asarray(rng.standard_normal((4, 5)))
    first = (xp.einsum("ij,jk->ik", a, b), opt_einsum.contract("ij,jk->ik", a, b, backend="trn"))
    _precision.select_precision(xp.float32, 64, 1e-6)
    assert planner.entry.cache_info().currsize > 0 and len(COMPILED)
    assert _precision._select.cache_info().currsize > 0
    testing.reset_caches()
    assert planner.entry.cache_info().currsize == 0 and not len(COMPILED)
    assert _precision._select.cache_info().currsize == 0
    again = (xp.einsum("ij,jk->ik", a, b), opt_einsum.contract("ij,jk->ik", a, b, backend="trn"))
    for x, y in zip(first, again, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
