"""explain(device="neuron"): a preview, from a machine without the Neuron toolchain, of the plan a Neuron device
runs: the kernel layer's own routing for a device of that type (the NKI kernel for a big float32 step, the torch
reference for a tiny one), the Neuron default mode, the modelled trn2 time, instruction count, compile time and
LNC, the same as the CPU model's routing under config.set(nki="model"); and the line for a step whose mode another
dominates on Trainium."""

from __future__ import annotations

import pytest
import torch
from trn_backend.kernels.nki import toolchain

import trn_backend as xp
from trn_backend import _neuron_front, config, kernels

pytestmark = pytest.mark.skipif(toolchain.REAL, reason="previews are for machines without the Neuron toolchain")

BIG = ((4096, 4096), (4096, 4096))  # 1.4e11 FLOPs: above every mode's routing threshold (docs/trainium.md)
SMALL = ((256, 300), (300, 128))


def test_a_big_float32_step_previews_its_nki_kernel():
    e = xp.explain("ij,jk->ik", *BIG, dtype=xp.float32, device="neuron")
    assert e.device == "neuron" and e.preview
    assert e.steps[0].resolved.mode == "fast"  # the Neuron default mode (native on the CPU)
    assert e.compiled_implementations == ("nki.matmul[fast]",)
    estimate = e.modelled[0]
    assert estimate.seconds > 0 and estimate.program_instructions > 0 and estimate.compile_seconds > 0
    assert estimate.cores == 2  # trn2's runtime launches at LNC=2 unless NEURON_LOGICAL_NC_CONFIG says otherwise
    text = str(e)
    assert "device: neuron (a preview of a Neuron device with the NKI toolchain" in text
    assert "nki.matmul[fast]" in text and "LNC=2" in text
    assert f"{estimate.program_instructions:,} instructions" in text
    # on the CPU the same call plans native and runs torch: the preview is not this machine's plan
    here = xp.explain("ij,jk->ik", *BIG, dtype=xp.float32)
    assert here.steps[0].resolved.mode == "native" and here.modelled == (None,) and here.device is None


def test_a_tiny_step_previews_the_torch_reference():
    e = xp.explain("ij,jk->ik", (8, 16), (16, 4), dtype=xp.float32, device="neuron", precision="dd")
    assert e.implementations == e.compiled_implementations == ("torch.matmul",) and e.modelled == (None,)
    assert e.dominated == ()
    # and so is a step no kernel takes: complex data
    c = xp.explain("ij,jk->ik", *BIG, dtype=xp.complex64, device="neuron")
    assert c.compiled_implementations == ("torch.matmul",) and c.modelled == (None,)


@pytest.mark.parametrize("precision", ["fast", "dd", "ozaki"])
def test_the_preview_is_what_the_cpu_model_routes(precision):
    # the route is the kernel layer's one rule: the preview of a Neuron device and the CPU model give the same
    # steps, kernels, estimates and roundings for one request (an explicit mode: the defaults differ by device)
    with config.set(nki_min_flops=0):
        preview = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision=precision, device="neuron")
    with config.set(nki="model", nki_min_flops=0):
        model = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision=precision)
    assert preview.compiled_implementations == model.compiled_implementations == (f"nki.matmul[{precision}]",)
    for field in ("steps", "implementations", "modelled", "rounding_steps", "path", "bound"):
        assert getattr(preview, field) == getattr(model, field), field
    # the text too, but for the device line and the lines on dominated modes (said for a Neuron device only)
    lines = [line for line in str(preview).splitlines() if line not in preview.dominated]
    assert lines[1].startswith("device: neuron") and lines[:1] + lines[2:] == str(model).splitlines()


def test_the_default_rule_agrees_with_the_cpu_model_on_a_big_step():
    with kernels.first_calls():
        preview = xp.explain("ij,jk->ik", *BIG, dtype=xp.float32, precision="fast", device="neuron")
        with config.set(nki="model"):
            model = xp.explain("ij,jk->ik", *BIG, dtype=xp.float32, precision="fast")
    assert preview.implementations == model.implementations
    assert preview.modelled == model.modelled and preview.compiled_implementations == ("nki.matmul[fast]",)
    if preview.implementations == ("torch.matmul",):  # a first call that runs torch while the kernel compiles
        assert "torch.matmul (first call)" in str(preview) and "then nki.matmul[fast]: " in str(preview)


@pytest.mark.parametrize("device", ["neuron", "neuron:0", "xla", "xla:1", torch.device("xla"), torch.device("xla", 0)])
def test_every_spelling_of_a_neuron_device_previews_it(device):
    with config.set(nki_min_flops=0):
        e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, device=device)
    assert e.preview and e.device in ("neuron", "xla")
    assert e.compiled_implementations == ("nki.matmul[fast]",)


def test_other_devices_and_none():
    plain = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32)
    assert plain.device is None and not plain.preview and "device:" not in str(plain)
    cpu = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, device="cpu")
    assert cpu.device == "cpu" and not cpu.preview and "device: cpu" in str(cpu).splitlines()
    assert cpu.steps == plain.steps
    cuda = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, device="cuda:0")  # planned, not run: no GPU needed
    assert cuda.device == "cuda" and cuda.implementations == ("torch.matmul",)
    with pytest.raises(ValueError, match=r"explain\(\): 'tpu' is not a device"):
        xp.explain("ij,jk->ik", *SMALL, device="tpu")
    with pytest.raises(TypeError, match=r"explain\(\): expected a device"):
        xp.explain("ij,jk->ik", *SMALL, device=3)


def test_a_target_is_ranked_by_the_trn2_cost_model_in_the_preview():
    e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, device="neuron", target_forward_error=1e-4)
    assert e.cost_basis == "trn2 cost model"
    assert e.steps[0].resolved.mode != "native"  # targets never pick native on Neuron until its fp32 is verified


def _costs(table):
    """A step_costs stand-in: each mode's planted time."""
    return lambda dtype, modes: [table[name] for name, _ in modes]


def test_a_dominated_step_says_so_and_names_the_dominating_mode(monkeypatch):
    # planted times: bf16x6 (the smaller bound at every K) as fast as dd, native faster still
    monkeypatch.setattr(_neuron_front, "step_costs", _costs(
        {"fast": 1.0, "sr": 1.0, "native": 1.5, "dd": 3.0, "bf16x6": 3.0, "ozaki": 11.0}))
    with config.set(nki_min_flops=0):
        e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="dd", device="neuron")
    assert e.dominated == (
        "step 1: dd is dominated on Trainium: bf16x6 is no slower and no less accurate (trn2 cost model's ranking "
        "of the kernels; bounds at K = 300); so is native if the Tensor Engine's fp32 products are as accurate as "
        "SGEMM's (u_s per product) (undocumented: check-neuron measures it)",)
    assert e.dominated[0] in str(e).splitlines()


def test_a_step_dominated_only_if_fp32_is_accurate_says_it_depends(monkeypatch):
    monkeypatch.setattr(_neuron_front, "step_costs", _costs(
        {"fast": 1.0, "sr": 1.0, "native": 2.0, "dd": 3.0, "bf16x6": 6.0, "ozaki": 11.0}))
    with config.set(nki_min_flops=0):
        e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="dd", device="neuron")
        fast = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="fast", device="neuron")
        here = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="dd")  # no Neuron device: no line
    assert e.dominated == (
        "step 1: dd is dominated on Trainium by native if the Tensor Engine's fp32 products are as accurate as "
        "SGEMM's (u_s per product) (trn2 cost model's ranking of the kernels; bounds at K = 300); that precision "
        "is undocumented: check-neuron measures it",)
    assert fast.dominated == () and here.dominated == ()


def test_sr_is_priced_as_the_fast_kernel_it_runs():
    # sr's float32 results have nothing to round: the kernel layer runs fast's kernel, and the note prices that
    sr, fast = _neuron_front.step_costs(torch.float32, [("sr", None), ("fast", None)])
    assert sr == fast > 0
    assert _neuron_front.step_note(1, "sr", torch.float32, 300, xp.error_bound("sr", xp.float32, 300)) is None


def test_the_opt_einsum_route_previews_each_call():
    with config.set(nki_min_flops=0):
        e = xp.explain("ij,jk,kl->il", (256, 300), (300, 128), (128, 64), dtype=xp.float32, precision="dd",
                       route="opt_einsum", device="neuron")
    assert e.preview and e.call_steps == (1, 1)
    assert e.compiled_implementations == ("nki.matmul[dd]", "nki.matmul[dd]")
