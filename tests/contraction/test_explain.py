"""explain(): the path, per-step plans and totals as numbers and text; the `python -m trn_backend explain` CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import trn_backend as xp
from trn_backend import _neuron_front, config, kernels
from trn_backend.__main__ import main
from trn_backend.kernels.nki import toolchain


def test_chain_numbers_and_text():
    e = xp.explain("ij,jk,kl->il", (512, 512), (512, 512), (512, 512))
    assert e.path == ((0, 1), (0, 1)) and e.kernel_calls == 2
    assert [p.bmkn for p in e.steps] == [(1, 512, 512, 512)] * 2
    assert e.flops == 2 * 2 * 512**3 and e.largest_intermediate == 512 * 512
    text = str(e)
    for piece in (
        "path: [(0, 1), (0, 1)]",
        "ij,jk->ik",
        "matmul",
        "(1, 512, 512, 512)",
        "2.68e+08",
        "262,144",
        "native",
        "total: 2 kernel call(s), 5.37e+08 FLOPs, largest intermediate 262,144 elements",
    ):
        assert piece in text, piece
    assert repr(e).startswith("Explanation('ij,jk,kl->il', steps=2")


def test_modes_bounds_and_per_step_k():
    e = xp.explain("ij,jk,kl->il", (8, 16), (16, 4096), (4096, 8), precision="dd", optimize=[(0, 1), (0, 1)])
    assert [p.resolved.mode for p in e.steps] == ["dd", "dd"]
    assert [p.bmkn[2] for p in e.steps] == [16, 4096]
    assert e.steps[0].resolved.bound < e.steps[1].resolved.bound  # each step's bound follows its own K
    assert f"{e.steps[1].resolved.bound:.2g}" in str(e)
    assert "native  -" in str(xp.explain("ij,jk->ik", (2, 3), (3, 4), dtype=xp.int64))  # no bound: "-"


def test_the_cost_basis_of_a_targets_choice():
    from trn_backend import _mode_costs, _precision

    date = _mode_costs.table()["devices"]["cpu"]["date"]
    shapes = ((8, 16), (16, 4096), (4096, 8))
    # float32 operands (the CPU's default float is float64, whose native product meets 1e-4 at every step)
    e = xp.explain("ij,jk,kl->il", *shapes, optimize=[(0, 1), (0, 1)], target_forward_error=1e-4, dtype=xp.float32)
    assert [p.resolved.mode for p in e.steps] == ["native", "fp64"]  # the cheapest on the CPU that meet it
    assert e.cost_basis == f"cpu calibration, benchmarks {date}"
    assert (
        f"modes: the cheapest meeting the target, cost basis: cpu calibration, benchmarks {date}" in str(e).splitlines()
    )
    with xp.precision(target_relative_error=1e-3):  # a block's target: the same basis, where checks start
        assert xp.explain("ij,jk", (2, 3), (3, 4), dtype=xp.float32).cost_basis == e.cost_basis
    with _precision.planted_costs({}):  # no calibration for the device: the pass count ranks the modes
        fallback = xp.explain(
            "ij,jk,kl->il", *shapes, optimize=[(0, 1), (0, 1)], target_forward_error=1e-4, dtype=xp.float32
        )
    assert [p.resolved.mode for p in fallback.steps] == ["dd", "bf16x6"]
    assert "cost basis: pass count (no calibration for cpu)" in str(fallback)
    # no target, no ranking: an explicit mode, the device default, or an exact integer product
    for quiet in (
        xp.explain("ij,jk", (2, 3), (3, 4), precision="dd"),
        xp.explain("ij,jk", (2, 3), (3, 4)),
        xp.explain("ij,jk", (2, 3), (3, 4), dtype=xp.int64, target_forward_error=1e-3),
    ):
        assert quiet.cost_basis is None and "cost basis" not in str(quiet)
    with xp.precision(target_forward_error=1e-3):
        assert xp.explain("ij,jk", (2, 3), (3, 4), precision="fp64").cost_basis is None


def test_operands_or_shapes():
    a = xp.NeuronArray(torch.ones(2, 3, dtype=torch.float64))
    e = xp.explain("bij,bjk->bik", np.ones((5, 2, 3)), torch.ones(5, 3, 4))
    assert e.steps[0].kernel == "bmm" and e.steps[0].bmkn == (5, 2, 3, 4) and e.dtype == xp.float64
    assert xp.explain("ij,jk", a, (3, 4)).dtype == xp.float64  # float64 array with a default-float shape
    single = xp.explain("ii->i", (3, 3))
    assert single.kernel_calls == 0 and "-" in str(single)
    with pytest.raises(TypeError, match="operand 1 must be an array or a shape"):
        xp.explain("ij,jk", (2, 3), "3x4")
    with pytest.raises(ValueError, match="explain\\(\\): index 'j' has size 3"):
        xp.explain("ij,jk", (2, 3), (4, 5))


def test_cli(capsys):
    assert main(["explain", "ij,jk,kl->il", "512x512", "512x512", "512x512"]) == 0
    out = capsys.readouterr().out
    assert "path: [(0, 1), (0, 1)]" in out and "matmul" in out and "total: 2 kernel call(s)" in out
    assert main(["explain", "ij,jk->ik", "2x3", "4x5"]) == 2
    assert "index 'j' has size 3" in capsys.readouterr().err
    assert (
        main(["explain", "...ij,jk", "2x3x4", "4x5", "--precision", "dd", "--dtype", "float64", "--optimize", "(0,1)"])
        == 0
    )
    assert "dd" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["explain", "ij", "2xq"])


@pytest.mark.heavy
def test_python_dash_m():
    done = subprocess.run(
        [sys.executable, "-m", "trn_backend", "explain", "ij,jk,kl->il", "64x64", "64x64", "64x64"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "total: 2 kernel call(s)" in done.stdout


@pytest.mark.heavy
def test_python_dash_m_takes_generated_symbols():
    """opt_einsum's symbols past the letters ('×', '÷', U+2003) on the command line, in UTF-8."""
    done = subprocess.run(
        [sys.executable, "-m", "trn_backend", "explain", "a×,×÷,÷\u2003->a\u2003", "2x3", "3x4", "4x5"],
        capture_output=True,
        text=True,
        timeout=120,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert done.returncode == 0, done.stderr
    assert "total: 2 kernel call(s)" in done.stdout and "×" in done.stdout and "\\u2003" in done.stdout


def test_explain_refuses_what_einsum_would_refuse(capsys):
    with pytest.raises(TypeError, match="operand 0 has NumPy dtype float128, which trn_backend does not support"):
        xp.explain("ij,jk", np.ones((2, 2), np.longdouble), np.ones((2, 2), np.longdouble))
    with pytest.raises(TypeError, match="operand 1 has dtype torch.float8_e5m2, which trn_backend does not support"):
        xp.explain("ij,jk", (2, 2), torch.ones(2, 2, dtype=torch.float8_e5m2))
    with pytest.raises(ValueError, match=r"explain\(\): unknown optimize='bogus'"):
        xp.explain("ij,jk", (2, 2), (2, 2), optimize="bogus")
    with pytest.raises(ValueError, match=r"explain\(\): unknown precision mode 'x'"):
        xp.explain("ij,jk", (2, 2), (2, 2), precision="x")
    assert main(["explain", "ij,jk", "2x2", "2x2", "--optimize", "bogus"]) == 2
    assert "unknown optimize='bogus'" in capsys.readouterr().err


@pytest.mark.parametrize("shapes", [((128, 128), (128, 128)), ((4, 128, 128), (4, 128, 128))])
def test_sr_steps_on_nki_are_modelled_as_the_fast_passes_they_run(shapes):
    # sr's float32 results have nothing to round stochastically: the kernel layer runs fast's passes on NKI, for
    # matmul and bmm alike, and the model prices what runs (it raised for bmm before)
    subscripts = "ij,jk->ik" if len(shapes[0]) == 2 else "bij,bjk->bik"
    with xp.config.set(nki="model", nki_min_flops=0):
        sr = xp.explain(subscripts, *shapes, dtype=xp.float32, precision="sr")
        fast = xp.explain(subscripts, *shapes, dtype=xp.float32, precision="fast")
    assert sr.implementations[0].endswith("[sr]")
    assert sr.modelled[0].seconds == fast.modelled[0].seconds > 0


def test_explain_says_where_sr_equals_fast_and_why():
    """sr differs from fast only where an fp32 result is rounded to a bf16/fp16 output: explain() says so on every
    other step, and on a bf16 step says nothing (the two then differ)."""
    a = xp.ones((8, 8), dtype=xp.float32)
    text = str(xp.explain("ij,jk->ik", a, a, precision="sr"))
    assert (
        "step 1: sr equals fast here, bit for bit: sr rounds stochastically only a bf16/fp16 result, and this "
        "step's is float32" in text
    )
    assert "sr equals fast" not in str(xp.explain("ij,jk->ik", a, a, precision="fast"))
    b = xp.ones((8, 8), dtype=xp.bfloat16)
    assert "sr equals fast" not in str(xp.explain("ij,jk->ik", b, b, precision="sr"))


# --- explain(device="neuron") ---

PREVIEW = pytest.mark.skipif(toolchain.REAL, reason="previews are for machines without the Neuron toolchain")
BIG = ((4096, 4096), (4096, 4096))  # 1.4e11 FLOPs: above every mode's routing threshold (docs/trainium.md)
SMALL = ((256, 300), (300, 128))


@pytest.mark.heavy
@PREVIEW
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


@pytest.mark.heavy
@PREVIEW
def test_a_tiny_step_previews_the_torch_reference():
    e = xp.explain("ij,jk->ik", (8, 16), (16, 4), dtype=xp.float32, device="neuron", precision="dd")
    assert e.implementations == e.compiled_implementations == ("torch.matmul",) and e.modelled == (None,)
    assert e.dominated == ()
    # and so is a step no kernel takes: complex data
    c = xp.explain("ij,jk->ik", *BIG, dtype=xp.complex64, device="neuron")
    assert c.compiled_implementations == ("torch.matmul",) and c.modelled == (None,)


@pytest.mark.heavy
@PREVIEW
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


@pytest.mark.heavy
@PREVIEW
def test_the_default_rule_agrees_with_the_cpu_model_on_a_big_step():
    with kernels.first_calls():
        preview = xp.explain("ij,jk->ik", *BIG, dtype=xp.float32, precision="fast", device="neuron")
        with config.set(nki="model"):
            model = xp.explain("ij,jk->ik", *BIG, dtype=xp.float32, precision="fast")
    assert preview.implementations == model.implementations
    assert preview.modelled == model.modelled and preview.compiled_implementations == ("nki.matmul[fast]",)
    if preview.implementations == ("torch.matmul",):  # a first call that runs torch while the kernel compiles
        assert "torch.matmul (first call)" in str(preview) and "then nki.matmul[fast]: " in str(preview)


@pytest.mark.heavy
@PREVIEW
@pytest.mark.parametrize("device", ["neuron", "neuron:0", "xla", "xla:1", torch.device("xla"), torch.device("xla", 0)])
def test_every_spelling_of_a_neuron_device_previews_it(device):
    with config.set(nki_min_flops=0):
        e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, device=device)
    assert e.preview and e.device in ("neuron", "xla")
    assert e.compiled_implementations == ("nki.matmul[fast]",)


@PREVIEW
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


@pytest.mark.heavy
@PREVIEW
def test_a_target_is_ranked_by_the_trn2_cost_model_in_the_preview():
    e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, device="neuron", target_forward_error=1e-4)
    assert e.cost_basis == "trn2 cost model"
    assert e.steps[0].resolved.mode != "native"  # targets never pick native on Neuron until its fp32 is verified


def _costs(table):
    """A step_costs stand-in: each mode's planted time."""
    return lambda dtype, modes: [table[name] for name, _ in modes]


@PREVIEW
def test_a_dominated_step_says_so_and_names_the_dominating_mode(monkeypatch):
    # planted times: bf16x6 (the smaller bound at every K) as fast as dd, native faster still
    monkeypatch.setattr(
        _neuron_front,
        "step_costs",
        _costs({"fast": 1.0, "sr": 1.0, "native": 1.5, "dd": 3.0, "bf16x6": 3.0, "ozaki": 11.0}),
    )
    with config.set(nki_min_flops=0):
        e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="dd", device="neuron")
    assert e.dominated == (
        "step 1: dd is dominated on Trainium: bf16x6 is no slower and no less accurate (trn2 cost model's ranking "
        "of the kernels; bounds at K = 300); so is native if the Tensor Engine's fp32 products are as accurate as "
        "SGEMM's (u_s per product) (undocumented: check-neuron measures it)",
    )
    assert e.dominated[0] in str(e).splitlines()


@PREVIEW
def test_a_step_dominated_only_if_fp32_is_accurate_says_it_depends(monkeypatch):
    monkeypatch.setattr(
        _neuron_front,
        "step_costs",
        _costs({"fast": 1.0, "sr": 1.0, "native": 2.0, "dd": 3.0, "bf16x6": 6.0, "ozaki": 11.0}),
    )
    with config.set(nki_min_flops=0):
        e = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="dd", device="neuron")
        fast = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="fast", device="neuron")
        here = xp.explain("ij,jk->ik", *SMALL, dtype=xp.float32, precision="dd")  # no Neuron device: no line
    assert e.dominated == (
        "step 1: dd is dominated on Trainium by native if the Tensor Engine's fp32 products are as accurate as "
        "SGEMM's (u_s per product) (trn2 cost model's ranking of the kernels; bounds at K = 300); that precision "
        "is undocumented: check-neuron measures it",
    )
    assert fast.dominated == () and here.dominated == ()


@pytest.mark.heavy
@PREVIEW
def test_sr_is_priced_as_the_fast_kernel_it_runs():
    # sr's float32 results have nothing to round: the kernel layer runs fast's kernel, and the note prices that
    sr, fast = _neuron_front.step_costs(torch.float32, [("sr", None), ("fast", None)])
    assert sr == fast > 0
    assert _neuron_front.step_note(1, "sr", torch.float32, 300, xp.error_bound("sr", xp.float32, 300)) is None


@pytest.mark.heavy
@PREVIEW
def test_the_opt_einsum_route_previews_each_call():
    with config.set(nki_min_flops=0):
        e = xp.explain(
            "ij,jk,kl->il",
            (256, 300),
            (300, 128),
            (128, 64),
            dtype=xp.float32,
            precision="dd",
            route="opt_einsum",
            device="neuron",
        )
    assert e.preview and e.call_steps == (1, 1)
    assert e.compiled_implementations == ("nki.matmul[dd]", "nki.matmul[dd]")
