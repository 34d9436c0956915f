"""``python -m trn_backend check-neuron`` on the CPU model: the compile-and-run gate first (and what a failing mode
does to the command), the header, a row per case and mode within its bound through the NKI route, the device
assumptions section, the exit code of a wrong kernel, a missed route and a biased sr kernel, the verdict helpers
on made-up values, and the measured path with the CPU standing in for a device (our kernels' times included)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import re
import subprocess
import sys
import types

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from trn_backend import _device, check_neuron, config, kernels
from trn_backend.__main__ import main
from trn_backend.kernels.nki import toolchain

# two small cases (a matmul and a bmm) for the tests of failure paths: every mode still runs on each
SMALL = (check_neuron.Case("matmul", 1, 128, 128, 128), check_neuron.Case("bmm", 2, 64, 130, 96))
FULL_GATE = check_neuron.GATE_SHAPES  # the real gate runs once, in the module's full run
SMALL_GATE = (("matmul", (1, 3, 5, 7)), ("bmm", (2, 3, 5, 7)))  # elsewhere: M, K, N still all different


@pytest.fixture(autouse=True)
def small_gate(monkeypatch):
    """Every test's own runs pass a small gate (the module's full run, set up before, keeps the real one)."""
    monkeypatch.setattr(check_neuron, "GATE_SHAPES", SMALL_GATE)


def _row(case: check_neuron.Case, mode: str, result: str = "ok") -> re.Pattern[str]:
    """A table line of ``case`` in ``mode`` whose result column reads ``result``."""
    return re.compile(
        rf"^{case.kernel}\s+{mode}\s+{re.escape(case.inputs_label)}\s+{case.shape}\s+\S+\s+\S+\s+"
        rf"{result}\s",
        re.MULTILINE,
    )


def _assumption(out: str, label: str) -> tuple[str, str]:
    """(the verdict, the evidence line) of the assumption whose claim starts with ``label`` (``a.``, ``c2.``): the
    verdict follows the claim's first colon (claims have none of their own)."""
    found = re.search(rf"^  {re.escape(label)} [^\n]*?: ([^\n]+)\n    ([^\n]+)$", out, re.MULTILINE)
    assert found, (label, out)
    return found.group(1), found.group(2)


def _the_cpu_as_a_device(monkeypatch) -> None:
    """Pretend the CPU is a Neuron device with the real toolchain: check-neuron takes its measured path."""
    monkeypatch.setattr(_device, "neuron_available", lambda: True)
    monkeypatch.setattr(_device, "neuron_device", lambda: torch.device("cpu"))
    monkeypatch.setattr(check_neuron.toolchain, "REAL", True)
    monkeypatch.setattr(check_neuron, "REPEATS", 1)
    monkeypatch.setattr(check_neuron, "CASES", SMALL[:1])
    # small calibration measurements: the model simulates them, with real arithmetic
    monkeypatch.setattr(check_neuron, "DMA_RUN_BYTES", (256, 512))
    monkeypatch.setattr(check_neuron, "DMA_PARTITION_BYTES", (512, 1024))
    monkeypatch.setattr(check_neuron, "COMPILE_SHAPES", ((1, 128, 128, 128), (1, 128, 256, 256)))
    monkeypatch.setattr(check_neuron, "KERNEL_SHAPES", (("matmul", (1, 3, 5, 7)), ("bmm", (2, 3, 5, 7))))


@pytest.fixture(scope="module")
def model_json(tmp_path_factory) -> tuple[int, str, dict]:
    """One full run on the CPU model with --json (exit code, output, the measurement file), shared by the tests
    that read it; the stochastic-rounding switch probes must not spawn anything there."""
    spawned = []
    path = tmp_path_factory.mktemp("check") / "measured.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(check_neuron, "cast_counts", lambda *args: spawned.append(args) or {})
        patch.setattr(check_neuron, "GATE_SHAPES", FULL_GATE)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["check-neuron", "--json", str(path)])
    assert not spawned
    return code, out.getvalue(), json.loads(path.read_text())


@pytest.fixture(scope="module")
def model_run(model_json) -> tuple[int, str]:
    return model_json[:2]


@pytest.mark.heavy
def test_on_the_cpu_model_every_case_and_mode_is_within_its_bound(model_run):
    code, out = model_run
    assert code == 0, out
    assert re.search(r"NKI toolchain\s+cpu-model", out)
    for name in ("torch", "torch-neuronx", "neuronx-cc", "nki", "Python"):
        assert re.search(rf"^  {re.escape(name)}\s+\S", out, re.MULTILINE), name
    assert "device: no Neuron device" in out
    assert "the kernels run on the CPU model of a trn2 NeuronCore" in out
    assert "time (modelled, trn2)" in out
    assert set(check_neuron.MODES) == set(kernels.NKI_MODES)
    assert {c.kernel for c in check_neuron.CASES} == {"matmul", "bmm"}
    assert any(c.inputs == "cancel" for c in check_neuron.CASES)
    for case in check_neuron.CASES:
        for mode in check_neuron.MODES:
            assert len(_row(case, mode).findall(out)) == 1, (case, mode)
    assert "FAIL" not in out
    rows = len(check_neuron.CASES) * len(check_neuron.MODES)
    assert f"check-neuron: ok; {rows}/{rows} cases within their bounds" in out


@pytest.mark.heavy
def test_the_gate_runs_first_and_every_mode_compiles_and_runs(model_json):
    code, out, data = model_json
    lines = out.splitlines()
    assert lines[0] == "trn_backend check-neuron"
    assert lines[1].startswith(
        "compile-and-run gate (each mode once through the kernel layer's NKI route on the "
        "CPU model of a trn2 NeuronCore, matmul 200x300x700, bmm 3x200x300x700, at LNC=2"
    )
    modes = list(check_neuron.GATE_MODES)
    assert set(modes) == set(check_neuron.nki.MODES) | {"ozaki"}  # every kernel mode and ozaki's level sums
    for line, mode in zip(lines[2 : 2 + len(modes)], modes, strict=True):
        assert line.startswith(f"  {mode}: compiles and runs; max error <= bound: matmul 200x300x700 "), line
        assert (" bmm 3x200x300x700 " in line) and "FAIL" not in line
    assert "the sr kernel 200x300x700, bf16 result" in lines[2 + modes.index("sr")]
    assert lines[2 + len(modes)] == "" and lines[3 + len(modes)].startswith("  NKI toolchain")  # then the header
    assert [g["mode"] for g in data["gate"]] == modes
    # the model's runtime LNC: trn2's default, 2 (NEURON_LOGICAL_NC_CONFIG unset in the test environment)
    assert all(g["ok"] and g["lnc"] == check_neuron.LNC_DEFAULT["trn2"] == 2 for g in data["gate"])
    assert all(r["error"] <= r["bound"] for g in data["gate"] for r in g["runs"])


def test_the_gate_shapes_are_asymmetric_edges():
    (kernel, (b, m, k, n)), (batched, (batch, *mkn)) = FULL_GATE
    assert kernel == "matmul" and b == 1 and batched == "bmm" and batch == 3 and mkn == [m, k, n]
    assert len({m, k, n}) == 3 and all(d % 128 for d in (m, k, n))  # every tile dimension has an edge


def test_a_mode_that_fails_the_gate_stops_the_command(monkeypatch, capsys, tmp_path):
    right = check_neuron.run_gate

    def broken(kernel, a, b, mode):
        if mode == "dd":
            raise RuntimeError("compilation failed")
        if mode == "native" and kernel == "bmm":
            c = right(kernel, a, b, mode)
            return c + 0.05 * c.abs().max()
        return right(kernel, a, b, mode)

    table = []
    monkeypatch.setattr(check_neuron, "run_gate", broken)
    monkeypatch.setattr(check_neuron, "check", lambda *args: table.append(args))
    path = tmp_path / "measured.json"
    assert main(["check-neuron", "--json", str(path)]) == 1
    out = capsys.readouterr().out
    assert "  dd: FAIL: matmul 3x5x7: RuntimeError: compilation failed" in out.splitlines()
    assert re.search(r"^  native: FAIL: bmm 2x3x5x7: max error \S+ beyond the bound \S+$", out, re.MULTILINE)
    assert re.search(r"^  fast: compiles and runs; ", out, re.MULTILINE)
    assert "  NKI toolchain" in out and "device: no Neuron device" in out  # what a report of the failure needs
    assert not table and "device assumptions (" not in out and "measurements (" not in out  # nothing else ran
    assert re.search(
        r"check-neuron: FAIL: the compile-and-run gate failed for native, dd on the CPU model of a trn2 "
        r"NeuronCore; nothing else ran",
        out,
    )
    data = json.loads(path.read_text())
    assert [g["mode"] for g in data["gate"] if not g["ok"]] == ["native", "dd"]
    assert data["table"] == [] and data["kernels"] == [] and data["probes"] == []


def test_a_mode_that_misses_its_nki_route_fails_the_gate(monkeypatch, capsys):
    right = check_neuron.run_gate

    def torch_route(kernel, a, b, mode):
        with config.set(nki="off" if mode == "ozaki" else config.nki):
            return right(kernel, a, b, mode)

    monkeypatch.setattr(check_neuron, "run_gate", torch_route)
    assert main(["check-neuron"]) == 1
    out = capsys.readouterr().out
    assert (
        "  ozaki: FAIL: matmul 3x5x7: the NKI route did not run (kernels.matmul ran ozaki without nki.matmul)"
        in out.splitlines()
    )


@pytest.mark.heavy
def test_device_assumptions_on_the_model(model_run):
    _, out = model_run
    assert "device assumptions (undocumented; informational, except the sr kernel: ours):" in out
    # a: the model's adds are numpy float32's by construction; the probe still runs and must agree with it
    for label in ("a.", "a2."):  # the Vector Engine's and GpSimd's
        verdict, evidence = _assumption(out, label)
        assert verdict == "model: by construction"
        assert evidence.startswith("all 16384 results of 8192 pairs") and "equal numpy float32's" in evidence
    verdict, evidence = _assumption(out, "b.")
    assert verdict == "model: by construction" and evidence.endswith(": sequential fp32 in K order")
    for label in ("c.", "c3."):  # a Vector Engine cast and fast's GpSimd cast
        verdict, _ = _assumption(out, label)
        assert verdict == "not applicable (the CPU model has no runtime rounding switch)"
    verdict, evidence = _assumption(out, "c2.")
    assert verdict == "ok" and "0 neither neighbour" in evidence
    verdict, evidence = _assumption(out, "d.")
    assert verdict == "model: by construction" and "effective significand bits 24.0" in evidence
    assert "the CPU model's own arithmetic by construction" in out
    assert "; 0 device assumptions verified" in out  # the model's verdicts never count as verified


@pytest.mark.heavy
def test_on_the_cpu_model_nothing_is_timed(model_run):
    # every calibration row says it was not measured, with no number in it; the LNC says where it would come from
    _, out = model_run
    section = out.split("measurements (the cost model's calibration inputs")[1].split("\n\n")[0].splitlines()[1:]
    rows = [line for line in section if not line.startswith("  LNC")]
    assert len(rows) == 1 + len(check_neuron.DMA_RUN_BYTES) + len(check_neuron.COMPILE_SHAPES) + 1 + 1
    for line in rows:
        assert line.endswith(": not measured (CPU model)"), line
        assert not re.search(r"\d+(\.\d+)? ?(s|ms|us|ns|GB/s|%)\b", line), line
    assert "  LNC (logical NeuronCore config): not measured (CPU model); NEURON_LOGICAL_NC_CONFIG" in out


@pytest.mark.heavy
def test_the_measurement_file_on_the_cpu_model(model_json):
    _, out, data = model_json
    assert data["format"] == check_neuron.calibrate.FORMAT
    assert data["versions"]["NKI toolchain"] == "cpu-model" and data["versions"]["nki"] == "not installed"
    assert data["device"]["measured"] is False and data["device"]["generation"] == "trn2"
    assert data["lnc"]["value"] is None
    assert data["launch"] is None and data["tensor"] is None and data["dma"] == [] and data["compile"] == []
    assert data["kernels"] == []  # nothing is measured on the model
    assert [p["claim"].split(" ")[0] for p in data["probes"]] == ["a.", "a2.", "b.", "c.", "c3.", "c2.", "d."]
    assert not any(p["verdict"] == "verified" for p in data["probes"])
    assert len(data["table"]) == len(check_neuron.CASES) * len(check_neuron.MODES)
    assert all(r["ok"] and r["seconds_measured"] is False for r in data["table"])


@pytest.mark.heavy
def test_a_wrong_kernel_result_fails(monkeypatch, capsys):
    right = check_neuron.run_kernel

    def off_by_a_little(kernel, a, b, mode):
        c = right(kernel, a, b, mode)
        return c + 0.05 * c.abs().max()  # far outside even the fast mode's ~2**-7 bound

    monkeypatch.setattr(check_neuron, "CASES", SMALL)
    monkeypatch.setattr(check_neuron, "run_kernel", off_by_a_little)
    assert main(["check-neuron"]) == 1
    out = capsys.readouterr().out
    for case in SMALL:
        for mode in check_neuron.MODES:
            assert len(_row(case, mode, "FAIL").findall(out)) == 1, (case, mode)
    assert "check-neuron: FAIL: 12 of 12 cases outside their bounds" in out


@pytest.mark.heavy
def test_a_kernel_that_raises_is_a_failed_row_with_its_reason(monkeypatch, capsys):
    right = check_neuron.run_kernel

    def broken(kernel, a, b, mode):
        if kernel == "bmm" and mode == "ozaki":
            raise RuntimeError("compilation failed")
        return right(kernel, a, b, mode)

    monkeypatch.setattr(check_neuron, "CASES", SMALL)
    monkeypatch.setattr(check_neuron, "run_kernel", broken)
    assert main(["check-neuron", "--seed", "1"]) == 1
    out = capsys.readouterr().out
    assert "bmm ozaki 2x64x130x96: RuntimeError: compilation failed" in out
    assert len(_row(SMALL[1], "ozaki", "FAIL").findall(out)) == 1
    assert "check-neuron: FAIL: 1 of 12 cases outside their bounds" in out


@pytest.mark.heavy
def test_a_mode_that_misses_its_nki_route_fails(monkeypatch, capsys):
    right = check_neuron.run_kernel

    def torch_route(kernel, a, b, mode):
        if mode != "dd":
            return right(kernel, a, b, mode)
        with config.set(nki="off"):  # the torch reference: right answers, but not the NKI route
            return right(kernel, a, b, mode)

    monkeypatch.setattr(check_neuron, "CASES", SMALL)
    monkeypatch.setattr(check_neuron, "run_kernel", torch_route)
    assert main(["check-neuron"]) == 1
    out = capsys.readouterr().out
    assert "matmul dd 128x128x128: the NKI route did not run (kernels.matmul ran dd without nki.matmul)" in out
    assert "bmm dd 2x64x130x96: the NKI route did not run (kernels.bmm ran dd without nki.bmm)" in out
    assert "check-neuron: FAIL: 2 of 12 cases outside their bounds" in out


@pytest.mark.heavy
def test_a_biased_sr_kernel_fails_the_command(monkeypatch, capsys):
    right = check_neuron.run_nki

    def nearest(kernel, a, b, mode, seed=0):
        if mode != "sr":
            return right(kernel, a, b, mode)
        return right(kernel, a, b, "fast").to(torch.bfloat16)  # nearest even: every result rounds down

    monkeypatch.setattr(check_neuron, "CASES", SMALL[:1])
    monkeypatch.setattr(check_neuron, "run_nki", nearest)
    assert main(["check-neuron"]) == 1
    out = capsys.readouterr().out
    verdict, evidence = _assumption(out, "c2.")
    assert verdict == "FAIL" and " 0 rounded up (0.00%" in evidence
    assert "check-neuron: FAIL: the sr kernel is biased or failed; 6/6 cases within their bounds" in out


def test_with_a_device_times_are_measured_and_the_switch_is_probed(monkeypatch, capsys, tmp_path):
    # the CPU stands in for the Neuron device: the measured path (device transfer, synchronized median) runs, and
    # the switch probe's subprocesses are replaced by counts that show stochastic rounding with the switch only
    spawned = []

    def counts(switch, seed, on_gpsimd):
        spawned.append((switch, seed, on_gpsimd))
        return {"up": 8100, "down": 57436, "other": 0} if switch else {"up": 0, "down": 65536, "other": 0}

    _the_cpu_as_a_device(monkeypatch)
    monkeypatch.setattr(check_neuron, "cast_counts", counts)
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    path = tmp_path / "measured.json"
    assert main(["check-neuron", "--seed", "7", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert spawned == [(True, 7, False), (False, 7, False), (True, 7, True), (False, 7, True)]
    assert "device: Neuron device cpu" in out and "no Neuron device" not in out
    assert "time (measured, median of 1)" in out
    for label in ("a.", "a2.", "b.", "c.", "c3.", "d."):
        assert _assumption(out, label)[0] == "verified", label
    assert _assumption(out, "c.")[1].startswith("65536 casts of 1 + 2**-10 to bf16")
    assert _assumption(out, "c2.")[0] == "ok"
    assert "measured on Neuron device cpu." in out
    assert "; 6 device assumptions verified" in out
    # the calibration measurements ran (on the CPU's clock) and went into the file
    assert "LNC (logical NeuronCore config): 1 (NEURON_LOGICAL_NC_CONFIG=1)" in out
    # every measurement ran; none reads the CPU model's "not measured (CPU model)"
    assert "not measured (CPU model)" not in out and "launch of the smallest kernel: first call " in out
    data = json.loads(path.read_text())
    assert data["device"]["measured"] is True and data["lnc"]["value"] == 1
    assert set(data["launch"]) == {"cold_s", "warm_s"}
    # On the CPU's clock, and more so on a busy machine, a DMA, Tensor Engine or kernel time may not stand above
    # the launch probe's: such a time is left out and said below the table, never dropped silently. So each
    # probe is either a row or a "left out" problem, whatever the load.
    problems = data["problems"]
    assert all(p.endswith(", not above the launch: left out") for p in problems), problems
    assert out.count("not measured (see below)") <= len(problems)
    assert all(f"  {p}" in out.splitlines() for p in problems)
    per_partition = {512: "512 B", 1024: "1 KiB"}
    dma = [f"dma: runs of {r['run_bytes']} B, {per_partition[r['bytes'] // 128]} per partition" for r in data["dma"]]
    left_out = [p.split(" took ")[0] for p in problems]
    assert sorted(x for x in dma + left_out if x.startswith("dma: ")) == [
        "dma: runs of 256 B, 1 KiB per partition",
        "dma: runs of 256 B, 512 B per partition",
        "dma: runs of 512 B, 1 KiB per partition",
        "dma: runs of 512 B, 512 B per partition",
    ]
    assert all(r["transfers"] == 4 for r in data["dma"])
    assert [r["bmkn"] for r in data["compile"]] == [[1, 128, 128, 128], [1, 128, 256, 256]]
    assert data["compile"][0]["instructions"] < data["compile"][1]["instructions"]
    assert (data["tensor"] is None) == ("tensor engine: nki.matmul[fast] 128x256x256" in left_out)
    assert data["tensor"] is None or (data["tensor"]["bmkn"] == [1, 128, 256, 256] and data["tensor"]["tensor_s"] > 0)
    # our kernels, every mode at each shape (the sr kernel is matmul only), at the runtime's LNC
    expected = [f"nki.matmul[{mode}] 3x5x7" for mode in ("fast", "native", "dd", "bf16x6", "ozaki", "sr")] + [
        f"nki.bmm[{mode}] 2x3x5x7" for mode in ("fast", "native", "dd", "bf16x6", "ozaki")
    ]
    rows = [
        f"nki.{r['kernel']}[{r['mode']}] {'x'.join(map(str, r['bmkn'][1 if r['kernel'] == 'matmul' else 0 :]))}"
        for r in data["kernels"]
    ]
    assert sorted(rows + [x.removeprefix("kernels: ") for x in left_out if x.startswith("kernels: ")]) == sorted(
        expected
    )
    assert all(r["lnc"] == 1 and r["a_transposed"] is False and r["seconds"] > 0 for r in data["kernels"])
    assert all(g["ok"] and g["lnc"] == 1 for g in data["gate"])


@pytest.mark.heavy
def test_a_time_not_above_the_launch_is_left_out_and_said(monkeypatch, capsys, tmp_path):
    # a launch probe slower than everything (as on a busy machine): every DMA, Tensor Engine and kernel time is
    # left out, and each "not measured (see below)" has its reason below
    _the_cpu_as_a_device(monkeypatch)
    monkeypatch.setattr(check_neuron, "cast_counts", lambda switch, seed, on_gpsimd: {"up": 0, "down": 1, "other": 0})
    monkeypatch.setattr(check_neuron, "measure_launch", lambda where: {"cold_s": 1e6, "warm_s": 1e6})
    path = tmp_path / "measured.json"
    main(["check-neuron", "--json", str(path)])
    out = capsys.readouterr().out
    data = json.loads(path.read_text())
    assert data["dma"] == [] and data["tensor"] is None and data["kernels"] == []
    problems = data["problems"]
    assert len([p for p in problems if p.startswith("dma: ")]) == 4
    assert len([p for p in problems if p.startswith("tensor engine: ")]) == 1
    assert len([p for p in problems if p.startswith("kernels: ")]) == 11
    assert all(p.endswith(", not above the launch: left out") and f"  {p}" in out.splitlines() for p in problems)
    assert "  DMA HBM -> SBUF, runs of 256 B: not measured (see below)" in out
    assert "  Tensor Engine efficiency, nki.matmul[fast] 128x256x256: not measured (see below)" in out


def test_our_kernels_are_timed_in_every_mode(monkeypatch):
    # the CPU stands in for the device: every mode's kernel at each shape, as cost.modelled counts it
    _the_cpu_as_a_device(monkeypatch)
    where = check_neuron.find_where("trn2")
    problems = []
    rows = check_neuron.measure_kernels(where, 0.0, problems)
    assert problems == []
    assert [(r["kernel"], r["mode"], r["bmkn"]) for r in rows] == [
        ("matmul", mode, [1, 3, 5, 7]) for mode in ("fast", "native", "dd", "bf16x6", "ozaki", "sr")
    ] + [("bmm", mode, [2, 3, 5, 7]) for mode in ("fast", "native", "dd", "bf16x6", "ozaki")]
    assert all(set(r) == {"kernel", "mode", "bmkn", "lnc", "a_transposed", "seconds"} for r in rows)
    assert all(r["lnc"] == 2 and r["seconds"] > 0 for r in rows)  # NEURON_LOGICAL_NC_CONFIG unset: trn2's 2
    assert check_neuron.measure_kernels(where, 1e9, problems) == [] and len(problems) == len(rows)
    line = "\n".join(
        check_neuron.measurement_lines(where, check_neuron.Measured({"value": 2, "how": ""}, kernels=rows))
    )
    assert re.search(r"^  nki\.bmm 2x3x5x7 at LNC=2 \(less the launch\): fast \S+ \S+, native ", line, re.MULTILINE)


def test_the_kernel_shapes_stand_above_the_launch():
    # the default shapes: at least 2048^3's FLOPs in every row, whose modelled kernel times exceed the 0.4 ms launch
    assert {kernel for kernel, _ in check_neuron.KERNEL_SHAPES} == {"matmul", "bmm"}
    assert all(2 * b * m * k * n >= 2 * 2048**3 for _, (b, m, k, n) in check_neuron.KERNEL_SHAPES)


@pytest.mark.heavy
def test_a_switch_probe_that_fails_is_informational(monkeypatch, capsys):
    def no_device(switch, seed, on_gpsimd):
        raise RuntimeError("the probe subprocess exited 1: no Neuron device")

    right = check_neuron.run_probe

    def no_launch(kernel, device, *args):
        if kernel == "launch":
            raise RuntimeError("load failed")
        return right(kernel, device, *args)

    _the_cpu_as_a_device(monkeypatch)
    monkeypatch.setattr(check_neuron, "cast_counts", no_device)
    monkeypatch.setattr(check_neuron, "run_probe", no_launch)  # the calibration measurements are informational too
    assert main(["check-neuron"]) == 0
    out = capsys.readouterr().out
    verdict, evidence = _assumption(out, "c.")
    assert verdict == "could not run" and evidence == "RuntimeError: the probe subprocess exited 1: no Neuron device"
    assert "  launch of the smallest kernel: not measured (see below)" in out
    assert "  launch: could not run: RuntimeError: load failed" in out
    assert "  dma: not measured (it subtracts the launch, which did not run)" in out
    assert "; 4 device assumptions verified" in out  # the two switch probes did not run: not verified


@pytest.mark.heavy
def test_the_switch_probe_subprocess_needs_a_device():
    # the real spawn: the subprocess imports the command, finds no device and says so; nothing runs on the model
    with pytest.raises(RuntimeError, match="exited 1: the probe subprocess found no Neuron device"):
        check_neuron.cast_counts(True, 0, True)


# --- the verdict helpers on made-up values ---


def test_accumulation_verdicts():
    exact = 1.0000038146972656  # fp32(1 + 127 * 2**-25)
    assert check_neuron.accumulation_verdict(1.0, exact) == "sequential fp32 in K order"
    assert check_neuron.accumulation_verdict(exact, exact) == "exact / wider accumulation"
    assert check_neuron.accumulation_verdict(exact, 1.0) == "sequential fp32 in reverse K order"
    assert check_neuron.accumulation_verdict(1.0000019073486328, exact) == "other"


def test_rounding_verdict_tells_nearest_even_from_other_roundings():
    x = np.float32([1.0, 1.0 + 2.0**-23, 3.0])
    y = np.float32([2.0**-24, 2.0**-24, 1.0])
    nearest_sum = np.float32([1.0, 1.0 + 2.0**-22, 4.0])  # ties to even: down, then up
    nearest_difference = np.float32([1.0 - 2.0**-24, 1.0, 2.0])  # 1 - 2**-24 is exact
    holds, evidence = check_neuron.rounding_verdict(x, y, nearest_sum, nearest_difference)
    assert holds and evidence.startswith("all 6 results of 3 pairs")
    away = np.float32([1.0 + 2.0**-23, 1.0 + 2.0**-22, 4.0])  # ties away from zero
    holds, evidence = check_neuron.rounding_verdict(x, y, away, nearest_difference)
    assert not holds
    assert (
        evidence == "1 of 6 results differ from IEEE nearest even; first: 1.0 + 5.960464477539063e-08 gave "
        "1.0000001192092896, IEEE 1.0"
    )
    truncated = np.float32([1.0, 1.0 + 2.0**-23, 4.0])  # toward zero
    assert not check_neuron.rounding_verdict(x, y, truncated, nearest_difference)[0]
    assert not check_neuron.rounding_verdict(x, y, nearest_sum, np.float32([1.0 - 2.0**-24, 1.0, np.nan]))[0]


def test_rounding_pairs_catch_ties_away_and_truncation():
    x, y = check_neuron.rounding_pairs(np.random.default_rng(0))
    assert x.shape == y.shape == check_neuron.ROUNDING_SHAPE and x.dtype == y.dtype == np.float32
    assert check_neuron.rounding_verdict(x, y, x + y, x - y)[0]
    exact = x.astype(np.float64) + y.astype(np.float64)  # exact for every tie and near tie (gaps of <= 26 bits)
    nearest = (x + y).astype(np.float64)
    up = np.nextafter((x + y), np.where(exact > nearest, np.inf, -np.inf).astype(np.float32))
    ties = (exact - nearest) == (up.astype(np.float64) - exact)
    assert ties.sum() > 1000
    away = np.where(ties & (np.abs(up) > np.abs(x + y)), up, x + y)
    assert not check_neuron.rounding_verdict(x, y, away, x - y)[0]


def test_switch_verdicts():
    on = {"up": 8192, "down": 57344, "other": 0}
    off = {"up": 0, "down": 65536, "other": 0}
    verdict, evidence = check_neuron.switch_verdict(on, off)
    assert verdict == "verified"
    assert evidence == (
        "65536 casts of 1 + 2**-10 to bf16 (1/8 of the way to 1 + 2**-7): with the switch 8192 "
        "rounded up (stochastic rounding: ~8192), 0 neither neighbour; without it 0 up, 0 neither"
    )
    assert check_neuron.switch_verdict(off, off)[0] == "refuted"  # the switch does not reach the cast
    assert check_neuron.switch_verdict(on, on)[0] == "inconclusive"  # rounds up without the switch too
    assert check_neuron.switch_verdict({"up": 1, "down": 65534, "other": 1}, off)[0] == "inconclusive"


def test_unbiased_verdicts():
    below, above, exact = check_neuron.CAST_NEIGHBOURS + (check_neuron.CAST_VALUE,)
    fair = np.where(np.arange(80000) % 8 == 0, above, below)  # exactly 1/8 up
    holds, evidence = check_neuron.unbiased_verdict(fair, below, above, exact)
    assert holds and evidence.startswith("80000 results: 10000 rounded up (12.50%, expected 12.50%), 70000 down")
    assert not check_neuron.unbiased_verdict(np.full(80000, below), below, above, exact)[0]  # nearest even
    biased = np.where(np.arange(80000) % 6 == 0, above, below)  # 1/6 up: the mean is far off
    holds, evidence = check_neuron.unbiased_verdict(biased, below, above, exact)
    assert not holds and "standard errors" in evidence
    odd = np.append(fair, 1.5)  # a result that is neither neighbour
    assert not check_neuron.unbiased_verdict(odd, below, above, exact)[0]


@pytest.mark.heavy
def test_python_dash_m_generation_trn1():
    done = subprocess.run(
        [sys.executable, "-m", "trn_backend", "check-neuron", "--generation", "trn1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CPU model of a trn1 NeuronCore" in done.stdout and "time (modelled, trn1)" in done.stdout
    assert "check-neuron: ok" in done.stdout


# --- toolchain detection by distribution version ---


def _installed(monkeypatch, **versions: str | None) -> None:
    """importlib.metadata as if the distributions named (underscores for dashes) had these versions (None: not
    installed); the others as they are."""
    wanted = {name.replace("_", "-"): version for name, version in versions.items()}
    real = importlib.metadata.version

    def version(name):
        if name not in wanted:
            return real(name)
        if wanted[name] is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return wanted[name]

    monkeypatch.setattr(importlib.metadata, "version", version)


def _fake_nki(monkeypatch, dunder_version: str) -> None:
    """Importable nki, nki.language and nki.isa modules whose nki.__version__ is ``dunder_version``."""
    for name in ("nki", "nki.language", "nki.isa"):
        module = types.ModuleType(name)
        module.__version__ = dunder_version
        monkeypatch.setitem(sys.modules, name, module)


def test_the_nki_version_is_the_distributions_not_dunder_version(monkeypatch):
    # the stubs do not document nki.__version__: a distribution 0.6.1 whose module says 0.1 is used as 0.6.1
    _installed(monkeypatch, nki="0.6.1", neuronx_cc="2.21.33363.0", torch_neuronx=None)
    _fake_nki(monkeypatch, "0.1")
    modules, found = toolchain.detect()
    assert modules is not None and modules[0] is sys.modules["nki"]
    assert found == "0.6.1 (distribution nki)"
    assert toolchain.select("nki")[3] == "nki 0.6.1"
    assert toolchain.distributions() == [
        ("nki", "0.6.1 (distribution nki)"),
        ("neuronx-cc", "2.21.33363.0"),
        ("torch-neuronx", "not installed"),
    ]
    shown = dict(check_neuron.versions())
    assert shown["nki"] == "0.6.1 (distribution nki)" and shown["neuronx-cc"] == "2.21.33363.0"
    assert shown["torch-neuronx"] == "not installed" and shown["torch"] == importlib.metadata.version("torch")


def test_an_old_or_broken_nki_is_ignored_and_says_why(monkeypatch):
    _installed(monkeypatch, nki=None)
    assert toolchain.detect() == (None, "not installed")
    with pytest.raises(
        ImportError,
        match="TRN_BACKEND_NKI_TOOLCHAIN=nki but the NKI toolchain is not installed; it is the distribution nki",
    ):
        toolchain.select("nki")
    _installed(monkeypatch, nki="0.5.2")
    _fake_nki(monkeypatch, "0.6.0")  # importable, and its __version__ claims 0.6: the distribution decides
    assert toolchain.detect() == (
        None,
        "0.5.2 installed but older than 0.6: ignored (the kernels need NKI 0.6 or newer, Neuron 2.32+)",
    )
    with pytest.raises(ImportError, match="is 0.5.2 installed but older than 0.6: ignored"):
        toolchain.select("nki")
    assert toolchain.select("auto")[3] == "cpu-model"  # auto falls back to the model
    _installed(monkeypatch, nki="0.6.0")
    for name in ("nki", "nki.language", "nki.isa"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails (PyPI's placeholder has no submodules)
    modules, found = toolchain.detect()
    assert (
        modules is None and found.startswith("0.6.0 installed but does not import (") and found.endswith("): ignored")
    )
    assert dict(check_neuron.versions())["nki"] == found


@given(
    major=st.integers(0, 3),
    minor=st.integers(0, 12),
    patch=st.integers(0, 40),
    suffix=st.sampled_from(("", ".dev3", "rc1", ".post2", "+local.1")),
)
def test_nki_versions_from_0_6_on_are_used(major, minor, patch, suffix):
    version = f"{major}.{minor}.{patch}{suffix}"
    with pytest.MonkeyPatch.context() as patch_:
        _installed(patch_, nki=version)
        _fake_nki(patch_, "0")
        modules, found = toolchain.detect()
    supported = major > 0 or minor >= 6  # (major, minor) >= (0, 6), written out
    assert (modules is not None) == supported
    assert found == (
        f"{version} (distribution nki)"
        if supported
        else f"{version} installed but older than 0.6: ignored (the kernels need NKI 0.6 or newer, Neuron 2.32+)"
    )


def test_lnc_from_the_environment_or_the_generations_default(monkeypatch):
    device = check_neuron.Where(torch.device("cpu"), True, "", "")
    model = check_neuron.Where(torch.device("cpu"), False, "", "")
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    assert check_neuron.logical_cores(device, "trn2") == {
        "value": 2,
        "how": "NEURON_LOGICAL_NC_CONFIG not set: the trn2 runtime's default, 2",
    }
    assert check_neuron.logical_cores(device, "trn1")["value"] == 1
    assert check_neuron.logical_cores(model, "trn2")["value"] is None  # no runtime on the CPU
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    assert check_neuron.logical_cores(device, "trn2") == {"value": 1, "how": "NEURON_LOGICAL_NC_CONFIG=1"}
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "two")
    assert check_neuron.logical_cores(device, "trn2") == {
        "value": None,
        "how": "NEURON_LOGICAL_NC_CONFIG='two' is not a core count",
    }


def test_the_dma_probe_moves_runs_of_the_asked_length():
    # on the model, which records each dma_copy's bytes and contiguous run: DMA_TRANSFERS copies of the asked size
    # in runs of the asked length, and every transfer's first element arrives
    # (a probe is not split over the programs of an LNC=2 launch: each physical core moves the same data)
    from trn_backend.kernels.nki import jitted, lnc

    probe = jitted("dma_runs", "model", "probes")
    for run, partition_bytes in ((256, 1024), (1024, 1024), (512, 4096)):
        src = check_neuron.dma_source(run, partition_bytes)
        assert torch.equal(probe[lnc("model")](src), src[:, :, 0, 0].T)
        for core in probe.last_run.cores:
            big = {key: n for key, n in core.events.items() if key[2] == 128 * partition_bytes}
            assert big == {("dma", "dma_copy", 128 * partition_bytes, run, False): check_neuron.DMA_TRANSFERS}
