"""Programs kept between calls (``compiler.COMPILED``): a forward target's kept choice follows the state it was
made from (the mode-cost table in force, torch's float32 matmul precision), and a call's own precision= is
checked on every call that gets it wrong. The repeated call of every entry point under every request is
tests/precision/test_every_route.py's (each case runs twice)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import trn_backend as xp
from trn_backend import _precision
from trn_backend.kernels import count_calls

EMULATION_WINS = dict(fast=0.1, dd=0.3, bf16x6=0.6, fp64=50.0, **{"ozaki(slices=2)": 0.4, "ozaki(slices=4)": 1.1})


def _table(**modes) -> dict:
    entry = {
        "flops": [1e6, 1e9],
        "sizes": [[100, 50, 100], [1000, 500, 1000]],
        "modes": {name: [v, v] for name, v in modes.items()},
    }
    return {"devices": {"cpu": {"date": "2026-01-02", "float32": entry, "float64": copy.deepcopy(entry)}}}


def _operands(dtype=np.float32):
    rng = np.random.default_rng(0)
    return xp.asarray(rng.standard_normal((8, 16)).astype(dtype)), xp.asarray(
        rng.standard_normal((16, 8)).astype(dtype)
    )


# every front door a forward target can reach with two operands, called as users call them
ROUTES = {
    "@ in a block": lambda a, b, t: _in_block(lambda: a @ b, t),
    "matmul": lambda a, b, t: xp.matmul(a, b, target_forward_error=t),
    "einsum": lambda a, b, t: xp.einsum("ik,kj->ij", a, b, target_forward_error=t),
    "tensordot": lambda a, b, t: xp.tensordot(a, b, axes=1, target_forward_error=t),
    "contract": lambda a, b, t: xp.contract("ik,kj->ij", a, b, target_forward_error=t),
    "opt_einsum backend": lambda a, b, t: _in_block(
        lambda: __import__("opt_einsum").contract("ik,kj->ij", a, b, backend="trn"), t
    ),
}


def _in_block(call, target):
    with xp.precision(target_forward_error=target):
        return call()


def _modes(call) -> set[str]:
    with count_calls() as calls:
        call()
    return {mode for (_, mode), n in calls.items() if n}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_kept_target_choice_follows_the_cost_table_in_force(route):
    a, b = _operands()
    call = ROUTES[route]
    committed = _modes(lambda: call(a, b, 1e-2))
    assert committed == {"native"}  # the CPU's committed table: native meets 1e-2 and costs least
    assert _modes(lambda: call(a, b, 1e-2)) == committed  # the kept program
    with _precision.planted_costs(_table(**EMULATION_WINS)):
        assert _modes(lambda: call(a, b, 1e-2)) == {"fast"}  # the planted table's cheapest: not the kept choice
        assert _modes(lambda: call(a, b, 1e-2)) == {"fast"}
    assert _modes(lambda: call(a, b, 1e-2)) == committed


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_kept_target_choice_follows_torchs_float32_matmul_precision(route):
    """Under "high", native's bound no longer holds on the CPU (its GEMM may round float32 inputs to bf16): a
    program kept under "highest" with native in it must not be reused."""
    a, b = _operands()
    call = ROUTES[route]
    before = torch.get_float32_matmul_precision()
    assert _modes(lambda: call(a, b, 1e-4)) == {"native"}
    try:
        torch.set_float32_matmul_precision("high")
        assert "native" not in _modes(lambda: call(a, b, 1e-4))
    finally:
        torch.set_float32_matmul_precision(before)
    assert _modes(lambda: call(a, b, 1e-4)) == {"native"}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_kept_target_program_still_checks_the_range_of_its_result(route):
    """A forward target promises a result in its dtype's range: products beyond float32's largest value are
    refused on the call that compiles the program and on every call that reuses it."""
    a = xp.asarray(np.full((2, 2), 3e20, np.float32))
    for _ in range(3):
        with pytest.raises(xp.PrecisionError):
            ROUTES[route](a, a, 1e-3)


@pytest.mark.parametrize(
    "bad, error",
    [(True, TypeError), (0, ValueError), (-1e-3, ValueError), (float("nan"), ValueError), ("1e-3", TypeError)],
)
def test_a_wrong_precision_argument_is_refused_on_every_call(bad, error):
    a, b = _operands()
    for _ in range(2):
        with pytest.raises(error, match="matmul"):
            xp.matmul(a, b, target_forward_error=bad)
    with pytest.raises(ValueError, match="einsum"):
        xp.einsum("ik,kj->ij", a, b, precision="no such mode")
    with pytest.raises(ValueError, match="einsum"):
        xp.einsum("ik,kj->ij", a, b, precision="no such mode")
    # and 1 (an int) stays a valid target after True was refused: the two hash alike
    assert xp.matmul(a, b, target_forward_error=1).shape == (8, 8)
