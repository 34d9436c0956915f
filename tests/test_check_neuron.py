"""``python -m trn_backend check-neuron`` on the CPU model: the header, a row per case within its bound, the fp32
section, the exit code of a wrong kernel, and the measured path with the CPU standing in for a device."""

from __future__ import annotations

import re
import subprocess
import sys

import torch

from trn_backend import _device, check_neuron
from trn_backend.__main__ import main


def _row(case: check_neuron.Case, mode: str, result: str = "ok") -> re.Pattern[str]:
    """A table line of ``case`` in ``mode`` whose result column reads ``result``."""
    return re.compile(rf"^{case.kernel}\s+{mode}\s+{re.escape(case.inputs_label)}\s+{case.shape}\s+\S+\s+\S+\s+"
                      rf"{result}\s", re.MULTILINE)


def test_on_the_cpu_model_every_case_is_within_its_bound(capsys):
    assert main(["check-neuron"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"NKI toolchain\s+cpu-model", out)
    for name in ("torch", "torch-neuronx", "neuronx-cc", "nki", "Python"):
        assert re.search(rf"^  {re.escape(name)}\s+\S", out, re.MULTILINE), name
    assert "device: no Neuron device" in out
    assert "the kernels run on the CPU model of a trn2 NeuronCore" in out
    assert "time (modelled, trn2)" in out
    assert {c.kernel for c in check_neuron.CASES} == {"matmul", "bmm"}
    assert any(c.inputs == "cancel" for c in check_neuron.CASES)
    for case in check_neuron.CASES:
        for mode in check_neuron.MODES:
            assert len(_row(case, mode).findall(out)) == 1, (case, mode)
    assert "FAIL" not in out
    assert "effective significand bits 24.0" in out
    assert re.search(r"accumulation \(simulated\).*: sequential fp32 in K order$", out, re.MULTILINE)
    assert "the CPU model's own arithmetic by construction" in out
    assert "check-neuron: ok; 12/12 cases within their bounds" in out


def test_a_wrong_kernel_result_fails(monkeypatch, capsys):
    right = check_neuron.run_kernel

    def off_by_a_little(kernel, a, b, mode):
        c = right(kernel, a, b, mode)
        return c + 0.05 * c.abs().max()  # far outside even the fast mode's ~2**-7 bound

    monkeypatch.setattr(check_neuron, "run_kernel", off_by_a_little)
    assert main(["check-neuron"]) == 1
    out = capsys.readouterr().out
    for case in check_neuron.CASES:
        for mode in check_neuron.MODES:
            assert len(_row(case, mode, "FAIL").findall(out)) == 1, (case, mode)
    assert "check-neuron: FAIL: 12 of 12 cases outside their bounds" in out


def test_a_kernel_that_raises_is_a_failed_row_with_its_reason(monkeypatch, capsys):
    def broken(kernel, a, b, mode):
        if kernel == "bmm":
            raise RuntimeError("compilation failed")
        return check_neuron.nki.run(kernel, a, b, mode)

    monkeypatch.setattr(check_neuron, "run_kernel", broken)
    assert main(["check-neuron", "--seed", "1"]) == 1
    out = capsys.readouterr().out
    assert "bmm fast 3x65x130x513: RuntimeError: compilation failed" in out
    assert "check-neuron: FAIL: 2 of 12 cases outside their bounds" in out


def test_generation_trn1(capsys):
    assert main(["check-neuron", "--generation", "trn1"]) == 0
    out = capsys.readouterr().out
    assert "CPU model of a trn1 NeuronCore" in out and "time (modelled, trn1)" in out


def test_accumulation_verdicts():
    exact = 1.0000038146972656  # fp32(1 + 127 * 2**-25)
    assert check_neuron.accumulation_verdict(1.0, exact) == "sequential fp32 in K order"
    assert check_neuron.accumulation_verdict(exact, exact) == "exact / wider accumulation"
    assert check_neuron.accumulation_verdict(exact, 1.0) == "sequential fp32 in reverse K order"
    assert check_neuron.accumulation_verdict(1.0000019073486328, exact) == "other"


def test_with_a_device_times_are_measured(monkeypatch, capsys):
    # the CPU stands in for the Neuron device: the measured path (device transfer, synchronized median) runs
    monkeypatch.setattr(_device, "neuron_available", lambda: True)
    monkeypatch.setattr(_device, "neuron_device", lambda: torch.device("cpu"))
    monkeypatch.setattr(check_neuron.toolchain, "REAL", True)
    monkeypatch.setattr(check_neuron, "REPEATS", 1)
    assert main(["check-neuron"]) == 0
    out = capsys.readouterr().out
    assert "device: Neuron device cpu" in out and "no Neuron device" not in out
    assert "time (measured, median of 1)" in out
    assert "products (measured)" in out and "measured on Neuron device cpu." in out


def test_python_dash_m():
    done = subprocess.run([sys.executable, "-m", "trn_backend", "check-neuron"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check-neuron: ok" in done.stdout
