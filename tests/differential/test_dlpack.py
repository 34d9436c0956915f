"""DLPack both ways on odd layouts, in a child process that may abort (dlpack_cases.py): the child runs the
cases in order; when it dies, the case it was running is reported with the signal, and a new child runs the
rest. One child normally runs them all (the cost of one interpreter start, not one per case)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .dlpack_cases import ORDER

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def results() -> dict[str, str]:
    """case name -> "PASS" or the failure (a crash included), running the cases in as few children as it can."""
    out: dict[str, str] = {}
    remaining = list(ORDER)
    while remaining:
        proc = subprocess.run(
            [sys.executable, "-m", "tests.differential.dlpack_cases", *remaining],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ),
        )
        started = None
        for line in proc.stdout.splitlines():
            word, _, rest = line.partition(" ")
            name = rest[: rest.index(": ")] if word == "FAIL" else rest
            if word == "START":
                started = rest
            elif word in ("PASS", "FAIL"):
                out[name] = "PASS" if word == "PASS" else rest
                started = None
        if started is not None:  # the child died running this case
            out[started] = f"the process died (exit status {proc.returncode}) running it: {proc.stderr[-300:]}"
        elif proc.returncode != 0 and not out:
            raise RuntimeError(proc.stderr[-2000:])
        remaining = [n for n in remaining if n not in out]
    return out


@pytest.mark.heavy
@pytest.mark.parametrize("case", ORDER)
def test_dlpack(case: str) -> None:
    outcome = results()[case]
    assert outcome == "PASS", outcome
