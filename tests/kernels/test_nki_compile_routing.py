"""The routing rule pays a kernel's compile: a signature's first call goes to the NKI kernel only when its modelled
run time is at least its modelled compile time; from the next call on the kernel runs. explain() shows both."""

from __future__ import annotations

import json

import pytest
import torch
from trn_backend.kernels.nki import cost

import trn_backend as xp
from trn_backend import config, kernels


@pytest.fixture
def calibrated(tmp_path, monkeypatch):
    """Point the cost model at a calibration file of the given fields (a tiny launch cost, so 128^3 is worth a
    kernel and the model runs fast)."""
    def use(**fields):
        path = tmp_path / f"calibration{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps({"launch_s": 1e-9, **fields}))
        monkeypatch.setenv(cost.CALIBRATION_VARIABLE, str(path))
        return cost.calibration()
    return use


def _run(a, b):
    with kernels.count_calls() as calls:
        kernels.matmul(a, b, "fast")
    return calls["nki.matmul", "fast"]


def test_a_first_call_runs_torch_while_compiling_costs_more_than_the_kernel(calibrated):
    calibrated(compile_fixed_s=10.0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    with config.set(nki="model"), kernels.first_calls():
        assert kernels.implementation("matmul", "fast", torch.float32, a.device, (1, 128, 128, 128)) == \
            "torch.matmul"
        assert _run(a, b) == 0  # the first call: torch
        assert _run(a, b) == 1  # compiled from here on
        assert _run(a, b) == 1
        assert _run(torch.randn(128, 256), torch.randn(256, 128)) == 0  # another shape: another first call
    with config.set(nki="model"), kernels.first_calls():
        assert _run(a, b) == 0  # the state is per process: first_calls() showed a fresh one


def test_a_kernel_that_outweighs_its_compile_runs_on_the_first_call(calibrated):
    calibration = calibrated(compile_fixed_s=0.0, compile_s_per_instruction=0.0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    estimate = cost.modelled("matmul", "fast", (1, 128, 128, 128), calibration=calibration)
    assert estimate.compile_seconds == 0.0 <= estimate.seconds
    with config.set(nki="model"), kernels.first_calls():
        assert _run(a, b) == 1


def test_compile_time_is_the_calibrated_line_through_the_program_size(calibrated):
    calibration = calibrated(compile_fixed_s=2.0, compile_s_per_instruction=1e-3)
    estimate = cost.modelled("matmul", "fast", (1, 256, 256, 256), calibration=calibration)
    assert estimate.program_instructions > 0
    assert estimate.compile_seconds == pytest.approx(2.0 + 1e-3 * estimate.program_instructions, rel=1e-12)


def test_an_explicit_threshold_routes_by_flops_alone(calibrated):
    calibrated(compile_fixed_s=10.0)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    with config.set(nki="model", nki_min_flops=0), kernels.first_calls():
        assert _run(a, b) == 1


def test_explain_shows_the_first_call_and_the_program(calibrated):
    calibrated(compile_fixed_s=10.0)
    with config.set(nki="model"), kernels.first_calls():
        first = xp.explain("ij,jk->ik", (128, 128), (128, 128), precision="fast", dtype=xp.float32)
        assert first.implementations == ("torch.matmul",)
        estimate = first.modelled[0]
        text = str(first)
        assert "torch.matmul (first call)" in text
        assert f"{estimate.program_instructions:,} instructions (compile ~{cost.format_seconds(10.0 + 1e-4 * estimate.program_instructions)})" in text  # noqa: E501
        kernels.matmul(torch.randn(128, 128), torch.randn(128, 128), "fast")
        then = xp.explain("ij,jk->ik", (128, 128), (128, 128), precision="fast", dtype=xp.float32)
        assert then.implementations == ("nki.matmul[fast]",) and "(first call)" not in str(then)
