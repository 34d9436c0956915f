"""docs/trainium.md stays true to the code: its Python blocks run as written, and its cost tables (kernel times,
modes, calibration points) are what the cost model gives now."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "trainium.md"


@pytest.mark.heavy
def test_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})


def _benchmark():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import nki_cost_model
    finally:
        sys.path.pop(0)
    return nki_cost_model


def _assert_current(marker: str, table: str) -> None:
    documented = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", DOC.read_text(), flags=re.S)
    assert documented and documented.group(1) == table, (
        f"docs/trainium.md's {marker} is stale: run python benchmarks/nki_cost_model.py and paste its output"
    )


@pytest.mark.slow
def test_cost_table_is_current():
    nki_cost_model = _benchmark()
    for marker, table in (("cost-table", nki_cost_model.table()), ("modes-table", nki_cost_model.modes_table())):
        _assert_current(marker, table)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # traces every split kernel at its largest shapes: about 200 s alone on 2 cores
def test_program_table_is_current():
    _assert_current("program-table", _benchmark().program_table())


@pytest.mark.slow
def test_calibration_table_is_current():
    """The fitted constants, each calibration point's error in sample and left out of the fit, and the
    out-of-sample rows (a test of its own: the ports' counting runs and the refits take a while)."""
    _assert_current("calibration-table", _benchmark().calibration_table())
