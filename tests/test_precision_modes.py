"""The precision registry and its public face: error_bound, select_precision, resolve, next_mode, and the
``precision`` context (nesting, threads, asyncio tasks), with every error path."""

from __future__ import annotations

import asyncio
import math
import threading

import numpy as np
import pytest
import torch

import trn_backend as xp
from trn_backend import _precision, kernels
from trn_backend._precision import Resolved, error_bound, next_mode, precision, resolve, select_precision

CPU = torch.device("cpu")
f32, f64 = torch.float32, torch.float64


def test_public_names():
    assert xp.precision is precision and xp.error_bound is error_bound and xp.select_precision is select_precision


def test_registry_modes_have_kernels_costs_and_bounds():
    assert set(_precision.MODES) == {"native", "fast", "sr", "dd", "bf16x6", "ozaki", "kahan"}
    for mode in _precision.MODES.values():
        assert mode.kernel in kernels.reference.MODES and mode.algorithm
    passes = {name: m.passes(6) for name, m in _precision.MODES.items()}
    assert passes == {"native": None, "fast": 1, "sr": 1, "dd": 3, "bf16x6": 6, "ozaki": 22, "kahan": 0}
    assert _precision.ALIASES == {"fp64": "kahan"} and "sr" not in _precision.LADDER


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
    assert error_bound("kahan", f32, 16) >= 2.0**-24
    assert error_bound("ozaki", f32, 16, slices=16) >= 2.0**-24
    assert error_bound("kahan", torch.bfloat16, 16) >= 2.0**-8
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
    assert error_bound("fp64", f64, 100) == error_bound("kahan", f64, 100) == pytest.approx(100 * 2.0**-53)


# --- select_precision ---

@pytest.mark.parametrize(("dtype", "K", "target", "label"), [
    (f32, 512, 1e-2, "fast"),
    (f32, 16, 1e-4, "dd"),
    (f32, 512, 2e-5, "bf16x6"),
    (f32, 4096, 1e-5, "ozaki(slices=3)"),
    (f64, 4096, 1e-12, "ozaki(slices=6)"),
    (f32, 16, 7e-8, "ozaki(slices=5)"),
    (f64, 4096, 1e-14, "ozaki(slices=7)"),
    (torch.bfloat16, 512, 3.92e-3, "kahan"),  # bf16 operands: split modes run as fast, ozaki cannot help
])
def test_selection_walks_the_ladder(dtype, K, target, label):
    chosen = select_precision(dtype, K, target)
    assert chosen.label == label and chosen.bound <= target
    rungs = list(_precision._ladder())
    for name, params in rungs[:rungs.index((chosen.mode, chosen.params))]:
        assert error_bound(name, dtype, K, **dict(params)) > target


@pytest.mark.parametrize("dtype", [f32, f64, torch.complex64])
@pytest.mark.parametrize("K", [1, 16, 512, 4096, 100_000])
def test_selection_never_picks_sr_and_tightens_monotonically(dtype, K):
    rungs = list(_precision._ladder())
    position = -1
    for target in np.logspace(-1, -16, 61):
        try:
            chosen = select_precision(dtype, K, float(target))
        except ValueError:
            break
        assert chosen.mode != "sr" and chosen.bound <= target
        assert rungs.index((chosen.mode, chosen.params)) >= position
        position = rungs.index((chosen.mode, chosen.params))


def test_impossible_target_names_the_best_bound():
    with pytest.raises(ValueError, match=r"no mode reaches target_forward_error=1e-09 for torch.float32 with K=16; "
                                         r"the best available bound is 5.96e-08, from ozaki\(slices=11\)"):
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
        assert resolve(f32, 4096, CPU, target_forward_error=1e-5).label == "ozaki(slices=3)"
    with precision(target_forward_error=1e-4):
        assert resolve(f32, 16, CPU).mode == "dd"
        assert resolve(f32, 16, CPU, precision="kahan").mode == "kahan"
    assert resolve(f32, 64, CPU).mode == "native"


def test_each_step_resolves_from_its_own_K():
    with precision(target_forward_error=1e-4):
        assert [resolve(f32, K, CPU).mode for K in (16, 4096)] == ["dd", "bf16x6"]


def test_nesting_and_exceptions_restore_the_outer_setting():
    with precision("dd"):
        with precision("ozaki", slices=5):
            assert resolve(f64, 10, CPU).label == "ozaki(slices=5)"
            with precision():  # no argument: the enclosing setting stays
                assert resolve(f64, 10, CPU).label == "ozaki(slices=5)"
        with pytest.raises(RuntimeError), precision("fp64"):
            assert resolve(f32, 10, CPU).mode == "kahan"
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
        with precision("kahan"):
            inherited = asyncio.create_task(asyncio.sleep(0, resolve(f32, 32, CPU).mode))
        await asyncio.gather(task("dd", log_a), task("fast", log_b))
        return log_a, log_b, await inherited, resolve(f32, 32, CPU).mode

    assert asyncio.run(main()) == (["dd", "dd"], ["fast", "fast"], "kahan", "native")


def test_next_mode_escalates_along_the_ladder():
    native = resolve(f32, 512, CPU)
    assert next_mode(native, f32, 512).mode == "bf16x6"  # the first rung more accurate than SGEMM at K=512
    assert next_mode(resolve(f32, 512, CPU, precision="fast"), f32, 512).mode == "dd"
    assert next_mode(select_precision(f64, 4096, 1e-12), f64, 4096).label == "ozaki(slices=7)"
    assert next_mode(resolve(f64, 512, CPU, precision="kahan"), f64, 512) is None
    assert next_mode(Resolved("native"), torch.int64, 512) is None


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
            xp.matmul(x, y)
    assert calls == {("matmul", "dd"): 1, ("matmul", "fast"): 1, ("matmul", "bf16x6"): 1}
    error = np.max(np.abs(np.asarray(c._t, dtype=np.float64) - exact) / scale)
    assert error <= error_bound("dd", f32, 512)


# --- error paths ---

@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: precision("dd", target_forward_error=1e-6), ValueError, "precision: give a precision mode or"),
    (lambda: resolve(f32, 8, CPU, precision="dd", target_forward_error=1e-6), ValueError, "resolve: give a"),
    (lambda: precision("quad"), ValueError, r"unknown precision mode 'quad'; known: native, .*kahan \(alias fp64\)"),
    (lambda: precision(3), TypeError, "a precision mode is a string such as 'dd', got int"),
    (lambda: precision("dd", slices=3), TypeError, "mode 'dd' takes no parameter 'slices'"),
    (lambda: precision("ozaki", generator=None), TypeError, "'ozaki' takes no parameter 'generator'; it takes slices"),
    (lambda: precision("ozaki", slices=17), ValueError, r"slices must be in 1\.\.16, got 17"),
    (lambda: precision("ozaki", slices=True), TypeError, "slices must be an int, got bool"),
    (lambda: precision("sr", generator=1), TypeError, "generator must be a torch.Generator, got int"),
    (lambda: precision(slices=3), TypeError, r"parameters slices need a mode"),
    (lambda: precision(target_forward_error=0), ValueError, "target_forward_error must be positive, got 0"),
    (lambda: precision(target_forward_error=float("nan")), ValueError, "must be positive, got nan"),
    (lambda: precision(target_forward_error="1e-6"), TypeError, "must be a real number, got str"),
    (lambda: select_precision(f32, 8, -1.0), ValueError, "select_precision: target_forward_error must be positive"),
    (lambda: select_precision("float32", 8, 1e-3), TypeError, "select_precision: dtype must be a dtype"),
    (lambda: select_precision(f32, -1, 1e-3), ValueError, "K must be a non-negative int, got -1"),
    (lambda: select_precision(f32, True, 1e-3), ValueError, "K must be a non-negative int, got True"),
    (lambda: error_bound("dd", f32, 8.0), TypeError, "error_bound: K must be an int, got float"),
    (lambda: error_bound("nope", f32, 8), ValueError, "error_bound: unknown precision mode 'nope'"),
    (lambda: error_bound("ozaki", f32, 8, slices=0), ValueError, "error_bound: slices must be in 1..16"),
])
def test_error_paths(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the report ---

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


@pytest.mark.parametrize(("call", "match"), [
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
    (lambda x: xp.matmul(xp.asarray([[1.0, 2.0**-100, 0.0]]), xp.asarray([[0.0], [2.0**-100], [1.0]]),
                         precision="dd"), r"^matmul\(\): mode 'dd' cannot vouch for its bound"),
])
def test_precision_errors_name_the_function_the_user_called(call, match):
    x = xp.ones((3, 3))
    with xp.precision(target_forward_error=1e-30):  # a context's impossible target is named the same way
        with pytest.raises(ValueError, match=match or r"^matmul\(\): no mode reaches"):
            call(x)


def test_error_bound_of_a_sum_over_ranks():
    b = error_bound("dd", f32, 64)
    assert error_bound("dd", f32, 64, ranks=1) == b
    assert error_bound("dd", f32, 64, ranks=4) == b + _precision.gamma(3, 2.0**-24) * (1 + b) * (1 + 2.0**-24)
    k = error_bound("kahan", f32, 64)  # kahan sums its float64 summands before its one rounding
    assert error_bound("kahan", f32, 64, ranks=4) == k + _precision.gamma(3, 2.0**-53) * (1 + k) * (1 + 2.0**-24)
    assert error_bound("kahan", f64, 64, ranks=4) > error_bound("kahan", f64, 64)
    assert error_bound("native", torch.int32, 64, ranks=4) is None
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="ranks must be a positive int"):
            error_bound("dd", f32, 8, ranks=bad)
