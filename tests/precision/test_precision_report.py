"""``precision-report --device-model``: the modelled NKI kernel time per mode next to its measured error, and the
accuracy/cost frontier (a Pareto front over modelled time and measured error). Small shapes keep it fast."""

from __future__ import annotations

import re

import pytest
import torch
from matplotlib import image

from trn_backend import precision_report as report
from trn_backend.__main__ import main
from trn_backend.kernels.nki import cost

SMALL = ["--size", "16", "--k", "16", "512", "--repeats", "1"]  # as the report's test in test_precision.py


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


@pytest.mark.heavy
def test_cli_with_a_device_model_adds_modelled_columns_and_the_frontier_panel(tmp_path, capsys):
    png = tmp_path / "report.png"
    assert main(["precision-report", *SMALL, "--device-model", "trn2", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    header = "| time (ms) | trn2 time | vs fast | bound by | vector busy |"
    assert header in out and "a trn2 NeuronCore" in out
    rows = [_cells(line) for line in out.splitlines() if line.startswith("| ") and header not in line]
    assert len(rows) == 2 * len(report.MODES)
    for mode, K, *_, seconds, vs_fast, bound_by, vector in rows:
        if mode == "fp64":
            assert (seconds, vs_fast, bound_by, vector) == (report.NO_DEVICE_KERNEL, "-", "-", "-")
            continue
        assert re.fullmatch(r"\d[\d.]* (ns|us|ms|s)", seconds), (mode, K, seconds)
        assert re.fullmatch(r"\d+\.\dx", vs_fast) and bound_by in ("tensor", "vector", "scalar", "gpsimd", "dma")
        assert re.fullmatch(r"\d+%", vector)
        if mode == "fast":
            assert vs_fast == "1.0x"
    assert image.imread(png).shape[2] in (3, 4)
    # float32 outputs: sr's rows are fast's, and the report says why
    by_mode = {(r[0], r[1]): r[2:6] for r in rows}
    assert all(by_mode[("sr", K)] == by_mode[("fast", K)] for K in ("16", "512"))
    assert "\nsr equals fast on float32 outputs, bit for bit: sr rounds stochastically only where" in out


@pytest.mark.heavy
def test_figure_has_the_frontier_panel_only_with_costs():
    rows = report.measure((16, 64), size=8, repeats=1)
    costs = report.modelled(rows, size=8, dtype=torch.float32, generation="trn1")
    assert [c is None for c in costs] == [r.mode == "fp64" for r in rows]
    assert len(report.figure(rows, "error", costs, "frontier").axes) == 2
    assert len(report.figure(rows, "error").axes) == 1
    ratios = report.relative_to_fast(rows, costs)
    assert all(q == 1.0 for r, q in zip(rows, ratios, strict=True) if r.mode == "fast")


def test_device_model_choices_are_the_cost_models_generations(capsys):
    with pytest.raises(SystemExit):
        main(["precision-report", "--device-model", "trn9"])
    assert "trn1" in capsys.readouterr().err


def test_host_only_modes():
    assert report.host_only("fp64", torch.float32) and report.host_only("native", torch.float64)
    assert not any(report.host_only(m, torch.float32) for m in report.MODES if m != "fp64")


@pytest.mark.parametrize(
    ("points", "front"),
    [
        ([], []),
        ([(1.0, 1.0)], [0]),
        ([(2.0, 1e-3), (1.0, 1e-2), (3.0, 1e-3), (4.0, 1e-8)], [1, 0, 3]),  # (3, 1e-3): costlier, no more accurate
        ([(1.0, 1e-3), (1.0, 1e-3)], [0, 1]),  # equal points: both stay
        ([(1.0, 1e-3), (1.0, 1e-5)], [1]),  # same cost: the more accurate wins
        ([(2.0, 1e-5), (1.0, 1e-5)], [1]),  # same error: the cheaper wins
        ([(5.0, 1.0), (1.0, 10.0), (3.0, 2.0)], [1, 2, 0]),  # none dominated: ordered by cost
    ],
)
def test_pareto_front(points, front):
    assert report.pareto_front(points) == front


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1.7808e-5, "17.8 us"),
        (8.3333e-8, "83.3 ns"),
        (1.2e-4, "120 us"),
        (2.8e-6, "2.80 us"),
        (9.9996e-4, "1.00 ms"),
        (2.5, "2.50 s"),
        (4e-10, "0.400 ns"),
    ],
)
def test_format_seconds(seconds, text):
    assert cost.format_seconds(seconds) == text
