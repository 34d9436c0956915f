"""``check-neuron --calibrate``: the fit recovers known constants from measurements generated with the cost
formula written out here, a CPU-model measurement file calibrates to the defaults (nothing was measured), and
malformed or inconsistent files raise errors that say what is wrong."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trn_backend.kernels.nki import calibrate, cost

from trn_backend import check_neuron
from trn_backend.__main__ import main

RUNS = (256, 512, 1024, 2048, 4096, 8192)
PARTITION_BYTES = (4096, 16384)


def measurements(bytes_per_s: float, half_run: float, fixed: float, launch: float, compile_fixed: float,
                 per_instruction: float, efficiency: float) -> dict:
    """A measurement file whose times follow the documented model exactly: a dma_copy of S bytes in runs of R
    takes fixed + S (R + half_run) / (R bytes_per_s); compiling a kernel of i instructions takes compile_fixed +
    i per_instruction; the large matmul takes its full-rate Tensor Engine time / efficiency."""
    dma = []
    for partition_bytes in PARTITION_BYTES:
        for run in RUNS:
            size, transfers = 128 * partition_bytes, 4
            seconds = transfers * (fixed + size * (run + half_run) / (run * bytes_per_s))
            dma.append({"run_bytes": run, "bytes": size, "transfers": transfers, "seconds": seconds})
    compiled = [{"instructions": i, "first_s": compile_fixed + i * per_instruction + 1e-3, "warm_s": 1e-3}
                for i in (22, 76, 360, 2016)]
    tensor_s = 2.3e-4
    return {"format": calibrate.FORMAT, "dma": dma, "launch": {"cold_s": 2.0, "warm_s": launch},
            "compile": compiled, "tensor": {"seconds": tensor_s / efficiency, "tensor_s": tensor_s}}


@settings(max_examples=25)
@given(bytes_per_s=st.floats(1e10, 1e12), half_run=st.floats(16.0, 4096.0), fixed=st.floats(1e-7, 1e-5),
       launch=st.floats(1e-5, 1e-3), compile_fixed=st.floats(0.01, 10.0), per_instruction=st.floats(1e-6, 1e-2),
       efficiency=st.floats(0.05, 1.0))
def test_the_fit_recovers_the_constants_the_measurements_follow(bytes_per_s, half_run, fixed, launch,
                                                                  compile_fixed, per_instruction, efficiency):
    data = measurements(bytes_per_s, half_run, fixed, launch, compile_fixed, per_instruction, efficiency)
    result = calibrate.fit(data, "measured.json")
    assert result.kept == {}
    found = result.calibration
    expected = {"dma_bytes_per_s": bytes_per_s, "dma_half_run_bytes": half_run, "dma_fixed_s": fixed,
                "launch_s": launch, "compile_fixed_s": compile_fixed, "compile_s_per_instruction": per_instruction,
                "tensor_efficiency": efficiency}
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


@pytest.mark.parametrize(("data", "message"), [
    ([1, 2], "is not a check-neuron --json measurement file \\(format 'list'"),
    ({"dma": []}, "format None, expected 'trn_backend check-neuron measurements, version 1'"),
    (_broken(dma=[{"run_bytes": 512, "bytes": 65536, "transfers": 4, "seconds": 1e-4}] * 5),
     "too few DMA measurements to fit: it needs at least two transfer sizes and two run lengths \\(5 rows given\\)"),
    (_broken(dma=[{"run_bytes": r, "bytes": 65536, "transfers": 4, "seconds": 1e-4} for r in RUNS]),
     "too few DMA measurements"),  # one transfer size: the fixed cost and the rate are not separable
    (_broken(dma=[{"run_bytes": r, "bytes": s, "transfers": 4, "seconds": 1e-3 - s * 1e-9}
                  for r in RUNS for s in (65536, 262144)]), "DMA measurements are inconsistent"),  # faster when larger
    (_broken(dma=[{"run_bytes": 512, "bytes": 65536, "transfers": 4}]), "dma row 0 has no 'seconds'"),
    (_broken(dma=[{"run_bytes": 512, "bytes": 65536, "transfers": 4, "seconds": "fast"}]),
     "dma row 0's 'seconds' is 'fast', expected a finite number"),
    (_broken(dma={"run_bytes": 512}), "'dma' is a dict, expected a list of measurement rows"),
    (_broken(dma=[{"run_bytes": 0, "bytes": 65536, "transfers": 4, "seconds": 1e-4}]), "run length, size or transfer"),
    (_broken(launch={"cold_s": 1.0, "warm_s": -1e-4}), "launch measurements are inconsistent: they fit launch_s"),
    (_broken(launch={"cold_s": 1.0}), "launch has no 'warm_s'"),
    (_broken(compile=[{"instructions": 100, "first_s": 2.0, "warm_s": 1e-3}] * 3),
     "too few compile measurements to fit: it needs at least two shapes with different instruction counts"),
    (_broken(compile=[{"instructions": i, "first_s": 10.0 - i * 1e-3, "warm_s": 1e-3} for i in (10, 100, 1000)]),
     "compile measurements are inconsistent: they fit compile_s_per_instruction = -0.001"),
    (_broken(tensor={"seconds": 0.0, "tensor_s": 1e-4}), "tensor measurement is inconsistent"),
    (_broken(tensor={"seconds": float("nan"), "tensor_s": 1e-4}), "tensor's 'seconds' is nan"),
])
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
    assert main(["check-neuron", "--calibrate", str(tmp_path / "odd.json"),
                 "--calibration-out", str(tmp_path / "out.json")]) == 2
    assert "error: calibrate: launch has no 'warm_s'" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()  # nothing written from a bad file
