"""What targets rank the precision modes by (trn_backend/_mode_costs.py): the committed calibration table, planted
tables, the trn2 cost model on Neuron, the pass-count fallback, and the calibration script that writes the table."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trn_backend import _mode_costs, _precision, testing
from trn_backend._precision import Resolved, next_mode, precision, resolve, select_precision
from trn_backend.kernels import reference
from trn_backend.kernels.nki import cost

ROOT = Path(__file__).resolve().parents[2]
f32, f64 = torch.float32, torch.float64
SIZES = [1e6, 1e9]  # the planted tables' FLOPs


def _entry(**modes) -> dict:
    """A calibration entry at two sizes: each mode's cost relative to native (a number: the same at both)."""
    return {
        "flops": SIZES,
        "sizes": [[100, 50, 100], [1000, 500, 1000]],
        "modes": {name: v if isinstance(v, list) else [v, v] for name, v in modes.items()},
    }


def _table(device="cpu", **modes) -> dict:
    entry = _entry(**modes)
    return {"devices": {device: {"date": "2026-01-02", "float32": entry, "float64": copy.deepcopy(entry)}}}


# costs where the emulated modes are cheaper than native (as on a device with a fast bf16 engine), and where they
# are not (as on the CPU)
EMULATION_WINS = dict(fast=0.1, dd=0.3, bf16x6=0.6, fp64=50.0, **{"ozaki(slices=2)": 0.4, "ozaki(slices=4)": 1.1})
CPU_LIKE = dict(fast=1.5, dd=3.0, bf16x6=6.0, fp64=2.0, **{"ozaki(slices=2)": 10.0, "ozaki(slices=4)": 20.0})


# --- the committed table ---


def test_the_committed_table_gives_the_required_cpu_choices():
    assert select_precision(f32, 1024, 1e-4).mode == "native"
    assert select_precision(f32, 1024, 1e-7).mode == "fp64"
    cpu = _mode_costs.table()["devices"]["cpu"]
    for dtype in ("float32", "float64"):  # every mode on the ladder, ozaki at two slice counts at least
        modes = cpu[dtype]["modes"]
        assert set(_mode_costs.CALIBRATED) <= set(modes) and sum(m.startswith("ozaki(") for m in modes) >= 2
        assert cpu[dtype]["flops"] == sorted(cpu[dtype]["flops"]) and len(cpu[dtype]["flops"]) >= 3
    assert _precision.cost_basis(f32, "cpu") == f"cpu calibration, benchmarks {cpu['date']}"
    assert _precision.cost_basis(torch.complex64, torch.device("cpu")) == _precision.cost_basis(f32, "cpu")


@pytest.mark.heavy
def test_the_table_is_read_lazily_and_once():
    code = (
        "import sys, trn_backend; assert 'trn_backend._mode_costs' not in sys.modules; "
        "trn_backend.select_precision(trn_backend.float32, 64, 1e-3); "
        "trn_backend.select_precision(trn_backend.float64, 99, 1e-3); "
        "print(sys.modules['trn_backend._mode_costs']._committed.cache_info())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "misses=1," in done.stdout


def test_the_table_ships_in_the_package_directory():
    assert _mode_costs.TABLE == ROOT / "trn_backend" / "data" / "mode_costs.json" and _mode_costs.TABLE.is_file()


# --- planted tables ---


def test_ranking_follows_a_planted_tables_costs():
    with _precision.planted_costs(_table(**EMULATION_WINS)):
        assert _precision.cost_basis(f32, "cpu") == "cpu calibration, benchmarks 2026-01-02"
        assert select_precision(f32, 16, 1e-2).mode == "fast"  # fast, dd, bf16x6 all cheaper than native
        assert select_precision(f32, 16, 1e-4).mode == "dd"
        assert select_precision(f32, 512, 2e-5).mode == "bf16x6"
        assert select_precision(f32, 4096, 1e-5).label == "ozaki(slices=3)"  # 7 passes: about 0.7
        assert select_precision(f32, 1024, 1e-7).label == "ozaki(slices=4)"  # 1.1: fp64 costs 50
        assert select_precision(f64, 4096, 1e-12).label == "native"  # ozaki(6) is extrapolated to 2.2
    with _precision.planted_costs(_table(fast=2.0, dd=3.0, bf16x6=0.5, fp64=0.9, **{"ozaki(slices=2)": 9.0})):
        assert select_precision(f32, 16, 1e-2).mode == "bf16x6"  # the cheapest of all, and it meets 1e-2
        assert select_precision(f32, 1024, 1e-4).mode == "bf16x6"
        assert select_precision(f32, 1024, 1e-7).mode == "fp64"
        ranking = _precision._ranking("cpu", f32, 1e7, True)
        assert [r[0] for r in ranking[:5]] == ["bf16x6", "fp64", "native", "fast", "dd"]
    assert select_precision(f32, 16, 1e-2).mode == "native"  # the committed table is back


def test_costs_interpolate_in_log_flops_and_clamp_outside():
    modes = dict(CPU_LIKE, fast=[0.5, 2.0])
    with _precision.planted_costs(_table(**modes)):
        basis = _mode_costs.basis("cpu", f32)
        assert [basis.cost("fast", None, f) for f in (1e3, 1e6, 10**7.5, 1e9, 1e12)] == pytest.approx(
            [0.5, 0.5, 1.25, 2.0, 2.0]
        )
        # fast wins where it is cheaper than native: small steps, not large ones (bmkn: the step's own sizes)
        assert select_precision(f32, 64, 1e-2, bmkn=(1, 8, 64, 8)).mode == "fast"
        assert select_precision(f32, 64, 1e-2, bmkn=(1, 4096, 64, 4096)).mode == "native"
        with precision(target_forward_error=1e-2):
            assert resolve(f32, 64, torch.device("cpu"), bmkn=(1, 8, 64, 8)).mode == "fast"
            assert resolve(f32, 64, torch.device("cpu"), bmkn=(1, 4096, 64, 4096)).mode == "native"
            assert resolve(f32, 64, torch.device("cpu")).mode == "native"  # default size: M = N = 1024


def test_ozaki_costs_follow_the_pass_count_between_and_beyond_the_measured_slices():
    with _precision.planted_costs(_table(**EMULATION_WINS)):
        basis = _mode_costs.basis("cpu", f64)
        ozaki = [basis.cost("ozaki", s, 1e7) for s in range(1, 17)]
        assert ozaki == sorted(ozaki) and ozaki[1] == pytest.approx(0.4) and ozaki[3] == pytest.approx(1.1)
        assert ozaki[0] == pytest.approx(0.4 * 2 / 4)  # below the fewest measured: proportional to passes
        assert ozaki[2] == pytest.approx(0.4 + 0.7 * 3 / 7)  # 7 passes, between 4 and 11
        assert ozaki[5] == pytest.approx(1.1 + 0.1 * 11)  # 22 passes: along the line through 4 and 11


def test_a_device_without_an_entry_falls_back_to_the_pass_count():
    with _precision.planted_costs(_table("cuda", **EMULATION_WINS)):
        assert _precision.cost_basis(f32, "cpu") == "pass count (no calibration for cpu)"
        assert _precision.cost_basis(f32, "cuda") == "cuda calibration, benchmarks 2026-01-02"
        assert _precision.cost_basis(torch.float16, "cuda") == "pass count (no float16 calibration for cuda)"
        basis = _mode_costs.basis("cpu", f32)
        passes = {m: basis.cost(m, 3, 1e9) for m in ("native", "fast", "dd", "bf16x6", "ozaki", "fp64")}
        assert passes == {"native": 4, "fast": 1, "dd": 3, "bf16x6": 6, "ozaki": 7, "fp64": math.inf}
        assert select_precision(f32, 16, 1e-4).mode == "dd"  # 3 passes, before native's 4
        assert select_precision(f64, 4096, 1e-12).mode == "native"  # 4 passes, before ozaki(6)'s 22
    assert _mode_costs.NATIVE_PASSES == cost.FP32_MATMUL_FACTOR


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda e: e["modes"].pop("dd"), r"entry's mode 'dd' must be a list of 2 positive numbers"),
        (lambda e: e["modes"].update(fast=[1.0, -2.0]), r"entry's mode 'fast' must be a list of 2 positive numbers"),
        (lambda e: e["modes"].update(fast=[1.0]), r"entry's mode 'fast' must be a list of 2 positive numbers"),
        (lambda e: e.update(flops=[1e9, 1e6]), r"entry's flops must be ascending"),
        (
            lambda e: [e["modes"].pop(k) for k in list(e["modes"]) if k.startswith("ozaki")],
            r"entry measures ozaki at no slice count",
        ),
    ],
)
def test_a_broken_table_entry_is_an_error_naming_it(change, match):
    table = _table(**EMULATION_WINS)
    change(table["devices"]["cpu"]["float32"])
    with _precision.planted_costs(table), pytest.raises(ValueError, match=r"mode_costs.json: the cpu float32 " + match):
        select_precision(f32, 16, 1e-3)


# --- Neuron: the trn2 cost model ---


@pytest.fixture
def planted_model(monkeypatch):
    """A stand-in for kernels.nki.cost.modelled: seconds from ``times`` (mode -> seconds; ozaki per pass)."""
    times, calls = {}, []

    def modelled(kernel, mode, bmkn, generation="trn2", a_is_transposed=False, float64=False, slices=None):
        calls.append((kernel, mode, bmkn, float64, slices))
        seconds = times[mode] * (_precision.MODES["ozaki"].passes(slices) if mode == "ozaki" else 1)
        return type("Estimate", (), {"seconds": seconds})()

    monkeypatch.setattr(cost, "modelled", modelled)
    testing.reset_caches()
    yield times, calls
    testing.reset_caches()


def test_neuron_ranking_follows_the_cost_model_and_leaves_native_out(planted_model, monkeypatch):
    times, calls = planted_model
    times.update(fast=1.0, dd=5.0, bf16x6=4.0, ozaki=1.0, native=0.01)
    device = "xla"  # torch-neuronx's other device type, "neuron", is known to torch only where it is installed
    assert _precision.cost_basis(f32, device) == _mode_costs.basis("neuron", f64).text == "trn2 cost model"
    assert select_precision(f32, 16, 1e-4, device=device).mode == "bf16x6"  # modelled cheaper than dd here
    assert select_precision(f32, 1024, 1e-4, device=device).mode == "bf16x6"  # native's bound meets it: left out
    assert select_precision(f32, 16, 1e-2, device=device).label == "fast"
    assert {c[1:] for c in calls} == {
        (m, _mode_costs.NEURON_SIZE, False, s)
        for m, s in (("fast", None), ("dd", None), ("bf16x6", None), ("ozaki", 4))
    }
    assert select_precision(f64, 1024, 1e-12, device=device).label == "ozaki(slices=6)"  # no float64 on Neuron
    assert {c[3] for c in calls} == {False, True}  # float64 data: the float64 (words) kernels' costs
    assert select_precision(f32, 1024, 1e-7, device=device).label == "ozaki(slices=4)"  # fp64 (host) comes last
    assert next_mode(select_precision(f32, 64, 1e-2, device=device), f32, 64, device=device).mode != "native"
    with precision(target_forward_error=1e-4):
        assert resolve(f32, 1024, torch.device(device)).mode == "bf16x6"
    monkeypatch.setattr(_precision, "NEURON_FP32_MATMUL_VERIFIED", True)  # once check-neuron confirms it
    _precision._clear_choices()
    assert select_precision(f32, 1024, 1e-4, device=device).mode == "native"
    assert select_precision(f64, 16, 1e-12, device=device).mode == "ozaki"  # there is still no float64


@pytest.mark.heavy
def test_the_real_cost_model_ranks_by_tensor_engine_passes():
    _precision._clear_choices()
    ranking = [r for r in _precision._ranking("xla", f32, 1e9, False)]
    order = [r[0] if r[0] != "ozaki" else f"ozaki{r[1][0][1]}" for r in ranking]
    assert order.index("fast") < order.index("dd") < order.index("bf16x6") < order.index("ozaki4")
    assert order[-1] == "fp64" and "native" not in order
    assert select_precision(f32, 4096, 1e-5, device="xla").label == "ozaki(slices=3)"


# --- CUDA: native only where its bound holds ---


def test_native_is_no_candidate_on_cuda_under_tf32():
    with _precision.planted_costs(_table("cuda", **CPU_LIKE)):
        before = torch.get_float32_matmul_precision()
        try:
            assert select_precision(f32, 4096, 1e-3, device="cuda").mode == "native"
            torch.set_float32_matmul_precision("high")  # TF32: 10-bit significands, far outside native's bound
            assert select_precision(f32, 4096, 1e-3, device="cuda").mode == "fp64"  # the next cheapest
            assert select_precision(torch.complex64, 4096, 1e-3, device="cuda").mode == "fp64"
            assert select_precision(f64, 4096, 1e-12, device="cuda").mode == "native"  # float64 has no TF32
            assert not _precision._native_ok("cpu", f32)  # "high" may mean bf16 GEMMs in oneDNN
        finally:
            torch.set_float32_matmul_precision(before)
    assert _precision._native_ok("cpu", f32)


@pytest.mark.parametrize("setting", ["high", "medium"])
@pytest.mark.parametrize("dtype", [f32, torch.complex64])
def test_native_reports_the_bound_of_a_reduced_float32_matmul_precision(setting, dtype):
    """Under a float32 matmul precision other than "highest", the device may round float32 inputs (TF32, bf16):
    native's resolved bound says so (explain shows it), and what the CPU computes stays within it."""
    K = 4096
    before = torch.get_float32_matmul_precision()
    exact_bound = _precision.resolve(dtype, K, torch.device("cpu")).bound
    try:
        torch.set_float32_matmul_precision(setting)
        r = _precision.resolve(dtype, K, torch.device("cpu"))
        explicit = _precision.resolve(dtype, K, torch.device("cpu"), precision="native")
        u_in = _precision.REDUCED_INPUT_UNIT[setting]
        assert r == explicit and r.mode == "native" and r.bound > 2 * u_in > exact_bound
        assert _precision.resolve(dtype, K, torch.device("xla")).mode == "fast"  # Neuron: its own kernels
        assert _precision.resolve(f64, K, torch.device("cpu")).bound == _precision.error_bound("native", f64, K)
        g = torch.Generator().manual_seed(0)
        a = torch.randn(64, K, generator=g, dtype=torch.float64)
        b = torch.randn(K, 48, generator=g, dtype=torch.float64)
        c = torch.matmul(a.to(f32), b.to(f32)).double()  # what native runs: the device's own float32 GEMM
        a32, b32 = a.to(f32).double(), b.to(f32).double()
        err = ((c - a32 @ b32).abs() / (a32.abs() @ b32.abs())).max()
        assert err <= r.bound
    finally:
        torch.set_float32_matmul_precision(before)
    assert _precision.resolve(dtype, K, torch.device("cpu")).bound == exact_bound


# --- the calibration script ---


def test_the_calibration_script_merges_its_entry_on_request_and_the_table_loads(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import calibrate_modes

    table = tmp_path / "mode_costs.json"
    table.write_text(json.dumps(_table("cuda", **EMULATION_WINS)))
    monkeypatch.setattr(calibrate_modes, "QUICK_SIZES", {"cpu": ((8, 16, 8), (16, 32, 16))})
    monkeypatch.setattr(calibrate_modes, "SLICES", {"cpu": (1, 2)})
    monkeypatch.setattr(calibrate_modes, "SAMPLE_S", 0.0)  # one call per sample
    before = table.read_text()
    argv = ["calibrate_modes.py", "--quick", "--reps", "2", "--table", str(table), "--out", str(tmp_path / "out.json")]
    monkeypatch.setattr(sys, "argv", argv)
    calibrate_modes.main()
    assert table.read_text() == before  # the shipped table changes only on request
    monkeypatch.setattr(sys, "argv", [*argv, "--write-package-table"])
    calibrate_modes.main()
    written = json.loads(table.read_text())
    assert set(written["devices"]) == {"cpu", "cuda"}  # the other device's entry is kept
    cpu = written["devices"]["cpu"]
    assert cpu["quick"] and cpu["float32"]["flops"] == [2 * 8 * 16 * 8, 2 * 16 * 32 * 16]
    assert set(cpu["float32"]["modes"]) == {"fast", "dd", "bf16x6", "fp64", "ozaki(slices=1)", "ozaki(slices=2)"}
    assert cpu["float64"]["modes"]["fp64"] == [1.0, 1.0]  # float64 fp64 is native's product
    results = json.loads((tmp_path / "out.json").read_text())
    assert len(results["results"]) == 4 and all(len(s) == 2 for s in results["results"][0]["samples_ms"].values())
    with _precision.planted_costs(written):
        assert _mode_costs.basis("cpu", f32).kind == "calibration"
        assert select_precision(f32, 16, 1e-3).bound <= 1e-3
    assert reference.ozaki_default_slices(f32) == 4  # the slice count NEURON_OZAKI_SLICES models
    assert Resolved("native") == select_precision(torch.int32, 16, 1e-3)


def test_cached_default_plans_follow_a_change_of_float32_matmul_precision():
    """Programs compiled under the default mode (the fast path of every front door, compiled expressions) must
    not keep native's exact-fp32 bound once TF32/bf16 GEMMs are allowed, nor the reduced one after they are
    turned off again: explain() and a fresh compile report the bound of the setting at the call, and the cached
    programs keep running (running a step never reads its bound)."""
    import opt_einsum as oe

    import trn_backend as xp
    from trn_backend.contraction.compiler import compile
    from trn_backend.contraction.parse import Spec
    from trn_backend.contraction.program import single

    K = 64
    x = xp.asarray(torch.ones(3, K))
    y = xp.asarray(torch.ones(K, 5))
    exact = _precision.error_bound("native", f32, K)

    def bounds() -> tuple[float, ...]:
        program = single(Spec(("ij", "jk"), "ik"), ((3, K), (K, 5)))
        compiled = compile(program, None, (f32, f32), torch.device("cpu"))
        return compiled.plans[0].resolved.bound, xp.explain("ij,jk->ik", x, y).steps[0].resolved.bound

    before = torch.get_float32_matmul_precision()
    oe.contract("ij,jk->ik", x, y, backend="trn")  # fills the caches under "highest"
    xp.contract_expression("ij,jk->ik", (3, K), (K, 5))(x, y)
    try:
        assert bounds() == (exact, exact)
        torch.set_float32_matmul_precision("high")
        reduced = _precision.resolve(f32, K, torch.device("cpu")).bound
        assert reduced > 100 * exact
        assert bounds() == (reduced, reduced)
        assert torch.equal(oe.contract("ij,jk->ik", x, y, backend="trn")._t, torch.full((3, 5), float(K)))
        assert torch.equal((x @ y)._t, torch.full((3, 5), float(K)))
    finally:
        torch.set_float32_matmul_precision(before)
    assert bounds() == (exact, exact)
