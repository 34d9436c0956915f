"""docs/trainium.md stays true to the code: its Python blocks run as written, and its cost tables (kernel times,
modes, calibration points) are what the cost model gives now."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "trainium.md"


def test_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})


def test_cost_table_is_current():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import nki_cost_model
    finally:
        sys.path.pop(0)
    text = DOC.read_text()
    for marker, table in (("cost-table", nki_cost_model.table()), ("modes-table", nki_cost_model.modes_table()),
                          ("calibration-table", nki_cost_model.calibration_table())):
        documented = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", text, flags=re.S)
        assert documented and documented.group(1) == table, \
            f"docs/trainium.md's {marker} is stale: run python benchmarks/nki_cost_model.py and paste its output"
