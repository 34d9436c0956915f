"""Benchmark: the emulated precision modes' time and peak extra memory on the CPU reference (kernels/reference/).

Per case (1024x4096x1024 float32 and float64, and a batched float32 product) and mode (fast, dd, bf16x6,
ozaki(slices=4), fp64, against native): time relative to native (each repetition runs every mode once, the order
rotating; medians of per-repetition ratios) and the peak extra memory of one call, relative to inputs + output.
Data: uniform in [-1, 1) (signed, so sums cancel; its dynamic range lets ozaki run the 4 slices asked for, which
the JSON records; normal data needs 5). A measurement, not a test. Every case records the load average
(os.getloadavg) before and after it runs: the machine may be shared.

Further cases time one route each against native (same interleaving and medians, no memory column):
``ozaki_f64_512`` (a 512x512x512 float64 product in ozaki at its default slices), ``dfmp2_ozaki`` (a DF-MP2
energy in float64 through trn_backend.einsum: the integrals (ia|jb) = sum_Q B_Qia B_Qjb, then the energy
contraction sum (ia|jb) t_iajb with t = (ia|jb) / denominator; both contractions in ozaki against both in native),
``small_batched`` and ``small_batched_8x32`` (dd and bf16x6 on batched small float32 products).

Peak extra memory is measured by ``peak_extra_bytes``: torch's profiler records every CPU allocation and free
(size and time) inside the call; their running sum's maximum, less the result's own bytes, is the most the call
held at once beyond its inputs and output. tests/kernels/test_reference_common.py uses the same helper.

    python benchmarks/bench_emulation.py [--reps 3] [--only float32,batched,ozaki_f64_512] [--out results/x.json]
"""

from __future__ import annotations

import os

# Idle BLAS/OpenMP threads sleep at once rather than spin, so interleaved calls do not steal each other's cores.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile

from trn_backend import kernels
from trn_backend.kernels import reference

CASES = {  # name: (batch or None, M, K, N, dtype)
    "float32": (None, 1024, 4096, 1024, torch.float32),
    "float64": (None, 1024, 4096, 1024, torch.float64),
    "batched": (8, 256, 2048, 256, torch.float32),
}
MODES = {"native": {}, "fast": {}, "dd": {}, "bf16x6": {}, "ozaki": {"slices": 4}, "fp64": {}}
# name: (batch or None, M, K, N, dtype, {mode: kwargs}), timed only
ROUTE_CASES = {
    "ozaki_f64_512": (None, 512, 512, 512, torch.float64, {"native": {}, "ozaki": {}}),
    "small_batched": (64, 16, 16, 16, torch.float32, {"native": {}, "dd": {}, "bf16x6": {}}),
    "small_batched_8x32": (256, 8, 32, 8, torch.float32, {"native": {}, "dd": {}, "bf16x6": {}}),
}
DFMP2 = {"naux": 480, "nocc": 24, "nvirt": 72}


def _allocations(nodes):
    for node in nodes:
        if node.tag == _EventType.Allocation:
            yield node.start_time_ns, node.extra_fields.alloc_size
        yield from _allocations(node.children)


def peak_extra_bytes(call: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, int]:
    """``call()``'s result and the most CPU memory it held at once beyond its inputs and its result: the maximum
    of the running sum of every allocation (+) and free (-) the profiler saw, in time order, less the result's
    bytes (the inputs existed before the call)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = call()
    running = peak = 0
    for _, size in sorted(_allocations(prof.profiler.kineto_results.experimental_event_tree())):
        running += size
        peak = max(peak, running)
    return result, peak - result.untyped_storage().nbytes()


def _operands(case: str) -> tuple[torch.Tensor, torch.Tensor]:
    batch, m, k, n, dtype = CASES[case]
    lead = () if batch is None else (batch,)
    g = torch.Generator().manual_seed(0)
    a = torch.rand(*lead, m, k, generator=g, dtype=torch.float64) * 2 - 1
    b = torch.rand(*lead, k, n, generator=g, dtype=torch.float64) * 2 - 1
    return a.to(dtype), b.to(dtype)


def _call(mode: str, a: torch.Tensor, b: torch.Tensor) -> Callable[[], torch.Tensor]:
    kernel = kernels.bmm if a.dim() == 3 else kernels.matmul
    return lambda: kernel(a, b, mode, **MODES[mode])


def _timed(calls: dict[str, Callable[[], object]], reps: int) -> dict:
    """Interleaved repetitions (the order rotating), one warm-up call each; medians of per-repetition ratios to
    native, with the load average before and after."""
    from _results import interleaved_seconds  # as in main

    load_before = os.getloadavg()
    for call in calls.values():
        call()
    samples = interleaved_seconds(calls, reps)
    ratios = {name: [t / base for t, base in zip(samples[name], samples["native"], strict=True)] for name in calls}
    return {
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "modes": {
            name: {
                "seconds": samples[name],
                "median_seconds": statistics.median(samples[name]),
                "median_ratio": statistics.median(ratios[name]),
                "ratios": ratios[name],
            }
            for name in calls
        },
    }


def run_route_case(case: str, reps: int) -> dict:
    batch, m, k, n, dtype, modes = ROUTE_CASES[case]
    lead = () if batch is None else (batch,)
    g = torch.Generator().manual_seed(0)
    a = (torch.rand(*lead, m, k, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
    b = (torch.rand(*lead, k, n, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
    kernel = kernels.bmm if a.dim() == 3 else kernels.matmul
    calls = {mode: (lambda mode=mode: kernel(a, b, mode, **modes[mode])) for mode in modes}
    return {"shape": [batch, m, k, n], "dtype": str(dtype), **_timed(calls, reps)}


def run_dfmp2(reps: int) -> dict:
    """A DF-MP2 energy's two contractions in float64: (ia|jb) from the density-fitted factors B[Q, i, a], then
    sum (ia|jb) t_iajb with amplitudes t = (ia|jb) / (e_i + e_j - e_a - e_b) (made natively, outside the timing)."""
    import trn_backend as tb

    naux, nocc, nvirt = DFMP2["naux"], DFMP2["nocc"], DFMP2["nvirt"]
    g = torch.Generator().manual_seed(0)
    factors = tb.asarray(torch.randn(naux, nocc, nvirt, generator=g, dtype=torch.float64) * 0.1)
    occ = -1.0 - torch.rand(nocc, generator=g, dtype=torch.float64)
    vir = 0.5 + torch.rand(nvirt, generator=g, dtype=torch.float64)
    denominator = occ[:, None, None, None] - vir[None, :, None, None] + occ[None, None, :, None] - vir
    integrals = tb.einsum("Qia,Qjb->iajb", factors, factors)
    amplitudes = tb.asarray(integrals.to_torch() / denominator)

    def energy(precision: str) -> float:
        ovov = tb.einsum("Qia,Qjb->iajb", factors, factors, precision=precision)
        return float(tb.einsum("iajb,iajb->", ovov, amplitudes, precision=precision))

    calls = {"native": lambda: energy("native"), "ozaki": lambda: energy("ozaki")}
    return {
        "sizes": DFMP2,
        "dtype": "torch.float64",
        "energy": {name: call() for name, call in calls.items()},
        **_timed(calls, reps),
    }


def run_case(case: str, reps: int) -> dict:
    load_before = os.getloadavg()
    a, b = _operands(case)
    calls = {mode: _call(mode, a, b) for mode in MODES}
    operand_bytes = sum(x.untyped_storage().nbytes() for x in (a, b))
    memory = {}
    for mode, call in calls.items():
        result, extra = peak_extra_bytes(call)
        memory[mode] = {"extra_bytes": extra, "relative": extra / (operand_bytes + result.untyped_storage().nbytes())}
    names = list(calls)
    samples: dict[str, list[float]] = {mode: [] for mode in names}
    for rep in range(reps):
        for mode in names[rep % len(names) :] + names[: rep % len(names)]:
            start = time.perf_counter()
            calls[mode]()
            samples[mode].append(time.perf_counter() - start)
    ratios = {mode: [t / base for t, base in zip(samples[mode], samples["native"], strict=True)] for mode in names}
    flat = (a[0], b[0]) if a.dim() == 3 else (a, b)
    return {
        "shape": [None if CASES[case][0] is None else CASES[case][0], *CASES[case][1:4]],
        "dtype": str(CASES[case][4]),
        "ozaki_slices_ran": reference.ozaki_slices(*flat, 4),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "modes": {
            mode: {
                "seconds": samples[mode],
                "median_seconds": statistics.median(samples[mode]),
                "median_ratio": statistics.median(ratios[mode]),
                "ratios": ratios[mode],
                **memory[mode],
            }
            for mode in names
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    names = [*CASES, *ROUTE_CASES, "dfmp2_ozaki"]
    parser.add_argument("--only", default=",".join(names), help="comma-separated cases: " + ", ".join(names))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_emulation.json"))
    args = parser.parse_args()
    results = {
        case: run_dfmp2(args.reps)
        if case == "dfmp2_ozaki"
        else run_route_case(case, args.reps)
        if case in ROUTE_CASES
        else run_case(case, args.reps)
        for case in args.only.split(",")
    }
    print("| case | mode | time / native | peak extra MiB | extra / (inputs + output) |")
    print("|---|---|---:|---:|---:|")
    for case, result in results.items():
        if case not in CASES:
            for mode, row in result["modes"].items():
                print(f"| {case} {result.get('shape', result.get('sizes'))} | {mode} | {row['median_ratio']:.2f} | | |")
            continue
        for mode, row in result["modes"].items():
            label = f"{mode}(slices=4) ran {result['ozaki_slices_ran']}" if mode == "ozaki" else mode
            print(
                f"| {case} {result['shape']} | {label} | {row['median_ratio']:.2f} | "
                f"{row['extra_bytes'] / 2**20:.1f} | {row['relative']:.2f} |"
            )
    from _results import run_metadata, save  # here: tests import this script's memory helper without sys.path

    save(Path(args.out), run_metadata(reps=args.reps, load_average_end=os.getloadavg()), results)


if __name__ == "__main__":
    main()
