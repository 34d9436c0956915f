"""No entry point materialises a broadcast operand: a step whose smaller operand is broadcast over batch indices
of the larger one, beside batch indices both share, holds at most its output's size of extra memory (the
per-call results before they are joined), far below the broadcast's size. Measured with the profiler helper of
benchmarks/bench_emulation.py (every CPU allocation and free inside the call)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import opt_einsum
import pytest
import torch

import trn_backend as xp
from tests.support import assert_same

_spec = importlib.util.spec_from_file_location(
    "bench_emulation", Path(__file__).parents[2] / "benchmarks" / "bench_emulation.py"
)
bench_emulation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_emulation)

P, Q, M, K, N = 4, 64, 32, 128, 16  # shared batch, broadcast batch, rows, contracted, columns
EQ = "pqkn,pmk->pqmn"

ENTRY_POINTS = {
    "einsum": lambda big, small, small4: xp.einsum(EQ, big, small),
    "opt_einsum": lambda big, small, small4: opt_einsum.contract(EQ, big, small, backend="trn"),
    "contract_expression": lambda big, small, small4: xp.contract_expression(EQ, big.shape, small.shape)(big, small),
    "numpy.einsum": lambda big, small, small4: np.einsum(EQ, big, small),
    "matmul": lambda big, small, small4: xp.matmul(small4, big),
    "numpy.matmul": lambda big, small, small4: np.matmul(small4, big),
    "@": lambda big, small, small4: small4 @ big,
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_broadcast_operand_is_never_materialised(entry):
    g = np.random.default_rng(0)
    arrays = g.standard_normal((P, Q, K, N)), g.standard_normal((P, M, K))
    big, small = (xp.asarray(torch.from_numpy(a).float()) for a in arrays)
    small4 = xp.reshape(small, (P, 1, M, K))
    call = ENTRY_POINTS[entry]
    got = call(big, small, small4)  # first call: plans and caches out of the measurement
    want = np.einsum(EQ, *(a.astype(np.float32).astype(np.float64) for a in arrays))
    assert_same(got, want.astype(np.float32), rtol=1e-5, atol=1e-5)
    _, extra = bench_emulation.peak_extra_bytes(lambda: call(big, small, small4)._t)
    broadcast = P * Q * M * K * 4
    assert extra <= P * Q * M * N * 4 < broadcast / 4, (extra, broadcast)
