"""The precision modes on Trainium as a front (trn_backend._neuron_front): dominance on made-up points, the table's
structure with planted times (the cost model's own numbers move with the kernels), native's two cases, a kernel
that refuses a size, the command, and docs/precision.md's table against the generated one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import trn_backend as xp
from trn_backend import _neuron_front as front
from trn_backend.__main__ import main
from trn_backend.kernels import bounds

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "precision.md"
PASSES = {"fast": 1.0, "sr": 1.0, "native": 4.0, "dd": 3.0, "bf16x6": 6.0, "ozaki": 11.0}


def _planted(table, refuse=()):
    """Times of each mode, n^3 times a per-mode factor; modes in ``refuse`` raise as a kernel that refuses."""

    def seconds(mode, n):
        if mode in refuse:
            raise AssertionError(f"{mode} refuses n = {n}")
        return table[mode] * n**3 * 1e-12

    return seconds


def test_dominance_is_no_worse_in_both_and_better_in_one():
    P = front.Point
    assert front.dominates(P("a", 1.0, 1e-5), P("b", 2.0, 1e-5))  # faster, as accurate
    assert front.dominates(P("a", 1.0, 1e-6), P("b", 1.0, 1e-5))  # as fast, more accurate
    assert not front.dominates(P("a", 1.0, 1e-5), P("b", 1.0, 1e-5))  # a tie
    assert not front.dominates(P("a", 1.0, 1e-4), P("b", 2.0, 1e-5))  # a trade
    assert not front.dominates(P("a", 1.0, None), P("b", 2.0, 1e-5))  # unknown bound: incomparable
    assert not front.dominates(P("a", 1.0, 1e-6), P("b", None, 1e-5))  # no time: incomparable
    points = [P("a", 1.0, 1e-5), P("b", 2.0, 1e-5), P("c", 2.0, 1e-6), P("d", 3.0, 1e-6)]
    assert front.dominators(points, "d") == ("c",) and front.dominators(points, "b") == ("a", "c")
    assert front.dominators(points, "a") == () == front.dominators(points, "c")


def test_natives_bound_in_each_case():
    assert front.native_bound("fp32-accurate", 4096) == bounds.gamma(4096, 2.0**-24)  # SGEMM's
    assert front.native_bound("unknown", 4096) is None
    with pytest.raises(ValueError, match="unknown case 'bf16'"):
        front.native_bound("bf16", 4096)


def test_the_front_with_times_in_passes():
    rows = front.front((1024, 4096), _planted(PASSES))
    assert [(r.n, r.mode) for r in rows] == [(n, m) for n in (1024, 4096) for m in front.MODES]
    by = {(r.n, r.mode): r for r in rows}
    for (n, mode), r in by.items():
        assert r.kernel == ("nki.matmul[fast]" if mode == "sr" else f"nki.matmul[{mode}]")
        expected = front.native_bound("fp32-accurate", n) if mode == "native" else xp.error_bound(mode, xp.float32, n)
        assert r.bound == expected and not r.problem
        assert r.dominated_by["unknown"] == ()  # in passes each step up in accuracy costs more: nothing dominated
    # dd is less accurate than an SGEMM and cheaper: no domination either way, in either case
    assert by[4096, "dd"].dominated_by["fp32-accurate"] == () and by[4096, "native"].dominated_by == {
        "fp32-accurate": (),
        "unknown": (),
    }
    text = front.markdown(rows)
    assert "| 4096 | native | nki.matmul[native] |" in text and "if fp32-accurate, else unknown" in text
    assert "not compared (bound unknown)" in text
    assert (
        "- On the known facts alone (native's fp32 precision unknown: native neither dominates nor is dominated): "
        "no mode is dominated." in text
    )
    assert "- fast and sr tie (the same kernel time and bound) at n = 1024, 4096: neither dominates the other." in text


def test_a_mode_dominated_only_if_fp32_is_accurate():
    # native as fast as dd: dd (the larger bound) is dominated by native, but only if native is SGEMM-accurate
    rows = front.front((1024,), _planted({**PASSES, "native": 3.0}))
    dd = next(r for r in rows if r.mode == "dd")
    assert dd.dominated_by == {"fp32-accurate": ("native",), "unknown": ()}
    lines = front.summary(rows)
    assert (
        lines[0] == "- If the Tensor Engine's fp32 products are as accurate as SGEMM's (u_s per product): dd is "
        "dominated at n = 1024 (by native)."
    )
    assert lines[1].endswith(": no mode is dominated.")


def test_a_dominated_mode_on_the_known_facts():
    # bf16x6 as fast as dd: dd is dominated whatever native's precision
    rows = front.front((2048,), _planted({**PASSES, "bf16x6": 3.0}))
    dd = next(r for r in rows if r.mode == "dd")
    assert dd.dominated_by["unknown"] == ("bf16x6",) and "bf16x6" in dd.dominated_by["fp32-accurate"]
    assert "| 2048 | dd | nki.matmul[dd] |" in front.table(rows) and "by bf16x6" in front.table(rows)


def test_a_kernel_that_refuses_a_size_is_not_compared():
    rows = front.front((1024,), _planted(PASSES, refuse=("ozaki",)))
    ozaki = next(r for r in rows if r.mode == "ozaki")
    assert ozaki.seconds is None and ozaki.problem == "AssertionError: ozaki refuses n = 1024"
    assert ozaki.dominated_by == {"fp32-accurate": (), "unknown": ()}
    assert "| 1024 | ozaki | nki.matmul[ozaki] | no kernel |" in front.table(rows)
    assert (
        "- ozaki has no kernel at n = 1024 (AssertionError: ozaki refuses n = 1024): not compared there."
        in front.summary(rows)
    )


def test_the_command_and_the_docs_block(monkeypatch, capsys, tmp_path):
    rows = front.front((1024,), _planted(PASSES))
    monkeypatch.setattr(front, "front", lambda: rows)  # the real one models every mode up to 8192^3
    assert main(["precision-report", "--front"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| n (M = K = N) | mode |") and "| 1024 | ozaki |" in out
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- front-table -->\nold\n<!-- /front-table -->\nafter\n")
    assert main(["precision-report", "--front", "--docs", str(page)]) == 0
    assert page.read_text() == f"before\n<!-- front-table -->\n{front.markdown()}<!-- /front-table -->\nafter\n"
    assert f"wrote the front-table block of {page}" in capsys.readouterr().out
    assert main(["precision-report", "--docs", str(page)]) == 2
    assert "--docs goes with --front" in capsys.readouterr().err
    (tmp_path / "plain.md").write_text("no block here\n")
    with pytest.raises(ValueError, match="plain.md has no <!-- front-table --> ... <!-- /front-table --> block"):
        front.update_docs(tmp_path / "plain.md")


def test_the_modelled_times_are_the_kernel_the_layer_runs():
    # sr's float32 results run fast's kernel: the same modelled time (the model's own number, compared to itself)
    assert front.modelled_seconds("sr", 256) == front.modelled_seconds("fast", 256) > 0


@pytest.mark.slow
def test_the_docs_table_is_current():
    # the cost model at n = 1024 to 8192 for every mode: a few minutes on the CPU model's counts
    documented = re.search(r"<!-- front-table -->\n(.*?)<!-- /front-table -->", DOC.read_text(), flags=re.S)
    assert documented, "docs/precision.md has no front-table block"
    assert documented.group(1) == front.markdown(), (
        "docs/precision.md's front-table is stale: run python -m trn_backend precision-report --front --docs "
        "docs/precision.md"
    )


def test_sizes_and_modes():
    assert front.SIZES == (1024, 2048, 4096, 8192)
    assert set(front.MODES) == {"fast", "native", "dd", "bf16x6", "ozaki", "sr"}
    assert front.step_note(1, "fp64", torch.float32, 64, 1e-8) is None  # no kernel: not on the front
