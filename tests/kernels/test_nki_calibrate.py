"""``check-neuron --calibrate``: the fit recovers known constants from measurements generated with the cost
formula written out here, a CPU-model measurement file calibrates to the defaults (nothing was measured), and
malformed or inconsistent files raise errors that say what is wrong."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import io
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trn_backend import check_neuron
from trn_backend.__main__ import main
from trn_backend.kernels.nki import calibrate, cost

RUNS = (256, 512, 1024, 2048, 4096, 8192)
PARTITION_BYTES = (4096, 16384)


def measurements(
    bytes_per_s: float,
    half_run: float,
    fixed: float,
    launch: float,
    compile_fixed: float,
    per_instruction: float,
    efficiency: float,
) -> dict:
    """A measurement file whose times follow the documented model exactly: a dma_copy of S bytes in runs of R
    takes fixed + S (R + half_run) / (R bytes_per_s); compiling a kernel of i instructions takes compile_fixed +
    i per_instruction; the large matmul takes its full-rate Tensor Engine time / efficiency."""
    dma = []
    for partition_bytes in PARTITION_BYTES:
        for run in RUNS:
            size, transfers = 128 * partition_bytes, 4
            seconds = transfers * (fixed + size * (run + half_run) / (run * bytes_per_s))
            dma.append({"run_bytes": run, "bytes": size, "transfers": transfers, "seconds": seconds})
    compiled = [
        {"instructions": i, "first_s": compile_fixed + i * per_instruction + 1e-3, "warm_s": 1e-3}
        for i in (22, 76, 360, 2016)
    ]
    tensor_s = 2.3e-4
    return {
        "format": calibrate.FORMAT,
        "dma": dma,
        "launch": {"cold_s": 2.0, "warm_s": launch},
        "compile": compiled,
        "tensor": {"seconds": tensor_s / efficiency, "tensor_s": tensor_s},
    }


@settings(max_examples=25)
@given(
    bytes_per_s=st.floats(1e10, 1e12),
    half_run=st.floats(16.0, 4096.0),
    fixed=st.floats(1e-7, 1e-5),
    launch=st.floats(1e-5, 1e-3),
    compile_fixed=st.floats(0.01, 10.0),
    per_instruction=st.floats(1e-6, 1e-2),
    efficiency=st.floats(0.05, 1.0),
)
def test_the_fit_recovers_the_constants_the_measurements_follow(
    bytes_per_s, half_run, fixed, launch, compile_fixed, per_instruction, efficiency
):
    data = measurements(bytes_per_s, half_run, fixed, launch, compile_fixed, per_instruction, efficiency)
    result = calibrate.fit(data, "measured.json")
    assert result.kept == {}
    found = result.calibration
    expected = {
        "dma_bytes_per_s": bytes_per_s,
        "dma_half_run_bytes": half_run,
        "dma_fixed_s": fixed,
        "launch_s": launch,
        "compile_fixed_s": compile_fixed,
        "compile_s_per_instruction": per_instruction,
        "tensor_efficiency": efficiency,
    }
    for name, value in expected.items():
        assert math.isclose(getattr(found, name), value, rel_tol=1e-6), (name, getattr(found, name), value)
    assert found.source == "measured.json"


def test_a_matmul_faster_than_the_full_rate_caps_the_efficiency_at_1():
    data = measurements(3e11, 512.0, 1e-6, 1e-4, 1.0, 1e-4, 1.0)
    data["tensor"]["seconds"] = data["tensor"]["tensor_s"] / 2
    assert calibrate.fit(data, "m.json").calibration.tensor_efficiency == 1.0


@pytest.fixture(scope="module")
def cpu_model_file(tmp_path_factory):
    """check-neuron --json on the CPU model (one case: the table is not what is under test here)."""
    path = tmp_path_factory.mktemp("calibrate") / "measured.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(check_neuron, "CASES", check_neuron.CASES[:1])
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["check-neuron", "--json", str(path)]) == 0
    return path


@pytest.mark.heavy
def test_a_cpu_model_file_calibrates_to_the_defaults(cpu_model_file, tmp_path, capsys):
    out = tmp_path / "calibration.json"
    assert main(["check-neuron", "--calibrate", str(cpu_model_file), "--calibration-out", str(out)]) == 0
    printed = capsys.readouterr().out
    written = json.loads(out.read_text())
    assert written == dataclasses.asdict(dataclasses.replace(cost.Calibration(), source=str(cpu_model_file)))
    assert cost.Calibration(**written).source == str(cpu_model_file)  # a valid Calibration
    for field in dataclasses.fields(cost.Calibration):
        if field.name != "source":
            assert re.search(rf"^  {field.name}: \S+.* kept \(.*not measured", printed, re.MULTILINE), field.name
    assert "  dma_bytes_per_s: the generation's kept (DMA not measured" in printed
    assert f"the cost model reads it where TRN_BACKEND_NKI_CALIBRATION={out}" in printed


@pytest.mark.heavy
def test_the_calibration_file_defaults_to_the_current_directory(cpu_model_file, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    data = json.loads(cpu_model_file.read_text())
    data.update(measurements(3e11, 512.0, 1.3e-6, 5e-5, 1.5, 2e-4, 0.8))  # as a device would have measured
    (tmp_path / "device.json").write_text(json.dumps(data))
    assert main(["check-neuron", "--calibrate", "device.json"]) == 0
    written = cost.Calibration(**json.loads((tmp_path / "nki_calibration.json").read_text()))
    assert math.isclose(written.dma_bytes_per_s, 3e11, rel_tol=1e-6) and written.source == "device.json"
    assert "  launch_s: 0.0004 -> 5e-05" in capsys.readouterr().out


def _broken(**changes) -> dict:
    data = measurements(3e11, 512.0, 1.3e-6, 5e-5, 1.5, 2e-4, 0.8)
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "is not a check-neuron --json measurement file \\(format 'list'"),
        ({"dma": []}, "format None, expected 'trn_backend check-neuron measurements, version 1'"),
        (
            _broken(dma=[{"run_bytes": 512, "bytes": 65536, "transfers": 4, "seconds": 1e-4}] * 5),
            "too few DMA measurements to fit: it needs at least two transfer sizes and two run lengths "
            "\\(5 rows given\\)",
        ),
        (
            _broken(dma=[{"run_bytes": r, "bytes": 65536, "transfers": 4, "seconds": 1e-4} for r in RUNS]),
            "too few DMA measurements",
        ),  # one transfer size: the fixed cost and the rate are not separable
        (
            _broken(
                dma=[
                    {"run_bytes": r, "bytes": s, "transfers": 4, "seconds": 1e-3 - s * 1e-9}
                    for r in RUNS
                    for s in (65536, 262144)
                ]
            ),
            "DMA measurements are inconsistent",
        ),  # faster when larger
        (_broken(dma=[{"run_bytes": 512, "bytes": 65536, "transfers": 4}]), "dma row 0 has no 'seconds'"),
        (
            _broken(dma=[{"run_bytes": 512, "bytes": 65536, "transfers": 4, "seconds": "fast"}]),
            "dma row 0's 'seconds' is 'fast', expected a finite number",
        ),
        (_broken(dma={"run_bytes": 512}), "'dma' is a dict, expected a list of measurement rows"),
        (
            _broken(dma=[{"run_bytes": 0, "bytes": 65536, "transfers": 4, "seconds": 1e-4}]),
            "run length, size or transfer",
        ),
        (_broken(launch={"cold_s": 1.0, "warm_s": -1e-4}), "launch measurements are inconsistent: they fit launch_s"),
        (_broken(launch={"cold_s": 1.0}), "launch has no 'warm_s'"),
        (
            _broken(compile=[{"instructions": 100, "first_s": 2.0, "warm_s": 1e-3}] * 3),
            "too few compile measurements to fit: it needs at least two shapes with different instruction counts",
        ),
        (
            _broken(compile=[{"instructions": i, "first_s": 10.0 - i * 1e-3, "warm_s": 1e-3} for i in (10, 100, 1000)]),
            "compile measurements are inconsistent: they fit compile_s_per_instruction = -0.001",
        ),
        (_broken(tensor={"seconds": 0.0, "tensor_s": 1e-4}), "tensor measurement is inconsistent"),
        (_broken(tensor={"seconds": float("nan"), "tensor_s": 1e-4}), "tensor's 'seconds' is nan"),
    ],
)
def test_malformed_or_inconsistent_measurements_raise(data, message):
    with pytest.raises(ValueError, match=message):
        calibrate.fit(data, "m.json")


def test_the_command_reports_unreadable_files(tmp_path, capsys):
    assert main(["check-neuron", "--calibrate", str(tmp_path / "missing.json")]) == 2
    assert "error: check-neuron --calibrate: cannot read" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["check-neuron", "--calibrate", str(tmp_path / "bad.json")]) == 2
    assert "is not JSON" in capsys.readouterr().err
    (tmp_path / "odd.json").write_text(json.dumps(_broken(launch={"cold_s": 1.0})))
    assert (
        main(
            ["check-neuron", "--calibrate", str(tmp_path / "odd.json"), "--calibration-out", str(tmp_path / "out.json")]
        )
        == 2
    )
    assert "error: calibrate: launch has no 'warm_s'" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()  # nothing written from a bad file


# --- measured kernels: the model's error, out of sample --------------------------------------------------------
KERNEL_ROWS = [
    {
        "kernel": "matmul",
        "mode": "fast",
        "bmkn": [1, 2048, 2048, 2048],
        "lnc": 2,
        "a_transposed": False,
        "seconds": 2.5e-4,
    },
    {"kernel": "bmm", "mode": "dd", "bmkn": [3, 512, 1024, 256], "lnc": 1, "seconds": 8e-5},
    {"kernel": "matmul", "mode": "sr", "bmkn": [1, 1024, 512, 768], "lnc": 2, "a_transposed": True, "seconds": 4e-5},
]


def fake_model(kernel, mode, bmkn, generation, lnc, a_transposed, calibration):
    """A modelled time that encodes its arguments: the test can tell every row was priced as given."""
    b, m, k, n = bmkn
    return (
        b
        * m
        * k
        * n
        * {"fast": 1, "dd": 3, "sr": 5}[mode]
        * lnc
        * (7 if a_transposed else 1)
        * {"trn1": 11, "trn2": 1}[generation]
        * 1e-12
        / calibration.tensor_efficiency
    )


def test_measured_kernel_rows_get_the_model_error_under_the_fitted_calibration_and_fit_nothing():
    data = measurements(3e11, 512.0, 1e-6, 5e-5, 1.5, 2e-4, 0.5)
    data["kernels"] = KERNEL_ROWS
    data["device"] = {"generation": "trn2"}
    result = calibrate.fit(data, "m.json", model=fake_model)
    without = calibrate.fit({k: v for k, v in data.items() if k != "kernels"}, "m.json", model=fake_model)
    assert result.calibration == without.calibration and result.kept == without.kept  # nothing fitted to them
    assert without.kernels == ()
    assert [(c.kernel, c.mode, c.bmkn, c.lnc, c.measured_s) for c in result.kernels] == [
        (r["kernel"], r["mode"], tuple(r["bmkn"]), r["lnc"], r["seconds"]) for r in KERNEL_ROWS
    ]
    # modelled by hand: b m k n x mode's factor x lnc x (7 if A is transposed) / the fitted efficiency (0.5)
    expected = [
        2048**3 * 1 * 2 * 1 * 1e-12 / 0.5,
        3 * 512 * 1024 * 256 * 3 * 1 * 1 * 1e-12 / 0.5,
        1024 * 512 * 768 * 5 * 2 * 7 * 1e-12 / 0.5,
    ]
    for check, modelled, row in zip(result.kernels, expected, KERNEL_ROWS, strict=True):
        assert math.isclose(check.modelled_s, modelled, rel_tol=1e-12)
        assert math.isclose(check.error, modelled / row["seconds"] - 1, rel_tol=1e-12)


def test_kernel_rows_are_priced_on_the_file_generation_and_an_empty_list_is_nothing():
    data = {"format": calibrate.FORMAT, "kernels": KERNEL_ROWS[:1], "device": {"generation": "trn1"}}
    (check,) = calibrate.fit(data, "m.json", model=fake_model).kernels
    assert math.isclose(check.modelled_s, 2048**3 * 2 * 11 * 1e-12 / cost.Calibration().tensor_efficiency)
    assert calibrate.fit({"format": calibrate.FORMAT, "kernels": []}, "m.json", model=fake_model).kernels == ()
    assert calibrate.fit({"format": calibrate.FORMAT, "kernels": None}, "m.json", model=fake_model).kernels == ()


def test_the_default_model_of_a_kernel_row_is_the_cost_models_time_at_the_rows_lnc(monkeypatch):
    calls = []

    def modelled(
        kernel,
        mode,
        bmkn,
        generation="trn2",
        a_is_transposed=False,
        float64=False,
        slices=None,
        calibration=None,
        lnc=None,
    ):
        calls.append((kernel, mode, bmkn, generation, a_is_transposed, float64, lnc, calibration))
        return type("Estimate", (), {"seconds": 1e-4})()

    monkeypatch.setattr(cost, "modelled", modelled)
    data = {"format": calibrate.FORMAT, "kernels": KERNEL_ROWS}
    result = calibrate.fit(data, "m.json")
    assert [c.error for c in result.kernels] == pytest.approx([1e-4 / r["seconds"] - 1 for r in KERNEL_ROWS])
    # sr's float32 steps run fast's kernel (cost.runs_as); the rows are float32 calls, at their LNC and layout
    assert [call[:7] for call in calls] == [
        ("matmul", "fast", (1, 2048, 2048, 2048), "trn2", False, False, 2),
        ("bmm", "dd", (3, 512, 1024, 256), "trn2", False, False, 1),
        ("matmul", "fast", (1, 1024, 512, 768), "trn2", True, False, 2),
    ]
    assert all(call[7] == result.calibration for call in calls)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**KERNEL_ROWS[0], "kernel": "conv"}, "kernels row 0's 'kernel' is 'conv'"),
        ({**KERNEL_ROWS[0], "bmkn": [1, 2, 3]}, r"kernels row 0's 'bmkn' is \[1, 2, 3\]"),
        ({**KERNEL_ROWS[0], "bmkn": [1, 2, 0, 4]}, "expected \\[b, m, k, n\\] of positive ints"),
        ({**KERNEL_ROWS[0], "lnc": 4}, "kernels row 0's 'lnc' is 4, expected 1 or 2"),
        ({**KERNEL_ROWS[0], "seconds": 0.0}, "a measured time is positive"),
        ({**KERNEL_ROWS[0], "seconds": None}, "kernels row 0's 'seconds' is None"),
        ({**KERNEL_ROWS[0], "a_transposed": "no"}, "'a_transposed' is 'no', expected true or false"),
        ({**KERNEL_ROWS[0], "mode": 3}, "kernels row 0's 'mode' is 3"),
        ("fast", "kernels row 0 is a str, expected an object"),
    ],
)
def test_malformed_kernel_rows_raise(row, message):
    with pytest.raises(ValueError, match=message):
        calibrate.fit({"format": calibrate.FORMAT, "kernels": [row]}, "m.json", model=fake_model)


def test_a_measurement_file_with_kernel_rows_round_trips_through_json(tmp_path):
    path = tmp_path / "measured.json"
    path.write_text(json.dumps({"format": calibrate.FORMAT, "kernels": KERNEL_ROWS}))
    result = calibrate.fit(json.loads(path.read_text()), str(path), model=fake_model)
    assert len(result.kernels) == len(KERNEL_ROWS) and result.calibration.source == str(path)


# --- the fit to published points ----------------------------------------------------------------------------------
def test_the_published_fit_is_least_squares_in_the_logarithms_with_each_point_left_out():
    """With a model time c / efficiency (trn2 points) or c / rate (trn1 points), least squares of log(modelled /
    published) puts each constant at the geometric mean of its points' c / published, and a point left out is
    predicted from the geometric mean of the others."""
    Point = collections.namedtuple("Point", "name generation c published_s")
    points = [
        Point("a", "trn2", 2.0, 2.3),
        Point("b", "trn2", 3.0, 3.4),
        Point("c", "trn2", 1.0, 1.05),
        Point("d", "trn1", 5e11, 2.1),
        Point("e", "trn1", 3e11, 1.2),
        Point("f", "trn1", 4e11, 2.0),
    ]

    def modelled(point, efficiency, rate):
        return point.c / (efficiency if point.generation == "trn2" else rate)

    def geometric(group):
        return math.exp(sum(math.log(p.c / p.published_s) for p in group) / len(group))

    result = calibrate.fit_published(points, modelled, start=(0.9, 1e11))
    trn2, trn1 = [p for p in points if p.generation == "trn2"], [p for p in points if p.generation == "trn1"]
    assert math.isclose(result.tensor_efficiency, geometric(trn2), rel_tol=1e-6)
    assert math.isclose(result.trn1_dma_bytes_per_s, geometric(trn1), rel_tol=1e-6)
    for p in points:
        group = trn2 if p.generation == "trn2" else trn1
        constant = geometric(group)
        assert math.isclose(result.errors[p.name], p.c / constant / p.published_s - 1, rel_tol=1e-6, abs_tol=1e-9)
        others = geometric([q for q in group if q is not p])
        assert math.isclose(result.left_out[p.name], p.c / others / p.published_s - 1, rel_tol=1e-6, abs_tol=1e-9)


def test_the_fitted_efficiency_is_capped_at_the_documented_rate():
    Point = collections.namedtuple("Point", "name generation c published_s")
    points = [Point("a", "trn2", 1.0, 0.5), Point("b", "trn2", 1.0, 0.6)]  # faster than the model's full rate
    result = calibrate.fit_published(points, lambda p, e, r: p.c / e, start=(0.9, 1e11))
    assert result.tensor_efficiency == 1.0
