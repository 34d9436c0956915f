"""The precision registry and its public face: error_bound, select_precision, resolve, next_mode, and the
``precision`` context (nesting, threads, asyncio tasks), with every error path."""

from __future__ import annotations

import asyncio
import math
import threading

import numpy as np
import pytest
import torch

import trn_backend
import trn_backend as xp
from trn_backend import _dtypes, _mode_costs, _precision, kernels
from trn_backend._precision import Resolved, error_bound, next_mode, precision, resolve, select_precision

CPU, MPS = torch.device("cpu"), torch.device("mps")  # the CPU has a calibration; mps none (pass counts)
f32, f64 = torch.float32, torch.float64


@pytest.fixture
def neuron_model(monkeypatch):
    """A stand-in for the trn2 cost model (each real model run takes up to a second;
    tests/precision/test_mode_costs.py runs it): a kernel's time in bf16 passes, native's fp32 pass as four."""

    def modelled(mode, float64, slices):
        return 4.0 if mode == "native" else float(_precision.MODES[mode].passes(slices))

    monkeypatch.setattr(_mode_costs, "_modelled", modelled)
    _precision._clear_choices()
    yield
    _precision._clear_choices()


def test_public_names():
    assert xp.precision is precision and xp.select_precision is select_precision
    assert xp.error_bound is trn_backend.contraction.error_bound  # the step form, and the whole-expression form


def test_registry_modes_have_kernels_costs_and_bounds():
    assert set(_precision.MODES) == {"native", "fast", "sr", "dd", "bf16x6", "ozaki", "fp64"}
    for mode in _precision.MODES.values():
        assert mode.kernel in kernels.reference.MODES and mode.algorithm
    passes = {name: m.passes(6) for name, m in _precision.MODES.items()}
    assert passes == {"native": None, "fast": 1, "sr": 1, "dd": 3, "bf16x6": 6, "ozaki": 22, "fp64": 0}
    assert _precision.ALIASES == {} and kernels.reference.RENAMED == {"kahan": "fp64"} and "sr" not in _precision.LADDER
    assert set(_precision.LADDER) == set(_precision.MODES) - {"sr"}


# --- error_bound ---


@pytest.mark.parametrize("K", [16, 512, 4096])
def test_bounds_fall_along_the_split_ladder(K):
    b = {m: error_bound(m, f32, K) for m in ("fast", "dd", "bf16x6")}
    assert b["fast"] > b["dd"] > b["bf16x6"]
    ub, us = 2.0**-8, 2.0**-24  # leading orders: the design's ~2 u_b + K u_s and ~3 u_b**2 + K u_s
    assert b["fast"] == pytest.approx(2 * ub + ub**2 + (K - 1) * us, rel=1e-2)
    assert b["dd"] == pytest.approx(3 * ub**2 + K * us, rel=3e-2)
    ozaki = [error_bound("ozaki", f64, K, slices=s) for s in range(1, 8)]
    assert ozaki == sorted(ozaki, reverse=True)


def test_bounds_include_the_output_rounding():
    assert error_bound("fp64", f32, 16) >= 2.0**-24
    assert error_bound("ozaki", f32, 16, slices=16) >= 2.0**-24
    assert error_bound("fp64", torch.bfloat16, 16) >= 2.0**-8
    assert error_bound("sr", torch.bfloat16, 16) >= error_bound("fast", torch.bfloat16, 16) + 2.0**-8


def test_bf16x6_bound_stops_growing_with_K_unlike_sgemm():
    # chunk sums added by Sum2: only its gamma_m**2 term grows, far below the rest until m ~ 1/sqrt(u)
    assert error_bound("bf16x6", f32, 4096) == pytest.approx(error_bound("bf16x6", f32, 1 << 16), rel=1e-3)
    assert error_bound("bf16x6", f32, 4096) < error_bound("native", f32, 4096) / 10


def test_bounds_of_special_dtypes():
    assert error_bound("dd", torch.int64, 100) is None and error_bound("native", torch.bool, 3) is None
    assert error_bound("native", torch.bfloat16, 10) is None
    assert error_bound("dd", f32, 0) == 0.0
    assert error_bound("dd", torch.complex64, 100) > math.sqrt(2) * error_bound("dd", f32, 100)
    assert error_bound("fp64", f64, 100) == error_bound("fp64", f64, 100) == pytest.approx(100 * 2.0**-53)


# --- select_precision ---


def _cost(resolved: Resolved, dtype: torch.dtype, device: str = "cpu", K: int = 1024) -> float:
    """The cost selection ranks ``resolved`` by (at the default size, M = N = 1024)."""
    real = dtype.to_real() if dtype.is_complex else dtype
    flops = 2.0 * 1024 * K * 1024
    return _mode_costs.basis(device, real).cost(resolved.mode, resolved.kwargs.get("slices"), flops)


def _meets(name, params, dtype, K, target):
    bound = error_bound(name, dtype, K, **dict(params))
    return bound is not None and bound <= target


def _cheapest_meeting(dtype, K, target, device="cpu"):
    """The brute-force answer: every rung, the cheapest that meets the target (LADDER order breaks ties)."""
    meeting = [
        (name, params)
        for name, params in _precision._ladder()
        if _meets(name, params, dtype, K, target) and (name != "native" or _precision._native_ok(device, dtype))
    ]
    return min(meeting, key=lambda r: _cost(Resolved(r[0], r[1]), dtype, device, K))


@pytest.mark.parametrize(
    ("dtype", "K", "target", "label"),
    [
        (f32, 1024, 1e-4, "native"),  # native's bound gamma_K(u) = 6.1e-5 meets it and nothing is cheaper on the CPU
        (f32, 1024, 1e-7, "fp64"),  # float64 on the host: ozaki(4) meets it too, at 10 times the cost
        (f32, 16, 1e-4, "native"),
        (f32, 4096, 1e-4, "fp64"),  # native's bound grows with K: 2.4e-4 here
        (f64, 4096, 1e-12, "native"),
        (f64, 4096, 1e-14, "ozaki(slices=7)"),  # below float64's own gamma_K(u): only ozaki reaches it
        (torch.complex64, 1024, 1e-4, "native"),  # complex: the real dtype's costs
        (torch.bfloat16, 512, 3.92e-3, "fp64"),  # bf16 operands: split modes run as fast, native has no bound
    ],
)
def test_selection_on_the_cpu_picks_the_cheapest_mode_that_meets_the_target(dtype, K, target, label):
    chosen = select_precision(dtype, K, target)
    assert chosen.label == label and chosen.bound <= target
    assert select_precision(dtype, K, target, device="cpu") == chosen == select_precision(dtype, K, target, device=CPU)
    assert (chosen.mode, chosen.params) == _cheapest_meeting(dtype, K, target)
    public = _dtypes.PUBLIC[dtype]  # the NumPy dtype users see, and its other spellings, choose the same
    assert select_precision(public, K, target) == select_precision(public.name, K, target) == chosen


@pytest.mark.parametrize(
    ("dtype", "K", "target", "label"),
    [
        (f32, 512, 1e-2, "fast"),
        (f32, 16, 1e-4, "dd"),
        (f32, 512, 2e-5, "bf16x6"),
        (f32, 4096, 1e-5, "ozaki(slices=3)"),
        (f64, 4096, 1e-12, "native"),  # one fp32-rate pass (4 bf16 passes) meets it before ozaki(6)'s 22
        (f32, 16, 7e-8, "ozaki(slices=5)"),
        (f64, 4096, 1e-14, "ozaki(slices=7)"),
        (torch.bfloat16, 512, 3.92e-3, "fp64"),
    ],
)
def test_selection_without_a_calibration_follows_the_pass_count(dtype, K, target, label):
    assert _precision.cost_basis(dtype, "mps") == "pass count (no calibration for mps)"
    chosen = select_precision(dtype, K, target, device="mps")
    assert chosen.label == label and chosen.bound <= target
    assert (chosen.mode, chosen.params) == _cheapest_meeting(dtype, K, target, "mps")


@pytest.mark.parametrize("device", ["cpu", "mps"])
@pytest.mark.parametrize("dtype", [f32, f64, torch.complex64])
@pytest.mark.parametrize("K", [1, 16, 512, 4096, 100_000])
def test_selection_never_picks_sr_and_costs_more_as_targets_tighten(dtype, K, device):
    cost = 0.0
    for target in np.logspace(-1, -16, 61):
        try:
            chosen = select_precision(dtype, K, float(target), device=device)
        except ValueError:
            break
        assert chosen.mode != "sr" and chosen.bound <= target
        assert _cost(chosen, dtype, device, K) >= cost
        cost = _cost(chosen, dtype, device, K)


def test_impossible_target_names_the_best_bound():
    with pytest.raises(
        ValueError,
        match=r"no mode reaches target_forward_error=1e-09 for float32 with K=16; "
        r"the best available bound is 5.96e-08, from ozaki\(slices=11\)",
    ):
        select_precision(f32, 16, 1e-9)


def test_integer_contractions_need_no_mode():
    assert select_precision(torch.int64, 100, 1e-30) == Resolved("native")
    assert resolve(torch.int32, 100, CPU, precision="dd") == Resolved("native")


# --- resolve and the context ---


def test_device_defaults():
    assert resolve(f32, 64, CPU) == Resolved("native", (), error_bound("native", f32, 64))
    assert resolve(f32, 64, torch.device("xla")).mode == "fast"
    assert resolve(f32, 64, torch.device("meta")).mode == "native"


def test_order_explicit_then_context_then_default():
    with precision("dd"):
        assert resolve(f32, 64, CPU).mode == "dd"
        assert resolve(f32, 64, CPU, precision="fast").mode == "fast"
        assert resolve(f32, 4096, CPU, target_forward_error=1e-5).label == "fp64"
        assert resolve(f32, 4096, MPS, target_forward_error=1e-5).label == "ozaki(slices=3)"
    with precision(target_forward_error=1e-4):
        assert resolve(f32, 16, CPU).mode == "native" and resolve(f32, 16, MPS).mode == "dd"
        assert resolve(f32, 16, CPU, precision="fp64").mode == "fp64"
    assert resolve(f32, 64, CPU).mode == "native"


def test_each_step_resolves_from_its_own_K_and_device():
    with precision(target_forward_error=1e-4):
        assert [resolve(f32, K, CPU).mode for K in (16, 4096)] == ["native", "fp64"]
        assert [resolve(f32, K, MPS).mode for K in (16, 4096)] == ["dd", "bf16x6"]
        assert [resolve(f32, K, CPU, bmkn=(1, 64, K, 64)).mode for K in (16, 4096)] == ["native", "fp64"]


def test_nesting_and_exceptions_restore_the_outer_setting():
    with precision("dd"):
        with precision("ozaki", slices=5):
            assert resolve(f64, 10, CPU).label == "ozaki(slices=5)"
            with precision():  # no argument: the enclosing setting stays
                assert resolve(f64, 10, CPU).label == "ozaki(slices=5)"
        with pytest.raises(RuntimeError), precision("fp64"):
            assert resolve(f32, 10, CPU).mode == "fp64"
            raise RuntimeError
        assert resolve(f32, 10, CPU).mode == "dd"
    assert resolve(f32, 10, CPU).mode == "native"


def test_mode_parameters_reach_the_kernel_arguments():
    g = torch.Generator()
    with precision("sr", generator=g):
        assert resolve(torch.bfloat16, 8, CPU).kwargs == {"generator": g}
    assert resolve(f64, 8, CPU, precision="ozaki").kwargs == {"slices": 8}
    assert resolve(f32, 8, CPU, precision="ozaki").kwargs == {"slices": 4}


def test_threads_do_not_see_each_others_settings():
    barrier = threading.Barrier(3)
    seen = {}

    def worker(mode):
        with precision(mode):
            barrier.wait()  # all three blocks are open at once
            seen[mode] = resolve(f32, 32, CPU).mode
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(m,)) for m in ("dd", "bf16x6")]
    for t in threads:
        t.start()
    with precision("fast"):
        barrier.wait()
        seen["main"] = resolve(f32, 32, CPU).mode
        barrier.wait()
    for t in threads:
        t.join()
    assert seen == {"dd": "dd", "bf16x6": "bf16x6", "main": "fast"}


def test_asyncio_tasks_have_their_own_settings():
    async def task(mode, log):
        with precision(mode):
            await asyncio.sleep(0)  # let the other task enter its block
            log.append(resolve(f32, 32, CPU).mode)
            await asyncio.sleep(0)
            log.append(resolve(f32, 32, CPU).mode)

    async def main():
        log_a, log_b = [], []
        with precision("fp64"):
            inherited = asyncio.create_task(asyncio.sleep(0, resolve(f32, 32, CPU).mode))
        await asyncio.gather(task("dd", log_a), task("fast", log_b))
        return log_a, log_b, await inherited, resolve(f32, 32, CPU).mode

    assert asyncio.run(main()) == (["dd", "dd"], ["fast", "fast"], "fp64", "native")


def test_next_mode_escalates_to_the_cheapest_smaller_bound():
    native = resolve(f32, 512, CPU)
    assert next_mode(native, f32, 512).mode == "fp64"  # on the CPU, the cheapest mode more accurate than SGEMM
    assert next_mode(native, f32, 512, device="mps").mode == "bf16x6"  # by pass count: 6 passes
    assert next_mode(resolve(f32, 512, CPU, precision="fast"), f32, 512).mode == "native"
    assert next_mode(resolve(f32, 512, CPU, precision="fast"), f32, 512, device=MPS).mode == "dd"
    assert next_mode(select_precision(f64, 4096, 1e-12), f64, 4096).label == "ozaki(slices=7)"
    lowest = min((_precision._resolved(*rung, f64, 512) for rung in _precision._ladder()), key=lambda r: r.bound)
    assert next_mode(lowest, f64, 512) is None  # the smallest bound there is
    assert next_mode(Resolved("native"), torch.int64, 512) is None


@pytest.mark.parametrize("device", ["cpu", "mps", "xla"])
@pytest.mark.parametrize(
    ("dtype", "K", "target"), [(f32, 64, 1e-2), (f32, 4096, 1e-3), (f64, 512, 1e-4), (torch.complex128, 64, 1e-6)]
)
def test_next_mode_goes_to_strictly_smaller_bounds_in_cost_order(dtype, K, target, device, neuron_model):
    step = select_precision(dtype, K, target, device=device)
    chain = [step]
    while (step := next_mode(step, dtype, K, device=device)) is not None:
        chain.append(step)
    assert len(chain) >= 3 and chain[-1].bound == min(
        _precision._resolved(*r, dtype, K).bound
        for r in _precision._ladder()
        if _precision._resolved(*r, dtype, K).bound is not None
    )
    for before, after in zip(chain, chain[1:], strict=False):
        assert after.bound < before.bound and _cost(after, dtype, device, K) >= _cost(before, dtype, device, K)
        # nothing cheaper than ``after`` has a bound below ``before``'s
        assert (after.mode, after.params) == _cheapest_meeting(dtype, K, math.nextafter(before.bound, 0), device)
    assert all(step.mode != "native" for step in chain) or device != "xla"


# --- through the namespace ---


def test_context_and_per_call_precision_reach_the_kernels():
    g = np.random.default_rng(0)
    a, b = g.standard_normal((8, 512)).astype(np.float32), g.standard_normal((512, 8)).astype(np.float32)
    x, y = xp.asarray(a), xp.asarray(b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    with kernels.count_calls() as calls:
        with xp.precision("dd"):
            c = xp.matmul(x, y)
        xp.einsum("ik,kj->ij", x, y, precision="fast")
        with xp.precision(target_forward_error=2e-5):
            xp.matmul(x, y)  # native's bound at K = 512 is 3.05e-5: fp64, the next cheapest on the CPU
    assert calls == {("matmul", "dd"): 1, ("matmul", "fast"): 1, ("matmul", "fp64"): 1}
    error = np.max(np.abs(np.asarray(c._t, dtype=np.float64) - exact) / scale)
    assert error <= error_bound("dd", f32, 512)


# --- error paths ---


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: precision("dd", target_forward_error=1e-6), ValueError, "precision: give a precision mode or"),
        (lambda: resolve(f32, 8, CPU, precision="dd", target_forward_error=1e-6), ValueError, "resolve: give a"),
        (lambda: precision("quad"), ValueError, r"unknown precision mode 'quad'; known: native, .*, fp64$"),
        (lambda: precision(3), TypeError, "a precision mode is a string such as 'dd', got int"),
        (lambda: precision("dd", slices=3), TypeError, "mode 'dd' takes no parameter 'slices'"),
        (
            lambda: precision("ozaki", generator=None),
            TypeError,
            "'ozaki' takes no parameter 'generator'; it takes slices",
        ),
        (lambda: precision("ozaki", slices=17), ValueError, r"slices must be in 1\.\.16, got 17"),
        (lambda: precision("ozaki", slices=True), TypeError, "slices must be an int, got bool"),
        (lambda: precision("sr", generator=1), TypeError, "generator must be a torch.Generator, got int"),
        (lambda: precision(slices=3), TypeError, r"parameters slices need a mode"),
        (lambda: precision(target_forward_error=0), ValueError, "target_forward_error must be positive, got 0"),
        (lambda: precision(target_forward_error=float("nan")), ValueError, "must be positive, got nan"),
        (lambda: precision(target_forward_error="1e-6"), TypeError, "must be a real number, got str"),
        (lambda: select_precision(f32, 8, -1.0), ValueError, "select_precision: target_forward_error must be positive"),
        (lambda: select_precision("float12", 8, 1e-3), TypeError, "select_precision: dtype must be a dtype"),
        (lambda: select_precision(f32, -1, 1e-3), ValueError, "K must be a non-negative int, got -1"),
        (lambda: select_precision(f32, True, 1e-3), ValueError, "K must be a non-negative int, got True"),
        (lambda: select_precision(f32, 8, 1e-3, device=0), TypeError, "device must be a torch.device or a string"),
        (lambda: select_precision(f32, 8, 1e-3, device="gpu7"), ValueError, "select_precision: 'gpu7' is not a device"),
        (lambda: select_precision(f32, 8, 1e-3, bmkn=(1, 8, 8)), TypeError, r"bmkn must be a tuple of 4 non-negative"),
        (lambda: select_precision(f32, 8, 1e-3, bmkn=[1, 8, 8, 8]), TypeError, r"bmkn must be a tuple"),
        (lambda: select_precision(f32, 8, 1e-3, bmkn=(1, 8, 9, 8)), ValueError, r"bmkn's K \(9\) is not K \(8\)"),
        (lambda: error_bound("dd", f32, 8.0), TypeError, "error_bound: K must be an int, got float"),
        (lambda: error_bound("nope", f32, 8), ValueError, "error_bound: unknown precision mode 'nope'"),
        (lambda: error_bound("ozaki", f32, 8, slices=0), ValueError, "error_bound: slices must be in 1..16"),
    ],
)
def test_error_paths(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the report ---


@pytest.mark.heavy
def test_precision_report_cli_writes_its_table_and_a_png(tmp_path, capsys):
    from matplotlib import image

    from trn_backend import precision_report
    from trn_backend.__main__ import main

    png = tmp_path / "report.png"
    assert main(["precision-report", "--size", "16", "--k", "16", "512", "--repeats", "1", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "| mode | K | bf16 passes | bound | max error | mean error | max / bound | time (ms) |" in out
    assert out.count("\n| ") == 1 + 2 * len(precision_report.MODES)  # header and one row per mode and K
    assert image.imread(png).shape[2] in (3, 4)
    for row in precision_report.measure((16, 512), size=16, kind="cancel", repeats=1):
        assert row.bound is None or row.max_error <= row.bound, row


def test_precision_report_writes_its_png_under_build_by_default(tmp_path, monkeypatch, capsys):
    """Without --png the plot goes to build/ (git-ignored) under the current directory, nothing else there."""
    from trn_backend.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["precision-report", "--size", "8", "--k", "16", "--repeats", "1"]) == 0
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")] == ["build", "build/precision-report.png"]
    assert "plot: build/precision-report.png" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x: xp.einsum("ij,jk", x, x, precision="bogus"), r"^einsum\(\): unknown precision mode 'bogus'"),
        (lambda x: xp.matmul(x, x, precision="dd", target_forward_error=1e-3), r"^matmul\(\): give a precision mode"),
        (lambda x: xp.einsum("ij,jk", x, x, target_forward_error=1e-30), r"^einsum\(\): no mode reaches"),
        (lambda x: xp.matmul(x, x, target_forward_error=1e-30), r"^matmul\(\): no mode reaches"),
        (lambda x: xp.tensordot(x, x, target_forward_error=1e-30), r"^tensordot\(\): no mode reaches"),
        (lambda x: xp.vecdot(x, x, target_forward_error=1e-30), r"^vecdot\(\): no mode reaches"),
        (lambda x: x @ x, None),
        (lambda x: xp.multi_einsum(("ij,jk", x, x), target_forward_error=1e-30), r"^multi_einsum\(\): no mode"),
        (lambda x: xp.explain("ij,jk", x, x, target_forward_error=1e-30), r"^explain\(\): no mode reaches"),
        (lambda x: xp.einsum("ij,jk", x, x, target_relative_error=1e-30), r"^einsum\(\): no mode reaches"),
        (
            lambda x: xp.matmul(
                xp.asarray([[1.0, 2.0**-100, 0.0]]), xp.asarray([[0.0], [2.0**-100], [1.0]]), precision="dd"
            ),
            r"^matmul\(\): mode 'dd' cannot vouch for its bound",
        ),
    ],
)
def test_precision_errors_name_the_function_the_user_called(call, match):
    x = xp.ones((3, 3))
    with xp.precision(target_forward_error=1e-30):  # a context's impossible target is named the same way
        with pytest.raises(ValueError, match=match or r"^matmul\(\): no mode reaches"):
            call(x)


def test_error_bound_of_a_sum_over_ranks():
    b = error_bound("dd", f32, 64)
    assert error_bound("dd", f32, 64, ranks=1) == b
    assert error_bound("dd", f32, 64, ranks=4) == b + _precision.gamma(3, 2.0**-24) * (1 + b) * (1 + 2.0**-24)
    k = error_bound("fp64", f32, 64)  # fp64 sums its float64 summands before its one rounding
    assert error_bound("fp64", f32, 64, ranks=4) == k + _precision.gamma(3, 2.0**-53) * (1 + k) * (1 + 2.0**-24)
    assert error_bound("fp64", f64, 64, ranks=4) > error_bound("fp64", f64, 64)
    assert error_bound("native", torch.int32, 64, ranks=4) is None
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="ranks must be a positive int"):
            error_bound("dd", f32, 8, ranks=bad)
