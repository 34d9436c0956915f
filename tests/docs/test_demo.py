"""The demo (examples/demo.py, stages in examples/demo_stages/) on water and a small circuit, so that its numbers
cannot rot: every energy within its a priori bound of PySCF's, the exact settings within 1e-9 Eh, the network's
amplitude equal on every backend (and the circuit unitary), the PNG and the report written.

Needs PySCF (the chem extra), cotengra and matplotlib; skipped without PySCF.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import opt_einsum
import pytest
from hypothesis import given
from hypothesis import strategies as st

try:
    import pyscf  # noqa: F401
except ImportError:
    pytest.skip(
        'the demo tests need PySCF: pip install -e ".[chem]"  (or: pip install "pyscf>=2.6")', allow_module_level=True
    )
pytest.importorskip("cotengra", reason='the demo needs cotengra: pip install -e ".[cotengra]"')
pytest.importorskip("matplotlib", reason='the demo needs matplotlib: pip install -e ".[plot]"')

import trn_backend as xp  # noqa: E402
from trn_backend import _precision  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
from demo_stages import chemistry, network  # noqa: E402

EXACT = 1e-9  # Eh: what the exact settings must reach
FLOAT32, FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)
# every registered mode on both dtypes, the demo's float32 targets, and a float64 target below native's bound
SETTINGS = (
    [chemistry.Setting(dtype, mode) for dtype in (FLOAT64, FLOAT32) for mode in _precision.MODES]
    + [chemistry.Setting(FLOAT32, target=t) for t in chemistry.TARGETS]
    + [chemistry.Setting(FLOAT64, target=1e-15)]
)
IDS = [f"{s.label}-{s.dtype}" for s in SETTINGS]


@pytest.fixture(scope="module")
def water() -> chemistry.Calculation:
    return chemistry.Calculation(chemistry.pyscf_problem(chemistry.WATER))


@pytest.fixture(scope="module")
def rows(water: chemistry.Calculation) -> dict[chemistry.Setting, chemistry.Row]:
    return {s: water.run(s, model=False) for s in SETTINGS}


@pytest.mark.heavy
def test_water_problem_is_pyscfs(water: chemistry.Calculation) -> None:
    p = water.problem
    assert p.factors.shape == (84, 24, 24)  # cc-pVDZ-RI and cc-pVDZ for H2O
    assert (p.frozen, p.c_occ.shape, p.c_vir.shape) == (1, (24, 4), (24, 19))
    assert -0.21 < p.e_reference < -0.19  # DF-MP2/cc-pVDZ of water, frozen core: about -0.2016 Eh


@pytest.mark.heavy
@pytest.mark.parametrize("setting", SETTINGS, ids=IDS)
def test_energy_within_its_bound(rows: dict, setting: chemistry.Setting) -> None:
    """|E - E_PySCF| <= the bound carried from each step's error_bound (examples/demo_stages/accuracy.py), plus
    PySCF's own float64 share."""
    row = rows[setting]
    assert abs(row.error) <= row.bound, (setting, row.error, row.bound)


@pytest.mark.heavy
def test_exact_settings_within_1e9(rows: dict) -> None:
    exact = {s for s, r in rows.items() if r.bound <= EXACT}
    # native float64 and the modes that reach float64 accuracy are among them: the check is not empty
    assert {chemistry.Setting(FLOAT64, m) for m in ("native", "ozaki", "fp64")} <= exact
    assert chemistry.Setting(FLOAT64, target=1e-15) in exact
    for s in exact:
        assert abs(rows[s].error) <= EXACT, (s, rows[s].error)


@pytest.mark.heavy
def test_bf16_modes_really_round_to_bf16(rows: dict) -> None:
    """fast rounds its inputs to bf16 (relative 2**-9): on water that moves the energy by about 1 mEh, far more
    than float32 storage does. A fast that silently ran native would fail this."""
    fast, native = rows[chemistry.Setting(FLOAT32, "fast")], rows[chemistry.Setting(FLOAT32, "native")]
    assert abs(fast.error) > 1e-5 > 100 * abs(native.error)
    assert rows[chemistry.Setting(FLOAT32, "sr")].energy == fast.energy  # float32 output: sr is fast


@pytest.mark.heavy
def test_step_bounds_are_error_bound(water: chemistry.Calculation) -> None:
    """The bounds the energy bound starts from are the published ones: error_bound(mode, dtype, K) for each call
    opt_einsum makes (a mode that works in float64 computes a call in float64 and rounds it once: the same
    bound)."""
    for setting in (s for s in SETTINGS if s.mode is not None):
        for plan in water.plans(setting):
            for p, bound in zip(plan.steps, plan.calls, strict=True):
                expected = xp.error_bound(setting.mode, setting.dtype, p.bmkn[2])
                assert bound == pytest.approx(expected, rel=1e-12), (setting, p.subscripts)


@pytest.mark.heavy
def test_targets_pick_steps_that_meet_them(water: chemistry.Calculation, rows: dict) -> None:
    for setting in (s for s in SETTINGS if s.target is not None):
        steps = [p for plan in water.plans(setting) for p in plan.steps]
        assert all(p.resolved.bound <= setting.target for p in steps), setting
        assert rows[setting].modes == tuple(p.resolved.label for p in steps)


@pytest.mark.heavy
def test_trn2_model_of_the_steps(water: chemistry.Calculation) -> None:
    modelled = water.run(chemistry.Setting(FLOAT32, "bf16x6"))
    assert modelled.trn2_seconds is not None and modelled.trn2_seconds > 0
    assert water.run(chemistry.Setting(FLOAT32, "fp64")).trn2_seconds is None  # a host GEMM: no engine time
    assert water.run(chemistry.Setting(FLOAT64, "native")).trn2_seconds is None  # no float64 on trn2


@pytest.mark.heavy
def test_numpy_formula_on_neuron_arrays(water: chemistry.Calculation, rows: dict) -> None:
    p = water.problem
    arrays = (p.factors, p.c_occ, p.c_vir, p.e_occ, p.e_vir)
    expected = chemistry.mp2_energy_numpy(*arrays)
    dispatched = chemistry.mp2_energy_numpy(*(xp.asarray(a) for a in arrays))
    assert isinstance(dispatched, xp.NeuronArray) and np.asarray(dispatched).dtype == np.float64
    assert abs(float(dispatched) - float(expected)) <= 1e-12
    assert abs(float(dispatched) - rows[chemistry.Setting(FLOAT64, "native")].energy) <= 1e-12
    assert abs(float(dispatched) - p.e_reference) <= EXACT


def test_network_same_amplitude_on_every_backend() -> None:
    net = network.circuit_network(network.Circuit(3, 3, 8), dtype=np.complex128)
    tree = network.sliced_tree(net, memory_limit=64, trials=4)
    assert tree.multiplicity > 1 and tree.max_size() <= 64  # the limit forced slicing
    timings = network.time_backends(net, tree, memory_limit=64, repeats=1)
    assert [t.backend for t in timings] == list(network.BACKENDS)
    assert network.disagreement(timings) <= 1e-12
    # independently: the circuit's state (the network without the final bra) has norm 1, and the amplitude
    # is its entry at the bitstring, contracted by opt_einsum on NumPy along its own path
    terms = net.subscripts.split("->")[0].split(",")
    n = net.circuit.qubits
    state = opt_einsum.contract(",".join(terms[:-n]) + "->" + "".join(terms[-n:]), *net.arrays[:-n])
    assert abs(np.linalg.norm(state) - 1) <= 1e-12
    bits = tuple(int(np.argmax(bra)) for bra in net.arrays[-n:])
    assert abs(state[bits] - timings[0].value) <= 1e-12 * np.abs(state).max()


@pytest.mark.heavy
def test_demo_main_writes_png_and_report(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec = importlib.util.spec_from_file_location("trn_demo_main", EXAMPLES / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = demo  # its dataclasses look their module up there
    spec.loader.exec_module(demo)
    png = tmp_path / "out" / "demo.png"
    results = demo.main(
        [
            "--molecule",
            "water",
            "--circuit",
            "3x3x8",
            "--memory-limit",
            "64",
            "--trials",
            "4",
            "--repeats",
            "1",
            "--png",
            str(png),
            "--no-progress",
        ]
    )
    assert results.png == png and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert results.text.read_text() == printed
    for expected in ("[1/4] DF-MP2", "[2/4] NumPy dispatch", "[3/4] Tensor network", str(png)):
        assert expected in printed
    assert [r.setting for r in results.rows] == chemistry.settings()
    assert all(abs(r.error) <= r.bound for r in results.rows)
    assert results.dispatched_type is xp.NeuronArray


# --- the figure's decisions (examples/demo_stages/figure.py), on data rather than pixels ---


def test_exact_results_are_drawn_on_the_labelled_floor_and_measured_ones_where_they_are() -> None:
    from demo_stages import figure

    assert figure.plotted_error(0.0) == (figure.FLOOR, True)
    assert figure.plotted_error(-3e-7) == (3e-7, False)
    assert figure.plotted_error(1e-17) == (1e-17, False)  # measured, even below the floor: not called exact


@given(st.lists(st.tuples(st.floats(0.01, 100.0), st.floats(1e-16, 1e-2)), max_size=12))
def test_spread_leaves_no_point_hidden_behind_another(points: list[tuple[float, float]]) -> None:
    import math

    from demo_stages import figure

    placed = figure.spread(points)
    assert [y for _, y in placed] == [y for _, y in points]  # errors are never moved
    assert all(px >= x for (px, _), (x, _) in zip(placed, points, strict=True))
    for i, (xi, yi) in enumerate(placed):
        for xj, yj in placed[:i]:
            assert abs(math.log10(xi / xj)) >= figure.NEAR - 1e-12 or abs(math.log10(yi / yj)) >= figure.NEAR - 1e-12


@pytest.mark.parametrize(("low", "high"), [(0.1, 0.5), (0.1, 7.0), (0.2, 30.0), (1e-3, 2e-3)])
def test_time_axes_have_at_least_three_labelled_ticks(low: float, high: float) -> None:
    from demo_stages import figure
    from matplotlib.figure import Figure

    axes = Figure().subplots()
    axes.set_xscale("log")
    axes.set_xlim(low, high)
    figure.log_ticks(axes.xaxis)
    ticks = [t for t in axes.xaxis.get_major_locator()() if low <= t <= high]
    labels = [axes.xaxis.get_major_formatter()(t) for t in ticks]
    assert len(ticks) >= 2 and all(labels), (ticks, labels)
    assert len(ticks) >= 3 or high / low < 2.5  # a span shorter than 1-2-5 spacing cannot hold three
