"""Every test here plans on one fixed interconnect, not on this machine's calibration (which a new calibration
run changes): the planner's choices in the tests then depend on the shapes alone."""

from __future__ import annotations

import pytest

import trn_backend.distributed as td
from trn_backend.distributed import _comm

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")
# 20 us per message, 1 GB/s, no native all-to-all (as gloo), a 10 GFLOP/s rank
TEST_LINK = _comm.Link(
    "test",
    dict.fromkeys(KINDS, 20e-6),
    dict.fromkeys(KINDS, 1e-9),
    False,
    {"float64": 1e10, "float32": 2e10},
    "fixed for the tests",
)


@pytest.fixture(autouse=True)
def fixed_network():
    with td.use_network(TEST_LINK):
        yield
