"""The alpha-beta calibration: the fit recovers the parameters it was made from, clips negative ones, the shipped
interconnect table is complete, and a quick 2-process gloo run goes end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from trn_backend.distributed import calibrate

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")
TABLE = Path(calibrate.__file__).resolve().parent.parent / "data" / "interconnects.json"


def ring_seconds(kind: str, p: int, n: float, alpha: float, beta: float) -> float:
    """The ring / pairwise costs of Thakur, Rabenseifner and Gropp (2005), written out independently of the
    module under test."""
    if kind == "all_gather":
        return (p - 1) * alpha + (p - 1) * n * beta
    if kind in ("reduce_scatter", "all_to_all"):
        return (p - 1) * alpha + (p - 1) / p * n * beta
    if kind == "all_reduce":
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta
    raise AssertionError(kind)


def synthetic(kind: str, alpha: float, beta: float) -> list[tuple[int, float, float]]:
    return [(p, float(n), ring_seconds(kind, p, n, alpha, beta)) for p in (2, 4) for n in (8, 512, 2**15, 2**23)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("alpha", "beta"), [(5e-4, 2.5e-9), (2e-6, 1 / 512e9), (1e-5, 4e-11)])
def test_fit_recovers_alpha_and_beta(kind: str, alpha: float, beta: float) -> None:
    a, b = calibrate.fit_alpha_beta(kind, synthetic(kind, alpha, beta))
    assert math.isclose(a, alpha, rel_tol=1e-9)
    assert math.isclose(b, beta, rel_tol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_modelled_seconds_is_the_ring_cost(kind: str) -> None:
    for p in (2, 3, 4, 16):
        for n in (8.0, 4096.0, 2.0**23):
            assert math.isclose(
                calibrate.modelled_seconds(kind, p, n, 3e-5, 7e-10),
                ring_seconds(kind, p, n, 3e-5, 7e-10),
                rel_tol=1e-12,
            )


def test_fit_from_one_group_size() -> None:
    samples = [(2, float(n), ring_seconds("all_gather", 2, n, 1e-4, 1e-9)) for n in (8, 4096, 2**20)]
    a, b = calibrate.fit_alpha_beta("all_gather", samples)
    assert math.isclose(a, 1e-4, rel_tol=1e-9) and math.isclose(b, 1e-9, rel_tol=1e-9)


def test_negative_latency_is_clipped() -> None:
    # times that grow with size but fall below the line through the origin: the free fit's alpha is negative
    samples = [(2, n, 1e-9 * n - 1e-4) for n in (1e6, 2e6, 4e6, 8e6)]
    a, b = calibrate.fit_alpha_beta("all_gather", samples)
    assert a == 0.0 and b > 0
    # beta alone fits the relative residuals best near the samples' slope
    assert 0.8e-9 < b < 1e-9


def test_negative_bandwidth_term_is_clipped() -> None:
    # times that shrink as the buffers grow: beta would be negative
    samples = [(2, n, 1e-3 - 1e-11 * n) for n in (8.0, 1e6, 2e7)]
    a, b = calibrate.fit_alpha_beta("all_reduce", samples)
    assert b == 0.0 and a > 0


def test_fit_rejects_bad_samples() -> None:
    with pytest.raises(ValueError):
        calibrate.fit_alpha_beta("all_gather", [])
    with pytest.raises(ValueError):
        calibrate.fit_alpha_beta("all_gather", [(2, 8.0, 0.0)])
    with pytest.raises(ValueError):
        calibrate.fit_alpha_beta("broadcast", [(2, 8.0, 1e-3)])


def test_residuals_are_one_on_the_model() -> None:
    samples = synthetic("reduce_scatter", 1e-4, 1e-9)
    assert all(math.isclose(r, 1.0, rel_tol=1e-12) for r in calibrate.residuals("reduce_scatter", samples, 1e-4, 1e-9))


def test_shipped_table() -> None:
    data = json.loads(TABLE.read_text())
    assert {"gloo-cpu", "trn2-neuronlink", "trn2-efa"} <= set(data)
    for name in ("trn2-neuronlink", "trn2-efa"):
        entry = data[name]
        assert entry["basis"] == "published"
        assert entry["sources"] and all(url.startswith("https://") for url in entry["sources"])
        assert entry["note"]
        assert entry["all_to_all_native"] is True
        for kind in KINDS:
            fit = entry["collectives"][kind]
            assert fit["alpha_s"] > 0 and fit["beta_s_per_byte"] > 0
    gloo = data["gloo-cpu"]
    assert gloo["basis"] == "measured"
    assert gloo["command"] == "python -m trn_backend.distributed.calibrate --ranks 2 4"
    for field in ("date", "machine", "torch"):
        assert isinstance(gloo[field], str) and gloo[field]
    assert gloo["all_to_all_native"] is False
    assert set(gloo["collectives"]) == set(KINDS)
    for kind in KINDS:
        fit = gloo["collectives"][kind]
        # all_to_all alone may be null: a backend without it
        assert fit is not None or kind == "all_to_all"
        if fit is not None:
            assert fit["alpha_s"] >= 0 and fit["beta_s_per_byte"] >= 0
            assert fit["alpha_s"] + fit["beta_s_per_byte"] > 0
    assert gloo["matmul_flops_per_s"]["float64"] > 0 and gloo["matmul_flops_per_s"]["float32"] > 0


@pytest.mark.heavy
@pytest.mark.timeout(120)
def test_quick_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "interconnects.json"
    out.write_text(json.dumps({"other": {"kept": True}}))
    assert calibrate.main(["--ranks", "2", "--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["other"] == {"kept": True}
    entry = data["gloo-cpu"]
    assert entry["command"] == "python -m trn_backend.distributed.calibrate --ranks 2 --quick"
    for kind in ("all_gather", "reduce_scatter", "all_reduce"):
        fit = entry["collectives"][kind]
        assert fit["alpha_s"] >= 0 and fit["beta_s_per_byte"] >= 0
        assert fit["alpha_s"] + fit["beta_s_per_byte"] > 0
        assert len(entry["samples"][kind]) == len(calibrate.QUICK_SIZES)
    assert entry["matmul_flops_per_s"]["float64"] > 0
    printed = capsys.readouterr().out
    assert "alpha (us)" in printed and "all_reduce" in printed
