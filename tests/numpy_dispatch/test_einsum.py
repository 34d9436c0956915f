"""numpy.einsum and numpy.einsum_path (trn_backend/numpy_dispatch/einsum.py) against NumPy on the same data: the
table's cases, and einsum on the contraction engine (the kernel layer's calls counted), its ``optimize``,
``precision=`` and ``dtype=`` arguments and the precision context."""

from __future__ import annotations

import numpy as np
import pytest

import trn_backend as xp
from tests.numpy_dispatch.calls import M52, M52B, OTHER_ORDER, SQ, Case, I, M, N, _apply, _neuron, _numpy_tree, run_both
from tests.support import assert_same, assert_same_results, from_numpy, to_numpy
from trn_backend import kernels

rng = np.random.default_rng(1234)


CASES = [
    Case(np.einsum, ("ij,jk->ik", M, N)),
    Case(np.einsum, ("ij,jk,kl->il", M, N, M52), {"optimize": True}),
    Case(np.einsum, (M, [0, 1], N, [1, 2], [0, 2])),
    Case(np.einsum, ("ii->i", SQ)),
    Case(np.einsum_path, ("ij,jk,kl->il", M, N, M52B), {"optimize": "greedy"}, post=lambda r: r[0]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, rtol=OTHER_ORDER, atol=case.atol)


# ---------------------------------------------------------------- einsum on the engine


def test_einsum_runs_on_the_kernel_layer() -> None:
    a, b = from_numpy(M), from_numpy(N)
    with kernels.count_calls() as calls:
        result = np.einsum("ij,jk->ik", a, b)
    assert isinstance(result, xp.NeuronArray)
    assert sum(calls.values()) == 1 and all(mode == "native" for _, mode in calls)
    assert_same_results(result, M @ N, rtol=OTHER_ORDER)


def test_einsum_optimize_follows_the_path() -> None:
    ops = [from_numpy(rng.standard_normal(s)) for s in ((2, 30), (30, 30), (30, 1))]
    path, report = np.einsum_path("ij,jk,kl->il", *ops, optimize="optimal")
    assert path[0] == "einsum_path" and "Complete contraction" in report
    for optimize in (False, True, "greedy", "optimal", path):
        with kernels.count_calls() as calls:
            result = np.einsum("ij,jk,kl->il", *ops, optimize=optimize)
        assert sum(calls.values()) == 2
        assert_same_results(result, np.einsum("ij,jk,kl->il", *map(to_numpy, ops)), rtol=OTHER_ORDER)


def test_einsum_per_call_precision_reaches_the_kernel() -> None:
    a, b = from_numpy(M.astype(np.float32)), from_numpy(N.astype(np.float32))
    with kernels.count_calls() as calls:
        np.einsum("ij,jk->ik", a, b, precision="dd")
    assert {mode for _, mode in calls} == {"dd"}


def test_einsum_respects_the_precision_context() -> None:
    a, b = from_numpy(M.astype(np.float32)), from_numpy(N.astype(np.float32))
    with xp.precision("dd"), kernels.count_calls() as calls:
        result = np.einsum("ij,jk->ik", a, b)
    assert {mode for _, mode in calls} == {"dd"}
    scale = (np.abs(M) @ np.abs(N)).max()
    assert_same(result, M @ N, dtype="float32", rtol=0.0, atol=1e-5 * scale)
    with xp.precision("fast"), kernels.count_calls() as calls:
        np.einsum("ij,jk->ik", a, b)
    assert {mode for _, mode in calls} == {"fast"}


def test_einsum_dtype_argument() -> None:
    a = from_numpy(I.astype(np.int32))
    assert_same_results(
        np.einsum("ij->j", a, dtype=np.int64), np.einsum("ij->j", I.astype(np.int32), dtype=np.int64), rtol=OTHER_ORDER
    )
    with pytest.raises(TypeError, match="casting='safe'"):
        np.einsum("ij->j", from_numpy(M), dtype=np.float32)
