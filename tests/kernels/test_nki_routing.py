"""Routing between torch and the NKI kernels: the CPU default never changes, config and its environment variables
move the threshold or send CPU steps to the kernels on the CPU model, the default threshold is the cost model's
break-even with the launch overhead, and explain() shows which implementation runs each step."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from trn_backend.kernels.nki import cost, toolchain

import trn_backend as xp
from trn_backend import _config, config, kernels

BIG = (1, 4096, 4096, 4096)


def test_cpu_default_runs_torch_whatever_the_size():
    assert config.nki == "auto"
    for mode in ("fast", "native"):
        assert kernels.implementation("matmul", mode, torch.float32, torch.device("cpu"), BIG) == "torch.matmul"
    a, b = xp.ones((64, 64)), xp.ones((64, 64))
    with kernels.count_calls() as calls, config.set(nki_min_flops=0):
        xp.einsum("ij,jk->ik", a, b, precision="fast")
    assert not any(name.startswith("nki.") for name, _ in calls)


def test_model_routing_runs_the_kernels_within_the_bound():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(300, 200, generator=g), torch.randn(200, 150, generator=g)
    exact = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    with config.set(nki="model", nki_min_flops=0):
        for mode in ("fast", "native"):
            with kernels.count_calls() as calls:
                c = xp.einsum("ij,jk->ik", xp.asarray(a), xp.asarray(b), precision=mode)
                batched = xp.matmul(xp.asarray(a.reshape(2, 150, 200)), xp.asarray(b), precision=mode)
            assert calls["nki.matmul", mode] + calls["nki.bmm", mode] == 2, calls
            bound = xp.error_bound(mode, xp.float32, 200)
            assert float(((torch.from_numpy(np.asarray(c)).double() - exact).abs() / scale).max()) <= bound
            assert np.asarray(batched).shape == (2, 150, 150)


def test_fast_on_nki_keeps_the_reference_scaling():
    """Products beyond fp32's range that cancel: the fast route scales rows and columns by powers of two on the
    host exactly as the reference does, so the Tensor Engine never sees inf - inf."""
    a, b = xp.asarray([[2.0**100, 2.0**100]]), xp.asarray([[2.0**30], [-(2.0**30)]])
    with config.set(nki="model", nki_min_flops=0), kernels.count_calls() as calls:
        c = xp.matmul(a, b, precision="fast")
    assert calls["nki.matmul", "fast"] == 1
    assert float(c[0, 0]) == 0.0


def test_what_never_routes_to_nki():
    cpu = torch.device("cpu")
    with config.set(nki="model", nki_min_flops=0):
        assert kernels.implementation("matmul", "fp64", torch.float32, cpu, BIG) == "torch.matmul"  # host fp64
        assert kernels.implementation("matmul", "native", torch.float64, cpu, BIG) == "torch.matmul"  # no fp64
        assert kernels.implementation("matmul", "dd", torch.float64, cpu, BIG) == "nki.matmul[dd]"
        assert kernels.implementation("bmm", "ozaki", torch.float64, cpu, BIG, {"slices": 6}) == "nki.bmm[ozaki]"
        assert kernels.implementation("matmul", "sr", torch.float32, cpu, BIG, {"generator": None}) == \
            "torch.matmul"
        assert kernels.implementation("bmm", "native", torch.complex64, cpu, BIG) == "torch.bmm"
        assert kernels.implementation("matmul", "native", torch.float32, cpu, (1, 5, 0, 5)) == "torch.matmul"
        assert kernels.implementation("matmul", "fast", torch.float32, cpu, BIG) == "nki.matmul[fast]"
        with kernels.count_calls() as calls, xp.precision("sr", generator=torch.Generator().manual_seed(1)):
            xp.matmul(xp.ones((8, 8)), xp.ones((8, 8)))  # sr with its generator runs the reference
            xp.matmul(xp.ones((8, 8), dtype=xp.float64), xp.ones((8, 8), dtype=xp.float64), precision="native")
        assert not any(name.startswith("nki.") for name, _ in calls)
    with config.set(nki="off", nki_min_flops=0):
        assert kernels.implementation("matmul", "fast", torch.float32, cpu, BIG) == "torch.matmul"


def test_neuron_devices_route_only_with_the_real_toolchain(monkeypatch):
    device = torch.device("xla", 0)
    assert kernels.implementation("matmul", "fast", torch.float32, device, BIG) == "torch.matmul"  # no nki here
    monkeypatch.setattr(toolchain, "REAL", True)
    with kernels.first_calls():  # a first call compiles: seconds, more than the kernel's milliseconds
        assert kernels.implementation("matmul", "fast", torch.float32, device, BIG) == "torch.matmul"
    assert kernels.implementation("matmul", "fast", torch.float32, device, BIG, compiled=True) == \
        "nki.matmul[fast]"
    assert kernels.implementation("bmm", "native", torch.float32, device, (4, 2048, 2048, 2048),
                                  compiled=True) == "nki.bmm[native]"
    small = (1, 256, 256, 256)
    assert kernels.implementation("matmul", "fast", torch.float32, device, small) == "torch.matmul"
    with config.set(nki_min_flops=2 * 256**3):
        assert kernels.implementation("matmul", "fast", torch.float32, device, small) == "nki.matmul[fast]"
    with config.set(nki="off"):
        assert kernels.implementation("matmul", "fast", torch.float32, device, BIG) == "torch.matmul"


@pytest.mark.parametrize("mode", ["fast", "native"])
def test_default_threshold_is_where_the_modelled_kernel_time_reaches_the_launch_overhead(mode):
    flops = cost.default_min_flops(mode)
    n = round((flops / 2) ** (1 / 3))
    assert n % 128 == 0 and 2 * n**3 == flops
    launch = cost.calibration().launch_s
    assert cost.modelled("matmul", mode, (1, n, n, n)).seconds >= launch
    assert cost.modelled("matmul", mode, (1, n - 128, n - 128, n - 128)).seconds < launch
    assert cost.default_min_flops("native") < cost.default_min_flops("fast")  # fp32 passes take 4x longer


def test_config_validation_and_environment(monkeypatch):
    with pytest.raises(ValueError, match="config.nki must be one of auto, off, model, got 'on'"):
        config.nki = "on"
    for bad in (-1, float("nan"), "1e9", True):
        with pytest.raises(ValueError, match="config.nki_min_flops must be a number >= 0 or None"):
            config.nki_min_flops = bad
    with pytest.raises(AttributeError, match="config has no setting 'threshold'"), config.set(threshold=1):
        pass
    assert config.nki == "auto" and config.nki_min_flops is None  # restored
    monkeypatch.setenv("TRN_BACKEND_NKI", "model")
    monkeypatch.setenv("TRN_BACKEND_NKI_MIN_FLOPS", "1e9")
    assert repr(_config._from_environment()) == "Config(nki='model', nki_min_flops=1000000000.0)"
    monkeypatch.setenv("TRN_BACKEND_NKI_MIN_FLOPS", "lots")
    with pytest.raises(ValueError, match="TRN_BACKEND_NKI_MIN_FLOPS"):
        _config._from_environment()


def test_toolchain_selection(monkeypatch):
    assert toolchain.NAME == "cpu-model" and not toolchain.REAL  # no Neuron package index here
    with pytest.raises(ImportError, match="NKI toolchain is not installed"):
        toolchain.select("nki")
    with pytest.raises(ValueError, match="expected auto, model or nki"):
        toolchain.select("simulator")
    bound = toolchain.kernels_on("model")
    assert bound.nl.__name__.endswith("model.language") and bound.nisa.__name__.endswith("model.isa")


def test_explain_shows_the_implementation_and_modelled_time():
    e = xp.explain("ij,jk->ik", (4096, 4096), (4096, 4096))
    assert e.implementations == ("torch.matmul",) and e.modelled == (None,)
    assert "torch.matmul" in str(e)
    with config.set(nki="model"), kernels.first_calls():
        e = xp.explain("ij,jk,kl->il", (4096, 4096), (4096, 4096), (4096, 8), precision="fast",
                       optimize=[(0, 1), (0, 1)])
    # the first call of the 4096^3 step runs torch while the kernel compiles; explain models the kernel
    assert e.implementations == ("torch.matmul", "torch.matmul") and "torch.matmul (first call)" in str(e)
    estimate = next(m for m in e.modelled if m is not None)
    efficiency = cost.calibration().tensor_efficiency  # the Tensor Engine's achieved fraction of its peak
    assert 0.7 * efficiency <= estimate.utilization <= efficiency  # A transposed on chip: see the kernel tests
    assert f"{estimate.seconds * 1e3:.3g} ms, 1 bf16 pass" in str(e)
    with config.set(nki="model", nki_min_flops=0):
        text = str(xp.explain("ij,jk->ik", (256, 300), (300, 128), precision="dd", dtype=xp.float64))
        assert "nki.matmul[dd]" in text and "3 bf16 passes" in text
        text = str(xp.explain("ij,jk->ik", (256, 300), (300, 128), precision="ozaki", dtype=xp.float32))
        assert "nki.matmul[ozaki]" in text and "11 bf16 passes" in text  # 4 slices: 10, and the range pass
